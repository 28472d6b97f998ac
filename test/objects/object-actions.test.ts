/**
 * @module Human actions in the objects, called through their RPC stubs: a task object's action list and
 * long-polls, the action.resolved frames on its command sockets, the alarm that expires actions and reopens
 * retried steps with no request arriving, and the session's inbox of open actions and its snapshot.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MAX_ACTION_WAITERS } from "../../durable-objects/task/action-waiters.js";
import type { SessionObject } from "../../durable-objects/session/session-object.js";
import type { TaskGraphObject } from "../../durable-objects/task/task-graph-object.js";
import type { IndexEntry } from "../../src/contract/index.js";
import type { Action, Actor } from "../../src/core/index.js";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { bindings, eventually, expectOk, sleep, taskStub, uniqueId, walOf } from "../support/support.js";
import { openSocket } from "../support/test-socket.js";

/** The orchestrator of a session, as its token makes it. */
const orchestrator = (sid: string): Actor => ({ role: "orchestrator", session_id: sid, agent_id: "orchestrator", run_id: null });
/** An approver of a session. */
const approver = (sid: string): Actor => ({ role: "approver", session_id: sid, agent_id: "approver-1", run_id: null });

/** The RPC methods of a task object these tests call, typed as the class declares them. */
type TaskActionsRpc = Pick<TaskGraphObject, "execute" | "listActions" | "getAction">;
/** The task's object (its stub, called over RPC). */
const taskObject = (sid: string, tid: string) => taskStub(sid, tid) as unknown as TaskActionsRpc;
/** The session's object (its stub, called over RPC). */
const sessionObject = (sid: string) => bindings.SESSIONS.get(bindings.SESSIONS.idFromName(sid)) as unknown as Pick<SessionObject, "listOpenActions">;

/** A task whose steps are each claimed by a worker run of its own (`w` holds the last), so actions may be asked on them. */
async function heldTask(s: TestSession, stepIds: string[]) {
  const tid = uniqueId("act");
  const t = await newTask(s, tid, stepIds.map((id) => step(id)));
  let w = { token: "", run_id: "", agent_id: "" };
  for (const id of stepIds) {
    w = await dispatch(s, t);
    expectOk(await call("POST", `${t}/steps/${id}/claim`, w.token));
  }
  return { tid, t, w, object: taskObject(s.sid, tid) };
}

/** Asks an action as the orchestrator (on a held step, or the task's when `stepId` is null); returns its id. */
async function ask(s: TestSession, tid: string, stepId: string | null, body: Record<string, unknown> = {}): Promise<string> {
  const command = { type: "request_action", kind: "approval", prompt: `May ${stepId ?? "the task"} go on?`, ...(stepId === null ? {} : { step_id: stepId }), ...body };
  const answer = await taskObject(s.sid, tid).execute(orchestrator(s.sid), command, null);
  if (!answer.ok) throw new Error(`request_action refused: ${JSON.stringify(answer.error)}`);
  return String(answer.value.action_id);
}

/** Answers an action (approved, unless told otherwise) as `actor`. */
async function respond(s: TestSession, tid: string, actionId: string, actor = orchestrator(s.sid), decision = "approved") {
  const answer = await taskObject(s.sid, tid).execute(actor, { type: "respond_action", action_id: actionId, decision }, null);
  if (!answer.ok) throw new Error(`respond_action refused: ${JSON.stringify(answer.error)}`);
  return answer.value;
}

/** Long-polls waiting in the task's object now. */
const waiting = (s: TestSession, tid: string) => runInDurableObject(taskStub(s.sid, tid), (o: TaskGraphObject) => (o as unknown as { waiters: { size: number } }).waiters.size);

/** Keeps the runtime from firing the object's alarm by itself (the test runs it). */
const holdAlarm = (s: TestSession, tid: string) => runInDurableObject(taskStub(s.sid, tid), (_o, state) => state.storage.setAlarm(Date.now() + 600_000));

/** The session's index entry of a task, as agent.task_list lists it. */
async function listed(s: TestSession, tid: string) {
  const page = expectOk(await call("GET", `/v1/sessions/${s.sid}/tasks?include_terminal=true&limit=200`, s.orch));
  return page.tasks.find((t: { task_id: string }) => t.task_id === tid);
}

describe("a task object's actions", () => {
  it("Should list the task's actions oldest first, filtered by status and paged", async () => {
    const s = await newSession();
    const { tid, object } = await heldTask(s, ["a", "b", "c"]);
    const ids = [await ask(s, tid, "a"), await ask(s, tid, "b"), await ask(s, tid, "c")];
    await respond(s, tid, ids[1]!);
    const all = await object.listActions(orchestrator(s.sid), {});
    expect(all.ok && all.value.actions.map((a) => a.action_id)).toEqual(ids);
    expect(all.ok && all.value).toMatchObject({ total: 3, limit: 50, offset: 0, next_offset: null });
    const open = await object.listActions(orchestrator(s.sid), { status: "open", limit: 1 });
    expect(open.ok && open.value).toMatchObject({ actions: [{ action_id: ids[0], status: "open" }], total: 2, limit: 1, offset: 0, next_offset: 1 });
    const second = await object.listActions(orchestrator(s.sid), { status: "open", limit: 1, offset: 1 });
    expect(second.ok && second.value).toMatchObject({ actions: [{ action_id: ids[2] }], next_offset: null });
    const resolved = await object.listActions(approver(s.sid), { status: "resolved" });
    expect(resolved.ok && resolved.value.actions.map((a) => [a.action_id, a.decision])).toEqual([[ids[1], "approved"]]);
  });

  it("Should refuse the action reads to a caller outside the task's session, and answer not_found for an unknown action", async () => {
    const s = await newSession();
    const { tid, object } = await heldTask(s, ["a"]);
    const id = await ask(s, tid, "a");
    const stranger = orchestrator((await newSession()).sid);
    const list = await object.listActions(stranger, {});
    expect(!list.ok && list.error.code).toBe("permission_denied");
    const one = await object.getAction(stranger, id, 0);
    expect(!one.ok && one.error.code).toBe("permission_denied");
    const unknown = await object.getAction(orchestrator(s.sid), "act_nothing", 1_000);
    expect(!unknown.ok && unknown.error.code).toBe("not_found");
    expect(await waiting(s, tid)).toBe(0);
  });

  it("Should answer a long-poll as soon as a respond commits, with the resolved action", async () => {
    const s = await newSession();
    const { tid, object } = await heldTask(s, ["a"]);
    const id = await ask(s, tid, "a");
    // Waits far longer than the test may run: only the respond can answer it in time.
    const poll = object.getAction(orchestrator(s.sid), id, 30_000);
    await eventually(async () => expect(await waiting(s, tid)).toBe(1));
    await respond(s, tid, id, approver(s.sid));
    const answer = await poll;
    expect(answer.ok && answer.value.action).toMatchObject({ action_id: id, status: "resolved", decision: "approved", resolved_by: { agent_id: "approver-1", role: "approver" } });
    expect(await waiting(s, tid)).toBe(0);
  });

  it("Should answer a long-poll with the still-open action when its wait ends, and forget the wait", async () => {
    const s = await newSession();
    const { tid, object } = await heldTask(s, ["a"]);
    const id = await ask(s, tid, "a");
    const answer = await object.getAction(orchestrator(s.sid), id, 1_000);
    expect(answer.ok && answer.value.action).toMatchObject({ action_id: id, status: "open", decision: null });
    expect(await waiting(s, tid)).toBe(0);
  });

  it("Should answer at once without waiting when wait_ms is 0 or the action is already resolved", async () => {
    const s = await newSession();
    const { tid, object } = await heldTask(s, ["a"]);
    const id = await ask(s, tid, "a");
    const now = await object.getAction(orchestrator(s.sid), id, 0);
    expect(now.ok && now.value.action.status).toBe("open");
    await respond(s, tid, id, orchestrator(s.sid), "rejected");
    // A 30 s wait on a resolved action would outlive the test: it must answer at once.
    const done = await object.getAction(orchestrator(s.sid), id, 30_000);
    expect(done.ok && done.value.action).toMatchObject({ status: "resolved", decision: "rejected" });
  });

  it(`Should answer the long-poll past ${MAX_ACTION_WAITERS} waits on one object 429 rate_limited, and answer the waiting ones when the action resolves`, async () => {
    const s = await newSession();
    const { tid, object } = await heldTask(s, ["a"]);
    const id = await ask(s, tid, "a");
    const polls = Array.from({ length: MAX_ACTION_WAITERS }, () => object.getAction(orchestrator(s.sid), id, 30_000));
    await eventually(async () => expect(await waiting(s, tid)).toBe(MAX_ACTION_WAITERS));
    const refused = await object.getAction(orchestrator(s.sid), id, 30_000);
    expect(!refused.ok && refused.error).toMatchObject({ code: "rate_limited", details: { limit: "action_waiters", max: MAX_ACTION_WAITERS, retry_after_ms: expect.any(Number) } });
    // A read that does not wait is still served.
    expect((await object.getAction(orchestrator(s.sid), id, 0)).ok).toBe(true);
    await respond(s, tid, id);
    const answers = await Promise.all(polls);
    expect(answers.every((a) => a.ok && a.value.action.decision === "approved")).toBe(true);
    expect(await waiting(s, tid)).toBe(0);
  });
});

describe("action.resolved on the task's command sockets", () => {
  it("Should push an action.resolved frame to every open socket of the task when an action is answered or withdrawn", async () => {
    const s = await newSession();
    const { tid, t, w } = await heldTask(s, ["a", "b"]);
    const first = await openSocket(t, w.token);
    const second = await openSocket(t, s.orch);
    const answered = await ask(s, tid, "a");
    const withdrawn = await ask(s, tid, "b", { kind: "input", prompt: "Which colour?" });
    await respond(s, tid, answered);
    for (const sock of [first, second]) {
      expect(await sock.nextEvent()).toMatchObject({ event: "action.resolved", task_id: tid, action: { action_id: answered, status: "resolved", decision: "approved" } });
    }
    // The worker settles step b: its claim ends, so the action it asked on it is withdrawn by the runtime.
    expectOk(await call("POST", `${t}/steps/b/status`, w.token, { status: "completed" }));
    for (const sock of [first, second]) {
      expect(await sock.nextEvent()).toMatchObject({ event: "action.resolved", task_id: tid, action: { action_id: withdrawn, decision: "withdrawn", resolved_by: { role: "system" } } });
    }
    // Answer frames keep their own shape on the same socket.
    expect(await first.ask({ id: 9, commands: [{ token: s.orch, method: "POST", path: `${t}/steps/a/progress`, body: { phase: "p" } }] })).toMatchObject({ id: 9, results: [{ ok: true }] });
    first.ws.close(1000);
    second.ws.close(1000);
  });
});

describe("the task object's alarm", () => {
  it("Should expire an action with no request arriving, tell the task's sockets, and the session's inbox and index entry show it", async () => {
    const s = await newSession();
    const { tid, t, object } = await heldTask(s, ["a"]);
    const id = await ask(s, tid, "a", { timeout_ms: 1_000 });
    await eventually(async () => expect((await listed(s, tid)).open_action_count).toBe(1));
    const read = await object.getAction(orchestrator(s.sid), id, 0);
    if (!read.ok) throw new Error(read.error.message);
    const sock = await openSocket(t, s.orch);
    await holdAlarm(s, tid);
    await sleep(Date.parse(read.value.action.expires_at) - Date.now() + 50);
    expect(await runDurableObjectAlarm(taskStub(s.sid, tid))).toBe(true);
    // The WAL export does not reconcile: this event is the alarm's.
    const last = (await walOf(t, s.orch)).at(-1)!;
    expect(last).toMatchObject({ event_type: "action_resolved", actor_agent_id: "system", payload: { action_id: id, decision: "expired" } });
    expect(await sock.nextEvent()).toMatchObject({ event: "action.resolved", task_id: tid, action: { action_id: id, decision: "expired" } });
    sock.ws.close(1000);
    await eventually(async () => {
      expect(await listed(s, tid)).toMatchObject({ open_action_count: 0 });
      expect((await sessionObject(s.sid).listOpenActions({})).total).toBe(0);
    });
  });

  it("Should reopen a step whose retry is due, with no request arriving, and the index entry shows it ready", async () => {
    const s = await newSession();
    const tid = uniqueId("retry");
    const policy = { max_attempts: 3, initial_interval_ms: 1_000, backoff_coefficient: 1, max_interval_ms: 1_000 };
    const t = await newTask(s, tid, [step("a", [], { retry_policy: policy })]);
    const w = await dispatch(s, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "failed", result_summary: "flaky" }));
    await holdAlarm(s, tid);
    const view = expectOk(await call("GET", t, s.orch));
    const retryAt = (view.steps as { step_id: string; retry_at: string | null }[]).find((x) => x.step_id === "a")!.retry_at!;
    expect(retryAt).not.toBeNull();
    await sleep(Date.parse(retryAt) - Date.now() + 50);
    expect(await runDurableObjectAlarm(taskStub(s.sid, tid))).toBe(true);
    const written = await walOf(t, s.orch);
    expect(written.slice(-2).map((e) => [e.event_type, e.actor_agent_id])).toEqual([
      ["task_step_reopened", "system"],
      ["task_step_ready", "system"],
    ]);
    expect(written.at(-2)!.payload).toMatchObject({ reason: "retry_policy", by_retry_policy: true });
    await eventually(async () => expect((await listed(s, tid)).step_counts.ready).toBe(1));
  });
});

describe("the session's inbox of open actions", () => {
  it("Should list the open actions of the session's tasks newest first, paged, each with its task's title", async () => {
    const s = await newSession();
    const one = await heldTask(s, ["a", "b"]);
    const two = await heldTask(s, ["c"]);
    const ids = [await ask(s, one.tid, "a"), await ask(s, two.tid, "c"), await ask(s, one.tid, "b")];
    const inbox = sessionObject(s.sid);
    await eventually(async () => expect((await inbox.listOpenActions({})).total).toBe(3));
    const first = await inbox.listOpenActions({ limit: 2 });
    expect(first.actions.map((a) => a.action_id)).toEqual([ids[2], ids[1]]);
    expect(first).toMatchObject({ total: 3, limit: 2, offset: 0, next_offset: 2 });
    expect(first.actions[1]).toMatchObject({ task_id: two.tid, step_id: "c", status: "open", task_title: `Task ${two.tid}` });
    const rest = await inbox.listOpenActions({ limit: 2, offset: 2 });
    expect(rest).toMatchObject({ actions: [{ action_id: ids[0], task_title: `Task ${one.tid}` }], next_offset: null });
  });

  it("Should drop an action from the inbox once it is resolved", async () => {
    const s = await newSession();
    const { tid } = await heldTask(s, ["a", "b"]);
    const kept = await ask(s, tid, "a");
    const answered = await ask(s, tid, "b");
    const inbox = sessionObject(s.sid);
    await eventually(async () => expect((await inbox.listOpenActions({})).total).toBe(2));
    await respond(s, tid, answered);
    await eventually(async () => {
      const page = await inbox.listOpenActions({});
      expect(page.actions.map((a: Action) => a.action_id)).toEqual([kept]);
      expect(page.total).toBe(1);
    });
  });

  it("Should push a change of open actions to the session at once, not when the push interval ends", async () => {
    const s = await newSession();
    const { tid } = await heldTask(s, ["a"]);
    await eventually(async () => expect((await listed(s, tid)).step_counts.claimed).toBe(1));
    const id = await ask(s, tid, "a");
    // Without its alarm the object pushes a debounced (count-only) change never; only an immediate push arrives.
    await runInDurableObject(taskStub(s.sid, tid), (_o, state) => state.storage.deleteAlarm());
    await eventually(async () => expect((await sessionObject(s.sid).listOpenActions({})).actions.map((a) => a.action_id)).toEqual([id]));
  });

  it("Should push a change of open actions committed while the previous push is in flight as soon as that push answers", async () => {
    const s = await newSession();
    const { tid } = await heldTask(s, ["a", "b"]);
    const first = await ask(s, tid, "a");
    const inbox = sessionObject(s.sid);
    await eventually(async () => expect((await inbox.listOpenActions({})).total).toBe(1));
    // Sent together: the answer commits while the push of the new action is still on its way to the session.
    const [second] = await Promise.all([ask(s, tid, "b"), respond(s, tid, first)]);
    await runInDurableObject(taskStub(s.sid, tid), (_o, state) => state.storage.deleteAlarm());
    await eventually(async () => expect((await inbox.listOpenActions({})).actions.map((a) => a.action_id)).toEqual([second]));
  });

  it("Should send the open actions only when their set changed, and keep them in the inbox, under the task's current title, across pushes without them", async () => {
    const s = await newSession();
    const { tid, t } = await heldTask(s, ["a"]);
    const id = await ask(s, tid, "a");
    await eventually(async () => expect((await sessionObject(s.sid).listOpenActions({})).actions.map((a) => a.action_id)).toEqual([id]));
    // Record what the task object pushes to its session from here on (its outbox's sender, wrapped).
    const pushed: { wal_seq: number; has_actions: boolean }[] = [];
    await runInDurableObject(taskStub(s.sid, tid), (o: TaskGraphObject) => {
      const outbox = (o as unknown as { shell: { index: { send: (entry: IndexEntry, deliveries: unknown[]) => Promise<void> } } }).shell.index;
      const send = outbox.send;
      outbox.send = (entry, deliveries) => {
        pushed.push({ wal_seq: entry.wal_seq, has_actions: "open_actions" in entry });
        return send(entry, deliveries);
      };
    });
    // A retitle: a change of the entry that leaves the open actions as they were.
    expectOk(await call("PATCH", t, s.orch, { ops: [{ op: "update_task", title: "Retitled" }] }));
    await eventually(async () => expect(await listed(s, tid)).toMatchObject({ title: "Retitled", open_action_count: 1 }));
    expect(pushed.length).toBeGreaterThan(0);
    expect(pushed.every((p) => !p.has_actions), "a push whose open actions did not change carries none").toBe(true);
    expect((await sessionObject(s.sid).listOpenActions({})).actions).toMatchObject([{ action_id: id, task_title: "Retitled" }]);
    // Answering changes the set: that push carries the (now empty) list, and the inbox empties.
    await respond(s, tid, id);
    await eventually(async () => expect((await sessionObject(s.sid).listOpenActions({})).total).toBe(0));
    expect(pushed.at(-1)!.has_actions).toBe(true);
  });

  it("Should show the normalized task status in the index entry: waiting_permission, then paused", async () => {
    const s = await newSession();
    const { tid } = await heldTask(s, ["a"]);
    const id = await ask(s, tid, null);
    await eventually(async () => expect(await listed(s, tid)).toMatchObject({ native_status: "running", status: "waiting_permission", open_action_count: 1 }));
    await respond(s, tid, id);
    const paused = await taskObject(s.sid, tid).execute(orchestrator(s.sid), { type: "pause_task", reason: "night" }, null);
    expect(paused.ok).toBe(true);
    await eventually(async () => expect(await listed(s, tid)).toMatchObject({ native_status: "paused", status: "paused", open_action_count: 0 }));
  });

  it("Should count tasks waiting on people in the snapshot and list their open actions as required actions", async () => {
    const s = await newSession();
    const waitingTask = await heldTask(s, ["a", "b"]);
    await heldTask(s, ["c"]);
    const ids = [await ask(s, waitingTask.tid, "a"), await ask(s, waitingTask.tid, "b")];
    await eventually(async () => {
      const snap = expectOk(await call("GET", `/v1/sessions/${s.sid}`, s.observer));
      expect(snap.task_summary).toMatchObject({ active: 2, waiting: 1, open_actions: 2 });
      expect(snap.taskSummary.waitingCount).toBe(1);
      expect(snap.blockedTasks).toEqual([
        { taskId: waitingTask.tid, nativeStatus: "running", blockedSteps: 0, failedSteps: 0, requiredAction: "respond to the 2 open actions", actionIds: ids },
      ]);
    });
  });
});
