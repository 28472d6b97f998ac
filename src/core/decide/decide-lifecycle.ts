/** @module Decisions on the task's own status: complete, fail, cancel (terminal), block and reopen, pause and resume, archive. */
import type { CommandOf } from "../model/commands.js";
import type { DecideContext, Decision } from "./context.js";
import { Emitter } from "./context.js";
import { accept, acceptNothing, refuse } from "./decision.js";
import { closing, heldStepOf, TASK_STOP_REASONS } from "./decide-shared.js";
import { type RuntimeError, runtimeError } from "../model/errors.js";
import { requireLiveTask, requireOrchestrator } from "./guards.js";
import { type Step, TERMINAL_STEP_STATUSES } from "../model/records.js";
import { type DagState, dependenciesCompleted, isTerminalTask, missingRequiredArtifacts, stepsCompleteable } from "../model/state.js";

function stepsInOrder(state: DagState, keep: (s: Step) => boolean): Step[] {
  return [...state.steps.values()].filter(keep).sort((a, b) => a.ordinal - b.ordinal);
}

/**
 * agent.task_complete ends every active run at once: completion requires that no step is claimed or running,
 * so no run holds anything that could still be handed in.
 */
function emitEndRuns(state: DagState, em: Emitter, reason: string): void {
  for (const runId of state.index.activeRuns) {
    em.emit("worker_run_ended", null, { run_id: runId, status: "cancelled", reason, result: null });
  }
}

/**
 * A forced stop first asks every live run to cancel (with the step it holds, if any), then ends the steps.
 * The runs stay open until they finish or the deadline passes (child_agent_cancel_timeout); the wait never keeps
 * the task from going terminal. Runs are asked in dispatch order.
 */
function emitCancelRequests(state: DagState, em: Emitter, ctx: DecideContext, reason: string): void {
  const deadline = new Date(ctx.now + ctx.limits.childCancelTimeoutMs).toISOString();
  for (const runId of state.index.activeRuns) {
    const held = heldStepOf(state, state.runs.get(runId)!);
    em.emit("worker_run_cancel_requested", null, {
      run_id: runId,
      reason,
      step_id: held?.step_id ?? null,
      attempt_id: held?.current_attempt_id ?? null,
      deadline_at: deadline,
    });
  }
}

/** Why the task cannot be completed now, or null (the `completeable` diagnostic). */
export function notCompleteableReason(state: DagState): RuntimeError | null {
  if (stepsCompleteable(state)) {
    const missing = missingRequiredArtifacts(state);
    if (missing.length === 0) return null;
    return runtimeError("task_not_completeable", `acceptance requires artifacts no completed step produced: ${missing.slice(0, 10).join(", ")}`, {
      missing_artifacts: missing.slice(0, 50),
    });
  }
  const { index } = state;
  const required = stepsInOrder(state, (s) => s.required && s.status !== "completed").map((s) => s.step_id);
  return runtimeError("task_not_completeable", "every required step must be completed and no step claimed or running", {
    required_not_completed: required.slice(0, 50),
    held_step_ids: [...index.held].slice(0, 50),
  });
}

/** agent.task_complete: checks completeable; cancels pending/ready optional steps, one event each. */
export function decideCompleteTask(state: DagState, cmd: CommandOf<"complete_task">, ctx: DecideContext): Decision {
  const task = state.task!;
  const guard = requireOrchestrator(task, ctx.actor, "agent.task_complete") ?? requireLiveTask(task) ?? notCompleteableReason(state);
  if (guard !== null) return refuse(guard);
  const em = new Emitter(state, ctx);
  for (const step of stepsInOrder(state, (s) => !s.required && (s.status === "pending" || s.status === "ready"))) {
    em.emit("task_step_cancelled", step.step_id, { reason: "optional_step_cancelled_on_task_complete", ...closing(step) });
  }
  emitEndRuns(state, em, TASK_STOP_REASONS.complete_task);
  em.emit("task_completed", null, { reason: cmd.reason ?? null });
  return accept(em);
}

/**
 * agent.task_fail / agent.task_cancel: a forced stop. Every live run is asked to cancel first, then every
 * unfinished step (pending, ready, blocked, claimed, running) gets failed/cancelled with reason
 * task_failed/task_cancelled, then the task ends; completed, failed and cancelled steps keep their status.
 */
export function decideStopTask(state: DagState, cmd: CommandOf<"fail_task"> | CommandOf<"cancel_task">, ctx: DecideContext): Decision {
  const task = state.task!;
  const failing = cmd.type === "fail_task";
  const guard = requireOrchestrator(task, ctx.actor, failing ? "agent.task_fail" : "agent.task_cancel", !failing) ?? requireLiveTask(task);
  if (guard !== null) return refuse(guard);
  return stopTask(state, ctx, failing, cmd.reason ?? null);
}

/**
 * A child task whose parent's delegation ended is cancelled by the runtime (a cancellation reaches the child
 * tasks), exactly as agent.task_cancel would; a child that already ended, or another delegation's, is left alone.
 */
export function decideCancelForParent(state: DagState, cmd: CommandOf<"cancel_for_parent">, ctx: DecideContext): Decision {
  const task = state.task!;
  if (task.delegated_from?.delegation_id !== cmd.delegation_id) {
    return refuse(runtimeError("not_found", `task ${task.task_id} was not created by delegation ${cmd.delegation_id}`, { delegation_id: cmd.delegation_id }));
  }
  if (requireLiveTask(task) !== null) return acceptNothing();
  return stopTask(state, ctx, false, cmd.reason);
}

/** The forced stop itself: runs asked to cancel, unfinished steps ended, then the task. */
function stopTask(state: DagState, ctx: DecideContext, failing: boolean, why: string | null): Decision {
  const reason = TASK_STOP_REASONS[failing ? "fail_task" : "cancel_task"];
  const em = new Emitter(state, ctx);
  emitCancelRequests(state, em, ctx, reason);
  for (const step of stepsInOrder(state, (s) => !TERMINAL_STEP_STATUSES.has(s.status))) {
    if (failing) {
      em.emit("task_step_failed", step.step_id, { reason, result_summary: reason, artifact_ids: null, attempt_status: "cancelled", ...closing(step) });
    } else {
      em.emit("task_step_cancelled", step.step_id, { reason, ...closing(step) });
    }
  }
  if (failing) em.emit("task_failed", null, { reason: why });
  else em.emit("task_cancelled", null, { reason: why });
  return accept(em);
}

/**
 * The orchestrator blocks the task: only its status changes; held steps keep running. A paused task is
 * resumed first: reopening a blocked task returns it to pending, which would quietly end the pause.
 */
export function decideBlockTask(state: DagState, cmd: CommandOf<"block_task">, ctx: DecideContext): Decision {
  const task = state.task!;
  const guard = requireOrchestrator(task, ctx.actor, "block task") ?? requireLiveTask(task);
  if (guard !== null) return refuse(guard);
  if (task.status === "blocked") return refuse(runtimeError("invalid_transition", "the task is already blocked", { status: task.status }));
  if (task.status === "paused") return refuse(runtimeError("invalid_transition", "the task is paused; resume it before blocking it", { status: task.status }));
  const em = new Emitter(state, ctx);
  em.emit("task_blocked", null, { reason: cmd.reason ?? null });
  return accept(em);
}

/** The two ways back to pending: reopening a blocked task (task_reopened) and resuming a paused one (task_resumed). */
const BACK_TO_PENDING = {
  reopen_task: { from: "blocked", event: "task_reopened", tool: "reopen task", done: "reopened" },
  resume_task: { from: "paused", event: "task_resumed", tool: "agent.task_resume", done: "resumed" },
} as const;

/**
 * task_reopened / task_resumed: a blocked (or paused) task goes back to pending, then the readiness and
 * task_running promotion is re-run.
 */
export function decideBackToPending(state: DagState, cmd: CommandOf<"reopen_task"> | CommandOf<"resume_task">, ctx: DecideContext): Decision {
  const task = state.task!;
  const how = BACK_TO_PENDING[cmd.type];
  const guard = requireOrchestrator(task, ctx.actor, how.tool) ?? requireLiveTask(task);
  if (guard !== null) return refuse(guard);
  if (task.status !== how.from) return refuse(runtimeError("invalid_transition", `only a ${how.from} task can be ${how.done}, not a ${task.status} one`, { status: task.status }));
  const em = new Emitter(state, ctx);
  em.emit(how.event, null, { reason: cmd.reason ?? null });
  emitPromotion(state, em);
  return accept(em);
}

/**
 * The ready and running promotion for a task that just became pending (reopened or resumed): pending steps
 * whose dependencies are completed become ready (not those waiting for a scheduled retry), then task_running
 * when anything is ready or held.
 */
function emitPromotion(state: DagState, em: Emitter): void {
  let anyActive = state.index.statusCounts.ready + state.index.held.size > 0;
  for (const step of stepsInOrder(state, (s) => s.status === "pending" && s.retry_at === null && dependenciesCompleted(state.steps, s))) {
    em.emit("task_step_ready", step.step_id, {});
    anyActive = true;
  }
  if (anyActive) em.emit("task_running", null, {});
}

/** pause_task: a pending or running task stops dispatch and claims; held steps go on and may settle. */
export function decidePauseTask(state: DagState, cmd: CommandOf<"pause_task">, ctx: DecideContext): Decision {
  const task = state.task!;
  const guard = requireOrchestrator(task, ctx.actor, "agent.task_pause") ?? requireLiveTask(task);
  if (guard !== null) return refuse(guard);
  if (task.status !== "pending" && task.status !== "running") {
    const hint = task.status === "blocked" ? "; reopen it first" : "";
    return refuse(runtimeError("invalid_transition", `only a pending or running task can be paused, not a ${task.status} one${hint}`, { status: task.status }));
  }
  const em = new Emitter(state, ctx);
  em.emit("task_paused", null, { reason: cmd.reason ?? null });
  return accept(em);
}

/**
 * archive_task: a terminal task leaves active scheduling (task_archived; normalized status archived). Only a terminal
 * task may be archived (invalid_transition otherwise); archiving an archived task again changes nothing and answers
 * as the first did (idempotent, no event). With a retention period (limits.retentionDays > 0) the event records when
 * the task's storage goes: a WAL fact, so the deadline never moves with the configuration.
 */
export function decideArchiveTask(state: DagState, cmd: CommandOf<"archive_task">, ctx: DecideContext): Decision {
  const task = state.task!;
  const guard = requireOrchestrator(task, ctx.actor, "agent.task_archive");
  if (guard !== null) return refuse(guard);
  if (!isTerminalTask(task)) {
    return refuse(runtimeError("invalid_transition", `only a terminal task can be archived, not a ${task.status} one; complete, fail or cancel it first`, { status: task.status }));
  }
  if (task.archived_at !== null) return acceptNothing();
  const days = ctx.limits.retentionDays;
  const em = new Emitter(state, ctx);
  em.emit("task_archived", null, { reason: cmd.reason ?? null, delete_after: days > 0 ? new Date(ctx.now + days * DAY_MS).toISOString() : null });
  return accept(em);
}

const DAY_MS = 86_400_000;
