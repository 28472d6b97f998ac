/**
 * @module Zod schemas of the commands `decide` accepts: the agent tools (agent.task_create, agent.task_update,
 * …) and the control plane (pause, resume, actions, the runtime's own commands). Their types are in
 * model/commands.ts.
 */
import { z } from "zod";
import { JsonObjectSchema, JsonValueSchema } from "./json-values.js";
import { ArtifactIdsSchema, IdSchema, RetryPolicySchema, TextSchema, TitleSchema } from "./record-basics.js";
import { DelegatedFromSchema, DeliveryStateSchema, StepInputSchema } from "./delegation-records.js";
import { DeliveryIdSchema, DeliveryTrySchema, QueuedDeliverySchema } from "./webhook-records.js";
import { AcceptanceSchema, ActionKindSchema, AttributionSchema, StepStatusSchema, TaskRelationshipSchema, VisibilitySchema } from "./records.js";

const reason = TextSchema.optional();

/** Fields `update_step` may change (never status or results). */
export const StepFieldsSchema = z
  .strictObject({
    title: TitleSchema.optional(),
    summary: TextSchema.optional(),
    depends_on_step_ids: z.array(IdSchema).max(10_000).optional(),
    required: z.boolean().optional(),
    worker_pool_id: IdSchema.optional(),
    /** null removes the step's own policy (the task's default applies again). */
    retry_policy: RetryPolicySchema.nullable().optional(),
  })
  .refine((f) => Object.keys(f).length > 0, "fields must change at least one of title, summary, depends_on_step_ids, required, worker_pool_id, retry_policy");

/**
 * The task record fields as create_task and the update_task patch op take them. `acceptance` may be a string
 * (its criteria, as before it became an object).
 */
const recordFields = {
  objective: TextSchema,
  task_kind: z.string().max(64),
  task_family: z.string().max(64),
  visibility: VisibilitySchema,
  priority: z.number().int(),
  requested_by: AttributionSchema,
  owner: AttributionSchema,
  assignee: AttributionSchema,
  scope: JsonObjectSchema,
  constraints: JsonObjectSchema,
  task_profile: JsonObjectSchema,
  acceptance: z.union([AcceptanceSchema, TextSchema.transform((criteria) => ({ criteria }))]),
  metadata: JsonObjectSchema,
  thread_id: z.string().max(200),
  parent_task_id: z.string().max(200),
  root_task_id: z.string().max(200),
  default_retry_policy: RetryPolicySchema,
  input_refs: z.array(JsonObjectSchema).max(100),
  relationships: z.array(TaskRelationshipSchema).max(100),
};
type RecordFieldSchemas = typeof recordFields;
const optionalFields = Object.fromEntries(Object.entries(recordFields).map(([k, v]) => [k, v.optional()])) as { [K in keyof RecordFieldSchemas]: z.ZodOptional<RecordFieldSchemas[K]> };
/** In update_task, null clears a field. */
const clearableFields = Object.fromEntries(Object.entries(recordFields).map(([k, v]) => [k, v.nullable().optional()])) as {
  [K in keyof RecordFieldSchemas]: z.ZodOptional<z.ZodNullable<RecordFieldSchemas[K]>>;
};

/** One structured patch operation of agent.task_update. */
export const PatchOpSchema = z.discriminatedUnion("op", [
  z.strictObject({ op: z.literal("update_task"), title: TitleSchema.optional(), summary: TextSchema.optional(), ...clearableFields, reason }),
  z.strictObject({ op: z.literal("add_step"), step: StepInputSchema, reason }),
  z.strictObject({ op: z.literal("update_step"), step_id: IdSchema, fields: StepFieldsSchema, reason }),
  z.strictObject({ op: z.literal("delete_step"), step_id: IdSchema, reason }),
  z.strictObject({ op: z.literal("add_dependency"), step_id: IdSchema, depends_on_step_id: IdSchema, reason }),
  z.strictObject({ op: z.literal("remove_dependency"), step_id: IdSchema, depends_on_step_id: IdSchema, reason }),
  z.strictObject({ op: z.literal("cancel_step"), step_id: IdSchema, reason }),
  z.strictObject({ op: z.literal("reopen_step"), step_id: IdSchema, reason }),
]);

/** agent.task_create: the whole DAG. */
export const CreateTaskSchema = z.strictObject({
  type: z.literal("create_task"),
  task_id: IdSchema,
  wal_name: IdSchema,
  title: TitleSchema,
  summary: TextSchema.default(""),
  steps: z.array(StepInputSchema).max(10_000),
  ...optionalFields,
  step_lease_timeout_ms: z.number().int().min(1_000).max(86_400_000).optional(),
  /** A child task's delegation (the runtime's own creates only; the public body has no such field). */
  delegated_from: DelegatedFromSchema.optional(),
});

/** agent.task_update: structured patch operations applied in order, atomically. */
export const UpdateTaskSchema = z.strictObject({
  type: z.literal("update_task"),
  ops: z.array(PatchOpSchema).min(1).max(10_000),
});


/** agent.task_update_step: execution status and results only. */
export const UpdateStepSchema = z.strictObject({
  type: z.literal("update_step"),
  step_id: IdSchema,
  /** pending and ready belong to the core: asking for them is an invalid_transition, not a bad request. */
  status: StepStatusSchema,
  result_summary: TextSchema.optional(),
  artifact_ids: ArtifactIdsSchema.optional(),
  reason: TextSchema.optional(),
});

/** agent.task_progress: progress facts; renews the caller's lease. */
export const AppendProgressSchema = z.strictObject({
  type: z.literal("append_progress"),
  step_id: IdSchema.optional(),
  phase: z.string().max(64).optional(),
  summary: TextSchema.optional(),
  counters: z.record(z.string().max(64), z.number()).optional(),
  output_refs: z.array(z.string().max(512)).max(100).optional(),
});

/** agent.task_claim_step. */
export const ClaimStepSchema = z.strictObject({ type: z.literal("claim_step"), step_id: IdSchema });
/** Query and claim in one decision: the first claimable step in the run's scope. */
export const ClaimNextSchema = z.strictObject({ type: z.literal("claim_next") });

const closing = <T extends string>(type: T) => z.strictObject({ type: z.literal(type), reason });
/** agent.task_complete. */
export const CompleteTaskSchema = closing("complete_task");
/** agent.task_fail. */
export const FailTaskSchema = closing("fail_task");
/** agent.task_cancel. */
export const CancelTaskSchema = closing("cancel_task");
/** Orchestrator sets the task blocked. */
export const BlockTaskSchema = closing("block_task");
/** Orchestrator returns a blocked task to pending (task_reopened). */
export const ReopenTaskSchema = closing("reopen_task");

/** agent.dispatch_worker: start a worker run scoped to this task. */
export const DispatchWorkerSchema = z.strictObject({
  type: z.literal("dispatch_worker"),
  agent_id: z.string().min(1).max(128).optional(),
  worker_pool_id: IdSchema.optional(),
  allowed_step_ids: z.array(IdSchema).min(1, "allowed_step_ids must not be empty; omit it for no limit").max(10_000).optional(),
  timeout_ms: z.number().int().min(1_000).max(7 * 86_400_000).optional(),
  max_steps: z.number().int().min(1).max(10_000).optional(),
});

/** How a worker run ended. */
export const RunOutcomeSchema = z.enum(["finished", "cancelled", "timeout"]);

/** A worker run ends; a step it still holds fails with the fallback reason of that ending (e.g. worker_timeout). */
export const FinishRunSchema = z.strictObject({
  type: z.literal("finish_run"),
  run_id: z.string().min(1).max(128),
  outcome: RunOutcomeSchema,
  result: JsonValueSchema.optional(),
});

/** The orchestrator cancels a worker run. */
export const CancelRunSchema = z.strictObject({ type: z.literal("cancel_run"), run_id: z.string().min(1).max(128), reason });

/** pause_task: no dispatch, no claim until resumed; held steps go on. */
export const PauseTaskSchema = closing("pause_task");
/** resume_task: back to pending, then the usual promotion to ready steps and a running task. */
export const ResumeTaskSchema = closing("resume_task");
/** archive_task: a terminal task leaves the task list (and, with RETENTION_DAYS, its storage goes that many days later). */
export const ArchiveTaskSchema = closing("archive_task");

/** The JSON Schema an `input` action's answer is checked against (a JSON object; its keywords are checked when used). */
export const InputSchemaSchema = JsonObjectSchema;

/**
 * The holder of a step (or the orchestrator) asks a person (runtime event action.required). With `step_id` a
 * step-level action on a held step; without it, a task-level one (orchestrator only).
 */
export const RequestActionSchema = z.strictObject({
  type: z.literal("request_action"),
  step_id: IdSchema.optional(),
  kind: ActionKindSchema,
  prompt: TextSchema.min(1),
  input_schema: InputSchemaSchema.optional(),
  timeout_ms: z.number().int().min(1_000).max(30 * 86_400_000).optional(),
});

/** respond_action: a person's decision on an open action (runtime event action.resolved). */
export const RespondActionSchema = z.strictObject({
  type: z.literal("respond_action"),
  action_id: z.string().min(1).max(128),
  decision: z.enum(["approved", "rejected", "submitted"]),
  input: JsonValueSchema.optional(),
  comment: TextSchema.optional(),
});

/** What a delegate's outbound call found, as the delegating task records it (the runtime's own command). */
export const DelegationReportSchema = z.discriminatedUnion("kind", [
  /** The child task exists, or the peer accepted the message: its remote refs. */
  z.strictObject({
    kind: z.literal("started"),
    remote_task_id: z.string().min(1).max(256),
    remote_context_id: z.string().max(256).nullable().optional(),
    remote_status: z.string().max(64).nullable().optional(),
    delivery_mechanism: z.enum(["callback", "polling", "streaming"]),
  }),
  /** A peer's task as last seen (a poll or a stream event): its state, the status message, its artifacts. */
  z.strictObject({
    kind: z.literal("remote_status"),
    remote_status: z.string().min(1).max(64),
    status_message: TextSchema.nullable().optional(),
    artifacts: z
      .array(z.strictObject({ artifact_id: z.string().min(1).max(256), name: z.string().max(256).nullable(), text: TextSchema.nullable() }))
      .max(100)
      .optional(),
    /** How this view reached the runtime: a poll (GetTask) or the peer's stream (SubscribeToTask). */
    delivery_mechanism: z.enum(["polling", "streaming"]).optional(),
    /** The peer's own id of the question it asks (its status message's `metadata.actionId`), sent back with our answer. */
    remote_action_id: z.string().min(1).max(256).nullable().optional(),
  }),
  /** An outbound call failed; `retryable` says whether trying again may help. */
  z.strictObject({
    kind: z.literal("try_failed"),
    intent: z.enum(["create_child", "cancel_child", "a2a_send", "a2a_follow", "a2a_answer", "a2a_cancel"]),
    error: TextSchema,
    retryable: z.boolean(),
  }),
  /** A child task ended and reported its result. */
  z.strictObject({
    kind: z.literal("child_settled"),
    child_task_id: z.string().min(1).max(64),
    child_status: z.enum(["completed", "failed", "cancelled"]),
    result_summary: TextSchema.nullable(),
    artifact_ids: ArtifactIdsSchema,
  }),
  /** The answer to a peer's question was delivered. */
  z.strictObject({ kind: z.literal("answered") }),
  /** The delegate acknowledged a cancellation; `not_created`: no child exists, and none will be. */
  z.strictObject({ kind: z.literal("cancel_acknowledged"), remote_state: z.enum(["cancelled", "already_terminal", "not_created"]) }),
]);

/** The runtime records what a delegate's outbound call found (system only). */
export const RecordDelegationSchema = z.strictObject({
  type: z.literal("record_delegation"),
  delegation_id: z.string().min(1).max(128),
  report: DelegationReportSchema,
});

/** The runtime cancels a child task whose parent's delegation ended (system only). */
export const CancelForParentSchema = z.strictObject({ type: z.literal("cancel_for_parent"), delegation_id: z.string().min(1).max(128), reason: TextSchema });

/** A child task records whether its result reached its parent (system only). */
export const RecordDeliverySchema = z.strictObject({
  type: z.literal("record_delivery"),
  delivery_state: DeliveryStateSchema.exclude(["pending"]),
  detail: TextSchema.optional(),
});

/** The runtime queues events of a commit for the subscriptions whose filters take them (system only). */
export const QueueWebhookDeliveriesSchema = z.strictObject({
  type: z.literal("queue_webhook_deliveries"),
  deliveries: z.array(QueuedDeliverySchema).min(1).max(10_000),
});

/** The runtime records what tries of deliveries came to; `max_tries` is the configured WEBHOOK_MAX_TRIES (system only). */
export const RecordWebhookTriesSchema = z.strictObject({
  type: z.literal("record_webhook_tries"),
  tries: z.array(DeliveryTrySchema).min(1).max(10_000),
  max_tries: z.number().int().min(1).max(100),
  /** The wait before a second try (WEBHOOK_RETRY_BASE_MS); each later wait is WEBHOOK_BACKOFF_FACTOR times the one before. */
  retry_base_ms: z.number().int().min(1).max(3_600_000),
});

/** A failed delivery is owed again (system only: the session's retry route asks the task object). */
export const RetryWebhookDeliverySchema = z.strictObject({ type: z.literal("retry_webhook_delivery"), delivery_id: DeliveryIdSchema });

/** Expire leases, worker-run deadlines, cancellation waits and actions, and reopen steps whose retry is due, at `ctx.now`. */
export const ReconcileLeasesSchema = z.strictObject({ type: z.literal("reconcile_leases") });

/**
 * The session's task graph tells the task which tasks block it (their `blocks` links, blocker not completed),
 * `version` counting the session's pushes for this task; issued by the system actor only.
 */
export const SetBlockersSchema = z.strictObject({
  type: z.literal("set_blockers"),
  version: z.number().int().min(1),
  blocked_by: z.array(IdSchema).max(1_000),
});

/** Every command `decide` accepts. */
export const CommandSchema = z.discriminatedUnion("type", [
  CreateTaskSchema,
  UpdateTaskSchema,
  UpdateStepSchema,
  AppendProgressSchema,
  ClaimStepSchema,
  ClaimNextSchema,
  CompleteTaskSchema,
  FailTaskSchema,
  CancelTaskSchema,
  BlockTaskSchema,
  ReopenTaskSchema,
  DispatchWorkerSchema,
  FinishRunSchema,
  CancelRunSchema,
  PauseTaskSchema,
  ResumeTaskSchema,
  ArchiveTaskSchema,
  RequestActionSchema,
  RespondActionSchema,
  ReconcileLeasesSchema,
  RecordDelegationSchema,
  RecordDeliverySchema,
  CancelForParentSchema,
  SetBlockersSchema,
  QueueWebhookDeliveriesSchema,
  RecordWebhookTriesSchema,
  RetryWebhookDeliverySchema,
]);

/** agent.task_query_steps filters (a read, not a command). */
export const StepQuerySchema = z.strictObject({
  statuses: z.array(StepStatusSchema).optional(),
  worker_pool_id: IdSchema.optional(),
  claimed_by_agent_id: z.string().optional(),
  include_terminal_steps: z.boolean().optional(),
  limit: z.number().int().min(1).max(1_000).optional(),
  offset: z.number().int().min(0).optional(),
});
