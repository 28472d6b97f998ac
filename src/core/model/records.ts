/**
 * @module The records a task DAG holds (task, step, worker run, attempt, action) as types, with their status
 * lists and rules. Each type is the output of the zod schema the service validates with
 * (../schemas/records.ts), imported as a type only: the two cannot drift, and no zod runs here.
 */
import type { z } from "zod";
import type { RetryPolicySchema } from "../schemas/record-basics.js";
import type {
  AcceptanceSchema,
  ActionDecisionSchema,
  ActionKindSchema,
  ActionSchema,
  AttemptSchema,
  ErrorFactSchema,
  RunCancelRequestSchema,
  StepSchema,
  StepSnapshotSchema,
  TaskOriginSchema,
  TaskRecordFieldsSchema,
  TaskRelationshipSchema,
  TaskSchema,
  WorkerRunSchema,
} from "../schemas/records.js";
import type { DeliveryTrySchema, QueuedDeliverySchema, WebhookDeliveryRecordSchema } from "../schemas/webhook-records.js";

export * from "./statuses.js";
export * from "./delegation-records.js";
/** A webhook delivery as the task holds it (../schemas/webhook-records.ts). */
export type WebhookDeliveryRecord = z.infer<typeof WebhookDeliveryRecordSchema>;
/** One event owed to one subscription, as queued. */
export type QueuedDelivery = z.infer<typeof QueuedDeliverySchema>;
/** What one try of a delivery came to. */
export type DeliveryTry = z.infer<typeof DeliveryTrySchema>;

/** A retry policy (on a step, or the task's default). */
export type RetryPolicy = z.infer<typeof RetryPolicySchema>;

/** Acceptance of a task: criteria for people and models, and artifacts `complete` requires. */
export type Acceptance = z.infer<typeof AcceptanceSchema>;

/** Stored acceptance as the record holds it: a string from an older WAL is its criteria. */
export function acceptanceOf(stored: Acceptance | string | null | undefined): Acceptance | null {
  if (stored === null || stored === undefined) return null;
  return typeof stored === "string" ? { criteria: stored } : stored;
}

/** A structured failure fact. */
export type ErrorFact = z.infer<typeof ErrorFactSchema>;
/** A submitted task's origin. */
export type TaskOrigin = z.infer<typeof TaskOriginSchema>;
/** An edge of the task graph. */
export type TaskRelationship = z.infer<typeof TaskRelationshipSchema>;

/** The orchestrator's task record fields: stored and returned, never interpreted by the scheduler. */
export type TaskRecordFields = z.infer<typeof TaskRecordFieldsSchema>;
/** Names of the orchestrator's task record fields, in the order the schema (and so a task record) holds them. */
export const TASK_RECORD_FIELDS: (keyof TaskRecordFields)[] = [
  "objective",
  "task_kind",
  "task_family",
  "visibility",
  "priority",
  "requested_by",
  "owner",
  "assignee",
  "scope",
  "constraints",
  "task_profile",
  "acceptance",
  "metadata",
  "thread_id",
  "parent_task_id",
  "root_task_id",
  "default_retry_policy",
  "input_refs",
  "relationships",
];

/** The task record. */
export type Task = z.infer<typeof TaskSchema>;
/** A dispatch-time view of a step. */
export type StepSnapshot = z.infer<typeof StepSnapshotSchema>;
/** A step. */
export type Step = z.infer<typeof StepSchema>;
/** A task-level stop's request that a run cancel. */
export type RunCancelRequest = z.infer<typeof RunCancelRequestSchema>;
/** A worker run. */
export type WorkerRun = z.infer<typeof WorkerRunSchema>;
/** An attempt. */
export type Attempt = z.infer<typeof AttemptSchema>;
/** An action kind. */
export type ActionKind = z.infer<typeof ActionKindSchema>;
/** How an action was resolved. */
export type ActionDecision = z.infer<typeof ActionDecisionSchema>;
/** A human action. */
export type Action = z.infer<typeof ActionSchema>;
