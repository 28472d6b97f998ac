/**
 * @module Zod schemas of delegated steps: the delegate a step names, one attempt's delegation with the remote
 * task's refs, and a child task's link to its parent. Their types are in model/delegation-records.ts.
 */
import { z } from "zod";
import { DELEGATION_STATUSES } from "../model/statuses.js";
import { IdSchema, RetryPolicySchema, TextSchema, TimestampSchema, TitleSchema } from "./record-basics.js";

/**
 * A delegated step's work: a child task in the same session, planned and run like any
 * task, or a task of an A2A peer. The runtime itself holds such a step while the delegate works.
 */
export const DelegateSchema = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("task"),
    /** The child task: its title, summary and steps (which may delegate in turn). */
    get task() {
      return ChildTaskSpecSchema;
    },
    /** How long the child may take before the attempt ends timed_out; none by default. */
    timeout_ms: z.number().int().min(1_000).max(30 * 86_400_000).optional(),
  }),
  z.strictObject({
    kind: z.literal("a2a"),
    /** The peer's Agent Card URL; its host must be in OUTBOUND_ALLOWLIST. */
    agent_card_url: z.url({ protocol: /^https?$/ }).max(2_000),
    /** The text sent to the peer; by default the step's title and summary. */
    message: TextSchema.min(1).optional(),
    /** How long the peer may take before the attempt ends timed_out (default DELEGATE_TIMEOUT_MS). */
    timeout_ms: z.number().int().min(1_000).max(30 * 86_400_000).optional(),
  }),
]);
/** A child task as a `delegate` of kind task describes it: its steps are written as any task's are. */
export const ChildTaskSpecSchema: z.ZodType<ChildTaskSpec> = z.lazy(() =>
  z.strictObject({
    title: TitleSchema,
    summary: TextSchema.optional(),
    objective: TextSchema.optional(),
    steps: z.array(StepInputSchema).max(10_000),
  }),
);
/** A child task's description. */
export interface ChildTaskSpec {
  title: string;
  summary?: string | undefined;
  objective?: string | undefined;
  steps: ChildStep[];
}
/** A step as the orchestrator writes it (in task_create, add_step, or a child task's description). */
export interface ChildStep {
  step_id: string;
  title: string;
  summary: string;
  depends_on_step_ids: string[];
  required?: boolean | undefined;
  worker_pool_id?: string | undefined;
  retry_policy?: z.infer<typeof RetryPolicySchema> | null | undefined;
  delegate?: z.infer<typeof DelegateSchema> | undefined;
}

/** A step as the orchestrator writes it in task_create or add_step (and in a child task's description). */
export const StepInputSchema = z.strictObject({
  step_id: IdSchema,
  title: TitleSchema,
  summary: TextSchema,
  depends_on_step_ids: z.array(IdSchema).max(10_000),
  required: z.boolean().optional(),
  worker_pool_id: IdSchema.optional(),
  /** null or absent: the task's default_retry_policy, if any. */
  retry_policy: RetryPolicySchema.nullable().optional(),
  /** The runtime runs the step through this delegate (a child task, an A2A peer's task) instead of a worker. */
  get delegate() {
    return DelegateSchema.optional();
  },
});

/** How a delegation's attempt ended. */
export const DelegationOutcomeSchema = z.enum(["completed", "failed", "cancelled", "timed_out", "lost"]);

/**
 * One attempt of a delegated step: the local wrapper of the delegate's task (a child task, or an A2A peer's
 * task), with the remote task's refs. Every field changes by a WAL event only.
 */
export const DelegationSchema = z.object({
  delegation_id: z.string(),
  step_id: IdSchema,
  attempt_id: z.string(),
  run_id: z.string(),
  kind: z.enum(["task", "a2a"]),
  /** `agent-task` for a child task of this runtime, `a2a` for a peer. */
  native_protocol: z.enum(["agent-task", "a2a"]),
  /** The child task's id (kind task), chosen when the delegation starts so every retry names the same child. */
  child_task_id: IdSchema.nullable(),
  /** The peer's Agent Card URL (kind a2a). */
  agent_card_ref: z.string().nullable(),
  /** The text sent to the peer (kind a2a). */
  message: TextSchema.nullable(),
  remote_task_id: z.string().nullable(),
  remote_context_id: z.string().nullable(),
  /** How the runtime learns of the delegate's progress: `callback` (a child reports), `polling` or `streaming`. */
  delivery_mechanism: z.enum(["callback", "polling", "streaming"]).nullable(),
  /** The delegate's own status before normalization (a child's native status, a peer's TaskState). */
  remote_status: z.string().nullable(),
  remote_artifact_refs: z.array(z.string()),
  status: z.enum(DELEGATION_STATUSES),
  outcome: DelegationOutcomeSchema.nullable(),
  /** The open input action that carries a peer's question (kind a2a, status input_required or answering). */
  input_action_id: z.string().nullable(),
  /** The peer's own id of that question, when its status message gave one: our answer names it (`metadata.actionId`). */
  remote_action_id: z.string().nullable().optional(),
  /** Failed tries of the current outbound call, and when the next one is due. */
  tries: z.number().int().nonnegative(),
  next_try_at: TimestampSchema.nullable(),
  last_error: z.string().nullable(),
  /** Set once the delegate acknowledged the cancellation; then only its final report is awaited. */
  cancel_sent_at: TimestampSchema.nullable(),
  deadline_at: TimestampSchema.nullable(),
  created_at: TimestampSchema,
  updated_at: TimestampSchema,
  closed_at: TimestampSchema.nullable(),
});
/** A child task's link back to the delegation that created it. */
export const DelegatedFromSchema = z.object({ task_id: IdSchema, step_id: IdSchema, delegation_id: z.string().min(1).max(128) });

/** Whether a child task's result reached its parent (`delivery_state`): pending until the parent recorded it (or is gone). */
export const DeliveryStateSchema = z.enum(["pending", "delivered", "failed", "parent_missing"]);
