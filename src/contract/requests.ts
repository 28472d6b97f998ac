/**
 * @module Request bodies and queries of the HTTP API that the SDK types its calls with (z.input for what a
 * caller sends, z.output for a parsed query) and the routes validate with. Derived from the core's command
 * schemas, so the routes, the OpenAPI catalog and the SDK have one source. Schemas only the routes use
 * (claim bodies, batches, task pages, event streams) are in routes/http/schemas.ts.
 */
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
  RequestActionSchema,
  RespondActionSchema,
  StepStatusSchema,
  TextSchema,
  UpdateStepSchema,
  UpdateTaskSchema,
} from "../core/index.js";
import { MAX_ACTION_PAGE_LIMIT, MAX_ACTION_WAIT_MS, MAX_STEP_QUERY_LIMIT, MAX_TASK_LIST_LIMIT, MAX_WAL_PAGE_LIMIT } from "./limits.js";

/** POST /v1/sessions. */
export const CreateSessionBody = z.strictObject({
  session_id: IdSchema.optional(),
  orchestrator_agent_id: z.string().min(1).max(128).optional(),
  metadata: JsonObjectSchema.optional(),
});

/** POST /v1/sessions/{sid}/tokens. */
export const MintTokenBody = z.strictObject({
  role: z.enum(["orchestrator", "observer", "approver", "a2a_client"]),
  agent_id: z.string().min(1).max(128).optional(),
  ttl_seconds: z.number().int().min(60).max(30 * 86_400).optional(),
});

/** POST /v1/sessions/{sid}/tasks (agent.task_create). */
export const CreateTaskBody = CreateTaskSchema.omit({ type: true, delegated_from: true });
/** PATCH .../tasks/{tid} (agent.task_update). */
export const UpdateTaskBody = UpdateTaskSchema.omit({ type: true });
/** POST .../complete, /fail, /cancel, /block, /reopen, /pause, /resume. */
export const ReasonBody = BlockTaskSchema.omit({ type: true });
/** POST .../workers (agent.dispatch_worker). */
export const DispatchWorkerBody = DispatchWorkerSchema.omit({ type: true });
/** POST .../runs/{run}/finish. */
export const FinishRunBody = FinishRunSchema.omit({ type: true, run_id: true });
/** POST .../runs/{run}/cancel. */
export const CancelRunBody = CancelRunSchema.omit({ type: true, run_id: true });
/** POST .../steps/{step}/status (agent.task_update_step), optionally claiming the next step. */
export const UpdateStepBody = UpdateStepSchema.omit({ type: true, step_id: true }).extend({ claim_next: z.boolean().optional() });
/** POST .../steps/{step}/progress (agent.task_progress). */
export const ProgressBody = AppendProgressSchema.omit({ type: true, step_id: true });
/** POST .../steps/{step}/actions and POST .../actions (agent.request_action): the step, if any, is the path's. */
export const RequestActionBody = RequestActionSchema.omit({ type: true, step_id: true });
/** POST .../actions/{action_id}/respond (agent.respond_action). */
export const RespondActionBody = RespondActionSchema.omit({ type: true, action_id: true });

/** An origin as a URL serialises it: `http(s)://host[:port]`, lowercase, no path, no default port (also the peer's key in DELETE …/peers/{origin}). */
export const OriginSchema = z
  .string()
  .max(2_048)
  .refine((value) => {
    try {
      const url = new URL(value);
      return (url.protocol === "http:" || url.protocol === "https:") && url.origin === value;
    } catch {
      return false;
    }
  }, "must be an origin: http(s)://host[:port], lowercase, without a path or a trailing slash");

/** POST /v1/sessions/{sid}/peers: the Authorization value delegated steps send to one A2A peer origin. */
export const SetPeerCredentialBody = z.strictObject({
  origin: OriginSchema,
  // A header value: printable ASCII, so it cannot carry a line break into a request.
  authorization: z.string().min(1).max(4_096).regex(/^[\x20-\x7e]+$/, "must be printable ASCII (a header value)"),
});

/** A `true`/`false` query parameter. */
export const boolParam = z.enum(["true", "false"]).transform((v) => v === "true").pipe(z.boolean());
/** A whole-number query parameter within `min`..`max`. */
export const intParam = (min: number, max: number) => z.string().regex(/^\d+$/, "must be a whole number").transform(Number).pipe(z.number().int().min(min).max(max));

/** GET /v1/sessions/{sid} query: `blocked_after` pages on through the held-up tasks (the `next` of the snapshot's pages.blockedTasks). */
export const SessionSnapshotQueryParams = z.strictObject({
  blocked_after: intParam(0, Number.MAX_SAFE_INTEGER).optional(),
  access_token: z.string().optional(),
});

/** GET /v1/sessions/{sid}/tasks query. */
export const TaskListQueryParams = z.strictObject({
  include_terminal: boolParam.optional(),
  /** Archived tasks too (left out otherwise, include_terminal or not). */
  include_archived: boolParam.optional(),
  status: z.string().max(32).optional(),
  limit: intParam(1, MAX_TASK_LIST_LIMIT).optional(),
  offset: intParam(0, 1_000_000).optional(),
  access_token: z.string().optional(),
});

/** GET .../steps query (agent.task_query_steps); `status` may repeat or be comma-separated. */
export const StepQueryParams = z.strictObject({
  status: z.array(StepStatusSchema).optional(),
  worker_pool_id: IdSchema.optional(),
  claimed_by_agent_id: z.string().max(128).optional(),
  include_terminal_steps: boolParam.optional(),
  limit: intParam(1, MAX_STEP_QUERY_LIMIT).optional(),
  offset: intParam(0, 1_000_000).optional(),
  access_token: z.string().optional(),
});

/**
 * GET .../wal query. `limit`: 1–MAX_WAL_PAGE_LIMIT events (default 1,000), or `all` for every event after
 * `after_seq` up to the task's last wal_seq when the request arrives, in one streamed answer.
 */
export const WalQueryParams = z.strictObject({
  after_seq: intParam(0, Number.MAX_SAFE_INTEGER).optional(),
  limit: z
    .union([z.literal("all"), intParam(1, MAX_WAL_PAGE_LIMIT)])
    .describe(`Most events to answer: 1–${MAX_WAL_PAGE_LIMIT} (default 1000), or "all" for the whole WAL after after_seq (up to x-last-wal-seq), streamed`)
    .optional(),
  access_token: z.string().optional(),
});

/** GET .../summary query. */
export const SummaryQueryParams = z.strictObject({
  token_budget: intParam(100, 100_000).optional(),
  access_token: z.string().optional(),
});

/** What an action id may be: what the runtime mints (`act_` and a lowercase ULID) or anything as plain. */
export const ACTION_ID_PATTERN = /^[a-z0-9_-]{1,128}$/;
/** An action id in a path. */
export const ActionIdParam = z.string().regex(ACTION_ID_PATTERN, "must be an action id");

/** GET .../tasks/{tid}/actions query (agent.task_actions). */
export const ActionListQueryParams = z.strictObject({
  status: z.enum(["open", "resolved"]).optional(),
  limit: intParam(1, MAX_ACTION_PAGE_LIMIT).optional(),
  offset: intParam(0, 1_000_000).optional(),
  access_token: z.string().optional(),
});

/** GET .../tasks/{tid}/actions/{action_id} query (agent.task_action): `wait_ms` long-polls for the resolution. */
export const ActionGetQueryParams = z.strictObject({
  wait_ms: intParam(0, MAX_ACTION_WAIT_MS).optional(),
  access_token: z.string().optional(),
});

/** GET /v1/sessions/{sid}/actions query (the session's inbox): open actions only. */
export const SessionActionsQueryParams = z.strictObject({
  status: z.literal("open").optional(),
  limit: intParam(1, MAX_ACTION_PAGE_LIMIT).optional(),
  offset: intParam(0, 1_000_000).optional(),
  access_token: z.string().optional(),
});

/** Kinds of task graph edges link_tasks writes (docs/model.md "The task graph"). */
export const LINK_KINDS = ["parent_child", "blocks", "source_task", "source_attempt", "produced_artifact", "consumed_artifact", "evidence"] as const;
/** A kind of task graph edge. */
export type LinkKind = (typeof LINK_KINDS)[number];
/** Kinds whose edge joins two tasks of the session: to_task_id is required. */
export const TASK_TO_TASK_KINDS: ReadonlySet<LinkKind> = new Set(["parent_child", "blocks", "source_task", "source_attempt"]);
/** Kinds that name something besides a task (a run or attempt id, an artifact or evidence ref): ref is required. */
export const REF_KINDS: ReadonlySet<LinkKind> = new Set(["source_attempt", "produced_artifact", "consumed_artifact", "evidence"]);

/**
 * POST /v1/sessions/{sid}/links (link_tasks): an edge from `from_task_id`. parent_child, blocks and source_task
 * join two tasks; source_attempt names a task and one of its runs or attempts (`ref`); the artifact and evidence
 * kinds name a ref and optionally a task. A task never links to itself.
 */
export const LinkTasksBody = z
  .strictObject({
    kind: z.enum(LINK_KINDS),
    from_task_id: IdSchema,
    to_task_id: IdSchema.optional(),
    ref: z.string().min(1).max(512).optional(),
    reason: TextSchema.optional(),
    metadata: JsonObjectSchema.optional(),
  })
  .superRefine((body, ctx) => {
    if (TASK_TO_TASK_KINDS.has(body.kind) && body.to_task_id === undefined) ctx.addIssue({ code: "custom", path: ["to_task_id"], message: `a ${body.kind} link needs to_task_id` });
    if (REF_KINDS.has(body.kind) && body.ref === undefined) ctx.addIssue({ code: "custom", path: ["ref"], message: `a ${body.kind} link needs ref` });
    if (body.to_task_id !== undefined && body.to_task_id === body.from_task_id) ctx.addIssue({ code: "custom", path: ["to_task_id"], message: "a task cannot be linked to itself" });
  });
/** What link_tasks takes. */
export type LinkTasksInput = z.output<typeof LinkTasksBody>;

/** The most nodes one page of GET /v1/sessions/{sid}/graph holds. */
export const MAX_GRAPH_PAGE_LIMIT = 1_000;
/** Nodes per graph page when `limit` is not given. */
export const DEFAULT_GRAPH_PAGE_LIMIT = 100;

/** GET /v1/sessions/{sid}/graph query: nodes by task_id, a page at a time (`cursor` from the last page's next_cursor). */
export const GraphQueryParams = z.strictObject({
  limit: intParam(1, MAX_GRAPH_PAGE_LIMIT).optional(),
  cursor: z.string().min(1).max(512).optional(),
  access_token: z.string().optional(),
});

/** Most tokens one page of GET /v1/sessions/{sid}/tokens lists. */
export const MAX_TOKEN_PAGE_LIMIT = 1_000;
/** Tokens per page of GET /v1/sessions/{sid}/tokens when `limit` is not given. */
export const DEFAULT_TOKEN_PAGE_LIMIT = 100;

/** GET /v1/sessions/{sid}/tokens query: a page of live tokens after `cursor` (a token id). */
export const TokenListQueryParams = z.strictObject({
  limit: intParam(1, MAX_TOKEN_PAGE_LIMIT).optional(),
  cursor: z.string().regex(/^\d{1,15}$/, "must be the next_cursor of an earlier page").optional(),
});
