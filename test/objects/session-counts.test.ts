/**
 * The session's task_summary counts are kept, not counted per read: after any sequence of index pushes (older
 * ones ignored, archived ones counted as terminal), reservations, releases and retention's removals they equal the
 * counts recomputed from every row; they follow real
 * tasks through their statuses, open actions and a crash between a commit and its push; and a session stored
 * before the counts existed gets them once at start-up.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.js";
import type { IndexEntry, SessionSnapshot } from "../../src/contract/index.js";
import { STEP_STATUSES, TASK_STATUSES, type TaskStatus } from "../../src/core/index.js";
import { call, dispatch, newSession, newTask, step } from "../support/helpers.js";
import { bindings, eventually, expectOk, taskStub, uniqueId } from "../support/support.js";

afterEach(() => vi.useRealTimers());

const sessionStub = (sid: string) => bindings.SESSIONS.get(bindings.SESSIONS.idFromName(sid));
const MINUTE = 60_000;
const COUNT_NAMES = ["active", "terminal", "failed", "lost", "waiting", "blocked", "stale", "open_actions"] as const;
type Counts = Record<(typeof COUNT_NAMES)[number], number>;

/** The counts recomputed from every task row of the session, by their definitions (docs/api.md), at `now`. */
function recount(sql: SqlStorage, now: number): Counts {
  const rows = sql.exec<{ entry: string }>("SELECT entry FROM tasks WHERE state = 'confirmed'").toArray().map((r) => JSON.parse(r.entry) as IndexEntry);
  const live = rows.filter((t) => !t.terminal);
  const open = (t: IndexEntry) => t.open_action_count ?? 0;
  return {
    active: live.length,
    terminal: rows.length - live.length,
    failed: rows.filter((t) => t.native_status === "failed").length,
    lost: live.filter((t) => t.lost_attempts > 0).length,
    waiting: live.filter((t) => t.native_status === "pending" || open(t) > 0).length,
    blocked: live.filter((t) => t.native_status === "blocked").length,
    stale: rows.filter((t) => t.next_deadline_at !== null && Date.parse(t.next_deadline_at) + 5_000 < now).length,
    open_actions: live.reduce((n, t) => n + open(t), 0),
  };
}

const countsOf = (snapshot: SessionSnapshot): Counts => Object.fromEntries(COUNT_NAMES.map((k) => [k, snapshot.task_summary[k]])) as Counts;

/** The counts as the session stores them (all but stale, which is read from the clock), stale from the snapshot. */
function stored(sql: SqlStorage, snapshot: SessionSnapshot): Counts {
  const row = sql.exec<Omit<Counts, "stale">>(`SELECT ${COUNT_NAMES.filter((k) => k !== "stale").join(", ")} FROM task_counts`).one();
  return { ...row, stale: snapshot.task_summary.stale };
}

/** The snapshot's counts equal the stored ones and the ones recomputed from every row. */
async function expectKeptExact(o: SessionObject, sql: SqlStorage): Promise<void> {
  const snapshot = (await o.snapshot())!;
  const recounted = recount(sql, Date.now());
  expect(countsOf(snapshot)).toEqual(recounted);
  expect(stored(sql, snapshot)).toEqual(recounted);
  // Archived tasks are counted too (the task list's totals), and stay counted as terminal.
  const archived = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM tasks WHERE state = 'confirmed' AND terminal = 1 AND status = 'archived'").one().n;
  expect(sql.exec<{ archived: number }>("SELECT archived FROM task_counts").one().archived).toBe(archived);
}

/** The snapshot's counts and the counts recomputed from the rows, read in one turn of the session object. */
async function keptAndRecounted(sid: string): Promise<{ kept: Counts; recounted: Counts }> {
  return runInDurableObject(sessionStub(sid), async (o: SessionObject, state) => {
    const snapshot = (await o.snapshot())!;
    const recounted = recount(state.storage.sql, Date.now());
    expect(stored(state.storage.sql, snapshot)).toEqual(countsOf(snapshot));
    return { kept: countsOf(snapshot), recounted };
  });
}

/** An index entry of task `taskId` (the fields the counts read, the rest plain). */
function entry(taskId: string, over: Partial<IndexEntry> & { native_status: TaskStatus; wal_seq: number }): IndexEntry {
  const terminal = over.native_status === "completed" || over.native_status === "failed" || over.native_status === "cancelled";
  const stepCounts = Object.fromEntries(STEP_STATUSES.map((s) => [s, 0])) as IndexEntry["step_counts"];
  return {
    task_id: taskId, wal_name: `wal-${taskId}`, title: `Task ${taskId}`, status: over.native_status === "pending" ? "queued" : (over.native_status as IndexEntry["status"]),
    step_counts: stepCounts, total_steps: 1, active_runs: 0, lost_attempts: 0, terminal, created_at: "2026-01-01T00:00:00.000Z",
    updated_at: new Date(Date.parse("2026-01-01T00:00:00.000Z") + over.wal_seq * 1000).toISOString(), next_deadline_at: null, open_action_count: 0, ...over,
  };
}

type Op =
  | { kind: "push"; task: number; wal_seq: number; status: TaskStatus; archived: boolean; lost: number; open: number; blockedSteps: number; failedSteps: number; deadline: "none" | "past" | "future" }
  | { kind: "reserve" | "release" | "forget"; task: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({
    kind: fc.constant("push" as const), task: fc.nat(5), wal_seq: fc.integer({ min: 1, max: 12 }), status: fc.constantFrom(...TASK_STATUSES), archived: fc.boolean(),
    lost: fc.nat(2), open: fc.nat(3), blockedSteps: fc.nat(1), failedSteps: fc.nat(1), deadline: fc.constantFrom("none" as const, "past" as const, "future" as const),
  }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom("reserve" as const, "release" as const, "forget" as const), task: fc.nat(5) }) },
);

function pushed(op: Extract<Op, { kind: "push" }>, now: number): IndexEntry {
  const plain = entry(`t${op.task}`, { native_status: op.status, wal_seq: op.wal_seq });
  // Only a terminal task is archived: it keeps its native status and terminal flag, its normalized status says archived.
  const base: IndexEntry = op.archived && plain.terminal ? { ...plain, status: "archived" } : plain;
  const deadline = op.deadline === "none" ? null : new Date(now + (op.deadline === "past" ? -10 * MINUTE : 10 * MINUTE)).toISOString();
  return { ...base, lost_attempts: op.lost, open_action_count: op.open, step_counts: { ...base.step_counts, blocked: op.blockedSteps, failed: op.failedSteps }, next_deadline_at: deadline };
}

describe("the session's kept task counts", () => {
  it("Should equal the counts recomputed from every row after any sequence of pushes (older ones ignored), reservations and releases, sent one by one or together", async () => {
    // Each group is sent at once: the object writes the requests that arrive together in one turn (write-batch.ts).
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(opArb, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 12 }), async (groups) => {
        const sid = uniqueId("counts");
        await runInDurableObject(sessionStub(sid), async (o: SessionObject, state) => {
          await o.create(sid, new Date().toISOString(), {}, { agent_id: "orch", run_id: "orun_1" }, 3600, null);
          for (const group of groups) {
            await Promise.all(group.map((op) => {
              if (op.kind === "push") return o.upsertTask(pushed(op, Date.now()));
              if (op.kind === "reserve") return o.reserve(`t${op.task}`, `wal-t${op.task}`);
              if (op.kind === "forget") return o.forgetTask(`t${op.task}`, `wal-t${op.task}`, 12);
              return o.release(`t${op.task}`);
            }));
          }
          await expectKeptExact(o, state.storage.sql);
          // A forgotten task stays gone: no row, no inbox rows, and a later push or reservation does not bring it back.
          const retired = state.storage.sql.exec<{ task_id: string }>("SELECT task_id FROM retired_tasks").toArray().map((r) => r.task_id);
          for (const id of retired) expect(state.storage.sql.exec("SELECT 1 FROM tasks WHERE task_id = ? UNION ALL SELECT 1 FROM actions WHERE task_id = ?", id, id).toArray()).toEqual([]);
          // The list leaves archived tasks out unless asked; the total agrees with the rows.
          const listed = await o.listTasks({ include_terminal: true, limit: 500 });
          const all = await o.listTasks({ include_terminal: true, include_archived: true, limit: 500 });
          const archived = state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM tasks WHERE state = 'confirmed' AND status = 'archived'").one().n;
          expect(listed.tasks.some((t) => t.status === "archived")).toBe(false);
          expect(all.total - listed.total).toBe(archived);
          expect((await o.listTasks({ include_archived: true, limit: 500 })).total - (await o.listTasks({ limit: 500 })).total).toBe(archived);
          expect(all.tasks.length).toBe(all.total);
        });
      }),
      { numRuns: 40 },
    );
    // Forty sessions, each with a dozen batches of writes and its checks: longer than one request's default budget.
  }, 20_000);

  it("Should count an overdue entry stale and stop once a newer push moves its deadline; an older push changes nothing", async () => {
    const sid = uniqueId("stale");
    await runInDurableObject(sessionStub(sid), async (o: SessionObject, state) => {
      await o.create(sid, new Date().toISOString(), {}, { agent_id: "orch", run_id: "orun_1" }, 3600, null);
      const overdue = new Date(Date.now() - MINUTE).toISOString();
      await o.upsertTask(entry("t1", { native_status: "running", wal_seq: 5, next_deadline_at: overdue, lost_attempts: 1 }));
      expect((await o.snapshot())!.task_summary).toMatchObject({ active: 1, stale: 1, lost: 1 });
      expect((await o.snapshot())!.tasks[0]!.status).toBe("stale");
      await o.upsertTask(entry("t1", { native_status: "running", wal_seq: 6, next_deadline_at: new Date(Date.now() + MINUTE).toISOString() }));
      expect((await o.snapshot())!.task_summary).toMatchObject({ active: 1, stale: 0, lost: 0 });
      // A push that lost the race to a newer one (re-sent by the task's outbox) is ignored whole.
      await o.upsertTask(entry("t1", { native_status: "failed", wal_seq: 4, next_deadline_at: overdue }));
      expect((await o.snapshot())!.task_summary).toMatchObject({ active: 1, terminal: 0, failed: 0, stale: 0 });
      await expectKeptExact(o, state.storage.sql);
    });
  });

  it("Should follow real tasks through pending, running, blocked, paused and the terminal statuses, and open actions opening and closing", async () => {
    const s = await newSession();
    const expectCounts = (expected: Partial<Counts>) =>
      eventually(async () => {
        const { kept, recounted } = await keptAndRecounted(s.sid);
        expect(kept).toEqual(recounted);
        expect(kept).toMatchObject(expected);
      });
    const waiting = await newTask(s, uniqueId("w"), []);
    const first = await newTask(s, uniqueId("a"), [step("a"), step("b")]);
    const second = await newTask(s, uniqueId("b"), [step("a")]);
    const third = await newTask(s, uniqueId("c"), [step("a")]);
    await expectCounts({ active: 4, waiting: 1, terminal: 0 });
    const w = await dispatch(s, first);
    expectOk(await call("POST", `${first}/steps/a/claim`, w.token));
    const action = expectOk(await call("POST", `${first}/steps/a/actions`, w.token, { kind: "approval", prompt: "Go on?" }), 201);
    expectOk(await call("POST", `${first}/actions`, s.orch, { kind: "approval", prompt: "And the plan?" }), 201);
    await expectCounts({ active: 4, waiting: 2, open_actions: 2 });
    expectOk(await call("POST", `${first}/actions/${action.action_id}/respond`, s.orch, { decision: "approved" }));
    await expectCounts({ waiting: 2, open_actions: 1 });
    expectOk(await call("POST", `${second}/block`, s.orch, { reason: "night" }));
    expectOk(await call("POST", `${third}/pause`, s.orch, { reason: "night" }));
    await expectCounts({ active: 4, blocked: 1 });
    expectOk(await call("POST", `${second}/reopen`, s.orch, {}));
    await expectCounts({ blocked: 0 });
    expectOk(await call("POST", `${second}/fail`, s.orch, {}));
    expectOk(await call("POST", `${third}/cancel`, s.orch, {}));
    expectOk(await call("POST", `${first}/cancel`, s.orch, {}));
    await expectCounts({ active: 1, terminal: 3, failed: 1, open_actions: 0, waiting: 1 });
    expectOk(await call("POST", `${waiting}/complete`, s.orch, {}));
    await expectCounts({ active: 0, terminal: 4, failed: 1, waiting: 0 });
  });

  it("Should catch up when a task object dies between a status commit and its push (the outbox re-sends it)", async () => {
    const s = await newSession();
    const id = uniqueId("x");
    const t = await newTask(s, id, [step("a")]);
    await eventually(async () => expect((await keptAndRecounted(s.sid)).kept).toMatchObject({ active: 1, blocked: 0 }));
    // The push's timers never fire: the object dies with what it left in memory for later.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    expectOk(await call("POST", `${t}/block`, s.orch, { reason: "night" }));
    await evictDurableObject(taskStub(s.sid, id));
    vi.useRealTimers();
    await eventually(async () => {
      const { kept, recounted } = await keptAndRecounted(s.sid);
      expect(kept).toMatchObject({ active: 1, blocked: 1 });
      expect(kept).toEqual(recounted);
    }, 5_000);
  });

  it("Should leave the counts as they were when a reservation is released, and count a reserved task once it is confirmed", async () => {
    const sid = uniqueId("res");
    await runInDurableObject(sessionStub(sid), async (o: SessionObject, state) => {
      await o.create(sid, new Date().toISOString(), {}, { agent_id: "orch", run_id: "orun_1" }, 3600, null);
      await o.upsertTask(entry("t1", { native_status: "running", wal_seq: 1 }));
      expect((await o.reserve("t2", "wal-t2")).ok).toBe(true);
      expect((await o.reserve("t3", "wal-t3")).ok).toBe(true);
      expect((await o.snapshot())!.task_summary).toMatchObject({ active: 1 });
      await o.release("t2");
      await o.upsertTask(entry("t3", { native_status: "pending", wal_seq: 1 }));
      expect((await o.snapshot())!.task_summary).toMatchObject({ active: 2, waiting: 1 });
      await expectKeptExact(o, state.storage.sql);
    });
  });

  it("Should add and fill the archived count at start-up for a counts table made before it", async () => {
    const sid = uniqueId("arch");
    const stub = sessionStub(sid);
    await runInDurableObject(stub, async (o: SessionObject, state) => {
      await o.create(sid, new Date().toISOString(), {}, { agent_id: "orch", run_id: "orun_1" }, 3600, null);
      await o.upsertTask(entry("t1", { native_status: "running", wal_seq: 1 }));
      await o.upsertTask({ ...entry("t2", { native_status: "cancelled", wal_seq: 2 }), status: "archived" });
      await o.upsertTask(entry("t3", { native_status: "failed", wal_seq: 1 }));
      state.storage.sql.exec("ALTER TABLE task_counts DROP COLUMN archived");
    });
    await evictDurableObject(stub);
    await runInDurableObject(stub, async (o: SessionObject, state) => {
      expect(state.storage.sql.exec<{ archived: number }>("SELECT archived FROM task_counts").one().archived).toBe(1);
      expect((await o.listTasks({ include_terminal: true })).tasks.map((t) => t.task_id)).toEqual(["t1", "t3"]);
      expect((await o.listTasks({ include_terminal: true })).total).toBe(2);
      expect((await o.listTasks({ include_archived: true })).tasks.map((t) => t.task_id)).toEqual(["t1", "t2"]);
      await expectKeptExact(o, state.storage.sql);
    });
  });

  it("Should compute the counts once at start-up for a session stored before they were kept", async () => {
    const sid = uniqueId("old");
    const stub = sessionStub(sid);
    const overdue = new Date(Date.now() - MINUTE).toISOString();
    await runInDurableObject(stub, async (o: SessionObject, state) => {
      await o.create(sid, new Date().toISOString(), {}, { agent_id: "orch", run_id: "orun_1" }, 3600, null);
      await o.upsertTask(entry("t1", { native_status: "running", wal_seq: 1, open_action_count: 2, next_deadline_at: overdue }));
      await o.upsertTask(entry("t2", { native_status: "blocked", wal_seq: 1, lost_attempts: 1 }));
      await o.upsertTask(entry("t3", { native_status: "failed", wal_seq: 1 }));
      await o.upsertTask(entry("t4", { native_status: "pending", wal_seq: 1 }));
      // The tables as a session stored them before the counts: no counts table, no stale or held-up columns.
      const sql = state.storage.sql;
      sql.exec("DROP TABLE task_counts");
      for (const index of ["tasks_by_stale_at", "tasks_held_up"]) sql.exec(`DROP INDEX ${index}`);
      for (const column of ["stale_at_ms", "held_up"]) sql.exec(`ALTER TABLE tasks DROP COLUMN ${column}`);
    });
    await evictDurableObject(stub);
    await runInDurableObject(stub, async (o: SessionObject, state) => {
      const snapshot = (await o.snapshot())!;
      expect(countsOf(snapshot)).toEqual({ active: 3, terminal: 1, failed: 1, lost: 1, waiting: 2, blocked: 1, stale: 1, open_actions: 2 });
      await expectKeptExact(o, state.storage.sql);
      expect(snapshot.blockedTasks.map((b) => b.taskId)).toEqual(["t1", "t2"]);
      // And they are kept from there on.
      await o.upsertTask(entry("t2", { native_status: "completed", wal_seq: 2 }));
      expect((await o.snapshot())!.task_summary).toMatchObject({ active: 2, terminal: 2, blocked: 0, lost: 0 });
    });
  });
});
