/**
 * @module A2A stream mapping, pure: a stream's state at its Task snapshot, advanced by each
 * runtime event read from the task's WAL into the status and artifact updates the client receives, never going
 * back in state. The snapshot itself is routes/a2a/a2a-map.ts's mapping of the task view.
 */
import { type Artifact, type Message, type Task, TaskState } from "@a2a-js/sdk";
import { a2aStateFor, a2aStatusMessage, agentMessage, isTerminalA2a, type StatusAction, TASK_STATUS_EVENTS, textPart } from "../../durable-objects/peers/a2a-status.js";
import { openActions, stepArtifact, type TaskViewJson } from "./a2a-map.js";

type StreamResponse = import("@a2a-js/sdk").StreamResponse;

/** A step as a stream keeps it: its name and the results its artifact would carry. */
interface StreamStep {
  title: string;
  result_summary: string | null;
  artifact_ids: string[];
}

/**
 * What a task stream knows of its task between runtime events: enough to say, after each
 * event, the A2A state, status message and artifacts GetTask would answer, without reading the task again.
 * Built from the Task snapshot's view, advanced by `a2aUpdatesOf` (which updates it in place; no I/O).
 */
export interface A2aStreamState {
  readonly taskId: string;
  readonly contextId: string;
  /** The task's native status, its reason, and the id of the message saying why it is blocked or paused. */
  native: string;
  reason: string | null;
  noteId: string;
  /** Open actions, oldest first (what an INPUT_REQUIRED status message says). */
  readonly actions: StatusAction[];
  readonly steps: Map<string, StreamStep>;
  /** The last A2A state the stream sent and the status it said (state and message id). */
  sent: TaskState;
  sentKey: string;
}

/** A stream's state at the snapshot it opened with (`sent` is the Task the client saw first). */
export function a2aStreamStateOf(view: TaskViewJson, sent: Task): A2aStreamState {
  const steps = new Map<string, StreamStep>();
  for (const s of view.steps) steps.set(s.step_id, { title: s.title, result_summary: s.result_summary, artifact_ids: [...s.artifact_ids] });
  const actions = openActions(view).map((a) => ({ action_id: a.action_id, kind: a.kind, prompt: a.prompt, step_id: a.step_id, input_schema: a.input_schema }));
  const status = sent.status!;
  return {
    taskId: view.task.task_id,
    contextId: view.task.thread_id ?? "",
    native: view.task.status,
    reason: view.task.status_reason,
    noteId: `${view.task.task_id}-${view.task.status}-${view.wal_seq}`,
    actions,
    steps,
    sent: status.state,
    sentKey: `${status.state}|${status.message?.messageId ?? ""}`,
  };
}

/** The A2A state order a stream never goes back on: SUBMITTED < WORKING = INPUT_REQUIRED < terminal. */
export function a2aStateRank(state: TaskState): number {
  if (isTerminalA2a(state)) return 2;
  return state === TaskState.TASK_STATE_SUBMITTED ? 0 : 1;
}

/** The state a2aStateOf gives a task in this stream state (terminal first, then open actions, then pending). */
function streamStateOf(s: A2aStreamState): TaskState {
  return a2aStateFor(s.native, s.actions.length > 0);
}

/** A text message from the agent on the stream's task. */
function streamMessage(s: A2aStreamState, messageId: string, text: string): Message {
  return agentMessage(s, messageId, [textPart(text)]);
}

/** The status message GetTask's mapping gives (a2aStatusMessage), from the stream's state. */
function streamStatusMessage(s: A2aStreamState, state: TaskState): Message | undefined {
  return a2aStatusMessage(s, state, { native: s.native, reason: s.reason, noteId: s.noteId, action: s.actions[0] });
}

/** The fields of a runtime event (src/core/events/runtime-events.ts) the mapping reads. */
export interface RuntimeEventLike {
  readonly type: string;
  readonly sequence: number;
  readonly timestamp: string;
  readonly stepId?: string;
  readonly actionId?: string;
  readonly nativeStatus?: string;
  readonly statusReason?: string;
  readonly taskProgress?: Record<string, unknown>;
  readonly payload: Record<string, unknown>;
}

/** A patch op as task.updated carries it (the fields the mapping reads). */
interface PatchOpLike {
  readonly op: string;
  readonly step?: { readonly step_id: string; readonly title?: string };
  readonly step_id?: string;
  readonly fields?: { readonly title?: string };
}

/**
 * The A2A updates one runtime event means, advancing `s`: an artifactUpdate for a
 * step that completed with a result (and `result` for the task's completion reason, before its terminal
 * status), a statusUpdate when the state or its message changes (an open action, blocked, paused, ended), and a
 * WORKING statusUpdate with a progress report's summary. The state never goes back: once past SUBMITTED (a
 * reopened task is pending again) it stays WORKING to the client; INPUT_REQUIRED ↔ WORKING is no regression.
 * Deterministic: every subscriber given the same events sends the same updates.
 */
export function a2aUpdatesOf(s: A2aStreamState, e: RuntimeEventLike): StreamResponse[] {
  const out: StreamResponse[] = [];
  const ids = { taskId: s.taskId, contextId: s.contextId };
  const p = e.payload;
  // A step the snapshot did not list (a view pages a very large task) is learnt from its events.
  let step = e.stepId === undefined ? undefined : s.steps.get(e.stepId);
  if (step === undefined && e.stepId !== undefined) s.steps.set(e.stepId, (step = { title: e.stepId, result_summary: null, artifact_ids: [] }));
  if (step !== undefined) {
    const snapshot = p.step as { title?: unknown } | undefined;
    if (e.type === "task.attempt.started" && typeof snapshot?.title === "string") step.title = snapshot.title;
    // Results a step reports on the way (started, updated, blocked, failed) stay on it, as the record keeps them.
    if (typeof p.resultSummary === "string") step.result_summary = p.resultSummary;
    if (Array.isArray(p.artifactIds)) step.artifact_ids = p.artifactIds.map(String);
  }
  if (e.stepId === undefined && Object.hasOwn(TASK_STATUS_EVENTS, e.type)) {
    s.native = TASK_STATUS_EVENTS[e.type]!;
    // task.started gives no reason and the record keeps the last one.
    if (e.type !== "task.started") s.reason = e.statusReason ?? null;
    s.noteId = `${s.taskId}-${s.native}-${e.sequence}`;
  } else if (e.type === "task.updated" && Array.isArray(p.ops)) {
    for (const op of p.ops as PatchOpLike[]) {
      if (op.op === "add_step" && op.step !== undefined) s.steps.set(op.step.step_id, { title: op.step.title ?? op.step.step_id, result_summary: null, artifact_ids: [] });
      else if (op.op === "update_step" && op.step_id !== undefined && op.fields?.title !== undefined) {
        const target = s.steps.get(op.step_id);
        if (target !== undefined) target.title = op.fields.title;
      } else if (op.op === "delete_step" && op.step_id !== undefined) s.steps.delete(op.step_id);
    }
  } else if (e.type === "action.required" && e.actionId !== undefined) {
    s.actions.push({ action_id: e.actionId, kind: String(p.kind ?? ""), prompt: String(p.prompt ?? ""), step_id: e.stepId ?? null, input_schema: p.inputSchema ?? null });
  } else if (e.type === "action.resolved" && e.actionId !== undefined) {
    const at = s.actions.findIndex((a) => a.action_id === e.actionId);
    if (at >= 0) s.actions.splice(at, 1);
  }
  if (step !== undefined && e.nativeStatus === "completed" && (e.type === "task.attempt.completed" || e.type === "task.updated")) {
    const artifact = stepArtifact({ step_id: e.stepId!, title: step.title, result_summary: step.result_summary, artifact_ids: step.artifact_ids });
    if (artifact !== null) out.push({ payload: { $case: "artifactUpdate", value: { ...ids, artifact, append: false, lastChunk: true, metadata: undefined } } });
  }
  let state = streamStateOf(s);
  if (state === TaskState.TASK_STATE_SUBMITTED && s.sent !== TaskState.TASK_STATE_SUBMITTED) state = TaskState.TASK_STATE_WORKING;
  if (state === TaskState.TASK_STATE_COMPLETED && e.type === "task.completed" && s.reason !== null && s.reason !== "") {
    const artifact: Artifact = { artifactId: "result", name: "result", description: "", parts: [textPart(s.reason)], metadata: undefined, extensions: [] };
    out.push({ payload: { $case: "artifactUpdate", value: { ...ids, artifact, append: false, lastChunk: true, metadata: undefined } } });
  }
  const message = streamStatusMessage(s, state);
  const key = `${state}|${message?.messageId ?? ""}`;
  if (key !== s.sentKey) {
    s.sent = state;
    s.sentKey = key;
    out.push({ payload: { $case: "statusUpdate", value: { ...ids, status: { state, message, timestamp: e.timestamp }, metadata: undefined } } });
  } else if (state === TaskState.TASK_STATE_WORKING && typeof e.taskProgress?.summary === "string" && e.taskProgress.summary !== "") {
    // A progress report: WORKING with its summary; the status key stays, so the next change is still news.
    const progress = streamMessage(s, `${s.taskId}-progress-${e.sequence}`, e.taskProgress.summary);
    out.push({ payload: { $case: "statusUpdate", value: { ...ids, status: { state, message: progress, timestamp: e.timestamp }, metadata: undefined } } });
  }
  return out;
}
