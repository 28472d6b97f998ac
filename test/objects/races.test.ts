/**
 * Concurrency: claims race through the task object's single writer (exactly one winner per step, never a
 * step twice), and Idempotency-Key retries return the first answer and write nothing more.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { eventually, expectError, expectOk, uniqueId, walOf } from "../support/support.js";

let S: TestSession;
beforeAll(async () => {
  S = await newSession();
});

async function task(steps: ReturnType<typeof step>[], extra: Record<string, unknown> = {}) {
  const id = uniqueId();
  return { t: await newTask(S, id, steps, extra), id };
}

const workers = (t: string, n: number, body: Record<string, unknown> = {}) => Promise.all(Array.from({ length: n }, () => dispatch(S, t, body)));

describe("concurrent claims", () => {
  it("Should let exactly one of 50 concurrent claims of one step win when 50 workers race", async () => {
    const { t } = await task([step("a"), step("b")]);
    const ws = await workers(t, 50);
    const answers = await Promise.all(ws.map((w) => call("POST", `${t}/steps/a/claim`, w.token)));
    const winners = answers.filter((a) => a.status === 200);
    expect(winners).toHaveLength(1);
    const losers = answers.filter((a) => a.status !== 200);
    expect(losers).toHaveLength(49);
    for (const l of losers) expectError(l, 409, "step_already_claimed");
    const winner = ws[answers.indexOf(winners[0]!)]!;
    const view = expectOk(await call("GET", t, S.orch));
    expect(view.steps[0]).toMatchObject({ step_id: "a", status: "claimed", claimed_by_run_id: winner.run_id });
    expect(view.attempts).toHaveLength(1);
    expect((await walOf(t, S.orch)).filter((e) => e.event_type === "task_step_claimed")).toHaveLength(1);
    // The losers' runs are untouched: they may still claim something else.
    expect(view.runs.filter((r: any) => r.claims_used === 0)).toHaveLength(49);
    const loser = ws[answers.findIndex((a) => a.status !== 200)]!;
    expectOk(await call("POST", `${t}/steps/b/claim`, loser.token));
  });

  it("Should hand 20 ready steps to exactly 20 of 50 concurrent claim-next calls, each step once", async () => {
    const { t } = await task(Array.from({ length: 20 }, (_, i) => step(`s${String(i).padStart(2, "0")}`)));
    const ws = await workers(t, 50);
    const answers = await Promise.all(ws.map((w) => call("POST", `${t}/steps/claim-next`, w.token)));
    for (const a of answers) expect(a.status, JSON.stringify(a.body)).toBe(200);
    const claimed = answers.filter((a) => a.body.step !== undefined);
    const empty = answers.filter((a) => a.body.no_step_claimed === true);
    expect(claimed).toHaveLength(20);
    expect(empty).toHaveLength(30);
    for (const e of empty) expect(e.body).toMatchObject({ reason: "no_ready_step", event_ids: [] });
    const ids = claimed.map((a) => a.body.step.step_id);
    expect(new Set(ids).size).toBe(20);
    // Each answer names the run that made the call.
    for (const a of claimed) expect(a.body.step.claimed_by_run_id).toBe(ws[answers.indexOf(a)]!.run_id);
    const view = expectOk(await call("GET", t, S.orch));
    expect(view.steps.every((s: any) => s.status === "claimed")).toBe(true);
    expect(new Set(view.steps.map((s: any) => s.claimed_by_run_id)).size).toBe(20);
    expect(view.attempts).toHaveLength(20);
    const wal = await walOf(t, S.orch);
    const claimEvents = wal.filter((e) => e.event_type === "task_step_claimed");
    expect(claimEvents).toHaveLength(20);
    expect(new Set(claimEvents.map((e) => e.step_id)).size).toBe(20);
    expect(wal.map((e) => e.wal_seq)).toEqual(Array.from({ length: wal.length }, (_, i) => i + 1));
  });

  it("Should never let two runs hold one step when claims and completions interleave", async () => {
    const { t } = await task(Array.from({ length: 10 }, (_, i) => step(`s${i}`)));
    const ws = await workers(t, 10, { max_steps: 10 });
    // Every worker loops claim-next → complete until nothing is left; all ten run at once.
    const done: string[][] = await Promise.all(
      ws.map(async (w) => {
        const mine: string[] = [];
        for (;;) {
          const res = await call("POST", `${t}/steps/claim-next`, w.token);
          expect(res.status, JSON.stringify(res.body)).toBe(200);
          if (res.body.no_step_claimed === true) return mine;
          mine.push(res.body.step.step_id);
          expectOk(await call("POST", `${t}/steps/${res.body.step.step_id}/status`, w.token, { status: "completed" }));
        }
      }),
    );
    const all = done.flat().sort();
    expect(all).toEqual(Array.from({ length: 10 }, (_, i) => `s${i}`).sort());
    const view = expectOk(await call("GET", t, S.orch));
    expect(view.attempts).toHaveLength(10);
    expect(view.attempts.every((a: any) => a.status === "completed")).toBe(true);
  });
});

describe("idempotency", () => {
  const createBody = (id: string, title = "Idempotent") => ({ task_id: id, wal_name: id, title, summary: "", steps: [step("a"), step("b", ["a"])] });

  it("Should create one task and return the same answer when a create is retried with the same key and body", async () => {
    const id = uniqueId();
    const headers = { "idempotency-key": `create-${id}` };
    const first = expectOk(await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, createBody(id), headers), 201);
    const again = expectOk(await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, createBody(id), headers), 201);
    expect(again).toEqual(first);
    expect(again.event_ids).toEqual(first.event_ids);
    const wal = await walOf(`/v1/sessions/${S.sid}/tasks/${id}`, S.orch);
    expect(wal.filter((e) => e.event_type === "task_created")).toHaveLength(1);
    expect(wal).toHaveLength(first.wal_seq);
    await eventually(async () => {
      const page = expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks?limit=500`, S.orch));
      expect(page.tasks.filter((x: any) => x.task_id === id)).toHaveLength(1);
    });
  });

  it("Should answer every concurrent retry of a create with the first answer when they carry the same key and body", async () => {
    const id = uniqueId();
    const headers = { "idempotency-key": `create-${id}` };
    const answers = await Promise.all(Array.from({ length: 5 }, () => call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, createBody(id), headers)));
    for (const a of answers) expect(a.status, JSON.stringify(a.body)).toBe(201);
    for (const a of answers) expect(a.body).toEqual(answers[0]!.body);
    const wal = await walOf(`/v1/sessions/${S.sid}/tasks/${id}`, S.orch);
    expect(wal.filter((e) => e.event_type === "task_created")).toHaveLength(1);
  });

  it("Should answer 422 idempotency_conflict, not task_id_conflict, when concurrent creates share a key but not a body", async () => {
    const id = uniqueId();
    const headers = { "idempotency-key": `create-${id}` };
    const answers = await Promise.all([
      call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, createBody(id, "First"), headers),
      call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, createBody(id, "Second"), headers),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 422]);
    expectError(answers.find((a) => a.status === 422)!, 422, "idempotency_conflict");
  });

  it("Should answer 422 idempotency_conflict when a create key is reused with another body", async () => {
    const id = uniqueId();
    const headers = { "idempotency-key": `create-${id}` };
    expectOk(await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, createBody(id), headers), 201);
    const res = await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, createBody(id, "Another title"), headers);
    expectError(res, 422, "idempotency_conflict");
    expect(expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks/${id}`, S.orch)).task.title).toBe("Idempotent");
  });

  it("Should answer 422 idempotency_conflict and create nothing when a create key is reused for another task_id", async () => {
    const first = uniqueId();
    const other = uniqueId();
    const headers = { "idempotency-key": `create-${first}` };
    expectOk(await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, createBody(first), headers), 201);
    expectError(await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, createBody(other), headers), 422, "idempotency_conflict");
    expectError(await call("GET", `/v1/sessions/${S.sid}/tasks/${other}`, S.orch), 404, "not_found");
    // The other task_id is still free under a key of its own; the first create still replays.
    expectOk(await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, createBody(other), { "idempotency-key": `create-${other}` }), 201);
    expect(expectOk(await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, createBody(first), headers), 201).task.task_id).toBe(first);
  });

  it("Should free a create's key when the create is refused, so the corrected request may use it", async () => {
    const id = uniqueId();
    const headers = { "idempotency-key": `create-${id}` };
    const cyclic = { ...createBody(id), steps: [step("a", ["b"]), step("b", ["a"])] };
    const refused = await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, cyclic, headers);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).not.toBe("idempotency_conflict");
    expectOk(await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, createBody(uniqueId()), headers), 201);
  });

  it("Should write nothing more when a step completion is retried with the same key", async () => {
    const { t } = await task([step("a"), step("b", ["a"])]);
    const w = await dispatch(S, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    const headers = { "idempotency-key": "complete-a" };
    const body = { status: "completed", result_summary: "done" };
    const first = expectOk(await call("POST", `${t}/steps/a/status`, w.token, body, headers));
    const again = expectOk(await call("POST", `${t}/steps/a/status`, w.token, body, headers));
    expect(again).toEqual(first);
    const view = expectOk(await call("GET", t, S.orch));
    expect(view.wal_seq).toBe(first.wal_seq);
    expect((await walOf(t, S.orch)).filter((e) => e.event_type === "task_step_completed")).toHaveLength(1);
    // Without the key the same request is a new one, and the state machine refuses it.
    expectError(await call("POST", `${t}/steps/a/status`, w.token, body), 403, "permission_denied");
    expectError(await call("POST", `${t}/steps/a/status`, w.token, { status: "failed" }, headers), 422, "idempotency_conflict");
    expect(expectOk(await call("GET", t, S.orch)).wal_seq).toBe(first.wal_seq);
  });

  it("Should answer concurrent retries of a completion with the first answer and write once", async () => {
    const { t } = await task([step("a"), step("b", ["a"])]);
    const w = await dispatch(S, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    const headers = { "idempotency-key": "complete-a" };
    const answers = await Promise.all(Array.from({ length: 5 }, () => call("POST", `${t}/steps/a/status`, w.token, { status: "completed" }, headers)));
    for (const a of answers) expect(a.status, JSON.stringify(a.body)).toBe(200);
    for (const a of answers) expect(a.body).toEqual(answers[0]!.body);
    expect((await walOf(t, S.orch)).filter((e) => e.event_type === "task_step_completed")).toHaveLength(1);
  });

  it.each([
    ["a claim", "POST", "/steps/a/claim", undefined],
    ["a dispatch", "POST", "/workers", { agent_id: "w-idem" }],
    ["a patch", "PATCH", "", { ops: [{ op: "add_step", step: step("z") }] }],
    ["a block", "POST", "/block", { reason: "wait" }],
  ])("Should return the first answer and write nothing when %s is retried with the same key", async (name, method, rest, body) => {
    const { t } = await task([step("a"), step("b", ["a"])]);
    const w = await dispatch(S, t);
    const token = name === "a claim" ? w.token : S.orch;
    const headers = { "idempotency-key": `k-${rest}` };
    const first = await call(method, `${t}${rest}`, token, body, headers);
    expect(first.status, JSON.stringify(first.body)).toBeLessThan(300);
    const again = await call(method, `${t}${rest}`, token, body, headers);
    expect(again.status).toBe(first.status);
    const { token: _t1, expires_at: _e1, ...firstRest } = first.body;
    const { token: _t2, expires_at: _e2, ...againRest } = again.body;
    expect(againRest).toEqual(firstRest);
    expect(expectOk(await call("GET", t, S.orch)).wal_seq).toBe(first.body.wal_seq);
  });

  it("Should treat the same key on another path as another request", async () => {
    const { t } = await task([step("a"), step("b")]);
    const w = await dispatch(S, t, { max_steps: 2 });
    const headers = { "idempotency-key": "same-key" };
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token, undefined, headers));
    // Same key, other path: the hash differs, so it is a conflict, not a replay of the claim of a.
    expectError(await call("POST", `${t}/steps/b/claim`, w.token, undefined, headers), 422, "idempotency_conflict");
  });

  it("Should answer 400 validation_error when the Idempotency-Key is longer than 255 characters", async () => {
    const { t } = await task([step("a")]);
    expectError(await call("POST", `${t}/block`, S.orch, {}, { "idempotency-key": "k".repeat(256) }), 400, "validation_error");
  });
});
