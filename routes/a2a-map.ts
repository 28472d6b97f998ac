/**
 * @module A2A mapping (API.md "A2A"), pure: the task object's view of a task → an A2A Task (the SDK's in-memory
 * shapes: numeric enums, `$case` oneofs; the transport serialises them to 1.0 ProtoJSON), and an A2A message's
 * parts → the objective, title and input_refs of the task it submits, or the answer to an open action.
 */
import { type Artifact, type Message, type Part, Role, type Task, TaskState } from "@a2a-js/sdk";
import type { Action, Step, Task as RuntimeTask } from "../src/core/index.js";
import { MAX_TEXT, MAX_TITLE } from "../src/core/index.js";

/** What GET .../tasks/{tid} answers (the fields the mapping reads). */
export interface TaskViewJson {
  readonly task: RuntimeTask;
  readonly steps: readonly Step[];
  readonly actions: readonly Action[];
  readonly progress: readonly { step_id: string | null; summary: string | null }[];
  readonly wal_seq: number;
}

/** States after which a task never changes (spec §4.1.3). */
export const TERMINAL_A2A_STATES: ReadonlySet<TaskState> = new Set([TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED]);

/** True for a terminal A2A state. */
export function isTerminalA2a(state: TaskState): boolean {
  return TERMINAL_A2A_STATES.has(state);
}

/** The task's open actions, oldest first (the view lists them in the order they were asked). */
export function openActions(view: TaskViewJson): Action[] {
  return view.actions.filter((a) => a.status === "open");
}

/**
 * The A2A state of a task (design decision 6): terminal statuses map one to one; a live task a person is asked
 * something on (any open action, the task's or a step's) is INPUT_REQUIRED; pending (not planned or not started)
 * is SUBMITTED; running, blocked and paused are WORKING (blocked and paused say why in the status message).
 */
export function a2aStateOf(view: TaskViewJson): TaskState {
  switch (view.task.status) {
    case "completed":
      return TaskState.TASK_STATE_COMPLETED;
    case "failed":
      return TaskState.TASK_STATE_FAILED;
    case "cancelled":
      return TaskState.TASK_STATE_CANCELED;
    default:
      if (openActions(view).length > 0) return TaskState.TASK_STATE_INPUT_REQUIRED;
      return view.task.status === "pending" ? TaskState.TASK_STATE_SUBMITTED : TaskState.TASK_STATE_WORKING;
  }
}

/**
 * The index filter that selects the tasks a2aStateOf puts in `state` (ListTasks' status filter), so the session
 * pages through exactly those; states this runtime never gives (REJECTED, AUTH_REQUIRED) select none.
 */
export function listFilterOf(state: TaskState): { native_statuses: string[]; with_open_actions?: boolean } {
  const live = ["pending", "running", "paused", "blocked"];
  switch (state) {
    case TaskState.TASK_STATE_SUBMITTED:
      return { native_statuses: ["pending"], with_open_actions: false };
    case TaskState.TASK_STATE_WORKING:
      return { native_statuses: live.filter((s) => s !== "pending"), with_open_actions: false };
    case TaskState.TASK_STATE_INPUT_REQUIRED:
      return { native_statuses: live, with_open_actions: true };
    case TaskState.TASK_STATE_COMPLETED:
      return { native_statuses: ["completed"] };
    case TaskState.TASK_STATE_FAILED:
      return { native_statuses: ["failed"] };
    case TaskState.TASK_STATE_CANCELED:
      return { native_statuses: ["cancelled"] };
    default:
      return { native_statuses: [] };
  }
}

/** A text part. */
export function textPart(text: string): Part {
  return { content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "text/plain" };
}

/** A data part (any JSON value). */
export function dataPart(data: unknown): Part {
  return { content: { $case: "data", value: data }, metadata: undefined, filename: "", mediaType: "application/json" };
}

/** A message from the agent (the runtime) on this task. */
function agentMessage(view: TaskViewJson, messageId: string, parts: Part[], metadata?: Record<string, unknown>): Message {
  return { messageId, contextId: view.task.thread_id ?? "", taskId: view.task.task_id, role: Role.ROLE_AGENT, parts, metadata, extensions: [], referenceTaskIds: [] };
}

/** The status message: the oldest open action's prompt, or why a live task is blocked or paused. */
function statusMessage(view: TaskViewJson, state: TaskState): Message | undefined {
  const t = view.task;
  if (state === TaskState.TASK_STATE_INPUT_REQUIRED) {
    const action = openActions(view)[0]!;
    const meta = { actionId: action.action_id, kind: action.kind, ...(action.step_id === null ? {} : { stepId: action.step_id }), ...(action.input_schema === null ? {} : { inputSchema: action.input_schema }) };
    return agentMessage(view, `${t.task_id}-action-${action.action_id}`, [textPart(action.prompt)], meta);
  }
  if (t.status === "blocked" || t.status === "paused") {
    return agentMessage(view, `${t.task_id}-${t.status}-${view.wal_seq}`, [textPart(`${t.status}${t.status_reason === null ? "" : `: ${t.status_reason}`}`)]);
  }
  if (state === TaskState.TASK_STATE_FAILED && t.status_reason !== null) return agentMessage(view, `${t.task_id}-failed`, [textPart(t.status_reason)]);
  return undefined;
}

/** One artifact per completed step with a result (design decision 7), and `result` for the task's completion reason. */
export function artifactsOf(view: TaskViewJson): Artifact[] {
  const out: Artifact[] = [];
  for (const step of view.steps) {
    if (step.status !== "completed") continue;
    const artifact = stepArtifact(step);
    if (artifact !== null) out.push(artifact);
  }
  if (view.task.status === "completed" && view.task.status_reason !== null && view.task.status_reason !== "") {
    out.push({ artifactId: "result", name: "result", description: "", parts: [textPart(view.task.status_reason)], metadata: undefined, extensions: [] });
  }
  return out;
}

/** A completed step's artifact: its result summary as text and its artifact ids as data; null when it has neither. */
export function stepArtifact(step: Pick<Step, "step_id" | "title" | "result_summary" | "artifact_ids">): Artifact | null {
  const parts: Part[] = [];
  if (step.result_summary !== null && step.result_summary !== "") parts.push(textPart(step.result_summary));
  if (step.artifact_ids.length > 0) parts.push(dataPart({ artifactIds: [...step.artifact_ids] }));
  if (parts.length === 0) return null;
  return { artifactId: step.step_id, name: step.title, description: "", parts, metadata: undefined, extensions: [] };
}

/**
 * The conversation: the submitted request (rebuilt from the objective and input_refs: the runtime keeps the
 * work, not the message) and, per action, the question asked and the A2A client's answer.
 */
export function historyOf(view: TaskViewJson): Message[] {
  const t = view.task;
  const contextId = t.thread_id ?? "";
  const parts: Part[] = [];
  if (t.objective !== null && t.objective !== "") parts.push(textPart(t.objective));
  for (const ref of t.input_refs ?? []) parts.push(partOfInputRef(ref));
  const out: Message[] = [];
  if (parts.length > 0) out.push({ messageId: `${t.task_id}-request`, contextId, taskId: t.task_id, role: Role.ROLE_USER, parts, metadata: undefined, extensions: [], referenceTaskIds: [] });
  for (const a of view.actions) {
    out.push(agentMessage(view, `${t.task_id}-action-${a.action_id}`, [textPart(a.prompt)], { actionId: a.action_id, kind: a.kind }));
    if (a.status === "resolved" && a.resolved_by?.role === "a2a_client") {
      const answer: Part[] = a.input === null ? [textPart(a.decision ?? "")] : [dataPart(a.input)];
      out.push({ messageId: `${t.task_id}-answer-${a.action_id}`, contextId, taskId: t.task_id, role: Role.ROLE_USER, parts: answer, metadata: { decision: a.decision }, extensions: [], referenceTaskIds: [] });
    }
  }
  return out;
}

/** `historyLength` (spec §3.2.4): unset → all, 0 → none, N → the last N. */
export function limitHistory(history: Message[], historyLength: number | undefined): Message[] {
  if (historyLength === undefined) return history;
  if (historyLength <= 0) return [];
  return history.slice(-historyLength);
}

/** The A2A Task of a task view. */
export function a2aTaskOf(view: TaskViewJson, historyLength?: number): Task {
  const state = a2aStateOf(view);
  return {
    id: view.task.task_id,
    contextId: view.task.thread_id ?? "",
    status: { state, message: statusMessage(view, state), timestamp: view.task.updated_at },
    artifacts: artifactsOf(view),
    history: limitHistory(historyOf(view), historyLength),
    metadata: undefined,
  };
}

/** An input_ref the submission stored, as the part it came from. */
function partOfInputRef(ref: Record<string, unknown>): Part {
  const mediaType = typeof ref.media_type === "string" ? ref.media_type : "";
  const filename = typeof ref.filename === "string" ? ref.filename : "";
  if (ref.kind === "url" && typeof ref.url === "string") return { content: { $case: "url", value: ref.url }, metadata: undefined, filename, mediaType };
  if (ref.kind === "data") return { content: { $case: "data", value: ref.data }, metadata: undefined, filename, mediaType: mediaType || "application/json" };
  return dataPart(ref);
}

/** What a message submits: objective and title from its text, input_refs from its other parts. */
export interface Submission {
  readonly title: string;
  readonly objective: string;
  readonly input_refs: Record<string, unknown>[];
}

/** Text of a message: its text parts joined by blank lines. */
export function textOf(message: Message): string {
  return message.parts
    .map((p) => (p.content?.$case === "text" ? p.content.value : null))
    .filter((t): t is string => t !== null)
    .join("\n\n");
}

/** The first data part's value, or undefined. */
export function dataOf(message: Message): unknown {
  for (const p of message.parts) if (p.content?.$case === "data") return p.content.value;
  return undefined;
}

/** Base64 of bytes without Buffer (the Worker has no nodejs_compat). */
function base64Of(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]!);
  return btoa(s);
}

/** A message's parts as a task submission (null: nothing to do, no text and no other part). */
export function submissionOf(message: Message): Submission | null {
  const text = textOf(message).trim();
  const refs: Record<string, unknown>[] = [];
  for (const p of message.parts) {
    const meta = { ...(p.mediaType === "" ? {} : { media_type: p.mediaType }), ...(p.filename === "" ? {} : { filename: p.filename }) };
    const c = p.content;
    if (c === undefined || c.$case === "text") continue;
    if (c.$case === "data") refs.push({ kind: "data", data: c.value ?? null, ...meta });
    else if (c.$case === "url") refs.push({ kind: "url", url: c.value, ...meta });
    else refs.push({ kind: "raw", bytes_base64: base64Of(c.value as Uint8Array), ...meta });
  }
  if (text === "" && refs.length === 0) return null;
  const firstLine = (text.split("\n").find((l) => l.trim() !== "") ?? "").trim();
  const title = firstLine === "" ? "A2A request" : firstLine.length > MAX_TITLE ? `${firstLine.slice(0, MAX_TITLE - 1)}…` : firstLine;
  return { title, objective: text.slice(0, MAX_TEXT), input_refs: refs };
}

/** Words that approve or reject an approval action. */
const APPROVE = new Set(["yes", "y", "approve", "approved", "ok", "accept", "accepted"]);
const REJECT = new Set(["no", "n", "reject", "rejected", "deny", "denied", "decline"]);

/**
 * The respond_action command a follow-up message means for an open action (design decision 9), or a string
 * saying why the message cannot answer it. Input: the data part, else `{text}`. Approval: a data part's
 * `decision`, else the text's yes/approve or no/reject.
 */
export function responseOf(action: Action, message: Message): Record<string, unknown> | string {
  const data = dataOf(message);
  const text = textOf(message).trim();
  if (action.kind === "input") {
    if (data !== undefined) return { type: "respond_action", action_id: action.action_id, decision: "submitted", input: data ?? null };
    if (text === "") return "an input action needs a data part or text";
    return { type: "respond_action", action_id: action.action_id, decision: "submitted", input: { text: text.slice(0, MAX_TEXT) } };
  }
  const said = typeof data === "object" && data !== null && typeof (data as { decision?: unknown }).decision === "string" ? (data as { decision: string }).decision : text;
  const word = said.trim().toLowerCase().replace(/[.!]+$/, "");
  const decision = APPROVE.has(word) ? "approved" : REJECT.has(word) ? "rejected" : null;
  if (decision === null) return "an approval is answered with approve/yes or reject/no (text, or a data part {decision})";
  return { type: "respond_action", action_id: action.action_id, decision, ...(text !== "" && data !== undefined ? { comment: text.slice(0, MAX_TEXT) } : {}) };
}
