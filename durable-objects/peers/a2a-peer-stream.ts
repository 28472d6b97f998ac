/**
 * @module How the peer client reads a peer's answers: a body whole within a size and a deadline, the Agent Card's
 * JSON-RPC interface, the peer's Task as we record it (PeerTask), the events of a SubscribeToTask stream folded into
 * that view, and the SSE body of such a stream held to our limits (each event's size, the longest silence, the
 * stream's whole life). No Node APIs (it runs in workerd).
 */
import { type AgentCard, type StreamResponse, type Task, TaskState } from "@a2a-js/sdk";

/** What we record of the peer's task. */
export interface PeerTask {
  remote_task_id: string;
  remote_context_id: string | null;
  /** The A2A v1.0 TaskState as the peer says it, e.g. "TASK_STATE_WORKING". */
  remote_status: string;
  /** The text parts of the status message (e.g. the INPUT_REQUIRED question), at most TEXT_LIMIT characters. */
  status_message: string | null;
  /** Each artifact with its text parts joined (at most TEXT_LIMIT characters), or null when it has none. */
  artifacts: { artifact_id: string; name: string | null; text: string | null }[];
  /** The peer's id of the question it asks: its status message's `metadata.actionId`, when it gives one. */
  remote_action_id?: string;
}

/** A status message's `metadata.actionId` (a peer's own id of its open question), when it is a usable id. */
function actionIdOf(message: { metadata?: { [key: string]: unknown } | undefined } | undefined): { remote_action_id: string } | Record<string, never> {
  const id = message?.metadata?.actionId;
  return typeof id === "string" && id !== "" && id.length <= 256 ? { remote_action_id: id } : {};
}

/** Characters kept of a status message or of one artifact's text. */
export const PEER_TEXT_LIMIT = 4_000;

type Parts = readonly { content?: { $case: string; value: unknown } | undefined }[] | undefined;

/** Text parts joined with newlines, cut to PEER_TEXT_LIMIT; null when there are none. */
export function textOf(parts: Parts): string | null {
  const texts = (parts ?? []).flatMap((p) => (p.content?.$case === "text" && typeof p.content.value === "string" ? [p.content.value] : []));
  return texts.length === 0 ? null : texts.join("\n").slice(0, PEER_TEXT_LIMIT);
}

/** The peer's Task as we record it; null when it lacks what identifies it (id and status). */
export function peerTaskOf(task: Task): PeerTask | null {
  if (typeof task?.id !== "string" || task.id === "" || task.status === undefined) return null;
  return {
    remote_task_id: task.id,
    remote_context_id: task.contextId === "" ? null : task.contextId,
    remote_status: TaskState[task.status.state] ?? "UNRECOGNIZED",
    status_message: textOf(task.status.message?.parts),
    artifacts: (task.artifacts ?? []).map((a) => ({ artifact_id: a.artifactId, name: a.name === "" ? null : a.name, text: textOf(a.parts) })),
    ...actionIdOf(task.status.message),
  };
}

/** The A2A v1.0 states after which a peer's task changes no more (the stream may end there). */
export const TERMINAL_STATES: ReadonlySet<string> = new Set(["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"]);

/**
 * The view after one stream event, or the same object when the event changes nothing we record (a message, an
 * event of another task, a status update before any view). A `task` event replaces the view; a status update sets
 * the state and status message; an artifact update replaces the artifact of its id, or with `append` adds its parts
 * to the artifact's (their text joined as a whole answer's parts are).
 */
export function foldStreamEvent(view: PeerTask | null, event: StreamResponse): PeerTask | null {
  const payload = event.payload;
  if (payload === undefined) return view;
  switch (payload.$case) {
    case "task":
      return peerTaskOf(payload.value) ?? view;
    case "statusUpdate": {
      const update = payload.value;
      if (update.status === undefined || (view !== null && update.taskId !== "" && update.taskId !== view.remote_task_id)) return view;
      const base: PeerTask = view ?? { remote_task_id: update.taskId, remote_context_id: update.contextId === "" ? null : update.contextId, remote_status: "", status_message: null, artifacts: [] };
      if (base.remote_task_id === "") return view;
      const { remote_action_id: _previous, ...rest } = base;
      return { ...rest, remote_status: TaskState[update.status.state] ?? "UNRECOGNIZED", status_message: textOf(update.status.message?.parts), ...actionIdOf(update.status.message) };
    }
    case "artifactUpdate": {
      const update = payload.value;
      const a = update.artifact;
      if (view === null || a === undefined || a.artifactId === "" || (update.taskId !== "" && update.taskId !== view.remote_task_id)) return view;
      const text = textOf(a.parts);
      const name = a.name === "" ? null : a.name;
      const at = view.artifacts.findIndex((x) => x.artifact_id === a.artifactId);
      const previous = at < 0 ? undefined : view.artifacts[at]!;
      const next =
        update.append && previous !== undefined
          ? { artifact_id: a.artifactId, name: name ?? previous.name, text: previous.text === null ? text : text === null ? previous.text : `${previous.text}\n${text}`.slice(0, PEER_TEXT_LIMIT) }
          : { artifact_id: a.artifactId, name, text };
      const artifacts = at < 0 ? [...view.artifacts, next] : view.artifacts.map((x, i) => (i === at ? next : x));
      return { ...view, artifacts };
    }
    default:
      return view;
  }
}

/** The JSON with the `raw` field of every part (an object in a `parts` array) removed. */
export function withoutRawParts(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutRawParts);
  if (value === null || typeof value !== "object") return value;
  // No prototype: a "__proto__" key of the peer's JSON stays a plain key.
  const out: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const [key, v] of Object.entries(value)) {
    out[key] = key === "parts" && Array.isArray(v) ? v.map((part) => withoutRawParts(isObject(part) ? Object.fromEntries(Object.entries(part).filter(([k]) => k !== "raw")) : part)) : withoutRawParts(v);
  }
  return out;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** Why a stream was cut. */
export type StreamCut = "idle" | "life" | "too_large";

export interface SseLimits {
  /** Cut after this long without any byte (the first byte included). */
  idleMs: number;
  /** Cut after this long in all. */
  lifeMs: number;
  /** Bytes of one event (up to its blank line) past which the stream is cut. */
  maxEventBytes: number;
  /** The error the stream fails with when cut; remembered by the caller, which may see it wrapped by the SDK. */
  cut: (why: StreamCut) => Error;
  /** Called once when the stream ends, however it ends (the caller aborts the request). */
  ended: () => void;
}

/**
 * The SSE body of a peer's stream, re-framed event by event within the limits: each event is passed on whole once
 * its blank line arrives (data lines joined, comments dropped); bytes (`raw`) parts are removed from its JSON, as
 * for whole answers, since the SDK decodes them with a Buffer workerd lacks.
 */
export function sseWithinLimits(upstream: ReadableStream<Uint8Array>, limits: SseLimits): ReadableStream<Uint8Array> {
  const reader = upstream.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let finished = false;
  let idle: ReturnType<typeof setTimeout> | undefined;
  let life: ReturnType<typeof setTimeout> | undefined;
  let finish: (error?: Error) => void = () => undefined;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      finish = (error) => {
        if (finished) return;
        finished = true;
        clearTimeout(idle);
        clearTimeout(life);
        try {
          if (error === undefined) controller.close();
          else controller.error(error);
        } catch {
          // Already cancelled by its reader.
        }
        reader.cancel().catch(() => undefined);
        limits.ended();
      };
      const arm = () => {
        clearTimeout(idle);
        idle = setTimeout(() => finish(limits.cut("idle")), limits.idleMs);
      };
      life = setTimeout(() => finish(limits.cut("life")), limits.lifeMs);
      arm();
      let text = "";
      let data: string[] = [];
      let eventBytes = 0;
      let lastNewline = false;
      const emit = () => {
        if (data.length === 0) return;
        const joined = data.join("\n");
        data = [];
        let out = joined;
        if (joined.includes('"raw"')) {
          try {
            out = JSON.stringify(withoutRawParts(JSON.parse(joined)));
          } catch {
            // Not JSON: passed on as it is, for the SDK to refuse.
          }
        }
        controller.enqueue(encoder.encode(`data: ${out}\n\n`));
      };
      void (async () => {
        try {
          for (;;) {
            const chunk = await reader.read();
            if (finished) return;
            if (chunk.done) break;
            arm();
            // Bytes since the last blank line: an event that never ends is cut as soon as it passes the cap.
            for (const byte of chunk.value) {
              if (byte === 0x0a) {
                if (lastNewline) eventBytes = 0;
                lastNewline = true;
              } else if (byte !== 0x0d) {
                lastNewline = false;
                eventBytes += 1;
                if (eventBytes > limits.maxEventBytes) return finish(limits.cut("too_large"));
              }
            }
            text += decoder.decode(chunk.value, { stream: true });
            let newline: number;
            while ((newline = text.indexOf("\n")) >= 0) {
              const line = text.slice(0, newline).replace(/\r$/, "");
              text = text.slice(newline + 1);
              if (line === "") emit();
              else if (line.startsWith("data:")) data.push(line.slice(line.startsWith("data: ") ? 6 : 5));
            }
          }
          if (text.startsWith("data:")) data.push(text.slice(text.startsWith("data: ") ? 6 : 5));
          emit();
          finish();
        } catch (e) {
          finish(e instanceof Error ? e : new Error(String(e)));
        }
      })();
    },
    cancel() {
      finish();
    },
  });
}

/** The errors a body read fails with (the caller's own kinds). */
export interface ReadFailures {
  timeout: () => Error;
  tooLarge: () => Error;
  broken: (e: unknown) => Error;
}

/** The body read through a counting reader: tooLarge past `max` bytes, timeout when `signal` aborts first. */
export async function readWithin(response: Response, max: number, signal: AbortSignal, fail: ReadFailures): Promise<Uint8Array> {
  if (response.body === null) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  // The fetch's own signal should end the body too; this makes sure a stalled read does not outlive it.
  let timedOut: Error | null = null;
  let onAbort: () => void = () => undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject((timedOut = fail.timeout()));
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  aborted.catch(() => undefined);
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await Promise.race([reader.read(), aborted]);
      } catch (e) {
        if (e === timedOut) throw e;
        throw signal.aborted ? fail.timeout() : fail.broken(e);
      }
      if (chunk.done) break;
      total += chunk.value.byteLength;
      if (total > max) throw fail.tooLarge();
      chunks.push(chunk.value);
    }
  } catch (e) {
    await reader.cancel().catch(() => undefined);
    throw e;
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/** The URL of the card's JSON-RPC interface, chosen as the SDK's client factory chooses (a 1.0 one first). */
export function jsonRpcInterfaceOf(card: AgentCard): string | null {
  let chosen: { url: string; protocolVersion: string } | undefined;
  for (const i of Array.isArray(card.supportedInterfaces) ? card.supportedInterfaces : []) {
    if (typeof i?.protocolBinding !== "string" || i.protocolBinding.toUpperCase() !== "JSONRPC") continue;
    if (chosen === undefined || i.protocolVersion === "1.0") chosen = i;
  }
  return typeof chosen?.url === "string" && chosen.url !== "" ? chosen.url : null;
}
