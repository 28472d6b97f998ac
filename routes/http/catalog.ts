/** @module The route catalog: every v1 operation with its tool name, roles and schemas; feeds OpenAPI, /v1/tools and the MCP tools. */
import { z } from "zod";
import { ERROR_CODES, MAX_DOCUMENT_DEPTH, MAX_JSON_BYTES, MAX_JSON_DEPTH } from "../../src/core/index.js";
import {
  ActionGetQueryParams,
  ActionListQueryParams,
  CancelRunBody,
  CreateScheduleBody,
  CreateWebhookBody,
  CreateSessionBody,
  CreateTaskBody,
  DispatchWorkerBody,
  FinishRunBody,
  GraphQueryParams,
  LinkTasksBody,
  MintTokenBody,
  ProgressBody,
  ReasonBody,
  RequestActionBody,
  RespondActionBody,
  SessionActionsQueryParams,
  SessionSnapshotQueryParams,
  SetPeerCredentialBody,
  StepQueryParams,
  SummaryQueryParams,
  TaskListQueryParams,
  TokenListQueryParams,
  UpdateStepBody,
  UpdateTaskBody,
  WalQueryParams,
  WebhookDeliveryQueryParams,
} from "../../src/contract/index.js";
import { BatchBody, EmptyBody } from "../../durable-objects/commands/command-schemas.js";
import { EventsQueryParams, TaskGetQueryParams } from "./schemas.js";
import { SchemaDefinitions } from "./schema-definitions.js";

/** Who may call an operation. */
export type Role = "admin" | "orchestrator" | "worker" | "observer" | "approver";

/** One operation of the HTTP API. */
export interface Operation {
  readonly method: "get" | "post" | "patch" | "delete";
  readonly path: string;
  readonly operationId: string;
  /** The task tool (or control-plane command) it implements, by the name agents know it (docs/model.md "Tools"). */
  readonly tool: string;
  readonly roles: readonly Role[];
  readonly summary: string;
  readonly body?: z.ZodType;
  readonly query?: z.ZodType;
  /**
   * A stream rather than one answer: Server-Sent Events or a WebSocket. Listed in OpenAPI, but not in
   * /v1/tools, whose tools an agent calls and reads one answer from.
   */
  readonly stream?: "sse" | "websocket";
}

const S = "/v1/sessions/{sid}";
const T = `${S}/tasks/{tid}`;
/** Every session token may read a task in its scope: an approver reads like an observer. */
const inScope: readonly Role[] = ["orchestrator", "worker", "observer", "approver"];
/** Reads across the session's tasks: not a worker's, whose token reads only its own task (see roleRefusal). */
const sessionWide: readonly Role[] = ["orchestrator", "observer", "approver"];

const SC = `${S}/schedules/{schedule_id}`;
/** Durable schedules (docs/api.md "Schedules"): each occurrence of a cron creates one task, once. */
const SCHEDULE_OPERATIONS: readonly Operation[] = [
  { method: "post", path: `${S}/schedules`, operationId: "createSchedule", tool: "agent.schedule_create", roles: ["orchestrator"], summary: "Create a durable schedule: each occurrence of its cron (5 fields, or 6 with seconds first, in its time zone, within start_at and end_at) creates one task from its template, with task_id {schedule_id}-{yyyymmddthhmmssz} and a schedule_trigger input ref. overlap says what an occurrence does while the previous one's task runs (skip, allow, buffer_one, cancel_previous); an occurrence missed while the runtime was down is started when at most catchup_window_ms late, else counted missed. 409 schedule_conflict for an id already used in the session.", body: CreateScheduleBody },
  { method: "get", path: `${S}/schedules`, operationId: "listSchedules", tool: "agent.schedule_list", roles: sessionWide, summary: "The session's schedules, each with next_run_at, recent_runs and missed." },
  { method: "get", path: SC, operationId: "getSchedule", tool: "agent.schedule_get", roles: sessionWide, summary: "One schedule with next_run_at, recent_runs ({scheduled_at, task_id, outcome, trigger}, newest first), missed and skipped." },
  { method: "post", path: `${SC}/pause`, operationId: "pauseSchedule", tool: "agent.schedule_pause", roles: ["orchestrator"], summary: "Pause a schedule: no occurrence falls until resumed, and none is counted missed; running tasks go on.", body: EmptyBody },
  { method: "post", path: `${SC}/resume`, operationId: "resumeSchedule", tool: "agent.schedule_resume", roles: ["orchestrator"], summary: "Resume a paused schedule from now.", body: EmptyBody },
  { method: "post", path: `${SC}/trigger`, operationId: "triggerSchedule", tool: "agent.schedule_trigger", roles: ["orchestrator"], summary: "Run one occurrence now (the overlap policy applies): 201 with the schedule and the occurrence.", body: EmptyBody },
  { method: "delete", path: SC, operationId: "deleteSchedule", tool: "agent.schedule_delete", roles: ["orchestrator"], summary: "Stop and remove a schedule; the tasks it started are left alone. Its events stream ends with job.cancelled." },
  { method: "get", path: `${SC}/events`, operationId: "streamScheduleEvents", tool: "schedule_events", roles: sessionWide, summary: "Server-Sent Events of a schedule (job.created, job.item.started, job.item.completed, job.item.failed, job.progress, job.cancelled); resumes from Last-Event-ID or after_seq.", query: EventsQueryParams, stream: "sse" },
];

const WH = `${S}/webhooks/{webhook_id}`;
/** Signed webhooks (docs/api.md "Delivery and notifications"): the session owner's subscriptions to its tasks' events. */
const WEBHOOK_OPERATIONS: readonly Operation[] = [
  { method: "post", path: `${S}/webhooks`, operationId: "createWebhook", tool: "create_webhook", roles: ["orchestrator"], summary: "Subscribe a URL to runtime event types of every task of the session: 201 with webhook_id and the signing secret (whsec_…), shown this once. Each event is POSTed as a Standard Webhooks message ({type, timestamp, data}: data is the runtime event), signed, at least once, with the same webhook-id on every retry. The URL must be allowed by OUTBOUND_ALLOWLIST (400 validation_error otherwise); 409 limit_exceeded past 100 subscriptions.", body: CreateWebhookBody },
  { method: "get", path: `${S}/webhooks`, operationId: "listWebhooks", tool: "list_webhooks", roles: ["orchestrator"], summary: "The session's subscriptions (webhooks and its tasks' A2A push configs), oldest first, with status active or disabled; never a secret." },
  { method: "get", path: WH, operationId: "getWebhook", tool: "get_webhook", roles: ["orchestrator"], summary: "One subscription (never its secret)." },
  { method: "delete", path: WH, operationId: "deleteWebhook", tool: "delete_webhook", roles: ["orchestrator"], summary: "Remove a subscription: nothing more is sent to it, and its deliveries still owed are recorded failed." },
  { method: "get", path: `${WH}/deliveries`, operationId: "listWebhookDeliveries", tool: "list_webhook_deliveries", roles: ["orchestrator"], summary: "A subscription's deliveries, newest first (delivery_id, event_type, task_id, status pending|delivered|failed, attempts, last_status_code, next_attempt_at), optionally of one status; next_cursor for the next page.", query: WebhookDeliveryQueryParams },
  { method: "post", path: `${WH}/deliveries/{delivery_id}/retry`, operationId: "retryWebhookDelivery", tool: "retry_webhook_delivery", roles: ["orchestrator"], summary: "Send a failed delivery again from now, its tries counted afresh and its webhook-id the same: 200 with the delivery (409 invalid_transition when it is not failed).", body: EmptyBody },
];

/** Every v1 operation, in the order OpenAPI, /v1/tools and MCP tools/list show them (docs/api.md "Routes" describes them). */
export const OPERATIONS: readonly Operation[] = [
  { method: "post", path: "/v1/sessions", operationId: "createSession", tool: "create_session", roles: ["admin"], summary: "Create a session; returns orchestrator and observer tokens.", body: CreateSessionBody },
  { method: "post", path: `${S}/tokens`, operationId: "mintToken", tool: "mint_token", roles: ["admin", "orchestrator"], summary: "Mint an orchestrator, observer, approver or a2a_client token with its token_id; it never outlives the token that minted it (the admin's are bounded by ttl_seconds alone).", body: MintTokenBody },
  { method: "get", path: `${S}/tokens`, operationId: "listTokens", tool: "list_tokens", roles: ["admin", "orchestrator"], summary: "The session's live tokens (token_id, role, agent_id, run_id, task_id, expires_at), oldest first; never the tokens themselves.", query: TokenListQueryParams },
  { method: "delete", path: `${S}/tokens/{token_id}`, operationId: "revokeToken", tool: "revoke_token", roles: ["admin", "orchestrator"], summary: "Revoke one token: every surface then answers it 401 with details.reason revoked, and its open streams and command sockets close." },
  { method: "post", path: `${S}/tokens/revoke-all`, operationId: "revokeAllTokens", tool: "revoke_all_tokens", roles: ["admin", "orchestrator"], summary: "Revoke every token of the session, this one included, and answer a fresh orchestrator token (201).", body: EmptyBody },
  { method: "get", path: S, operationId: "getSession", tool: "get_session", roles: sessionWide, summary: "Session snapshot with task_summary counts.", query: SessionSnapshotQueryParams },
  { method: "post", path: `${S}/peers`, operationId: "setPeerCredential", tool: "set_peer_credential", roles: ["orchestrator"], summary: "Set (or replace) the Authorization value delegated steps send to one A2A peer origin; 201 with the origin. The value is kept in the session, never in a WAL, and no read returns it.", body: SetPeerCredentialBody },
  { method: "delete", path: `${S}/peers/{origin}`, operationId: "deletePeerCredential", tool: "delete_peer_credential", roles: ["orchestrator"], summary: "Forget the Authorization value stored for one A2A peer origin (the origin percent-encoded as the path segment); delegated steps call that origin without it from their next request. 404 not_found when none is stored." },
  { method: "get", path: `${S}/peers`, operationId: "listPeers", tool: "list_peers", roles: ["orchestrator"], summary: "The A2A peer origins the session holds a credential for, with when each was set (never the values)." },
  { method: "get", path: `${S}/tasks`, operationId: "listTasks", tool: "agent.task_list", roles: sessionWide, summary: "List tasks: active by default; include_terminal adds terminal ones, newest first; include_archived adds archived ones.", query: TaskListQueryParams },
  { method: "post", path: `${S}/tasks`, operationId: "createTask", tool: "agent.task_create", roles: ["orchestrator"], summary: "Create a task DAG.", body: CreateTaskBody },
  { method: "get", path: "/v1/task-template", operationId: "getTaskTemplate", tool: "agent.task_template", roles: inScope, summary: "The guide for writing a task DAG." },
  { method: "get", path: "/v1/tools", operationId: "listTools", tool: "list_tools", roles: inScope, summary: "JSON Schemas of the tools the caller's role may use." },
  { method: "get", path: T, operationId: "getTask", tool: "agent.task_get", roles: inScope, summary: "The DAG with attempts, runs and diagnostics: whole up to 1,000 steps, runs and attempts; else (or with limit or cursor) a page of at most `limit` of each, with page.next_cursor for the next (429 rate_limited while too many large pages are being read).", query: TaskGetQueryParams },
  { method: "patch", path: T, operationId: "updateTask", tool: "agent.task_update", roles: ["orchestrator"], summary: "Apply patch operations atomically.", body: UpdateTaskBody },
  { method: "post", path: `${T}/complete`, operationId: "completeTask", tool: "agent.task_complete", roles: ["orchestrator"], summary: "Complete the task (required steps completed, none held).", body: ReasonBody },
  { method: "post", path: `${T}/fail`, operationId: "failTask", tool: "agent.task_fail", roles: ["orchestrator"], summary: "Fail the task and every unfinished step; each run in flight is asked to cancel and waited for until CHILD_CANCEL_TIMEOUT_MS.", body: ReasonBody },
  { method: "post", path: `${T}/cancel`, operationId: "cancelTask", tool: "agent.task_cancel", roles: ["orchestrator"], summary: "Cancel the task and every unfinished step; each run in flight is asked to cancel and waited for until CHILD_CANCEL_TIMEOUT_MS.", body: ReasonBody },
  { method: "post", path: `${T}/block`, operationId: "blockTask", tool: "task_blocked", roles: ["orchestrator"], summary: "Block the task: no dispatch or claim until reopened.", body: ReasonBody },
  { method: "post", path: `${T}/reopen`, operationId: "reopenTask", tool: "task_reopened", roles: ["orchestrator"], summary: "Reopen a blocked task to pending.", body: ReasonBody },
  { method: "post", path: `${T}/workers`, operationId: "dispatchWorker", tool: "agent.dispatch_worker", roles: ["orchestrator"], summary: "Start a worker run; returns its token.", body: DispatchWorkerBody },
  { method: "post", path: `${T}/runs/{run}/finish`, operationId: "finishRun", tool: "finish_worker_run", roles: ["worker", "orchestrator"], summary: "End a worker run; a still-held step fails with the fallback reason. A run a task's fail/cancel asked to cancel ends with its result.", body: FinishRunBody },
  { method: "post", path: `${T}/runs/{run}/cancel`, operationId: "cancelRun", tool: "cancel_worker_run", roles: ["orchestrator"], summary: "Cancel a worker run (its held step fails with worker_cancelled).", body: CancelRunBody },
  { method: "post", path: `${T}/pause`, operationId: "pauseTask", tool: "agent.task_pause", roles: ["orchestrator"], summary: "Pause the task: no dispatch and no claim (409 task_not_dispatchable) until resumed; held steps go on and their leases still run.", body: ReasonBody },
  { method: "post", path: `${T}/resume`, operationId: "resumeTask", tool: "agent.task_resume", roles: ["orchestrator"], summary: "Resume a paused task: back to pending, then ready steps and running as before.", body: ReasonBody },
  { method: "post", path: `${T}/archive`, operationId: "archiveTask", tool: "agent.task_archive", roles: ["orchestrator"], summary: "Archive a terminal task (409 invalid_transition otherwise; again: the same answer, nothing written): normalized status archived, left out of the task list unless include_archived; with RETENTION_DAYS, its storage is deleted that many days later (then 404 not_found, details.reason retention).", body: ReasonBody },
  { method: "post", path: `${T}/steps/{step}/actions`, operationId: "requestStepAction", tool: "agent.request_action", roles: ["worker", "orchestrator"], summary: "Ask a person about a held step (kind approval or input): 201 with action_id, status open and expires_at; the step's lease does not expire while the action is open and restarts when it is resolved. One open action per step.", body: RequestActionBody },
  { method: "post", path: `${T}/actions`, operationId: "requestTaskAction", tool: "agent.request_task_action", roles: ["orchestrator"], summary: "Ask a person about the whole task (e.g. approve the plan): 201 with action_id, status open and expires_at; the task waits for permission or input while it is open.", body: RequestActionBody },
  { method: "get", path: `${T}/actions`, operationId: "listTaskActions", tool: "agent.task_actions", roles: inScope, summary: "The task's human actions, oldest first, optionally only open or only resolved ones; paginated.", query: ActionListQueryParams },
  { method: "get", path: `${T}/actions/{action_id}`, operationId: "getTaskAction", tool: "agent.task_action", roles: inScope, summary: "One human action; with wait_ms (at most 30,000) it answers as soon as the action is resolved, or with the still-open action when the wait ends.", query: ActionGetQueryParams },
  { method: "post", path: `${T}/actions/{action_id}/respond`, operationId: "respondAction", tool: "agent.respond_action", roles: ["orchestrator", "approver"], summary: "Resolve an open action: approved, rejected or submitted (input checked against its input_schema, 400 validation_error otherwise); an answer to a resolved one is 409 action_resolved.", body: RespondActionBody },
  { method: "get", path: `${S}/actions`, operationId: "listSessionActions", tool: "session_actions", roles: sessionWide, summary: "The session's inbox: open actions of all its tasks with their task's title, newest first; paginated.", query: SessionActionsQueryParams },
  { method: "post", path: `${S}/links`, operationId: "linkTasks", tool: "link_tasks", roles: ["orchestrator"], summary: "Link two tasks of the session (parent_child, blocks, source_task, source_attempt) or a task to a ref (produced_artifact, consumed_artifact, evidence): 201 with the new link, 200 with the same live link again. A blocks link holds its blocked task (no dispatch, no claim: 409 task_not_dispatchable) until the blocker completes; one closing a cycle of blocks links is 409 dependency_cycle.", body: LinkTasksBody },
  { method: "delete", path: `${S}/links/{link_id}`, operationId: "unlinkTasks", tool: "unlink_tasks", roles: ["orchestrator"], summary: "Remove a link: it stays in the graph's history with status removed; a blocks link no longer holds its task." },
  { method: "get", path: `${S}/graph`, operationId: "getTaskGraph", tool: "task_graph", roles: sessionWide, summary: "The session's task graph: nodes (its tasks by task_id, a page of at most `limit`) and the edges from them, explicit links and the parent_child and source_task edges the tasks' own records imply (implicit: true); next_cursor for the next page.", query: GraphQueryParams },
  { method: "get", path: `${T}/steps`, operationId: "querySteps", tool: "agent.task_query_steps", roles: inScope, summary: "Query steps (workers: ready steps in their scope, limit 5).", query: StepQueryParams },
  { method: "post", path: `${T}/steps/{step}/claim`, operationId: "claimStep", tool: "agent.task_claim_step", roles: ["worker"], summary: "Claim a ready step under a lease.", body: EmptyBody },
  { method: "post", path: `${T}/steps/claim-next`, operationId: "claimNextStep", tool: "agent.task_claim_next", roles: ["worker"], summary: "Claim the first claimable step in scope, or answer no_step_claimed.", body: EmptyBody },
  { method: "post", path: `${T}/steps/{step}/status`, operationId: "updateStepStatus", tool: "agent.task_update_step", roles: ["worker", "orchestrator"], summary: "Update a step's execution status and results.", body: UpdateStepBody },
  { method: "post", path: `${T}/steps/{step}/progress`, operationId: "appendProgress", tool: "agent.task_progress", roles: ["worker", "orchestrator"], summary: "Report progress; renews the caller's lease.", body: ProgressBody },
  { method: "post", path: `${T}/batch`, operationId: "batch", tool: "batch", roles: ["orchestrator", "worker", "approver"], summary: "Group commit: commands in order, one transaction, one result each (each with its own token).", body: BatchBody },
  { method: "get", path: `${T}/socket`, operationId: "commandSocket", tool: "command_socket", roles: ["orchestrator", "worker", "approver"], summary: "WebSocket upgrade (token as Bearer or ?access_token=): batch bodies as frames {id, commands}, each answered by {id, results} in arrival order, or {id, status, error} for a frame refused whole; every command carries its own token. A frame's command answers leave out the task summary (task) unless the frame sends \"summary\": true.", stream: "websocket" },
  { method: "get", path: `${T}/summary`, operationId: "getTaskSummary", tool: "task_summary", roles: inScope, summary: "Compact DAG summary for a prompt, within token_budget.", query: SummaryQueryParams },
  { method: "get", path: `${T}/wal`, operationId: "exportWal", tool: "task_wal", roles: inScope, summary: "The WAL as JSON Lines after after_seq.", query: WalQueryParams },
  { method: "get", path: `${T}/events`, operationId: "streamTaskEvents", tool: "task_events", roles: inScope, summary: "Server-Sent Events of the task's runtime events (id: the event's sequence, strictly increasing); resumes exactly from Last-Event-ID or after_seq (a wal_seq); ends with an end frame once the task is terminal.", query: EventsQueryParams, stream: "sse" },
  { method: "get", path: `${S}/events`, operationId: "streamSessionEvents", tool: "session_events", roles: sessionWide, summary: "Server-Sent Events of the session's task summaries (snapshot.updated) as they change; resumes from Last-Event-ID or after_seq.", query: EventsQueryParams, stream: "sse" },
  ...SCHEDULE_OPERATIONS,
  ...WEBHOOK_OPERATIONS,
];

/** Why a role is refused an operation: the 403 code, message and details every surface answers alike. */
export interface RoleRefusal {
  readonly code: "tool_not_available" | "permission_denied";
  readonly message: string;
  readonly details: Record<string, unknown>;
}

/** An operation on the whole session (its path names no task): a worker's token is outside its scope there. */
export const isSessionWide = (op: Operation): boolean => op.path.includes("{sid}") && !op.path.includes("{tid}");

/**
 * The one rule for a caller the catalog does not give an operation, for REST, MCP and the matrix in
 * docs/security.md: null when it may call it (its session and task scope are checked apart). The admin token acts
 * in no session; an admin-only operation needs it. A worker token reads only its own task, so a session-wide read is
 * outside its scope (details.scope "task"). A command socket would hold an object's slot for a token that can send
 * no command over it. Any other operation is a tool the role does not have (tool_not_available).
 */
export function roleRefusal(op: Operation, role: Role): RoleRefusal | null {
  if (op.roles.includes(role)) return null;
  if (role === "admin") return op.path.includes("{sid}") ? { code: "permission_denied", message: "the admin token acts in no session: use a session token", details: { role } } : null;
  if (op.roles.length === 1 && op.roles[0] === "admin") return { code: "permission_denied", message: `${op.tool} needs the admin token`, details: { role, tool: op.tool } };
  if (role === "worker" && op.method === "get" && isSessionWide(op)) {
    return { code: "permission_denied", message: `a worker token reads only its own task: ${op.tool} reads the whole session`, details: { role, scope: "task", tool: op.tool } };
  }
  if (op.stream === "websocket") {
    return { code: "permission_denied", message: `a ${role} token sends no commands: a command socket is for ${op.roles.join(", ")} tokens`, details: { role, tool: op.tool } };
  }
  return { code: "tool_not_available", message: `${op.tool} is not available to the ${role} role`, details: { role, tool: op.tool } };
}

/**
 * JSON Schema of a zod schema: the input side (what a request sends), or the output side (what the route reads
 * after decoding, e.g. a query's `limit` as an integer, which is how a tool argument carries it).
 */
export function jsonSchemaOf(schema: z.ZodType, io: "input" | "output" = "input"): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Record<string, unknown>;
  return rest;
}

const LIMITS_TEXT = [
  "Durable task DAGs for orchestrator and worker agents.",
  `Limits: a body or socket frame is at most MAX_BODY_BYTES (1 MiB by default) and nests at most ${MAX_DOCUMENT_DEPTH} levels of JSON;`,
  `a free-form value (metadata, a run's result) is at most ${MAX_JSON_DEPTH} levels deep and ${MAX_JSON_BYTES} bytes of JSON;`,
  "past them, with a Content-Length that is not digits, or with a key named __proto__ anywhere, the answer is 400 validation_error (413 payload_too_large for the size).",
].join(" ");

/** The OpenAPI 3.1 document of the API, generated from the catalog. */
export function openApiDocument(origin: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  // A recursive body's definitions become components: a $ref in the document resolves from its root.
  const definitions = new SchemaDefinitions("#/components/schemas/");
  for (const op of OPERATIONS) {
    const params = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: "path", required: true, schema: { type: "string" } }));
    if (op.query !== undefined) {
      const q = definitions.take(jsonSchemaOf(op.query)) as { properties?: Record<string, unknown>; required?: string[] };
      for (const [name, schema] of Object.entries(q.properties ?? {})) params.push({ name, in: "query", required: (q.required ?? []).includes(name), schema } as never);
    }
    const auth = op.roles.length === 0 ? [] : [{ bearer: [] }];
    (paths[op.path] ??= {})[op.method] = {
      operationId: op.operationId,
      summary: op.summary,
      description: `Tool: ${op.tool}. Roles: ${op.roles.join(", ")}. Mutating calls accept an Idempotency-Key header.`,
      parameters: params,
      ...(op.body === undefined ? {} : { requestBody: { required: false, content: { "application/json": { schema: definitions.take(jsonSchemaOf(op.body)) } } } }),
      security: auth,
      responses: {
        ...(op.stream === "websocket"
          ? { "101": { description: "Switching Protocols: the WebSocket" } }
          : op.stream === "sse"
            ? { "200": { description: "An event stream", content: { "text/event-stream": { schema: { type: "string" } } } } }
            : { "200": { description: "Success" } }),
        default: { description: "Error envelope", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } },
      },
    };
  }
  paths["/mcp"] = {
    post: {
      operationId: "mcp",
      summary: "The Model Context Protocol over Streamable HTTP, stateless (revisions 2026-07-28 and 2025-11-25): the caller's role's tools, the agent.task_template and agent.task_context prompts, and each task's summary as a resource.",
      description: "A JSON-RPC message per POST. Every tools/call is the REST operation it names with the same token: structuredContent is its answer, a domain error is an isError result with the code. GET and DELETE answer 405: nothing is kept between requests.",
      requestBody: { required: true, content: { "application/json": { schema: { type: "object" } } } },
      security: [{ bearer: [] }],
      responses: {
        "200": { description: "The JSON-RPC answer", content: { "application/json": { schema: { type: "object" } }, "text/event-stream": { schema: { type: "string" } } } },
        "202": { description: "A notification, accepted" },
        default: { description: "Error envelope (401 without a valid token, 403 for the admin token or a foreign Origin)", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } },
      },
    },
  };
  paths["/.well-known/agent-card.json"] = {
    get: {
      operationId: "agentCard",
      summary: "The A2A Agent Card (protocol 1.0): the JSON-RPC interface at /a2a, streaming, the bearer scheme, accepted input types. Cacheable: Cache-Control and a strong ETag (304 on If-None-Match).",
      security: [],
      responses: { "200": { description: "The Agent Card", content: { "application/json": { schema: { type: "object" } } } }, "304": { description: "Not modified" } },
    },
  };
  paths["/a2a"] = {
    post: {
      operationId: "a2a",
      summary: "A2A 1.0 over JSON-RPC 2.0 for a2a_client tokens: SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask (streams as SSE).",
      description: "A message without taskId submits a task to the token's session; with taskId it answers the open action named in metadata.actionId (the id the INPUT_REQUIRED status message carries), or the task's only open action; a retry with the same messageId is answered as the first. A client sees only the tasks it submitted. Errors are JSON-RPC errors with ErrorInfo in error.data.",
      requestBody: { required: true, content: { "application/json": { schema: { type: "object" } } } },
      security: [{ bearer: [] }],
      responses: {
        "200": { description: "The JSON-RPC answer, or an SSE stream of them", content: { "application/json": { schema: { type: "object" } }, "text/event-stream": { schema: { type: "string" } } } },
        default: { description: "A JSON-RPC error (401 without a valid token, 403 for another role, 415 for another Content-Type)", content: { "application/json": { schema: { type: "object" } } } },
      },
    },
  };
  return {
    openapi: "3.1.0",
    info: { title: "Agent task runtime", version: "1.0.0", description: LIMITS_TEXT },
    servers: [{ url: origin }],
    paths,
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" } },
      schemas: {
        Error: {
          type: "object",
          required: ["error"],
          properties: { error: { type: "object", required: ["code", "message"], properties: { code: { type: "string", enum: [...ERROR_CODES] }, message: { type: "string" }, details: { type: "object" } } } },
        },
        ...definitions.defs,
      },
    },
  };
}
