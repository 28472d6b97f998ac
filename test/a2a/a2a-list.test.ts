/**
 * A2A ListTasks from the session index: a client lists only the tasks it submitted, newest first, a page at a
 * time with opaque tokens, filtered by context (the task's thread) and normalized status; task_list still lists
 * every task of the session to its agents.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { IndexEntry } from "../../src/contract/index.js";
import type { Actor } from "../../src/core/index.js";
import { taskObjectName } from "../../durable-objects/shared/env.js";
import type { RpcResult } from "../../durable-objects/shared/rpc-result.js";
import type { SubmittedTaskPage, SubmittedTaskQuery } from "../../durable-objects/session/session-rpc.js";
import { call, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { bindings, eventually, expectOk, sleep } from "../support/support.js";

const CLIENT_A = "partner-a";
const CLIENT_B = "partner-b";

function clientActor(s: TestSession, agentId: string): Actor {
  return { role: "a2a_client", session_id: s.sid, agent_id: agentId, run_id: null };
}

function sessionStub(s: TestSession) {
  return bindings.SESSIONS.get(bindings.SESSIONS.idFromName(s.sid));
}

/** A task as the A2A facade submits it: no steps (the orchestrator plans it), the message's context as thread. */
async function submit(s: TestSession, agentId: string, taskId: string, contextId: string): Promise<void> {
  const stub = bindings.TASK_GRAPHS.get(bindings.TASK_GRAPHS.idFromName(taskObjectName(s.sid, taskId)));
  const body = { task_id: taskId, wal_name: taskId, title: `Submitted ${taskId}`, summary: "", objective: "Do it", thread_id: contextId, steps: [] };
  const result = (await stub.createTask(clientActor(s, agentId), body, null)) as RpcResult<unknown>;
  expect(result.ok, JSON.stringify(result)).toBe(true);
  // Distinct updated_at values, so "newest first" has one right order without relying on the tie-breaker.
  await sleep(3);
}

async function list(s: TestSession, query: Partial<SubmittedTaskQuery> & { client_agent_id: string }): Promise<RpcResult<SubmittedTaskPage>> {
  return (await sessionStub(s).listSubmittedTasks({ page_size: 50, ...query })) as RpcResult<SubmittedTaskPage>;
}

async function page(s: TestSession, query: Partial<SubmittedTaskQuery> & { client_agent_id: string }): Promise<SubmittedTaskPage> {
  const result = await list(s, query);
  if (!result.ok) throw new Error(`listSubmittedTasks refused: ${JSON.stringify(result.error)}`);
  return result.value;
}

const ids = (p: SubmittedTaskPage) => p.entries.map((e) => e.task_id);

/** Every page from the first, following next_page_token to "". */
async function allPages(s: TestSession, query: Partial<SubmittedTaskQuery> & { client_agent_id: string }): Promise<SubmittedTaskPage[]> {
  const pages: SubmittedTaskPage[] = [];
  let token: string | undefined;
  for (;;) {
    const p = await page(s, { ...query, ...(token === undefined ? {} : { page_token: token }) });
    pages.push(p);
    if (p.next_page_token === "") return pages;
    expect(pages.length).toBeLessThan(20);
    token = p.next_page_token;
  }
}

let S: TestSession;
beforeAll(async () => {
  S = await newSession();
  await submit(S, CLIENT_A, "a1", "ctx-1");
  await submit(S, CLIENT_B, "b1", "ctx-b");
  await submit(S, CLIENT_A, "a2", "ctx-1");
  await newTask(S, "o1", [step("s")], { thread_id: "ctx-1" });
  await sleep(3);
  await submit(S, CLIENT_A, "a3", "ctx-2");
  await submit(S, CLIENT_A, "a4", "ctx-1");
  await submit(S, CLIENT_B, "b2", "ctx-b");
  await submit(S, CLIENT_A, "a5", "ctx-2");
  // The client cancels a2: it becomes its newest task, and the only cancelled one.
  const stub = bindings.TASK_GRAPHS.get(bindings.TASK_GRAPHS.idFromName(taskObjectName(S.sid, "a2")));
  const cancelled = (await stub.execute(clientActor(S, CLIENT_A), { type: "cancel_task", reason: "no longer needed" }, null)) as RpcResult<unknown>;
  expect(cancelled.ok, JSON.stringify(cancelled)).toBe(true);
  // The index hears of tasks asynchronously.
  await eventually(async () => {
    const a = await page(S, { client_agent_id: CLIENT_A });
    expect(a.total_size).toBe(5);
    expect(a.entries.find((e) => e.task_id === "a2")?.status).toBe("cancelled");
    expect((await page(S, { client_agent_id: CLIENT_B })).total_size).toBe(2);
    const all = expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks?include_terminal=true`, S.orch));
    expect(all.total).toBe(8);
  }, 5_000);
});

describe("listSubmittedTasks: the tasks one A2A client submitted", () => {
  it("Should list only the client's own tasks, newest updated_at first", async () => {
    const a = await page(S, { client_agent_id: CLIENT_A });
    expect(ids(a)).toEqual(["a2", "a5", "a4", "a3", "a1"]);
    expect(a.total_size).toBe(5);
    expect(a.next_page_token).toBe("");
    const b = await page(S, { client_agent_id: CLIENT_B });
    expect(ids(b)).toEqual(["b2", "b1"]);
    expect(b.total_size).toBe(2);
  });

  it("Should order ties on updated_at by task_id descending", async () => {
    const a = await page(S, { client_agent_id: CLIENT_A });
    const sorted = [...a.entries].sort((x, y) => (x.updated_at === y.updated_at ? y.task_id.localeCompare(x.task_id) : y.updated_at.localeCompare(x.updated_at)));
    expect(ids(a)).toEqual(sorted.map((e) => e.task_id));
  });

  it("Should list nothing for a client that submitted nothing, and never the orchestrator's own task", async () => {
    const none = await page(S, { client_agent_id: "someone-else" });
    expect(none).toEqual({ entries: [], next_page_token: "", total_size: 0 });
    const everyListed = [...ids(await page(S, { client_agent_id: CLIENT_A })), ...ids(await page(S, { client_agent_id: CLIENT_B }))];
    expect(everyListed).not.toContain("o1");
  });

  it("Should carry the origin client and the thread in each entry", async () => {
    const a = await page(S, { client_agent_id: CLIENT_A });
    const byId = new Map(a.entries.map((e) => [e.task_id, e] as const));
    expect(byId.get("a3")).toMatchObject({ origin_client_agent_id: CLIENT_A, thread_id: "ctx-2", status: "queued", title: "Submitted a3" });
    expect(byId.get("a2")).toMatchObject({ origin_client_agent_id: CLIENT_A, thread_id: "ctx-1", status: "cancelled", terminal: true });
    const listed = expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks?include_terminal=true`, S.orch));
    const own = listed.tasks.find((t: IndexEntry) => t.task_id === "o1");
    expect(own).toMatchObject({ origin_client_agent_id: null, thread_id: "ctx-1" });
  });

  it("Should page with tokens through every task exactly once, ending with an empty token", async () => {
    const pages = await allPages(S, { client_agent_id: CLIENT_A, page_size: 2 });
    expect(pages.map(ids)).toEqual([["a2", "a5"], ["a4", "a3"], ["a1"]]);
    expect(pages.map((p) => p.total_size)).toEqual([5, 5, 5]);
    expect(pages.slice(0, -1).every((p) => p.next_page_token.length > 0)).toBe(true);
    expect(pages[pages.length - 1]!.next_page_token).toBe("");
  });

  it("Should give an empty token on a page that ends exactly at the last task", async () => {
    const pages = await allPages(S, { client_agent_id: CLIENT_B, page_size: 2 });
    expect(pages.map(ids)).toEqual([["b2", "b1"]]);
    expect(pages[0]!.next_page_token).toBe("");
    const ones = await allPages(S, { client_agent_id: CLIENT_A, page_size: 1 });
    expect(ones.map(ids).flat()).toEqual(["a2", "a5", "a4", "a3", "a1"]);
  });

  it("Should filter by context (the task's thread), paging within it", async () => {
    const ctx1 = await page(S, { client_agent_id: CLIENT_A, context_id: "ctx-1" });
    expect(ids(ctx1)).toEqual(["a2", "a4", "a1"]);
    expect(ctx1.total_size).toBe(3);
    const pages = await allPages(S, { client_agent_id: CLIENT_A, context_id: "ctx-1", page_size: 2 });
    expect(pages.map(ids)).toEqual([["a2", "a4"], ["a1"]]);
    // Another client's context (or the orchestrator's task in ctx-1) is nobody else's business.
    expect(await page(S, { client_agent_id: CLIENT_A, context_id: "ctx-b" })).toEqual({ entries: [], next_page_token: "", total_size: 0 });
  });

  it("Should filter by normalized statuses, alone and with a context", async () => {
    const queued = await page(S, { client_agent_id: CLIENT_A, statuses: ["queued"] });
    expect(ids(queued)).toEqual(["a5", "a4", "a3", "a1"]);
    expect(queued.total_size).toBe(4);
    expect(ids(await page(S, { client_agent_id: CLIENT_A, statuses: ["cancelled"] }))).toEqual(["a2"]);
    expect(ids(await page(S, { client_agent_id: CLIENT_A, statuses: ["queued", "cancelled"] }))).toEqual(["a2", "a5", "a4", "a3", "a1"]);
    const both = await page(S, { client_agent_id: CLIENT_A, context_id: "ctx-2", statuses: ["queued"] });
    expect(ids(both)).toEqual(["a5", "a3"]);
    expect(both.total_size).toBe(2);
    expect(await page(S, { client_agent_id: CLIENT_A, statuses: [] })).toEqual({ entries: [], next_page_token: "", total_size: 0 });
  });

  it("Should refuse a malformed page token, or one given to another client, with validation_error", async () => {
    const bTokenPage = await page(S, { client_agent_id: CLIENT_B, page_size: 1 });
    expect(bTokenPage.next_page_token).not.toBe("");
    const forged = btoa(JSON.stringify({ updated_at: "2026-01-01T00:00:00.000Z" })).replace(/=+$/, "");
    for (const token of ["not a token", "%%%", "abc", forged, bTokenPage.next_page_token]) {
      const result = await list(S, { client_agent_id: CLIENT_A, page_token: token });
      expect(result.ok, token).toBe(false);
      if (!result.ok) expect(result.error.code, token).toBe("validation_error");
    }
  });

  it("Should refuse a page size outside 1..100 with validation_error", async () => {
    for (const size of [0, 101, -1, 2.5]) {
      const result = await list(S, { client_agent_id: CLIENT_A, page_size: size });
      expect(result.ok, String(size)).toBe(false);
      if (!result.ok) expect(result.error.code).toBe("validation_error");
    }
    expect(ids(await page(S, { client_agent_id: CLIENT_A, page_size: 100 }))).toHaveLength(5);
  });

  it("Should leave task_list as it was: every task of the session, active in creation order", async () => {
    const active = expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks`, S.orch));
    expect(active.tasks.map((t: IndexEntry) => t.task_id)).toEqual(["a1", "b1", "o1", "a3", "a4", "b2", "a5"]);
    const withTerminal = expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks?include_terminal=true`, S.orch));
    expect(withTerminal.tasks.map((t: IndexEntry) => t.task_id)).toEqual(["a1", "b1", "o1", "a3", "a4", "b2", "a5", "a2"]);
  });
});

describe("the session index made before origins were listed", () => {
  it("Should add the origin and thread columns in place, filled from the stored entries", async () => {
    const s = await newSession();
    await submit(s, CLIENT_A, "old1", "ctx-old");
    await eventually(async () => expect((await page(s, { client_agent_id: CLIENT_A })).total_size).toBe(1));
    // The table as it was before: no origin or thread columns (and no index on them).
    await runInDurableObject(sessionStub(s), (_i, state) => {
      state.storage.sql.exec("DROP INDEX tasks_by_origin");
      state.storage.sql.exec("ALTER TABLE tasks DROP COLUMN origin_client_agent_id");
      state.storage.sql.exec("ALTER TABLE tasks DROP COLUMN thread_id");
    });
    await evictDurableObject(sessionStub(s));
    // The restarted object migrates; nothing pushed the task again, so only the stored entry can fill it.
    const migrated = await page(s, { client_agent_id: CLIENT_A, context_id: "ctx-old" });
    expect(ids(migrated)).toEqual(["old1"]);
    const columns = await runInDurableObject(sessionStub(s), (_i, state) => ({
      row: state.storage.sql.exec("SELECT origin_client_agent_id, thread_id FROM tasks WHERE task_id = 'old1'").one(),
      indexes: state.storage.sql.exec<{ name: string }>("SELECT name FROM pragma_index_list('tasks')").toArray().map((r) => r.name),
    }));
    expect(columns.row).toEqual({ origin_client_agent_id: CLIENT_A, thread_id: "ctx-old" });
    expect(columns.indexes).toContain("tasks_by_origin");
  });
});
