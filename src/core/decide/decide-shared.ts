/** @module What several decisions share: a step as recorded, readiness after a completion, task_running, run fallbacks. */
import type { Emitter } from "./context.js";
import type { StepInput } from "../model/commands.js";
import type { RecordedStep } from "../events/events.js";
import { type AttemptStatus, DEFAULT_WORKER_POOL, HELD_STEP_STATUSES, type Step, type StepSnapshot, type WorkerRun } from "../model/records.js";
import { retryField, retryOutcome } from "../model/retry-policy.js";
import type { DagState } from "../model/state.js";

/** A step as the WAL records it (task_created, add_step): its dependencies deduplicated, defaults filled in (required, pool). */
export function recordedStep(input: StepInput): RecordedStep {
  return {
    step_id: input.step_id,
    title: input.title,
    summary: input.summary,
    depends_on_step_ids: [...new Set(input.depends_on_step_ids)],
    required: input.required ?? true,
    worker_pool_id: input.worker_pool_id ?? DEFAULT_WORKER_POOL,
    // Absent rather than null without a policy: the recorded step is then exactly as before policies existed.
    ...(input.retry_policy == null ? {} : { retry_policy: input.retry_policy }),
    ...(input.delegate === undefined ? {} : { delegate: input.delegate }),
  };
}

/** What a claim's worker (or the runtime's delegate) sees of its step at the claim (inspect shows it beside the current step). */
export function snapshotOf(step: Step): StepSnapshot {
  return { title: step.title, summary: step.summary, depends_on_step_ids: [...step.depends_on_step_ids], required: step.required, worker_pool_id: step.worker_pool_id };
}

/** Step events after which the step's claim is over (an action asked under it, a delegate holding it, is left without it). */
export const CLAIM_ENDING_EVENTS: ReadonlySet<string> = new Set(["task_step_blocked", "task_step_completed", "task_step_failed", "task_step_cancelled", "task_step_lease_expired"]);

/** The attempt and run a step event closes: the step's open claim, if any. */
export function closing(step: Step): { attempt_id: string | null; run_id: string | null } {
  return { attempt_id: step.current_attempt_id, run_id: step.claimed_by_run_id };
}

/** The first time a ready, claimed or running step exists, a pending task becomes running. */
export function emitRunningIfFirstActive(state: DagState, em: Emitter, anyActive: boolean): void {
  if (anyActive && state.task!.status === "pending") em.emit("task_running", null, {});
}

/** task_step_ready for each pending dependant of `completed` whose dependencies are now all completed. */
export function emitDependantsReady(state: DagState, em: Emitter, completed: Step): boolean {
  const dependants = state.index.dependents.get(completed.step_id);
  if (dependants === undefined) return false;
  let any = false;
  const ready: Step[] = [];
  for (const id of dependants) {
    const step = state.steps.get(id)!;
    // A step waiting for a retry its policy scheduled becomes ready when the retry is due, not before.
    if (step.status !== "pending" || step.retry_at !== null) continue;
    // `completed` is still unmet in the index (it completes with these events): exactly one unmet left means ready.
    if (state.index.unmetDeps.get(id) === 1) ready.push(step);
  }
  ready.sort((a, b) => a.ordinal - b.ordinal);
  for (const step of ready) {
    em.emit("task_step_ready", step.step_id, {});
    any = true;
  }
  return any;
}

/**
 * The reason a task-level termination records on the runs and steps it stops; a run ended with one may still hand
 * in its result once, which is how decideFinishRun recognises it.
 */
export const TASK_STOP_REASONS = { complete_task: "task_completed", fail_task: "task_failed", cancel_task: "task_cancelled" } as const;

/** Why a run asked to cancel ended when its wait ran out. */
export const CANCEL_TIMEOUT = "child_agent_cancel_timeout";

/**
 * Reasons a run ends with when a task-level termination stops it (at once, on acknowledging the cancellation, or
 * when the wait for that ran out); such a run may still hand in its result once.
 */
const TASK_LEVEL_ENDINGS: ReadonlySet<string> = new Set([...Object.values(TASK_STOP_REASONS), CANCEL_TIMEOUT]);

/** A run a task-level termination ended, that has not handed in a result yet: it may, once (`late_result`). */
export function awaitsLateResult(run: WorkerRun): boolean {
  return run.status !== "active" && run.status !== "cancelling" && run.status_reason !== null && TASK_LEVEL_ENDINGS.has(run.status_reason) && run.result === null;
}

/** How a worker run ended, and the fallback written for a step it still held (failed with the reason). */
export const RUN_ENDINGS = {
  finished: { status: "finished", reason: "worker_finished_without_terminal_step_status", attempt: "failed" },
  cancelled: { status: "cancelled", reason: "worker_cancelled", attempt: "cancelled" },
  timeout: { status: "timed_out", reason: "worker_timeout", attempt: "timed_out" },
} as const satisfies Record<string, { status: WorkerRun["status"]; reason: string; attempt: AttemptStatus }>;

/** The step a run still holds under its claim (claimed or running, and claimed by this run), if any. */
export function heldStepOf(state: DagState, run: WorkerRun): Step | undefined {
  const step = run.current_step_id === null ? undefined : state.steps.get(run.current_step_id);
  return step !== undefined && step.claimed_by_run_id === run.run_id && HELD_STEP_STATUSES.has(step.status) ? step : undefined;
}

/**
 * Ends an active run: the step it still holds (and only that one) fails with the fallback reason,
 * then worker_run_ended. Both are the run's own facts, recorded under the deciding actor.
 */
export function emitRunEnd(state: DagState, em: Emitter, run: WorkerRun, ending: keyof typeof RUN_ENDINGS, result: unknown, reasonOverride?: string): void {
  const how = RUN_ENDINGS[ending];
  const held = heldStepOf(state, run);
  const holds = held !== undefined;
  if (held !== undefined) {
    const retry = retryField(retryOutcome(state, held, how.attempt, how.reason, em.now));
    em.emit("task_step_failed", held.step_id, { reason: how.reason, result_summary: how.reason, artifact_ids: null, attempt_status: how.attempt, ...closing(held), ...retry });
  }
  // A run that finishes cleanly, holding nothing, just finished: the fallback reason is for a held step.
  const reason = reasonOverride ?? (ending === "finished" && !holds ? "finished" : how.reason);
  em.emit("worker_run_ended", null, { run_id: run.run_id, status: how.status, reason, result: result ?? null });
}
