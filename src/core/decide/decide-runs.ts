/** @module Decisions on worker runs: dispatch, finish (failing a step still held), cancel, and lease/deadline expiry. */
import type { CommandOf } from "../model/commands.js";
import type { DecideContext, Decision } from "./context.js";
import { Emitter, parseTimestamp, systemActor } from "./context.js";
import { leaseAfterResolution } from "./decide-actions.js";
import { emitDelegationStarts, emitDelegationTimeout, startsDelegations } from "./decide-delegation.js";
import { awaitsLateResult, CANCEL_TIMEOUT, closing, emitRunEnd, emitRunningIfFirstActive, RUN_ENDINGS } from "./decide-shared.js";
import { accept, acceptNothing, refuse } from "./decision.js";
import { blockedRefusal } from "./decide-links.js";
import { runtimeError } from "../model/errors.js";
import { checkScope, requireLiveTask, requireOrchestrator } from "./guards.js";
import { DEFAULT_WORKER_POOL, LIVE_DELEGATION_STATUSES, type Step, type WorkerRun } from "../model/records.js";
import { err, ok, type Result } from "../model/result.js";
import type { RetryOutcome } from "../events/events.js";
import { retryField, retryOutcome } from "../model/retry-policy.js";
import { type DagState, dependenciesCompleted, isTerminalTask } from "../model/state.js";

/** agent.dispatch_worker: a run scoped to this task, its pool, and optionally allowed_step_ids (deduplicated). */
export function decideDispatchWorker(state: DagState, cmd: CommandOf<"dispatch_worker">, ctx: DecideContext): Decision {
  const task = state.task!;
  const guard = requireOrchestrator(task, ctx.actor, "agent.dispatch_worker") ?? requireLiveTask(task);
  if (guard !== null) return refuse(guard);
  if (task.status === "blocked" || task.status === "paused") {
    return refuse(runtimeError("task_not_dispatchable", `the task is ${task.status}; ${task.status === "blocked" ? "reopen" : "resume"} it before dispatching workers`, { status: task.status }));
  }
  const blocked = blockedRefusal(state);
  if (blocked !== null) return refuse(blocked);
  let allowed: string[] | null = null;
  if (cmd.allowed_step_ids !== undefined) {
    allowed = [...new Set(cmd.allowed_step_ids)];
    const unknown = allowed.filter((id) => !state.steps.has(id));
    if (unknown.length > 0) return refuse(runtimeError("validation_error", `allowed_step_ids names unknown steps: ${unknown.slice(0, 10).join(", ")}`, { unknown_step_ids: unknown.slice(0, 50) }));
  }
  const runId = `run_${ctx.newId().toLowerCase()}`;
  const agentId = cmd.agent_id ?? `worker_${runId.slice(4)}`;
  const deadline = cmd.timeout_ms === undefined ? null : new Date(ctx.now + cmd.timeout_ms).toISOString();
  const em = new Emitter(state, ctx);
  em.emit("worker_dispatched", null, {
    run_id: runId,
    agent_id: agentId,
    worker_pool_id: cmd.worker_pool_id ?? DEFAULT_WORKER_POOL,
    allowed_step_ids: allowed,
    max_steps: cmd.max_steps ?? 1,
    deadline_at: deadline,
  });
  return accept(em, { kind: "dispatched", run_id: runId, agent_id: agentId, deadline_at: deadline });
}

/** The run a command names, or not_found. */
function findRun(state: DagState, runId: string): Result<WorkerRun> {
  const run = state.runs.get(runId);
  return run === undefined ? err(runtimeError("not_found", `no worker run ${runId}`, { run_id: runId })) : ok(run);
}

/** A worker run ends (finished, cancelled, timeout); a step it still holds fails with that ending's fallback reason. */
export function decideFinishRun(state: DagState, cmd: CommandOf<"finish_run">, ctx: DecideContext): Decision {
  const task = state.task!;
  const { actor } = ctx;
  if (actor.role !== "worker" && actor.role !== "orchestrator") return refuse(runtimeError("tool_not_available", "finishing a run is for the run itself or the orchestrator", { role: actor.role }));
  const scope = checkScope(task, actor);
  if (scope !== null) return refuse(scope);
  if (actor.role === "worker" && actor.run_id !== cmd.run_id) return refuse(runtimeError("permission_denied", "a worker may finish only its own run", { run_id: cmd.run_id }));
  const found = findRun(state, cmd.run_id);
  if (!found.ok) return refuse(found.error);
  const run = found.value;
  // Same rule as every other worker guard (requireActiveWorkerRun): the run must be the caller's, agent included.
  if (actor.role === "worker" && run.agent_id !== actor.agent_id) return refuse(runtimeError("permission_denied", "a worker may finish only its own run", { run_id: cmd.run_id }));
  const em = new Emitter(state, ctx);
  if (run.status === "cancelling") {
    // The run ends as the task-level stop asked, its result kept. Its step was already ended by that stop,
    // so no worker_* fallback applies, whatever outcome it reports.
    em.emit("worker_run_ended", null, { run_id: run.run_id, status: "cancelled", reason: run.cancel_request!.reason, result: cmd.result ?? null, cancel_requested: true });
    return accept(em);
  }
  if (run.status !== "active") {
    // A late run of a terminated task may still persist its result, once; it changes no step.
    if (awaitsLateResult(run) && cmd.result !== undefined && cmd.result !== null) {
      em.emit("worker_run_ended", null, { run_id: run.run_id, status: run.status, reason: "late_result", result: cmd.result });
      return accept(em);
    }
    return refuse(runtimeError("invalid_transition", `the run has already ended (${run.status})`, { run_id: run.run_id, status: run.status }));
  }
  emitRunEnd(state, em, run, cmd.outcome, cmd.result ?? null);
  return accept(em);
}

/** The orchestrator cancels a run: its held step fails with worker_cancelled (the way to stop one held step). */
export function decideCancelRun(state: DagState, cmd: CommandOf<"cancel_run">, ctx: DecideContext): Decision {
  const task = state.task!;
  const guard = requireOrchestrator(task, ctx.actor, "cancel worker run") ?? requireLiveTask(task);
  if (guard !== null) return refuse(guard);
  const found = findRun(state, cmd.run_id);
  if (!found.ok) return refuse(found.error);
  const run = found.value;
  if (run.status !== "active") return refuse(runtimeError("invalid_transition", `the run has already ended (${run.status})`, { run_id: run.run_id, status: run.status }));
  const em = new Emitter(state, ctx);
  emitRunEnd(state, em, run, "cancelled", null, cmd.reason);
  return accept(em);
}

/**
 * What can fall due, in the order things due at the same instant are handled: an action's expiry (which restarts
 * its step's lease), a lease, a run's deadline, a cancellation's wait, a scheduled retry.
 */
const ACTION_EXPIRY = 0;
const LEASE = 1;
const RUN_DEADLINE = 2;
const CANCEL_WAIT = 3;
const RETRY = 4;
const DELEGATE_DEADLINE = 5;
const DELEGATE_START = 6;
type DueKind = typeof ACTION_EXPIRY | typeof LEASE | typeof RUN_DEADLINE | typeof CANCEL_WAIT | typeof RETRY | typeof DELEGATE_DEADLINE | typeof DELEGATE_START;

/** Something past its deadline: an action (`id` an action), a held step's lease or a retry (`id` a step), a run's deadline or cancellation wait (`id` a run). */
interface Due {
  readonly at: number;
  readonly kind: DueKind;
  readonly id: string;
}

/**
 * Every pending deadline: each open action's expiry, each held step's lease (not while an action on the step is
 * open: a person is being waited for, not the worker), each active run's deadline, each wait for a run asked to
 * cancel, each scheduled retry. A terminal task has only the cancellation waits: the runs its stop is still
 * waiting for. Reconciling and the alarm (nextDeadline) read this one list, so the alarm is set for exactly what
 * reconciling expires. Visited as plain arguments, not objects: the alarm is re-armed after every commit, and an
 * object per held step and active run there cost a third more than the scan itself.
 */
function eachDeadline(state: DagState, visit: (at: number, kind: DueKind, id: string) => void): void {
  const { index } = state;
  if (!isTerminalTask(state.task!)) {
    for (const id of index.held) if (!index.stepActions.has(id)) visit(parseTimestamp(state.steps.get(id)!.lease_expires_at ?? ""), LEASE, id);
    for (const id of index.activeRuns) {
      const deadline = state.runs.get(id)!.deadline_at;
      if (deadline !== null) visit(parseTimestamp(deadline), RUN_DEADLINE, id);
    }
    for (const id of index.openActions) visit(parseTimestamp(state.actions.get(id)!.expires_at), ACTION_EXPIRY, id);
    for (const id of index.retrying) visit(parseTimestamp(state.steps.get(id)!.retry_at!), RETRY, id);
    for (const id of index.openDelegations) {
      const d = state.delegations.get(id)!;
      if (d.deadline_at !== null && LIVE_DELEGATION_STATUSES.has(d.status)) visit(parseTimestamp(d.deadline_at), DELEGATE_DEADLINE, id);
    }
    // A ready delegated step is due at once: the runtime takes it up itself.
    if (index.readyDelegated.size > 0 && startsDelegations(state)) for (const id of index.readyDelegated) visit(parseTimestamp(state.steps.get(id)!.updated_at), DELEGATE_START, id);
  }
  for (const id of index.cancellingRuns) visit(parseTimestamp(state.runs.get(id)!.cancel_request!.deadline_at), CANCEL_WAIT, id);
}

/**
 * Expires what is due at ctx.now, earliest first: an open action past expires_at resolves as expired (its step's
 * lease restarting from now); a lapsed lease gives task_step_lease_expired (attempt lost, claim cleared, step
 * pending) and task_step_ready where dependencies still hold, unless a retry policy schedules the retry or has
 * run out; a run past its deadline fails its held step with worker_timeout and ends timed_out; a run asked to
 * cancel that has not ended by its cancellation deadline gets child_agent_cancel_timeout and ends; a step
 * whose retry is due is reopened (reason retry_policy, on the orchestrator's behalf) and ready again. Only the
 * cancellation waits apply once the task is terminal. Recorded as the system's, whoever asked.
 */
export function decideReconcileLeases(state: DagState, _cmd: CommandOf<"reconcile_leases">, ctx: DecideContext): Decision {
  const task = state.task!;
  const due: Due[] = [];
  eachDeadline(state, (at, kind, id) => {
    if (at <= ctx.now) due.push({ at, kind, id });
  });
  if (due.length === 0) return acceptNothing();
  due.sort((a, b) => a.at - b.at || a.kind - b.kind);
  const em = new Emitter(state, ctx, systemActor(task.session_id));
  const released = new Set<string>();
  let anyReady = false;
  // A retry this pass schedules for now (a policy without backoff) is due now too: reopened in the same pass, so
  // nothing reconciling could handle is left due after it (the alarm would otherwise fire again at once).
  const retryNowIfDue = (stepId: string, retry: RetryOutcome | undefined) => {
    if (retry?.retry_at != null && Date.parse(retry.retry_at) <= ctx.now) due.push({ at: ctx.now, kind: RETRY, id: stepId });
  };
  // Items pushed while iterating are visited too; a retry at now sorts after everything already due.
  for (const item of due) {
    if (item.kind === ACTION_EXPIRY) {
      const action = state.actions.get(item.id)!;
      // Its claim ended earlier in this pass (the run's deadline came first): withdrawn with it, not expired onto a
      // step no run holds any more (that would restart a lease on a released step).
      if (action.step_id !== null && released.has(action.step_id)) continue;
      em.emit("action_resolved", action.step_id, {
        action_id: action.action_id,
        decision: "expired",
        input: null,
        comment: null,
        resolved_by_role: "system",
        lease_expires_at: leaseAfterResolution(state, action, ctx.now),
      });
    } else if (item.kind === LEASE) {
      const step = state.steps.get(item.id)!;
      if (released.has(step.step_id)) continue;
      released.add(step.step_id);
      const retry = retryOutcome(state, step, "lost", "lease_expired", ctx.now);
      em.emit("task_step_lease_expired", step.step_id, { run_id: step.claimed_by_run_id!, attempt_id: step.current_attempt_id!, lease_expires_at: step.lease_expires_at!, ...retryField(retry) });
      if (retry === undefined && dependenciesCompleted(state.steps, step)) em.emit("task_step_ready", step.step_id, {});
      retryNowIfDue(step.step_id, retry);
    } else if (item.kind === CANCEL_WAIT) {
      const run = state.runs.get(item.id)!;
      const request = run.cancel_request!;
      em.emit("child_agent_cancel_timeout", null, { run_id: run.run_id, reason: request.reason, deadline_at: request.deadline_at });
      em.emit("worker_run_ended", null, { run_id: run.run_id, status: "cancelled", reason: CANCEL_TIMEOUT, result: null, cancel_requested: true });
    } else if (item.kind === DELEGATE_DEADLINE) {
      const d = state.delegations.get(item.id)!;
      if (!released.has(d.step_id)) {
        released.add(d.step_id);
        const from = em.events.length;
        emitDelegationTimeout(state, em, d);
        const failed = em.events.slice(from).find((e) => e.event_type === "task_step_failed");
        if (failed?.event_type === "task_step_failed") retryNowIfDue(d.step_id, failed.payload.retry);
      }
    } else if (item.kind === DELEGATE_START) {
      // Taken up together after this pass (emitDelegationStarts).
    } else if (item.kind === RETRY) {
      const step = state.steps.get(item.id)!;
      em.emit("task_step_reopened", step.step_id, { reason: RETRY_POLICY, by_retry_policy: true, on_behalf_of_agent_id: task.created_by_agent_id });
      if (dependenciesCompleted(state.steps, step)) {
        em.emit("task_step_ready", step.step_id, {});
        anyReady = true;
      }
    } else {
      const run = state.runs.get(item.id)!;
      const how = RUN_ENDINGS.timeout;
      const held = run.current_step_id;
      if (held !== null && !released.has(held)) {
        released.add(held);
        const step = state.steps.get(held)!;
        const retry = retryOutcome(state, step, how.attempt, how.reason, ctx.now);
        em.emit("task_step_failed", held, { reason: how.reason, result_summary: how.reason, artifact_ids: null, attempt_status: how.attempt, ...closing(step), ...retryField(retry) });
        retryNowIfDue(held, retry);
      }
      em.emit("worker_run_ended", null, { run_id: run.run_id, status: how.status, reason: how.reason, result: null });
    }
  }
  emitRunningIfFirstActive(state, em, anyReady);
  if (due.some((item) => item.kind === DELEGATE_START)) emitDelegationStarts(state, em, ctx);
  return accept(em);
}

/** The reason a step reopened by its retry policy carries. */
export const RETRY_POLICY = "retry_policy";

/**
 * The earliest pending deadline (lease expiry, run deadline, cancellation deadline) in ms, for the service's
 * alarm; null if none. A terminal task has only cancellation deadlines: the runs its stop is still waiting for.
 */
export function nextDeadline(state: DagState): number | null {
  if (state.task === null) return null;
  let next = Number.POSITIVE_INFINITY;
  // `<` rather than Math.min: a held step without a lease parses to NaN and sets no alarm.
  eachDeadline(state, (at) => {
    if (at < next) next = at;
  });
  return Number.isFinite(next) ? next : null;
}
