import { describe, expect, it } from "vitest";
import { call, dispatch, newSession, newTask, step } from "../support/helpers.js";
import { expectError, expectOk, walOf } from "../support/support.js";

describe("POST .../batch (group commit)", () => {
  it("Should decide commands in order, each with its own token, and write them in one transaction", async () => {
    const s = await newSession();
    const t = await newTask(s, "batch-order", [step("a"), step("b", ["a"])]);
    const w = await dispatch(s, t, { max_steps: 2 });
    const before = (await walOf(t, s.orch)).length;
    const res = await call("POST", `${t}/batch`, w.token, {
      commands: [
        { token: w.token, method: "POST", path: `${t}/steps/claim-next` },
        { token: w.token, method: "POST", path: `${t}/steps/a/status`, body: { status: "completed", result_summary: "done", claim_next: true } },
        { token: s.orch, method: "POST", path: `${t}/steps/b/progress`, body: { phase: "watching" } },
      ],
    });
    const body = expectOk(res);
    expect(body.results.map((r: { status: number }) => r.status)).toEqual([200, 200, 200]);
    expect(body.results[0].body.step.step_id).toBe("a");
    // The second command saw the first one's claim, and its claim_next saw b become ready.
    expect(body.results[1].body.next.step.step_id).toBe("b");
    const wal = await walOf(t, s.orch);
    const written = wal.slice(before);
    expect(written.map((e) => e.event_type)).toEqual(["task_step_claimed", "task_step_completed", "task_step_ready", "task_step_claimed", "task_progress"]);
    // Each command kept its own actor.
    expect(written.find((e) => e.event_type === "task_progress")!.actor_agent_id).toBe("orchestrator");
    expect(written[0]!.actor_run_id).toBe(w.run_id);
    // One transaction: the answers' wal_seq values increase and end at the last event written.
    expect(body.results[2].body.wal_seq).toBe(wal[wal.length - 1]!.wal_seq);
  });

  it("Should give each command the status its single route answers: 201 for a dispatch and an action, 200 otherwise", async () => {
    const s = await newSession();
    const t = await newTask(s, "batch-status", [step("a")]);
    const res = await call("POST", `${t}/batch`, s.orch, {
      commands: [
        { token: s.orch, method: "POST", path: `${t}/workers`, body: {} },
        { token: s.orch, method: "POST", path: `${t}/actions`, body: { kind: "approval", prompt: "Go?" } },
        { token: s.orch, method: "POST", path: `${t}/steps/a/progress`, body: { phase: "planning" } },
      ],
    });
    const body = expectOk(res);
    expect(body.results.map((r: { ok: boolean; status: number }) => [r.ok, r.status])).toEqual([[true, 201], [true, 201], [true, 200]]);
    expect(body.results[0].body.token).toEqual(expect.any(String));
    // The same commands alone answer the same statuses.
    expect((await call("POST", `${t}/workers`, s.orch, {})).status).toBe(201);
  });

  it("Should answer a rejected command in place without undoing the others", async () => {
    const s = await newSession();
    const t = await newTask(s, "batch-reject", [step("a"), step("b")]);
    const w1 = await dispatch(s, t);
    const w2 = await dispatch(s, t);
    const res = await call("POST", `${t}/batch`, w1.token, {
      commands: [
        { token: w1.token, method: "POST", path: `${t}/steps/a/claim` },
        { token: w2.token, method: "POST", path: `${t}/steps/a/claim` },
        { token: "forged.token.value", method: "POST", path: `${t}/steps/b/claim` },
        { token: w2.token, method: "POST", path: `${t}/steps/b/claim` },
        { token: w2.token, method: "POST", path: `${t}/steps/b/status`, body: { status: "exploded" } },
        { token: w2.token, method: "POST", path: `/v1/sessions/${s.sid}/tasks/other/steps/b/claim` },
      ],
    });
    const body = expectOk(res);
    expect(body.results.map((r: { status: number; body: any }) => [r.status, r.body.error?.code ?? "ok"])).toEqual([
      [200, "ok"],
      [409, "step_already_claimed"],
      [401, "unauthorized"],
      [200, "ok"],
      [400, "validation_error"],
      [400, "validation_error"],
    ]);
    const task = expectOk(await call("GET", t, s.orch));
    expect(task.steps.map((x: { step_id: string; status: string; claimed_by_run_id: string }) => [x.step_id, x.status, x.claimed_by_run_id])).toEqual([
      ["a", "claimed", w1.run_id],
      ["b", "claimed", w2.run_id],
    ]);
  });

  it("Should honour each command's idempotency key across batch retries", async () => {
    const s = await newSession();
    const t = await newTask(s, "batch-idem", [step("a")]);
    const w = await dispatch(s, t);
    const commands = [{ token: w.token, method: "POST", path: `${t}/steps/a/claim`, idempotency_key: "claim-a-1" }];
    const first = expectOk(await call("POST", `${t}/batch`, w.token, { commands }));
    const length = (await walOf(t, s.orch)).length;
    const second = expectOk(await call("POST", `${t}/batch`, w.token, { commands }));
    expect(second.results[0].body.event_ids).toEqual(first.results[0].body.event_ids);
    expect((await walOf(t, s.orch)).length).toBe(length);
  });

  it("Should write and replay a batch larger than one SQL statement holds (events, idempotency rows and lookups are chunked)", async () => {
    const s = await newSession();
    const steps = Array.from({ length: 40 }, (_, i) => step(`s${i}`));
    const t = await newTask(s, "batch-chunks", steps);
    const w = await dispatch(s, t, { max_steps: 40 });
    // 121 keyed commands: a claim, then 40 completions with claim_next (80 events) and 80 progress reports: 160 events, 121 keys.
    const commands: Record<string, unknown>[] = [{ token: w.token, method: "POST", path: `${t}/steps/claim-next`, idempotency_key: "chunk-claim" }];
    for (let i = 0; i < 40; i++) {
      commands.push({ token: w.token, method: "POST", path: `${t}/steps/s${i}/progress`, body: { phase: "a" }, idempotency_key: `chunk-p${i}-a` });
      commands.push({ token: w.token, method: "POST", path: `${t}/steps/s${i}/progress`, body: { phase: "b" }, idempotency_key: `chunk-p${i}-b` });
      commands.push({ token: w.token, method: "POST", path: `${t}/steps/s${i}/status`, body: { status: "completed", result_summary: `done ${i}`, claim_next: true }, idempotency_key: `chunk-c${i}` });
    }
    const before = (await walOf(t, s.orch)).length;
    const first = expectOk(await call("POST", `${t}/batch`, w.token, { commands }));
    expect(first.results.every((r: { ok: boolean }) => r.ok)).toBe(true);
    const wal = await walOf(t, s.orch);
    expect(wal.length - before).toBe(first.results.reduce((n: number, r: { body: { event_ids: string[] } }) => n + r.body.event_ids.length, 0));
    expect(wal.length - before).toBe(160);
    expect(wal.map((e) => e.wal_seq)).toEqual(wal.map((_, i) => i + 1));
    // The same batch again: every command is answered from its stored record and nothing is written.
    const again = expectOk(await call("POST", `${t}/batch`, w.token, { commands }));
    expect(again.results.map((r: { body: unknown }) => r.body)).toEqual(first.results.map((r: { body: unknown }) => r.body));
    expect((await walOf(t, s.orch)).length).toBe(wal.length);
    // After a restart of the object the records are still there (they were written with the events).
    const view = expectOk(await call("GET", t, s.orch));
    expect(view.steps.filter((x: { status: string }) => x.status === "completed")).toHaveLength(40);
  });

  it.each([
    ["no commands", { commands: [] }],
    ["an unknown field", { commands: [], extra: 1 }],
    ["a bad method", { commands: [{ token: "x", method: "DELETE", path: "/v1" }] }],
    ["over 256 commands", { commands: Array.from({ length: 257 }, () => ({ token: "x", method: "POST", path: "/v1" })) }],
  ])("Should answer 400 validation_error for %s", async (_name, payload) => {
    const s = await newSession();
    const t = await newTask(s, `batch-bad-${Math.random().toString(36).slice(2, 8)}`, [step("a")]);
    expectError(await call("POST", `${t}/batch`, s.orch, payload), 400, "validation_error");
  });

  it("Should answer 401 without a token on the batch request itself", async () => {
    const s = await newSession();
    const t = await newTask(s, "batch-noauth", [step("a")]);
    expectError(await call("POST", `${t}/batch`, undefined, { commands: [{ token: s.orch, method: "POST", path: `${t}/block` }] }), 401, "unauthorized");
  });
});
