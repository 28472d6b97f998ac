/**
 * Durability of a task object: a restart (eviction) rebuilds exactly the served DAG from the WAL and keeps
 * live leases; a WAL that does not replay makes every call answer 503 storage_error; leases and run deadlines
 * expire through the alarm and lazily on the next read or write.
 */
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { TaskGraphObject } from "../../durable-objects/task/task-graph-object.js";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { bindings, editStoredEvent, expectError, expectOk, sleep, storedEventCount, taskStub, uniqueId, walOf } from "../support/support.js";

let S: TestSession;
beforeAll(async () => {
  S = await newSession();
});

async function task(steps: ReturnType<typeof step>[], extra: Record<string, unknown> = {}) {
  const id = uniqueId();
  return { t: await newTask(S, id, steps, extra), id, stub: taskStub(S.sid, id) };
}

const get = async (t: string) => expectOk(await call("GET", t, S.orch));
const stepOf = (view: any, id: string) => view.steps.find((s: any) => s.step_id === id);

describe("restart", () => {
  it("Should serve the same DAG, attempts, runs and wal_seq when the task object is evicted and rebuilt", async () => {
    const { t, stub } = await task([step("a"), step("b", ["a"]), step("c", ["a"]), step("d", ["b", "c"]), step("e"), step("opt", [], { required: false })]);
    const w1 = await dispatch(S, t, { agent_id: "w1", max_steps: 3 });
    const w2 = await dispatch(S, t, { agent_id: "w2" });
    const w3 = await dispatch(S, t, { agent_id: "w3" });
    expectOk(await call("POST", `${t}/steps/a/claim`, w1.token));
    expectOk(await call("POST", `${t}/steps/a/status`, w1.token, { status: "completed", result_summary: "a done", claim_next: true }));
    expectOk(await call("POST", `${t}/steps/b/status`, w1.token, { status: "running" }));
    expectOk(await call("POST", `${t}/steps/b/progress`, w1.token, { phase: "fetch", counters: { pages: 4 } }));
    expectOk(await call("POST", `${t}/steps/c/claim`, w2.token));
    expectOk(await call("POST", `${t}/steps/c/status`, w2.token, { status: "failed", reason: "flaky" }));
    expectOk(await call("PATCH", t, S.orch, { ops: [{ op: "reopen_step", step_id: "c" }, { op: "update_task", summary: "after a retry" }] }));
    expectOk(await call("POST", `${t}/steps/e/claim`, w3.token));

    const before = await get(t);
    const walBefore = await walOf(t, S.orch);
    expect(before.attempts).toHaveLength(4);
    await evictDurableObject(stub);
    const after = await get(t);

    expect(after.steps).toEqual(before.steps);
    expect(after.attempts).toEqual(before.attempts);
    expect(after.runs).toEqual(before.runs);
    expect(after.wal_seq).toBe(before.wal_seq);
    expect(after).toEqual(before);
    expect(await walOf(t, S.orch)).toEqual(walBefore);

    // The claims made before the restart still hold their leases.
    const w4 = await dispatch(S, t, { agent_id: "w4" });
    expectError(await call("POST", `${t}/steps/e/claim`, w4.token), 409, "step_already_claimed");
    expectError(await call("POST", `${t}/steps/b/claim`, w4.token), 409, "step_already_claimed");
    expectOk(await call("POST", `${t}/steps/e/status`, w3.token, { status: "completed" }));
    expectOk(await call("POST", `${t}/steps/b/status`, w1.token, { status: "completed" }));
    // The WAL goes on from where it was: no gap, no reuse.
    const wal = await walOf(t, S.orch);
    expect(wal.map((e) => e.wal_seq)).toEqual(Array.from({ length: wal.length }, (_, i) => i + 1));
    expect(wal.length).toBe(before.wal_seq + 3);
    const w4claim = expectOk(await call("POST", `${t}/steps/claim-next`, w4.token));
    expect(w4claim.step.step_id).toBe("c");
  });

  it("Should give the same answer twice in a row when evicted twice without writes in between", async () => {
    const { t, stub } = await task([step("a"), step("b", ["a"])]);
    const w = await dispatch(S, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    const before = await get(t);
    await evictDurableObject(stub);
    expect(await get(t)).toEqual(before);
    await evictDurableObject(stub);
    expect(await get(t)).toEqual(before);
  });

  it("Should expire a lease that lapsed while the task object was evicted when it is next read", async () => {
    const { t, stub } = await task([step("a")], { step_lease_timeout_ms: 1_000 });
    const w = await dispatch(S, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    await evictDurableObject(stub);
    await sleep(1_100);
    const view = await get(t);
    expect(stepOf(view, "a")).toMatchObject({ status: "ready", claimed_by_run_id: null, status_reason: "lease_expired" });
    expect(view.attempts[0].status).toBe("lost");
  });
});

describe("a WAL written before free-form values were bounded", () => {
  it("Should serve GET, the WAL export and the event stream of a task whose WAL holds a run result 3,000 levels deep, also after a restart", async () => {
    const { t, stub } = await task([step("a")]);
    const w = await dispatch(S, t);
    expectOk(await call("POST", `${t}/runs/${w.run_id}/finish`, w.token, { outcome: "finished", result: { ok: true } }));
    // Terminal, so its event stream is history and an end frame.
    expectOk(await call("POST", `${t}/cancel`, S.orch, {}));
    const ended = (await walOf(t, S.orch)).find((e) => e.event_type === "worker_run_ended")!;
    // What an older deploy accepted: put a result nested 3,000 deep into that row (past structured clone's reach).
    const deep = `${'{"d":'.repeat(3_000)}0${"}".repeat(3_000)}`;
    await runInDurableObject(stub, (_i, state) => {
      // Spliced as text: SQLite's JSON functions stop at 1,000 levels.
      editStoredEvent(state.storage.sql, ended.wal_seq, (text) => text.replace('"result":{"ok":true}', `"result":${deep}`));
    });
    await evictDurableObject(stub);
    const view = expectOk(await call("GET", t, S.orch));
    expect(view.runs[0].status).toBe("finished");
    const exported = await walOf(t, S.orch);
    let depth = 0;
    for (let v: any = exported.find((e) => e.wal_seq === ended.wal_seq)!.payload; typeof v === "object" && v !== null; v = v.result ?? v.d) depth += 1;
    expect(depth).toBe(3_001);
    const events = await call("GET", `${t}/events`, S.orch);
    expect(events.status).toBe(200);
    expect(String(events.body)).toContain("subagent.completed");
    expect(String(events.body)).toContain("event: end");
  });
});

describe("a WAL that does not replay", () => {
  const edit = (change: (event: Record<string, unknown>) => void) => (text: string) => {
    const event = JSON.parse(text) as Record<string, unknown>;
    change(event);
    return JSON.stringify(event);
  };
  const damages: [string, (sql: SqlStorage) => void][] = [
    ["an event is not JSON", (sql) => editStoredEvent(sql, 6, () => "{garbage")],
    ["a payload has the wrong shape", (sql) => editStoredEvent(sql, 6, edit((e) => (e.payload = { run_id: 7 })))],
    ["an event type is unknown", (sql) => editStoredEvent(sql, 6, edit((e) => (e.event_type = "task_exploded")))],
    ["a commit is missing", (sql) => sql.exec("DELETE FROM wal_commits WHERE seq_key = (SELECT MIN(seq_key) FROM wal_commits WHERE seq_key >= 3)")],
    ["a row holds another event", (sql) => editStoredEvent(sql, 6, edit((e) => (e.wal_seq = 99)))],
    ["an event names an unknown step", (sql) => editStoredEvent(sql, 6, edit((e) => (e.step_id = "zz")))],
    ["a commit row's range does not match its events", (sql) => sql.exec("UPDATE wal_commits SET first_seq = first_seq + 1 WHERE seq_key = (SELECT MIN(seq_key) FROM wal_commits WHERE seq_key >= 6)")],
  ];
  it.each(damages)("Should answer 503 storage_error on every call and never a half-built DAG when %s", async (_name, damage) => {
    const { t, id, stub } = await task([step("a"), step("b", ["a"]), step("c")]);
    const w = await dispatch(S, t, { max_steps: 2 });
    // wal_seq 6 is the claim of a.
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "completed" }));
    const stored = await runInDurableObject(stub, (_instance, state) => {
      damage(state.storage.sql);
      return storedEventCount(state.storage.sql);
    });
    await evictDurableObject(stub);

    const calls: [string, string, string, unknown?][] = [
      ["GET", t, S.orch],
      ["GET", `${t}/steps`, S.orch],
      ["GET", `${t}/steps`, w.token],
      ["GET", `${t}/wal`, S.observer],
      ["PATCH", t, S.orch, { ops: [{ op: "update_task", title: "x" }] }],
      ["POST", `${t}/workers`, S.orch, {}],
      ["POST", `${t}/steps/c/claim`, w.token],
      ["POST", `${t}/steps/claim-next`, w.token],
      ["POST", `${t}/steps/c/status`, S.orch, { status: "completed" }],
      ["POST", `${t}/steps/c/progress`, S.orch, { summary: "x" }],
      ["POST", `${t}/runs/${w.run_id}/finish`, w.token, { outcome: "finished" }],
      ["POST", `${t}/complete`, S.orch, {}],
      ["POST", `${t}/cancel`, S.orch, {}],
    ];
    for (const [method, path, token, body] of calls) {
      expectError(await call(method, path, token, body), 503, "storage_error");
    }
    // Nothing was appended behind the broken row, and the object tells the session index nothing: not an entry,
    // and not "no task" either (which would free the task's id), but storage_error.
    expect(await runInDurableObject(stub, (_i, state) => storedEventCount(state.storage.sql))).toBe(stored);
    expect(await runInDurableObject(stub, (instance: TaskGraphObject) => instance.indexEntry())).toMatchObject({ ok: false, error: { code: "storage_error" } });
    expect(await runDurableObjectAlarm(stub)).toBeTypeOf("boolean");
    expectError(await call("GET", t, S.orch), 503, "storage_error");
    // The session's clean-up of a reservation never confirmed (made stale here) asks the broken object, which
    // cannot say: the task's id stays reserved rather than freed for another task.
    const session = bindings.SESSIONS.get(bindings.SESSIONS.idFromName(S.sid));
    await runInDurableObject(session, (_i, state) => {
      state.storage.sql.exec("UPDATE tasks SET state = 'reserved', reserved_at_ms = 0 WHERE task_id = ?", id);
      // Later than anything else the session owes, so it is not already running by itself; run now below.
      return state.storage.setAlarm(Date.now() + 60_000);
    });
    expect(await runDurableObjectAlarm(session)).toBe(true);
    const rows = await runInDurableObject(session, (_i, state) => state.storage.sql.exec("SELECT state FROM tasks WHERE task_id = ?", id).toArray());
    expect(rows).toEqual([{ state: "reserved" }]);
  });
});

describe("lease expiry", () => {
  it("Should release an expired claim through the alarm, mark its attempt lost and let another worker claim it", async () => {
    const { t, stub } = await task([step("a"), step("b", ["a"])], { step_lease_timeout_ms: 1_000 });
    const w1 = await dispatch(S, t, { agent_id: "w1" });
    const claim = expectOk(await call("POST", `${t}/steps/a/claim`, w1.token));
    const seq = claim.wal_seq;
    // Push the object's alarm past the test so that the runtime does not fire it first; the test runs it.
    await runInDurableObject(stub, async (_i, state) => {
      await state.storage.setAlarm(Date.now() + 600_000);
    });
    await sleep(1_100);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    // The WAL export does not reconcile, so these events are the alarm's.
    const wal = await walOf(t, S.orch, `?after_seq=${seq}`);
    expect(wal.map((e) => [e.event_type, e.step_id, e.actor_agent_id])).toEqual([
      ["task_step_lease_expired", "a", "system"],
      ["task_step_ready", "a", "system"],
    ]);
    expect(wal[0]!.payload).toMatchObject({ run_id: w1.run_id, attempt_id: claim.attempt_id });

    const view = await get(t);
    expect(stepOf(view, "a")).toMatchObject({ status: "ready", claimed_by_agent_id: null, claimed_by_run_id: null, lease_expires_at: null, current_attempt_id: null });
    expect(view.attempts).toEqual([expect.objectContaining({ attempt_id: claim.attempt_id, status: "lost", ended_at: expect.any(String) })]);
    expect(view.task.status).toBe("running");

    const w2 = await dispatch(S, t, { agent_id: "w2" });
    const again = expectOk(await call("POST", `${t}/steps/a/claim`, w2.token));
    expect(again.step).toMatchObject({ claimed_by_agent_id: "w2", attempt_ids: [claim.attempt_id, again.attempt_id] });
    // The first worker lost its claim: it cannot complete the step any more.
    expectError(await call("POST", `${t}/steps/a/status`, w1.token, { status: "completed" }), 403, "permission_denied");
    expectOk(await call("POST", `${t}/steps/a/status`, w2.token, { status: "completed" }));
  });

  it.each([
    ["GET task", "get"],
    ["GET steps", "steps"],
    ["a claim by another worker", "claim"],
  ])("Should reconcile an expired lease lazily on %s when no alarm ran", async (_name, how) => {
    const { t, stub } = await task([step("a")], { step_lease_timeout_ms: 1_000 });
    const w1 = await dispatch(S, t);
    const w2 = await dispatch(S, t);
    const claim = expectOk(await call("POST", `${t}/steps/a/claim`, w1.token));
    await runInDurableObject(stub, async (_i, state) => {
      await state.storage.deleteAlarm();
    });
    await sleep(1_100);
    // The WAL export does not reconcile: nothing has expired the lease yet.
    expect((await walOf(t, S.orch)).map((e) => e.wal_seq).at(-1)).toBe(claim.wal_seq);
    if (how === "get") {
      const view = await get(t);
      expect(stepOf(view, "a").status).toBe("ready");
      expect(view.attempts[0].status).toBe("lost");
    } else if (how === "steps") {
      const page = expectOk(await call("GET", `${t}/steps`, w2.token));
      expect(page.steps.map((s: any) => s.step_id)).toEqual(["a"]);
    } else {
      const res = expectOk(await call("POST", `${t}/steps/a/claim`, w2.token));
      expect(res.step.claimed_by_run_id).toBe(w2.run_id);
    }
    const types = (await walOf(t, S.orch, `?after_seq=${claim.wal_seq}`)).map((e) => e.event_type);
    expect(types.slice(0, 2)).toEqual(["task_step_lease_expired", "task_step_ready"]);
  });

  it("Should keep the claim when the holder renews the lease with progress before it lapses", async () => {
    const { t } = await task([step("a")], { step_lease_timeout_ms: 1_500 });
    const w = await dispatch(S, t);
    const other = await dispatch(S, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    await sleep(900);
    expectOk(await call("POST", `${t}/steps/a/progress`, w.token, { summary: "still here" }));
    await sleep(900);
    expect(stepOf(await get(t), "a")).toMatchObject({ status: "claimed", claimed_by_run_id: w.run_id });
    expectError(await call("POST", `${t}/steps/a/claim`, other.token), 409, "step_already_claimed");
    expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "completed" }));
  });

  it("Should fail the held step with worker_timeout and end the run when its timeout_ms passes", async () => {
    const { t } = await task([step("a"), step("b")]);
    const w = await dispatch(S, t, { timeout_ms: 1_000, max_steps: 2 });
    const claim = expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    await sleep(1_100);
    const view = await get(t);
    expect(stepOf(view, "a")).toMatchObject({ status: "failed", status_reason: "worker_timeout", result_summary: "worker_timeout", claimed_by_run_id: null });
    expect(stepOf(view, "b").status).toBe("ready");
    expect(view.attempts).toEqual([expect.objectContaining({ attempt_id: claim.attempt_id, status: "timed_out", last_error: "worker_timeout" })]);
    expect(view.runs[0]).toMatchObject({ run_id: w.run_id, status: "timed_out", status_reason: "worker_timeout", ended_at: expect.any(String) });
    const wal = await walOf(t, S.orch, `?after_seq=${claim.wal_seq}`);
    expect(wal.map((e) => [e.event_type, e.actor_agent_id])).toEqual([
      ["task_step_failed", "system"],
      ["worker_run_ended", "system"],
    ]);
    // The run is over: its token no longer claims or updates (401 run_ended).
    expectError(await call("POST", `${t}/steps/b/claim`, w.token), 401, "unauthorized");
    expectError(await call("POST", `${t}/runs/${w.run_id}/finish`, w.token, { outcome: "finished" }), 401, "unauthorized");
  });
});
