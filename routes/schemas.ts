/** @module HTTP body and query schemas, derived from the core's command schemas (one source for routes and docs). */
import { z } from "zod";
import {
  AppendProgressSchema,
  BlockTaskSchema,
  CancelRunSchema,
  CreateTaskSchema,
  DispatchWorkerSchema,
  FinishRunSchema,
  IdSchema,
  JsonObjectSchema,
  StepStatusSchema,
  TASK_CURSOR_PATTERN,
  TASK_PAGE_LIMIT,
  UpdateStepSchema,
  UpdateTaskSchema,
} from "../src/core/index.js";

/** POST /v1/sessions. */
export const CreateSessionBody = z.strictObject({
  session_id: IdSchema.optional(),
  orchestrator_agent_id: z.string().min(1).max(128).optional(),
  metadata: JsonObjectSchema.optional(),
});

/** POST /v1/sessions/{sid}/tokens. */
export const MintTokenBody = z.strictObject({
  role: z.enum(["orchestrator", "observer"]),
  agent_id: z.string().min(1).max(128).optional(),
  ttl_seconds: z.number().int().min(60).max(30 * 86_400).optional(),
});

/** POST /v1/sessions/{sid}/tasks (agent.task_create). */
export const CreateTaskBody = CreateTaskSchema.omit({ type: true });
/** PATCH .../tasks/{tid} (agent.task_update). */
export const UpdateTaskBody = UpdateTaskSchema.omit({ type: true });
/** POST .../complete, /fail, /cancel, /block, /reopen. */
export const ReasonBody = BlockTaskSchema.omit({ type: true });
/** POST .../workers (agent.dispatch_worker). */
export const DispatchWorkerBody = DispatchWorkerSchema.omit({ type: true });
/** POST .../runs/{run}/finish. */
export const FinishRunBody = FinishRunSchema.omit({ type: true, run_id: true });
/** POST .../runs/{run}/cancel. */
export const CancelRunBody = CancelRunSchema.omit({ type: true, run_id: true });
/** POST .../steps/{step}/status (agent.task_update_step), optionally claiming the next step. */
export const UpdateStepBody = UpdateStepSchema.omit({ type: true, step_id: true }).extend({ claim_next: z.boolean().optional() });
/** POST .../steps/{step}/progress (append_task_progress). */
export const ProgressBody = AppendProgressSchema.omit({ type: true, step_id: true });
/** POST .../steps/{step}/claim and /steps/claim-next take no fields. */
export const EmptyBody = z.strictObject({});

const boolParam = z.enum(["true", "false"]).transform((v) => v === "true");
const intParam = (min: number, max: number) => z.string().regex(/^\d+$/, "must be a whole number").transform(Number).pipe(z.number().int().min(min).max(max));

/** GET /v1/sessions/{sid}/tasks query. */
export const TaskListQueryParams = z.strictObject({
  include_terminal: boolParam.optional(),
  status: z.string().max(32).optional(),
  limit: intParam(1, 500).optional(),
  offset: intParam(0, 1_000_000).optional(),
  access_token: z.string().optional(),
});

/**
 * GET .../tasks/{tid} query (agent.task_get): at most `limit` steps, runs and attempts each (default and most
 * 1,000), from `cursor` (a `page.next_cursor`). Without either, a task that fits one page is answered whole.
 */
export const TaskGetQueryParams = z.strictObject({
  limit: intParam(1, TASK_PAGE_LIMIT).optional(),
  cursor: z.string().regex(TASK_CURSOR_PATTERN, "must be a page.next_cursor this route sent").optional(),
  access_token: z.string().optional(),
});

/** GET .../steps query (agent.task_query_steps); `status` may repeat or be comma-separated. */
export const StepQueryParams = z.strictObject({
  status: z.array(StepStatusSchema).optional(),
  worker_pool_id: IdSchema.optional(),
  claimed_by_agent_id: z.string().max(128).optional(),
  include_terminal_steps: boolParam.optional(),
  limit: intParam(1, 1_000).optional(),
  offset: intParam(0, 1_000_000).optional(),
  access_token: z.string().optional(),
});

/** GET .../wal query. */
export const WalQueryParams = z.strictObject({
  after_seq: intParam(0, Number.MAX_SAFE_INTEGER).optional(),
  limit: intParam(1, 10_000).optional(),
  access_token: z.string().optional(),
});

/** GET .../events and GET /v1/sessions/{sid}/events query (a Last-Event-ID header wins over after_seq). */
export const EventsQueryParams = z.strictObject({
  after_seq: intParam(0, Number.MAX_SAFE_INTEGER).optional(),
  access_token: z.string().optional(),
});

/** GET .../summary query. */
export const SummaryQueryParams = z.strictObject({
  token_budget: intParam(100, 100_000).optional(),
  access_token: z.string().optional(),
});

/** Most commands one batch may carry. */
export const MAX_BATCH_COMMANDS = 256;

/** POST .../batch: commands decided in order and written in one transaction, each with its own token. */
export const BatchBody = z.strictObject({
  commands: z
    .array(
      z.strictObject({
        token: z.string().min(1),
        method: z.enum(["POST", "PATCH", "post", "patch"]),
        path: z.string().min(1).max(1_000),
        body: z.record(z.string(), z.unknown()).optional(),
        idempotency_key: z.string().min(1).max(255).optional(),
      }),
    )
    .min(1)
    .max(MAX_BATCH_COMMANDS),
});
