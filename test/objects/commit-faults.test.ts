/**
 * The task object's commit path under injected faults: a WAL insert that throws (first statement, or one in
 * the middle of a multi-row write), an idempotency write that throws, a commit that fails, decide or apply
 * throwing (a bug), and the rebuild after a failed write failing too. After each: an error with a code,
 * nothing written, memory equal to a replay of the WAL, and the next command succeeds — or, in the double
 * fault, storage_error on every call until the object restarts, and the WAL's state after it.
 */
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { apply, type DagState, decide, decideParsed, replay, taskView } from "../../src/core/index.js";
import type { TaskGraphObject } from "../../durable-objects/task/task-graph-object.js";
import { type CommitStorage, loadEvents } from "../../durable-objects/task/storage/wal-store.js";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { SseReader } from "../support/sse.js";
import { BASE, expectError, expectOk, sleep, taskStub, uniqueId, walOf } from "../support/support.js";

/** The object's internals these tests reach into: its commit shell's storage, pure functions and memory. */
interface Internals {
  storage: CommitStorage;
  core: { decide: typeof decide; decideParsed: typeof decideParsed; apply: typeof apply };
  state: DagState;
}

/** The commit shell of a task object instance. */
function internals(instance: TaskGraphObject): Internals {
  return (instance as unknown as { shell: Internals }).shell;
}

/** Where an injected fault strikes. */
interface FaultPlan {
  /** Throw on this WAL insert statement of the next commit (1: the first; a commit writes one row). */
  walInsert?: number;
  /** Let the writes run, then fail the transaction as its commit would. */
  commit?: boolean;
  /** Also fail reading the WAL back (the rebuild after the failed write). */
  rebuild?: boolean;
}

/** A storage that fails as `plan` says, once per armed fault, and otherwise passes everything through. */
function faulty(real: CommitStorage, plan: FaultPlan): CommitStorage {
  let walInserts = 0;
  const sql = {
    exec(query: string, ...bindings: unknown[]) {
      if (query.startsWith("INSERT INTO wal_commits") && ++walInserts === plan.walInsert) throw new Error("injected: WAL insert failed");
      if (query.startsWith("SELECT seq_key, first_seq, events") && plan.rebuild === true) throw new Error("injected: WAL read failed");
      return (real.sql.exec as (q: string, ...b: unknown[]) => ReturnType<SqlStorage["exec"]>)(query, ...bindings);
    },
  } as CommitStorage["sql"];
  return {
    sql,
    transactionSync<T>(work: () => T): T {
      walInserts = 0;
      return real.transactionSync(() => {
        const value = work();
        // Thrown inside the transaction, so storage rolls back what `work` wrote, as a failed commit does.
        if (plan.commit === true) throw new Error("injected: commit failed");
        return value;
      });
    },
  };
}

let S: TestSession;
beforeAll(async () => {
  S = await newSession();
});
afterEach(() => vi.restoreAllMocks());

/** A task with one step claimed by a worker. */
async function claimedTask() {
  const id = uniqueId("f");
  const t = await newTask(S, id, [step("a"), step("b"), step("c", ["a"])]);
  const w = await dispatch(S, t, { agent_id: "w1" });
  expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
  return { t, id, w, stub: taskStub(S.sid, id) };
}

/** Replaces the object's storage with a faulty one; returns a function that puts the real one back. */
async function injectStorage(stub: DurableObjectStub<TaskGraphObject>, plan: FaultPlan): Promise<() => Promise<void>> {
  const real = await runInDurableObject(stub, (instance) => {
    const o = internals(instance);
    const original = o.storage;
    o.storage = faulty(original, plan);
    return original;
  });
  return () => runInDurableObject(stub, (instance) => void (internals(instance).storage = real));
}

/** Replaces the pure functions the object's commit path calls; returns a function that puts the real ones back. */
async function injectCore(stub: DurableObjectStub<TaskGraphObject>, core: Internals["core"]): Promise<() => Promise<void>> {
  await runInDurableObject(stub, (instance) => void (internals(instance).core = core));
  return () => runInDurableObject(stub, (instance) => void (internals(instance).core = { decide, decideParsed, apply }));
}

/** Memory, the WAL replayed from storage, and the WAL's length, read inside the object. */
async function memoryAndWal(stub: DurableObjectStub<TaskGraphObject>) {
  return runInDurableObject(stub, (instance, state) => {
    const o = internals(instance);
    const events = loadEvents(state.storage.sql);
    return { memory: taskView(o.state), replayed: taskView(replay(events)), walLength: events.length };
  });
}

/** Asserts that nothing was written and memory equals a replay of the WAL. */
async function expectUnchanged(t: string, stub: DurableObjectStub<TaskGraphObject>, walBefore: unknown[]) {
  expect(await walOf(t, S.orch)).toEqual(walBefore);
  const { memory, replayed, walLength } = await memoryAndWal(stub);
  expect(walLength).toBe(walBefore.length);
  expect(memory).toEqual(replayed);
}

describe("a failed commit changes nothing", () => {
  it.each<[string, FaultPlan]>([
    ["the commit's WAL row (its events and its Idempotency-Key's answer) cannot be inserted", { walInsert: 1 }],
    ["the commit fails after the writes", { commit: true }],
  ])("Should answer 503 storage_error, write nothing, keep memory equal to the WAL and take the next command when %s", async (_name, plan) => {
    const { t, w, stub } = await claimedTask();
    const walBefore = await walOf(t, S.orch);
    const restore = await injectStorage(stub, plan);
    const res = await call("POST", `${t}/steps/a/status`, w.token, { status: "completed", result_summary: "done" }, { "idempotency-key": "k-complete" });
    expectError(res, 503, "storage_error");
    await restore();
    await expectUnchanged(t, stub, walBefore);
    expect((await call("GET", t, S.orch)).body.steps.find((s: { step_id: string }) => s.step_id === "a").status).toBe("claimed");
    // The same key is not burnt: its retry is decided afresh and succeeds.
    const retried = expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "completed", result_summary: "done" }, { "idempotency-key": "k-complete" }));
    expect(retried.wal_seq).toBe(walBefore.length + 2);
  });

  it("Should fail every command of a batch and keep none of its events when the batch's one WAL row cannot be inserted", async () => {
    const { t, w, stub } = await claimedTask();
    const walBefore = await walOf(t, S.orch);
    // 60 progress reports, keyed: 60 events and 60 answers, all in the one row of the batch's commit.
    const commands = Array.from({ length: 60 }, (_, i) => ({ token: w.token, method: "POST", path: `${t}/steps/a/progress`, body: { phase: `p${i}` }, idempotency_key: `p${i}` }));
    const restore = await injectStorage(stub, { walInsert: 1 });
    const res = expectOk(await call("POST", `${t}/batch`, S.orch, { commands }));
    await restore();
    expect(res.results).toHaveLength(60);
    for (const r of res.results) expect(r).toMatchObject({ ok: false, status: 503, body: { error: { code: "storage_error" } } });
    await expectUnchanged(t, stub, walBefore);
    const again = expectOk(await call("POST", `${t}/batch`, S.orch, { commands }));
    expect(again.results.every((r: { ok: boolean }) => r.ok)).toBe(true);
    expect((await walOf(t, S.orch)).length).toBe(walBefore.length + 60);
  });

  it("Should answer 500 internal_error with an incident id, write nothing and undo what apply did when apply throws (a bug)", async () => {
    vi.spyOn(console, "error").mockImplementation(() => undefined);
    const { t, w, stub } = await claimedTask();
    const walBefore = await walOf(t, S.orch);
    // Completing `a` applies task_step_completed, then task_step_ready for `c`: the second application throws.
    let applied = 0;
    const restore = await injectCore(stub, {
      decide,
      decideParsed,
      apply: (state, event) => {
        if (++applied === 2) throw new TypeError("injected: a reducer bug");
        return apply(state, event);
      },
    });
    const res = await call("POST", `${t}/steps/a/status`, w.token, { status: "completed" });
    await restore();
    expectError(res, 500, "internal_error");
    expect(res.body.error.details.incident_id).toEqual(expect.any(String));
    await expectUnchanged(t, stub, walBefore);
    expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "completed" }));
    expect((await call("GET", t, S.orch)).body.steps.find((s: { step_id: string }) => s.step_id === "c").status).toBe("ready");
  });

  it("Should answer 500 internal_error and write nothing when decide throws (a bug)", async () => {
    vi.spyOn(console, "error").mockImplementation(() => undefined);
    const { t, w, stub } = await claimedTask();
    const walBefore = await walOf(t, S.orch);
    const restore = await injectCore(stub, {
      decide: () => {
        throw new RangeError("injected: a decider bug");
      },
      decideParsed: () => {
        throw new RangeError("injected: a decider bug");
      },
      apply,
    });
    const res = await call("POST", `${t}/steps/a/progress`, w.token, { phase: "x" });
    await restore();
    expectError(res, 500, "internal_error");
    await expectUnchanged(t, stub, walBefore);
    expectOk(await call("POST", `${t}/steps/a/progress`, w.token, { phase: "x" }));
  });
});

describe("a failed commit whose rebuild fails too (double fault)", () => {
  it("Should answer storage_error on every call until the object restarts, then serve the WAL's state", async () => {
    vi.spyOn(console, "error").mockImplementation(() => undefined);
    const { t, w, stub } = await claimedTask();
    const viewBefore = expectOk(await call("GET", t, S.orch));
    const walBefore = await walOf(t, S.orch);
    await injectStorage(stub, { walInsert: 1, rebuild: true });
    expectError(await call("POST", `${t}/steps/a/status`, w.token, { status: "completed" }), 503, "storage_error");
    // Broken: no call is served from a memory that storage may not hold, reads included.
    expectError(await call("GET", t, S.orch), 503, "storage_error");
    expectError(await call("GET", `${t}/steps`, S.orch), 503, "storage_error");
    expectError(await call("GET", `${t}/wal`, S.orch), 503, "storage_error");
    expectError(await call("POST", `${t}/steps/b/progress`, S.orch, { phase: "x" }), 503, "storage_error");
    expectError(await call("POST", `${t}/workers`, S.orch, {}), 503, "storage_error");
    await evictDurableObject(stub);
    expect(expectOk(await call("GET", t, S.orch))).toEqual(viewBefore);
    expect(await walOf(t, S.orch)).toEqual(walBefore);
    expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "completed" }));
  });
});

describe("a broken object heals when its storage does", () => {
  it("Should keep answering storage_error while the WAL cannot be read, and serve the WAL's state once it can, without a restart", async () => {
    vi.spyOn(console, "error").mockImplementation(() => undefined);
    const { t, w, stub } = await claimedTask();
    const viewBefore = expectOk(await call("GET", t, S.orch));
    const restore = await injectStorage(stub, { walInsert: 1, rebuild: true });
    expectError(await call("POST", `${t}/steps/a/status`, w.token, { status: "completed" }), 503, "storage_error");
    // Past the first retry time the object tries to replay again; the fault is still there, so it stays broken.
    await sleep(1_100);
    expectError(await call("GET", t, S.orch), 503, "storage_error");
    await restore();
    // The next try (2 s after the last) replays the WAL: the object serves again, as it was before the fault.
    await sleep(2_100);
    expect(expectOk(await call("GET", t, S.orch))).toEqual(viewBefore);
    expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "completed" }));
    const { memory, replayed } = await memoryAndWal(stub);
    expect(memory).toEqual(replayed);
  });
});

describe("a broken object keeps its alarm", () => {
  it("Should re-arm the alarm it woke broken with, so its leases, outbox and index push resume once storage heals, with no client", async () => {
    vi.spyOn(console, "error").mockImplementation(() => undefined);
    const { t, stub } = await claimedTask();
    const viewBefore = expectOk(await call("GET", t, S.orch));
    // The held step's lease keeps an alarm set; the object breaks (a failed write whose rebuild fails too).
    const restore = await injectStorage(stub, { walInsert: 1, rebuild: true });
    expectError(await call("POST", `${t}/workers`, S.orch, { agent_id: "w2" }), 503, "storage_error");
    const alarmOf = () => runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());
    expect(await alarmOf()).not.toBeNull();
    // The alarm wakes the broken object: it cannot serve, but it must not go back to sleep with no alarm.
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const retryAt = await alarmOf();
    expect(retryAt).not.toBeNull();
    expect(retryAt!).toBeLessThanOrEqual(Date.now() + 60_000);
    await restore();
    // The re-armed alarm replays the WAL (no request touches the object meanwhile) and arms the lease's deadline.
    await sleep(Math.max(0, retryAt! - Date.now()) + 500);
    const leaseAlarm = await alarmOf();
    expect(leaseAlarm).not.toBeNull();
    expect(leaseAlarm!).toBeGreaterThan(Date.now());
    expect(expectOk(await call("GET", t, S.orch))).toEqual(viewBefore);
  });
});

describe("the durable point", () => {
  it("Should publish to live subscribers only what was committed: a failed commit sends no frame, the next one sends its own", async () => {
    const { t, w, stub } = await claimedTask();
    const walBefore = await walOf(t, S.orch);
    const res = await SELF.fetch(`${BASE}${t}/events?after_seq=${walBefore.length}`, { headers: { authorization: `Bearer ${S.orch}` } });
    const reader = new SseReader(res);
    const restore = await injectStorage(stub, { commit: true });
    expectError(await call("POST", `${t}/steps/a/progress`, w.token, { phase: "lost" }), 503, "storage_error");
    await restore();
    const written = expectOk(await call("POST", `${t}/steps/a/progress`, w.token, { phase: "kept" }));
    const frame = await reader.next();
    const event = JSON.parse(frame!.data);
    expect(event).toMatchObject({ type: "task.progress", phase: "kept" });
    expect(written.wal_seq).toBe(walBefore.length + 1);
    // What the subscriber saw is in storage.
    expect((await walOf(t, S.orch)).at(-1)!.payload).toMatchObject({ phase: "kept" });
    await reader.cancel();
  });
});
