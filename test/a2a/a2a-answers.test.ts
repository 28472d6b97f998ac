/**
 * @module Answering INPUT_REQUIRED over A2A (docs/protocols/a2a.md, "Answering INPUT_REQUIRED") with the official
 * @a2a-js/sdk client: the status message names the open action in metadata.actionId (GetTask, streams, SendMessage
 * answers), a message answers exactly the action it names, an action no longer open is refused, a message naming
 * none never answers one the client was not shown, and a retry with the same messageId is answered as the first.
 */
import { type Message, type StreamResponse, type Task, TaskState } from "@a2a-js/sdk";
import type { Client } from "@a2a-js/sdk/client";
import { RequestMalformedError, UnsupportedOperationError } from "@a2a-js/sdk/errors";
import { beforeAll, describe, expect, it } from "vitest";
import { connectA2a, data, send, failure } from "../support/a2a-clients.js";
import { call, newSession, step, type TestSession } from "../support/helpers.js";
import { eventually, expectOk, mintRole, walOf } from "../support/support.js";

const ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo";

let S: TestSession;
let client: Client;

beforeAll(async () => {
  S = await newSession();
  client = await connectA2a(await mintRole(S, "a2a_client", "answering-agent"));
});

const taskPath = (id: string) => `/v1/sessions/${S.sid}/tasks/${id}`;

/** A task the client submitted and the orchestrator planned with one step (WORKING, nothing asked yet). */
async function planned(): Promise<Task> {
  const task = (await client.sendMessage(send("Prepare the board pack", {}, { returnImmediately: true }))) as Task;
  expectOk(await call("PATCH", taskPath(task.id), S.orch, { ops: [{ op: "add_step", step: step("a") }] }));
  return task;
}

/** The orchestrator asks the client something on the task; the action's id. */
async function ask(taskId: string, kind: "input" | "approval", prompt: string): Promise<string> {
  return expectOk(await call("POST", `${taskPath(taskId)}/actions`, S.orch, { kind, prompt }), 201).action_id as string;
}

/** An action as the orchestrator reads it. */
async function actionOf(taskId: string, actionId: string): Promise<any> {
  return expectOk(await call("GET", `${taskPath(taskId)}/actions/${actionId}`, S.orch)).action;
}

/** A message on the task naming `actionId` (none when undefined), with this messageId. */
function answer(task: Task, parts: Parameters<typeof send>[0], actionId: string | undefined, messageId: string = crypto.randomUUID()) {
  return send(parts, { taskId: task.id, messageId, ...(actionId === undefined ? {} : { metadata: { actionId } }) }, { returnImmediately: true });
}

/** The action id a status message names. */
const namedIn = (message: Message | undefined): unknown => message?.metadata?.actionId;

/** Asserts an SDK error is -32004 with reason ACTION_NOT_OPEN. */
function expectNotOpen(e: any): void {
  expect(e).toBeInstanceOf(UnsupportedOperationError);
  expect(e.envelopeCode).toBe(-32004);
  expect(e.data).toEqual([expect.objectContaining({ "@type": ERROR_INFO, reason: "ACTION_NOT_OPEN" })]);
}

describe("the status message names the open action, and a message answers the action it names", () => {
  it("Should name the oldest open action in GetTask's status message and answer the second by its id (from the history), leaving the first open", async () => {
    const task = await planned();
    const first = await ask(task.id, "input", "Which region first?");
    const second = await ask(task.id, "approval", "May I email the board?");
    const seen = await client.getTask({ tenant: "", id: task.id });
    expect(seen.status!.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(namedIn(seen.status!.message)).toBe(first);
    // Every open action is in the history with its id, so each can be answered by name.
    expect(seen.history.map(namedIn)).toEqual(expect.arrayContaining([first, second]));
    const r = (await client.sendMessage(answer(task, "yes", second))) as Task;
    expect((await actionOf(task.id, second)).decision).toBe("approved");
    expect((await actionOf(task.id, first)).status).toBe("open");
    // SendMessage's answer is the task as it is now: still INPUT_REQUIRED, on the first action.
    expect(r.status!.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(namedIn(r.status!.message)).toBe(first);
  });

  it("Should name the open action in a stream's status updates, refuse a stale answer to one closed meanwhile, and answer the one now shown by its id", async () => {
    const task = await planned();
    const stream = client.resubscribeTask({ tenant: "", id: task.id })[Symbol.asyncIterator]();
    /** The next status update of the stream in `state`. */
    const next = async (state: TaskState): Promise<Message | undefined> => {
      for (let e = await stream.next(); !e.done; e = await stream.next()) {
        const p = (e.value as StreamResponse).payload;
        if (p?.$case === "statusUpdate" && p.value.status!.state === state) return p.value.status!.message;
      }
      throw new Error(`the stream ended before ${TaskState[state]}`);
    };
    await stream.next(); // the Task
    const first = await ask(task.id, "input", "Which region first?");
    expect(namedIn(await next(TaskState.TASK_STATE_INPUT_REQUIRED))).toBe(first);
    // Someone else answers it, and the task asks something new.
    expectOk(await call("POST", `${taskPath(task.id)}/actions/${first}/respond`, S.orch, { decision: "submitted", input: { region: "APAC" } }));
    const second = await ask(task.id, "approval", "Wire 1M to account 42?");
    expect(namedIn(await next(TaskState.TASK_STATE_INPUT_REQUIRED))).toBe(second);
    // The client's answer to the first question reaches nothing else.
    expectNotOpen(await failure(client.sendMessage(answer(task, "yes", first))));
    expect((await actionOf(task.id, second)).status).toBe("open");
    expect((await actionOf(task.id, first)).input).toEqual({ region: "APAC" });
    await client.sendMessage(answer(task, "no", second));
    expect((await actionOf(task.id, second)).decision).toBe("rejected");
    expect(await next(TaskState.TASK_STATE_WORKING)).toBeUndefined();
    await client.cancelTask({ tenant: "", id: task.id, metadata: undefined });
    await stream.return?.(undefined);
  });

  it("Should refuse naming an answered action, an expired one, an unknown one or another task's with -32004 (ACTION_NOT_OPEN), answering nothing", async () => {
    const task = await planned();
    const answered = await ask(task.id, "input", "Which region first?");
    await client.sendMessage(answer(task, "EMEA", answered));
    const expiring = expectOk(await call("POST", `${taskPath(task.id)}/actions`, S.orch, { kind: "approval", prompt: "Approve within a second?", timeout_ms: 1_000 }), 201).action_id as string;
    const open = await ask(task.id, "approval", "May I email the board?");
    const elsewhere = await planned();
    const theirs = await ask(elsewhere.id, "approval", "May I email the auditors?");
    await eventually(async () => expect((await actionOf(task.id, expiring)).decision).toBe("expired"));
    for (const named of [answered, expiring, "act-nobody-asked", theirs]) {
      const e = await failure(client.sendMessage(answer(task, "yes", named)));
      expectNotOpen(e);
      expect(e.message).toContain("is not open");
    }
    expect((await actionOf(task.id, open)).status).toBe("open");
    expect((await actionOf(elsewhere.id, theirs)).status).toBe("open");
    expect((await actionOf(task.id, answered)).input).toEqual({ text: "EMEA" });
  });

  it("Should refuse a message naming no action while several are open with -32602 (ACTION_ID_REQUIRED) listing them, answering none", async () => {
    const task = await planned();
    const first = await ask(task.id, "approval", "May I email the board?");
    const second = await ask(task.id, "approval", "Wire 1M to account 42?");
    const e = await failure(client.sendMessage(answer(task, "yes", undefined)));
    expect(e).toBeInstanceOf(RequestMalformedError);
    expect(e.data).toEqual([expect.objectContaining({ reason: "ACTION_ID_REQUIRED", metadata: expect.objectContaining({ openActionIds: `${first},${second}` }) })]);
    expect((await actionOf(task.id, first)).status).toBe("open");
    expect((await actionOf(task.id, second)).status).toBe("open");
  });

  it("Should refuse an actionId that is not a string with -32602", async () => {
    const task = await planned();
    const open = await ask(task.id, "approval", "May I email the board?");
    const e = await failure(client.sendMessage(send("yes", { taskId: task.id, metadata: { actionId: 42 } }, { returnImmediately: true })));
    expect(e).toBeInstanceOf(RequestMalformedError);
    expect((await actionOf(task.id, open)).status).toBe("open");
  });
});

describe("a retry with the same messageId is answered as the first was", () => {
  it("Should answer a retry of a message naming no action with the task, not -32004, and never answer the action asked after it", async () => {
    const task = await planned();
    const first = await ask(task.id, "input", "Which region first?");
    const message = answer(task, [data({ region: "EMEA" })], undefined);
    const r1 = (await client.sendMessage(message)) as Task;
    const r2 = (await client.sendMessage(message)) as Task;
    expect(r2.id).toBe(r1.id);
    expect(r2.status!.state).toBe(r1.status!.state);
    const later = await ask(task.id, "input", "And which currency?");
    const r3 = (await client.sendMessage(message)) as Task;
    expect(r3.id).toBe(task.id);
    expect(namedIn(r3.status!.message)).toBe(later);
    expect((await actionOf(task.id, later)).status).toBe("open");
    // With several open now, the retry is still answered as the first was, not refused.
    const third = await ask(task.id, "approval", "May I email the board?");
    expect(((await client.sendMessage(message)) as Task).id).toBe(task.id);
    expect((await actionOf(task.id, third)).status).toBe("open");
    expect((await actionOf(task.id, first)).input).toEqual({ region: "EMEA" });
    const resolved = expectOk(await call("GET", `${taskPath(task.id)}/actions?status=resolved`, S.orch)).actions;
    expect(resolved.map((a: { action_id: string }) => a.action_id)).toEqual([first]);
  });

  it("Should answer a retry of a message naming an action with the task, the other open action left alone", async () => {
    const task = await planned();
    const first = await ask(task.id, "approval", "May I email the board?");
    const second = await ask(task.id, "approval", "Wire 1M to account 42?");
    const message = answer(task, "yes", first);
    await client.sendMessage(message);
    const again = (await client.sendMessage(message)) as Task;
    expect(again.status!.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(namedIn(again.status!.message)).toBe(second);
    expect((await actionOf(task.id, first)).decision).toBe("approved");
    expect((await actionOf(task.id, second)).status).toBe("open");
  });

  it("Should answer the same message sent twice at once once: both get the task, the action is answered once", async () => {
    const task = await planned();
    const first = await ask(task.id, "input", "Which region first?");
    const message = answer(task, "EMEA", first);
    const [a, b] = await Promise.all([client.sendMessage(message), client.sendMessage(message)]);
    expect((a as Task).id).toBe(task.id);
    expect((b as Task).id).toBe(task.id);
    expect((await walOf(taskPath(task.id), S.orch)).filter((e) => e.event_type === "action_resolved")).toHaveLength(1);
  });

  it("Should refuse the same messageId with other content with -32602 (MESSAGE_ID_REUSED), answering nothing more", async () => {
    const task = await planned();
    const first = await ask(task.id, "approval", "May I email the board?");
    const second = await ask(task.id, "approval", "Wire 1M to account 42?");
    const messageId = crypto.randomUUID();
    await client.sendMessage(answer(task, "yes", first, messageId));
    const e = await failure(client.sendMessage(answer(task, "yes", second, messageId)));
    expect(e).toBeInstanceOf(RequestMalformedError);
    expect(e.data).toEqual([expect.objectContaining({ reason: "MESSAGE_ID_REUSED" })]);
    expect((await actionOf(task.id, second)).status).toBe("open");
  });

  it("Should give a retry another client sends with the same messageId nothing of this client's answer", async () => {
    const task = await planned();
    const first = await ask(task.id, "input", "Which region first?");
    const message = answer(task, "EMEA", first);
    await client.sendMessage(message);
    const stranger = await connectA2a(await mintRole(S, "a2a_client", "another-agent"));
    await failure(stranger.sendMessage(message));
    expect((await client.sendMessage(message) as Task).id).toBe(task.id);
  });
});
