/**
 * @module A2A 1.0 over JSON-RPC (docs/protocols/a2a.md), driven by the official @a2a-js/sdk client through SELF: the Agent
 * Card and its caching, a message submitting a task the session's orchestrator then plans over REST, reads,
 * cancels, multi-turn answers to open actions, streams, the request ladder and the typed errors with ErrorInfo.
 */
import { SELF } from "cloudflare:test";
import { type StreamResponse, type Task, TaskState } from "@a2a-js/sdk";
import type { Client } from "@a2a-js/sdk/client";
import { A2AError, RequestMalformedError, TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError } from "@a2a-js/sdk/errors";
import { beforeAll, describe, expect, it } from "vitest";
import { collect, connectA2a, data, rpc, send, failure } from "../support/a2a-clients.js";
import { ADMIN, call, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { BASE, eventually, expectOk, mintRole } from "../support/support.js";

const ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo";

let S: TestSession;
let clientToken: string;
let client: Client;
let other: Client;

beforeAll(async () => {
  S = await newSession();
  clientToken = await mintRole(S, "a2a_client", "partner-agent");
  client = await connectA2a(clientToken);
  other = await connectA2a(await mintRole(S, "a2a_client", "someone-else"));
});

/** A task submitted by the client, answered at once (SUBMITTED). */
async function submit(textValue = "Summarise the quarter's sales", contextId = ""): Promise<Task> {
  const r = await client.sendMessage(send(textValue, { contextId }, { returnImmediately: true }));
  expect("id" in r, JSON.stringify(r)).toBe(true);
  return r as Task;
}

const taskPath = (id: string) => `/v1/sessions/${S.sid}/tasks/${id}`;

/** The orchestrator plans the task with one step, a worker completes it with a result, the orchestrator completes the task. */
async function planAndRun(id: string, result = { result_summary: "Sales rose 12%", artifact_ids: ["r2://reports/q3.pdf"] }): Promise<void> {
  expectOk(await call("PATCH", taskPath(id), S.orch, { ops: [{ op: "add_step", step: step("report") }] }));
  const worker = expectOk(await call("POST", `${taskPath(id)}/workers`, S.orch, {}), 201);
  expectOk(await call("POST", `${taskPath(id)}/steps/report/claim`, worker.token, {}));
  expectOk(await call("POST", `${taskPath(id)}/steps/report/status`, worker.token, { status: "completed", ...result }));
  expectOk(await call("POST", `${taskPath(id)}/complete`, S.orch, { reason: "Report delivered" }));
}

/** Asserts an SDK error carries the A2A ErrorInfo with this reason. */
function expectErrorInfo(e: any, reason: string): void {
  expect(e.data).toEqual(expect.arrayContaining([expect.objectContaining({ "@type": ERROR_INFO, reason, domain: "a2a-protocol.org" })]));
}

describe("the Agent Card", () => {
  it("Should serve a public 1.0 card naming the JSON-RPC interface at /a2a, with no 0.3 fields", async () => {
    const res = await SELF.fetch(`${BASE}/.well-known/agent-card.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    const card = (await res.json()) as Record<string, any>;
    expect(card.supportedInterfaces).toEqual([{ url: `${BASE}/a2a`, protocolBinding: "JSONRPC", protocolVersion: "1.0" }]);
    expect(card.capabilities).toMatchObject({ streaming: true });
    expect(card.capabilities.pushNotifications).toBe(true);
    expect(card.securitySchemes.bearer.httpAuthSecurityScheme.scheme).toBe("Bearer");
    expect(card.skills.length).toBeGreaterThan(0);
    for (const field of ["name", "description", "version", "defaultInputModes", "defaultOutputModes"]) expect(card[field], field).toBeTruthy();
    for (const old of ["url", "protocolVersion", "preferredTransport", "additionalInterfaces"]) expect(card, old).not.toHaveProperty(old);
  });

  it("Should be cacheable: max-age, a strong ETag, and 304 for a matching If-None-Match", async () => {
    const res = await SELF.fetch(`${BASE}/.well-known/agent-card.json`);
    await res.text();
    expect(res.headers.get("cache-control")).toMatch(/max-age=\d+/);
    const etag = res.headers.get("etag")!;
    expect(etag).toMatch(/^"[^"]+"$/);
    const again = await SELF.fetch(`${BASE}/.well-known/agent-card.json`, { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
    expect(again.headers.get("etag")).toBe(etag);
    const stale = await SELF.fetch(`${BASE}/.well-known/agent-card.json`, { headers: { "if-none-match": '"something-else"' } });
    expect(stale.status).toBe(200);
    await stale.text();
  });

  it("Should let the official client discover the interface from the card", async () => {
    const card = await client.getAgentCard();
    expect(card.supportedInterfaces[0]!.url).toBe(`${BASE}/a2a`);
  });
});

describe("SendMessage: a message submits a task the session's orchestrator plans", () => {
  it("Should create a task in SUBMITTED, visible to the orchestrator with the client as requester and origin", async () => {
    const task = await submit("Summarise the quarter's sales\nUse the Q3 ledger");
    expect(task.status!.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    expect(task.id).toMatch(/^a2a-[0-9a-z]+$/);
    expect(task.contextId).not.toBe("");
    const view = expectOk(await call("GET", taskPath(task.id), S.orch));
    expect(view.task).toMatchObject({
      task_id: task.id,
      status: "pending",
      requested_by: "partner-agent",
      origin: { protocol: "a2a", client_agent_id: "partner-agent" },
      thread_id: task.contextId,
      objective: "Summarise the quarter's sales\nUse the Q3 ledger",
      title: "Summarise the quarter's sales",
    });
    expect(view.steps).toEqual([]);
    const listed = expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks`, S.orch));
    expect(listed.tasks.map((t: { task_id: string }) => t.task_id)).toContain(task.id);
  });

  it("Should keep the client's contextId as the task's thread and store data parts as input_refs", async () => {
    const r = (await client.sendMessage(send([data({ quarter: "Q3" }), { ...data(null), content: { $case: "text", value: "Compare regions" } }], { contextId: "ctx-mine" }, { returnImmediately: true }))) as Task;
    expect(r.contextId).toBe("ctx-mine");
    const view = expectOk(await call("GET", taskPath(r.id), S.orch));
    expect(view.task.thread_id).toBe("ctx-mine");
    expect(view.task.objective).toBe("Compare regions");
    expect(view.task.input_refs).toEqual([{ kind: "data", data: { quarter: "Q3" }, media_type: "application/json" }]);
  });

  it("Should give two messages two tasks", async () => {
    const [a, b] = [await submit("one"), await submit("two")];
    expect(a.id).not.toBe(b.id);
  });

  it("Should record referenceTaskIds as source_task edges of the new task, and refuse a task the client cannot see with -32001, creating nothing", async () => {
    const earlier = await submit("the first draft");
    const refined = (await client.sendMessage(send("Make it shorter", { referenceTaskIds: [earlier.id, earlier.id] }, { returnImmediately: true }))) as Task;
    const record = expectOk(await call("GET", taskPath(refined.id), S.orch)).task;
    expect(record.relationships).toEqual([{ kind: "source_task", task_id: earlier.id }]);
    const theirs = (await other.sendMessage(send("their work", {}, { returnImmediately: true }))) as Task;
    const before = expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks?limit=500`, S.orch)).total;
    const e = await failure(client.sendMessage(send("Build on theirs", { referenceTaskIds: [theirs.id] }, { returnImmediately: true })));
    expect(e).toBeInstanceOf(TaskNotFoundError);
    expect(expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks?limit=500`, S.orch)).total).toBe(before);
  });

  it("Should show COMPLETED with the step's result as an artifact once the orchestrator has run and completed it", async () => {
    const task = await submit();
    await planAndRun(task.id);
    const done = await client.getTask({ tenant: "", id: task.id });
    expect(done.status!.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const report = done.artifacts.find((a) => a.artifactId === "report")!;
    expect(report.name).toBe("Step report");
    expect(report.parts.map((p) => p.content)).toEqual([
      { $case: "text", value: "Sales rose 12%" },
      { $case: "data", value: { artifactIds: ["r2://reports/q3.pdf"] } },
    ]);
    expect(done.artifacts.find((a) => a.artifactId === "result")!.parts[0]!.content).toEqual({ $case: "text", value: "Report delivered" });
    expect(done.history[0]!.parts[0]!.content).toEqual({ $case: "text", value: "Summarise the quarter's sales" });
  });

  it("Should show WORKING once the orchestrator has planned a step", async () => {
    const task = await submit();
    expectOk(await call("PATCH", taskPath(task.id), S.orch, { ops: [{ op: "add_step", step: step("a") }] }));
    expect((await client.getTask({ tenant: "", id: task.id })).status!.state).toBe(TaskState.TASK_STATE_WORKING);
  });

  it("Should hold a blocking SendMessage until the orchestrator takes the task up, then answer WORKING", async () => {
    const contextId = `ctx-blocking-${crypto.randomUUID().slice(0, 8)}`;
    const pending = client.sendMessage(send("Plan me", { contextId }));
    // The orchestrator finds the new task in its session and plans it while the client waits.
    const id = await eventually(async () => {
      const list = expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks`, S.orch));
      const found = list.tasks.find((t: { task_id: string; title: string }) => t.title === "Plan me");
      expect(found).toBeDefined();
      return found.task_id as string;
    }, 8_000);
    expectOk(await call("PATCH", taskPath(id), S.orch, { ops: [{ op: "add_step", step: step("a") }] }));
    const answered = (await pending) as Task;
    expect(answered.id).toBe(id);
    expect(answered.contextId).toBe(contextId);
    expect(answered.status!.state).toBe(TaskState.TASK_STATE_WORKING);
  });

  it("Should apply historyLength: 0 gives no history", async () => {
    const task = await submit();
    expect((await client.getTask({ tenant: "", id: task.id, historyLength: 0 })).history).toEqual([]);
    expect((await client.getTask({ tenant: "", id: task.id, historyLength: 1 })).history).toHaveLength(1);
  });
});

describe("CancelTask", () => {
  it("Should cancel the client's live task and answer it CANCELED, visible over REST", async () => {
    const task = await submit();
    const cancelled = await client.cancelTask({ tenant: "", id: task.id, metadata: undefined });
    expect(cancelled.id).toBe(task.id);
    expect(cancelled.status!.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(expectOk(await call("GET", taskPath(task.id), S.orch)).task.status).toBe("cancelled");
  });

  it("Should refuse a terminal task with TaskNotCancelableError (-32002) and its ErrorInfo", async () => {
    const task = await submit();
    await client.cancelTask({ tenant: "", id: task.id, metadata: undefined });
    const e = await failure(client.cancelTask({ tenant: "", id: task.id, metadata: undefined }));
    expect(e).toBeInstanceOf(TaskNotCancelableError);
    expect(e.envelopeCode).toBe(-32002);
    expectErrorInfo(e, "TASK_NOT_CANCELABLE");
  });
});

describe("tasks the client cannot see", () => {
  it.each([
    ["an unknown id", async () => "a2a-does-not-exist"],
    ["a malformed id", async () => "../Not An Id"],
    ["another client's task", async () => ((await other.sendMessage(send("theirs", {}, { returnImmediately: true }))) as Task).id],
    ["the orchestrator's own task", async () => (await newTask(S, `own-${crypto.randomUUID().slice(0, 6)}`, [step("a")])).split("/").pop()!],
  ])("Should answer TaskNotFoundError (-32001) with ErrorInfo for %s, on GetTask, CancelTask and a follow-up message", async (_name, idOf) => {
    const id = await idOf();
    for (const attempt of [
      () => client.getTask({ tenant: "", id }),
      () => client.cancelTask({ tenant: "", id, metadata: undefined }),
      () => client.sendMessage(send("more", { taskId: id }, { returnImmediately: true })),
    ]) {
      const e = await failure(attempt());
      expect(e).toBeInstanceOf(TaskNotFoundError);
      expect(e.envelopeCode).toBe(-32001);
      expectErrorInfo(e, "TASK_NOT_FOUND");
    }
  });

  it("Should leave another client's task as it was when this client tries to cancel it", async () => {
    const theirs = (await other.sendMessage(send("keep me", {}, { returnImmediately: true }))) as Task;
    await failure(client.cancelTask({ tenant: "", id: theirs.id, metadata: undefined }));
    expect((await other.getTask({ tenant: "", id: theirs.id })).status!.state).toBe(TaskState.TASK_STATE_SUBMITTED);
  });
});

describe("multi-turn: a message naming a task answers its open action", () => {
  /** A submitted task the orchestrator planned and then asked the client something on. */
  async function asking(kind: "input" | "approval", prompt: string): Promise<{ task: Task; actionId: string }> {
    const task = await submit();
    expectOk(await call("PATCH", taskPath(task.id), S.orch, { ops: [{ op: "add_step", step: step("a") }] }));
    const asked = expectOk(await call("POST", `${taskPath(task.id)}/actions`, S.orch, { kind, prompt }), 201);
    return { task, actionId: asked.action_id };
  }

  it("Should show INPUT_REQUIRED with the action's prompt as the status message", async () => {
    const { task } = await asking("input", "Which region first?");
    const seen = await client.getTask({ tenant: "", id: task.id });
    expect(seen.status!.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(seen.status!.message!.parts[0]!.content).toEqual({ $case: "text", value: "Which region first?" });
  });

  it("Should submit an input action with the message's data part, and the task works again", async () => {
    const { task, actionId } = await asking("input", "Which region first?");
    const r = (await client.sendMessage(send([data({ region: "EMEA" })], { taskId: task.id }))) as Task;
    expect(r.id).toBe(task.id);
    expect(r.status!.state).toBe(TaskState.TASK_STATE_WORKING);
    const action = expectOk(await call("GET", `${taskPath(task.id)}/actions/${actionId}`, S.orch)).action;
    expect(action).toMatchObject({ status: "resolved", decision: "submitted", input: { region: "EMEA" }, resolved_by: { agent_id: "partner-agent", role: "a2a_client" } });
  });

  it("Should submit an input action with text as {text}, inferring the context from the task", async () => {
    const { task, actionId } = await asking("input", "Anything else?");
    await client.sendMessage(send("Include Q2 for comparison", { taskId: task.id }, { returnImmediately: true }));
    const action = expectOk(await call("GET", `${taskPath(task.id)}/actions/${actionId}`, S.orch)).action;
    expect(action.input).toEqual({ text: "Include Q2 for comparison" });
  });

  it.each([
    ["approve", "approved"],
    ["No", "rejected"],
  ])("Should decide an approval from the text %s as %s", async (said, decision) => {
    const { task, actionId } = await asking("approval", "May I email the board?");
    await client.sendMessage(send(said, { taskId: task.id, contextId: task.contextId }, { returnImmediately: true }));
    expect(expectOk(await call("GET", `${taskPath(task.id)}/actions/${actionId}`, S.orch)).action.decision).toBe(decision);
  });

  it("Should refuse an approval answer that is neither yes nor no with -32602, leaving the action open", async () => {
    const { task, actionId } = await asking("approval", "May I email the board?");
    const e = await failure(client.sendMessage(send("maybe later", { taskId: task.id }, { returnImmediately: true })));
    expect(e).toBeInstanceOf(RequestMalformedError);
    expect(e.envelopeCode).toBe(-32602);
    expect(expectOk(await call("GET", `${taskPath(task.id)}/actions/${actionId}`, S.orch)).action.status).toBe("open");
  });

  it("Should refuse a contextId other than the task's with -32602 and reason CONTEXT_MISMATCH", async () => {
    const { task, actionId } = await asking("input", "Which region first?");
    const e = await failure(client.sendMessage(send("EMEA", { taskId: task.id, contextId: "ctx-another" }, { returnImmediately: true })));
    expect(e.envelopeCode).toBe(-32602);
    expect(e.data).toEqual([expect.objectContaining({ "@type": ERROR_INFO, reason: "CONTEXT_MISMATCH" })]);
    expect(expectOk(await call("GET", `${taskPath(task.id)}/actions/${actionId}`, S.orch)).action.status).toBe("open");
  });

  it("Should refuse a message to a terminal task with UnsupportedOperationError (-32004)", async () => {
    const task = await submit();
    await client.cancelTask({ tenant: "", id: task.id, metadata: undefined });
    const e = await failure(client.sendMessage(send("one more thing", { taskId: task.id }, { returnImmediately: true })));
    expect(e).toBeInstanceOf(UnsupportedOperationError);
    expectErrorInfo(e, "UNSUPPORTED_OPERATION");
  });

  it("Should refuse a message to a task that waits for nobody with UnsupportedOperationError (-32004)", async () => {
    const task = await submit();
    const e = await failure(client.sendMessage(send("hello again", { taskId: task.id }, { returnImmediately: true })));
    expect(e).toBeInstanceOf(UnsupportedOperationError);
  });
});

/** Waits for a stream's first event (the Task snapshot); `all` then gives every event once the stream closes. */
async function subscribed(stream: AsyncGenerator<StreamResponse>): Promise<{ all: Promise<StreamResponse[]> }> {
  const it = stream[Symbol.asyncIterator]();
  const first = await it.next();
  // Wrapped in an object: an async function returning a promise would wait for it.
  return {
    all: (async () => {
      const out = first.done ? [] : [first.value];
      for (let next = await it.next(); !next.done; next = await it.next()) out.push(next.value);
      return out;
    })(),
  };
}

describe("streams", () => {
  const states = (events: StreamResponse[]) =>
    events.map((e) => (e.payload?.$case === "task" ? `task:${TaskState[e.payload.value.status!.state]}` : e.payload?.$case === "statusUpdate" ? TaskState[e.payload.value.status!.state] : e.payload?.$case === "artifactUpdate" ? `artifact:${e.payload.value.artifact!.artifactId}` : "?"));

  it("Should stream SubscribeToTask from the task's state to its completion: the Task first, the artifact, COMPLETED last", async () => {
    const task = await submit();
    const { all: events } = await subscribed(client.resubscribeTask({ tenant: "", id: task.id }));
    await planAndRun(task.id);
    const seen = states(await events);
    expect(seen[0]).toBe("task:TASK_STATE_SUBMITTED");
    expect(seen).toContain("artifact:report");
    expect(seen).toContain("TASK_STATE_WORKING");
    expect(seen.at(-1)).toBe("TASK_STATE_COMPLETED");
  });

  it("Should keep SubscribeToTask open through INPUT_REQUIRED until the task ends", async () => {
    const task = await submit();
    expectOk(await call("PATCH", taskPath(task.id), S.orch, { ops: [{ op: "add_step", step: step("a") }] }));
    const { all: events } = await subscribed(client.resubscribeTask({ tenant: "", id: task.id }));
    expectOk(await call("POST", `${taskPath(task.id)}/actions`, S.orch, { kind: "input", prompt: "Which region?" }), 201);
    await eventually(async () => expect((await client.getTask({ tenant: "", id: task.id })).status!.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED));
    await client.sendMessage(send("EMEA", { taskId: task.id }, { returnImmediately: true }));
    await client.cancelTask({ tenant: "", id: task.id, metadata: undefined });
    const seen = states(await events);
    expect(seen[0]).toBe("task:TASK_STATE_WORKING");
    expect(seen).toContain("TASK_STATE_INPUT_REQUIRED");
    expect(seen.at(-1)).toBe("TASK_STATE_CANCELED");
  });

  it("Should refuse SubscribeToTask on a terminal task with -32004 and on an unknown one with -32001", async () => {
    const task = await submit();
    await client.cancelTask({ tenant: "", id: task.id, metadata: undefined });
    expect(await failure(collect(client.resubscribeTask({ tenant: "", id: task.id })))).toBeInstanceOf(UnsupportedOperationError);
    expect(await failure(collect(client.resubscribeTask({ tenant: "", id: "a2a-nothing-here" })))).toBeInstanceOf(TaskNotFoundError);
  });

  it("Should open SendStreamingMessage with the new Task and close it at INPUT_REQUIRED", async () => {
    const contextId = `ctx-stream-${crypto.randomUUID().slice(0, 8)}`;
    const events = collect(client.sendMessageStream(send("Stream me", { contextId })));
    const id = await eventually(async () => {
      const list = expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks`, S.orch));
      const found = list.tasks.find((t: { title: string }) => t.title === "Stream me");
      expect(found).toBeDefined();
      return found.task_id as string;
    }, 8_000);
    expectOk(await call("PATCH", taskPath(id), S.orch, { ops: [{ op: "add_step", step: step("a") }] }));
    expectOk(await call("POST", `${taskPath(id)}/actions`, S.orch, { kind: "input", prompt: "Which region?" }), 201);
    const seen = states(await events);
    expect(seen[0]).toBe("task:TASK_STATE_SUBMITTED");
    expect(seen.at(-1)).toBe("TASK_STATE_INPUT_REQUIRED");
  });
});

describe("the /a2a request ladder", () => {
  const getTask = { jsonrpc: "2.0", id: 7, method: "GetTask", params: { id: "a2a-none" } };

  it("Should answer 401 with a Bearer challenge without a token or with a forged one", async () => {
    for (const token of [undefined, "not-a-token"]) {
      const r = await rpc(token, getTask);
      expect(r.status).toBe(401);
      expect(r.headers.get("www-authenticate")).toMatch(/^Bearer /);
      expect(r.body.error).toMatchObject({ code: -32000, data: [{ "@type": ERROR_INFO, reason: "UNAUTHENTICATED" }] });
    }
  });

  it("Should refuse REST tokens and the admin token with 403: /a2a speaks to a2a_client tokens only", async () => {
    for (const token of [S.orch, S.observer, await mintRole(S, "approver"), ADMIN]) {
      const r = await rpc(token, getTask);
      expect(r.status).toBe(403);
      expect(r.body.error).toMatchObject({ code: -32000, data: [{ reason: "PERMISSION_DENIED" }] });
    }
  });

  it("Should refuse a REST token through the official client too, creating no task", async () => {
    const before = expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks`, S.orch)).total;
    const orchestratorClient = await connectA2a(S.orch);
    const e = await failure(orchestratorClient.sendMessage(send("sneaky", {}, { returnImmediately: true })));
    expect(e.errorResponse.error).toMatchObject({ code: -32000, data: [{ reason: "PERMISSION_DENIED" }] });
    expect(expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks`, S.orch)).total).toBe(before);
  });

  it("Should answer 415 with -32005 for a body that is not JSON by its Content-Type", async () => {
    const r = await rpc(clientToken, "hello", { "content-type": "text/plain" });
    expect(r.status).toBe(415);
    expect(r.body.error).toMatchObject({ code: -32005, data: [{ "@type": ERROR_INFO, reason: "CONTENT_TYPE_NOT_SUPPORTED" }] });
  });

  it("Should answer -32700 for malformed JSON and -32600 for a request that is not JSON-RPC or has no id", async () => {
    expect((await rpc(clientToken, "{not json")).body).toEqual({ jsonrpc: "2.0", id: null, error: { code: -32700, message: expect.any(String) } });
    for (const bad of [[1, 2], { jsonrpc: "1.0", id: 1, method: "GetTask", params: {} }, { jsonrpc: "2.0", id: 1, params: {} }, { jsonrpc: "2.0", method: "GetTask", params: { id: "x" } }, { jsonrpc: "2.0", id: 1.5, method: "GetTask", params: {} }]) {
      expect((await rpc(clientToken, bad)).body.error.code, JSON.stringify(bad)).toBe(-32600);
    }
  });

  it("Should serve 1.0, 1.0.x and a missing A2A-Version, and refuse others with -32009 and ErrorInfo", async () => {
    for (const version of ["1.0", "1.0.3"]) expect((await rpc(clientToken, getTask, { "a2a-version": version })).body.error.code).toBe(-32001);
    const res = await SELF.fetch(`${BASE}/a2a`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${clientToken}` }, body: JSON.stringify(getTask) });
    expect(((await res.json()) as any).error.code).toBe(-32001);
    for (const version of ["99.0", "0.3", "garbage"]) {
      const r = await rpc(clientToken, getTask, { "a2a-version": version });
      expect(r.body).toMatchObject({ jsonrpc: "2.0", id: 7, error: { code: -32009, data: [{ "@type": ERROR_INFO, reason: "VERSION_NOT_SUPPORTED", domain: "a2a-protocol.org" }] } });
    }
  });

  it("Should answer errors as exactly {code, message, data} echoing the request id", async () => {
    const r = await rpc(clientToken, { ...getTask, id: "req-1" });
    expect(r.status).toBe(200);
    expect(r.contentType).toContain("application/json");
    expect(Object.keys(r.body.error).sort()).toEqual(["code", "data", "message"]);
    expect(r.body.id).toBe("req-1");
  });

  it.each([
    // Push notifications are served (test/a2a/a2a-push.test.ts): a task the client does not have is TaskNotFound.
    ["CreateTaskPushNotificationConfig", { taskId: "t", url: "https://example.com/hook" }, -32001, "TASK_NOT_FOUND"],
    ["GetTaskPushNotificationConfig", { taskId: "t", id: "c" }, -32001, "TASK_NOT_FOUND"],
    ["ListTaskPushNotificationConfigs", { taskId: "t" }, -32001, "TASK_NOT_FOUND"],
    ["DeleteTaskPushNotificationConfig", { taskId: "t", id: "c" }, -32001, "TASK_NOT_FOUND"],
    ["GetExtendedAgentCard", {}, -32004, "UNSUPPORTED_OPERATION"],
  ])("Should answer %s with %d", async (method, params, code, reason) => {
    const r = await rpc(clientToken, { jsonrpc: "2.0", id: 3, method, params });
    expect(r.body.error).toMatchObject({ code, data: [{ "@type": ERROR_INFO, reason, domain: "a2a-protocol.org" }] });
  });

  it("Should answer -32601 for a method A2A does not have", async () => {
    expect((await rpc(clientToken, { jsonrpc: "2.0", id: 4, method: "message/send", params: {} })).body.error.code).toBe(-32601);
  });

  it("Should answer -32602 for a SendMessage without a message, creating nothing", async () => {
    const before = expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks`, S.orch)).total;
    const r = await rpc(clientToken, { jsonrpc: "2.0", id: 5, method: "SendMessage", params: {} });
    expect(r.body.error).toMatchObject({ code: -32602, data: [{ "@type": ERROR_INFO }] });
    expect(expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks`, S.orch)).total).toBe(before);
  });

  it("Should answer a wire-format SendMessage with the 1.0 Task JSON", async () => {
    const r = await rpc(clientToken, { jsonrpc: "2.0", id: 6, method: "SendMessage", params: { message: { messageId: "m1", role: "ROLE_USER", parts: [{ text: "Wire check" }] }, configuration: { returnImmediately: true } } });
    expect(r.body.result.task).toMatchObject({ id: expect.stringMatching(/^a2a-/), contextId: expect.any(String), status: { state: "TASK_STATE_SUBMITTED", timestamp: expect.stringMatching(/Z$/) } });
    expect(r.body.result.task).not.toHaveProperty("kind");
  });

  it("Should ignore a tenant param and unknown A2A-Extensions rather than fail", async () => {
    const r = await rpc(clientToken, { ...getTask, params: { id: "a2a-none", tenant: "acme" } }, { "a2a-extensions": "https://example.com/ext/a, https://example.com/ext/b" });
    expect(r.status).toBe(200);
    expect(r.body.error.code).toBe(-32001);
  });

  it("Should frame a stream as SSE whose every event is a JSON-RPC response echoing the request id", async () => {
    // A fresh task's stream, read until its first event; the client then goes away (the task stays).
    const res = await SELF.fetch(`${BASE}/a2a`, {
      method: "POST",
      headers: { "content-type": "application/json", "a2a-version": "1.0", accept: "text/event-stream", authorization: `Bearer ${clientToken}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: "s-1", method: "SendStreamingMessage", params: { message: { messageId: "m-s1", role: "ROLE_USER", parts: [{ text: "Framing check" }] } } }),
    });
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let textSoFar = "";
    while (!textSoFar.includes("\n\n")) textSoFar += (await reader.read()).value ?? "";
    await reader.cancel();
    const frame = textSoFar.split("\n\n")[0]!;
    expect(frame.startsWith("data: ")).toBe(true);
    const event = JSON.parse(frame.slice("data: ".length));
    expect(event).toMatchObject({ jsonrpc: "2.0", id: "s-1", result: { task: { status: { state: "TASK_STATE_SUBMITTED" } } } });
    expect(Object.keys(event.result)).toEqual(["task"]);
  });

  it("Should give an A2A error an instance the SDK recognises", async () => {
    const e = await failure(client.getTask({ tenant: "", id: "a2a-zzz" }));
    expect(e).toBeInstanceOf(A2AError);
  });
});

describe("SendMessage retried with the same messageId", () => {
  const tasksOfSession = async () => (expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks?include_terminal=true&limit=500`, S.orch)).tasks as { task_id: string }[]).map((t) => t.task_id);

  it("Should answer a repeated message (same messageId, same content) with the task the first one created, creating one task", async () => {
    const messageId = `retry-${crypto.randomUUID()}`;
    const before = await tasksOfSession();
    const first = (await client.sendMessage(send("Draft the launch plan", { messageId }, { returnImmediately: true }))) as Task;
    const again = (await client.sendMessage(send("Draft the launch plan", { messageId }, { returnImmediately: true }))) as Task;
    expect(again.id).toBe(first.id);
    expect(again.contextId).toBe(first.contextId);
    const created = (await tasksOfSession()).filter((id) => !before.includes(id));
    expect(created).toEqual([first.id]);
  });

  it("Should reach the same task when the retry goes over SendStreamingMessage", async () => {
    const messageId = `retry-${crypto.randomUUID()}`;
    const first = (await client.sendMessage(send("Collect the survey answers", { messageId }, { returnImmediately: true }))) as Task;
    const events = client.sendMessageStream(send("Collect the survey answers", { messageId }));
    const head = await events.next();
    await events.return(undefined);
    expect(head.value?.payload).toMatchObject({ $case: "task", value: { id: first.id } });
  });

  it("Should refuse the same messageId with another message with -32602, creating nothing", async () => {
    const messageId = `retry-${crypto.randomUUID()}`;
    const first = (await client.sendMessage(send("Book the venue", { messageId }, { returnImmediately: true }))) as Task;
    const before = await tasksOfSession();
    const e = await failure(client.sendMessage(send("Cancel the venue", { messageId }, { returnImmediately: true })));
    expect(e).toBeInstanceOf(RequestMalformedError);
    expect(e.message).toContain("messageId");
    expect(await tasksOfSession()).toEqual(before);
    expect(expectOk(await call("GET", taskPath(first.id), S.orch)).task.objective).toBe("Book the venue");
  });

  it("Should keep messageIds per client: another client's message with the same messageId is its own task", async () => {
    const messageId = `retry-${crypto.randomUUID()}`;
    const mine = (await client.sendMessage(send("Audit the ledger", { messageId }, { returnImmediately: true }))) as Task;
    const theirs = (await other.sendMessage(send("Audit the ledger", { messageId }, { returnImmediately: true }))) as Task;
    expect(theirs.id).not.toBe(mine.id);
    expect(expectOk(await call("GET", taskPath(theirs.id), S.orch)).task.origin).toMatchObject({ client_agent_id: "someone-else" });
  });
});
