/**
 * GET .../tasks/{tid} in pages: a task that fits one page is answered whole in the shape it always had; a
 * larger one (or a call with `limit` or `cursor`) one page at a time, whose cursors give every step, run and
 * attempt exactly once, with the snapshot bounded the same way; and large pages are read a bounded number at
 * a time per task object (429 rate_limited with Retry-After past it).
 */
import { runInDurableObject, SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { RuntimeClient } from "../../src/client/index.js";
import type { Actor } from "../../src/core/index.js";
import type { RpcResult } from "../../durable-objects/shared/rpc-result.js";
import type { TaskGraphObject } from "../../durable-objects/task/task-graph-object.js";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { connectMcp } from "../support/mcp-clients.js";
import { BASE, expectError, expectOk, taskStub, uniqueId } from "../support/support.js";

let S: TestSession;
beforeAll(async () => {
  S = await newSession();
});

/** `n` independent steps s0, s1, … */
const steps = (n: number) => Array.from({ length: n }, (_, i) => step(`s${i}`));

/** Every page of the task from the first, following page.next_cursor; each checked to hold at most `limit` of each list. */
async function pages(t: string, limit: number | null, between: (pageIndex: number) => Promise<void> = async () => undefined) {
  const out: any[] = [];
  let cursor: string | null = null;
  do {
    const query = new URLSearchParams();
    if (limit !== null) query.set("limit", String(limit));
    if (cursor !== null) query.set("cursor", cursor);
    const page = expectOk(await call("GET", `${t}${query.size === 0 ? "" : `?${query}`}`, S.orch));
    const max = limit ?? 1_000;
    for (const list of [page.steps, page.runs, page.attempts, page.actions, page.snapshot.taskGraph.nodes, page.snapshot.taskGraph.spawnedWorkers, page.snapshot.attempts]) expect(list.length).toBeLessThanOrEqual(max);
    out.push(page);
    cursor = page.page.next_cursor;
    await between(out.length);
  } while (cursor !== null);
  return out;
}

/** Ids of a list across pages (with repeats, if any). */
const ids = (ps: any[], list: "steps" | "runs" | "attempts", key: string) => ps.flatMap((p) => p[list].map((x: any) => x[key]));

/** A task of 23 steps, 10 runs and 12 attempts (two runs take a second step). */
async function busyTask() {
  const id = uniqueId("pg");
  const t = await newTask(S, id, steps(23));
  for (let i = 0; i < 10; i++) {
    const w = await dispatch(S, t, { max_steps: 2 });
    for (let k = 0; k < (i < 2 ? 2 : 1); k++) {
      const claim = expectOk(await call("POST", `${t}/steps/claim-next`, w.token));
      expectOk(await call("POST", `${t}/steps/${claim.step.step_id}/status`, w.token, { status: "completed", result_summary: "done" }));
    }
  }
  return { id, t };
}

describe("GET .../tasks/{tid} in pages", () => {
  it("Should answer a task that fits one page whole, without `page`, and with `page` once limit or cursor is asked", async () => {
    const { t } = await busyTask();
    const whole = expectOk(await call("GET", t, S.orch));
    expect(Object.keys(whole).sort()).toEqual(["actions", "attempts", "delegations", "diagnostics", "progress", "runs", "snapshot", "steps", "task", "wal_seq"]);
    expect([whole.steps.length, whole.runs.length, whole.attempts.length]).toEqual([23, 10, 12]);
    const asked = expectOk(await call("GET", `${t}?limit=1000`, S.orch));
    const { page, ...rest } = asked;
    expect(page).toEqual({ limit: 1_000, next_cursor: null, totals: { steps: 23, runs: 10, attempts: 12, actions: 0 } });
    expect(rest).toEqual(whole);
  });

  it("Should give every step, run and attempt exactly once across the pages of its cursors, each page and its snapshot within limit", async () => {
    const { t } = await busyTask();
    const whole = expectOk(await call("GET", t, S.orch));
    const ps = await pages(t, 7);
    expect(ps).toHaveLength(4); // 23 steps: 7 + 7 + 7 + 2
    expect(ps.slice(0, -1).every((p) => p.page.next_cursor !== null)).toBe(true);
    expect(ids(ps, "steps", "step_id")).toEqual(whole.steps.map((s: any) => s.step_id));
    expect(ids(ps, "runs", "run_id")).toEqual(whole.runs.map((r: any) => r.run_id));
    expect(ids(ps, "attempts", "attempt_id")).toEqual(whole.attempts.map((a: any) => a.attempt_id));
    // The snapshot of a page is the projection of its own records.
    for (const p of ps) {
      expect(p.snapshot.taskGraph.nodes.map((n: any) => n.stepId)).toEqual(p.steps.map((s: any) => s.step_id));
      expect(p.snapshot.task.relationships.map((r: any) => r.targetId)).toEqual(p.steps.map((s: any) => s.step_id));
      expect(p.snapshot.taskGraph.spawnedWorkers.map((w: any) => w.runId)).toEqual(p.runs.map((r: any) => r.run_id));
      expect(p.snapshot.attempts.map((a: any) => a.attemptId)).toEqual(p.attempts.map((a: any) => a.attempt_id));
      expect(p.task.root_step_ids).toEqual(p.steps.map((s: any) => s.step_id));
      expect(p.page.totals).toEqual({ steps: 23, runs: 10, attempts: 12, actions: 0 });
    }
  });

  it("Should give each record once even when the task changes between pages: a step added later comes, a deleted one does not", async () => {
    const { t } = await busyTask();
    const before = expectOk(await call("GET", t, S.orch));
    const unsent = before.steps.filter((s: any) => s.status === "ready").at(-1).step_id;
    let extraRun = "";
    const ps = await pages(t, 5, async (n) => {
      if (n !== 1) return;
      expectOk(await call("PATCH", t, S.orch, { ops: [{ op: "add_step", step: step("late") }, { op: "delete_step", step_id: unsent }] }));
      const w = await dispatch(S, t);
      extraRun = w.run_id;
      expectOk(await call("POST", `${t}/steps/late/claim`, w.token));
    });
    const stepIds = ids(ps, "steps", "step_id");
    expect(new Set(stepIds).size).toBe(stepIds.length);
    expect(stepIds).toContain("late");
    expect(stepIds).not.toContain(unsent);
    expect(stepIds.sort()).toEqual([...before.steps.map((s: any) => s.step_id).filter((id: string) => id !== unsent), "late"].sort());
    expect(ids(ps, "runs", "run_id")).toEqual([...before.runs.map((r: any) => r.run_id), extraRun]);
    const late = ps.flatMap((p) => p.attempts).find((a: any) => a.step_id === "late");
    expect(late).toMatchObject({ run_id: extraRun, status: "active" });
    expect(ids(ps, "attempts", "attempt_id")).toEqual([...before.attempts.map((a: any) => a.attempt_id), late.attempt_id]);
  });

  it("Should answer a task of more than 1,000 steps with a first page of 1,000 and a cursor to the rest", async () => {
    const id = uniqueId("big");
    const t = await newTask(S, id, steps(1_203));
    const ps = await pages(t, null);
    expect(ps.map((p) => p.steps.length)).toEqual([1_000, 203]);
    expect(ps[0].page).toEqual({ limit: 1_000, next_cursor: expect.any(String), totals: { steps: 1_203, runs: 0, attempts: 0, actions: 0 } });
    expect(ids(ps, "steps", "step_id")).toEqual(steps(1_203).map((s) => s.step_id));
  });

  it("Should join the pages back into the whole answer with the SDK's getWholeTask, and list them with taskPages", async () => {
    const { t } = await busyTask();
    const client = new RuntimeClient({ baseUrl: BASE, token: S.orch, fetch: SELF.fetch.bind(SELF) });
    const whole = expectOk(await call("GET", t, S.orch));
    expect(await client.getWholeTask(t, { limit: 4 })).toEqual(whole);
    expect(await client.getWholeTask(t)).toEqual(whole);
    const seen: number[] = [];
    for await (const page of client.taskPages(t, { limit: 10 })) seen.push(page.steps.length);
    expect(seen).toEqual([10, 10, 3]);
    expect((await client.getTask(t, { limit: 2 })).page?.next_cursor).toEqual(expect.any(String));
  });

  it("Should page actions on their own, each once across the pages in the order asked, and join them back with the SDK", async () => {
    const { t } = await busyTask();
    const w = await dispatch(S, t);
    const held = expectOk(await call("POST", `${t}/steps/claim-next`, w.token)).step.step_id;
    const asked: string[] = [];
    for (let i = 0; i < 4; i++) asked.push(expectOk(await call("POST", `${t}/actions`, S.orch, { kind: "approval", prompt: `task question ${i}` }), 201).action_id);
    asked.push(expectOk(await call("POST", `${t}/steps/${held}/actions`, w.token, { kind: "approval", prompt: "step question" }), 201).action_id);
    const ps = await pages(t, 2);
    expect(ps.map((p) => p.actions.length).slice(0, 3)).toEqual([2, 2, 1]);
    expect(ps.flatMap((p) => p.actions.map((a: any) => a.action_id))).toEqual(asked);
    for (const p of ps) expect(p.page.totals.actions).toBe(5);
    const client = new RuntimeClient({ baseUrl: BASE, token: S.orch, fetch: SELF.fetch.bind(SELF) });
    const whole = expectOk(await call("GET", t, S.orch));
    expect(whole.actions.map((a: any) => a.action_id)).toEqual(asked);
    expect(await client.getWholeTask(t, { limit: 2 })).toEqual(whole);
    // MCP's agent.task_get is the same read.
    const mcp = await connectMcp(S.orch);
    try {
      const page = (await mcp.callTool({ name: "agent.task_get", arguments: { task_id: t.split("/").at(-1)!, limit: 2, cursor: ps[0].page.next_cursor } })).structuredContent;
      expect(page.actions.map((a: any) => a.action_id)).toEqual(asked.slice(2, 4));
      expect(page.page.totals.actions).toBe(5);
    } finally {
      await mcp.close();
    }
  });

  it("Should answer a task of more than 1,000 actions in pages of 1,000, as it does steps", { timeout: 60_000 }, async () => {
    const t = await newTask(S, uniqueId("acts"), steps(1));
    const ask = (i: number) => ({ token: S.orch, method: "POST", path: `${t}/actions`, body: { kind: "approval", prompt: `question ${i}` } });
    const first = expectOk(await call("POST", `${t}/batch`, S.orch, { commands: Array.from({ length: 256 }, (_, i) => ask(i)) }));
    // Answered, so the task's open actions stay within their cap while it asks 1,001 in all.
    expectOk(await call("POST", `${t}/batch`, S.orch, { commands: first.results.map((r: any) => ({ token: S.orch, method: "POST", path: `${t}/actions/${r.body.action_id}/respond`, body: { decision: "approved" } })) }));
    for (let from = 256; from < 1_001; from += 256) {
      expectOk(await call("POST", `${t}/batch`, S.orch, { commands: Array.from({ length: Math.min(256, 1_001 - from) }, (_, i) => ask(from + i)) }));
    }
    const ps = await pages(t, null);
    expect(ps.map((p) => p.actions.length)).toEqual([1_000, 1]);
    expect(ps[0].page).toEqual({ limit: 1_000, next_cursor: expect.any(String), totals: { steps: 1, runs: 0, attempts: 0, actions: 1_001 } });
    expect(new Set(ps.flatMap((p) => p.actions.map((a: any) => a.action_id))).size).toBe(1_001);
    // The answered ones are served whole, their text read back from the WAL.
    expect(ps[0].actions.slice(0, 256).map((a: any) => [a.status, a.prompt])).toEqual(Array.from({ length: 256 }, (_, i) => ["resolved", `question ${i}`]));
  });

  it.each([
    ["a cursor it did not send", "?cursor=abc"],
    ["a cursor of another shape", "?cursor=s1r2"],
    ["limit 0", "?limit=0"],
    ["limit over 1000", "?limit=1001"],
    ["an unknown parameter", "?offset=3"],
  ])("Should answer 400 validation_error for %s", async (_what, query) => {
    const { t } = await busyTask();
    expectError(await call("GET", `${t}${query}`, S.orch), 400, "validation_error");
  });
});

describe("Large reads per task object (TASK_MAX_LARGE_READS, 4 by default)", () => {
  it("Should answer a large read past the bound 429 rate_limited with Retry-After, never a small one, and take one again after one ends", async () => {
    const id = uniqueId("lr");
    const t = await newTask(S, id, steps(300));
    const observer: Actor = { role: "observer", session_id: S.sid, agent_id: "dashboard", run_id: null };
    await runInDurableObject(taskStub(S.sid, id), async (o: TaskGraphObject) => {
      // Four large answers built and held, none read yet (a reader that is slow, or gone).
      const holdOne = async () => {
        const r = (await o.getTask(observer)) as RpcResult<string | ReadableStream<Uint8Array>>;
        if (!r.ok || typeof r.value === "string") throw new Error(`expected a large answer as a stream: ${JSON.stringify(r)}`);
        return r.value;
      };
      const held: ReadableStream<Uint8Array>[] = [];
      for (let i = 0; i < 4; i++) held.push(await holdOne());
      const refused = await call("GET", t, S.observer);
      expectError(refused, 429, "rate_limited");
      expect(refused.headers.get("retry-after")).toBe("1");
      expect(refused.body.error.details).toMatchObject({ limit: "large_reads", max: 4 });
      // A small page is never refused.
      expect(expectOk(await call("GET", `${t}?limit=50`, S.observer)).steps).toHaveLength(50);
      // One held answer read to its end frees its slot; it was the whole JSON answer.
      const text = await new Response(held.pop()!).text();
      expect(JSON.parse(text).steps).toHaveLength(300);
      expect(expectOk(await call("GET", t, S.observer)).steps).toHaveLength(300);
      // Held again by four; a cancelled one frees its slot too.
      held.push(await holdOne());
      expectError(await call("GET", t, S.observer), 429, "rate_limited");
      await held.pop()!.cancel();
      expect(expectOk(await call("GET", t, S.observer)).steps).toHaveLength(300);
      await Promise.all(held.map((s) => s.cancel()));
    });
  });
});
