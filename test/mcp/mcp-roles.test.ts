/**
 * MCP tools by role, through the official clients (2026-07-28 and 2025-11-25): `tools/list` shows exactly the
 * tools the catalog gives the caller's role, with argument schemas taken from the routes' zod schemas, and a
 * tool outside the role (or no tool at all) is a tool_not_available result that writes nothing (a worker's
 * session-wide read: permission_denied, its token reading only its own task).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jsonSchemaOf, OPERATIONS, type Operation } from "../../routes/http/catalog.js";
import { MCP_TOOLS, mcpTool, type SessionRole, toolAvailable } from "../../routes/mcp/mcp-tools.js";
import { dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { type ClientKind, connectMcp, expectToolRefusedWritingNothing, type McpClient } from "../support/mcp-clients.js";
import { mintRole, uniqueId } from "../support/support.js";

const ROLES: readonly SessionRole[] = ["orchestrator", "worker", "observer", "approver"];
const KINDS: readonly ClientKind[] = ["modern", "legacy"];

/** The reads of one task, which every session token may call (a worker's of its own task). */
const TASK_READS = ["agent.task_template", "agent.task_get", "agent.task_actions", "agent.task_action", "agent.task_query_steps", "task_summary", "task_wal"];
/** The reads across the session, which every session token but a worker's may call. */
const SESSION_READS = ["get_session", "agent.task_list", "session_actions", "task_graph", "agent.schedule_list", "agent.schedule_get"];
const READS = [...SESSION_READS, ...TASK_READS];

/** Each role's tools by their task-tool names (docs/model.md "Tools"), written out so that a catalog change shows here. */
const LITERAL_TOOLS: Readonly<Record<SessionRole, readonly string[]>> = {
  orchestrator: [
    ...READS,
    "list_tokens",
    "revoke_token",
    "agent.task_create",
    "agent.task_update",
    "agent.task_complete",
    "agent.task_fail",
    "agent.task_cancel",
    "task_blocked",
    "task_reopened",
    "agent.dispatch_worker",
    "finish_worker_run",
    "cancel_worker_run",
    "agent.task_pause",
    "agent.task_resume",
    "agent.task_archive",
    "agent.request_action",
    "agent.respond_action",
    "agent.task_update_step",
    "agent.task_progress",
    "set_peer_credential",
    "list_peers",
    "delete_peer_credential",
    "link_tasks",
    "unlink_tasks",
    "agent.schedule_create",
    "agent.schedule_pause",
    "agent.schedule_resume",
    "agent.schedule_trigger",
    "agent.schedule_delete",
    "create_webhook",
    "list_webhooks",
    "get_webhook",
    "delete_webhook",
    "list_webhook_deliveries",
    "retry_webhook_delivery",
  ],
  worker: [...TASK_READS, "agent.task_claim_step", "agent.task_claim_next", "agent.task_update_step", "agent.task_progress", "finish_worker_run", "agent.request_action"],
  observer: READS,
  approver: [...READS, "agent.respond_action"],
};

/** Catalog operations that are deliberately not MCP tools: admin work, the tool list itself, multi-token batches. */
const NOT_TOOLS = new Set(["createSession", "mintToken", "revokeAllTokens", "listTools", "batch"]);
const PATH_ARGS: Readonly<Record<string, string>> = { tid: "task_id", step: "step_id", run: "run_id", action_id: "action_id", link_id: "link_id", token_id: "token_id", origin: "origin", schedule_id: "schedule_id", webhook_id: "webhook_id", delivery_id: "delivery_id" };

const pathArgsOf = (op: Operation): string[] => [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!).filter((p) => p !== "sid").map((p) => PATH_ARGS[p]!);
const isWriteTool = (name: string): boolean => mcpTool(name)!.operations.some((op) => op.method !== "get");
const sorted = (names: Iterable<string>): string[] => [...names].sort();

/** The tool names `role` should see, from the catalog: every operation whose roles include it, as its MCP tool. */
function expectedToolNames(role: SessionRole): string[] {
  return sorted(MCP_TOOLS.filter((t) => toolAvailable(t, role)).map((t) => t.name));
}

interface RoleTokens {
  s: TestSession;
  taskPath: string;
  tokens: Record<SessionRole, string>;
}

/** A session with a task, a worker run of it, and one token of each role. */
async function roleTokens(): Promise<RoleTokens> {
  const s = await newSession();
  const taskPath = await newTask(s, uniqueId("roles"), [step("a"), step("b", ["a"])]);
  const worker = await dispatch(s, taskPath);
  return { s, taskPath, tokens: { orchestrator: s.orch, worker: worker.token, observer: s.observer, approver: await mintRole(s, "approver") } };
}

describe("The MCP tool set follows the route catalog", () => {
  it("Should make every catalog operation that is neither a stream nor admin or batch work a tool, with the catalog's roles", () => {
    const expected = OPERATIONS.filter((op) => op.stream === undefined && !NOT_TOOLS.has(op.operationId));
    const covered = MCP_TOOLS.flatMap((t) => t.operations.map((op) => op.operationId));
    expect(sorted(covered)).toEqual(sorted(expected.map((op) => op.operationId)));
    for (const tool of MCP_TOOLS) {
      expect(sorted(tool.roles), tool.name).toEqual(sorted(new Set(tool.operations.flatMap((op) => op.roles))));
    }
    // The two request-action routes are one tool; every other tool is one operation under its task-tool name.
    expect(mcpTool("agent.request_action")!.operations.map((op) => op.operationId).sort()).toEqual(["requestStepAction", "requestTaskAction"]);
    for (const tool of MCP_TOOLS.filter((t) => t.name !== "agent.request_action")) expect(tool.operations.map((op) => op.tool)).toEqual([tool.name]);
  });

  it("Should give each role the tools the role table names for it, and no role an admin or batch operation", () => {
    for (const role of ROLES) expect(expectedToolNames(role), role).toEqual(sorted(LITERAL_TOOLS[role]));
    for (const name of ["create_session", "mint_token", "list_tools", "batch", "command_socket", "task_events", "session_events", "schedule_events"]) expect(mcpTool(name), name).toBeUndefined();
  });
});

describe.each(KINDS)("tools/list by role (%s client)", (kind) => {
  let ctx: RoleTokens;
  const clients = new Map<SessionRole, McpClient>();
  const listed = new Map<SessionRole, Awaited<ReturnType<McpClient["listTools"]>>["tools"]>();

  beforeAll(async () => {
    ctx = await roleTokens();
    for (const role of ROLES) {
      const client = await connectMcp(ctx.tokens[role], kind);
      clients.set(role, client);
      listed.set(role, (await client.listTools()).tools);
    }
  });
  afterAll(async () => {
    for (const client of clients.values()) await client.close();
  });

  it.each(ROLES)("Should list exactly the %s role's catalog tools, each name once", (role) => {
    const names = listed.get(role)!.map((t) => t.name);
    expect(new Set(names).size).toBe(names.length);
    expect(sorted(names)).toEqual(expectedToolNames(role));
    expect(sorted(names)).toEqual(sorted(LITERAL_TOOLS[role]));
  });

  it("Should show a worker its claim and step tools and none of the orchestrator's", () => {
    const names = new Set(listed.get("worker")!.map((t) => t.name));
    for (const name of ["agent.task_claim_step", "agent.task_claim_next", "agent.task_update_step", "agent.task_query_steps", "agent.task_get", "agent.task_progress", "finish_worker_run"]) expect(names.has(name), name).toBe(true);
    for (const name of ["agent.task_create", "agent.task_update", "agent.dispatch_worker", "agent.task_complete", "agent.task_pause", "cancel_worker_run", "agent.respond_action"]) expect(names.has(name), name).toBe(false);
  });

  it("Should show an orchestrator no claim tool, an observer no write tool, and an approver agent.respond_action as its only write", () => {
    const orchestrator = new Set(listed.get("orchestrator")!.map((t) => t.name));
    expect(orchestrator.has("agent.task_claim_step")).toBe(false);
    expect(orchestrator.has("agent.task_claim_next")).toBe(false);
    for (const tool of listed.get("observer")!) {
      expect(isWriteTool(tool.name), tool.name).toBe(false);
      expect(tool.annotations?.readOnlyHint, tool.name).toBe(true);
    }
    expect(listed.get("approver")!.filter((t) => isWriteTool(t.name)).map((t) => t.name)).toEqual(["agent.respond_action"]);
  });

  it.each(ROLES)("Should describe the %s role's tool arguments with the routes' own schemas", (role) => {
    for (const tool of listed.get(role)!) {
      const schema = tool.inputSchema as { type: string; properties: Record<string, any>; required?: string[] };
      const expected: Record<string, unknown> = {};
      const pathArgs = new Set<string>();
      for (const op of mcpTool(tool.name)!.operations) {
        for (const arg of pathArgsOf(op)) pathArgs.add(arg);
        if (op.body !== undefined) Object.assign(expected, (jsonSchemaOf(op.body) as { properties?: object }).properties);
        if (op.query !== undefined) Object.assign(expected, (jsonSchemaOf(op.query, "output") as { properties?: object }).properties);
      }
      delete expected.access_token;
      expect(schema.type, tool.name).toBe("object");
      for (const [key, fieldSchema] of Object.entries(expected)) expect(schema.properties[key], `${tool.name}.${key}`).toEqual(fieldSchema);
      for (const arg of pathArgs) expect(schema.properties[arg], `${tool.name}.${arg}`).toMatchObject({ type: "string" });
      expect("access_token" in schema.properties, tool.name).toBe(false);
      expect("idempotency_key" in schema.properties, `${tool.name}.idempotency_key`).toBe(isWriteTool(tool.name));
      // Nothing else: no session, no actor, no field the routes do not read.
      const allowed = new Set([...Object.keys(expected), ...pathArgs, ...(isWriteTool(tool.name) ? ["idempotency_key"] : [])]);
      expect(Object.keys(schema.properties).filter((k) => !allowed.has(k)), tool.name).toEqual([]);
      for (const key of schema.required ?? []) expect(allowed.has(key), `${tool.name} requires ${key}`).toBe(true);
    }
  });

  it("Should require task_id and run_id of an orchestrator where the route needs them, and leave them to a worker's token", () => {
    const schemaOf = (role: SessionRole, name: string) => listed.get(role)!.find((t) => t.name === name)!.inputSchema as { required?: string[] };
    for (const name of ["agent.task_get", "agent.task_update_step", "agent.task_progress", "agent.task_query_steps", "finish_worker_run", "agent.request_action"]) {
      expect(schemaOf("orchestrator", name).required ?? [], name).toContain("task_id");
      expect(schemaOf("worker", name).required ?? [], name).not.toContain("task_id");
    }
    expect(schemaOf("orchestrator", "finish_worker_run").required).toContain("run_id");
    expect(schemaOf("worker", "finish_worker_run").required ?? []).not.toContain("run_id");
    expect(schemaOf("orchestrator", "agent.task_update_step").required).toEqual(expect.arrayContaining(["task_id", "step_id", "status"]));
    expect(schemaOf("worker", "agent.task_update_step").required).toEqual(expect.arrayContaining(["step_id", "status"]));
    // One tool for a step action and a task action: step_id chooses which, so it is never required.
    expect(schemaOf("orchestrator", "agent.request_action").required ?? []).not.toContain("step_id");
    expect(schemaOf("observer", "agent.task_get").required).toContain("task_id");
    expect(schemaOf("observer", "agent.task_list").required ?? []).not.toContain("task_id");
  });
});

describe.each(KINDS)("A tool outside the caller's role (%s client)", (kind) => {
  let ctx: RoleTokens;
  const clients = new Map<SessionRole, McpClient>();
  const taskId = () => ctx.taskPath.split("/").at(-1)!;

  beforeAll(async () => {
    ctx = await roleTokens();
    for (const role of ROLES) clients.set(role, await connectMcp(ctx.tokens[role], kind));
  });
  afterAll(async () => {
    for (const client of clients.values()) await client.close();
  });

  it.each([
    ["worker", "agent.task_create", () => ({ task_id: uniqueId("w"), wal_name: uniqueId("w"), title: "Not mine to create", summary: "", steps: [step("x")] })],
    ["worker", "agent.dispatch_worker", () => ({})],
    ["worker", "agent.task_update", () => ({ ops: [{ op: "update_task", title: "Renamed by a worker" }] })],
    ["observer", "agent.task_update_step", () => ({ task_id: taskId(), step_id: "a", status: "cancelled" })],
    ["observer", "agent.respond_action", () => ({ task_id: taskId(), action_id: "act_none", decision: "approved" })],
    ["approver", "agent.task_pause", () => ({ task_id: taskId(), reason: "not an approver's call" })],
    ["approver", "agent.task_claim_step", () => ({ task_id: taskId(), step_id: "a" })],
    ["orchestrator", "agent.task_claim_next", () => ({ task_id: taskId() })],
  ] as const)("Should answer a %s calling %s with tool_not_available, writing nothing", async (role, name, args) => {
    await expectToolRefusedWritingNothing(ctx.taskPath, ctx.s.orch, () => clients.get(role)!.callTool({ name, arguments: args() }), "tool_not_available", 403);
  });

  it.each(ROLES)("Should answer every tool the %s role lacks, whatever its arguments, with tool_not_available (a worker's session-wide read: permission_denied)", async (role) => {
    const missing = MCP_TOOLS.filter((t) => !toolAvailable(t, role));
    const outOfScope = (name: string) => role === "worker" && [...SESSION_READS, "list_peers", "list_tokens", "list_webhooks", "get_webhook", "list_webhook_deliveries"].includes(name);
    await expectToolRefusedWritingNothing(
      ctx.taskPath,
      ctx.s.orch,
      async () => {
        const results = await Promise.all(missing.map((t) => clients.get(role)!.callTool({ name: t.name, arguments: { task_id: taskId(), step_id: "a" } })));
        for (const [i, result] of results.entries()) {
          const name = missing[i]!.name;
          const error = outOfScope(name) ? { code: "permission_denied", details: { role, scope: "task", tool: name } } : { code: "tool_not_available", details: { role, tool: name } };
          expect(result.structuredContent, name).toEqual({ status: 403, error: { ...error, message: expect.any(String) } });
        }
        // The last tool_not_available one stands for all in the helper's full shape check (every role lacks a write tool).
        return results.filter((r: any) => r.structuredContent.error.code === "tool_not_available").at(-1);
      },
      "tool_not_available",
      403,
    );
  });

  it.each(ROLES)("Should answer a %s calling a tool that does not exist with tool_not_available, writing nothing", async (role) => {
    for (const name of ["agent.task_delete", "create_session", "batch", ""]) {
      await expectToolRefusedWritingNothing(ctx.taskPath, ctx.s.orch, () => clients.get(role)!.callTool({ name, arguments: { task_id: taskId() } }), "tool_not_available", 403);
    }
  });
});
