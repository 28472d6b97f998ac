/**
 * MCP errors through the official clients (2026-07-28 and 2025-11-25): every domain error of a tool call is an
 * isError result carrying the REST error (code, status, a text that names the code) and writes nothing;
 * authentication and Origin are refused at HTTP before MCP starts; identity always comes from the token; and
 * an idempotency_key makes a retried call answer the first result without writing again.
 */
import { SELF } from "cloudflare:test";
import { decode } from "hono/jwt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN, call, dispatch, newTask, step, type TestSession } from "../support/helpers.js";
import { type ClientKind, connectMcp, expectToolError, expectToolRefusedWritingNothing, MCP_URL, type McpClient, postMcp, toolAnswer, walSnapshot } from "../support/mcp-clients.js";
import { expectError, mintRole, signClaims, uniqueId, walOf } from "../support/support.js";

const KINDS: readonly ClientKind[] = ["modern", "legacy"];

/** A session with its orchestrator's agent and run ids, which its writes must carry. */
interface McpSession extends TestSession {
  agentId: string;
  runId: string;
}

async function newMcpSession(): Promise<McpSession> {
  const res = await call("POST", "/v1/sessions", ADMIN, {});
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const b = res.body;
  return { sid: b.session_id, orch: b.orchestrator.token, observer: b.observer.token, agentId: b.orchestrator.agent_id, runId: b.orchestrator.run_id };
}

const taskIdOf = (taskPath: string): string => taskPath.split("/").at(-1)!;

/** A create body for agent.task_create. */
function createArgs(taskId: string, steps: ReturnType<typeof step>[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { task_id: taskId, wal_name: taskId, title: `Task ${taskId}`, summary: "", steps, ...extra };
}

/** Asserts that no task `taskId` exists in the session (a refused create left nothing behind). */
async function expectNoTask(s: TestSession, taskId: string): Promise<void> {
  expectError(await call("GET", `/v1/sessions/${s.sid}/tasks/${taskId}`, s.orch), 404, "not_found");
}

/** Clients a test opens, closed after its describe block. */
function clientPool() {
  const open: McpClient[] = [];
  return {
    async connect(token: string, kind: ClientKind, headers?: Record<string, string>): Promise<McpClient> {
      const client = await connectMcp(token, kind, headers);
      open.push(client);
      return client;
    },
    async closeAll(): Promise<void> {
      for (const client of open.splice(0)) await client.close();
    },
  };
}

describe.each(KINDS)("Domain errors as isError tool results (%s client)", (kind) => {
  let S: McpSession;
  let orch: McpClient;
  const pool = clientPool();
  const worker = async (taskPath: string, body: Record<string, unknown> = {}) => pool.connect((await dispatch(S, taskPath, body)).token, kind);

  beforeAll(async () => {
    S = await newMcpSession();
    orch = await pool.connect(S.orch, kind);
  });
  afterAll(() => pool.closeAll());

  it("Should answer arguments of the wrong type with validation_error, writing nothing", async () => {
    const t = await newTask(S, uniqueId("types"), [step("a"), step("b", ["a"])]);
    const tid = taskIdOf(t);
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "agent.task_update_step", arguments: { task_id: tid, step_id: "a", status: 7 } }), "validation_error", 400);
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "agent.task_update", arguments: { task_id: tid, ops: "rename it" } }), "validation_error", 400);
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "agent.task_pause", arguments: { task_id: 42 } }), "validation_error", 400);
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "agent.task_query_steps", arguments: { task_id: tid, include_terminal_steps: "yes" } }), "validation_error", 400);
    expectToolError(await orch.callTool({ name: "agent.task_list", arguments: { limit: "many" } }), "validation_error", 400);
    const id = uniqueId("types");
    expectToolError(await orch.callTool({ name: "agent.task_create", arguments: createArgs(id, [step("a")], { title: 5 }) }), "validation_error", 400);
    expectToolError(await orch.callTool({ name: "agent.task_create", arguments: { ...createArgs(id, []), steps: "a then b" } }), "validation_error", 400);
    await expectNoTask(S, id);
  });

  it("Should answer an argument the tool does not take with validation_error, writing nothing", async () => {
    const t = await newTask(S, uniqueId("extra"), [step("a")]);
    const tid = taskIdOf(t);
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "agent.task_pause", arguments: { task_id: tid, reason: "why not", bogus: true } }), "validation_error", 400);
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "agent.task_get", arguments: { task_id: tid, bogus: "1" } }), "validation_error", 400);
    const id = uniqueId("extra");
    expectToolError(await orch.callTool({ name: "agent.task_create", arguments: createArgs(id, [step("a")], { colour: "blue" }) }), "validation_error", 400);
    await expectNoTask(S, id);
  });

  it("Should answer an orchestrator's call without the task_id or run_id its route needs with validation_error", async () => {
    const t = await newTask(S, uniqueId("noid"), [step("a")]);
    const tid = taskIdOf(t);
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "agent.task_pause", arguments: { reason: "which task?" } }), "validation_error", 400);
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "agent.task_update_step", arguments: { step_id: "a", status: "cancelled" } }), "validation_error", 400);
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "finish_worker_run", arguments: { task_id: tid, outcome: "finished" } }), "validation_error", 400);
    expectToolError(await orch.callTool({ name: "agent.task_get", arguments: {} }), "validation_error", 400);
  });

  it.each([
    ["a wrong-typed body field", "agent.task_update_step", (tid: string) => ({ task_id: tid, step_id: "a", status: 7 }), "status"],
    ["a missing task_id", "agent.task_pause", () => ({ reason: "which task?" }), "task_id"],
    ["a wrong-typed task_id", "agent.task_pause", () => ({ task_id: 42 }), "task_id"],
  ] as const)("Should name the argument in details.issues for %s, as the validation_error text tells the model to look there", async (_what, name, args, path) => {
    const t = await newTask(S, uniqueId("issues"), [step("a")]);
    const result = await orch.callTool({ name, arguments: args(taskIdOf(t)) });
    expectToolError(result, "validation_error", 400);
    expect(result.content[0].text).toContain("details.issues");
    expect(result.structuredContent.error.details.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path, message: expect.any(String) })]));
  });

  // A dot segment in a path argument must not move the call to another route: `.../runs/../cancel` is the task's
  // own cancel, `.../steps/../actions` the task-level action, `.../tasks/..` the session.
  it.each([
    ["cancel_worker_run", (tid: string) => ({ task_id: tid, run_id: "..", reason: "one run only" })],
    ["agent.request_action", (tid: string) => ({ task_id: tid, step_id: "..", kind: "approval", prompt: "About step a?" })],
    ["agent.task_update_step", (tid: string) => ({ task_id: tid, step_id: ".", status: "cancelled" })],
    ["agent.task_get", () => ({ task_id: ".." })],
  ] as const)("Should refuse %s with a dot-segment path argument with validation_error, writing nothing", async (name, args) => {
    const t = await newTask(S, uniqueId("dots"), [step("a")]);
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name, arguments: args(taskIdOf(t)) }), "validation_error", 400);
  });

  it("Should answer ids that name nothing with not_found, writing nothing", async () => {
    const t = await newTask(S, uniqueId("nf"), [step("a")]);
    const tid = taskIdOf(t);
    expectToolError(await orch.callTool({ name: "agent.task_get", arguments: { task_id: uniqueId("missing") } }), "not_found", 404);
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "agent.task_update_step", arguments: { task_id: tid, step_id: "zz", status: "cancelled" } }), "not_found", 404);
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "agent.task_action", arguments: { task_id: tid, action_id: "act_missing" } }), "not_found", 404);
  });

  it("Should refuse a create whose task_id or wal_name is taken with task_id_conflict or path_conflict, creating nothing", async () => {
    const t = await newTask(S, uniqueId("taken"), [step("a")]);
    const tid = taskIdOf(t);
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "agent.task_create", arguments: createArgs(tid, [step("x")], { wal_name: uniqueId("wal") }) }), "task_id_conflict", 409);
    const id = uniqueId("taken");
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "agent.task_create", arguments: createArgs(id, [step("x")], { wal_name: tid }) }), "path_conflict", 409);
    await expectNoTask(S, id);
  });

  it.each([
    ["dependency_cycle", [step("a", ["b"]), step("b", ["a"])]],
    ["unknown_dependency", [step("a", ["nope"])]],
    ["duplicate_step", [step("a"), step("a")]],
  ] as const)("Should refuse a create whose DAG is invalid with %s, creating nothing", async (code, steps) => {
    const id = uniqueId("dag");
    expectToolError(await orch.callTool({ name: "agent.task_create", arguments: createArgs(id, [...steps]) }), code, 409);
    await expectNoTask(S, id);
  });

  it.each([
    ["dependency_cycle", [{ op: "add_dependency", step_id: "a", depends_on_step_id: "b" }]],
    ["unknown_dependency", [{ op: "add_step", step: step("c", ["nope"]) }]],
    ["duplicate_step", [{ op: "add_step", step: step("a") }]],
    ["step_has_dependents", [{ op: "delete_step", step_id: "a" }]],
  ] as const)("Should refuse an update that breaks the DAG with %s, writing nothing", async (code, ops) => {
    const t = await newTask(S, uniqueId("upd"), [step("a"), step("b", ["a"])]);
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "agent.task_update", arguments: { task_id: taskIdOf(t), ops } }), code, 409);
  });

  it("Should refuse a change the state machine forbids with invalid_transition, writing nothing", async () => {
    const t = await newTask(S, uniqueId("trans"), [step("a")]);
    const tid = taskIdOf(t);
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "agent.task_update_step", arguments: { task_id: tid, step_id: "a", status: "ready" } }), "invalid_transition", 409);
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "agent.task_resume", arguments: { task_id: tid } }), "invalid_transition", 409);
  });

  it("Should refuse changes to a cancelled task with task_terminal, writing nothing", async () => {
    const t = await newTask(S, uniqueId("term"), [step("a")]);
    const tid = taskIdOf(t);
    toolAnswer(await orch.callTool({ name: "agent.task_cancel", arguments: { task_id: tid, reason: "plans changed" } }));
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "agent.task_update", arguments: { task_id: tid, ops: [{ op: "update_task", title: "Too late" }] } }), "task_terminal", 409);
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "agent.task_update", arguments: { task_id: tid, ops: [{ op: "add_step", step: step("b") }] } }), "task_terminal", 409);
  });

  it("Should refuse claims and dispatches on a paused task with task_not_dispatchable, writing nothing", async () => {
    const t = await newTask(S, uniqueId("paused"), [step("a")]);
    const tid = taskIdOf(t);
    const w = await worker(t);
    toolAnswer(await orch.callTool({ name: "agent.task_pause", arguments: { task_id: tid } }));
    await expectToolRefusedWritingNothing(t, S.orch, () => w.callTool({ name: "agent.task_claim_next", arguments: {} }), "task_not_dispatchable", 409);
    await expectToolRefusedWritingNothing(t, S.orch, () => w.callTool({ name: "agent.task_claim_step", arguments: { step_id: "a" } }), "task_not_dispatchable", 409);
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "agent.dispatch_worker", arguments: { task_id: tid } }), "task_not_dispatchable", 409);
  });

  it("Should refuse a step another worker holds with step_already_claimed, writing nothing", async () => {
    const t = await newTask(S, uniqueId("held"), [step("a")]);
    const [w1, w2] = [await worker(t), await worker(t)];
    expect(toolAnswer(await w1.callTool({ name: "agent.task_claim_step", arguments: { step_id: "a" } })).step).toMatchObject({ step_id: "a", status: "claimed" });
    await expectToolRefusedWritingNothing(t, S.orch, () => w2.callTool({ name: "agent.task_claim_step", arguments: { step_id: "a" } }), "step_already_claimed", 409);
  });

  it("Should refuse a second claim by one run with step_already_claimed_by_run, writing nothing", async () => {
    const t = await newTask(S, uniqueId("twice"), [step("a"), step("b")]);
    const w = await worker(t);
    toolAnswer(await w.callTool({ name: "agent.task_claim_step", arguments: { step_id: "a" } }));
    await expectToolRefusedWritingNothing(t, S.orch, () => w.callTool({ name: "agent.task_claim_step", arguments: { step_id: "b" } }), "step_already_claimed_by_run", 409);
  });

  it("Should answer claim_next with nothing to claim as a normal result with no_step_claimed, writing nothing", async () => {
    const t = await newTask(S, uniqueId("none"), [step("a"), step("b", ["a"])]);
    const [w1, w2] = [await worker(t), await worker(t)];
    toolAnswer(await w1.callTool({ name: "agent.task_claim_next", arguments: {} }));
    const before = await walSnapshot(t, S.orch);
    const result = await w2.callTool({ name: "agent.task_claim_next", arguments: {} });
    expect(result.isError ?? false).toBe(false);
    expect(toolAnswer(result).no_step_claimed).toBe(true);
    expect(await walSnapshot(t, S.orch)).toBe(before);
  });

  it("Should refuse completing a task whose required steps are not done with task_not_completeable, writing nothing", async () => {
    const t = await newTask(S, uniqueId("early"), [step("a")]);
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "agent.task_complete", arguments: { task_id: taskIdOf(t) } }), "task_not_completeable", 409);
  });

  it("Should refuse a second answer to an action with action_resolved, writing nothing", async () => {
    const t = await newTask(S, uniqueId("act"), [step("a")]);
    const tid = taskIdOf(t);
    const approver = await pool.connect(await mintRole(S, "approver"), kind);
    const asked = toolAnswer(await orch.callTool({ name: "agent.request_action", arguments: { task_id: tid, kind: "approval", prompt: "Approve the plan?" } }));
    expect(asked).toMatchObject({ status: "open", action: { step_id: null } });
    toolAnswer(await approver.callTool({ name: "agent.respond_action", arguments: { task_id: tid, action_id: asked.action_id, decision: "approved" } }));
    await expectToolRefusedWritingNothing(t, S.orch, () => approver.callTool({ name: "agent.respond_action", arguments: { task_id: tid, action_id: asked.action_id, decision: "rejected" } }), "action_resolved", 409);
  });

  it("Should refuse a worker that names another task with permission_denied, writing nothing there", async () => {
    const mine = await newTask(S, uniqueId("mine"), [step("a")]);
    const other = await newTask(S, uniqueId("other"), [step("a")]);
    const w = await worker(mine);
    const otherId = taskIdOf(other);
    await expectToolRefusedWritingNothing(other, S.orch, () => w.callTool({ name: "agent.task_claim_step", arguments: { task_id: otherId, step_id: "a" } }), "permission_denied", 403);
    await expectToolRefusedWritingNothing(other, S.orch, () => w.callTool({ name: "agent.task_update_step", arguments: { task_id: otherId, step_id: "a", status: "cancelled" } }), "permission_denied", 403);
    await expectToolRefusedWritingNothing(other, S.orch, () => w.callTool({ name: "agent.task_get", arguments: { task_id: otherId } }), "permission_denied", 403);
    // Nor another run of its own task.
    const sibling = await dispatch(S, mine);
    await expectToolRefusedWritingNothing(mine, S.orch, () => w.callTool({ name: "finish_worker_run", arguments: { run_id: sibling.run_id, outcome: "finished" } }), "permission_denied", 403);
  });

  it("Should refuse an idempotency_key reused with other arguments with idempotency_conflict, writing nothing", async () => {
    const t = await newTask(S, uniqueId("idem"), [step("a")]);
    const tid = taskIdOf(t);
    const key = uniqueId("key");
    toolAnswer(await orch.callTool({ name: "agent.task_update", arguments: { task_id: tid, ops: [{ op: "update_task", title: "One" }], idempotency_key: key } }));
    await expectToolRefusedWritingNothing(t, S.orch, () => orch.callTool({ name: "agent.task_update", arguments: { task_id: tid, ops: [{ op: "update_task", title: "Two" }], idempotency_key: key } }), "idempotency_conflict", 422);
  });
});

/** The claims of a real token, to forge a copy of it. */
const claimsOf = (token: string): Record<string, unknown> => decode(token).payload as Record<string, unknown>;

describe("HTTP refusals before MCP starts (raw JSON-RPC)", () => {
  let S: McpSession;
  let t: string;
  const pauseCall = () => ({ id: 2, method: "tools/call", params: { name: "agent.task_pause", arguments: { task_id: taskIdOf(t), reason: "forged" } } });

  beforeAll(async () => {
    S = await newMcpSession();
    t = await newTask(S, uniqueId("http"), [step("a")]);
  });

  it("Should answer a request without a token with 401 and a WWW-Authenticate challenge", async () => {
    const res = await postMcp({ id: 1, method: "tools/list", params: {} });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe('Bearer realm="agent-task-runtime"');
    expect(res.message).toMatchObject({ error: { code: "unauthorized" } });
  });

  it("Should answer a forged, tampered or expired token with 401 and write nothing", async () => {
    const claims = claimsOf(S.orch);
    const [head, body, signature] = S.orch.split(".") as [string, string, string];
    const tampered = `${head}.${body}.${signature.slice(0, -2)}${signature.endsWith("AA") ? "BB" : "AA"}`;
    const expired = await signClaims({ ...claims, exp: Math.floor(Date.now() / 1000) - 60 });
    const before = await walSnapshot(t, S.orch);
    for (const token of [await signClaims(claims, "wrong"), tampered, expired, "not-a-token"]) {
      const res = await postMcp(pauseCall(), { authorization: `Bearer ${token}` });
      expect(res.status, token).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="agent-task-runtime"');
    }
    expect(await walSnapshot(t, S.orch)).toBe(before);
  });

  it("Should answer the admin token with 403, writing nothing", async () => {
    const before = await walSnapshot(t, S.orch);
    const res = await postMcp(pauseCall(), { authorization: `Bearer ${ADMIN}` });
    expect(res.status).toBe(403);
    expect(res.message).toMatchObject({ error: { code: "permission_denied" } });
    expect(await walSnapshot(t, S.orch)).toBe(before);
  });

  it("Should answer an Origin that CORS_ORIGINS does not allow with 403, and serve an allowed one and the endpoint's own", async () => {
    const auth = { authorization: `Bearer ${S.orch}` };
    const before = await walSnapshot(t, S.orch);
    const evil = await postMcp(pauseCall(), { ...auth, origin: "https://evil.example" });
    expect(evil.status).toBe(403);
    expect(evil.message).toMatchObject({ error: { code: "permission_denied" } });
    expect(await walSnapshot(t, S.orch)).toBe(before);
    for (const origin of ["https://dash.example", "http://runtime.test"]) {
      const ok = await postMcp({ id: 1, method: "tools/list", params: {} }, { ...auth, origin });
      expect(ok.status, origin).toBe(200);
      expect(ok.message.result.tools.map((tool: { name: string }) => tool.name)).toContain("agent.task_create");
    }
  });
});

describe("MCP message bounds (raw POSTs)", () => {
  let S: McpSession;
  let t: string;
  const raw = (body: string) =>
    SELF.fetch(MCP_URL, { method: "POST", headers: { authorization: `Bearer ${S.orch}`, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" }, body });

  beforeAll(async () => {
    S = await newMcpSession();
    t = await newTask(S, uniqueId("bounds"), [step("a")]);
  });

  it("Should answer a 2025-era request with one JSON body and no session, not an event stream", async () => {
    const res = await raw(JSON.stringify({ jsonrpc: "2.0", id: 7, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.headers.get("mcp-session-id")).toBeNull();
    expect(await res.json()).toMatchObject({ jsonrpc: "2.0", id: 7, result: { protocolVersion: "2025-11-25", serverInfo: { name: "agent-task-runtime" } } });
  });

  it("Should answer text that is not JSON with JSON-RPC's parse error", async () => {
    const res = await raw('{"jsonrpc": "2.0", "id": 1, "method": "tools/li');
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ jsonrpc: "2.0", error: { code: -32700 } });
  });

  it("Should refuse a message over MAX_BODY_BYTES with 413 and one nested deeper than the JSON bound with 400, writing nothing", async () => {
    const before = await walSnapshot(t, S.orch);
    const update = (metadata: unknown) => JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "agent.task_update", arguments: { task_id: taskIdOf(t), ops: [{ op: "update_task", metadata }] } } });
    const big = await raw(update({ blob: "x".repeat(1_100_000) }));
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ error: { code: "payload_too_large" } });
    let deep: unknown = {};
    for (let i = 0; i < 200; i++) deep = { d: deep };
    const nested = await raw(update(deep));
    expect(nested.status).toBe(400);
    expect(await nested.json()).toMatchObject({ error: { code: "validation_error" } });
    expect(await walSnapshot(t, S.orch)).toBe(before);
  });
});

describe.each(KINDS)("HTTP refusals as the official clients see them (%s client)", (kind) => {
  let S: McpSession;
  const pool = clientPool();

  beforeAll(async () => {
    S = await newMcpSession();
  });
  afterAll(() => pool.closeAll());

  it("Should fail to connect with no usable token, a forged one, or the admin token", async () => {
    for (const token of ["", "not-a-token", await signClaims(claimsOf(S.orch), "wrong"), ADMIN]) {
      await expect(connectMcp(token, kind), token).rejects.toThrow();
    }
  });

  it("Should fail to connect from a foreign Origin and connect and list tools from an allowed one", async () => {
    await expect(connectMcp(S.orch, kind, { origin: "https://evil.example" })).rejects.toThrow();
    const client = await pool.connect(S.orch, kind, { origin: "https://dash.example" });
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain("agent.task_create");
  });
});

describe.each(KINDS)("Identity from the token, never from arguments (%s client)", (kind) => {
  let S: McpSession;
  let other: McpSession;
  const pool = clientPool();
  const spoofed = () => ({ actor_agent_id: "mallory", actor_run_id: "run_mallory", actor: { agent_id: "mallory", role: "admin" }, actor_role: "admin", session_id: other.sid, sid: other.sid });

  beforeAll(async () => {
    [S, other] = [await newMcpSession(), await newMcpSession()];
  });
  afterAll(() => pool.closeAll());

  it("Should ignore actor and session arguments on create and update and record the token's agent, run and session", async () => {
    const orch = await pool.connect(S.orch, kind);
    const id = uniqueId("actor");
    const created = toolAnswer(await orch.callTool({ name: "agent.task_create", arguments: { ...createArgs(id, [step("a")]), ...spoofed() } }));
    expect(created.task).toMatchObject({ task_id: id });
    toolAnswer(await orch.callTool({ name: "agent.task_update", arguments: { task_id: id, ops: [{ op: "update_task", title: "Renamed" }], ...spoofed() } }));
    const t = `/v1/sessions/${S.sid}/tasks/${id}`;
    const w = await dispatch(S, t);
    const wc = await pool.connect(w.token, kind);
    toolAnswer(await wc.callTool({ name: "agent.task_claim_step", arguments: { step_id: "a", ...spoofed() } }));
    toolAnswer(await wc.callTool({ name: "agent.task_update_step", arguments: { step_id: "a", status: "running", ...spoofed() } }));

    const wal = await walOf(t, S.orch);
    expect(wal.length).toBeGreaterThan(3);
    for (const e of wal) {
      expect(e.session_id, e.event_type).toBe(S.sid);
      expect([e.actor_agent_id, e.actor_run_id], e.event_type).not.toContain("mallory");
    }
    const byOrchestrator = wal.filter((e) => ["task_created", "task_updated"].includes(e.event_type));
    expect(byOrchestrator.length).toBeGreaterThanOrEqual(2);
    for (const e of byOrchestrator) expect([e.actor_agent_id, e.actor_run_id], e.event_type).toEqual([S.agentId, S.runId]);
    const byWorker = wal.filter((e) => e.event_type.startsWith("task_step_") && e.wal_seq > byOrchestrator.at(-1)!.wal_seq && e.actor_run_id === w.run_id);
    expect(byWorker.length).toBeGreaterThanOrEqual(2);
    for (const e of byWorker) expect(e.actor_agent_id).toBe(w.agent_id);
    // Not created in the session the arguments named.
    expectError(await call("GET", `/v1/sessions/${other.sid}/tasks/${id}`, other.orch), 404, "not_found");
  });

  it("Should refuse another session's worker on this session's task with permission_denied, writing nothing", async () => {
    const mine = await newTask(S, uniqueId("scope"), [step("a")]);
    const theirs = await newTask(other, uniqueId("scope"), [step("a")]);
    const foreign = await pool.connect((await dispatch(other, theirs)).token, kind);
    const tid = taskIdOf(mine);
    await expectToolRefusedWritingNothing(mine, S.orch, () => foreign.callTool({ name: "agent.task_claim_step", arguments: { task_id: tid, step_id: "a", session_id: S.sid } }), "permission_denied", 403);
    await expectToolRefusedWritingNothing(mine, S.orch, () => foreign.callTool({ name: "agent.task_get", arguments: { task_id: tid, session_id: S.sid } }), "permission_denied", 403);
  });

  it("Should keep another session's orchestrator in its own session, where this session's task does not exist", async () => {
    const mine = await newTask(S, uniqueId("scope"), [step("a")]);
    const foreign = await pool.connect(other.orch, kind);
    // The session is the token's: naming this one in the arguments does not reach it.
    await expectToolRefusedWritingNothing(mine, S.orch, () => foreign.callTool({ name: "agent.task_pause", arguments: { task_id: taskIdOf(mine), session_id: S.sid, sid: S.sid } }), "not_found", 404);
  });
});

describe.each(KINDS)("idempotency_key (%s client)", (kind) => {
  let S: McpSession;
  const pool = clientPool();

  beforeAll(async () => {
    S = await newMcpSession();
  });
  afterAll(() => pool.closeAll());

  it("Should answer a repeated update with the first result and write it once", async () => {
    const orch = await pool.connect(S.orch, kind);
    const t = await newTask(S, uniqueId("retry"), [step("a")]);
    const before = (await walOf(t, S.orch)).length;
    const args = { task_id: taskIdOf(t), ops: [{ op: "update_task", title: "Once" }, { op: "add_step", step: step("b", ["a"]) }], idempotency_key: uniqueId("key") };
    const first = toolAnswer(await orch.callTool({ name: "agent.task_update", arguments: args }));
    const second = toolAnswer(await orch.callTool({ name: "agent.task_update", arguments: args }));
    expect(first.event_ids.length).toBeGreaterThan(0);
    expect(second).toEqual(first);
    // Actor fields are dropped before the key's arguments are compared: still the same call.
    expect(toolAnswer(await orch.callTool({ name: "agent.task_update", arguments: { ...args, actor_agent_id: "mallory", session_id: "sess_other" } }))).toEqual(first);
    const wal = await walOf(t, S.orch);
    expect(wal.length).toBe(before + first.event_ids.length);
    expect(wal.slice(before).map((e) => e.event_id)).toEqual(first.event_ids);
  });

  it("Should answer a repeated create and a repeated claim with the first result, not a conflict", async () => {
    const orch = await pool.connect(S.orch, kind);
    const id = uniqueId("retry");
    const create = { ...createArgs(id, [step("a"), step("b")]), idempotency_key: uniqueId("key") };
    const created = toolAnswer(await orch.callTool({ name: "agent.task_create", arguments: create }));
    expect(toolAnswer(await orch.callTool({ name: "agent.task_create", arguments: create }))).toEqual(created);
    const t = `/v1/sessions/${S.sid}/tasks/${id}`;
    expect((await walOf(t, S.orch)).map((e) => e.event_id)).toEqual(created.event_ids);

    const w = await pool.connect((await dispatch(S, t)).token, kind);
    const claim = { step_id: "a", idempotency_key: uniqueId("key") };
    const claimed = toolAnswer(await w.callTool({ name: "agent.task_claim_step", arguments: claim }));
    const afterClaim = await walSnapshot(t, S.orch);
    expect(toolAnswer(await w.callTool({ name: "agent.task_claim_step", arguments: claim }))).toEqual(claimed);
    expect(await walSnapshot(t, S.orch)).toBe(afterClaim);
  });
});
