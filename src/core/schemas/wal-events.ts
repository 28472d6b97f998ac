/**
 * @module The zod schema of the WAL event union, discriminated on `event_type`: it decodes every stored row.
 * The event types are in events/events.ts (this schema's output, imported as a type only); their names, as a
 * plain list, in events/event-types.ts.
 */
import { z } from "zod";
import { DELEGATION_STATUSES } from "../model/statuses.js";
import { PatchOpSchema } from "./commands.js";
import { JsonValueSchema } from "./json-values.js";
import { ArtifactIdsSchema, IdSchema, RetryPolicySchema, TextSchema, TimestampSchema } from "./record-basics.js";
import { DelegatedFromSchema, DelegateSchema, DelegationOutcomeSchema, DeliveryStateSchema, StepInputSchema } from "./delegation-records.js";
import { DeliveryIdSchema, QueuedDeliverySchema, WebhookDeliveryStatusSchema } from "./webhook-records.js";
import { ActionKindSchema, AttemptStatusSchema, StepSnapshotSchema, StoredAcceptanceSchema, TaskOriginSchema, TaskRecordFieldsSchema, TaskSchema } from "./records.js";

const envelope = {
  wal_seq: z.number().int().positive(),
  session_id: z.string(),
  event_id: z.string(),
  actor_agent_id: z.string(),
  actor_run_id: z.string().nullable(),
  task_id: IdSchema,
  step_id: IdSchema.nullable(),
  created_at: TimestampSchema,
};

const event = <T extends string, P extends z.ZodType>(type: T, payload: P) =>
  z.object({ ...envelope, event_type: z.literal(type), payload });

const reasonOnly = z.object({ reason: TextSchema.nullable() });

/**
 * The attempt and run a step event closed, when a run held the step (null when none did). Added after the
 * first WAL format, so optional: older rows decode, and the runtime-event projection reads ids from here.
 */
const closes = {
  attempt_id: z.string().nullable().optional(),
  run_id: z.string().nullable().optional(),
};

/**
 * The task record fields as task_created stores them: absent in WALs written before they existed (apply reads
 * them as null), and `acceptance` a string in WALs from before it became an object. Decoding adds nothing, so a
 * stored row reads back exactly as written.
 */
const storedRecordFields = {
  ...Object.fromEntries(Object.entries(TaskRecordFieldsSchema.shape).map(([k, v]) => [k, (v as z.ZodNullable<z.ZodType>).optional()])),
  acceptance: StoredAcceptanceSchema.nullable().optional(),
} as { [K in keyof typeof TaskRecordFieldsSchema.shape]: z.ZodOptional<(typeof TaskRecordFieldsSchema.shape)[K]> } & {
  acceptance: z.ZodOptional<z.ZodNullable<typeof StoredAcceptanceSchema>>;
};

/** The task as task_created records it: the orchestrator's fields (status, times and creator come from the event). */
export const CreatedTaskSchema = TaskSchema.pick({
  task_id: true,
  wal_name: true,
  title: true,
  summary: true,
  step_lease_timeout_ms: true,
}).extend({ ...storedRecordFields, origin: TaskOriginSchema.optional(), delegated_from: DelegatedFromSchema.optional() });

/** A step as recorded by task_created and add_step: defaults filled in (no retry policy in WALs from before them). */
export const RecordedStepSchema = StepInputSchema.required().extend({ retry_policy: RetryPolicySchema.optional(), delegate: DelegateSchema.optional() });

/**
 * What the retry policy made of an attempt that ended failed, timed_out or lost: retried at `retry_at`, or
 * (retry_at null) exhausted after `attempts` of `max_attempts`, the step then failed with retry_exhausted.
 */
export const RetryOutcomeSchema = z.object({
  attempts: z.number().int().positive(),
  max_attempts: z.number().int().positive(),
  retry_at: TimestampSchema.nullable(),
});
/** Every WAL event. */
export const WalEventSchema = z.discriminatedUnion("event_type", [
  event("task_created", z.object({ task: CreatedTaskSchema, steps: z.array(RecordedStepSchema) })),
  event(
    "task_updated",
    z.object({
      ops: z.array(PatchOpSchema),
      /** Steps changed while a run held them ("updated after dispatch"). */
      updated_after_dispatch: z.array(z.object({ step_id: IdSchema, run_id: z.string() })),
    }),
  ),
  event("task_running", z.object({})),
  event("task_blocked", reasonOnly),
  event("task_reopened", reasonOnly),
  event("task_completed", reasonOnly),
  event("task_failed", reasonOnly),
  event("task_cancelled", reasonOnly),
  event("task_step_ready", z.object({})),
  /** A ready step whose dependencies an update made incomplete goes back to pending. */
  event("task_step_pending", z.object({ reason: z.string() })),
  event(
    "task_step_claimed",
    z.object({
      run_id: z.string(),
      agent_id: z.string(),
      attempt_id: z.string(),
      attempt_ordinal: z.number().int().positive(),
      lease_expires_at: TimestampSchema,
      step_snapshot: StepSnapshotSchema,
    }),
  ),
  event("task_step_started", z.object({ lease_expires_at: TimestampSchema.nullable(), result_summary: TextSchema.nullable(), artifact_ids: ArtifactIdsSchema.nullable() })),
  event("task_step_updated", z.object({ lease_expires_at: TimestampSchema.nullable(), result_summary: TextSchema.nullable(), artifact_ids: ArtifactIdsSchema.nullable() })),
  event("task_step_blocked", z.object({ reason: TextSchema.nullable(), result_summary: TextSchema.nullable(), artifact_ids: ArtifactIdsSchema.nullable(), ...closes })),
  event("task_step_completed", z.object({ result_summary: TextSchema.nullable(), artifact_ids: ArtifactIdsSchema.nullable(), ...closes })),
  event(
    "task_step_failed",
    z.object({
      reason: TextSchema.nullable(),
      result_summary: TextSchema.nullable(),
      artifact_ids: ArtifactIdsSchema.nullable(),
      /** How the open attempt, if any, ends: failed, cancelled (task-level stop, worker cancelled) or timed_out. */
      attempt_status: AttemptStatusSchema,
      ...closes,
      /** Set when a retry policy applied to the attempt that ended (added with retry policies, so optional). */
      retry: RetryOutcomeSchema.optional(),
    }),
  ),
  event("task_step_cancelled", z.object({ reason: TextSchema.nullable(), ...closes })),
  /** `by_retry_policy`: the runtime reopened it on the orchestrator's behalf; otherwise the orchestrator did, which restarts the policy's count. */
  event("task_step_reopened", z.object({ reason: TextSchema.nullable(), by_retry_policy: z.literal(true).optional(), on_behalf_of_agent_id: z.string().optional() })),
  event(
    "task_step_lease_expired",
    z.object({ run_id: z.string(), attempt_id: z.string(), lease_expires_at: TimestampSchema, retry: RetryOutcomeSchema.optional() }),
  ),
  event("task_paused", reasonOnly),
  event("task_resumed", reasonOnly),
  /** A person is asked (runtime event action.required): the envelope's step_id is the step it holds up (null: task-level). */
  event(
    "action_requested",
    z.object({
      action_id: z.string(),
      kind: ActionKindSchema,
      prompt: TextSchema,
      input_schema: z.record(z.string(), z.unknown()).nullable(),
      expires_at: TimestampSchema,
      attempt_id: z.string().nullable(),
      run_id: z.string().nullable(),
    }),
  ),
  /**
   * An action is resolved (runtime event action.resolved): who (the envelope's actor and `resolved_by_role`),
   * when (created_at), the decision and the input. `lease_expires_at`: the lease of the step it held up,
   * restarted from now (null when no claim waited).
   */
  event(
    "action_resolved",
    z.object({
      action_id: z.string(),
      decision: z.enum(["approved", "rejected", "submitted", "expired", "withdrawn"]),
      input: JsonValueSchema.nullable(),
      comment: TextSchema.nullable(),
      resolved_by_role: z.string(),
      lease_expires_at: TimestampSchema.nullable(),
    }),
  ),
  /**
   * A ready delegated step is taken up by the runtime itself: a run of its own (agent `runtime`), an attempt, and
   * the delegation record whose outbound work (create the child, send to the peer) the task's alarm performs.
   */
  event(
    "step_delegated",
    z.object({
      delegation_id: z.string(),
      run_id: z.string(),
      attempt_id: z.string(),
      attempt_ordinal: z.number().int().positive(),
      kind: z.enum(["task", "a2a"]),
      child_task_id: IdSchema.nullable(),
      agent_card_ref: z.string().nullable(),
      message: TextSchema.nullable(),
      deadline_at: TimestampSchema.nullable(),
      step_snapshot: StepSnapshotSchema,
    }),
  ),
  /** A delegate's remote refs or status changed (each change a fact); a successful outbound call also resets its tries. */
  event(
    "delegation_updated",
    z.object({
      delegation_id: z.string(),
      status: z.enum(DELEGATION_STATUSES).optional(),
      remote_task_id: z.string().optional(),
      remote_context_id: z.string().nullable().optional(),
      remote_status: z.string().nullable().optional(),
      delivery_mechanism: z.enum(["callback", "polling", "streaming"]).optional(),
      remote_artifact_refs: z.array(z.string()).optional(),
      input_action_id: z.string().nullable().optional(),
      remote_action_id: z.string().nullable().optional(),
      cancel_sent: z.literal(true).optional(),
    }),
  ),
  /** An outbound call of a delegation failed; the next try is due at `next_try_at`. */
  event("delegation_try_failed", z.object({ delegation_id: z.string(), intent: z.string(), error: TextSchema, tries: z.number().int().positive(), next_try_at: TimestampSchema })),
  /** The step's claim ended while its delegate was live: the delegate is to be told to stop. */
  event("delegation_cancel_requested", z.object({ delegation_id: z.string(), reason: z.string() })),
  /**
   * The delegation's attempt ended (`outcome`); the step events that settle the step follow in the same decision.
   * `cleanup`: the delegate may still run (a timeout, a lost peer) and is told to stop (status cancelling).
   */
  event(
    "delegation_settled",
    z.object({ delegation_id: z.string(), outcome: DelegationOutcomeSchema, reason: z.string().nullable(), remote_status: z.string().nullable(), cleanup: z.boolean() }),
  ),
  /** Nothing more is owed to or awaited from the delegate. */
  event("delegation_closed", z.object({ delegation_id: z.string(), reason: z.string() })),
  /** Events of this commit are owed to these subscriptions (queued in the same commit as the events they carry). */
  event("webhook_deliveries_queued", z.object({ deliveries: z.array(QueuedDeliverySchema) })),
  /**
   * Tries of deliveries were answered (or not): each one's outcome as decided — delivered, pending again until
   * `next_attempt_at`, or failed — so replay never reads the configured tries or backoff. A delivered one leaves the
   * task's memory (its subscription's count keeps it).
   */
  event(
    "webhook_deliveries_tried",
    z.object({
      tries: z.array(
        z.object({
          delivery_id: DeliveryIdSchema,
          /** The delivery's subscription and event, so each fact is a whole row of the session's delivery list. */
          webhook_id: z.string(),
          event_id: z.string(),
          event_type: z.string(),
          status: WebhookDeliveryStatusSchema,
          attempts: z.number().int().positive(),
          status_code: z.number().int().nullable(),
          error: TextSchema.nullable(),
          next_attempt_at: TimestampSchema.nullable(),
        }),
      ),
    }),
  ),
  /** A failed delivery is owed again from now, its tries counted afresh (someone asked for it). */
  event("webhook_delivery_retried", z.object({ delivery_id: DeliveryIdSchema, webhook_id: z.string(), event_id: z.string(), event_type: z.string() })),
  /** A child task's result reached its parent (delivered), or could not (failed, parent_missing). */
  event("task_delivery_recorded", z.object({ delivery_state: DeliveryStateSchema, detail: TextSchema.nullable() })),
  event(
    "task_progress",
    z.object({
      phase: z.string().nullable(),
      summary: TextSchema.nullable(),
      counters: z.record(z.string(), z.number()).nullable(),
      output_refs: z.array(z.string()).nullable(),
      lease_expires_at: TimestampSchema.nullable(),
    }),
  ),
  event(
    "worker_dispatched",
    z.object({
      run_id: z.string(),
      agent_id: z.string(),
      worker_pool_id: IdSchema,
      allowed_step_ids: z.array(IdSchema).nullable(),
      max_steps: z.number().int().positive(),
      deadline_at: TimestampSchema.nullable(),
    }),
  ),
  /**
   * agent.task_fail/agent.task_cancel first asks each live run to cancel, then ends the steps and the task.
   * The run stays open (cancelling) until it finishes or `deadline_at` passes; the deadline is recorded here so
   * replay never reads configuration.
   */
  event(
    "worker_run_cancel_requested",
    z.object({
      run_id: z.string(),
      /** task_failed or task_cancelled. */
      reason: z.string(),
      /** The step the run held, which the same stop ends right after; null when it held none. */
      step_id: IdSchema.nullable(),
      attempt_id: z.string().nullable(),
      deadline_at: TimestampSchema,
    }),
  ),
  /** A run asked to cancel had not ended by its deadline; its worker_run_ended follows. */
  event("child_agent_cancel_timeout", z.object({ run_id: z.string(), reason: z.string(), deadline_at: TimestampSchema })),
  event(
    "worker_run_ended",
    z.object({
      run_id: z.string(),
      status: z.enum(["finished", "cancelled", "timed_out"]),
      reason: z.string(),
      result: z.unknown().nullable(),
      /** True when an earlier worker_run_cancel_requested asked for this end (added later, so optional). */
      cancel_requested: z.literal(true).optional(),
    }),
  ),
  /** The tasks that block this one, as the session's graph pushed them at `version` (set_blockers). */
  event("task_blockers_updated", z.object({ version: z.number().int().positive(), blocked_by: z.array(IdSchema) })),
  /**
   * A terminal task left active scheduling (its normalized status becomes archived); `delete_after`: when its storage
   * goes (archived_at + RETENTION_DAYS), null to keep it forever.
   */
  event("task_archived", z.object({ reason: TextSchema.nullable(), delete_after: TimestampSchema.nullable() })),
]);
