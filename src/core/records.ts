/** @module Zod schemas and types of the records a task DAG holds: task, step, worker run, attempt. */
import { z } from "zod";
import { ID_PATTERN, MAX_ARTIFACTS, MAX_TEXT, MAX_TITLE } from "./limits.js";

/** A safe id or wal name: `^[a-z0-9_-]{1,64}$`, so never `/`, `..`, a hidden name, empty or too long. */
export const IdSchema = z.string().regex(ID_PATTERN, "must match ^[a-z0-9_-]{1,64}$");
/** An ISO-8601 UTC timestamp, as every record and event stores time. */
export const TimestampSchema = z.string();
/** A title. */
export const TitleSchema = z.string().min(1).max(MAX_TITLE);
/** A summary, result summary or reason. */
export const TextSchema = z.string().max(MAX_TEXT);
/** Artifact references produced by a step. */
export const ArtifactIdsSchema = z.array(z.string().min(1).max(512)).max(MAX_ARTIFACTS);

/** Task status (003 "Status"). */
export const TASK_STATUSES = ["pending", "running", "blocked", "completed", "failed", "cancelled"] as const;
/** Task status (003 "Status"). */
export const TaskStatusSchema = z.enum(TASK_STATUSES);
/** Task status (003 "Status"). */
export type TaskStatus = z.infer<typeof TaskStatusSchema>;

/** Step status (003 "Status"). */
export const STEP_STATUSES = ["pending", "ready", "claimed", "running", "blocked", "completed", "failed", "cancelled"] as const;
/** Step status (003 "Status"). */
export const StepStatusSchema = z.enum(STEP_STATUSES);
/** Step status (003 "Status"). */
export type StepStatus = z.infer<typeof StepStatusSchema>;

/** Task statuses after which the task accepts no change. */
export const TERMINAL_TASK_STATUSES: ReadonlySet<TaskStatus> = new Set(["completed", "failed", "cancelled"]);
/** Step statuses a step ends in: a forced stop leaves them as they are, and a query leaves them out unless `include_terminal_steps` is set. */
export const TERMINAL_STEP_STATUSES: ReadonlySet<StepStatus> = new Set(["completed", "failed", "cancelled"]);
/** Step statuses in which a worker run holds the step under a lease. */
export const HELD_STEP_STATUSES: ReadonlySet<StepStatus> = new Set(["claimed", "running"]);
/** Statuses a worker's update_step sets that release its run's claim (003), after which `claim_next` may claim again. */
export const CLAIM_RELEASING_STEP_STATUSES: ReadonlySet<StepStatus> = new Set(["completed", "failed", "cancelled", "blocked"]);

/** True when a worker's update_step to `status` gives up the step it held, so its run may claim the next one. */
export function releasesClaim(status: unknown): boolean {
  return CLAIM_RELEASING_STEP_STATUSES.has(status as StepStatus);
}

/** The worker pool a step belongs to when the orchestrator names none. */
export const DEFAULT_WORKER_POOL = "default";

/** The task record (003 "DAG Model" task fields; `root_step_ids` is derived by the view). */
export const TaskSchema = z.object({
  task_id: IdSchema,
  session_id: z.string(),
  wal_name: IdSchema,
  title: TitleSchema,
  summary: TextSchema,
  status: TaskStatusSchema,
  objective: TextSchema.nullable(),
  task_kind: z.string().nullable(),
  priority: z.number().int().nullable(),
  acceptance: TextSchema.nullable(),
  parent_task_id: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()).nullable(),
  step_lease_timeout_ms: z.number().int().positive(),
  status_reason: TextSchema.nullable(),
  created_by_agent_id: z.string(),
  created_by_run_id: z.string().nullable(),
  created_at: TimestampSchema,
  updated_at: TimestampSchema,
  ended_at: TimestampSchema.nullable(),
});
/** The task record. */
export type Task = z.infer<typeof TaskSchema>;

/** What a worker saw of its step when it claimed it (003: inspect shows dispatch-time and current step). */
export const StepSnapshotSchema = z.object({
  title: TitleSchema,
  summary: TextSchema,
  depends_on_step_ids: z.array(IdSchema),
  required: z.boolean(),
  worker_pool_id: IdSchema,
});
/** A dispatch-time view of a step. */
export type StepSnapshot = z.infer<typeof StepSnapshotSchema>;

/** A step, a node of the DAG (003 "DAG Model" step fields plus its attempts). */
export const StepSchema = z.object({
  step_id: IdSchema,
  title: TitleSchema,
  summary: TextSchema,
  status: StepStatusSchema,
  depends_on_step_ids: z.array(IdSchema),
  required: z.boolean(),
  worker_pool_id: IdSchema,
  claimed_by_agent_id: z.string().nullable(),
  claimed_by_run_id: z.string().nullable(),
  lease_expires_at: TimestampSchema.nullable(),
  current_attempt_id: z.string().nullable(),
  attempt_ids: z.array(z.string()),
  result_summary: TextSchema.nullable(),
  artifact_ids: ArtifactIdsSchema,
  status_reason: TextSchema.nullable(),
  /** True when the orchestrator changed the step while a run held it (003 "updated after dispatch"). */
  updated_after_dispatch: z.boolean(),
  /** Creation order: queries sort by it (003: created_at ascending). */
  ordinal: z.number().int().nonnegative(),
  created_at: TimestampSchema,
  updated_at: TimestampSchema,
});
/** A step. */
export type Step = z.infer<typeof StepSchema>;

/**
 * Worker run status. `cancelling`: a task-level fail/cancel asked the run to stop (003); it ends when it
 * finishes or when its cancellation deadline passes, whichever comes first.
 */
export const RUN_STATUSES = ["active", "cancelling", "finished", "cancelled", "timed_out"] as const;
/** Worker run status. */
export const RunStatusSchema = z.enum(RUN_STATUSES);
/** Worker run status. */
export type RunStatus = z.infer<typeof RunStatusSchema>;

/** A task-level stop's request that a run cancel (003): who asked, why, and until when it is waited for. */
export const RunCancelRequestSchema = z.object({
  requested_at: TimestampSchema,
  requested_by_agent_id: z.string(),
  /** task_failed or task_cancelled. */
  reason: z.string(),
  /** When the wait ends (now + agents.child_cancel_timeout_ms when asked). */
  deadline_at: TimestampSchema,
  /** When child_agent_cancel_timeout was recorded, or null while waiting or when the run ended in time. */
  timed_out_at: TimestampSchema.nullable(),
});
/** A task-level stop's request that a run cancel. */
export type RunCancelRequest = z.infer<typeof RunCancelRequestSchema>;

/** A worker run started by dispatch_worker. */
export const WorkerRunSchema = z.object({
  run_id: z.string(),
  agent_id: z.string(),
  worker_pool_id: IdSchema,
  /** Hard scope of steps the run may query and claim; null means no limit by id. */
  allowed_step_ids: z.array(IdSchema).nullable(),
  /** Claims the run may make, one at a time (1 is 003's one step per run). */
  max_steps: z.number().int().positive(),
  claims_used: z.number().int().nonnegative(),
  /** The step the run holds now, if any. */
  current_step_id: IdSchema.nullable(),
  status: RunStatusSchema,
  status_reason: z.string().nullable(),
  result: z.unknown().nullable(),
  deadline_at: TimestampSchema.nullable(),
  /** Set when a task-level fail/cancel asked the run to cancel; kept after the run ends. */
  cancel_request: RunCancelRequestSchema.nullable(),
  dispatched_by_agent_id: z.string(),
  created_at: TimestampSchema,
  ended_at: TimestampSchema.nullable(),
});
/** A worker run. */
export type WorkerRun = z.infer<typeof WorkerRunSchema>;

/** Attempt status: open while the claim is held, then how it ended. */
export const ATTEMPT_STATUSES = ["active", "completed", "failed", "cancelled", "blocked", "lost", "timed_out"] as const;
/** Attempt status. */
export const AttemptStatusSchema = z.enum(ATTEMPT_STATUSES);
/** Attempt status. */
export type AttemptStatus = z.infer<typeof AttemptStatusSchema>;

/** One claim of a step by a run; attempts are never overwritten. */
export const AttemptSchema = z.object({
  attempt_id: z.string(),
  step_id: IdSchema,
  run_id: z.string(),
  agent_id: z.string(),
  ordinal: z.number().int().positive(),
  status: AttemptStatusSchema,
  step_snapshot: StepSnapshotSchema,
  started_at: TimestampSchema,
  ended_at: TimestampSchema.nullable(),
  result_summary: TextSchema.nullable(),
  last_error: TextSchema.nullable(),
});
/** An attempt. */
export type Attempt = z.infer<typeof AttemptSchema>;
