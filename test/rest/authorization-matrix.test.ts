/**
 * The authorization matrix of docs/security.md, checked across surfaces: every write of the route catalog, as every
 * role, through REST, one command of POST .../batch, one command of a command-socket frame and MCP (the official
 * client), and the a2a_client's own commands through A2A (the official client). A role the matrix refuses gets
 * exactly its 403 code there; a role it allows is not refused (whatever the state then answers: 2xx, 404, 409).
 * The expected cells come from the generator of the doc's matrix (scripts/security-matrix.ts), which
 * test/repo/security-matrix.test.ts holds equal to the doc.
 *
 * One session; per surface one task, driven through its writes in an order in which each allowed call has the
 * state it needs (a held step, an open action, a live run). Refused calls are sent first: they write nothing.
 */
import { type Task, TaskState } from "@a2a-js/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Operation, OPERATIONS, type Role, roleRefusal } from "../../routes/http/catalog.js";
import { MCP_TOOLS } from "../../routes/mcp/mcp-tools.js";
import { commandOf } from "../../scripts/security-matrix.js";
import { connectA2a, rpc, send } from "../support/a2a-clients.js";
import { ADMIN, call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { connectMcp, type McpClient, postMcp } from "../support/mcp-clients.js";
import { expectOk, mintRole, signClaims, uniqueId } from "../support/support.js";
import { openSocket, type TestSocket } from "../support/test-socket.js";

type Caller = Role | "a2a_client";
type Surface = "rest" | "batch" | "socket" | "mcp";
const SESSION_ROLES = ["orchestrator", "worker", "observer", "approver"] as const;

/** An answer on any surface: the status (MCP: the status in structuredContent) and the body or error envelope. */
interface Answer {
  readonly status: number;
  readonly body: any;
}

/** What a write's path and body are filled from: the surface's task and what earlier writes made. */
interface SurfaceTask {
  tid: string;
  actionId: string;
  linkId: string;
  worker: { token: string; run_id: string };
  finisher: { token: string; run_id: string };
  cancellee: { token: string; run_id: string };
  otherTask: string;
  /** The webhook createWebhook made (until then, an id no subscription has). */
  webhookId: string;
}

/** One write of the plan: its operation, path parameters, body, and what its answer leaves for the next ones. */
interface PlannedWrite {
  readonly op: string;
  readonly params?: (t: SurfaceTask) => Record<string, string>;
  readonly body: (t: SurfaceTask) => Record<string, unknown>;
  /** The worker token that calls it when the worker is allowed (default: the task's worker). */
  readonly workerToken?: (t: SurfaceTask) => string;
  readonly keep?: (answer: any, t: SurfaceTask) => void;
}

const reason = () => ({ reason: "checked by the matrix test" });
/** The task's writes, in the order the allowed calls go (refused ones are state-free and go first). */
const TASK_PLAN: readonly PlannedWrite[] = [
  { op: "claimStep", params: () => ({ step: "a" }), body: () => ({}) },
  { op: "claimNextStep", body: () => ({}) },
  { op: "appendProgress", params: () => ({ step: "a" }), body: () => ({ summary: "halfway" }) },
  { op: "requestStepAction", params: () => ({ step: "a" }), body: () => ({ kind: "approval", prompt: "Ship it?" }), keep: (a, t) => (t.actionId = a.action_id ?? t.actionId) },
  { op: "respondAction", params: (t) => ({ action_id: t.actionId }), body: () => ({ decision: "approved" }) },
  { op: "updateStepStatus", params: () => ({ step: "a" }), body: () => ({ status: "completed", result_summary: "done" }) },
  { op: "updateTask", body: () => ({ ops: [{ op: "update_task", title: "Renamed by the matrix test" }] }) },
  { op: "dispatchWorker", body: () => ({}) },
  { op: "cancelRun", params: (t) => ({ run: t.cancellee.run_id }), body: reason },
  { op: "finishRun", params: (t) => ({ run: t.finisher.run_id }), body: () => ({ outcome: "finished" }), workerToken: (t) => t.finisher.token },
  { op: "requestTaskAction", body: () => ({ kind: "approval", prompt: "Go on?" }) },
  { op: "pauseTask", body: reason },
  { op: "resumeTask", body: reason },
  { op: "blockTask", body: reason },
  { op: "reopenTask", body: reason },
  { op: "completeTask", body: reason },
  { op: "failTask", body: reason },
  { op: "cancelTask", body: reason },
  { op: "archiveTask", body: reason },
];

/** The session's writes (REST and MCP only: a batch and a socket carry one task's writes). */
const SESSION_PLAN: readonly PlannedWrite[] = [
  { op: "createTask", body: (t) => ({ task_id: t.otherTask, wal_name: t.otherTask, title: "Another task", summary: "", steps: [step("x")] }) },
  { op: "linkTasks", body: (t) => ({ kind: "source_task", from_task_id: t.otherTask, to_task_id: t.tid }), keep: (a, t) => (t.linkId = a.link?.link_id ?? t.linkId) },
  { op: "unlinkTasks", params: (t) => ({ link_id: t.linkId }), body: () => ({}) },
  { op: "setPeerCredential", body: () => ({ origin: "http://127.0.0.1:9", authorization: "Bearer peer" }) },
  { op: "deletePeerCredential", params: () => ({ origin: "http://127.0.0.1:9" }), body: () => ({}) },
  { op: "mintToken", body: () => ({ role: "observer" }) },
  // An id no token has: the allowed callers get 404, the refused ones their 403 first.
  { op: "revokeToken", params: () => ({ token_id: "tok_00000000000000000000000000" }), body: () => ({}) },
  { op: "createSession", body: () => ({}) },
  // The schedule's writes, its create first; the trigger makes one task, the delete removes the schedule.
  { op: "createSchedule", body: (t) => ({ schedule_id: `sched-${t.tid}`, cron: "0 0 1 1 *", task: { title: "Yearly", steps: [] } }) },
  { op: "pauseSchedule", params: (t) => ({ schedule_id: `sched-${t.tid}` }), body: () => ({}) },
  { op: "resumeSchedule", params: (t) => ({ schedule_id: `sched-${t.tid}` }), body: () => ({}) },
  { op: "triggerSchedule", params: (t) => ({ schedule_id: `sched-${t.tid}` }), body: () => ({}) },
  { op: "deleteSchedule", params: (t) => ({ schedule_id: `sched-${t.tid}` }), body: () => ({}) },
  // A webhook to a loopback receiver (OUTBOUND_ALLOWLIST "loopback" in the tests); a retry of a delivery it never had is 404.
  { op: "createWebhook", body: () => ({ url: "http://127.0.0.1:9/matrix", events: ["task.completed"] }), keep: (a, t) => (t.webhookId = a.webhook_id ?? t.webhookId) },
  { op: "retryWebhookDelivery", params: (t) => ({ webhook_id: t.webhookId, delivery_id: "dlv_none" }), body: () => ({}) },
  { op: "deleteWebhook", params: (t) => ({ webhook_id: t.webhookId }), body: () => ({}) },
];

/**
 * Writes this plan leaves out, and where their roles are checked instead: a revoke-all by an allowed caller would
 * end every token the other surfaces' checks still need.
 */
const CHECKED_ELSEWHERE: Readonly<Record<string, string>> = { revokeAllTokens: "test/rest/token-lifecycle.test.ts" };

const opById = (id: string): Operation => OPERATIONS.find((op) => op.operationId === id)!;
const PATH_ARGS: Readonly<Record<string, string>> = { tid: "task_id", step: "step_id", run: "run_id", action_id: "action_id", link_id: "link_id", origin: "origin", token_id: "token_id", schedule_id: "schedule_id", webhook_id: "webhook_id", delivery_id: "delivery_id" };
const mcpToolOf = (op: Operation): string | undefined => MCP_TOOLS.find((t) => t.operations.includes(op))?.name;

/** The matrix's cell: null when the caller may call it, else the 403 code (an a2a_client's token speaks A2A only). */
function expectedRefusal(op: Operation, caller: Caller): string | null {
  return caller === "a2a_client" ? "tool_not_available" : (roleRefusal(op, caller)?.code ?? null);
}

let s: TestSession;
let tokens: Record<Caller, string>;
let a2aAgent: string;
const mcpClients = new Map<string, McpClient>();

beforeAll(async () => {
  s = await newSession();
  a2aAgent = uniqueId("a2a");
  tokens = { admin: ADMIN, orchestrator: s.orch, worker: "", observer: s.observer, approver: await mintRole(s, "approver"), a2a_client: await mintRole(s, "a2a_client", a2aAgent) };
});

afterAll(async () => {
  for (const client of mcpClients.values()) await client.close();
});

/** A task for one surface, with a worker of each purpose dispatched on it. */
async function taskForSurface(surface: Surface): Promise<SurfaceTask> {
  const tid = uniqueId(`matrix-${surface}`);
  const path = await newTask(s, tid, [step("a"), step("b"), step("c")]);
  const [worker, finisher, cancellee] = [await dispatch(s, path), await dispatch(s, path), await dispatch(s, path)];
  return { tid, actionId: "act_none", linkId: `lnk_${"0".repeat(26)}`, worker, finisher, cancellee, otherTask: uniqueId(`other-${surface}`), webhookId: "wh_none" };
}

/** The HTTP request of a planned write. */
function requestOf(write: PlannedWrite, t: SurfaceTask): { op: Operation; method: string; path: string; body: Record<string, unknown>; params: Record<string, string> } {
  const op = opById(write.op);
  const params = { sid: s.sid, tid: t.tid, ...(write.params?.(t) ?? {}) };
  const path = op.path.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(params[name as keyof typeof params]!));
  return { op, method: op.method.toUpperCase(), path, body: write.body(t), params };
}

/** One command of a batch or a socket frame: the write's request with the caller's token. */
function batchCommand(write: PlannedWrite, t: SurfaceTask, token: string): Record<string, unknown> {
  const { method, path, body } = requestOf(write, t);
  return { token, method, path, body };
}

/**
 * Sends writes, each with its own token, through `surface`: REST and MCP calls concurrently, a batch's as the
 * commands of one request and a socket's as the commands of one frame (each authorized as if sent alone).
 */
async function sendThrough(surface: Surface, writes: readonly { write: PlannedWrite; token: string }[], t: SurfaceTask, socket: TestSocket | null): Promise<Answer[]> {
  switch (surface) {
    case "rest":
      return Promise.all(
        writes.map(({ write, token }) => {
          const { method, path, body } = requestOf(write, t);
          return call(method, path, token, method === "DELETE" ? undefined : body);
        }),
      );
    case "batch": {
      const res = await call("POST", `/v1/sessions/${s.sid}/tasks/${t.tid}/batch`, s.orch, { commands: writes.map(({ write, token }) => batchCommand(write, t, token)) });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.results;
    }
    case "socket": {
      const frame = await socket!.ask({ id: uniqueId("f"), commands: writes.map(({ write, token }) => batchCommand(write, t, token)) });
      expect(frame.results, JSON.stringify(frame)).toBeDefined();
      return frame.results;
    }
    case "mcp":
      return Promise.all(writes.map(({ write, token }) => callTool(write, t, token)));
  }
}

/** A write as the MCP tool that runs it, through the official client of `token`. */
async function callTool(write: PlannedWrite, t: SurfaceTask, token: string): Promise<Answer> {
  const { op, body, params } = requestOf(write, t);
  let client = mcpClients.get(token);
  if (client === undefined) mcpClients.set(token, (client = await connectMcp(token)));
  const args: Record<string, unknown> = { ...body };
  for (const [name, value] of Object.entries(params)) if (name !== "sid" && op.path.includes(`{${name}}`)) args[PATH_ARGS[name]!] = value;
  const result = await client.callTool({ name: mcpToolOf(op)!, arguments: args });
  return result.isError === true ? { status: result.structuredContent.status, body: { error: result.structuredContent.error } } : { status: 200, body: result.structuredContent };
}

/** The callers a surface serves per command (admin and a2a_client are refused at the door of MCP: checked apart). */
function callersOf(surface: Surface): readonly Caller[] {
  return surface === "mcp" ? SESSION_ROLES : surface === "rest" ? ["admin", ...SESSION_ROLES, "a2a_client"] : [...SESSION_ROLES, "a2a_client"];
}

/** Drives every write of `plan` through `surface`: all refused cells first, then the allowed ones in plan order. */
async function checkSurface(surface: Surface, plan: readonly PlannedWrite[]): Promise<number> {
  const t = await taskForSurface(surface);
  tokens.worker = t.worker.token;
  const socket = surface === "socket" ? await openSocket(`/v1/sessions/${s.sid}/tasks/${t.tid}`, s.orch) : null;
  let checked = 0;
  try {
    const refused = plan.flatMap((write) => callersOf(surface).flatMap((caller) => {
      const code = expectedRefusal(opById(write.op), caller);
      return code === null ? [] : [{ write, caller, code, token: tokens[caller] }];
    }));
    const answers = await sendThrough(surface, refused, t, socket);
    for (const [i, { write, caller, code }] of refused.entries()) {
      const answer = answers[i]!;
      expect([answer.status, answer.body?.error?.code], `${surface} ${write.op} as ${caller}: ${JSON.stringify(answer.body)}`).toEqual([403, code]);
    }
    checked += refused.length;
    for (const write of plan) {
      const op = opById(write.op);
      // The orchestrator last: it may settle what a worker's or an approver's call needs open (a held step, an action).
      for (const caller of [...callersOf(surface)].reverse()) {
        if (expectedRefusal(op, caller) !== null) continue;
        const token = caller === "worker" && write.workerToken !== undefined ? write.workerToken(t) : tokens[caller];
        const [answer] = await sendThrough(surface, [{ write, token }], t, socket);
        expect([401, 403], `${surface} ${write.op} as ${caller} was refused: ${JSON.stringify(answer!.body)}`).not.toContain(answer!.status);
        if (answer!.status < 300) write.keep?.(answer!.body, t);
        checked += 1;
      }
    }
  } finally {
    socket?.ws.close(1000);
  }
  return checked;
}

describe("the authorization matrix across surfaces", () => {
  it("Should plan every write of the catalog (the batch and socket carry the task plan's)", () => {
    const planned = [...TASK_PLAN, ...SESSION_PLAN].map((w) => w.op).sort();
    expect(planned).toEqual(OPERATIONS.filter((op) => op.method !== "get" && op.operationId !== "batch" && CHECKED_ELSEWHERE[op.operationId] === undefined).map((op) => op.operationId).sort());
    for (const write of TASK_PLAN) expect(commandOf(opById(write.op)), write.op).toBeDefined();
  });

  it("Should answer every role on REST as the matrix says, the admin included", async () => {
    expect(await checkSurface("rest", [...TASK_PLAN, ...SESSION_PLAN])).toBeGreaterThan(100);
  });

  it("Should answer every role's command in a batch (each with its own token) as the matrix says", async () => {
    expect(await checkSurface("batch", TASK_PLAN)).toBeGreaterThan(80);
    // The admin token is no session token: a batch command carrying it is unauthenticated.
    const t = await taskForSurface("batch");
    const res = await call("POST", `/v1/sessions/${s.sid}/tasks/${t.tid}/batch`, s.orch, { commands: [{ token: ADMIN, method: "POST", path: `/v1/sessions/${s.sid}/tasks/${t.tid}/pause`, body: {} }] });
    expect([res.body.results[0].status, res.body.results[0].body.error.code]).toEqual([401, "unauthorized"]);
  });

  it("Should answer every role's command in a socket frame as the matrix says", async () => {
    expect(await checkSurface("socket", TASK_PLAN)).toBeGreaterThan(80);
  });

  it("Should answer every session role's tool call over MCP as the matrix says, and refuse the admin and a2a_client tokens at the door", async () => {
    const plan = [...TASK_PLAN, ...SESSION_PLAN].filter((w) => mcpToolOf(opById(w.op)) !== undefined);
    expect(await checkSurface("mcp", plan)).toBeGreaterThan(80);
    const initialize = { id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "matrix", version: "1" } } };
    const admin = await postMcp(initialize, { authorization: `Bearer ${ADMIN}` });
    expect([admin.status, admin.message.error.code]).toEqual([403, "permission_denied"]);
    const a2a = await postMcp(initialize, { authorization: `Bearer ${tokens.a2a_client}` });
    expect([a2a.status, a2a.message.error.code]).toEqual([403, "tool_not_available"]);
  });
});

describe("the a2a_client's commands through A2A", () => {
  it("Should let an a2a_client create, answer and cancel its own tasks, as the matrix's A2A column says", async () => {
    const client = await connectA2a(tokens.a2a_client);
    // create_task: SendMessage without taskId.
    const task = (await client.sendMessage(send("Summarise the quarter", {}, { returnImmediately: true }))) as Task;
    expect(task.status!.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    const path = `/v1/sessions/${s.sid}/tasks/${task.id}`;
    // respond_action: SendMessage with the taskId of a task that waits for input.
    expectOk(await call("PATCH", path, s.orch, { ops: [{ op: "add_step", step: step("a") }] }));
    const asked = expectOk(await call("POST", `${path}/actions`, s.orch, { kind: "input", prompt: "Which region?" }), 201);
    await client.sendMessage(send("EMEA", { taskId: task.id }, { returnImmediately: true }));
    expect(expectOk(await call("GET", `${path}/actions/${asked.action_id}`, s.orch)).action).toMatchObject({ status: "resolved", resolved_by: { agent_id: a2aAgent, role: "a2a_client" } });
    // cancel_task: CancelTask.
    expect((await client.cancelTask({ tenant: "", id: task.id, metadata: undefined })).status!.state).toBe(TaskState.TASK_STATE_CANCELED);
  });

  it("Should refuse every other token on /a2a with -32000 and HTTP 403", async () => {
    const message = { jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message: { messageId: "m1", role: "ROLE_USER", parts: [{ text: "hi" }] } } };
    const worker = (await dispatch(s, await newTask(s, uniqueId("a2a-refused"), [step("a")]))).token;
    for (const [who, token] of Object.entries({ admin: ADMIN, orchestrator: s.orch, worker, observer: s.observer, approver: tokens.approver })) {
      const res = await rpc(token, message);
      expect([res.status, res.body.error?.code], who).toEqual([403, -32000]);
    }
  });
});

describe("the webhook routes, reads included", () => {
  it("Should answer every caller on REST as the matrix says, and a revoked or expired orchestrator token 401", async () => {
    const victim = expectOk(await call("POST", `/v1/sessions/${s.sid}/tokens`, s.orch, { role: "orchestrator" }), 201);
    expectOk(await call("DELETE", `/v1/sessions/${s.sid}/tokens/${victim.token_id}`, s.orch));
    const now = Math.floor(Date.now() / 1000);
    const expired = await signClaims({ role: "orchestrator", sid: s.sid, sub: "orchestrator", run: "orun_x", iat: now - 100, exp: now - 10 });
    const worker = (await dispatch(s, await newTask(s, uniqueId("hooks"), [step("a")]))).token;
    const hook = { url: "http://127.0.0.1:9/matrix-reads", events: ["task.completed"] };
    const webhookId: string = expectOk(await call("POST", `/v1/sessions/${s.sid}/webhooks`, s.orch, hook), 201).webhook_id;
    // The delete last: the reads before it find the webhook.
    const ops = OPERATIONS.filter((op) => op.path.includes("/webhooks")).sort((a, b) => Number(a.operationId === "deleteWebhook") - Number(b.operationId === "deleteWebhook"));
    expect(ops.map((op) => op.operationId).sort()).toEqual(["createWebhook", "deleteWebhook", "getWebhook", "listWebhookDeliveries", "listWebhooks", "retryWebhookDelivery"]);
    const callers: [Caller | "revoked" | "expired", string][] = [
      ["admin", ADMIN], ["worker", worker], ["observer", s.observer], ["approver", tokens.approver], ["a2a_client", tokens.a2a_client],
      ["revoked", victim.token], ["expired", expired], ["orchestrator", s.orch],
    ];
    let checked = 0;
    for (const op of ops) {
      const path = op.path.replace("{sid}", s.sid).replace("{webhook_id}", webhookId).replace("{delivery_id}", "dlv_none");
      const body = op.method === "post" ? (op.operationId === "createWebhook" ? hook : {}) : undefined;
      for (const [caller, token] of callers) {
        const answer = await call(op.method.toUpperCase(), path, token, body);
        const what = `${op.operationId} as ${caller}: ${JSON.stringify(answer.body)}`;
        if (caller === "revoked" || caller === "expired") expect([answer.status, answer.body?.error?.code, answer.body?.error?.details?.reason], what).toEqual([401, "unauthorized", caller]);
        else {
          const code = expectedRefusal(op, caller);
          if (code === null) expect([401, 403], what).not.toContain(answer.status);
          else expect([answer.status, answer.body?.error?.code], what).toEqual([403, code]);
        }
        checked += 1;
      }
    }
    expect(checked).toBe(ops.length * callers.length);
  });
});
