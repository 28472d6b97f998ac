/**
 * @module The A2A status of one of our tasks, pure (docs/protocols/a2a.md "States"): which A2A state a native
 * status and its open actions mean, and the status message that says why. One rule for every place a client learns
 * a task's status: GetTask and ListTasks (routes/a2a/a2a-map.ts, from the task's view), streams
 * (routes/a2a/a2a-stream-map.ts, from runtime events) and push notifications (a2a-push.ts, from one event).
 * In the SDK's in-memory shapes (numeric enums, `$case` oneofs).
 */
import { type Message, type Part, Role, TaskState } from "@a2a-js/sdk";

/** States after which a task never changes (spec §4.1.3). */
export const TERMINAL_A2A_STATES: ReadonlySet<TaskState> = new Set([TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED]);

/** True for a terminal A2A state. */
export function isTerminalA2a(state: TaskState): boolean {
  return TERMINAL_A2A_STATES.has(state);
}

/**
 * The A2A state of a task from its native status and whether an action of it (the task's or a step's) is open:
 * terminal statuses map one to one; a live task a person is asked something on is INPUT_REQUIRED; pending (not
 * planned or not started) is SUBMITTED; running, blocked and paused are WORKING (blocked and paused say why in the
 * status message).
 */
export function a2aStateFor(native: string, actionOpen: boolean): TaskState {
  switch (native) {
    case "completed":
      return TaskState.TASK_STATE_COMPLETED;
    case "failed":
      return TaskState.TASK_STATE_FAILED;
    case "cancelled":
      return TaskState.TASK_STATE_CANCELED;
    default:
      if (actionOpen) return TaskState.TASK_STATE_INPUT_REQUIRED;
      return native === "pending" ? TaskState.TASK_STATE_SUBMITTED : TaskState.TASK_STATE_WORKING;
  }
}

/** Task-level status events and the native status they leave (step-level events of these types carry a stepId). */
export const TASK_STATUS_EVENTS: Readonly<Record<string, string>> = {
  "task.started": "running",
  "task.blocked": "blocked",
  "task.paused": "paused",
  "task.resumed": "pending",
  "task.completed": "completed",
  "task.failed": "failed",
  "task.cancelled": "cancelled",
};

/** A text part. */
export function textPart(text: string): Part {
  return { content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "text/plain" };
}

/** A data part (any JSON value). */
export function dataPart(data: unknown): Part {
  return { content: { $case: "data", value: data }, metadata: undefined, filename: "", mediaType: "application/json" };
}

/** The A2A ids of one of our tasks: its task id and its thread id as the contextId ("" when it has none). */
export interface A2aTaskIds {
  readonly taskId: string;
  readonly contextId: string;
}

/** A message from the agent (the runtime) on a task. */
export function agentMessage(ids: A2aTaskIds, messageId: string, parts: Part[], metadata?: Record<string, unknown>): Message {
  return { messageId, contextId: ids.contextId, taskId: ids.taskId, role: Role.ROLE_AGENT, parts, metadata, extensions: [], referenceTaskIds: [] };
}

/** An open action as an INPUT_REQUIRED status message shows it. */
export interface StatusAction {
  readonly action_id: string;
  readonly kind: string;
  readonly prompt: string;
  readonly step_id: string | null;
  readonly input_schema?: unknown;
}

/** What a task's status message is made of, wherever its status is known from. */
export interface StatusFacts {
  /** The task's native status and its reason. */
  readonly native: string;
  readonly reason: string | null;
  /** The id of the message saying why the task is blocked or paused. */
  readonly noteId: string;
  /** The oldest open action (undefined: none). */
  readonly action: StatusAction | undefined;
}

/** The INPUT_REQUIRED status message of an open action: its prompt, its id and kind (and step, input schema) as metadata. */
export function actionMessage(ids: A2aTaskIds, action: StatusAction): Message {
  const metadata = {
    actionId: action.action_id,
    kind: action.kind,
    ...(action.step_id === null ? {} : { stepId: action.step_id }),
    ...(action.input_schema === null || action.input_schema === undefined ? {} : { inputSchema: action.input_schema }),
  };
  return agentMessage(ids, `${ids.taskId}-action-${action.action_id}`, [textPart(action.prompt)], metadata);
}

/** The status message of a task in `state`: the oldest open action's prompt, or why a live task is blocked or paused, or why it failed. */
export function a2aStatusMessage(ids: A2aTaskIds, state: TaskState, facts: StatusFacts): Message | undefined {
  if (state === TaskState.TASK_STATE_INPUT_REQUIRED && facts.action !== undefined) return actionMessage(ids, facts.action);
  if (facts.native === "blocked" || facts.native === "paused") {
    return agentMessage(ids, facts.noteId, [textPart(`${facts.native}${facts.reason === null ? "" : `: ${facts.reason}`}`)]);
  }
  if (state === TaskState.TASK_STATE_FAILED && facts.reason !== null) return agentMessage(ids, `${ids.taskId}-failed`, [textPart(facts.reason)]);
  return undefined;
}
