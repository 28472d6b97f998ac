/**
 * @module A2A push notifications (docs/protocols/a2a.md "Push notifications"), driven by the official @a2a-js/sdk
 * client through SELF: the four config methods (a config kept by its id per task, read back without its token or
 * credentials, refused with -32602 saying why, another client's task unknown), a config sent with SendMessage, and
 * the pushes themselves reaching a real receiver on loopback (test/support/webhook-receiver.ts) with the config's
 * token and Authorization, with no stream open: INPUT_REQUIRED while a worker waits for the client's answer, then
 * the answer taken, then COMPLETED, each the SDK reads back as a StreamResponse.
 */
import { StreamResponse, type Task, type TaskPushNotificationConfig, type TaskStatusUpdateEvent, TaskState } from "@a2a-js/sdk";
import type { Client } from "@a2a-js/sdk/client";
import { RequestMalformedError, TaskNotFoundError, UnsupportedOperationError } from "@a2a-js/sdk/errors";
import { runInDurableObject, SELF } from "cloudflare:test";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { connectA2a, failure, rpc, send } from "../support/a2a-clients.js";
import { call, newSession, step, type TestSession } from "../support/helpers.js";
import { BASE, eventually, expectOk, mintRole, taskStub, uniqueId, walText } from "../support/support.js";
import type { ReceivedRequest } from "../support/webhook-receiver.js";
import { MAX_PUSH_CONFIGS_PER_TASK } from "../../src/contract/index.js";

const receiverBase = inject("webhookReceiverBase");

let S: TestSession;
let clientToken: string;
let client: Client;
let other: Client;

beforeAll(async () => {
  S = await newSession();
  clientToken = await mintRole(S, "a2a_client", "push-partner");
  client = await connectA2a(clientToken);
  other = await connectA2a(await mintRole(S, "a2a_client", "someone-else"));
});

const taskPath = (id: string) => `/v1/sessions/${S.sid}/tasks/${id}`;

/** A task the client submits, answered at once (SUBMITTED). */
async function submit(what = "Compile the quarterly report", by: Client = client): Promise<Task> {
  return (await by.sendMessage(send(what, {}, { returnImmediately: true }))) as Task;
}

/** A config of `taskId` pushing to the receiver's inbox `inbox`. */
function configOf(taskId: string, inbox: string, over: Partial<TaskPushNotificationConfig> = {}): TaskPushNotificationConfig {
  return { tenant: "", id: "", taskId, url: `${receiverBase}/${inbox}/ok`, token: "", authentication: undefined, ...over };
}

/** The task's configs, as List answers them. */
async function configsOf(taskId: string, by: Client = client): Promise<TaskPushNotificationConfig[]> {
  return (await by.listTaskPushNotificationConfig({ tenant: "", taskId, pageSize: 0, pageToken: "" })).configs;
}

/** What the receiver's inbox got, in order. */
async function received(inbox: string): Promise<ReceivedRequest[]> {
  return (await (await fetch(`${receiverBase}/_received/${inbox}`)).json()) as ReceivedRequest[];
}

/** A pushed request's status update, read back by the SDK. */
function updateOf(request: ReceivedRequest): TaskStatusUpdateEvent {
  const decoded = StreamResponse.fromJSON(JSON.parse(request.body));
  expect(decoded.payload?.$case).toBe("statusUpdate");
  return (decoded.payload as { value: TaskStatusUpdateEvent }).value;
}

/** The states pushed to `inbox` so far. */
async function pushedStates(inbox: string): Promise<string[]> {
  return (await received(inbox)).map((r) => TaskState[updateOf(r).status!.state]!);
}

describe("the Agent Card", () => {
  it("Should declare push notifications", async () => {
    const card = (await (await SELF.fetch(`${BASE}/.well-known/agent-card.json`)).json()) as { capabilities: Record<string, unknown> };
    expect(card.capabilities).toMatchObject({ streaming: true, pushNotifications: true });
  });
});

describe("push notification configs", () => {
  it("Should create a config with a new id, and show it in its answer, Get and List without its token or credentials", async () => {
    const task = await submit();
    const secret = `credentials-${uniqueId()}`;
    const created = await client.createTaskPushNotificationConfig(configOf(task.id, "never", { token: "tok-1", authentication: { scheme: "Bearer", credentials: secret } }));
    expect(created.id).toMatch(/^[0-9a-f-]{36}$/);
    const shown = { tenant: "", id: created.id, taskId: task.id, url: `${receiverBase}/never/ok`, token: "", authentication: undefined };
    expect(created).toEqual(shown);
    expect(await client.getTaskPushNotificationConfig({ tenant: "", taskId: task.id, id: created.id })).toEqual(shown);
    expect(await configsOf(task.id)).toEqual([shown]);
    // On the wire: no token, no authentication, the credentials nowhere.
    for (const [method, params] of [
      ["GetTaskPushNotificationConfig", { taskId: task.id, id: created.id }],
      ["ListTaskPushNotificationConfigs", { taskId: task.id }],
    ] as const) {
      const answer = await rpc(clientToken, { jsonrpc: "2.0", id: 1, method, params });
      const text = JSON.stringify(answer.body);
      expect(text, method).not.toContain(secret);
      expect(text, method).not.toContain("tok-1");
      expect(text, method).not.toMatch(/"token"|"authentication"/);
    }
  });

  it("Should keep a config by the id the client gives it, replace it when created again with that id, and page the list", async () => {
    const task = await submit();
    await client.createTaskPushNotificationConfig(configOf(task.id, "first", { id: "cfg-a" }));
    await client.createTaskPushNotificationConfig(configOf(task.id, "second", { id: "cfg-b" }));
    const replaced = await client.createTaskPushNotificationConfig(configOf(task.id, "third", { id: "cfg-a" }));
    expect(replaced).toMatchObject({ id: "cfg-a", url: `${receiverBase}/third/ok` });
    expect((await configsOf(task.id)).map((c) => [c.id, c.url])).toEqual([
      ["cfg-a", `${receiverBase}/third/ok`],
      ["cfg-b", `${receiverBase}/second/ok`],
    ]);
    const page1 = await client.listTaskPushNotificationConfig({ tenant: "", taskId: task.id, pageSize: 1, pageToken: "" });
    expect(page1.configs.map((c) => c.id)).toEqual(["cfg-a"]);
    expect(page1.nextPageToken).not.toBe("");
    const page2 = await client.listTaskPushNotificationConfig({ tenant: "", taskId: task.id, pageSize: 1, pageToken: page1.nextPageToken });
    expect(page2.configs.map((c) => c.id)).toEqual(["cfg-b"]);
    expect(page2.nextPageToken).toBe("");
  });

  it("Should delete a config, answer a delete of one that is gone as done, and Get it as not found", async () => {
    const task = await submit();
    await client.createTaskPushNotificationConfig(configOf(task.id, "gone", { id: "cfg-gone" }));
    await client.deleteTaskPushNotificationConfig({ tenant: "", taskId: task.id, id: "cfg-gone" });
    await client.deleteTaskPushNotificationConfig({ tenant: "", taskId: task.id, id: "cfg-gone" });
    expect(await configsOf(task.id)).toEqual([]);
    expect(await failure(client.getTaskPushNotificationConfig({ tenant: "", taskId: task.id, id: "cfg-gone" }))).toBeInstanceOf(TaskNotFoundError);
  });

  it("Should keep two tasks' configs of the same id apart", async () => {
    const [a, b] = [await submit("Task A"), await submit("Task B")];
    await client.createTaskPushNotificationConfig(configOf(a.id, "for-a", { id: "cfg-1" }));
    await client.createTaskPushNotificationConfig(configOf(b.id, "for-b", { id: "cfg-1" }));
    expect((await configsOf(a.id)).map((c) => c.url)).toEqual([`${receiverBase}/for-a/ok`]);
    expect((await configsOf(b.id)).map((c) => c.url)).toEqual([`${receiverBase}/for-b/ok`]);
  });

  it("Should answer TaskNotFound, in every method, for another client's task and for an unknown one", async () => {
    const mine = await submit();
    await client.createTaskPushNotificationConfig(configOf(mine.id, "mine", { id: "cfg-mine" }));
    for (const taskId of [mine.id, "a2a-unknown"]) {
      const by = taskId === mine.id ? other : client;
      expect(await failure(by.createTaskPushNotificationConfig(configOf(taskId, "theirs", { id: "cfg-mine" })))).toBeInstanceOf(TaskNotFoundError);
      expect(await failure(by.getTaskPushNotificationConfig({ tenant: "", taskId, id: "cfg-mine" }))).toBeInstanceOf(TaskNotFoundError);
      expect(await failure(by.listTaskPushNotificationConfig({ tenant: "", taskId, pageSize: 0, pageToken: "" }))).toBeInstanceOf(TaskNotFoundError);
      expect(await failure(by.deleteTaskPushNotificationConfig({ tenant: "", taskId, id: "cfg-mine" }))).toBeInstanceOf(TaskNotFoundError);
    }
    expect((await configsOf(mine.id)).map((c) => c.url)).toEqual([`${receiverBase}/mine/ok`]);
  });

  it("Should refuse with -32602, saying why, a URL the outbound rules refuse and a bad id, token or authentication, storing nothing", async () => {
    const task = await submit();
    const refused: [Partial<TaskPushNotificationConfig>, string][] = [
      [{ url: "http://10.0.0.1/hook" }, "OUTBOUND_ALLOWLIST"],
      [{ url: "ftp://example.com/hook" }, "not an http(s) URL"],
      [{ url: "" }, "url is required"],
      [{ id: "a/b" }, "params.id"],
      [{ token: "line\nbreak" }, "params.token"],
      [{ authentication: { scheme: "Bear er", credentials: "x" } }, "authentication.scheme"],
      [{ authentication: { scheme: "Bearer", credentials: "" } }, "authentication.credentials"],
    ];
    for (const [over, why] of refused) {
      const e = await failure(client.createTaskPushNotificationConfig(configOf(task.id, "refused", over)));
      expect(e, JSON.stringify(over)).toBeInstanceOf(RequestMalformedError);
      expect(e.message, JSON.stringify(over)).toContain(why);
    }
    expect(await configsOf(task.id)).toEqual([]);
  });

  it("Should refuse a task's config past MAX_PUSH_CONFIGS_PER_TASK with -32602 LIMIT_EXCEEDED, replacing one still, and count another task's apart", async () => {
    const session = await newSession();
    const token = await mintRole(session, "a2a_client", "push-capped");
    const capped = await connectA2a(token);
    const task = await submit("Capped", capped);
    for (let i = 0; i < MAX_PUSH_CONFIGS_PER_TASK; i++) await capped.createTaskPushNotificationConfig(configOf(task.id, "capped", { id: `cfg-${i}` }));
    const r = await rpc(token, { jsonrpc: "2.0", id: 1, method: "CreateTaskPushNotificationConfig", params: { taskId: task.id, url: `${receiverBase}/capped/ok`, id: "cfg-one-more" } });
    expect(r.body.error).toMatchObject({ code: -32602, data: [expect.objectContaining({ reason: "LIMIT_EXCEEDED", metadata: expect.objectContaining({ limit: String(MAX_PUSH_CONFIGS_PER_TASK), setting: "MAX_PUSH_CONFIGS_PER_TASK" }) })] });
    await capped.createTaskPushNotificationConfig(configOf(task.id, "replaced", { id: "cfg-0" }));
    expect(await configsOf(task.id, capped)).toHaveLength(MAX_PUSH_CONFIGS_PER_TASK);
    // Another task of the session has its own configs: a client giving each task one never runs out.
    const other = await submit("Other", capped);
    await capped.createTaskPushNotificationConfig(configOf(other.id, "other", { id: "cfg-0" }));
    expect(await configsOf(other.id, capped)).toHaveLength(1);
  });

  it("Should refuse a config of a task that has ended with -32004", async () => {
    const task = await submit();
    await client.cancelTask({ tenant: "", id: task.id, metadata: undefined });
    expect(await failure(client.createTaskPushNotificationConfig(configOf(task.id, "ended")))).toBeInstanceOf(UnsupportedOperationError);
  });
});

describe("a config sent with SendMessage", () => {
  it("Should become a config of the new task, one however often the message is retried", async () => {
    const message = send("Report on the regions", {}, { returnImmediately: true, taskPushNotificationConfig: configOf("", "sent", { token: "tok-sent" }) });
    const task = (await client.sendMessage(message)) as Task;
    const again = (await client.sendMessage(message)) as Task;
    expect(again.id).toBe(task.id);
    const configs = await configsOf(task.id);
    expect(configs).toEqual([{ tenant: "", id: expect.stringMatching(/^msg-[0-9a-f]{32}$/), taskId: task.id, url: `${receiverBase}/sent/ok`, token: "", authentication: undefined }]);
  });

  it("Should refuse a SendMessage whose config cannot be taken with -32602, creating no task", async () => {
    const lister = await connectA2a(await mintRole(S, "a2a_client", "push-lister"));
    const e = await failure(lister.sendMessage(send("Never created", {}, { returnImmediately: true, taskPushNotificationConfig: configOf("", "x", { url: "http://192.168.1.1/hook" }) })));
    expect(e).toBeInstanceOf(RequestMalformedError);
    expect(e.message).toContain("configuration.taskPushNotificationConfig.url");
    expect((await lister.listTasks({ tenant: "", contextId: "", status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 10, pageToken: "", historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: false })).tasks).toEqual([]);
  });
});

describe("pushes", () => {
  it("Should push INPUT_REQUIRED while a worker waits, the answer taken, then COMPLETED, with the config's token and Authorization and no stream open", async () => {
    const task = await submit();
    const inbox = uniqueId("push");
    await client.createTaskPushNotificationConfig(configOf(task.id, inbox, { token: "tok-e2e", authentication: { scheme: "Bearer", credentials: "receiver-secret" } }));
    expectOk(await call("PATCH", taskPath(task.id), S.orch, { ops: [{ op: "add_step", step: step("report") }] }));
    const worker = expectOk(await call("POST", `${taskPath(task.id)}/workers`, S.orch, {}), 201);
    expectOk(await call("POST", `${taskPath(task.id)}/steps/report/claim`, worker.token, {}));
    const asked = expectOk(await call("POST", `${taskPath(task.id)}/steps/report/actions`, worker.token, { kind: "input", prompt: "Which quarter?" }), 201);

    // The push reaches the receiver while the worker waits: nobody polls, no stream is open.
    await eventually(async () => expect(await pushedStates(inbox)).toContain("TASK_STATE_INPUT_REQUIRED"), 10_000);
    const streams = await runInDurableObject(taskStub(S.sid, task.id), async (instance) => (instance as unknown as { hub: { stats: { open: number } } }).hub.stats.open);
    expect(streams).toBe(0);
    const inputRequired = (await received(inbox)).map(updateOf).find((u) => u.status!.state === TaskState.TASK_STATE_INPUT_REQUIRED)!;
    expect(inputRequired.status!.message!.metadata).toMatchObject({ actionId: asked.action_id, kind: "input", stepId: "report" });
    expect(inputRequired.status!.message!.parts).toEqual([expect.objectContaining({ content: { $case: "text", value: "Which quarter?" } })]);

    // The client answers the action the push named; the work completes.
    await client.sendMessage(send("Q3", { taskId: task.id, metadata: { actionId: asked.action_id } }, { returnImmediately: true }));
    expectOk(await call("POST", `${taskPath(task.id)}/steps/report/status`, worker.token, { status: "completed", result_summary: "Q3 report" }));
    expectOk(await call("POST", `${taskPath(task.id)}/complete`, S.orch, { reason: "Report delivered" }));
    await eventually(async () => expect((await pushedStates(inbox)).at(-1)).toBe("TASK_STATE_COMPLETED"), 10_000);

    const requests = await received(inbox);
    expect(await pushedStates(inbox)).toEqual(["TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]);
    for (const r of requests) {
      expect(r.method).toBe("POST");
      expect(r.headers).toMatchObject({ "content-type": "application/a2a+json", "x-a2a-notification-token": "tok-e2e", authorization: "Bearer receiver-secret" });
      const update = updateOf(r);
      expect(update.taskId).toBe(task.id);
      expect(update.contextId).toBe(task.contextId);
    }
    // What the pushes said is what GetTask says.
    expect((await client.getTask({ tenant: "", id: task.id, historyLength: undefined })).status!.state).toBe(TaskState.TASK_STATE_COMPLETED);
    // The token and credentials went to the receiver only: not in the WAL, the task, the session's subscriptions or their deliveries.
    const subscriptions = expectOk(await call("GET", `/v1/sessions/${S.sid}/webhooks`, S.orch));
    const config = subscriptions.webhooks.find((w: { task_id: string | null }) => w.task_id === task.id);
    expect(config).toMatchObject({ kind: "a2a_push", webhook_id: expect.stringMatching(new RegExp(`^${task.id}\\.`)), status: "active" });
    const deliveries = await eventually(async () => {
      const page = expectOk(await call("GET", `/v1/sessions/${S.sid}/webhooks/${config.webhook_id}/deliveries`, S.orch));
      expect(page.deliveries.map((d: { status: string }) => d.status)).toEqual(["delivered", "delivered", "delivered", "delivered"]);
      return page;
    }, 10_000);
    for (const text of [(await walText(taskPath(task.id), S.orch)).text, JSON.stringify(expectOk(await call("GET", taskPath(task.id), S.orch))), JSON.stringify(subscriptions), JSON.stringify(deliveries)]) {
      expect(text).not.toContain("receiver-secret");
      expect(text).not.toContain("tok-e2e");
    }
  });

  it("Should push nothing more to a config once it is deleted", async () => {
    const task = await submit();
    const inbox = uniqueId("deleted");
    const created = await client.createTaskPushNotificationConfig(configOf(task.id, inbox));
    const kept = uniqueId("kept");
    await client.createTaskPushNotificationConfig(configOf(task.id, kept));
    await client.deleteTaskPushNotificationConfig({ tenant: "", taskId: task.id, id: created.id });
    await client.cancelTask({ tenant: "", id: task.id, metadata: undefined });
    // The config kept gets the end; the deleted one got nothing, before it or since.
    await eventually(async () => expect(await pushedStates(kept)).toEqual(["TASK_STATE_CANCELED"]), 10_000);
    expect(await received(inbox)).toEqual([]);
  });
});
