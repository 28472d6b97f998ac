/**
 * @module A2A push notifications (A2A v1.0 §4.3.3), pure: the HTTP request a task's runtime event means to one of its
 * push notification configs. The body is a `StreamResponse` holding the `statusUpdate` the event means, serialised
 * as `@a2a-js/sdk`'s own push sender does (V1PushNotificationSerializer: ProtoJSON, `application/a2a+json`); its
 * state and message follow the rule GetTask and the streams follow (a2a-status.ts). The task object's outbox
 * sends it, retried, to the config's URL.
 *
 * Each event is pushed on its own, perhaps later than it happened and perhaps more than once, so the update is
 * what that event made the task's status: from the event where it says it (an action asked, the task's own status
 * change, an action withdrawn as the task ended), and from the task's actions open at that event (asked before it
 * and not answered since) for whether it is INPUT_REQUIRED. A push never says a task went back to SUBMITTED, and
 * what follows the end in the WAL is pushed as the end (a config's deliveries go in WAL order).
 */
import { type Message, type StreamResponse, TaskState } from "@a2a-js/sdk";
import { V1PushNotificationSerializer } from "@a2a-js/sdk/server";
import { type DagState, isTerminalTask, type RuntimeEvent, sequencePosition } from "../../src/core/index.js";
import type { DeliveryTarget } from "../session/session-rpc.js";
import { a2aStateFor, a2aStatusMessage, actionMessage, type A2aTaskIds, type StatusAction, TASK_STATUS_EVENTS } from "./a2a-status.js";

/**
 * The runtime events an A2A push config receives: every one that can change the task's A2A state (started,
 * blocked or paused and resumed: WORKING; an action asked: INPUT_REQUIRED, answered: WORKING or the next one; the
 * three ends). A step's own events of these types (a step blocked, a step out of retries) are pushed too, as the
 * task's status after them: the outbox queues a config's deliveries by type.
 */
export const A2A_PUSH_EVENTS = [
  "task.started",
  "task.blocked",
  "task.paused",
  "task.resumed",
  "action.required",
  "action.resolved",
  "task.completed",
  "task.failed",
  "task.cancelled",
] as const satisfies readonly RuntimeEvent["type"][];

const PUSHED: ReadonlySet<string> = new Set(A2A_PUSH_EVENTS);

/** The header carrying a push config's `token` (the SDK's push sender's name for it). */
export const A2A_NOTIFICATION_TOKEN_HEADER = "X-A2A-Notification-Token";

const serializer = new V1PushNotificationSerializer();

/** The task's oldest action open at WAL event `walSeq` that is still open now, other than `except`. */
function openAt(state: DagState, walSeq: number, except: string | undefined): StatusAction | undefined {
  for (const id of state.index.openActions) {
    if (id === except) continue;
    const askedAt = state.actionRequests.get(id);
    // Asked after the event: its own action.required push says it.
    if (askedAt !== undefined && askedAt > walSeq) continue;
    const action = state.actions.get(id);
    if (action !== undefined) return action;
  }
  return undefined;
}

/**
 * The task's native status right after `event`, as far as the event tells it: a task status event's own; the end
 * the task came to for an action withdrawn as it ended (in the commit that ended it); else live (a step's own
 * status, an action answered: the task works on).
 */
function nativeAfter(event: RuntimeEvent, task: NonNullable<DagState["task"]>): string {
  if (event.stepId === undefined && Object.hasOwn(TASK_STATUS_EVENTS, event.type)) return TASK_STATUS_EVENTS[event.type]!;
  if (event.type === "action.resolved" && event.payload.decision === "withdrawn" && isTerminalTask(task) && event.timestamp === task.ended_at) return task.status;
  return "running";
}

/** The status update of the task right after one event it pushes. */
function statusUpdateOf(event: RuntimeEvent, task: NonNullable<DagState["task"]>, state: DagState): StreamResponse {
  const ids: A2aTaskIds = { taskId: task.task_id, contextId: task.thread_id ?? "" };
  // The event's id and type as metadata: a receiver given the same update twice (a retried push) can tell.
  const update = (a2aState: TaskState, message: Message | undefined): StreamResponse => ({
    payload: { $case: "statusUpdate", value: { ...ids, status: { state: a2aState, message, timestamp: event.timestamp }, metadata: { eventId: event.eventId, eventType: event.type } } },
  });
  if (event.type === "action.required" && event.actionId !== undefined) {
    const p = event.payload;
    const asked: StatusAction = { action_id: event.actionId, kind: String(p.kind ?? ""), prompt: String(p.prompt ?? ""), step_id: event.stepId ?? null, input_schema: p.inputSchema };
    return update(TaskState.TASK_STATE_INPUT_REQUIRED, actionMessage(ids, asked));
  }
  const native = nativeAfter(event, task);
  const open = openAt(state, sequencePosition(event.sequence).walSeq, event.actionId);
  let a2aState = a2aStateFor(native, open !== undefined);
  // A task resumed while still pending: its clients saw it leave SUBMITTED (paused), so it works on.
  if (a2aState === TaskState.TASK_STATE_SUBMITTED) a2aState = TaskState.TASK_STATE_WORKING;
  const facts = { native, reason: event.stepId === undefined ? (event.statusReason ?? null) : null, noteId: `${ids.taskId}-${native}-${event.sequence}`, action: open };
  return update(a2aState, a2aStatusMessage(ids, a2aState, facts));
}

/**
 * The request pushing `event` to an A2A push config (`target`, kind a2a_push, of the event's task, receiving the
 * event's type): the StreamResponse body and its headers (Content-Type; `X-A2A-Notification-Token` when the config
 * has a token; `Authorization` from its authentication). Null when the target is not such a config: every event
 * a config receives has a request, so every delivery queued for it is a POST.
 */
export function a2aPushRequest(target: DeliveryTarget, event: RuntimeEvent, state: DagState): { headers: Record<string, string>; body: string } | null {
  const task = state.task;
  if (target.kind !== "a2a_push" || task === null || target.task_id !== event.taskId || task.task_id !== event.taskId || !target.events.includes(event.type) || !PUSHED.has(event.type)) return null;
  const { body, contentType } = serializer.serialize(statusUpdateOf(event, task, state));
  const headers: Record<string, string> = { "Content-Type": contentType };
  if (target.token !== null && target.token !== "") headers[A2A_NOTIFICATION_TOKEN_HEADER] = target.token;
  if (target.authorization !== null && target.authorization !== "") headers.Authorization = target.authorization;
  return { headers, body };
}
