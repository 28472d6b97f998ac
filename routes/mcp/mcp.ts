/**
 * @module `/mcp`: the Model Context Protocol over Streamable HTTP, stateless: revision 2026-07-28 through the
 * SDK's createMcpHandler, 2025-11-25 through its Streamable HTTP transport answering JSON, one server factory for
 * both. An adapter like the command socket: every tool call is the REST
 * operation it names, run in-process through the same app (same token, same validation, same answer), so an
 * MCP result's structuredContent is the REST answer and nothing here keeps state between requests.
 */
import { type AuthInfo, type CallToolResult, createMcpHandler, isLegacyRequest, McpServer, PROTOCOL_VERSION_META_KEY, ResourceTemplate, WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/server";
import type { Context } from "hono";
import { z } from "zod";
import type { TokenClaims } from "../../durable-objects/shared/tokens.js";
import type { ErrorCode } from "../../src/core/index.js";
import { MAX_WAL_PAGE_LIMIT } from "../../src/contract/limits.js";
import { readConfig } from "../../durable-objects/shared/env.js";
import type { AppEnv } from "../http/auth.js";
import { isPlainObject, parseJsonTextIfValid } from "../../durable-objects/commands/command-json.js";
import { readBodyText } from "../http/body.js";
import { parseCorsOrigins } from "../http/cors.js";
import { roleRefusal } from "../http/catalog.js";
import { fail, STATUS_OF } from "../../durable-objects/shared/http-errors.js";
import { mcpTool, type McpCaller, restCallOf, ToolArgumentError, toolAvailable, toolsFor } from "./mcp-tools.js";
import { errorText, resultText } from "./mcp-text.js";
import { TASK_TEMPLATE } from "../rest/task-template.js";

/** Runs one REST operation through the app as the MCP request's caller (verified already; see inProcessRequest). */
export type Dispatch = (url: string, init: { readonly method: string; readonly headers: Record<string, string>; readonly body?: string }) => Promise<Response>;

/** What one MCP request serves with: who calls, with which token, where, and how to reach the REST routes. */
interface McpRequestScope {
  readonly caller: McpCaller;
  readonly token: string;
  readonly origin: string;
  readonly dispatch: Dispatch;
  /** Serving tools/list or tools/call only: the server is built without prompts and resources (an initialize or discover lists them all). */
  readonly toolsOnly?: boolean;
}

const UTF8 = new TextDecoder();
/** Lists that change only with a deploy: a 2026-07-28 client may keep them an hour (private: they depend on the role). */
const HOUR = { ttlMs: 3_600_000, cacheScope: "private" } as const;
const STATIC_LISTS = { "tools/list": HOUR, "prompts/list": HOUR, "resources/templates/list": HOUR, "server/discover": HOUR };
const SERVER_INFO = { name: "agent-task-runtime", version: "1.0.0" };

const INSTRUCTIONS: Readonly<Record<McpCaller["role"], string>> = {
  orchestrator:
    "You orchestrate durable task DAGs. Read agent.task_template first, create a task with agent.task_create, start one worker per ready step with agent.dispatch_worker (it returns a worker token and this server's URL for a worker agent), follow with agent.task_get or task_summary, repair failed steps with agent.task_update (reopen_step), and finish with agent.task_complete.",
  worker:
    "You are a worker run of one task. Call agent.task_claim_next (or agent.task_query_steps then agent.task_claim_step), set the step running with agent.task_update_step, report progress with agent.task_progress (it renews your lease), then set it completed or failed with a result_summary. no_step_claimed is a normal result: end the run with finish_worker_run.",
  observer: "You may read this session's tasks: agent.task_list, agent.task_get, task_summary, agent.task_actions.",
  approver: "You answer people's actions: session_actions lists open ones, agent.respond_action answers them (approved, rejected, or submitted with input).",
};

/** A tool result from a REST answer: structuredContent is the answer, plus a short text for a model. */
async function toolResult(tool: string, response: Response, extra: Record<string, unknown>): Promise<CallToolResult> {
  // Decoded by hand: workerd warns when .text() reads a body whose type (the WAL's x-ndjson) is not text/*.
  const text = UTF8.decode(await response.arrayBuffer());
  let body: unknown;
  if ((response.headers.get("content-type") ?? "").includes("application/x-ndjson")) {
    body = { events: text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as unknown), last_wal_seq: Number(response.headers.get("x-last-wal-seq") ?? 0) };
  } else {
    body = text === "" ? {} : (JSON.parse(text) as unknown);
  }
  if (response.ok) {
    const answer = { ...(body as Record<string, unknown>), ...extra };
    return { content: [{ type: "text", text: resultText(tool, answer) }], structuredContent: answer };
  }
  const error = (body as { error?: { code: string; message: string; details?: Record<string, unknown> } }).error ?? { code: "internal_error", message: text.slice(0, 300) };
  return { isError: true, content: [{ type: "text", text: errorText(error.code, error.message) }], structuredContent: { status: response.status, error } };
}

/** A call refused before it reaches its route, answered as the route would: the code's HTTP status and the envelope. */
function refusal(code: ErrorCode, message: string, details: Record<string, unknown> = {}): CallToolResult {
  return { isError: true, content: [{ type: "text", text: errorText(code, message) }], structuredContent: { status: STATUS_OF[code], error: { code, message, details } } };
}

/** Runs a tool call as its REST operation. An unknown tool is tool_not_available; one the role lacks, refused as its route would (roleRefusal). */
async function callTool(scope: McpRequestScope, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  const tool = mcpTool(name);
  if (tool === undefined) return refusal("tool_not_available", `${name} is not available to the ${scope.caller.role} role`, { role: scope.caller.role, tool: name });
  if (!toolAvailable(tool, scope.caller.role)) {
    const refused = roleRefusal(tool.operations[0]!, scope.caller.role)!;
    return refusal(refused.code, refused.message, { ...refused.details, tool: name });
  }
  // A tool result is one JSON value held whole in memory: the WAL comes to MCP clients in pages, never streamed whole.
  if (name === "task_wal" && args.limit === "all") {
    return refusal("validation_error", `task_wal answers a page: page through the WAL with after_seq and a limit of at most ${MAX_WAL_PAGE_LIMIT}`, { issues: [{ path: "limit", message: `"all" is for GET .../wal only` }] });
  }
  let call;
  try {
    call = restCallOf(tool, args, scope.caller);
  } catch (e) {
    if (e instanceof ToolArgumentError) return refusal("validation_error", e.message, { issues: [{ path: e.argument, message: e.problem }] });
    throw e;
  }
  const headers: Record<string, string> = { authorization: `Bearer ${scope.token}` };
  if (call.body !== undefined) headers["content-type"] = "application/json";
  if (call.idempotencyKey !== undefined) headers["idempotency-key"] = call.idempotencyKey;
  const response = await scope.dispatch(scope.origin + call.url, { method: call.method, headers, ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }) });
  const extra = call.operation.operationId === "dispatchWorker" && response.ok ? { mcp_url: `${scope.origin}/mcp` } : {};
  return toolResult(name, response, extra);
}

/** A GET of the REST API as the caller. */
const getAs = (scope: McpRequestScope, path: string): Promise<Response> => scope.dispatch(scope.origin + path, { method: "GET", headers: { authorization: `Bearer ${scope.token}` } });

/** A GET of the REST API as the caller, parsed; null when it is not a success. */
async function readAs(scope: McpRequestScope, path: string): Promise<Record<string, unknown> | null> {
  const response = await getAs(scope, path);
  return response.ok ? ((await response.json()) as Record<string, unknown>) : null;
}

const summaryPath = (scope: McpRequestScope, taskId: string, budget?: string) =>
  `/v1/sessions/${encodeURIComponent(scope.caller.sessionId)}/tasks/${encodeURIComponent(taskId)}/summary${budget === undefined ? "" : `?token_budget=${encodeURIComponent(budget)}`}`;

/** A task's prompt summary (its held, blocked, running and ready steps, open actions and recent changes, within a token budget) as the caller sees it; a refusal throws with its code, which the SDK answers as an error. */
async function summaryText(scope: McpRequestScope, taskId: string, budget?: string): Promise<string> {
  const response = await getAs(scope, summaryPath(scope, taskId, budget));
  const body = (await response.json()) as { text?: string; error?: { code: string; message: string } };
  if (!response.ok) throw new Error(errorText(body.error?.code ?? "internal_error", body.error?.message ?? "no summary"));
  return body.text ?? "";
}

/** One request's MCP server: tools by role, the DAG writing guide as a prompt, and each task's summary. */
function buildServer(scope: McpRequestScope): McpServer {
  const server = new McpServer(SERVER_INFO, { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS[scope.caller.role], cacheHints: STATIC_LISTS });
  const low = server.server;
  low.setRequestHandler("tools/list", () => ({ tools: [...toolsFor(scope.caller.role)] as never }));
  low.setRequestHandler("tools/call", async (request) => {
    const args = request.params.arguments ?? {};
    return low.projectCallToolResult(await callTool(scope, request.params.name, args as Record<string, unknown>), undefined);
  });

  if (scope.toolsOnly === true) return server;
  server.registerPrompt("agent.task_template", { title: "Writing a task DAG", description: "The guide an orchestrator reads before writing a task DAG (the agent.task_template tool's text)." }, () => ({
    messages: [{ role: "user", content: { type: "text", text: TASK_TEMPLATE } }],
  }));
  server.registerPrompt(
    "agent.task_context",
    {
      title: "Task context",
      description: "A task's compact DAG summary for your context (what a model needs in its prompt): your held steps, blocked, running and ready steps, open actions and recent changes, within token_budget.",
      argsSchema: z.object({ task_id: z.string().describe("The task."), token_budget: z.string().regex(/^\d+$/).optional().describe("Tokens the summary may use (100 to 100,000; default 2,000).") }),
    },
    async ({ task_id, token_budget }) => ({
      description: `Task ${task_id}`,
      messages: [{ role: "user", content: { type: "text", text: await summaryText(scope, task_id, token_budget) } }],
    }),
  );
  server.registerResource(
    "task-summary",
    new ResourceTemplate("agent-task://tasks/{task_id}/summary", {
      list: async () => {
        const sid = encodeURIComponent(scope.caller.sessionId);
        const page = scope.caller.role === "worker" ? null : await readAs(scope, `/v1/sessions/${sid}/tasks?limit=100`);
        const tasks = page === null ? (scope.caller.taskId === undefined ? [] : [{ task_id: scope.caller.taskId, title: scope.caller.taskId }]) : (page.tasks as { task_id: string; title: string }[]);
        return { resources: tasks.map((t) => ({ uri: `agent-task://tasks/${t.task_id}/summary`, name: `${t.task_id} summary`, title: t.title, mimeType: "text/markdown" })) };
      },
    }),
    { title: "Task summary", description: "A task's compact DAG summary (held, blocked, running and ready steps, open actions, recent changes) as you see it.", mimeType: "text/markdown" },
    async (uri, variables) => {
      const taskId = String(variables.task_id);
      return { contents: [{ uri: uri.href, mimeType: "text/markdown", text: await summaryText(scope, taskId) }] };
    },
  );
  return server;
}

/**
 * One handler per isolate: createMcpHandler builds a fresh server per request from this factory, with the
 * request's scope passed through the authenticated AuthInfo (nothing per client lives between requests).
 */
let handler: ReturnType<typeof createMcpHandler> | null = null;
let handlerBodyLimit = 0;

function mcpHandler(maxBodyBytes: number): ReturnType<typeof createMcpHandler> {
  if (handler === null || handlerBodyLimit !== maxBodyBytes) {
    handler = createMcpHandler((ctx) => buildServer((ctx.authInfo?.extra as { scope: McpRequestScope }).scope), {
      legacy: "stateless",
      maxRequestBodySize: maxBodyBytes,
      onerror: (e) => console.error(JSON.stringify({ level: "warn", where: "mcp", error: e.message.slice(0, 300) })),
    });
    handlerBodyLimit = maxBodyBytes;
  }
  return handler;
}

/**
 * A browser page of another origin may not drive the endpoint (the MCP transport's DNS-rebinding rule): an
 * Origin header, when sent, must be the endpoint's own or one CORS_ORIGINS allows.
 */
function originAllowed(c: Context<AppEnv>): boolean {
  const origin = c.req.header("origin");
  if (origin === undefined) return true;
  const self = new URL(c.req.url).origin;
  const allowed = parseCorsOrigins(c.env.CORS_ORIGINS);
  return origin === self || allowed === "*" || allowed.includes(origin);
}

/** Serves `/mcp` for an authenticated session token; `dispatch` runs the REST operations tools stand for. */
export async function serveMcp(c: Context<AppEnv>, dispatch: Dispatch): Promise<Response> {
  if (!originAllowed(c)) fail("permission_denied", "this Origin may not use the MCP endpoint", { origin: c.req.header("origin")?.slice(0, 200) });
  const caller = c.get("caller");
  if (caller.kind !== "token") fail("permission_denied", "MCP serves session tokens (orchestrator, worker, observer, approver); the admin token creates sessions over REST");
  const token = /^Bearer\s+(\S+)/i.exec(c.req.header("authorization") ?? "")?.[1];
  if (token === undefined) fail("unauthorized", "MCP takes the token as `Authorization: Bearer <token>`");
  const { claims } = caller;
  const scope: McpRequestScope = {
    caller: { role: claims.role, sessionId: claims.sid, taskId: claims.tid, runId: claims.run },
    token,
    origin: new URL(c.req.url).origin,
    dispatch,
  };
  const handler = mcpHandler(readConfig(c.env).maxBodyBytes);
  if (c.req.method !== "POST") return handler.fetch(c.req.raw, { authInfo: authInfoOf(scope, claims) });
  // Read and parsed once, within MAX_BODY_BYTES and the JSON bounds every body has; text that is not JSON
  // goes to the SDK as it came, which answers JSON-RPC's parse error.
  const text = await readBodyText(c);
  const message = parseJsonTextIfValid(text, "the MCP message");
  refuseLongBatch(message, readConfig(c.env).caps.mcpBatch);
  if (message === undefined) return handler.fetch(new Request(c.req.url, { method: "POST", headers: c.req.raw.headers, body: text }), { authInfo: authInfoOf(scope, claims) });
  const authInfo = authInfoOf({ ...scope, toolsOnly: isToolsTraffic(message) }, claims);
  if (!claimsModernEra(message) && (await isLegacyRequest(c.req.raw, message))) return serveLegacyAsJson(c.req.raw, message, authInfo);
  return handler.fetch(c.req.raw, { authInfo, parsedBody: message });
}

/**
 * A JSON-RPC batch of more than MCP_MAX_BATCH messages is refused whole, before any of it runs: each message may be
 * a tool call, so a batch is that many REST operations for one POST. The revisions served have no batches
 * (2025-06-18 removed them); the cap bounds what an older client's batch may ask (docs/protocols/mcp.md).
 */
function refuseLongBatch(message: unknown, limit: number): void {
  if (!Array.isArray(message) || message.length <= limit) return;
  fail("limit_exceeded", `a JSON-RPC batch to /mcp holds at most ${limit} messages; send them in separate requests`, { limit, value: message.length, setting: "MCP_MAX_BATCH" });
}

/**
 * A 2025-era message, served statelessly as the SDK's fallback would, but answered as one JSON body rather than
 * a one-event SSE stream (Streamable HTTP allows either): about 30 % less server CPU a call (bench:mcp), and no stream
 * to cut mid-answer.
 */
async function serveLegacyAsJson(request: Request, message: unknown, authInfo: AuthInfo): Promise<Response> {
  const server = buildServer((authInfo.extra as { scope: McpRequestScope }).scope);
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    return await transport.handleRequest(request, { authInfo, parsedBody: message });
  } finally {
    void transport.close().catch(() => {});
    void server.close().catch(() => {});
  }
}

function authInfoOf(scope: McpRequestScope, claims: TokenClaims): AuthInfo {
  return { token: scope.token, clientId: claims.sub, scopes: [claims.role], expiresAt: claims.exp, extra: { scope } };
}

/**
 * A message the SDK's era classification can only send down its modern path (served or refused there, never
 * legacy): one JSON-RPC request or notification other than `initialize` whose params' `_meta` carries the
 * protocol-version claim. Every 2026-07-28 call is one, and the handler classifies it anyway, so isLegacyRequest
 * need not classify it first (test/mcp/mcp-era-shortcut.property.test.ts holds this to the SDK's own answer).
 */
export function claimsModernEra(message: unknown): boolean {
  if (!isPlainObject(message) || typeof message.method !== "string" || message.method === "initialize" || "result" in message || "error" in message) return false;
  const params = message.params;
  return isPlainObject(params) && isPlainObject(params._meta) && PROTOCOL_VERSION_META_KEY in params._meta;
}

/** A tools/list or tools/call message: the server that answers it needs no prompts or resources. */
function isToolsTraffic(message: unknown): boolean {
  return isPlainObject(message) && (message.method === "tools/call" || message.method === "tools/list");
}
