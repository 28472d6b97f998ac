/**
 * Archive and retention (docs/design.md "Archive and retention") through the Worker and the objects: an archived
 * task leaves the task list but keeps its counts; with RETENTION_DAYS (1 in the test bindings) its alarm deletes its
 * storage and its session index entry once the deadline passed and nothing still references it, after which its
 * routes answer 404 not_found with details.reason retention. The deadline is a day away: the tests move the task
 * object's retention clock past it and run the alarm, never waiting.
 */
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { CommitShell } from "../../durable-objects/task/commit-shell.js";
import type { SessionObject } from "../../durable-objects/session/session-object.js";
import type { TaskGraphObject } from "../../durable-objects/task/task-graph-object.js";
import { call, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { eventOf, openStream } from "../support/sse.js";
import { bindings, eventually, expectError, expectOk, expectRefusedWritingNothing, taskStub, uniqueId, walOf } from "../support/support.js";

const DAY_MS = 86_400_000;
const sessionStub = (sid: string) => bindings.SESSIONS.get(bindings.SESSIONS.idFromName(sid));
const shellOf = (instance: TaskGraphObject) => (instance as unknown as { shell: CommitShell }).shell;

/** A task of one step, ended by `end` (cancel by default); its path and id. */
async function endedTask(s: TestSession, end: "complete" | "fail" | "cancel" = "cancel"): Promise<{ path: string; id: string }> {
  const id = uniqueId("arch");
  const path = await newTask(s, id, end === "complete" ? [] : [step("a")]);
  expectOk(await call("POST", `${path}/${end}`, s.orch, { reason: "over" }));
  return { path, id };
}

/**
 * The task's alarm as retention sees it `aheadMs` from now: the retention clock moved, then the alarm run (if one is
 * set: an alarm that rang by itself meanwhile may be the one deleting, so the checks after it wait with eventually).
 */
async function runRetentionAt(sid: string, id: string, aheadMs: number): Promise<void> {
  const stub = taskStub(sid, id);
  await runInDurableObject(stub, (instance: TaskGraphObject) => {
    shellOf(instance).retention.clock = () => Date.now() + aheadMs;
  });
  await runDurableObjectAlarm(stub);
}

/** The session's rows of a task: its index row, its retired marker. */
async function sessionRows(sid: string, id: string): Promise<{ listed: number; retired: number; inbox: number }> {
  return runInDurableObject(sessionStub(sid), (_o: SessionObject, state) => {
    const n = (q: string) => state.storage.sql.exec<{ n: number }>(q, id).one().n;
    return { listed: n("SELECT COUNT(*) AS n FROM tasks WHERE task_id = ?"), retired: n("SELECT COUNT(*) AS n FROM retired_tasks WHERE task_id = ?"), inbox: n("SELECT COUNT(*) AS n FROM actions WHERE task_id = ?") };
  });
}

/** The session's kept counts equal the ones recomputed from its rows. */
async function expectCountsExact(sid: string): Promise<Record<string, number>> {
  return runInDurableObject(sessionStub(sid), async (o: SessionObject, state) => {
    const summary = (await o.snapshot())!.task_summary;
    const rows = state.storage.sql.exec<{ terminal: number; native_status: string }>("SELECT terminal, native_status FROM tasks WHERE state = 'confirmed'").toArray();
    expect({ active: summary.active, terminal: summary.terminal, failed: summary.failed }).toEqual({
      active: rows.filter((r) => r.terminal === 0).length,
      terminal: rows.filter((r) => r.terminal === 1).length,
      failed: rows.filter((r) => r.native_status === "failed").length,
    });
    return summary as unknown as Record<string, number>;
  });
}

describe("archiving a task", () => {
  it("Should archive a terminal task: 200, task_archived on the WAL with its deadline, task.archived on the stream, normalized archived", async () => {
    const s = await newSession();
    const t = await endedTask(s, "fail");
    const before = Date.now();
    const answer = expectOk(await call("POST", `${t.path}/archive`, s.orch, { reason: "tidy up" }));
    expect(answer.event_ids).toHaveLength(1);
    const wal = await walOf(t.path, s.observer);
    const archived = wal.at(-1)!;
    expect(archived).toMatchObject({ event_type: "task_archived", wal_seq: answer.wal_seq, payload: { reason: "tidy up" } });
    const deleteAfter = Date.parse((archived.payload as { delete_after: string }).delete_after);
    expect(deleteAfter - Date.parse(archived.created_at)).toBe(DAY_MS);
    expect(deleteAfter).toBeGreaterThanOrEqual(before + DAY_MS);
    const task = expectOk(await call("GET", t.path, s.observer)).task;
    expect(task).toMatchObject({ status: "failed", archived_at: archived.created_at, delete_after: (archived.payload as { delete_after: string }).delete_after });
    const stream = await openStream(`${t.path}/events`, s.observer);
    const frames = await stream.rest();
    const archivedFrame = frames.find((f) => f.event === "task.archived")!;
    expect(eventOf(archivedFrame)).toMatchObject({ type: "task.archived", status: "archived", payload: { deleteAfter: (archived.payload as { delete_after: string }).delete_after } });
  });

  it("Should refuse to archive a live task with 409 invalid_transition and write nothing", async () => {
    const s = await newSession();
    const id = uniqueId("live");
    const path = await newTask(s, id, [step("a")]);
    await expectRefusedWritingNothing(path, s.orch, () => call("POST", `${path}/archive`, s.orch, {}), 409, "invalid_transition");
    expectOk(await call("POST", `${path}/pause`, s.orch, {}));
    await expectRefusedWritingNothing(path, s.orch, () => call("POST", `${path}/archive`, s.orch, {}), 409, "invalid_transition");
  });

  it("Should answer a second archive 200 without writing anything", async () => {
    const s = await newSession();
    const t = await endedTask(s);
    const first = expectOk(await call("POST", `${t.path}/archive`, s.orch, {}));
    const again = expectOk(await call("POST", `${t.path}/archive`, s.orch, { reason: "again" }));
    expect(again.event_ids).toEqual([]);
    expect(again.wal_seq).toBe(first.wal_seq);
  });

  it("Should leave archived tasks out of the task list unless include_archived, and keep counting them terminal", async () => {
    const s = await newSession();
    const live = await newTask(s, uniqueId("live"), [step("a")]);
    const done = await endedTask(s, "complete");
    const gone = await endedTask(s, "fail");
    expectOk(await call("POST", `${gone.path}/archive`, s.orch, {}));
    const ids = (query: string) => call("GET", `/v1/sessions/${s.sid}/tasks${query}`, s.observer).then((r) => expectOk(r).tasks.map((x: { task_id: string; status: string }) => `${x.task_id}:${x.status}`));
    const liveId = live.split("/").at(-1)!;
    // Terminal ones newest first by when they ended (an archive does not move a task up the list).
    await eventually(async () => expect(await ids("?include_terminal=true&include_archived=true")).toEqual([`${liveId}:running`, `${gone.id}:archived`, `${done.id}:completed`]));
    expect(await ids("")).toEqual([`${liveId}:running`]);
    expect(await ids("?include_terminal=true")).toEqual([`${liveId}:running`, `${done.id}:completed`]);
    expect(await ids("?include_archived=true")).toEqual([`${liveId}:running`, `${gone.id}:archived`]);
    const listed = expectOk(await call("GET", `/v1/sessions/${s.sid}/tasks?include_terminal=true&include_archived=true`, s.observer));
    expect(listed.total).toBe(3);
    expect(await expectCountsExact(s.sid)).toMatchObject({ active: 1, terminal: 2, failed: 1 });
  });
});

describe("retention", () => {
  it("Should delete an archived task's storage and index entry after RETENTION_DAYS, then answer 404 not_found with reason retention", async () => {
    const s = await newSession();
    const t = await endedTask(s, "fail");
    expectOk(await call("POST", `${t.path}/archive`, s.orch, {}));
    await eventually(async () => expect((await sessionRows(s.sid, t.id)).listed).toBe(1));
    // Not yet due: nothing happens.
    await runRetentionAt(s.sid, t.id, 0);
    expectOk(await call("GET", t.path, s.observer));
    await eventually(async () => {
      await runRetentionAt(s.sid, t.id, DAY_MS + 1_000);
      expect(await sessionRows(s.sid, t.id)).toEqual({ listed: 0, retired: 1, inbox: 0 });
      expect((await call("GET", t.path, s.observer)).status).toBe(404);
    });
    await runInDurableObject(taskStub(s.sid, t.id), (_o: TaskGraphObject, state) => {
      const sql = state.storage.sql;
      for (const table of ["wal_commits", "wal_commit_parts", "idempotency_spill", "snapshots", "snapshot_parts"]) expect(sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`).one().n, table).toBe(0);
      expect(sql.exec<{ key: string }>("SELECT key FROM meta").toArray().map((r) => r.key)).toEqual(["retention_tombstone"]);
    });
    for (const path of [t.path, `${t.path}/wal`, `${t.path}/events`, `${t.path}/summary`, `${t.path}/steps`]) {
      const res = await call("GET", path, s.observer);
      expectError(res, 404, "not_found");
      expect(res.body.error.details, path).toMatchObject({ reason: "retention", task_id: t.id });
    }
    const write = await call("POST", `${t.path}/archive`, s.orch, {});
    expectError(write, 404, "not_found");
    expect(write.body.error.details.reason).toBe("retention");
    // Its id and wal name stay taken; the counts no longer hold it.
    const again = await call("POST", `/v1/sessions/${s.sid}/tasks`, s.orch, { task_id: t.id, wal_name: uniqueId("w"), title: "again", summary: "", steps: [] });
    expectError(again, 409, "task_id_conflict");
    expect(again.body.error.details.reason).toBe("retention");
    expect(await expectCountsExact(s.sid)).toMatchObject({ terminal: 0, failed: 0 });
    // The tombstone outlives a restart.
    await evictDurableObject(taskStub(s.sid, t.id));
    expect((await call("GET", t.path, s.observer)).body.error.details.reason).toBe("retention");
  });

  it("Should keep an archived blocker whose blocks link holds a live task, and delete it once that task ended", async () => {
    const s = await newSession();
    const blocker = await endedTask(s, "cancel");
    const heldId = uniqueId("held");
    const held = await newTask(s, heldId, [step("a")]);
    expectOk(await call("POST", `/v1/sessions/${s.sid}/links`, s.orch, { kind: "blocks", from_task_id: blocker.id, to_task_id: heldId }), 201);
    expectOk(await call("POST", `${blocker.path}/archive`, s.orch, {}));
    await eventually(async () => {
      await runRetentionAt(s.sid, blocker.id, DAY_MS + 1_000);
      const hold = await runInDurableObject(taskStub(s.sid, blocker.id), (o: TaskGraphObject) => shellOf(o).retention.lastHold);
      expect(hold).toEqual({ reason: "blocks_live_task", held_by: [heldId] });
    });
    expectOk(await call("GET", blocker.path, s.observer));
    expect(await sessionRows(s.sid, blocker.id)).toMatchObject({ listed: 1, retired: 0 });
    expectOk(await call("POST", `${held}/cancel`, s.orch, {}));
    // A held try comes back an hour later: each round moves the clock two hours on.
    let ahead = DAY_MS + 1_000;
    await eventually(async () => {
      ahead += 2 * 3_600_000;
      await runRetentionAt(s.sid, blocker.id, ahead);
      expect(await sessionRows(s.sid, blocker.id)).toMatchObject({ listed: 0, retired: 1 });
    });
    expect((await call("GET", blocker.path, s.observer)).body.error.details.reason).toBe("retention");
  });

  it("Should finish a deletion a crash interrupted after the session forgot the task: the object deletes on its next alarm", async () => {
    const s = await newSession();
    const t = await endedTask(s, "complete");
    expectOk(await call("POST", `${t.path}/archive`, s.orch, {}));
    await eventually(async () => expect((await sessionRows(s.sid, t.id)).listed).toBe(1));
    // The session's step done, then the object dies before deleting its storage.
    expect(await sessionStub(s.sid).forgetTask(t.id, t.id, 99)).toEqual({ forgotten: true });
    await evictDurableObject(taskStub(s.sid, t.id));
    // Meanwhile the task is not listed, though its storage is still there.
    expect(expectOk(await call("GET", `/v1/sessions/${s.sid}/tasks?include_terminal=true&include_archived=true`, s.observer)).total).toBe(0);
    expectOk(await call("GET", t.path, s.observer));
    await eventually(async () => {
      await runRetentionAt(s.sid, t.id, DAY_MS + 1_000);
      expect((await call("GET", t.path, s.observer)).body.error?.details.reason).toBe("retention");
    });
    expect(await sessionRows(s.sid, t.id)).toEqual({ listed: 0, retired: 1, inbox: 0 });
  });

  it("Should move every kept count back by what a forgotten entry added, drop its inbox rows, and log its removal", async () => {
    const s = await newSession();
    const id = uniqueId("asks");
    const path = await newTask(s, id, [step("a")]);
    expectOk(await call("POST", `${path}/actions`, s.orch, { kind: "approval", prompt: "Go?" }), 201);
    await eventually(async () => expect(await sessionRows(s.sid, id)).toMatchObject({ listed: 1, inbox: 1 }));
    expect(await expectCountsExact(s.sid)).toMatchObject({ active: 1, waiting: 1, open_actions: 1 });
    // The session's step of retention alone (the object never asks for a live task: this checks the session's bookkeeping).
    expect(await sessionStub(s.sid).forgetTask(id, id, 5)).toEqual({ forgotten: true });
    expect(await sessionRows(s.sid, id)).toEqual({ listed: 0, retired: 1, inbox: 0 });
    expect(await expectCountsExact(s.sid)).toMatchObject({ active: 0, waiting: 0, open_actions: 0 });
    const last = await runInDurableObject(sessionStub(s.sid), (_o: SessionObject, state) =>
      JSON.parse(state.storage.sql.exec<{ data: string }>("SELECT data FROM session_events ORDER BY seq DESC LIMIT 1").one().data),
    );
    expect(last).toMatchObject({ type: "snapshot.updated", taskId: id, payload: { change: "removed" } });
    expect(expectOk(await call("GET", `/v1/sessions/${s.sid}/actions`, s.observer)).actions).toEqual([]);
  });

  it("Should keep every archived task forever when RETENTION_DAYS is 0: no deadline is recorded", async () => {
    const s = await newSession();
    const t = await endedTask(s);
    await runInDurableObject(taskStub(s.sid, t.id), (o: TaskGraphObject) => {
      (shellOf(o) as unknown as { parts: { limits: { retentionDays: number } } }).parts.limits.retentionDays = 0;
    });
    expectOk(await call("POST", `${t.path}/archive`, s.orch, {}));
    expect((await walOf(t.path, s.observer)).at(-1)!.payload).toEqual({ reason: null, delete_after: null });
    await runInDurableObject(taskStub(s.sid, t.id), (o: TaskGraphObject) => expect(shellOf(o).retention.dueAt).toBeNull());
  });
});
