/**
 * @module Zod schemas of the records a task DAG holds: task, step, worker run, attempt, action. The service
 * validates with them; their types (model/records.ts) are their output, imported as types only.
 */
import { z } from "zod";
import { JsonObjectSchema, JsonValueSchema } from "./json-values.js";
import { MAX_ARTIFACTS } from "../model/limits.js";
import { ATTEMPT_STATUSES, RUN_STATUSES, STEP_STATUSES, TASK_STATUSES } from "../model/statuses.js";
import { ArtifactIdsSchema, IdSchema, RetryPolicySchema, TextSchema, TimestampSchema, TitleSchema } from "./record-basics.js";
import { DelegatedFromSchema, DelegateSchema, DeliveryStateSchema } from "./delegation-records.js";

/** Task status. */
export const TaskStatusSchema = z.enum(TASK_STATUSES);
/** Step status. */
export const StepStatusSchema = z.enum(STEP_STATUSES);

/** A task's acceptance: criteria for people and models, and artifacts `complete` requires (never interpreted otherwise). */
export const AcceptanceSchema = z.strictObject({
  criteria: TextSchema.optional(),
  required_artifacts: z.array(z.string().min(1).max(512)).max(MAX_ARTIFACTS).optional(),
});

/** Acceptance as stored: WALs written before it became an object hold a string (its criteria; see acceptanceOf). */
export const StoredAcceptanceSchema = z.union([AcceptanceSchema, TextSchema]);

/** A task's visibility: foreground, background, internal or hidden (the scheduler does not read it). */
export const VisibilitySchema = z.enum(["foreground", "background", "internal", "hidden"]);

/** Who asked for, owns or is assigned a task: a user, agent, workflow, channel or worker id. */
export const AttributionSchema = z.string().min(1).max(200);

/** A structured failure fact (a task's `last_error`): a code, a message, and where and when it happened. */
export const ErrorFactSchema = z.object({
  code: z.string(),
  message: z.string().nullable(),
  step_id: z.string().nullable(),
  attempt_id: z.string().nullable(),
  at: TimestampSchema,
});

/**
 * Where a task came from when it was not an orchestrator's plan: submitted by an A2A client. Set by
 * task_created only; it decides who besides the session's own agents may see the task.
 */
export const TaskOriginSchema = z.object({ protocol: z.literal("a2a"), client_agent_id: z.string().min(1).max(128) });

/**
 * A task graph edge from this task (its `relationships`): `source_task`, a task whose result this one builds on
 * (an A2A message's referenceTaskIds).
 */
export const TaskRelationshipSchema = z.object({ kind: z.literal("source_task"), task_id: IdSchema });

/**
 * The task record fields the orchestrator sets on create and with the `update_task` patch op: stored in the WAL
 * and returned, never interpreted by the scheduler (except `acceptance.required_artifacts`, which `complete`
 * checks, and `default_retry_policy`). Their names, in this order, are TASK_RECORD_FIELDS (model/records.ts).
 */
export const TaskRecordFieldsSchema = z.object({
  objective: TextSchema.nullable(),
  task_kind: z.string().max(64).nullable(),
  task_family: z.string().max(64).nullable(),
  visibility: VisibilitySchema.nullable(),
  priority: z.number().int().nullable(),
  requested_by: AttributionSchema.nullable(),
  owner: AttributionSchema.nullable(),
  assignee: AttributionSchema.nullable(),
  scope: JsonObjectSchema.nullable(),
  constraints: JsonObjectSchema.nullable(),
  task_profile: JsonObjectSchema.nullable(),
  acceptance: AcceptanceSchema.nullable(),
  metadata: JsonObjectSchema.nullable(),
  thread_id: z.string().max(200).nullable(),
  parent_task_id: z.string().max(200).nullable(),
  root_task_id: z.string().max(200).nullable(),
  default_retry_policy: RetryPolicySchema.nullable(),
  /** `input_refs`: prompt, files, data the work starts from (an A2A message's data and file parts). */
  input_refs: z.array(JsonObjectSchema).max(100).nullable(),
  relationships: z.array(TaskRelationshipSchema).max(100).nullable(),
});

/** The task record (`root_step_ids` is derived by the view). */
export const TaskSchema = TaskRecordFieldsSchema.extend({
  task_id: IdSchema,
  session_id: z.string(),
  wal_name: IdSchema,
  title: TitleSchema,
  summary: TextSchema,
  status: TaskStatusSchema,
  step_lease_timeout_ms: z.number().int().positive(),
  status_reason: TextSchema.nullable(),
  /** The latest failure fact: a step's failed, timed-out or lost attempt, or the task's own failure. */
  last_error: ErrorFactSchema.nullable(),
  created_by_agent_id: z.string(),
  created_by_run_id: z.string().nullable(),
  origin: TaskOriginSchema.nullable(),
  /** For a child task: the delegation that created it (set by task_created, by the runtime only). */
  delegated_from: DelegatedFromSchema.nullable(),
  /** For a child task: whether its result reached the parent (null for any other task, and while it runs). */
  delivery_state: DeliveryStateSchema.nullable(),
  created_at: TimestampSchema,
  updated_at: TimestampSchema,
  /** When the task first became running. */
  started_at: TimestampSchema.nullable(),
  ended_at: TimestampSchema.nullable(),
  /**
   * Tasks of the session whose `blocks` link holds this one until they complete (the session's graph pushes
   * them as set_blockers); while any is listed, no worker is dispatched and no step claimed.
   */
  blocked_by: z.array(IdSchema),
  /** The version of `blocked_by` the session last pushed (0: never); an older or equal push changes nothing. */
  blockers_version: z.number().int().min(0),
  /** When the orchestrator archived the terminal task (task_archived), else null: its normalized status is then archived. */
  archived_at: TimestampSchema.nullable(),
  /** When an archived task's storage goes (archived_at + RETENTION_DAYS at the archive), null to keep it forever. */
  delete_after: TimestampSchema.nullable(),
});

/** What a worker saw of its step when it claimed it (inspect shows the dispatch-time and the current step). */
export const StepSnapshotSchema = z.object({
  title: TitleSchema,
  summary: TextSchema,
  depends_on_step_ids: z.array(IdSchema),
  required: z.boolean(),
  worker_pool_id: IdSchema,
});

/** A step, a node of the DAG, with its attempts. */
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
  /** True when the orchestrator changed the step while a run held it ("updated after dispatch"). */
  updated_after_dispatch: z.boolean(),
  /** The step's own retry policy (null: the task's default_retry_policy, if any, applies). */
  retry_policy: RetryPolicySchema.nullable(),
  /** Attempts made under the retry policy since the orchestrator last reopened the step. */
  retry_attempts: z.number().int().nonnegative(),
  /** When a retry the policy scheduled reopens the step (normalized status `retrying` until then); else null. */
  retry_at: TimestampSchema.nullable(),
  /** The delegate that does the step's work (a child task, an A2A peer's task); null for a worker's step. */
  delegate: DelegateSchema.nullable(),
  /** The delegation of the current or latest attempt, if the step is delegated. */
  delegation_id: z.string().nullable(),
  /** Creation order: queries sort by it (created_at ascending). */
  ordinal: z.number().int().nonnegative(),
  created_at: TimestampSchema,
  updated_at: TimestampSchema,
});

/** Worker run status. */
export const RunStatusSchema = z.enum(RUN_STATUSES);

/** A task-level stop's request that a run cancel: who asked, why, and until when it is waited for. */
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

/** A worker run started by dispatch_worker. */
export const WorkerRunSchema = z.object({
  run_id: z.string(),
  agent_id: z.string(),
  worker_pool_id: IdSchema,
  /** Hard scope of steps the run may query and claim; null means no limit by id. */
  allowed_step_ids: z.array(IdSchema).nullable(),
  /** Claims the run may make, one at a time (1: one step per run, the default). */
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

/** Attempt status. */
export const AttemptStatusSchema = z.enum(ATTEMPT_STATUSES);

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

/** Action kinds: a yes/no approval, or structured input checked against a schema. */
export const ActionKindSchema = z.enum(["approval", "input"]);

/** How an action was resolved: by a person (approved, rejected, submitted) or by the runtime (expired, withdrawn). */
export const ActionDecisionSchema = z.enum(["approved", "rejected", "submitted", "expired", "withdrawn"]);

/** Who resolved an action. */
export const ActionResolverSchema = z.object({ agent_id: z.string(), role: z.string() });

/**
 * A human action: a question the holder of a step (or the orchestrator, for the task) asks a person, open until
 * it is resolved (runtime events action.required / action.resolved). While it is open the step's lease does not
 * expire.
 */
export const ActionSchema = z.object({
  action_id: z.string(),
  task_id: IdSchema,
  /** The step it holds up; null for a task-level action. */
  step_id: IdSchema.nullable(),
  /** The attempt that asked (a step-level action belongs to one claim of its step). */
  attempt_id: z.string().nullable(),
  run_id: z.string().nullable(),
  kind: ActionKindSchema,
  prompt: TextSchema,
  input_schema: z.record(z.string(), z.unknown()).nullable(),
  status: z.enum(["open", "resolved"]),
  requested_by_agent_id: z.string(),
  created_at: TimestampSchema,
  expires_at: TimestampSchema,
  decision: ActionDecisionSchema.nullable(),
  input: JsonValueSchema.nullable(),
  comment: TextSchema.nullable(),
  resolved_by: ActionResolverSchema.nullable(),
  resolved_at: TimestampSchema.nullable(),
});
