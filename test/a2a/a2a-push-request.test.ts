/**
 * @module The A2A push request builder (durable-objects/peers/a2a-push.ts) on its own, over real WALs: every event it
 * pushes says the A2A state GetTask says right after that event, the status message's text too, and the action an
 * INPUT_REQUIRED push is about; pushed later (the task moved on) it never says a task went back nor anything but
 * the end after the end; the body is the SDK's own serialisation of a StreamResponse, and the headers carry the
 * config's token and Authorization value only when it has them.
 */
import { StreamResponse, TaskState } from "@a2a-js/sdk";
import { V1PushNotificationSerializer } from "@a2a-js/sdk/server";
import { beforeAll, describe, expect, it } from "vitest";
import { A2A_PUSH_EVENTS, a2aPushRequest } from "../../durable-objects/peers/a2a-push.js";
import { isTerminalA2a, TASK_STATUS_EVENTS } from "../../durable-objects/peers/a2a-status.js";
import type { DeliveryTarget } from "../../durable-objects/session/session-rpc.js";
import { a2aStateOf, a2aTaskOf, type TaskViewJson } from "../../routes/a2a/a2a-map.js";
import { type DagState, projectEvent, replay, RUNTIME_EVENT_TYPES, type RuntimeEvent, taskGetAnswer, taskGetPage, type WalEvent } from "../../src/core/index.js";
import { call, newSession, step, type TestSession } from "../support/helpers.js";
import { expectOk, walOf } from "../support/support.js";

let S: TestSession;

beforeAll(async () => {
  S = await newSession();
});

const taskPath = (id: string) => `/v1/sessions/${S.sid}/tasks/${id}`;

/** A push config of task `taskId` receiving every pushed event, with a token and an Authorization value. */
function configOf(taskId: string, extra: Partial<DeliveryTarget> = {}): DeliveryTarget {
  return {
    webhook_id: `${taskId}.cfg-1`,
    kind: "a2a_push",
    url: "https://client.example/hook",
    events: [...A2A_PUSH_EVENTS],
    task_id: taskId,
    created_at: "2020-01-01T00:00:00.000Z",
    secret: null,
    token: "tok-123",
    authorization: "Bearer client-secret",
    ...extra,
  };
}

/** A task in the thread `ctx-push`, planned with one step that a worker claims; the worker's token. */
async function startedTask(id: string): Promise<string> {
  expectOk(await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, { task_id: id, wal_name: id, title: `Task ${id}`, summary: "", thread_id: "ctx-push", steps: [step("work")] }), 201);
  const worker = expectOk(await call("POST", `${taskPath(id)}/workers`, S.orch, {}), 201);
  expectOk(await call("POST", `${taskPath(id)}/steps/work/claim`, worker.token, {}));
  return worker.token as string;
}

/**
 * A task through every pushed change: started; a worker asks for input on its step while the orchestrator asks for
 * an approval of the task (two open); each answered in turn; paused and resumed; blocked and reopened; a step
 * failed and retried; completed.
 */
async function windingTask(id: string): Promise<void> {
  const worker = await startedTask(id);
  const asked = expectOk(await call("POST", `${taskPath(id)}/steps/work/actions`, worker, { kind: "input", prompt: "Which region?", input_schema: { type: "object" } }), 201);
  const approval = expectOk(await call("POST", `${taskPath(id)}/actions`, S.orch, { kind: "approval", prompt: "Publish when done?" }), 201);
  expectOk(await call("POST", `${taskPath(id)}/actions/${asked.action_id}/respond`, S.orch, { decision: "submitted", input: { region: "EMEA" } }));
  expectOk(await call("POST", `${taskPath(id)}/pause`, S.orch, { reason: "budget review" }));
  expectOk(await call("POST", `${taskPath(id)}/resume`, S.orch, { reason: "approved" }));
  expectOk(await call("POST", `${taskPath(id)}/actions/${approval.action_id}/respond`, S.orch, { decision: "approved" }));
  expectOk(await call("POST", `${taskPath(id)}/steps/work/status`, worker, { status: "failed", reason: "source down" }));
  expectOk(await call("PATCH", taskPath(id), S.orch, { ops: [{ op: "reopen_step", step_id: "work", reason: "source back" }] }));
  const again = expectOk(await call("POST", `${taskPath(id)}/workers`, S.orch, {}), 201);
  expectOk(await call("POST", `${taskPath(id)}/steps/work/claim`, again.token, {}));
  expectOk(await call("POST", `${taskPath(id)}/block`, S.orch, { reason: "legal check" }));
  expectOk(await call("POST", `${taskPath(id)}/reopen`, S.orch, { reason: "legal check passed" }));
  expectOk(await call("POST", `${taskPath(id)}/steps/work/status`, again.token, { status: "completed", result_summary: "EMEA report" }));
  expectOk(await call("POST", `${taskPath(id)}/complete`, S.orch, { reason: "Report delivered" }));
}

/** The task view GET .../tasks/{tid} answers after the first `n` WAL events. */
function viewAt(wal: WalEvent[], n: number): TaskViewJson {
  const state = replay(wal.slice(0, n));
  const page = taskGetPage(state, {});
  if (!page.ok) throw new Error(page.error.message);
  return JSON.parse(JSON.stringify(taskGetAnswer(state, page.value))) as TaskViewJson;
}

/** A pushed body as the receiver reads it back with the SDK. */
function pushedUpdate(body: string) {
  const decoded = StreamResponse.fromJSON(JSON.parse(body));
  expect(decoded.payload?.$case).toBe("statusUpdate");
  return (decoded.payload as { value: import("@a2a-js/sdk").TaskStatusUpdateEvent }).value;
}

/** Every runtime event of a WAL with the WAL index it came from (1-based: the state after it is replay of the first `n`). */
function eventsOf(wal: WalEvent[]): { n: number; event: RuntimeEvent }[] {
  return wal.flatMap((e, i) => projectEvent(e).map((event) => ({ n: i + 1, event })));
}

const textOf = (message: { parts: unknown[] } | undefined) => JSON.stringify(message?.parts ?? []);

describe("the events a push config receives", () => {
  it("Should be runtime event types, and include every task status change and the actions asked and answered", () => {
    for (const type of A2A_PUSH_EVENTS) expect(RUNTIME_EVENT_TYPES).toContain(type);
    for (const type of Object.keys(TASK_STATUS_EVENTS)) expect(A2A_PUSH_EVENTS).toContain(type);
    expect(A2A_PUSH_EVENTS).toEqual(expect.arrayContaining(["action.required", "action.resolved", "task.completed", "task.failed", "task.cancelled"]));
  });
});

describe("a push sent at once", () => {
  it("Should say, after each event it pushes, the state and status text GetTask says then, and INPUT_REQUIRED about the action just asked", async () => {
    const id = "push-winding";
    await windingTask(id);
    const wal = await walOf(taskPath(id), S.orch);
    const target = configOf(id);
    const pushed: string[] = [];
    for (const { n, event } of eventsOf(wal)) {
      const request = a2aPushRequest(target, event, replay(wal.slice(0, n)));
      const where = `${event.type} at WAL ${n}${event.stepId === undefined ? "" : ` (step ${event.stepId})`}`;
      if (!A2A_PUSH_EVENTS.includes(event.type as (typeof A2A_PUSH_EVENTS)[number])) {
        expect(request, where).toBeNull();
        continue;
      }
      expect(request, where).not.toBeNull();
      const update = pushedUpdate(request!.body);
      const view = viewAt(wal, n);
      const truth = a2aTaskOf(view);
      const expected = a2aStateOf(view) === TaskState.TASK_STATE_SUBMITTED ? TaskState.TASK_STATE_WORKING : a2aStateOf(view);
      expect(TaskState[update.status!.state], where).toBe(TaskState[expected]);
      expect(update.taskId, where).toBe(id);
      expect(update.contextId, where).toBe("ctx-push");
      expect(update.metadata, where).toEqual({ eventId: event.eventId, eventType: event.type });
      if (event.type === "action.required") {
        expect(update.status!.message!.metadata, where).toMatchObject({ actionId: event.actionId });
        expect(textOf(update.status!.message), where).toBe(JSON.stringify([{ content: { $case: "text", value: event.payload.prompt }, metadata: undefined, filename: "", mediaType: "text/plain" }]));
      } else {
        expect(textOf(update.status!.message), where).toBe(textOf(truth.status!.message));
      }
      pushed.push(`${event.type}:${TaskState[update.status!.state]}`);
    }
    expect(pushed).toEqual([
      "task.started:TASK_STATE_WORKING",
      "action.required:TASK_STATE_INPUT_REQUIRED",
      "action.required:TASK_STATE_INPUT_REQUIRED",
      // The input answered, the approval still open: INPUT_REQUIRED about the approval.
      "action.resolved:TASK_STATE_INPUT_REQUIRED",
      "task.paused:TASK_STATE_INPUT_REQUIRED",
      "task.resumed:TASK_STATE_INPUT_REQUIRED",
      "task.started:TASK_STATE_INPUT_REQUIRED",
      "action.resolved:TASK_STATE_WORKING",
      "task.blocked:TASK_STATE_WORKING",
      "task.resumed:TASK_STATE_WORKING",
      "task.started:TASK_STATE_WORKING",
      "task.completed:TASK_STATE_COMPLETED",
    ]);
  });
});

describe("a push sent later", () => {
  it("Should say the action asked and the end as at once, and for the other events no action answered since, never SUBMITTED", async () => {
    const id = "push-later";
    await windingTask(id);
    const wal = await walOf(taskPath(id), S.orch);
    const target = configOf(id);
    const now: DagState = replay(wal);
    for (const { n, event } of eventsOf(wal)) {
      const atOnce = a2aPushRequest(target, event, replay(wal.slice(0, n)));
      const later = a2aPushRequest(target, event, now);
      const where = `${event.type} at ${n}`;
      expect(later === null, where).toBe(atOnce === null);
      if (later === null) continue;
      const update = pushedUpdate(later.body);
      if (event.type === "action.required" || isTerminalA2a(update.status!.state)) expect(later, where).toEqual(atOnce);
      // Every action is answered by now: what was INPUT_REQUIRED at once is WORKING, and says no answered question.
      else expect(TaskState[update.status!.state], where).toBe("TASK_STATE_WORKING");
    }
  });

  it("Should push the actions a cancel withdraws as the cancel: CANCELED is all a receiver gets from the end on", async () => {
    const id = "push-cancelled";
    const worker = await startedTask(id);
    expectOk(await call("POST", `${taskPath(id)}/steps/work/actions`, worker, { kind: "approval", prompt: "Go on?" }), 201);
    expectOk(await call("POST", `${taskPath(id)}/cancel`, S.orch, { reason: "no longer needed" }));
    const wal = await walOf(taskPath(id), S.orch);
    const target = configOf(id);
    for (const state of [replay(wal), undefined]) {
      const pushed = eventsOf(wal)
        .map(({ n, event }) => ({ event, request: a2aPushRequest(target, event, state ?? replay(wal.slice(0, n))) }))
        .filter((p) => p.request !== null)
        .map((p) => `${p.event.type}${p.event.type === "action.resolved" ? `(${String(p.event.payload.decision)})` : ""}:${TaskState[pushedUpdate(p.request!.body).status!.state]}`);
      expect(pushed.slice(-2)).toEqual(["task.cancelled:TASK_STATE_CANCELED", "action.resolved(withdrawn):TASK_STATE_CANCELED"]);
      expect(pushed.slice(0, -2).every((p) => !p.endsWith("CANCELED"))).toBe(true);
    }
  });

  it("Should push a step's own blocked status as the task's status after it, which it does not change", async () => {
    const id = "push-step-blocked";
    const worker = await startedTask(id);
    expectOk(await call("POST", `${taskPath(id)}/steps/work/status`, worker, { status: "blocked", reason: "waiting for a file" }));
    const wal = await walOf(taskPath(id), S.orch);
    const { n, event } = eventsOf(wal).find(({ event }) => event.type === "task.blocked")!;
    expect(event.stepId).toBe("work");
    const update = pushedUpdate(a2aPushRequest(configOf(id), event, replay(wal.slice(0, n)))!.body);
    expect(TaskState[update.status!.state]).toBe(TaskState[a2aStateOf(viewAt(wal, n))]);
    expect(update.status!.message).toBeUndefined();
  });

  it("Should say why a task failed, as GetTask does", async () => {
    const id = "push-failed";
    await startedTask(id);
    expectOk(await call("POST", `${taskPath(id)}/fail`, S.orch, { reason: "the source is gone for good" }));
    const wal = await walOf(taskPath(id), S.orch);
    const failed = eventsOf(wal).find(({ event }) => event.type === "task.failed" && event.stepId === undefined)!;
    const update = pushedUpdate(a2aPushRequest(configOf(id), failed.event, replay(wal))!.body);
    expect(update.status!.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(textOf(update.status!.message)).toBe(textOf(a2aTaskOf(viewAt(wal, wal.length)).status!.message));
  });
});

describe("the request", () => {
  let wal: WalEvent[];
  let completed: RuntimeEvent;
  beforeAll(async () => {
    const worker = await startedTask("push-request");
    expectOk(await call("POST", `${taskPath("push-request")}/steps/work/status`, worker, { status: "completed", result_summary: "done" }));
    expectOk(await call("POST", `${taskPath("push-request")}/complete`, S.orch, { reason: "Done" }));
    wal = await walOf(taskPath("push-request"), S.orch);
    completed = eventsOf(wal).find(({ event }) => event.type === "task.completed")!.event;
  });

  it("Should be the SDK push sender's body and content type, with the token and Authorization headers of the config", () => {
    const request = a2aPushRequest(configOf("push-request"), completed, replay(wal))!;
    const update = pushedUpdate(request.body);
    const expected = new V1PushNotificationSerializer().serialize({ payload: { $case: "statusUpdate", value: update } });
    expect(request.body).toBe(expected.body);
    expect(request.headers).toEqual({ "Content-Type": "application/a2a+json", "X-A2A-Notification-Token": "tok-123", Authorization: "Bearer client-secret" });
    expect(JSON.parse(request.body)).toEqual({ statusUpdate: { taskId: "push-request", contextId: "ctx-push", status: { state: "TASK_STATE_COMPLETED", timestamp: completed.timestamp }, metadata: { eventId: completed.eventId, eventType: "task.completed" } } });
  });

  it("Should leave out the token and Authorization headers a config does not have", () => {
    const request = a2aPushRequest(configOf("push-request", { token: null, authorization: null }), completed, replay(wal))!;
    expect(request.headers).toEqual({ "Content-Type": "application/a2a+json" });
  });

  it("Should be null for a webhook, another task's config, and an event type the config does not receive or no config does", () => {
    const state = replay(wal);
    const created = eventsOf(wal).find(({ event }) => event.type === "task.created")!.event;
    expect(a2aPushRequest(configOf("push-request", { events: ["task.created"] }), created, state)).toBeNull();
    expect(a2aPushRequest(configOf("push-request", { kind: "webhook", task_id: null, secret: "whsec_x", token: null, authorization: null }), completed, state)).toBeNull();
    expect(a2aPushRequest(configOf("another-task"), completed, state)).toBeNull();
    expect(a2aPushRequest(configOf("push-request", { events: ["action.required"] }), completed, state)).toBeNull();
  });
});
