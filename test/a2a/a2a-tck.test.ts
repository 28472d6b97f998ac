/**
 * @module A2A 1.0 conformance over JSON-RPC: the MUST requirements of the A2A conformance kit (a2a-tck, 1.0 line),
 * one test per requirement id, named after it. Wire-format requirements are checked on the raw JSON-RPC answers
 * and SSE bytes; behaviour through the official @a2a-js/sdk client. This agent never answers with a bare Message
 * and never acts on a message by itself: the session's orchestrator moves tasks on over REST, which stands in for
 * the kit's scripted agent. Where this runtime deliberately differs from the kit (A2A-Version, snake_case params,
 * bearer tokens), the test states our documented behaviour and says so.
 */
import { SELF } from "cloudflare:test";
import { type Task, TaskState } from "@a2a-js/sdk";
import type { Client } from "@a2a-js/sdk/client";
import { TaskNotFoundError } from "@a2a-js/sdk/errors";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { connectA2a, rpc, send } from "../support/a2a-clients.js";
import {
  A2A_DOMAIN,
  checkAgentCard,
  checkError,
  checkListTasksResponse,
  checkSendMessageResponse,
  checkStreamResponse,
  checkTask,
  ERROR_INFO,
  jsonRpc,
  nonCamelKeys,
  protocolKeys,
  openStream,
  problems,
  stateOf,
  summary,
  TERMINAL_STATES,
  UTC_TIMESTAMP,
  wireMessage,
} from "../support/a2a-tck-support.js";
import { call, newSession, step, type TestSession } from "../support/helpers.js";
import { BASE, eventually, expectOk, mintRole } from "../support/support.js";

let S: TestSession;
let token: string;
let otherToken: string;
let client: Client;

beforeAll(async () => {
  S = await newSession();
  token = await mintRole(S, "a2a_client", "tck-client");
  otherToken = await mintRole(S, "a2a_client", "tck-other");
  client = await connectA2a(token);
});

const taskPath = (id: string) => `/v1/sessions/${S.sid}/tasks/${id}`;

/** A task submitted over the wire with returnImmediately (SUBMITTED): its wire Task. */
async function submit(text = "Summarise the quarter's sales", message: Record<string, unknown> = {}, as = token): Promise<any> {
  const r = await jsonRpc(as, "SendMessage", { message: wireMessage(text, message), configuration: { returnImmediately: true } });
  expect(r.body.result?.task, JSON.stringify(r.body)).toBeDefined();
  return r.body.result.task;
}

/** The orchestrator plans one step, a worker completes it with a result, the orchestrator completes the task. */
async function planAndRun(id: string): Promise<void> {
  expectOk(await call("PATCH", taskPath(id), S.orch, { ops: [{ op: "add_step", step: step("report") }] }));
  await runPlanned(id);
}

/** A worker completes the planned step `report`; the orchestrator completes the task. */
async function runPlanned(id: string): Promise<void> {
  const worker = expectOk(await call("POST", `${taskPath(id)}/workers`, S.orch, {}), 201);
  expectOk(await call("POST", `${taskPath(id)}/steps/report/claim`, worker.token, {}));
  expectOk(await call("POST", `${taskPath(id)}/steps/report/status`, worker.token, { status: "completed", result_summary: "Sales rose 12%", artifact_ids: ["r2://reports/q3.pdf"] }));
  expectOk(await call("POST", `${taskPath(id)}/complete`, S.orch, { reason: "Report delivered" }));
}

/** The orchestrator asks the client something on the task: INPUT_REQUIRED. */
async function askInput(id: string, prompt = "Which region first?"): Promise<void> {
  expectOk(await call("POST", `${taskPath(id)}/actions`, S.orch, { kind: "input", prompt }), 201);
}

/** The orchestrator finds the client's new task by its (unique) title in the session while the client waits. */
async function taskTitled(title: string): Promise<string> {
  return eventually(async () => {
    const found = expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks`, S.orch)).tasks.find((t: { title: string }) => t.title === title);
    expect(found).toBeDefined();
    return found.task_id as string;
  }, 8_000);
}

/** How many tasks the session has (a refused request creates none). */
async function sessionTaskCount(): Promise<number> {
  return expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks`, S.orch)).total;
}

/** The JSON-RPC error of an answer, checked against the error schema and the A2A ErrorInfo it must carry. */
function expectA2aError(body: any, code: number, reason: string): void {
  expect(body.error, JSON.stringify(body)).toBeDefined();
  expect(body).not.toHaveProperty("result");
  expect(problems(checkError, body.error)).toEqual([]);
  expect(body.error.code).toBe(code);
  expect(body.error.data).toEqual(expect.arrayContaining([expect.objectContaining({ "@type": ERROR_INFO, reason, domain: A2A_DOMAIN })]));
}

const unique = (prefix: string) => `${prefix} ${crypto.randomUUID().slice(0, 8)}`;

describe("Agent Card structure and discovery", () => {
  let card: any;
  beforeAll(async () => {
    const res = await SELF.fetch(`${BASE}/.well-known/agent-card.json`);
    expect(res.status).toBe(200);
    card = await res.json();
  });

  it("CARD-DISC-001: Should serve the Agent Card at /.well-known/agent-card.json as a JSON object, without a token", async () => {
    const res = await SELF.fetch(`${BASE}/.well-known/agent-card.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    const body = await res.json();
    expect(typeof body === "object" && body !== null && !Array.isArray(body)).toBe(true);
  });

  it("CARD-STRUCT-001: Should have every REQUIRED card field, non-empty required arrays, and no key outside the schema", () => {
    expect(problems(checkAgentCard, card)).toEqual([]);
    // 0.3 fields would fail the 1.0 schema (additionalProperties: false).
    for (const old of ["url", "protocolVersion", "preferredTransport", "additionalInterfaces", "supportsAuthenticatedExtendedCard", "security"]) expect(card, old).not.toHaveProperty(old);
  });

  it("CARD-PROTO-001: Should declare its protocols as a non-empty supportedInterfaces list", () => {
    expect(Array.isArray(card.supportedInterfaces)).toBe(true);
    expect(card.supportedInterfaces.length).toBeGreaterThan(0);
  });

  it("CARD-PROTO-002: Should declare each interface's binding and URL accurately: the JSONRPC URL answers JSON-RPC 1.0", async () => {
    for (const iface of card.supportedInterfaces) {
      expect(iface).toMatchObject({ protocolBinding: "JSONRPC", protocolVersion: "1.0", url: `${BASE}/a2a` });
      const res = await SELF.fetch(iface.url, {
        method: "POST",
        headers: { "content-type": "application/json", "a2a-version": iface.protocolVersion, authorization: `Bearer ${token}` },
        body: JSON.stringify({ jsonrpc: "2.0", id: "probe", method: "ListTasks", params: {} }),
      });
      const body = (await res.json()) as any;
      expect(body).toMatchObject({ jsonrpc: "2.0", id: "probe" });
      expect(problems(checkListTasksResponse, body.result)).toEqual([]);
    }
  });

  it("BIND-FIELD-001: Should list exactly the bindings it serves: JSONRPC only, once", () => {
    expect(card.supportedInterfaces.map((i: { protocolBinding: string }) => i.protocolBinding)).toEqual(["JSONRPC"]);
  });
});

describe("JSON-RPC format, services and errors", () => {
  it("JSONRPC-FMT-001: Should answer the 2.0 envelope echoing the id (string or number) with exactly one of result and error", async () => {
    for (const id of ["req-a", 42, 0]) {
      const ok = await jsonRpc(token, "SendMessage", { message: wireMessage(unique("Envelope")), configuration: { returnImmediately: true } }, { id });
      expect(Object.keys(ok.body).sort()).toEqual(["id", "jsonrpc", "result"]);
      expect(ok.body).toMatchObject({ jsonrpc: "2.0", id });
      const failed = await jsonRpc(token, "GetTask", { id: "a2a-none" }, { id });
      expect(Object.keys(failed.body).sort()).toEqual(["error", "id", "jsonrpc"]);
      expect(failed.body).toMatchObject({ jsonrpc: "2.0", id });
    }
  });

  it("JSONRPC-FMT-002: Should answer with Content-Type application/json, results and errors alike", async () => {
    const ok = await jsonRpc(token, "ListTasks", {});
    expect(ok.contentType).toContain("application/json");
    const failed = await jsonRpc(token, "GetTask", { id: "a2a-none" });
    expect(failed.contentType).toContain("application/json");
  });

  it("JSONRPC-SVC-001: Should route the eleven PascalCase methods and answer -32601 to any other name", async () => {
    const routed: [string, unknown][] = [
      ["SendMessage", {}],
      ["SendStreamingMessage", {}],
      ["GetTask", { id: "a2a-none" }],
      ["ListTasks", {}],
      ["CancelTask", { id: "a2a-none" }],
      ["SubscribeToTask", { id: "a2a-none" }],
      ["CreateTaskPushNotificationConfig", { taskId: "a2a-none", url: "https://example.com/hook" }],
      ["GetTaskPushNotificationConfig", { taskId: "a2a-none", id: "c" }],
      ["ListTaskPushNotificationConfigs", { taskId: "a2a-none" }],
      ["DeleteTaskPushNotificationConfig", { taskId: "a2a-none", id: "c" }],
      ["GetExtendedAgentCard", {}],
    ];
    for (const [method, params] of routed) {
      const r = await jsonRpc(token, method, params);
      expect(r.body.error?.code, method).not.toBe(-32601);
      expect(r.body.error?.code, method).not.toBe(-32603);
    }
    for (const method of ["message/send", "tasks/get", "sendMessage", "getTask", "SendMessages", "GETTASK"]) {
      const r = await jsonRpc(token, method, {});
      expect(r.body.error?.code, method).toBe(-32601);
      expect(problems(checkError, r.body.error), method).toEqual([]);
    }
  });

  it("JSONRPC-SVC-002: Should take service parameters as case-insensitive HTTP headers: A2A-Extensions with two unknown URIs is no failure", async () => {
    const res = await SELF.fetch(`${BASE}/a2a`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "A2A-VERSION": "1.0", "a2a-extensions": "https://example.com/ext/tck-a/v1,https://example.com/ext/tck-b/v1", Authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ListTasks", params: {} }),
    });
    expect(res.status).toBe(200);
    expect(problems(checkListTasksResponse, ((await res.json()) as any).result)).toEqual([]);
  });

  it("JSONRPC-ERR-001: Should shape every error as exactly {code, message, data?}, data an array of @type objects", async () => {
    const answers = [
      await jsonRpc(token, "GetTask", { id: "a2a-none" }),
      await jsonRpc(token, "CancelTask", { id: "a2a-none" }),
      await jsonRpc(token, "SendMessage", {}),
      await jsonRpc(token, "NoSuchMethod", {}),
      await jsonRpc(token, "CreateTaskPushNotificationConfig", { taskId: "t", url: "https://example.com/hook" }),
      await jsonRpc(token, "GetExtendedAgentCard", {}),
      await jsonRpc(token, "GetTask", { id: "a2a-none" }, { headers: { "a2a-version": "99.0" } }),
      await rpc(token, "{not json"),
      await rpc(token, { jsonrpc: "2.0", id: 1, params: {} }),
      await rpc(token, "hello", { "content-type": "text/plain" }),
    ];
    for (const a of answers) expect(problems(checkError, a.body.error), JSON.stringify(a.body)).toEqual([]);
  });

  it("JSONRPC-ERR-002: Should use codes within -32001…-32099 for the A2A errors", async () => {
    const answers = [
      await jsonRpc(token, "GetTask", { id: "a2a-none" }),
      await jsonRpc(token, "CancelTask", { id: "a2a-none" }),
      await jsonRpc(token, "ListTaskPushNotificationConfigs", { taskId: "t" }),
      await jsonRpc(token, "GetExtendedAgentCard", {}),
      await jsonRpc(token, "GetTask", { id: "a2a-none" }, { headers: { "a2a-version": "99.0" } }),
    ];
    for (const a of answers) {
      expect(a.body.error.code).toBeLessThanOrEqual(-32001);
      expect(a.body.error.code).toBeGreaterThanOrEqual(-32099);
    }
  });

  it("JSONRPC-ERR-003: Should carry a google.rpc.ErrorInfo in error.data: domain a2a-protocol.org, reason TASK_NOT_FOUND", async () => {
    const r = await jsonRpc(token, "GetTask", { id: "a2a-nonexistent-task-id" });
    expectA2aError(r.body, -32001, "TASK_NOT_FOUND");
  });

  it("JSONRPC-SSE-001: Should stream as text/event-stream, each event one data: line holding a JSON-RPC response echoing the id, whose result is a StreamResponse", async () => {
    const stream = await openStream(token, "SendStreamingMessage", { message: wireMessage(unique("Framing")) }, { id: "sse-1" });
    expect(stream.status).toBe(200);
    expect(stream.contentType).toMatch(/^text\/event-stream/);
    const first = await stream.next();
    const id = first!.json.result.task.id;
    await planAndRun(id);
    const events = await stream.rest();
    expect(stream.ended).toBe(true);
    expect(events.length).toBeGreaterThanOrEqual(2);
    for (const e of events) {
      expect(e.raw.split("\n").filter((l) => !l.startsWith(":"))).toEqual([`data: ${JSON.stringify(e.json)}`]);
      expect(Object.keys(e.json).sort()).toEqual(["id", "jsonrpc", "result"]);
      expect(e.json).toMatchObject({ jsonrpc: "2.0", id: "sse-1" });
      expect(problems(checkStreamResponse, e.json.result)).toEqual([]);
    }
  });

  it("JSONRPC-SSE-002: Should answer each A2A error with its own code: -32001, -32004, -32009, -32005 (push is supported: never -32003)", async () => {
    expectA2aError((await jsonRpc(token, "GetTask", { id: "a2a-none" })).body, -32001, "TASK_NOT_FOUND");
    expectA2aError((await jsonRpc(token, "CancelTask", { id: "a2a-none" })).body, -32001, "TASK_NOT_FOUND");
    expectA2aError((await jsonRpc(token, "CreateTaskPushNotificationConfig", { task_id: "a2a-none", url: "https://example.com/hook" })).body, -32001, "TASK_NOT_FOUND");
    expectA2aError((await jsonRpc(token, "GetExtendedAgentCard", {})).body, -32004, "UNSUPPORTED_OPERATION");
    expectA2aError((await jsonRpc(token, "GetTask", { id: "a2a-none" }, { headers: { "a2a-version": "99.0" } })).body, -32009, "VERSION_NOT_SUPPORTED");
    // The kit posts a non-JSON body as text/plain: -32005 (before parsing, so never -32700).
    const wrongType = await rpc(token, "not json at all", { "content-type": "text/plain" });
    expectA2aError(wrongType.body, -32005, "CONTENT_TYPE_NOT_SUPPORTED");
  });
});

describe("core operations", () => {
  it("CORE-SEND-001: Should answer SendMessage with a SendMessageResponse holding a Task (this agent never answers a bare Message)", async () => {
    const r = await jsonRpc(token, "SendMessage", { message: wireMessage(unique("Send")), configuration: { returnImmediately: true } });
    expect(problems(checkSendMessageResponse, r.body.result)).toEqual([]);
    expect(Object.keys(r.body.result)).toEqual(["task"]);
  });

  it("CORE-SEND-002: Should refuse a message to a terminal (completed) task with -32004, leaving the task as it was", async () => {
    const task = await submit();
    await planAndRun(task.id);
    const before = (await jsonRpc(token, "GetTask", { id: task.id })).body.result;
    const r = await jsonRpc(token, "SendMessage", { message: wireMessage("One more thing", { taskId: task.id }) });
    expectA2aError(r.body, -32004, "UNSUPPORTED_OPERATION");
    expect((await jsonRpc(token, "GetTask", { id: task.id })).body.result).toEqual(before);
  });

  it("CORE-SEND-003: Should refuse a part whose media type it does not accept with -32005, creating no task", async () => {
    const before = await sessionTaskCount();
    const r = await jsonRpc(token, "SendMessage", {
      message: { messageId: `m-${crypto.randomUUID()}`, role: "ROLE_USER", parts: [{ raw: "dGNr", mediaType: "application/x-unsupported-tck-type" }] },
      configuration: { returnImmediately: true },
    });
    expectA2aError(r.body, -32005, "CONTENT_TYPE_NOT_SUPPORTED");
    expect(await sessionTaskCount()).toBe(before);
  });

  it("CORE-STREAM-001: Should open a stream for SendStreamingMessage: at least one event arrives", async () => {
    const stream = await openStream(token, "SendStreamingMessage", { message: wireMessage(unique("Open a stream")) });
    expect(stream.contentType).toMatch(/^text\/event-stream/);
    expect(await stream.next()).not.toBeNull();
    await stream.close();
  });

  it("CORE-STREAM-002: Should never send a message-only stream (this agent always answers with a Task): the first event is the Task, never a Message", async () => {
    const stream = await openStream(token, "SendStreamingMessage", { message: wireMessage(unique("Task not message")) });
    const first = await stream.next();
    expect(Object.keys(first!.json.result)).toEqual(["task"]);
    await stream.close();
  });

  it("CORE-STREAM-003: Should begin a task stream with the Task and close it after the terminal state", async () => {
    const stream = await openStream(token, "SendStreamingMessage", { message: wireMessage(unique("Run to the end")) });
    const first = await stream.next();
    expect(first!.json.result.task.status.state).toBe("TASK_STATE_SUBMITTED");
    await planAndRun(first!.json.result.task.id);
    const events = await stream.rest();
    expect(stream.ended).toBe(true);
    expect(stateOf(events.at(-1)!.json)).toBe("TASK_STATE_COMPLETED");
    // Nothing after the terminal state.
    expect(events.findIndex((e) => TERMINAL_STATES.has(stateOf(e.json) ?? ""))).toBe(events.length - 1);
  });

  it("CORE-GET-001: Should answer GetTask with the task's current state: the same id, context, status and artifacts", async () => {
    const task = await submit();
    const got = (await jsonRpc(token, "GetTask", { id: task.id })).body.result;
    expect(problems(checkTask, got)).toEqual([]);
    expect(got).toMatchObject({ id: task.id, contextId: task.contextId, status: { state: "TASK_STATE_SUBMITTED" } });
    await planAndRun(task.id);
    const done = (await jsonRpc(token, "GetTask", { id: task.id })).body.result;
    expect(done.status.state).toBe("TASK_STATE_COMPLETED");
    expect(done.artifacts.map((a: { artifactId: string }) => a.artifactId).sort()).toEqual(["report", "result"]);
    // The official client reads the same task.
    const viaClient = await client.getTask({ tenant: "", id: task.id });
    expect(viaClient.status!.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(viaClient.artifacts).toHaveLength(2);
  });

  it("CORE-GET-002: Should answer GetTask on an unknown id with -32001", async () => {
    expectA2aError((await jsonRpc(token, "GetTask", { id: `a2a-${crypto.randomUUID().slice(0, 8)}` })).body, -32001, "TASK_NOT_FOUND");
    await expect(client.getTask({ tenant: "", id: "a2a-unknown" })).rejects.toBeInstanceOf(TaskNotFoundError);
  });

  it("CORE-CANCEL-001: Should cancel an INPUT_REQUIRED task and answer the updated Task, CANCELED", async () => {
    const task = await submit();
    await askInput(task.id);
    expect((await jsonRpc(token, "GetTask", { id: task.id })).body.result.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    const r = await jsonRpc(token, "CancelTask", { id: task.id });
    expect(problems(checkTask, r.body.result)).toEqual([]);
    expect(r.body.result).toMatchObject({ id: task.id, status: { state: "TASK_STATE_CANCELED" } });
    expect((await jsonRpc(token, "GetTask", { id: task.id })).body.result.status.state).toBe("TASK_STATE_CANCELED");
  });

  it("CORE-CANCEL-002: Should refuse to cancel a terminal task with -32002: completed or already canceled", async () => {
    const done = await submit();
    await planAndRun(done.id);
    expectA2aError((await jsonRpc(token, "CancelTask", { id: done.id })).body, -32002, "TASK_NOT_CANCELABLE");
    expect((await jsonRpc(token, "GetTask", { id: done.id })).body.result.status.state).toBe("TASK_STATE_COMPLETED");
    const canceled = await submit();
    await jsonRpc(token, "CancelTask", { id: canceled.id });
    expectA2aError((await jsonRpc(token, "CancelTask", { id: canceled.id })).body, -32002, "TASK_NOT_CANCELABLE");
  });

  it("CORE-CANCEL-003: Should answer CancelTask on an unknown id with -32001", async () => {
    expectA2aError((await jsonRpc(token, "CancelTask", { id: "a2a-never-was" })).body, -32001, "TASK_NOT_FOUND");
  });

  it("CORE-EXECUTION-MODE-001: Should hold a blocking SendMessage until the task is interrupted (INPUT_REQUIRED), then answer that state", async () => {
    const title = unique("Block until asked");
    const pending = jsonRpc(token, "SendMessage", { message: wireMessage(title), configuration: { returnImmediately: false } });
    const id = await taskTitled(title);
    await askInput(id, "Which quarter?");
    const r = await pending;
    expect(r.body.result.task).toMatchObject({ id, status: { state: "TASK_STATE_INPUT_REQUIRED" } });
  });

  it("CORE-EXECUTION-MODE-001 (spec §3.2.2): Should hold a blocking SendMessage until the task ends, then answer the latest state with all its artifacts", async () => {
    const title = unique("Block until done");
    const pending = jsonRpc(token, "SendMessage", { message: wireMessage(title) });
    const id = await taskTitled(title);
    expectOk(await call("POST", `${taskPath(id)}/complete`, S.orch, { reason: "Nothing to plan" }));
    const r = await pending;
    expect(r.body.result.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(r.body.result.task.artifacts.map((a: { artifactId: string }) => a.artifactId)).toEqual(["result"]);
    // GetTask afterwards answers the same task.
    expect((await jsonRpc(token, "GetTask", { id })).body.result).toEqual(r.body.result.task);
  });

  it("CORE-EXECUTION-MODE-001 (our design differs: a planned task may run for hours): Should answer a blocking SendMessage once the orchestrator takes the task up (WORKING), not only at a terminal or interrupted state", async () => {
    // Planned tasks may run for hours: the blocking wait ends when the task leaves SUBMITTED (or after A2A_SEND_WAIT_MS).
    const title = unique("Block until planned");
    const pending = jsonRpc(token, "SendMessage", { message: wireMessage(title) });
    const id = await taskTitled(title);
    expectOk(await call("PATCH", taskPath(id), S.orch, { ops: [{ op: "add_step", step: step("a") }] }));
    expect((await pending).body.result.task).toMatchObject({ id, status: { state: "TASK_STATE_WORKING" } });
  });

  it("CORE-EXECUTION-MODE-002: Should answer returnImmediately:true at once, the task still SUBMITTED while nobody has acted on it", async () => {
    const r = await jsonRpc(token, "SendMessage", { message: wireMessage(unique("Do not wait")), configuration: { returnImmediately: true } });
    expect(r.body.result.task.status.state).toBe("TASK_STATE_SUBMITTED");
    const viaClient = (await client.sendMessage(send(unique("Do not wait either"), {}, { returnImmediately: true }))) as Task;
    expect(viaClient.status!.state).toBe(TaskState.TASK_STATE_SUBMITTED);
  });

  it("CORE-ERR-001: Should answer a failed request with an error carrying a numeric code and a message", async () => {
    const r = await jsonRpc(token, "GetTask", { id: "a2a-none" });
    expect(typeof r.body.error.code).toBe("number");
    expect(r.body.error.message.length).toBeGreaterThan(0);
  });

  it("CORE-ERR-002: Should validate the input before acting on it: an incomplete SendMessage is -32602 and creates nothing", async () => {
    const before = await sessionTaskCount();
    const invalid: Record<string, unknown>[] = [
      {},
      { message: { messageId: "m-no-parts", role: "ROLE_USER", parts: [] } },
      { message: { role: "ROLE_USER", parts: [{ text: "no message id" }] } },
    ];
    for (const params of invalid) {
      const r = await jsonRpc(token, "SendMessage", { ...params, configuration: { returnImmediately: true } });
      expect(r.body.error?.code, JSON.stringify(params)).toBe(-32602);
      expect(problems(checkError, r.body.error)).toEqual([]);
    }
    expect(await sessionTaskCount()).toBe(before);
  });

  it("CORE-ERR-002 (spec §5.7, role is REQUIRED): Should refuse a message without a valid role with -32602, creating nothing", async () => {
    const before = await sessionTaskCount();
    for (const message of [
      { messageId: "m-no-role", parts: [{ text: "no role" }] },
      { messageId: "m-unspecified-role", role: "ROLE_UNSPECIFIED", parts: [{ text: "unspecified role" }] },
      { messageId: "m-unknown-role", role: "ROLE_BOSS", parts: [{ text: "unknown role" }] },
    ]) {
      const r = await jsonRpc(token, "SendMessage", { message, configuration: { returnImmediately: true } });
      expect(r.body.error?.code, JSON.stringify(message)).toBe(-32602);
    }
    expect(await sessionTaskCount()).toBe(before);
  });

  it("CORE-ERR-002 (ListTasks): Should refuse an out-of-range pageSize, a negative historyLength and an unknown status with -32602", async () => {
    for (const params of [{ pageSize: 0 }, { pageSize: 101 }, { historyLength: -1 }, { status: "TASK_STATE_NOT_A_STATE" }]) {
      expect((await jsonRpc(token, "ListTasks", params)).body.error?.code, JSON.stringify(params)).toBe(-32602);
    }
  });

  it("CORE-CAP-001: Should declare push notifications, so the push-notification config methods answer (an unknown task: -32001), never -32003", async () => {
    const card = (await (await SELF.fetch(`${BASE}/.well-known/agent-card.json`)).json()) as any;
    expect(card.capabilities.pushNotifications).toBe(true);
    // snake_case as the kit's client sends it.
    for (const [method, params] of [
      ["CreateTaskPushNotificationConfig", { task_id: "a2a-none", url: "https://example.com/hook" }],
      ["GetTaskPushNotificationConfig", { task_id: "a2a-none", id: "c" }],
      ["ListTaskPushNotificationConfigs", { task_id: "a2a-none" }],
      ["DeleteTaskPushNotificationConfig", { task_id: "a2a-none", id: "c" }],
    ] as const) {
      expectA2aError((await jsonRpc(token, method, params)).body, -32001, "TASK_NOT_FOUND");
    }
  });

  it("CORE-CAP-001 (push declared): Should keep the config a SendMessage carries, and show it back (snake_case) without its token", async () => {
    const url = `${inject("webhookReceiverBase")}/tck-push/ok`;
    const r = await jsonRpc(token, "SendMessage", { message: wireMessage(unique("Push me")), configuration: { returnImmediately: true, task_push_notification_config: { url, token: "tck-token" } } });
    expect(r.body.error).toBeUndefined();
    const taskId = r.body.result.task.id;
    const listed = await jsonRpc(token, "ListTaskPushNotificationConfigs", { task_id: taskId });
    expect(listed.body.result.configs).toEqual([{ id: expect.stringMatching(/^msg-/), taskId, url }]);
  });

  it("CORE-CAP-002: Should declare streaming, so both streaming methods answer streams, not -32004", async () => {
    const card = (await (await SELF.fetch(`${BASE}/.well-known/agent-card.json`)).json()) as any;
    expect(card.capabilities.streaming).toBe(true);
    const streamed = await openStream(token, "SendStreamingMessage", { message: wireMessage(unique("Streams declared")) });
    expect(streamed.contentType).toMatch(/^text\/event-stream/);
    const first = await streamed.next();
    await streamed.close();
    const subscribed = await openStream(token, "SubscribeToTask", { id: first!.json.result.task.id });
    expect(subscribed.contentType).toMatch(/^text\/event-stream/);
    await subscribed.close();
  });

  it("CORE-CAP-003: Should answer GetExtendedAgentCard with -32004, the card not declaring one", async () => {
    const card = (await (await SELF.fetch(`${BASE}/.well-known/agent-card.json`)).json()) as any;
    expect(card.capabilities.extendedAgentCard ?? false).toBe(false);
    expectA2aError((await jsonRpc(token, "GetExtendedAgentCard", {})).body, -32004, "UNSUPPORTED_OPERATION");
  });

  it("CORE-CAP-004: Should require no extension (the card declares none required), so a request without A2A-Extensions is never -32008", async () => {
    const card = (await (await SELF.fetch(`${BASE}/.well-known/agent-card.json`)).json()) as any;
    expect((card.capabilities.extensions ?? []).filter((e: { required?: boolean }) => e.required === true)).toEqual([]);
    const r = await jsonRpc(token, "SendMessage", { message: wireMessage(unique("No extensions")), configuration: { returnImmediately: true } });
    expect(r.body.result.task).toBeDefined();
  });
});

describe("ListTasks", () => {
  let lister: string;
  let bystander: string;
  const mine: string[] = [];
  let theirs: string;

  beforeAll(async () => {
    lister = await mintRole(S, "a2a_client", "tck-lister");
    bystander = await mintRole(S, "a2a_client", "tck-bystander");
    for (const i of [0, 1, 2, 3, 4]) mine.push((await submit(`listed ${i}`, {}, lister)).id);
    theirs = (await submit("not yours", {}, bystander)).id;
    // One task with artifacts (completed), so includeArtifacts has something to leave out.
    await planAndRun(mine[2]!);
    await eventually(async () => {
      const page = (await jsonRpc(lister, "ListTasks", { pageSize: 100 })).body.result;
      expect(page.tasks.find((t: { id: string }) => t.id === mine[2])?.status.state).toBe("TASK_STATE_COMPLETED");
    });
  });

  it("CORE-LIST-001: Should list only the caller's tasks: two clients' lists are disjoint", async () => {
    const a = (await jsonRpc(lister, "ListTasks", {})).body.result;
    const b = (await jsonRpc(bystander, "ListTasks", {})).body.result;
    expect(problems(checkListTasksResponse, a)).toEqual([]);
    const idsA = a.tasks.map((t: { id: string }) => t.id);
    const idsB = b.tasks.map((t: { id: string }) => t.id);
    expect(idsA.sort()).toEqual([...mine].sort());
    expect(idsB).toEqual([theirs]);
    expect(a.totalSize).toBe(5);
  });

  it("CORE-LIST-002: Should page with page_size/page_token (snake_case, as the kit sends them): at most page_size each, every task once", async () => {
    const seen: string[] = [];
    let pageToken = "";
    let pages = 0;
    do {
      const page = (await jsonRpc(lister, "ListTasks", { page_size: 2, ...(pageToken === "" ? {} : { page_token: pageToken }) })).body.result;
      expect(page.tasks.length).toBeLessThanOrEqual(2);
      expect(page.pageSize).toBe(2);
      seen.push(...page.tasks.map((t: { id: string }) => t.id));
      pageToken = page.nextPageToken;
      pages += 1;
    } while (pageToken !== "" && pages < 10);
    expect(pages).toBe(3);
    expect(seen).toHaveLength(new Set(seen).size);
    expect(seen.sort()).toEqual([...mine].sort());
  });

  it("CORE-LIST-003: Should sort by status timestamp, most recent first", async () => {
    const page = (await jsonRpc(lister, "ListTasks", {})).body.result;
    const stamps = page.tasks.map((t: any) => Date.parse(t.status.timestamp));
    expect(stamps.every((s: number) => Number.isFinite(s))).toBe(true);
    expect(stamps).toEqual([...stamps].sort((x, y) => y - x));
    expect(page.tasks[0].id).toBe(mine[2]);
  });

  it("CORE-LIST-004: Should always send nextPageToken, an empty string on the last page", async () => {
    const page = (await jsonRpc(lister, "ListTasks", { page_size: 100 })).body.result;
    expect(page).toHaveProperty("nextPageToken", "");
    const empty = (await jsonRpc(await mintRole(S, "a2a_client", "tck-nobody"), "ListTasks", {})).body.result;
    expect(empty).toEqual({ tasks: [], nextPageToken: "", pageSize: 50, totalSize: 0 });
  });

  it("CORE-LIST-005: Should leave the artifacts key out entirely when includeArtifacts is false or absent, and give them when it is true", async () => {
    for (const params of [{}, { includeArtifacts: false }, { include_artifacts: false }]) {
      const page = (await jsonRpc(lister, "ListTasks", params)).body.result;
      const withKey = page.tasks.filter((t: object) => "artifacts" in t).map((t: any) => `${t.id === mine[2] ? "completed" : "no artifacts"}: artifacts ${JSON.stringify(t.artifacts.map((a: { artifactId: string }) => a.artifactId))}`);
      expect(withKey, JSON.stringify(params)).toEqual([]);
    }
    const withArtifacts = (await jsonRpc(lister, "ListTasks", { includeArtifacts: true })).body.result;
    expect(withArtifacts.tasks.find((t: { id: string }) => t.id === mine[2]).artifacts.map((a: { artifactId: string }) => a.artifactId).sort()).toEqual(["report", "result"]);
  });
});

describe("streaming order and subscriptions", () => {
  /** A SubscribeToTask stream of the task, its Task event read. */
  async function subscribe(id: string) {
    const stream = await openStream(token, "SubscribeToTask", { id });
    expect(stream.contentType, JSON.stringify(await stream.jsonBody())).toMatch(/^text\/event-stream/);
    await stream.next();
    return stream;
  }

  it("STREAM-ORDER-001: Should deliver the events in the order they happened: WORKING, then the artifact, then COMPLETED", async () => {
    const task = await submit();
    const stream = await subscribe(task.id);
    expectOk(await call("PATCH", taskPath(task.id), S.orch, { ops: [{ op: "add_step", step: step("report") }] }));
    await stream.until((e) => stateOf(e.json) === "TASK_STATE_WORKING");
    await runPlanned(task.id);
    const seen = (await stream.rest()).map((e) => summary(e.json));
    expect(seen).toEqual(["task:TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "artifact:report", "artifact:result", "TASK_STATE_COMPLETED"]);
  });

  it("STREAM-ORDER-002/003: Should broadcast the same events, in the same order, to every stream of a task", async () => {
    const task = await submit();
    const a = await subscribe(task.id);
    const b = await subscribe(task.id);
    expectOk(await call("PATCH", taskPath(task.id), S.orch, { ops: [{ op: "add_step", step: step("report") }] }));
    for (const s of [a, b]) await s.until((e) => stateOf(e.json) === "TASK_STATE_WORKING");
    await runPlanned(task.id);
    const [seenA, seenB] = [(await a.rest()).map((e) => e.json), (await b.rest()).map((e) => e.json)];
    expect(seenA.map((e) => ({ ...e, id: null }))).toEqual(seenB.map((e) => ({ ...e, id: null })));
    expect(seenA.map(summary).at(-1)).toBe("TASK_STATE_COMPLETED");
  });

  it("STREAM-ORDER-004: Should keep the other streams going when one closes", async () => {
    const task = await submit();
    const a = await subscribe(task.id);
    const b = await subscribe(task.id);
    await a.close();
    await planAndRun(task.id);
    expect((await b.rest()).map((e) => summary(e.json)).at(-1)).toBe("TASK_STATE_COMPLETED");
  });

  it("spec §3.5.2: Should keep the task going when its stream closes: closing neither cancels nor pauses it", async () => {
    const stream = await openStream(token, "SendStreamingMessage", { message: wireMessage(unique("Outlive the stream")) });
    const id = (await stream.next())!.json.result.task.id;
    await stream.close();
    expect((await jsonRpc(token, "GetTask", { id })).body.result.status.state).toBe("TASK_STATE_SUBMITTED");
    await planAndRun(id);
    expect((await jsonRpc(token, "GetTask", { id })).body.result.status.state).toBe("TASK_STATE_COMPLETED");
  });

  it("STREAM-SUB-001: Should begin SubscribeToTask with the Task as it is: INPUT_REQUIRED with its question", async () => {
    const task = await submit();
    await askInput(task.id, "Which region first?");
    const stream = await openStream(token, "SubscribeToTask", { id: task.id });
    const first = await stream.next();
    expect(problems(checkStreamResponse, first!.json.result)).toEqual([]);
    expect(first!.json.result.task).toMatchObject({ id: task.id, status: { state: "TASK_STATE_INPUT_REQUIRED", message: { role: "ROLE_AGENT", parts: [{ text: "Which region first?" }] } } });
    await stream.close();
  });

  it("STREAM-SUB-002: Should keep SubscribeToTask open through the answer and close it after the terminal state", async () => {
    const task = await submit();
    await askInput(task.id);
    const stream = await subscribe(task.id);
    // The client answers with SendMessage; the orchestrator then completes the task.
    const answered = await jsonRpc(token, "SendMessage", { message: wireMessage("EMEA", { taskId: task.id }), configuration: { returnImmediately: true } });
    expect(answered.body.result.task.id).toBe(task.id);
    expectOk(await call("POST", `${taskPath(task.id)}/complete`, S.orch, { reason: "Answered" }));
    const events = await stream.rest();
    expect(stream.ended).toBe(true);
    expect(stateOf(events.at(-1)!.json)).toBe("TASK_STATE_COMPLETED");
    expect(events.map((e) => summary(e.json))).toContain("TASK_STATE_WORKING");
  });

  it("STREAM-SUB-003: Should refuse SubscribeToTask on a terminal task with -32004, as plain JSON before any stream", async () => {
    const task = await submit();
    await planAndRun(task.id);
    const stream = await openStream(token, "SubscribeToTask", { id: task.id });
    expect(stream.contentType).toContain("application/json");
    expectA2aError(await stream.jsonBody(), -32004, "UNSUPPORTED_OPERATION");
  });

  it("STREAM-SUB-004: Should refuse SubscribeToTask on an unknown task with -32001", async () => {
    const stream = await openStream(token, "SubscribeToTask", { id: "a2a-not-a-task" }, { id: "sub-4" });
    expect(stream.contentType).toContain("application/json");
    const body = await stream.jsonBody();
    expect(body.id).toBe("sub-4");
    expectA2aError(body, -32001, "TASK_NOT_FOUND");
  });

  it("spec §3.6.2: Should check the version before opening a stream: SendStreamingMessage with A2A-Version 99.0 is a plain -32009, creating nothing", async () => {
    const before = await sessionTaskCount();
    const stream = await openStream(token, "SendStreamingMessage", { message: wireMessage(unique("Too new")) }, { headers: { "a2a-version": "99.0" } });
    expect(stream.contentType).toContain("application/json");
    expectA2aError(await stream.jsonBody(), -32009, "VERSION_NOT_SUPPORTED");
    expect(await sessionTaskCount()).toBe(before);
  });
});

describe("multi-turn", () => {
  it("CORE-MULTI-001a: Should generate a contextId when the message has none and give it in the response", async () => {
    const task = await submit(unique("No context"));
    expect(typeof task.contextId).toBe("string");
    expect(task.contextId).not.toBe("");
    expect((await jsonRpc(token, "GetTask", { id: task.id })).body.result.contextId).toBe(task.contextId);
  });

  it("CORE-MULTI-002a: Should keep a client-provided contextId it has never seen (adopted as the thread), never minting another", async () => {
    const contextId = `ctx-client-${crypto.randomUUID()}`;
    const task = await submit(unique("My context"), { contextId });
    expect(task.contextId).toBe(contextId);
  });

  it("CORE-MULTI-003: Should give every new task its own server-generated id", async () => {
    const ids = [(await submit("one")).id, (await submit("two")).id, (await submit("three")).id];
    expect(new Set(ids).size).toBe(3);
  });

  it("CORE-MULTI-004: Should answer a message naming an unknown taskId with -32001, creating nothing", async () => {
    const before = await sessionTaskCount();
    const r = await jsonRpc(token, "SendMessage", { message: wireMessage("Continue", { taskId: `a2a-${crypto.randomUUID().slice(0, 8)}` }), configuration: { returnImmediately: true } });
    expectA2aError(r.body, -32001, "TASK_NOT_FOUND");
    expect(await sessionTaskCount()).toBe(before);
  });

  it("CORE-MULTI-005: Should infer the contextId from the taskId when a follow-up names only the task", async () => {
    const task = await submit(unique("Ask me"), { contextId: `ctx-multi-${crypto.randomUUID().slice(0, 8)}` });
    await askInput(task.id);
    const r = await jsonRpc(token, "SendMessage", { message: wireMessage("EMEA", { taskId: task.id }), configuration: { returnImmediately: true } });
    expect(r.body.result.task).toMatchObject({ id: task.id, contextId: task.contextId });
  });

  it("CORE-MULTI-006: Should refuse a follow-up whose contextId is not its task's (-32602, our choice of code), the question staying open", async () => {
    const task = await submit();
    await askInput(task.id);
    const r = await jsonRpc(token, "SendMessage", { message: wireMessage("EMEA", { taskId: task.id, contextId: "ctx-someone-else" }), configuration: { returnImmediately: true } });
    expect(r.body.error?.code).toBe(-32602);
    expect(problems(checkError, r.body.error)).toEqual([]);
    expect((await jsonRpc(token, "GetTask", { id: task.id })).body.result.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
  });

  it("CORE-HIST-002: Should never return more history than history_length (snake_case, as the kit sends it), the most recent first cut", async () => {
    const task = await submit(unique("Converse"));
    await askInput(task.id, "Which region?");
    await jsonRpc(token, "SendMessage", { message: wireMessage("EMEA", { taskId: task.id }), configuration: { returnImmediately: true } });
    const full = (await jsonRpc(token, "GetTask", { id: task.id })).body.result.history;
    expect(full.length).toBe(3);
    for (const n of [1, 2]) {
      const cut = (await jsonRpc(token, "GetTask", { id: task.id, history_length: n })).body.result.history;
      expect(cut.length).toBeLessThanOrEqual(n);
      expect(cut).toEqual(full.slice(-n));
    }
    expect((await jsonRpc(token, "GetTask", { id: task.id, historyLength: 1 })).body.result.history).toEqual(full.slice(-1));
  });

  it("CORE-HIST-001/003 (SHOULD): Should omit the history field for historyLength 0", async () => {
    const task = await submit();
    expect((await jsonRpc(token, "GetTask", { id: task.id, historyLength: 0 })).body.result).not.toHaveProperty("history");
    const sent = await jsonRpc(token, "SendMessage", { message: wireMessage(unique("No history")), configuration: { returnImmediately: true, historyLength: 0 } });
    expect(sent.body.result.task).not.toHaveProperty("history");
  });
});

describe("versions", () => {
  it("VER-SERVER-001: Should serve A2A-Version 1.0 with 1.0 semantics, and 1.0.5 as 1.0", async () => {
    for (const version of ["1.0", "1.0.5"]) {
      const r = await jsonRpc(token, "SendMessage", { message: wireMessage(unique(`Version ${version}`)), configuration: { returnImmediately: true } }, { headers: { "a2a-version": version } });
      expect(r.body.result.task.status.state, version).toBe("TASK_STATE_SUBMITTED");
    }
  });

  it("VER-SERVER-002: Should refuse an unsupported version with -32009, acting on nothing", async () => {
    const before = await sessionTaskCount();
    for (const version of ["99.0", "0.3", "2.0", "one"]) {
      const r = await jsonRpc(token, "SendMessage", { message: wireMessage(unique("Unsupported")), configuration: { returnImmediately: true } }, { headers: { "a2a-version": version } });
      expectA2aError(r.body, -32009, "VERSION_NOT_SUPPORTED");
    }
    expect(await sessionTaskCount()).toBe(before);
  });

  it("VER-SERVER-003 (our design differs: the spec reads an empty version as 0.3): Should serve an empty or absent A2A-Version as 1.0", async () => {
    // The kit accepts either a result or an error here; we serve lenient 1.0 clients: no version, or an empty one, is 1.0.
    const empty = await jsonRpc(token, "GetTask", { id: "a2a-none" }, { headers: { "a2a-version": "" } });
    expect(empty.body.error.code).toBe(-32001);
    const res = await SELF.fetch(`${BASE}/a2a`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ListTasks", params: {} }) });
    expect(problems(checkListTasksResponse, ((await res.json()) as any).result)).toEqual([]);
  });

  it("VER-CLIENT-002: Should ignore the patch number: 1.0.0 is served exactly as 1.0", async () => {
    const task = await submit();
    const plain = await jsonRpc(token, "GetTask", { id: task.id }, { headers: { "a2a-version": "1.0" } });
    const patched = await jsonRpc(token, "GetTask", { id: task.id }, { headers: { "a2a-version": "1.0.0" } });
    expect(patched.body.result).toEqual(plain.body.result);
  });

  it("VER-SERVER-001 (query parameter): Should take A2A-Version from the query when the header is absent", async () => {
    const res = await SELF.fetch(`${BASE}/a2a?A2A-Version=99.0`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ListTasks", params: {} }) });
    expect(((await res.json()) as any).error.code).toBe(-32009);
  });
});

describe("data model and serialization", () => {
  /** Wire samples of every kind this agent emits, from tasks in every state it gives. */
  const samples: { label: string; value: any; check: Parameters<typeof problems>[0] }[] = [];
  const tasks: any[] = [];

  beforeAll(async () => {
    const submitted = await jsonRpc(token, "SendMessage", { message: wireMessage(unique("Model submitted")), configuration: { returnImmediately: true } });
    samples.push({ label: "SendMessage", value: submitted.body.result, check: checkSendMessageResponse });
    const working = await submit(unique("Model working"));
    expectOk(await call("PATCH", taskPath(working.id), S.orch, { ops: [{ op: "add_step", step: step("a") }] }));
    const asking = await submit(unique("Model asking"));
    await askInput(asking.id, "Which region?");
    const answered = await submit(unique("Model answered"));
    await askInput(answered.id, "Which quarter?");
    await jsonRpc(token, "SendMessage", { message: { messageId: `m-${crypto.randomUUID()}`, role: "ROLE_USER", taskId: answered.id, parts: [{ data: { quarter: "Q3" }, mediaType: "application/json" }] }, configuration: { returnImmediately: true } });
    const completed = await submit(unique("Model completed"), { parts: [{ text: "Model completed" }, { data: { region: "EMEA" }, mediaType: "application/json" }, { url: "https://example.com/brief.txt", filename: "brief.txt", mediaType: "text/plain" }] });
    const stream = await openStream(token, "SubscribeToTask", { id: completed.id });
    await stream.next();
    await planAndRun(completed.id);
    for (const e of await stream.rest()) samples.push({ label: `stream ${summary(e.json)}`, value: e.json.result, check: checkStreamResponse });
    const failed = await submit(unique("Model failed"));
    expectOk(await call("POST", `${taskPath(failed.id)}/fail`, S.orch, { reason: "The ledger is unreadable" }));
    const canceled = await submit(unique("Model canceled"));
    await jsonRpc(token, "CancelTask", { id: canceled.id });
    for (const t of [submitted.body.result.task, working, asking, answered, completed, failed, canceled]) {
      const got = (await jsonRpc(token, "GetTask", { id: t.id })).body.result;
      tasks.push(got);
      samples.push({ label: `GetTask ${got.status.state}`, value: got, check: checkTask });
    }
    samples.push({ label: "ListTasks", value: (await jsonRpc(token, "ListTasks", { includeArtifacts: true, pageSize: 100 })).body.result, check: checkListTasksResponse });
  });

  /** Every Task among the samples (GetTask answers, wrapped results, list pages, stream snapshots). */
  const allTasks = () => [...tasks, ...samples.flatMap((s) => [s.value.task, ...(s.value.tasks ?? [])]).filter((t) => t !== undefined)];
  /** Every Message: history entries and status messages. */
  const allMessages = () => allTasks().flatMap((t) => [...(t.history ?? []), ...(t.status.message === undefined ? [] : [t.status.message])]);

  it("DM-TASK-001 / DM-STATUS-001: Should give every Task an id and a status, and every status a state", () => {
    expect(allTasks().length).toBeGreaterThan(10);
    for (const t of allTasks()) expect(problems(checkTask, t), t.id).toEqual([]);
  });

  it("DM-TASK-002: Should use only TaskState enum strings, and give every state this runtime has", () => {
    const states = new Set(allTasks().map((t) => t.status.state));
    expect([...states].sort()).toEqual(["TASK_STATE_CANCELED", "TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]);
  });

  it("DM-MSG-001 / DM-MSG-002: Should give every Message, the agent's included, a messageId, a Role enum string and parts", async () => {
    const messages = allMessages();
    expect(new Set(messages.map((m) => m.role))).toEqual(new Set(["ROLE_USER", "ROLE_AGENT"]));
    const asking = tasks.find((t) => t.status.state === "TASK_STATE_INPUT_REQUIRED");
    expect(asking.status.message).toMatchObject({ role: "ROLE_AGENT", messageId: expect.any(String), parts: [{ text: "Which region?" }] });
    for (const t of allTasks()) expect(problems(checkTask, t)).toEqual([]);
  });

  it("DM-PART-001: Should give every Part exactly one of text, raw, url and data", () => {
    const parts = [...allMessages().flatMap((m) => m.parts), ...allTasks().flatMap((t) => (t.artifacts ?? []).flatMap((a: any) => a.parts))];
    const kinds = new Set(parts.map((p) => ["text", "raw", "url", "data"].filter((k) => k in p).join("+")));
    expect([...kinds].sort()).toEqual(["data", "text", "url"]);
  });

  it("DM-ART-001: Should give every Artifact an artifactId and non-empty parts", () => {
    const artifacts = [...allTasks().flatMap((t) => t.artifacts ?? []), ...samples.map((s) => s.value.artifactUpdate?.artifact).filter((a) => a !== undefined)];
    expect(artifacts.length).toBeGreaterThan(0);
    for (const a of artifacts) {
      expect(typeof a.artifactId).toBe("string");
      expect(a.parts.length).toBeGreaterThan(0);
    }
  });

  it("DM-SERIAL-001: Should name every field in lowerCamelCase (free-form metadata and data excepted)", () => {
    for (const s of samples) expect(nonCamelKeys(s.value), s.label).toEqual([]);
  });

  it("DM-SERIAL-002: Should write enums as their ProtoJSON name strings, never numbers or lowercase", () => {
    const text = JSON.stringify(samples.map((s) => s.value));
    expect(text).not.toMatch(/"(state|role)":\s*\d/);
    expect(text).not.toMatch(/"state":"(submitted|working|completed|failed|canceled|cancelled|input-required)"/);
    // 0.3's discriminators are gone in 1.0 (free-form metadata and data may use any key).
    for (const s of samples) expect(protocolKeys(s.value).filter(({ key }) => key === "kind" || key === "final"), s.label).toEqual([]);
  });

  it("DM-SERIAL-003: Should write every timestamp as ISO-8601 UTC with a Z", () => {
    const stamps = [...allTasks().map((t) => t.status.timestamp), ...samples.map((s) => s.value.statusUpdate?.status?.timestamp).filter((x) => x !== undefined)];
    expect(stamps.length).toBeGreaterThan(0);
    for (const ts of stamps) expect(ts).toMatch(UTC_TIMESTAMP);
  });

  it("DM-SERIAL-004: Should send every REQUIRED field, required arrays non-empty, and no key outside the schema", () => {
    for (const s of samples) expect(problems(s.check, s.value), s.label).toEqual([]);
  });

  it("DM-SERIAL-005 (SHOULD): Should ignore unknown fields in a request", async () => {
    const r = await jsonRpc(token, "SendMessage", { message: { ...wireMessage(unique("Extra fields")), unknownField: 1 }, configuration: { returnImmediately: true, futureOption: true }, somethingNew: "x" });
    expect(r.body.result.task.status.state).toBe("TASK_STATE_SUBMITTED");
  });
});

describe("authentication and scope", () => {
  it("AUTH-SERVER-002 (our design: bearer tokens; the kit sends none): Should refuse every method without a valid bearer token, the card staying public", async () => {
    for (const method of ["SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask", "SubscribeToTask", "GetExtendedAgentCard"]) {
      for (const auth of [undefined, "not-a-token"]) {
        const r = await jsonRpc(auth, method, { id: "a2a-none", message: wireMessage("unauthenticated") });
        expect(r.status, `${method} ${auth}`).toBe(401);
        expect(r.headers.get("www-authenticate")).toMatch(/^Bearer /);
        expect(problems(checkError, r.body.error)).toEqual([]);
      }
    }
    const basic = await rpc(undefined, { jsonrpc: "2.0", id: 1, method: "ListTasks", params: {} }, { authorization: `Basic ${btoa("user:pass")}` });
    expect(basic.status).toBe(401);
    expect((await SELF.fetch(`${BASE}/.well-known/agent-card.json`)).status).toBe(200);
  });

  it("AUTH-SCOPE-001/002: Should scope every operation to the caller: another client's task is not read, cancelled, subscribed, answered or listed", async () => {
    const theirs = await submit(unique("Theirs"), {}, otherToken);
    await askInput(theirs.id);
    expectA2aError((await jsonRpc(token, "GetTask", { id: theirs.id })).body, -32001, "TASK_NOT_FOUND");
    expectA2aError((await jsonRpc(token, "CancelTask", { id: theirs.id })).body, -32001, "TASK_NOT_FOUND");
    expectA2aError(await (await openStream(token, "SubscribeToTask", { id: theirs.id })).jsonBody(), -32001, "TASK_NOT_FOUND");
    expectA2aError((await jsonRpc(token, "SendMessage", { message: wireMessage("EMEA", { taskId: theirs.id }) })).body, -32001, "TASK_NOT_FOUND");
    expect((await jsonRpc(token, "ListTasks", { pageSize: 100 })).body.result.tasks.map((t: { id: string }) => t.id)).not.toContain(theirs.id);
    // Untouched: still asking its own client.
    expect((await jsonRpc(otherToken, "GetTask", { id: theirs.id })).body.result.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
  });

  it("AUTH-INTASK-001..004 (N/A: this agent never uses AUTH_REQUIRED): Should surface a human approval as INPUT_REQUIRED on the Task, its question in status.message", async () => {
    // Approvals are answered in-band (yes/no), never with credentials, so INPUT_REQUIRED, never AUTH_REQUIRED.
    const task = await submit();
    expectOk(await call("POST", `${taskPath(task.id)}/actions`, S.orch, { kind: "approval", prompt: "May I email the board?" }), 201);
    const seen = (await jsonRpc(token, "GetTask", { id: task.id })).body.result;
    expect(seen.status).toMatchObject({ state: "TASK_STATE_INPUT_REQUIRED", message: { role: "ROLE_AGENT", parts: [{ text: "May I email the board?" }] } });
  });

  it("AUTH-SCOPE-003: Should answer another client's task exactly as a task that does not exist", async () => {
    const theirs = (await submit(unique("Hidden"), {}, otherToken)).id;
    const missing = `a2a-${crypto.randomUUID().replaceAll("-", "").slice(0, 26)}`;
    for (const method of ["GetTask", "CancelTask"]) {
      const seenTheirs = (await jsonRpc(token, method, { id: theirs }, { id: 9 })).body;
      const seenMissing = (await jsonRpc(token, method, { id: missing }, { id: 9 })).body;
      expect(JSON.stringify(seenTheirs).replaceAll(theirs, "<id>"), method).toBe(JSON.stringify(seenMissing).replaceAll(missing, "<id>"));
    }
  });
});
