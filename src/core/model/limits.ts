/** @module Input limits of the core (all limits: docs/limits.md); the service may override the configurable ones. */

/** Ids and wal names: lowercase safe characters, so an id never has path semantics (`/`, `..`, a hidden name). */
export const ID_PATTERN = /^[a-z0-9_-]{1,64}$/;
/** Longest task or step title. */
export const MAX_TITLE = 200;
/** Longest summary, result summary or reason. */
export const MAX_TEXT = 8_000;
/** Most artifact ids one step update may carry. */
export const MAX_ARTIFACTS = 100;

/** Limits a deployment may tune (wrangler.toml vars). */
export interface CoreLimits {
  /** Most steps one task DAG may hold. */
  readonly maxStepsPerTask: number;
  /** Lease length when the task does not set its own `step_lease_timeout_ms`. */
  readonly stepLeaseTimeoutMs: number;
  /**
   * How long a task-level fail/cancel waits for a worker run it asked to cancel (CHILD_CANCEL_TIMEOUT_MS); the
   * deadline is recorded in the WAL, so replay never reads this.
   */
  readonly childCancelTimeoutMs: number;
  /** How long an action waits for a person when its request names no timeout (then it resolves as expired). */
  readonly actionTimeoutMs: number;
  /** How long an A2A peer's task may take when its delegate names no timeout (then the attempt ends timed_out). */
  readonly delegateTimeoutMs: number;
  /** The wait before the second try of a delegate's failed outbound call (doubling, at most a minute). */
  readonly delegateRetryMs: number;
  /** Tries of one outbound call (create the child, send to the peer, follow it) before the attempt fails. */
  readonly delegateMaxTries: number;
  /** Actions open at once in one task, task- and step-level (MAX_OPEN_ACTIONS_PER_TASK); one more is limit_exceeded. */
  readonly maxOpenActionsPerTask: number;
  /**
   * Actions one attempt (one claim of a step) may ask, open and resolved together (MAX_ACTIONS_PER_ATTEMPT): a step
   * has one open action at a time, so this bounds a claim that asks again and again, each asked action kept in the WAL.
   */
  readonly maxActionsPerAttempt: number;
  /** Child tasks one delegated step may create over all its attempts (MAX_CHILDREN_PER_STEP). */
  readonly maxChildrenPerStep: number;
  /**
   * Days after its archive an archived task's storage is deleted (RETENTION_DAYS); 0 keeps it forever. The deadline is
   * recorded in the archive's WAL event, so replay never reads this.
   */
  readonly retentionDays: number;
}

/** The documented defaults. */
export const DEFAULT_LIMITS: CoreLimits = {
  maxStepsPerTask: 10_000,
  stepLeaseTimeoutMs: 60_000,
  childCancelTimeoutMs: 30_000,
  actionTimeoutMs: 86_400_000,
  delegateTimeoutMs: 3_600_000,
  delegateRetryMs: 1_000,
  delegateMaxTries: 6,
  maxOpenActionsPerTask: 1_000,
  maxActionsPerAttempt: 100,
  maxChildrenPerStep: 100,
  retentionDays: 0,
};

/** The wrangler.toml var behind each counted cap of the core, named in a limit_exceeded's details. */
export const LIMIT_SETTINGS = {
  maxOpenActionsPerTask: "MAX_OPEN_ACTIONS_PER_TASK",
  maxActionsPerAttempt: "MAX_ACTIONS_PER_ATTEMPT",
  maxChildrenPerStep: "MAX_CHILDREN_PER_STEP",
} as const satisfies Partial<Record<keyof CoreLimits, string>>;
