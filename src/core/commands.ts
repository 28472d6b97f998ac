/** @module Zod schemas of the commands `decide` accepts (seed 003 tools and seed 001 control plane). */
import { z } from "zod";
import { JsonObjectSchema, JsonValueSchema } from "./json-bounds.js";
import {
  ArtifactIdsSchema,
  IdSchema,
  StepStatusSchema,
  TextSchema,
  TitleSchema,
} from "./records.js";

/** A step as the orchestrator writes it in task_create or add_step. */
export const StepInputSchema = z.strictObject({
  step_id: IdSchema,
  title: TitleSchema,
  summary: TextSchema,
  depends_on_step_ids: z.array(IdSchema).max(10_000),
  required: z.boolean().optional(),
  worker_pool_id: IdSchema.optional(),
});
/** A step as the orchestrator writes it. */
export type StepInput = z.infer<typeof StepInputSchema>;

const reason = TextSchema.optional();

/** Fields `update_step` may change (never status or results). */
export const StepFieldsSchema = z
  .strictObject({
    title: TitleSchema.optional(),
    summary: TextSchema.optional(),
    depends_on_step_ids: z.array(IdSchema).max(10_000).optional(),
    required: z.boolean().optional(),
    worker_pool_id: IdSchema.optional(),
  })
  .refine((f) => Object.keys(f).length > 0, "fields must change at least one of title, summary, depends_on_step_ids, required, worker_pool_id");

/** One structured patch operation of agent.task_update (003 "agent.task_update"). */
export const PatchOpSchema = z.discriminatedUnion("op", [
  z.strictObject({ op: z.literal("update_task"), title: TitleSchema.optional(), summary: TextSchema.optional(), reason }),
  z.strictObject({ op: z.literal("add_step"), step: StepInputSchema, reason }),
  z.strictObject({ op: z.literal("update_step"), step_id: IdSchema, fields: StepFieldsSchema, reason }),
  z.strictObject({ op: z.literal("delete_step"), step_id: IdSchema, reason }),
  z.strictObject({ op: z.literal("add_dependency"), step_id: IdSchema, depends_on_step_id: IdSchema, reason }),
  z.strictObject({ op: z.literal("remove_dependency"), step_id: IdSchema, depends_on_step_id: IdSchema, reason }),
  z.strictObject({ op: z.literal("cancel_step"), step_id: IdSchema, reason }),
  z.strictObject({ op: z.literal("reopen_step"), step_id: IdSchema, reason }),
]);
/** One patch operation. */
export type PatchOp = z.infer<typeof PatchOpSchema>;

/** agent.task_create: the whole DAG. */
export const CreateTaskSchema = z.strictObject({
  type: z.literal("create_task"),
  task_id: IdSchema,
  wal_name: IdSchema,
  title: TitleSchema,
  summary: TextSchema.default(""),
  steps: z.array(StepInputSchema).max(10_000),
  objective: TextSchema.optional(),
  task_kind: z.string().max(64).optional(),
  priority: z.number().int().optional(),
  acceptance: TextSchema.optional(),
  parent_task_id: z.string().max(200).optional(),
  metadata: JsonObjectSchema.optional(),
  step_lease_timeout_ms: z.number().int().min(1_000).max(86_400_000).optional(),
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

/** append_task_progress (seed 001): progress facts; renews the caller's lease. */
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

/** A worker run ends; a still-held step gets 003's fallback. */
export const FinishRunSchema = z.strictObject({
  type: z.literal("finish_run"),
  run_id: z.string().min(1).max(128),
  outcome: RunOutcomeSchema,
  result: JsonValueSchema.optional(),
});

/** The orchestrator cancels a worker run. */
export const CancelRunSchema = z.strictObject({ type: z.literal("cancel_run"), run_id: z.string().min(1).max(128), reason });

/** Expire leases and worker-run deadlines that are due at `ctx.now`. */
export const ReconcileLeasesSchema = z.strictObject({ type: z.literal("reconcile_leases") });

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
  ReconcileLeasesSchema,
]);
/** Every command `decide` accepts. */
export type Command = z.infer<typeof CommandSchema>;
/** The command of one type. */
export type CommandOf<T extends Command["type"]> = Extract<Command, { type: T }>;

/** agent.task_query_steps filters (a read, not a command). */
export const StepQuerySchema = z.strictObject({
  statuses: z.array(StepStatusSchema).optional(),
  worker_pool_id: IdSchema.optional(),
  claimed_by_agent_id: z.string().optional(),
  include_terminal_steps: z.boolean().optional(),
  limit: z.number().int().min(1).max(1_000).optional(),
  offset: z.number().int().min(0).optional(),
});
/** agent.task_query_steps filters. */
export type StepQuery = z.infer<typeof StepQuerySchema>;
