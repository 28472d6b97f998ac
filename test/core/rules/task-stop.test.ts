/**
 * @module A forced stop with runs in flight (agent.task_fail / agent.task_cancel; docs/model.md "Stopping a task"):
 * the core first asks each live run to cancel, then ends the steps and the task at once; a run asked to cancel
 * is waited for until `now + childCancelTimeoutMs` (CHILD_CANCEL_TIMEOUT_MS), ends when it finishes, or gets
 * child_agent_cancel_timeout when the wait runs out.
 */
import { describe, expect, it } from "vitest";
import {
  type Actor,
  nextDeadline,
  rebuildIndex,
  replay,
  type RuntimeError,
  sequencePosition,
  taskReadModel,
  taskSummary,
  taskView,
  type WalEvent,
} from "../../../src/core/index.js";
import { Harness, orchestrator, SESSION, step, T0 } from "../harness.js";
import { expectConformingProjection } from "../runtime-event-contract.js";

type Cmd = Record<string, unknown>;

const CANCEL_MS = 30_000;
const iso = (ms: number) => new Date(ms).toISOString();
const typesOf = (events: readonly WalEvent[]) => events.map((e) => e.event_type);

/** The stop commands, the reason each writes and the status it ends steps and the task with. */
const STOPS = [
  { type: "fail_task", reason: "task_failed", stepEvent: "task_step_failed", status: "failed" },
  { type: "cancel_task", reason: "task_cancelled", stepEvent: "task_step_cancelled", status: "cancelled" },
] as const;

/** replay(WAL) equals the live DAG, and the live indexes equal a rebuild, after every prefix too. */
function consistent(h: Harness): void {
  expect(replay(h.wal)).toEqual(h.state);
  expect(rebuildIndex(h.state)).toEqual(h.state.index);
  for (let i = 1; i <= h.wal.length; i++) {
    const partial = replay(h.wal.slice(0, i));
    expect(rebuildIndex(partial)).toEqual(partial.index);
  }
}

/** The command fails with `code` and writes nothing. */
function rejects(h: Harness, command: Cmd, actor: Actor, code: RuntimeError["code"]): RuntimeError {
  const before = h.wal.length;
  const error = h.err(command, actor);
  expect(error.code).toBe(code);
  expect(h.wal.length).toBe(before);
  return error;
}

/**
 * A running task: `cl` claimed by `wc`, `ru` running under `wr`, an idle run `wi` holding nothing, `done` completed
 * by a run that finished, `p` pending behind `cl`. The stop comes one second after T0.
 */
function inFlight() {
  const h = new Harness();
  h.create([step("done"), step("cl"), step("ru"), step("p", ["cl"])]);
  const wd = h.claimWith("done");
  h.ok({ type: "update_step", step_id: "done", status: "completed", result_summary: "done" }, wd);
  h.ok({ type: "finish_run", run_id: wd.run_id, outcome: "finished" }, wd);
  const wc = h.claimWith("cl");
  const wr = h.claimWith("ru");
  h.ok({ type: "update_step", step_id: "ru", status: "running" }, wr);
  const wi = h.dispatch();
  h.now = T0 + 1_000;
  return { h, wd, wc, wr, wi, stopAt: h.now, deadline: h.now + CANCEL_MS };
}

describe("agent.task_fail / agent.task_cancel with runs in flight", () => {
  it.each(STOPS)("Should ask every live run to cancel, then end the steps, then the task, which is terminal at once ($type)", ({ type, reason, stepEvent, status }) => {
    const { h, wc, wr, wi, stopAt, deadline } = inFlight();
    const attempts = { cl: h.state.steps.get("cl")!.current_attempt_id, ru: h.state.steps.get("ru")!.current_attempt_id };
    const d = h.ok({ type, reason: "abort" });
    expect(d.events.map((e) => [e.event_type, e.step_id])).toEqual([
      ["worker_run_cancel_requested", null],
      ["worker_run_cancel_requested", null],
      ["worker_run_cancel_requested", null],
      [stepEvent, "cl"],
      [stepEvent, "ru"],
      [stepEvent, "p"],
      [type === "fail_task" ? "task_failed" : "task_cancelled", null],
    ]);
    // Who asked, why, for which held step, and until when (now + childCancelTimeoutMs), in dispatch order.
    expect(d.events.slice(0, 3).map((e) => e.payload)).toEqual([
      { run_id: wc.run_id, reason, step_id: "cl", attempt_id: attempts.cl, deadline_at: iso(deadline) },
      { run_id: wr.run_id, reason, step_id: "ru", attempt_id: attempts.ru, deadline_at: iso(deadline) },
      { run_id: wi.run_id, reason, step_id: null, attempt_id: null, deadline_at: iso(deadline) },
    ]);
    for (const e of d.events.slice(0, 3)) expect(e).toMatchObject({ actor_agent_id: orchestrator.agent_id, actor_run_id: orchestrator.run_id, created_at: iso(stopAt) });
    // No run ends here, and the steps end with the task-level reason, not a worker_* fallback.
    expect(typesOf(d.events)).not.toContain("worker_run_ended");
    expect(JSON.stringify(d.events)).not.toMatch(/worker_cancelled|worker_finished_without_terminal_step_status/);

    expect(h.state.task).toMatchObject({ status, ended_at: iso(stopAt), updated_at: iso(stopAt) });
    for (const id of ["cl", "ru", "p"]) expect(h.state.steps.get(id)).toMatchObject({ status, status_reason: reason, claimed_by_run_id: null, lease_expires_at: null });
    for (const id of [attempts.cl, attempts.ru]) expect(h.state.attempts.get(id!)).toMatchObject({ status: "cancelled", ended_at: iso(stopAt) });
    for (const w of [wc, wr, wi]) {
      expect(h.state.runs.get(w.run_id!)).toMatchObject({
        status: "cancelling",
        status_reason: null,
        ended_at: null,
        current_step_id: null,
        cancel_request: { requested_at: iso(stopAt), requested_by_agent_id: orchestrator.agent_id, reason, deadline_at: iso(deadline), timed_out_at: null },
      });
    }
    expect(taskSummary(h.state)).toMatchObject({ status, active_runs: 0, cancelling_runs: 3 });
    consistent(h);
  });

  it.each(STOPS)("Should refuse the next command of a run asked to cancel with task_terminal saying so ($type)", ({ type, reason, status }) => {
    const { h, wd, wc, wr, wi, stopAt, deadline } = inFlight();
    h.ok({ type });
    const told = { status, run_cancel_requested: true, run_status: "cancelling", reason, cancel_requested_at: iso(stopAt), cancel_deadline_at: iso(deadline) };
    const commands: [Cmd, Actor][] = [
      [{ type: "update_step", step_id: "cl", status: "running" }, wc],
      [{ type: "update_step", step_id: "cl", status: "completed", result_summary: "late" }, wc],
      [{ type: "append_progress", step_id: "ru", summary: "still going" }, wr],
      [{ type: "append_progress", summary: "still going" }, wr],
      [{ type: "update_step", step_id: "ru", status: "failed" }, wr],
      [{ type: "claim_next" }, wi],
      [{ type: "claim_step", step_id: "p" }, wi],
    ];
    for (const [command, worker] of commands) {
      const e = rejects(h, command, worker, "task_terminal");
      expect(e.details).toEqual({ ...told, run_id: worker.run_id });
      expect(e.message).toContain(`finish the run by ${iso(deadline)}`);
    }
    // A run that had already ended holds a spent token; the orchestrator gets the plain answer.
    expect(rejects(h, { type: "claim_next" }, wd, "unauthorized").details).toMatchObject({ reason: "run_ended", run_id: wd.run_id });
    expect(rejects(h, { type: "update_step", step_id: "cl", status: "completed" }, orchestrator, "task_terminal").details).toEqual({ status });
  });

  it.each(["finished", "cancelled", "timeout"])("Should end a run asked to cancel with its result when it finishes (outcome %s), with no fallback and no move of updated_at", (outcome) => {
    const { h, wc, stopAt, deadline } = inFlight();
    h.ok({ type: "fail_task" });
    const steps = structuredClone([...h.state.steps.values()]);
    h.now = stopAt + 5_000;
    const d = h.ok({ type: "finish_run", run_id: wc.run_id, outcome, result: { transcript: "stopped at page 3" } }, wc);
    expect(d.events.map((e) => [e.event_type, e.step_id, e.payload])).toEqual([
      ["worker_run_ended", null, { run_id: wc.run_id, status: "cancelled", reason: "task_failed", result: { transcript: "stopped at page 3" }, cancel_requested: true }],
    ]);
    expect(h.state.runs.get(wc.run_id!)).toMatchObject({
      status: "cancelled",
      status_reason: "task_failed",
      ended_at: iso(stopAt + 5_000),
      result: { transcript: "stopped at page 3" },
      cancel_request: { deadline_at: iso(deadline), timed_out_at: null },
    });
    expect([...h.state.steps.values()]).toEqual(steps);
    expect(h.state.task).toMatchObject({ updated_at: iso(stopAt), ended_at: iso(stopAt) });
    expect(h.state.index.cancellingRuns.has(wc.run_id!)).toBe(false);
    // It ended in time: its deadline passing writes nothing for it; the result is kept, once.
    h.now = deadline;
    const timedOut = h.ok({ type: "reconcile_leases" }).events.filter((e) => e.event_type === "child_agent_cancel_timeout").map((e) => (e.payload as { run_id: string }).run_id);
    expect(timedOut).not.toContain(wc.run_id);
    // Its result is in and its run over: its token is spent.
    rejects(h, { type: "finish_run", run_id: wc.run_id, outcome: "finished", result: { again: true } }, wc, "unauthorized");
    consistent(h);
  });

  it("Should let the orchestrator end a run asked to cancel on the run's behalf", () => {
    const { h, wr } = inFlight();
    h.ok({ type: "cancel_task" });
    const d = h.ok({ type: "finish_run", run_id: wr.run_id, outcome: "cancelled" });
    expect(d.events.map((e) => e.payload)).toEqual([{ run_id: wr.run_id, status: "cancelled", reason: "task_cancelled", result: null, cancel_requested: true }]);
  });

  it("Should write child_agent_cancel_timeout exactly once and end the run when the deadline passes", () => {
    const { h, wc, wr, wi, stopAt, deadline } = inFlight();
    h.ok({ type: "fail_task" });
    h.ok({ type: "finish_run", run_id: wr.run_id, outcome: "cancelled" }, wr);
    h.now = deadline - 1;
    expect(h.ok({ type: "reconcile_leases" }).events).toEqual([]);
    h.now = deadline;
    const d = h.ok({ type: "reconcile_leases" });
    expect(d.events.map((e) => [e.event_type, e.actor_agent_id, e.payload])).toEqual([
      ["child_agent_cancel_timeout", "system", { run_id: wc.run_id, reason: "task_failed", deadline_at: iso(deadline) }],
      ["worker_run_ended", "system", { run_id: wc.run_id, status: "cancelled", reason: "child_agent_cancel_timeout", result: null, cancel_requested: true }],
      ["child_agent_cancel_timeout", "system", { run_id: wi.run_id, reason: "task_failed", deadline_at: iso(deadline) }],
      ["worker_run_ended", "system", { run_id: wi.run_id, status: "cancelled", reason: "child_agent_cancel_timeout", result: null, cancel_requested: true }],
    ]);
    for (const w of [wc, wi]) {
      expect(h.state.runs.get(w.run_id!)).toMatchObject({ status: "cancelled", status_reason: "child_agent_cancel_timeout", ended_at: iso(deadline), cancel_request: { timed_out_at: iso(deadline) } });
    }
    expect(h.state.task).toMatchObject({ status: "failed", updated_at: iso(stopAt) });
    expect(taskSummary(h.state)).toMatchObject({ active_runs: 0, cancelling_runs: 0 });
    // Once: later reconciliations find nothing due.
    h.now = deadline + 3_600_000;
    expect(h.ok({ type: "reconcile_leases" }).events).toEqual([]);
    expect(h.wal.filter((e) => e.event_type === "child_agent_cancel_timeout")).toHaveLength(2);
    // The late run may still hand in its result once, and still learns why it was stopped.
    const late = h.ok({ type: "finish_run", run_id: wc.run_id, outcome: "finished", result: { transcript: "t" } }, wc);
    expect(late.events.map((e) => e.payload)).toEqual([{ run_id: wc.run_id, status: "cancelled", reason: "late_result", result: { transcript: "t" } }]);
    // Anything else from a run that has ended is refused as a spent token, saying how the run ended.
    expect(rejects(h, { type: "claim_next" }, wi, "unauthorized").details).toEqual({ reason: "run_ended", run_id: wi.run_id, run_status: "cancelled", status_reason: "child_agent_cancel_timeout" });
    expect(h.state.task!.updated_at).toBe(iso(stopAt));
    consistent(h);
  });

  it("Should cover a terminal task's cancellation deadline in nextDeadline until every run asked has ended", () => {
    const { h, wc, wr, wi, deadline } = inFlight();
    const lease = nextDeadline(h.state);
    expect(lease).not.toBeNull();
    h.ok({ type: "cancel_task" });
    expect(nextDeadline(h.state)).toBe(deadline);
    h.ok({ type: "finish_run", run_id: wc.run_id, outcome: "cancelled" }, wc);
    h.ok({ type: "finish_run", run_id: wr.run_id, outcome: "cancelled" }, wr);
    expect(nextDeadline(h.state)).toBe(deadline);
    h.ok({ type: "finish_run", run_id: wi.run_id, outcome: "finished" }, wi);
    expect(nextDeadline(h.state)).toBeNull();
  });

  it("Should take the deadline from the limits in force when the task stops, and replay it from the WAL alone", () => {
    const { h, wc } = inFlight();
    h.limits = { ...h.limits, childCancelTimeoutMs: 5_000 };
    h.ok({ type: "fail_task" });
    expect(h.state.runs.get(wc.run_id!)!.cancel_request!.deadline_at).toBe(iso(T0 + 1_000 + 5_000));
    expect(nextDeadline(h.state)).toBe(T0 + 6_000);
    h.limits = { ...h.limits, childCancelTimeoutMs: 60_000 };
    h.now = T0 + 6_000;
    expect(h.types(h.ok({ type: "reconcile_leases" }))).toContain("child_agent_cancel_timeout");
    consistent(h);
  });

  it("Should not expire a run's own timeout_ms once the task is terminal: only its cancellation deadline counts", () => {
    const h = new Harness();
    h.create([step("a")]);
    const w = h.claimWith("a", { timeout_ms: 5_000 });
    h.ok({ type: "fail_task" });
    expect(nextDeadline(h.state)).toBe(T0 + CANCEL_MS);
    h.now = T0 + 10_000;
    expect(h.ok({ type: "reconcile_leases" }).events).toEqual([]);
    h.now = T0 + CANCEL_MS;
    expect(h.types(h.ok({ type: "reconcile_leases" }))).toEqual(["child_agent_cancel_timeout", "worker_run_ended"]);
    expect(h.state.runs.get(w.run_id!)).toMatchObject({ status: "cancelled", status_reason: "child_agent_cancel_timeout" });
  });

  it("Should still end runs at once on agent.task_complete, which holds nothing then", () => {
    const h = new Harness();
    h.create([step("a")]);
    const w = h.claimWith("a");
    h.ok({ type: "update_step", step_id: "a", status: "completed" }, w);
    const idle = h.dispatch();
    const d = h.ok({ type: "complete_task" });
    expect(d.events.map((e) => [e.event_type, e.payload])).toEqual([
      ["worker_run_ended", { run_id: w.run_id, status: "cancelled", reason: "task_completed", result: null }],
      ["worker_run_ended", { run_id: idle.run_id, status: "cancelled", reason: "task_completed", result: null }],
      ["task_completed", { reason: null }],
    ]);
    expect(nextDeadline(h.state)).toBeNull();
    expect(taskSummary(h.state)).toMatchObject({ active_runs: 0, cancelling_runs: 0 });
  });

  it("Should show a run asked to cancel as cancelling in the task view, the snapshot and the summary", () => {
    const { h, wc, deadline, stopAt } = inFlight();
    h.ok({ type: "fail_task" });
    const view = taskView(h.state);
    expect(view.runs.find((r) => r.run_id === wc.run_id)).toMatchObject({ status: "cancelling", cancel_request: { reason: "task_failed", deadline_at: iso(deadline) } });
    const snapshot = taskReadModel(h.state);
    expect(snapshot.taskGraph.spawnedWorkers.find((r) => r.runId === wc.run_id)).toEqual({
      kind: "spawned_subagent",
      runId: wc.run_id,
      agentId: wc.agent_id,
      workerPoolId: "default",
      status: "cancelling",
      cancelRequest: { reason: "task_failed", requestedAt: iso(stopAt), requestedBy: orchestrator.agent_id, deadlineAt: iso(deadline) },
    });
    expect(taskSummary(h.state).cancelling_runs).toBe(3);
  });

  it("Should project the request to task.cancel_requested and the timeout to subagent.status, within the published schema", () => {
    const { h, wc, wr, wi, deadline } = inFlight();
    h.ok({ type: "fail_task" });
    h.ok({ type: "finish_run", run_id: wr.run_id, outcome: "cancelled" }, wr);
    h.ok({ type: "finish_run", run_id: wi.run_id, outcome: "finished" }, wi);
    h.now = deadline;
    h.ok({ type: "reconcile_leases" });
    const events = expectConformingProjection(h.wal);
    const request = h.wal.find((e) => e.event_type === "worker_run_cancel_requested")!;
    expect(events.filter((e) => sequencePosition(e.sequence).walSeq === request.wal_seq)).toEqual([
      expect.objectContaining({
        type: "task.cancel_requested",
        runId: wc.run_id,
        subagentId: wc.run_id,
        stepId: "cl",
        attemptId: request.payload.attempt_id,
        nativeStatus: "cancelling",
        status: "cancelling",
        statusReason: "task_failed",
        payload: { deadlineAt: iso(deadline), actorAgentId: orchestrator.agent_id, actorRunId: orchestrator.run_id },
      }),
    ]);
    const timeout = h.wal.find((e) => e.event_type === "child_agent_cancel_timeout")!;
    expect(events.filter((e) => sequencePosition(e.sequence).walSeq === timeout.wal_seq)).toEqual([
      expect.objectContaining({
        type: "subagent.status",
        runId: wc.run_id,
        subagentId: wc.run_id,
        nativeStatus: "cancelling",
        status: "unknown",
        statusReason: "child_agent_cancel_timeout",
        payload: { cancelReason: "task_failed", deadlineAt: iso(deadline) },
      }),
    ]);
    // Each run's request is projected once (by its request), however the run then ends; every run is closed once.
    for (const run of [wc, wr, wi]) {
      expect(events.filter((e) => e.type === "task.cancel_requested" && e.runId === run.run_id)).toHaveLength(1);
      expect(events.filter((e) => e.type === "subagent.closed" && e.runId === run.run_id)).toHaveLength(1);
    }
  });

  it("Should still replay a WAL written before cancellation requests, where the stop ended its runs at once", () => {
    const { h, wc } = inFlight();
    h.ok({ type: "fail_task" });
    // The same stop as an older deploy wrote it: worker_run_ended in place of each request.
    const old = h.wal.map((e): WalEvent =>
      e.event_type === "worker_run_cancel_requested"
        ? { ...e, event_type: "worker_run_ended", payload: { run_id: e.payload.run_id, status: "cancelled", reason: e.payload.reason, result: null } }
        : e,
    );
    const state = replay(old);
    expect(state.task).toMatchObject({ status: "failed" });
    expect(state.runs.get(wc.run_id!)).toMatchObject({ status: "cancelled", status_reason: "task_failed", cancel_request: null });
    expect(state.index.cancellingRuns.size).toBe(0);
    expect(nextDeadline(state)).toBeNull();
    expect(rebuildIndex(state)).toEqual(state.index);
    // Its runs still hand in a late result, as before.
    const older = new Harness();
    older.state = state;
    older.wal.push(...old);
    older.now = h.now + 60_000;
    const late = older.ok({ type: "finish_run", run_id: wc.run_id, outcome: "finished", result: { transcript: "t" } }, { ...wc, session_id: SESSION });
    expect(late.events.map((e) => e.payload)).toEqual([{ run_id: wc.run_id, status: "cancelled", reason: "late_result", result: { transcript: "t" } }]);
    expect(replay(older.wal)).toEqual(older.state);
  });
});
