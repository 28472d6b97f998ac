/**
 * @module A task failed or cancelled while its runs are in flight, through the service: the task is terminal at
 * once, each run is asked to cancel and told so on its next command (HTTP, batch, socket), and the object's alarm
 * records child_agent_cancel_timeout when a run never finishes (the test binds CHILD_CANCEL_TIMEOUT_MS to 2,000).
 */
import { runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { TaskGraphObject } from "../../../durable-objects/task/task-graph-object.js";
import { RuntimeClient } from "../../../src/client/index.js";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../../support/helpers.js";
import { eventOf, openStream } from "../../support/sse.js";
import { socketFrame } from "../../support/test-socket.js";
import { BASE, eventually, expectError, expectOk, sleep, taskStub, uniqueId, walOf } from "../../support/support.js";

let S: TestSession;
beforeAll(async () => {
  S = await newSession();
});

async function task(steps: ReturnType<typeof step>[]) {
  const id = uniqueId("stop");
  return { t: await newTask(S, id, steps), stub: taskStub(S.sid, id) };
}

/** Sends one frame over the task's command socket and returns its answer. */
const alarmOf = (stub: ReturnType<typeof taskStub>) => runInDurableObject(stub, (_i, state) => state.storage.getAlarm());

describe("a task stopped with runs in flight", () => {
  it("Should write child_agent_cancel_timeout from the alarm after the task went terminal when a run never finishes", async () => {
    const { t, stub } = await task([step("a"), step("b")]);
    const w = await dispatch(S, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "running" }));
    const stop = expectOk(await call("POST", `${t}/fail`, S.orch, { reason: "abort" }));
    expect(stop.task).toMatchObject({ status: "failed", active_runs: 0, cancelling_runs: 1 });
    const stopEvents = await walOf(t, S.orch, `?after_seq=${stop.wal_seq - stop.event_ids.length}`);
    expect(stopEvents.map((e) => [e.event_type, e.step_id])).toEqual([
      ["worker_run_cancel_requested", null],
      ["task_step_failed", "a"],
      ["task_step_failed", "b"],
      ["task_failed", null],
    ]);
    const request = stopEvents[0]!;
    const deadline = (request.payload as { deadline_at: string }).deadline_at;
    expect(Date.parse(deadline)).toBe(Date.parse(request.created_at) + 2_000);
    const endedAt = stopEvents[3]!.created_at;

    // The object arms its one alarm at the cancellation deadline although the task is terminal (once the
    // session index has acknowledged the stop, whose push may hold the alarm earlier until then).
    await eventually(async () => {
      await runDurableObjectAlarm(stub);
      expect(await alarmOf(stub)).toBe(Date.parse(deadline));
    });
    const view = expectOk(await call("GET", t, S.orch));
    expect(view.runs[0]).toMatchObject({ run_id: w.run_id, status: "cancelling", ended_at: null, cancel_request: { reason: "task_failed", deadline_at: deadline, timed_out_at: null } });
    expect(view.snapshot.taskGraph.spawnedWorkers[0]).toMatchObject({ runId: w.run_id, status: "cancelling", cancelRequest: { deadlineAt: deadline } });

    // The run learns of the request on its next command, however it sends it; nothing is written.
    const told = { status: "failed", run_cancel_requested: true, run_id: w.run_id, run_status: "cancelling", reason: "task_failed", cancel_deadline_at: deadline };
    const progress = await call("POST", `${t}/steps/a/progress`, w.token, { summary: "still going" });
    expectError(progress, 409, "task_terminal");
    expect(progress.body.error.details).toMatchObject(told);
    const batch = expectOk(await call("POST", `${t}/batch`, w.token, { commands: [{ token: w.token, method: "POST", path: `${t}/steps/a/status`, body: { status: "completed" } }] }));
    expect(batch.results[0]).toMatchObject({ ok: false, status: 409, body: { error: { code: "task_terminal", details: told } } });
    const frame = await socketFrame(t, w.token, [{ token: w.token, method: "POST", path: `${t}/steps/claim-next` }]);
    expect(frame.results[0]).toMatchObject({ ok: false, status: 409, body: { error: { code: "task_terminal", details: told } } });
    expect((await walOf(t, S.orch)).length).toBe(stop.wal_seq);

    // Keep the runtime from firing the alarm by itself, let the deadline pass without a read, then run it.
    await runInDurableObject(stub, async (_i, state) => {
      await state.storage.setAlarm(Date.now() + 600_000);
    });
    await sleep(Date.parse(deadline) - Date.now() + 100);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    // The WAL export does not reconcile, so these events are the alarm's.
    const written = await walOf(t, S.orch, `?after_seq=${stop.wal_seq}`);
    expect(written.map((e) => [e.event_type, e.actor_agent_id, e.payload])).toEqual([
      ["child_agent_cancel_timeout", "system", { run_id: w.run_id, reason: "task_failed", deadline_at: deadline }],
      ["worker_run_ended", "system", { run_id: w.run_id, status: "cancelled", reason: "child_agent_cancel_timeout", result: null, cancel_requested: true }],
    ]);
    expect(Date.parse(written[0]!.created_at)).toBeGreaterThanOrEqual(Date.parse(deadline));
    // Nothing is due any more once the index has the timeout.
    await eventually(async () => {
      await runDurableObjectAlarm(stub);
      expect(await alarmOf(stub)).toBeNull();
    });

    const after = expectOk(await call("GET", t, S.orch));
    expect(after.runs[0]).toMatchObject({ status: "cancelled", status_reason: "child_agent_cancel_timeout", cancel_request: { timed_out_at: written[0]!.created_at } });
    expect(after.task).toMatchObject({ status: "failed", ended_at: endedAt, updated_at: endedAt });
    // The stream of the terminal task carries the request and the timeout before its end.
    const frames = await (await openStream(`${t}/events`, S.observer)).rest();
    const types = frames.filter((f) => f.event !== "end").map((f) => eventOf(f).type);
    expect(types.indexOf("task.cancel_requested")).toBeLessThan(types.indexOf("task.failed"));
    expect(types.indexOf("subagent.status")).toBeGreaterThan(types.indexOf("task.failed"));
    expect(frames.at(-1)!.event).toBe("end");

    // The late run may still hand in its result; the task keeps its place among terminal tasks.
    expectOk(await call("POST", `${t}/runs/${w.run_id}/finish`, w.token, { outcome: "finished", result: { transcript: "late" } }));
    const final = expectOk(await call("GET", t, S.orch));
    expect(final.runs[0]).toMatchObject({ status: "cancelled", status_reason: "child_agent_cancel_timeout", result: { transcript: "late" } });
    expect(final.task.updated_at).toBe(endedAt);
    const entry = await runInDurableObject(stub, (instance: TaskGraphObject) => instance.indexEntry());
    expect(entry).toMatchObject({ ok: true, value: { terminal: true, updated_at: endedAt, next_deadline_at: null } });
  });

  it("Should have the SDK's worker loop acknowledge the cancellation by finishing its run when its task is failed mid-step", async () => {
    const { t } = await task([step("a"), step("b")]);
    const orch = new RuntimeClient({ baseUrl: BASE, token: S.orch, fetch: SELF.fetch.bind(SELF), batching: false });
    const ref = { sessionId: S.sid, taskId: t.split("/").pop()! };
    const worker = await orch.dispatchWorker(ref, { max_steps: 2 });
    let started!: () => void;
    const isStarted = new Promise<void>((r) => (started = r));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const running = worker.run(
      async () => {
        started();
        await released;
        return { result_summary: "too late" };
      },
      { watchMs: 0 },
    );
    await isStarted;
    await orch.failTask(ref, { reason: "abort" });
    release();
    expect(await running).toMatchObject({ stopped: "task_terminal", finished: true });
    const view = expectOk(await call("GET", t, S.orch));
    expect(view.runs[0]).toMatchObject({ run_id: worker.runId, status: "cancelled", status_reason: "task_failed", cancel_request: { timed_out_at: null } });
    expect((await walOf(t, S.orch)).map((e) => e.event_type)).not.toContain("child_agent_cancel_timeout");
  });

  it("Should end a run asked to cancel with its result when it finishes before the deadline, without a timeout", async () => {
    const { t, stub } = await task([step("a")]);
    const w = await dispatch(S, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    const stop = expectOk(await call("POST", `${t}/cancel`, S.orch, {}));
    const finished = expectOk(await call("POST", `${t}/runs/${w.run_id}/finish`, w.token, { outcome: "cancelled", result: { transcript: "stopped" } }));
    expect(finished.task).toMatchObject({ status: "cancelled", cancelling_runs: 0, updated_at: stop.task.updated_at });
    expect((await walOf(t, S.orch, `?after_seq=${stop.wal_seq}`)).map((e) => [e.event_type, e.payload])).toEqual([
      ["worker_run_ended", { run_id: w.run_id, status: "cancelled", reason: "task_cancelled", result: { transcript: "stopped" }, cancel_requested: true }],
    ]);
    // The alarm may still fire at the old deadline: it finds nothing due.
    await runDurableObjectAlarm(stub);
    expect((await walOf(t, S.orch)).length).toBe(finished.wal_seq);
  });
});
