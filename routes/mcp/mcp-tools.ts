/**
 * @module The MCP tool set: the catalog's operations as tools with flat arguments, and how a call's arguments
 * become the operation's HTTP request. Names, roles and schemas come from the catalog (routes/http/catalog.ts), so
 * `tools/list`, `/v1/tools` and OpenAPI describe the same operations with the same zod schemas, and a call is
 * validated by its route exactly as the REST call would be.
 */
import type { z } from "zod";
import { ACTION_ID_PATTERN } from "../../src/contract/index.js";
import { ID_PATTERN, SCHEDULE_ID_PATTERN } from "../../src/core/index.js";
import { jsonSchemaOf, OPERATIONS, type Operation, type Role } from "../http/catalog.js";
import { SchemaDefinitions } from "../http/schema-definitions.js";
import { ACTOR_FIELDS } from "../../durable-objects/commands/command-json.js";

/** A session role: MCP serves session tokens only (the admin creates sessions over REST). */
export type SessionRole = Exclude<Role, "admin">;

/** One MCP tool: one catalog operation, or several chosen by which path arguments a call gives. */
export interface McpTool {
  readonly name: string;
  readonly description: string;
  readonly roles: readonly Role[];
  /** Most specific first: a call takes the first whose path arguments it gives (task_id aside). */
  readonly operations: readonly Operation[];
  readonly readOnly: boolean;
}

/** Operations that are not agent tools over MCP: admin work, the tool list itself, and many-token batches. */
const NOT_TOOLS = new Set(["createSession", "mintToken", "revokeAllTokens", "listTools", "batch"]);

/**
 * `agent.request_action` is one tool over MCP, the name agents know: with `step_id` it asks about that step,
 * without it about the whole task (the REST catalog keeps the two routes under their own names).
 */
const MERGED: Readonly<Record<string, { name: string; description: string }>> = {
  requestStepAction: {
    name: "agent.request_action",
    description:
      "Ask a person (kind approval or input, with prompt and optionally input_schema and timeout_ms). With step_id: about a step you hold (its lease waits while the action is open); without: about the whole task (orchestrator). Answers action_id, status open and expires_at; read it back with agent.task_action and wait_ms.",
  },
  requestTaskAction: { name: "agent.request_action", description: "" },
};

/** Path parameters as MCP arguments: the session is always the token's. */
const PATH_ARGS: Readonly<Record<string, string>> = { tid: "task_id", step: "step_id", run: "run_id", action_id: "action_id", link_id: "link_id", token_id: "token_id", origin: "origin", schedule_id: "schedule_id", webhook_id: "webhook_id", delivery_id: "delivery_id" };

/**
 * What a path argument may be: the ids the runtime takes and mints. Checked before it becomes a path
 * segment, where `.` or `..` would name another route once the URL is resolved.
 */
const PATH_ARG_PATTERNS: Readonly<Record<string, RegExp>> = { task_id: ID_PATTERN, step_id: ID_PATTERN, run_id: /^[a-z0-9_-]{1,128}$/, action_id: ACTION_ID_PATTERN, link_id: /^lnk_[0-9a-z]{26}$/, token_id: /^tok_[0-9a-z]{26}$/, origin: /^https?:\/\/[^/?#\s]{1,2040}$/, schedule_id: SCHEDULE_ID_PATTERN, webhook_id: /^[A-Za-z0-9_-][A-Za-z0-9_.:-]{0,127}$/, delivery_id: /^[A-Za-z0-9_-][A-Za-z0-9_.:-]{0,199}$/ };

const PATH_ARG_DESCRIPTIONS: Readonly<Record<string, string>> = {
  task_id: "The task. A worker may leave it out: its token names its task.",
  step_id: "The step.",
  run_id: "The worker run. A worker may leave it out: its token names its run.",
  action_id: "The human action.",
  link_id: "The task graph link (lnk_…).",
  token_id: "The token (tok_…), as GET /v1/sessions/{sid}/tokens lists it.",
  origin: "The A2A peer's origin, as set_peer_credential stored it: http(s)://host[:port].",
  schedule_id: "The schedule.",
  webhook_id: "The subscription: a webhook's wh_… id, or an A2A push config's id, as list_webhooks lists it.",
  delivery_id: "The delivery, as list_webhook_deliveries lists it (also its webhook-id header).",
};

/** What a write tool accepts besides its body: a key that makes a retry safe. */
const IDEMPOTENCY_ARG = {
  type: "string",
  minLength: 1,
  maxLength: 255,
  description: "Optional retry key: the same key with the same arguments answers the first result again and writes nothing.",
};

/** Arguments that name the caller: identity comes from the token, so these are dropped, never trusted. */
const IMPLICIT_ARGS: readonly string[] = [...ACTOR_FIELDS, "session_id", "sid"];

const pathParamsOf = new WeakMap<Operation, readonly string[]>();

/** An operation's path parameters but the session, read from its path once. */
function pathParams(op: Operation): readonly string[] {
  let params = pathParamsOf.get(op);
  if (params === undefined) {
    params = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!).filter((p) => p !== "sid");
    pathParamsOf.set(op, params);
  }
  return params;
}

function queryKeys(op: Operation): string[] {
  const shape = (op.query as z.ZodObject | undefined)?.shape;
  return shape === undefined ? [] : Object.keys(shape).filter((k) => k !== "access_token");
}

/** Every MCP tool, in catalog order. */
export const MCP_TOOLS: readonly McpTool[] = (() => {
  const tools = new Map<string, { name: string; description: string; roles: Set<Role>; operations: Operation[] }>();
  for (const op of OPERATIONS) {
    if (op.stream !== undefined || NOT_TOOLS.has(op.operationId)) continue;
    const merged = MERGED[op.operationId];
    const name = merged?.name ?? op.tool;
    const tool = tools.get(name) ?? { name, description: merged?.description || op.summary, roles: new Set<Role>(), operations: [] };
    for (const role of op.roles) tool.roles.add(role);
    tool.operations.push(op);
    tools.set(name, tool);
  }
  return [...tools.values()].map((t) => ({
    name: t.name,
    description: t.description,
    roles: [...t.roles],
    operations: t.operations.sort((a, b) => pathParams(b).length - pathParams(a).length),
    readOnly: t.operations.every((op) => op.method === "get"),
  }));
})();

const BY_NAME = new Map(MCP_TOOLS.map((t) => [t.name, t]));

/** The tool called `name`, if any. */
export function mcpTool(name: string): McpTool | undefined {
  return BY_NAME.get(name);
}

/** Whether `role` may call `tool`: the catalog's roles, as REST enforces them. */
export function toolAvailable(tool: McpTool, role: SessionRole): boolean {
  return tool.roles.includes(role);
}

type JsonSchema = { type?: string; properties?: Record<string, unknown>; required?: string[]; [key: string]: unknown };

/**
 * The flat argument schema of a tool for a role: path parameters, query fields (typed, as the route reads
 * them) and body fields, from the catalog's zod schemas. A path argument present in only some of a merged
 * tool's operations is optional; task_id and run_id are optional for a worker, whose token names both.
 */
function inputSchemaOf(tool: McpTool, role: SessionRole): JsonSchema {
  const properties: Record<string, unknown> = {};
  const required = new Set<string>();
  // Fields keep their refs; the definitions they point to sit at the root, where a client resolves them.
  const definitions = new SchemaDefinitions("#/$defs/");
  const everyOp = (arg: string) => tool.operations.every((op) => pathParams(op).some((p) => PATH_ARGS[p] === arg));
  for (const op of tool.operations) {
    for (const param of pathParams(op)) {
      const arg = PATH_ARGS[param]!;
      properties[arg] = { type: "string", pattern: PATH_ARG_PATTERNS[arg]!.source, description: PATH_ARG_DESCRIPTIONS[arg] };
      const impliedByToken = role === "worker" && (arg === "task_id" || arg === "run_id");
      if (everyOp(arg) && !impliedByToken) required.add(arg);
    }
    const parts: JsonSchema[] = [];
    if (op.query !== undefined) parts.push(definitions.take(jsonSchemaOf(op.query, "output")));
    if (op.body !== undefined) parts.push(definitions.take(jsonSchemaOf(op.body)));
    for (const part of parts) {
      for (const [key, schema] of Object.entries(part.properties ?? {})) {
        if (key === "access_token") continue;
        if (pathParams(op).some((p) => PATH_ARGS[p] === key)) throw new Error(`MCP tool ${tool.name}: argument ${key} is both a path and a body or query field`);
        properties[key] = schema;
      }
      for (const key of part.required ?? []) required.add(key);
    }
  }
  if (!tool.readOnly) properties.idempotency_key = IDEMPOTENCY_ARG;
  const defs = Object.keys(definitions.defs).length === 0 ? {} : { $defs: definitions.defs };
  return { type: "object", properties, ...(required.size === 0 ? {} : { required: [...required] }), ...defs };
}

/** A tool as `tools/list` shows it. */
export interface ListedTool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
  readonly annotations: { readonly readOnlyHint: boolean; readonly destructiveHint: boolean; readonly idempotentHint: boolean; readonly openWorldHint: false };
}

const DESTRUCTIVE = new Set(["agent.task_fail", "agent.task_cancel", "cancel_worker_run"]);
const listed = new Map<SessionRole, ListedTool[]>();

/** The tools `role` may call, as `tools/list` answers them (built once per role and isolate). */
export function toolsFor(role: SessionRole): readonly ListedTool[] {
  let tools = listed.get(role);
  if (tools === undefined) {
    tools = MCP_TOOLS.filter((t) => toolAvailable(t, role)).map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: inputSchemaOf(t, role),
      annotations: { readOnlyHint: t.readOnly, destructiveHint: DESTRUCTIVE.has(t.name), idempotentHint: t.readOnly, openWorldHint: false },
    }));
    listed.set(role, tools);
  }
  return tools;
}

/** The caller an MCP call runs as: its role, session, and the task and run a worker token names. */
export interface McpCaller {
  readonly role: SessionRole;
  readonly sessionId: string;
  readonly taskId: string | undefined;
  readonly runId: string | null;
}

/** The HTTP request a tool call stands for. */
export interface RestCall {
  readonly operation: Operation;
  readonly method: "GET" | "POST" | "PATCH" | "DELETE";
  /** Path and query string, from `/v1`. */
  readonly url: string;
  readonly body: Record<string, unknown> | undefined;
  readonly idempotencyKey: string | undefined;
}

/** A call's argument that cannot make a request: answered as validation_error naming it, as a route's issues do. */
export class ToolArgumentError extends Error {
  override readonly name = "ToolArgumentError";
  constructor(
    readonly argument: string,
    readonly problem: string,
  ) {
    super(`${argument} ${problem}`);
  }
}

const stringArg = (args: Record<string, unknown>, name: string, pattern?: RegExp): string | undefined => {
  const value = args[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || value === "") throw new ToolArgumentError(name, "must be a non-empty string");
  if (pattern !== undefined && !pattern.test(value)) throw new ToolArgumentError(name, `must match ${pattern.source}`);
  return value;
};

/**
 * Turns a call's arguments into its operation's HTTP request: path arguments into the path (a worker's task
 * and run default to its token's), query fields into the query string, the rest into the body (or, for a
 * read, the query, where the route's strict schema refuses what it does not know). Actor fields are dropped.
 */
export function restCallOf(tool: McpTool, rawArgs: Record<string, unknown>, caller: McpCaller): RestCall {
  const args: Record<string, unknown> = { ...rawArgs };
  for (const field of IMPLICIT_ARGS) delete args[field];
  if (caller.role === "worker") {
    if (args.task_id == null && caller.taskId !== undefined) args.task_id = caller.taskId;
    if (args.run_id == null && caller.runId !== null && tool.operations.some((op) => pathParams(op).includes("run"))) args.run_id = caller.runId;
  }
  const operation = tool.operations.find((op) => pathParams(op).every((p) => p === "tid" || args[PATH_ARGS[p]!] !== undefined)) ?? tool.operations[0]!;
  const idempotencyKey = stringArg(args, "idempotency_key");
  delete args.idempotency_key;
  let path = operation.path.replace("{sid}", encodeURIComponent(caller.sessionId));
  for (const param of pathParams(operation)) {
    const arg = PATH_ARGS[param]!;
    const value = stringArg(args, arg, PATH_ARG_PATTERNS[arg]);
    if (value === undefined) throw new ToolArgumentError(arg, "is required");
    path = path.replace(`{${param}}`, encodeURIComponent(value));
    delete args[arg];
  }
  const query = new URLSearchParams();
  const addQuery = (key: string, value: unknown) => {
    for (const item of Array.isArray(value) ? value : [value]) query.append(key, typeof item === "string" ? item : JSON.stringify(item));
  };
  for (const key of queryKeys(operation)) {
    if (args[key] !== undefined) addQuery(key, args[key]);
    delete args[key];
  }
  const isRead = operation.method === "get";
  if (isRead) for (const [key, value] of Object.entries(args)) addQuery(key, value);
  const search = query.toString();
  return {
    operation,
    method: operation.method.toUpperCase() as RestCall["method"],
    url: search === "" ? path : `${path}?${search}`,
    body: isRead ? undefined : args,
    idempotencyKey,
  };
}
