/**
 * @module The native statuses of tasks, steps, worker runs, attempts and delegations as plain lists, and the
 * sets the rules read (terminal, held, claim-releasing, live). The zod schemas are built from these lists
 * (../schemas/), so a browser reads them without zod. How the statuses move: docs/model.md.
 */

/** Task status. `paused`: intentionally stopped and resumable (no dispatch, no claim), unlike `blocked`. */
export const TASK_STATUSES = ["pending", "running", "blocked", "paused", "completed", "failed", "cancelled"] as const;
/** Task status. */
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** Step status. */
export const STEP_STATUSES = ["pending", "ready", "claimed", "running", "blocked", "completed", "failed", "cancelled"] as const;
/** Step status. */
export type StepStatus = (typeof STEP_STATUSES)[number];

/** Task statuses after which the task accepts no change. */
export const TERMINAL_TASK_STATUSES: ReadonlySet<TaskStatus> = new Set(["completed", "failed", "cancelled"]);
/** Step statuses a step ends in: a forced stop leaves them as they are, and a query leaves them out unless `include_terminal_steps` is set. */
export const TERMINAL_STEP_STATUSES: ReadonlySet<StepStatus> = new Set(["completed", "failed", "cancelled"]);
/** Step statuses in which a worker run holds the step under a lease. */
export const HELD_STEP_STATUSES: ReadonlySet<StepStatus> = new Set(["claimed", "running"]);
/** Statuses a worker's update_step sets that release its run's claim, after which `claim_next` may claim again. */
export const CLAIM_RELEASING_STEP_STATUSES: ReadonlySet<StepStatus> = new Set(["completed", "failed", "cancelled", "blocked"]);

/** True when a worker's update_step to `status` gives up the step it held, so its run may claim the next one. */
export function releasesClaim(status: unknown): boolean {
  return CLAIM_RELEASING_STEP_STATUSES.has(status as StepStatus);
}

/** The worker pool a step belongs to when the orchestrator names none. */
export const DEFAULT_WORKER_POOL = "default";

/**
 * Worker run status. `cancelling`: a task-level fail/cancel asked the run to stop; it ends when it finishes or
 * when its cancellation deadline passes, whichever comes first.
 */
export const RUN_STATUSES = ["active", "cancelling", "finished", "cancelled", "timed_out"] as const;
/** Worker run status. */
export type RunStatus = (typeof RUN_STATUSES)[number];

/** Attempt status: open while the claim is held, then how it ended. */
export const ATTEMPT_STATUSES = ["active", "completed", "failed", "cancelled", "blocked", "lost", "timed_out"] as const;
/** Attempt status. */
export type AttemptStatus = (typeof ATTEMPT_STATUSES)[number];

/**
 * Where a delegation stands. Live (the runtime holds the step for it): `starting` (the child or the peer's task
 * is being created), `active` (it works), `input_required` (the peer asked a question: an input action is open on
 * the step), `answering` (the answer is being sent). `cancelling`: the step's claim ended first (or the deadline
 * passed); the delegate is being told to stop. `closed`: nothing is owed either way.
 */
export const DELEGATION_STATUSES = ["starting", "active", "input_required", "answering", "cancelling", "closed"] as const;
/** Where a delegation stands. */
export type DelegationStatus = (typeof DELEGATION_STATUSES)[number];
/** Delegation statuses in which the runtime holds the step for the delegate. */
export const LIVE_DELEGATION_STATUSES: ReadonlySet<DelegationStatus> = new Set(["starting", "active", "input_required", "answering"]);
