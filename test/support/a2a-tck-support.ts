/**
 * @module Wire-level helpers for the A2A conformance suite: raw JSON-RPC calls and SSE streams over SELF, and
 * checks of the 1.0 ProtoJSON data model as the conformance kit's schema states it (every object closed to
 * unknown keys, required fields present, required arrays non-empty, enum strings, UTC timestamps).
 */
import { SELF } from "cloudflare:test";
import { expect } from "vitest";
import { rpc } from "./a2a-clients.js";
import { BASE } from "./support.js";

export const ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo";
export const A2A_DOMAIN = "a2a-protocol.org";

export const TASK_STATES = [
  "TASK_STATE_SUBMITTED",
  "TASK_STATE_WORKING",
  "TASK_STATE_COMPLETED",
  "TASK_STATE_FAILED",
  "TASK_STATE_CANCELED",
  "TASK_STATE_INPUT_REQUIRED",
  "TASK_STATE_REJECTED",
  "TASK_STATE_AUTH_REQUIRED",
];
export const TERMINAL_STATES = new Set(["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"]);
/** ISO-8601 in UTC with a `Z` (spec §5.6.1). */
export const UTC_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

let nextId = 0;

/** A JSON-RPC call of `method` to /a2a with a fresh numeric id (or `id`); the raw answer. */
export async function jsonRpc(token: string | undefined, method: string, params: unknown, options: { id?: string | number; headers?: Record<string, string> } = {}) {
  const id = options.id ?? ++nextId;
  const answer = await rpc(token, { jsonrpc: "2.0", id, method, params }, options.headers);
  return { ...answer, id };
}

/** A wire-format user message (1.0 ProtoJSON). */
export function wireMessage(text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { messageId: `m-${crypto.randomUUID()}`, role: "ROLE_USER", parts: [{ text }], ...extra };
}

/** One SSE event as it came: its raw text block and the JSON of its data. */
export interface SseEvent {
  readonly raw: string;
  readonly json: any;
}

/** A streaming call's answer read event by event. */
export class SseStream {
  private readonly reader: ReadableStreamDefaultReader<string> | null;
  private buffer = "";
  /** Every event read so far, in order. */
  readonly events: SseEvent[] = [];
  /** True once the server closed the stream. */
  ended = false;

  constructor(
    readonly status: number,
    readonly contentType: string | null,
    body: ReadableStream<Uint8Array> | null,
  ) {
    this.reader = body === null ? null : body.pipeThrough(new TextDecoderStream()).getReader();
  }

  /** The next event, or null when the stream ends. */
  async next(): Promise<SseEvent | null> {
    for (;;) {
      const cut = this.buffer.indexOf("\n\n");
      if (cut >= 0) {
        const raw = this.buffer.slice(0, cut);
        this.buffer = this.buffer.slice(cut + 2);
        // Comment-only blocks (heartbeats) are not events.
        if (raw.split("\n").every((l) => l.startsWith(":"))) continue;
        const data = raw
          .split("\n")
          .filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).replace(/^ /, ""))
          .join("\n");
        const event = { raw, json: JSON.parse(data) };
        this.events.push(event);
        return event;
      }
      if (this.reader === null || this.ended) return null;
      const chunk = await this.reader.read();
      if (chunk.done) {
        this.ended = true;
        expect(this.buffer.trim(), "bytes after the last complete SSE event").toBe("");
        return null;
      }
      this.buffer += chunk.value.replace(/\r\n?/g, "\n");
    }
  }

  /** Reads events until one satisfies `match` (returned); fails if the stream ends first. */
  async until(match: (event: SseEvent) => boolean): Promise<SseEvent> {
    for (;;) {
      const event = await this.next();
      if (event === null) throw new Error(`stream ended before the awaited event; saw ${JSON.stringify(this.events.map((e) => summary(e.json)))}`);
      if (match(event)) return event;
    }
  }

  /** Reads to the end of the stream; every event read. */
  async rest(): Promise<SseEvent[]> {
    while ((await this.next()) !== null);
    return this.events;
  }

  /** The client goes away. */
  async close(): Promise<void> {
    await this.reader?.cancel().catch(() => undefined);
  }
}

/** Opens a streaming JSON-RPC call (SendStreamingMessage, SubscribeToTask); errors before the stream are plain JSON. */
export async function openStream(token: string | undefined, method: string, params: unknown, options: { id?: string | number; headers?: Record<string, string> } = {}): Promise<SseStream & { id: string | number; jsonBody: () => Promise<any> }> {
  const id = options.id ?? ++nextId;
  const res = await SELF.fetch(`${BASE}/a2a`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream", "a2a-version": "1.0", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...options.headers },
    body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
  });
  const contentType = res.headers.get("content-type");
  if (contentType?.startsWith("text/event-stream")) return Object.assign(new SseStream(res.status, contentType, res.body), { id, jsonBody: async () => null });
  const text = await res.text();
  return Object.assign(new SseStream(res.status, contentType, null), { id, jsonBody: async () => JSON.parse(text) });
}

/** A short label of a StreamResponse result: `task:STATE`, `STATE` for a status update, `artifact:ID`, `message`. */
export function summary(response: any): string {
  const r = response?.result;
  if (r === undefined) return `error:${response?.error?.code}`;
  if (r.task !== undefined) return `task:${r.task.status?.state}`;
  if (r.statusUpdate !== undefined) return String(r.statusUpdate.status?.state);
  if (r.artifactUpdate !== undefined) return `artifact:${r.artifactUpdate.artifact?.artifactId}`;
  if (r.message !== undefined) return "message";
  return `?${Object.keys(r).join(",")}`;
}

/** The state a stream event carries (task snapshot or status update), or undefined. */
export function stateOf(response: any): string | undefined {
  return response?.result?.task?.status?.state ?? response?.result?.statusUpdate?.status?.state;
}

// ---- Schema checks: each returns the problems found, as "path: what" strings (empty when the value conforms).

type Check = (value: any, path: string, out: string[]) => void;

function isObject(value: unknown): value is Record<string, any> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** An object with these required keys and no keys beyond `allowed` (the schema's additionalProperties: false). */
function object(value: any, path: string, out: string[], required: string[], allowed: string[]): boolean {
  if (!isObject(value)) {
    out.push(`${path}: not an object`);
    return false;
  }
  for (const key of required) if (!(key in value)) out.push(`${path}: missing required ${key}`);
  for (const key of Object.keys(value)) if (!required.includes(key) && !allowed.includes(key)) out.push(`${path}: unexpected key ${key}`);
  return true;
}

function string(value: any, path: string, out: string[], nonEmpty = false): void {
  if (typeof value !== "string") out.push(`${path}: not a string`);
  else if (nonEmpty && value === "") out.push(`${path}: empty`);
}

function array(value: any, path: string, out: string[], item: Check, nonEmpty = false): void {
  if (!Array.isArray(value)) {
    out.push(`${path}: not an array`);
    return;
  }
  if (nonEmpty && value.length === 0) out.push(`${path}: a required array is empty`);
  value.forEach((v, i) => item(v, `${path}[${i}]`, out));
}

function struct(value: any, path: string, out: string[]): void {
  if (!isObject(value)) out.push(`${path}: a Struct must be a JSON object`);
}

function timestamp(value: any, path: string, out: string[]): void {
  if (typeof value !== "string" || !UTC_TIMESTAMP.test(value)) out.push(`${path}: not an ISO-8601 UTC timestamp with Z: ${JSON.stringify(value)}`);
}

export const checkPart: Check = (value, path, out) => {
  if (!object(value, path, out, [], ["text", "raw", "url", "data", "metadata", "filename", "mediaType"])) return;
  const members = ["text", "raw", "url", "data"].filter((k) => k in value);
  if (members.length !== 1) out.push(`${path}: exactly one of text/raw/url/data, found ${members.length}`);
  if ("text" in value) string(value.text, `${path}.text`, out);
  if ("url" in value) string(value.url, `${path}.url`, out);
  if ("raw" in value && (typeof value.raw !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(value.raw))) out.push(`${path}.raw: not base64`);
  if ("metadata" in value) struct(value.metadata, `${path}.metadata`, out);
  if ("filename" in value) string(value.filename, `${path}.filename`, out);
  if ("mediaType" in value) string(value.mediaType, `${path}.mediaType`, out);
};

export const checkMessage: Check = (value, path, out) => {
  if (!object(value, path, out, ["messageId", "role", "parts"], ["contextId", "taskId", "metadata", "extensions", "referenceTaskIds"])) return;
  string(value.messageId, `${path}.messageId`, out, true);
  if (value.role !== "ROLE_USER" && value.role !== "ROLE_AGENT") out.push(`${path}.role: not a Role enum string: ${JSON.stringify(value.role)}`);
  array(value.parts, `${path}.parts`, out, checkPart, true);
  if ("contextId" in value) string(value.contextId, `${path}.contextId`, out);
  if ("taskId" in value) string(value.taskId, `${path}.taskId`, out);
  if ("metadata" in value) struct(value.metadata, `${path}.metadata`, out);
  if ("extensions" in value) array(value.extensions, `${path}.extensions`, out, (v, p, o) => string(v, p, o));
  if ("referenceTaskIds" in value) array(value.referenceTaskIds, `${path}.referenceTaskIds`, out, (v, p, o) => string(v, p, o));
};

export const checkStatus: Check = (value, path, out) => {
  if (!object(value, path, out, ["state"], ["message", "timestamp"])) return;
  if (!TASK_STATES.includes(value.state)) out.push(`${path}.state: not a TaskState enum string: ${JSON.stringify(value.state)}`);
  if ("message" in value) checkMessage(value.message, `${path}.message`, out);
  if ("timestamp" in value) timestamp(value.timestamp, `${path}.timestamp`, out);
};

export const checkArtifact: Check = (value, path, out) => {
  if (!object(value, path, out, ["artifactId", "parts"], ["name", "description", "metadata", "extensions"])) return;
  string(value.artifactId, `${path}.artifactId`, out, true);
  array(value.parts, `${path}.parts`, out, checkPart, true);
  if ("metadata" in value) struct(value.metadata, `${path}.metadata`, out);
};

export const checkTask: Check = (value, path, out) => {
  if (!object(value, path, out, ["id", "status"], ["contextId", "artifacts", "history", "metadata"])) return;
  string(value.id, `${path}.id`, out, true);
  checkStatus(value.status, `${path}.status`, out);
  if ("contextId" in value) string(value.contextId, `${path}.contextId`, out);
  if ("artifacts" in value) array(value.artifacts, `${path}.artifacts`, out, checkArtifact);
  if ("history" in value) array(value.history, `${path}.history`, out, checkMessage);
  if ("metadata" in value) struct(value.metadata, `${path}.metadata`, out);
};

export const checkStreamResponse: Check = (value, path, out) => {
  if (!object(value, path, out, [], ["task", "message", "statusUpdate", "artifactUpdate"])) return;
  const members = Object.keys(value);
  if (members.length !== 1) out.push(`${path}: exactly one of task/message/statusUpdate/artifactUpdate, found ${members.length}`);
  if ("task" in value) checkTask(value.task, `${path}.task`, out);
  if ("message" in value) checkMessage(value.message, `${path}.message`, out);
  if ("statusUpdate" in value && object(value.statusUpdate, `${path}.statusUpdate`, out, ["taskId", "contextId", "status"], ["metadata"])) {
    checkStatus(value.statusUpdate.status, `${path}.statusUpdate.status`, out);
  }
  if ("artifactUpdate" in value && object(value.artifactUpdate, `${path}.artifactUpdate`, out, ["taskId", "contextId", "artifact"], ["append", "lastChunk", "metadata"])) {
    checkArtifact(value.artifactUpdate.artifact, `${path}.artifactUpdate.artifact`, out);
  }
};

export const checkSendMessageResponse: Check = (value, path, out) => {
  if (!object(value, path, out, [], ["task", "message"])) return;
  if (Object.keys(value).length !== 1) out.push(`${path}: exactly one of task/message`);
  if ("task" in value) checkTask(value.task, `${path}.task`, out);
  if ("message" in value) checkMessage(value.message, `${path}.message`, out);
};

export const checkListTasksResponse: Check = (value, path, out) => {
  if (!object(value, path, out, ["tasks", "nextPageToken", "pageSize", "totalSize"], [])) return;
  array(value.tasks, `${path}.tasks`, out, checkTask);
  string(value.nextPageToken, `${path}.nextPageToken`, out);
  if (!Number.isInteger(value.pageSize)) out.push(`${path}.pageSize: not an integer`);
  if (!Number.isInteger(value.totalSize)) out.push(`${path}.totalSize: not an integer`);
};

/** The JSON-RPC error object: exactly {code, message, data?}, data an array of `@type` objects, ErrorInfo metadata all strings. */
export const checkError: Check = (value, path, out) => {
  if (!object(value, path, out, ["code", "message"], ["data"])) return;
  if (!Number.isInteger(value.code)) out.push(`${path}.code: not an integer`);
  string(value.message, `${path}.message`, out);
  if (!("data" in value)) return;
  array(value.data, `${path}.data`, out, (item, p, o) => {
    if (!isObject(item) || typeof item["@type"] !== "string") o.push(`${p}: not an Any with @type`);
    else if (item["@type"] === ERROR_INFO && object(item, p, o, ["@type", "reason", "domain"], ["metadata"])) {
      string(item.reason, `${p}.reason`, o, true);
      string(item.domain, `${p}.domain`, o, true);
      if ("metadata" in item) for (const [k, v] of Object.entries(item.metadata ?? {})) if (typeof v !== "string") o.push(`${p}.metadata.${k}: ErrorInfo metadata values are strings`);
    }
  });
};

const checkInterface: Check = (value, path, out) => {
  if (!object(value, path, out, ["url", "protocolBinding", "protocolVersion"], ["tenant"])) return;
  string(value.url, `${path}.url`, out, true);
  if (!["JSONRPC", "GRPC", "HTTP+JSON"].includes(value.protocolBinding)) out.push(`${path}.protocolBinding: ${JSON.stringify(value.protocolBinding)}`);
  string(value.protocolVersion, `${path}.protocolVersion`, out, true);
};

const checkSkill: Check = (value, path, out) => {
  if (!object(value, path, out, ["id", "name", "description", "tags"], ["examples", "inputModes", "outputModes", "securityRequirements"])) return;
  for (const k of ["id", "name", "description"]) string(value[k], `${path}.${k}`, out, true);
  array(value.tags, `${path}.tags`, out, (v, p, o) => string(v, p, o, true), true);
};

const checkSecurityScheme: Check = (value, path, out) => {
  if (!object(value, path, out, [], ["apiKeySecurityScheme", "httpAuthSecurityScheme", "oauth2SecurityScheme", "openIdConnectSecurityScheme", "mtlsSecurityScheme"])) return;
  if (Object.keys(value).length !== 1) out.push(`${path}: exactly one scheme`);
  if ("httpAuthSecurityScheme" in value && object(value.httpAuthSecurityScheme, `${path}.httpAuthSecurityScheme`, out, ["scheme"], ["description", "bearerFormat"])) {
    string(value.httpAuthSecurityScheme.scheme, `${path}.httpAuthSecurityScheme.scheme`, out, true);
  }
};

const checkSecurityRequirement: Check = (value, path, out) => {
  if (!object(value, path, out, [], ["schemes"])) return;
  for (const [name, list] of Object.entries(value.schemes ?? {})) {
    if (object(list, `${path}.schemes.${name}`, out, [], ["list"]) && "list" in (list as object)) array((list as any).list, `${path}.schemes.${name}.list`, out, (v, p, o) => string(v, p, o));
  }
};

export const checkAgentCard: Check = (value, path, out) => {
  const required = ["name", "description", "supportedInterfaces", "version", "capabilities", "defaultInputModes", "defaultOutputModes", "skills"];
  if (!object(value, path, out, required, ["provider", "documentationUrl", "securitySchemes", "securityRequirements", "signatures", "iconUrl"])) return;
  for (const k of ["name", "description", "version"]) string(value[k], `${path}.${k}`, out, true);
  array(value.supportedInterfaces, `${path}.supportedInterfaces`, out, checkInterface, true);
  if (object(value.capabilities, `${path}.capabilities`, out, [], ["streaming", "pushNotifications", "extensions", "extendedAgentCard"])) {
    for (const k of ["streaming", "pushNotifications", "extendedAgentCard"]) if (k in value.capabilities && typeof value.capabilities[k] !== "boolean") out.push(`${path}.capabilities.${k}: not a boolean`);
  }
  array(value.defaultInputModes, `${path}.defaultInputModes`, out, (v, p, o) => string(v, p, o, true), true);
  array(value.defaultOutputModes, `${path}.defaultOutputModes`, out, (v, p, o) => string(v, p, o, true), true);
  array(value.skills, `${path}.skills`, out, checkSkill, true);
  if ("provider" in value) object(value.provider, `${path}.provider`, out, ["organization", "url"], []);
  if ("securitySchemes" in value && isObject(value.securitySchemes)) for (const [name, s] of Object.entries(value.securitySchemes)) checkSecurityScheme(s, `${path}.securitySchemes.${name}`, out);
  if ("securityRequirements" in value) array(value.securityRequirements, `${path}.securityRequirements`, out, checkSecurityRequirement);
};

/** The problems `check` finds in `value` (empty when it conforms). */
export function problems(check: Check, value: unknown, path = "$"): string[] {
  const out: string[] = [];
  check(value, path, out);
  return out;
}

/** Every key of the protocol's own objects with its path; the free-form members (`metadata`, a data part's `data`) are the sender's and are not looked into. */
export function protocolKeys(value: unknown, path = "$"): { key: string; path: string }[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => protocolKeys(v, `${path}[${i}]`));
  if (!isObject(value)) return [];
  return Object.entries(value).flatMap(([k, v]) => [{ key: k, path: `${path}.${k}` }, ...(k === "metadata" || k === "data" ? [] : protocolKeys(v, `${path}.${k}`))]);
}

/** Keys of the protocol's own objects that are not lowerCamelCase (DM-SERIAL-001). */
export function nonCamelKeys(value: unknown): string[] {
  return protocolKeys(value)
    .filter(({ key }) => key !== "@type" && !/^[a-z][a-zA-Z0-9]*$/.test(key))
    .map(({ path }) => path);
}
