/**
 * @module A2A mapping (docs/protocols/a2a.md), pure: the task object's view of a task → an A2A Task (the SDK's in-memory
 * shapes: numeric enums, `$case` oneofs; the transport serialises them to 1.0 ProtoJSON), and an A2A message's
 * parts → the objective, title and input_refs of the task it submits, or the answer to an open action.
 */
import { type Artifact, type Message, type Part, Role, type Task, TaskState } from "@a2a-js/sdk";
import type { Action, Step, Task as RuntimeTask } from "../../src/core/index.js";
import { clipText, MAX_TEXT, MAX_TITLE } from "../../src/core/index.js";
import { type A2aTaskIds, a2aStateFor, a2aStatusMessage, agentMessage, dataPart, textPart } from "../../durable-objects/peers/a2a-status.js";
import { isPlainObject } from "../../durable-objects/commands/command-json.js";

/** What GET .../tasks/{tid} answers (the fields the mapping reads). */
export interface TaskViewJson {
  readonly task: RuntimeTask;
  readonly steps: readonly Step[];
  readonly actions: readonly Action[];
  readonly progress: readonly { step_id: string | null; summary: string | null }[];
  readonly wal_seq: number;
}

/** The task's open actions, oldest first (the view lists them in the order they were asked). */
export function openActions(view: TaskViewJson): Action[] {
  return view.actions.filter((a) => a.status === "open");
}

/** The A2A state of a task (a2aStateFor: its native status, and whether any action of it, the task's or a step's, is open). */
export function a2aStateOf(view: TaskViewJson): TaskState {
  return a2aStateFor(view.task.status, openActions(view).length > 0);
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

/** The A2A ids of a task view. */
function idsOf(view: TaskViewJson): A2aTaskIds {
  return { taskId: view.task.task_id, contextId: view.task.thread_id ?? "" };
}

/** The status message (a2aStatusMessage) of a task view in `state`. */
export function statusMessage(view: TaskViewJson, state: TaskState): Message | undefined {
  const t = view.task;
  return a2aStatusMessage(idsOf(view), state, { native: t.status, reason: t.status_reason, noteId: `${t.task_id}-${t.status}-${view.wal_seq}`, action: openActions(view)[0] });
}

/** One artifact per completed step with a result, and `result` for the task's completion reason. */
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
    out.push(agentMessage(idsOf(view), `${t.task_id}-action-${a.action_id}`, [textPart(a.prompt)], { actionId: a.action_id, kind: a.kind }));
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

/** A media type as it may stand in a data URL (type/subtype and parameters, no spaces). */
const DATA_URL_MEDIA_TYPE = /^[\w.+-]+\/[\w.+-]+(;[\w.+-]+=[\w.+-]+)*$/;

/**
 * An input_ref the submission stored, as the part it came from. A file comes back as a url part holding its bytes
 * as a data URL (RFC 2397), not as a raw part: the SDK serialises raw parts with Node's Buffer, which this Worker
 * does not have.
 */
function partOfInputRef(ref: Record<string, unknown>): Part {
  const mediaType = typeof ref.media_type === "string" ? ref.media_type : "";
  const filename = typeof ref.filename === "string" ? ref.filename : "";
  if (ref.kind === "url" && typeof ref.url === "string") return { content: { $case: "url", value: ref.url }, metadata: undefined, filename, mediaType };
  if (ref.kind === "file" && typeof ref.bytes_base64 === "string") {
    const urlType = DATA_URL_MEDIA_TYPE.test(mediaType) ? mediaType : "application/octet-stream";
    return { content: { $case: "url", value: `data:${urlType};base64,${ref.bytes_base64}` }, metadata: undefined, filename, mediaType };
  }
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

/** The first data part's value (a file is not data), or undefined. */
export function dataOf(message: Message): unknown {
  for (const p of message.parts) if (p.content?.$case === "data" && !(p.content.value instanceof FileBytes)) return p.content.value;
  return undefined;
}

/** True when the message has a file (raw) or url part. */
function hasFileOrUrl(message: Message): boolean {
  return message.parts.some((p) => p.content?.$case === "raw" || p.content?.$case === "url" || (p.content?.$case === "data" && p.content.value instanceof FileBytes));
}

/** Base64 of bytes without Buffer (the Worker has no nodejs_compat). */
function base64Of(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/**
 * The bytes of a `raw` part, as the route hands them to the SDK. The SDK decodes `raw` with Node's global Buffer,
 * which this Worker does not have (no nodejs_compat; `wrangler dev` and production answer "Buffer is not
 * defined"), so the route checks a submitted message's parts itself (prepareWireParts) and turns each raw part into
 * a data part holding one of these: the SDK passes a data part's value through untouched, and JSON cannot make an
 * instance of this class, so no client can pass a data part off as a file.
 */
export class FileBytes {
  /** `base64`: standard alphabet, padded (RFC 4648 §4). */
  constructor(readonly base64: string) {}
}

/** The content fields of a Part on the wire: exactly one is set (spec §4.1.6). */
const CONTENT_FIELDS = ["text", "raw", "url", "data"] as const;
/** ProtoJSON bytes: base64, standard or URL-safe alphabet, padded or not. */
const BASE64_TEXT = /^[A-Za-z0-9+/_-]*={0,2}$/;

/** Set as the SDK's decoder sees it: neither absent nor null. */
function isSet(value: unknown): boolean {
  return value !== undefined && value !== null;
}

/** ProtoJSON bytes text in the standard alphabet, padded; null when it is not base64. */
export function canonicalBase64(value: unknown): string | null {
  if (typeof value !== "string" || !BASE64_TEXT.test(value)) return null;
  const bare = value.replace(/=+$/, "").replace(/-/g, "+").replace(/_/g, "/");
  if (bare.length % 4 === 1) return null;
  // Padding, where given, must be what the length calls for.
  if (value.length !== bare.length && value.length !== bare.length + ((4 - (bare.length % 4)) % 4)) return null;
  try {
    return btoa(atob(bare + "=".repeat((4 - (bare.length % 4)) % 4)));
  } catch {
    return null;
  }
}

/** Why one part on the wire is not a Part we take; a raw part is rewritten in place for the SDK (FileBytes). */
function prepareWirePart(parts: unknown[], i: number): string | null {
  const where = `message.parts[${i}]`;
  const part = parts[i];
  if (!isPlainObject(part)) return `${where} must be an object`;
  const present = CONTENT_FIELDS.filter((k) => isSet(part[k]));
  if (present.length !== 1) return `${where} must have exactly one of text, raw, url or data`;
  for (const k of ["filename", "mediaType", "media_type"]) if (isSet(part[k]) && typeof part[k] !== "string") return `${where}.${k} must be a string`;
  if (isSet(part.metadata) && !isPlainObject(part.metadata)) return `${where}.metadata must be an object`;
  switch (present[0]) {
    case "text":
      return typeof part.text === "string" ? null : `${where}.text must be a string`;
    case "url": {
      if (typeof part.url !== "string") return `${where}.url must be an absolute URL`;
      try {
        new URL(part.url);
        return null;
      } catch {
        return `${where}.url must be an absolute URL`;
      }
    }
    case "raw": {
      const base64 = canonicalBase64(part.raw);
      if (base64 === null) return `${where}.raw must be base64 text (RFC 4648, standard or URL-safe alphabet)`;
      const { raw: _raw, ...rest } = part;
      parts[i] = { ...rest, data: new FileBytes(base64) };
      return null;
    }
    default:
      return null;
  }
}

/**
 * The media types a submitted message's parts may have (the Agent Card's defaultInputModes): text and JSON, and
 * the files a task commonly starts from. A part without one is text, JSON or bytes by its kind.
 */
export const INPUT_MODES: readonly string[] = [
  "text/plain", "text/markdown", "text/csv", "text/html", "application/json",
  "application/pdf", "application/octet-stream", "image/png", "image/jpeg", "image/gif", "image/webp",
];

/** The first part whose media type is not one of INPUT_MODES (its index and type), or null (spec: -32005). */
export function unsupportedMediaType(params: Record<string, unknown>): { index: number; mediaType: string } | null {
  const parts = (params.message as { parts?: unknown } | undefined)?.parts;
  if (!Array.isArray(parts)) return null;
  for (const [index, part] of parts.entries()) {
    if (!isPlainObject(part)) continue;
    const type = part.mediaType ?? part.media_type;
    // Parameters (`; charset=utf-8`) and case do not make another type.
    if (typeof type === "string" && type !== "" && !INPUT_MODES.includes(type.split(";")[0]!.trim().toLowerCase())) return { index, mediaType: type.slice(0, 100) };
  }
  return null;
}

/** Why a sent message's role is not the client's (spec §5.7: role is required; a client speaks as ROLE_USER), or null. */
export function wrongRole(params: Record<string, unknown>): string | null {
  const message = params.message;
  if (!isPlainObject(message)) return null;
  return message.role === "ROLE_USER" ? null : "message.role must be ROLE_USER: a client's message is the user's";
}

/**
 * Checks the parts of a SendMessage/SendStreamingMessage request as they came on the wire, before the SDK decodes
 * them, and rewrites its raw parts for the SDK (FileBytes). The problem, said as the -32602 message, or null.
 * An absent or null message or parts is left to the handler ("params.message is required", "at least one part").
 */
export function prepareWireParts(params: Record<string, unknown>): string | null {
  const message = params.message;
  if (!isSet(message)) return null;
  if (!isPlainObject(message)) return "params.message must be an object";
  const parts = message.parts;
  if (!isSet(parts)) return null;
  if (!Array.isArray(parts)) return "message.parts must be an array";
  for (let i = 0; i < parts.length; i++) {
    const problem = prepareWirePart(parts, i);
    if (problem !== null) return problem;
  }
  return null;
}

/**
 * A message's parts as a task submission (null: nothing to do, no text and no other part). Its input_refs, in the
 * order of the parts (`filename` and `media_type` only when the part has them):
 * - data: `{kind: "data", data}`
 * - raw (bytes): `{kind: "file", bytes_base64, filename?, media_type?}`, base64 in the standard alphabet, padded
 * - url: `{kind: "url", url, filename?, media_type?}`
 * Bounds: the whole request is within MAX_BODY_BYTES (the route), and each ref within the core's free-form bound
 * (MAX_JSON_BYTES of JSON; over it, creating the task is a validation error, -32602).
 */
export function submissionOf(message: Message): Submission | null {
  const text = textOf(message).trim();
  const refs: Record<string, unknown>[] = [];
  for (const p of message.parts) {
    const meta = { ...(p.mediaType === "" ? {} : { media_type: p.mediaType }), ...(p.filename === "" ? {} : { filename: p.filename }) };
    const c = p.content;
    if (c === undefined || c.$case === "text") continue;
    if (c.$case === "data" && c.value instanceof FileBytes) refs.push({ kind: "file", bytes_base64: c.value.base64, ...meta });
    else if (c.$case === "data") refs.push({ kind: "data", data: c.value ?? null, ...meta });
    else if (c.$case === "url") refs.push({ kind: "url", url: c.value, ...meta });
    else refs.push({ kind: "file", bytes_base64: base64Of(c.value as Uint8Array), ...meta });
  }
  if (text === "" && refs.length === 0) return null;
  const firstLine = (text.split("\n").find((l) => l.trim() !== "") ?? "").trim();
  const title = firstLine === "" ? "A2A request" : clipText(firstLine, MAX_TITLE);
  return { title, objective: text.slice(0, MAX_TEXT), input_refs: refs };
}

/** Words that approve or reject an approval action. */
const APPROVE = new Set(["yes", "y", "approve", "approved", "ok", "accept", "accepted"]);
const REJECT = new Set(["no", "n", "reject", "rejected", "deny", "denied", "decline"]);

/**
 * The respond_action command a follow-up message means for the open action it answers, or a string
 * saying why the message cannot answer it. Input: the data part, else `{text}`. Approval: a data part's
 * `decision`, else the text's yes/approve or no/reject.
 */
export function responseOf(action: Action, message: Message): Record<string, unknown> | string {
  // An action's answer is stored as input or a decision: a file or link would be dropped unsaid.
  if (hasFileOrUrl(message)) return "an open action is answered with text or a data part, not files or URLs";
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
