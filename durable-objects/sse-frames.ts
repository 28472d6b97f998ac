/**
 * @module The SSE wire format of the two event streams (API.md "Events (SSE)"): runtime event frames with
 * `id: <wal_seq>` or `id: <wal_seq>.<k>`, the task stream's `end` frame, the session's `snapshot.updated`
 * frames, and the resume cursor the ids stand for. Encoded in the object, once per event for every subscriber.
 */
import { projectEvent, type WalEvent } from "../src/core/index.js";

/**
 * Where a task stream resumes: after runtime event `k` of WAL event `seq` (`Last-Event-ID: seq` is k = 0,
 * `seq.k` is k), or after every runtime event of WAL event `seq` (`k` null: `?after_seq=seq`, or the start at 0).
 */
export interface TaskCursor {
  readonly seq: number;
  readonly k: number | null;
}

/** The SSE id of runtime event `k` of WAL event `seq`. */
export function frameId(seq: number, k: number): string {
  return k === 0 ? String(seq) : `${seq}.${k}`;
}

/** The frames of one WAL event's runtime events, skipping those at or before index `skipThrough`. */
export function runtimeFrames(e: WalEvent, skipThrough = -1): string {
  let out = "";
  const events = projectEvent(e);
  for (let k = skipThrough + 1; k < events.length; k++) {
    const event = events[k]!;
    out += `id: ${frameId(e.wal_seq, k)}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
  }
  return out;
}

/** The task stream's last frame: the task is terminal, nothing follows. It carries no id (resume ids stay WAL ids). */
export function endFrame(status: string, walSeq: number): string {
  return `event: end\ndata: ${JSON.stringify({ reason: "task_terminal", status, wal_seq: walSeq })}\n\n`;
}

/** A session stream frame: one row of the session event log, its data stored as sent. */
export function snapshotFrame(seq: number, data: string): string {
  return `id: ${seq}\nevent: snapshot.updated\ndata: ${data}\n\n`;
}

/** `N` or `N.k` (k ≥ 1), digits only, no leading zeros: the ids the task stream sends. */
const TASK_EVENT_ID = /^(0|[1-9]\d{0,15})(?:\.([1-9]\d{0,5}))?$/;
/** `N`: the ids the session stream sends. */
const SESSION_EVENT_ID = /^(0|[1-9]\d{0,15})$/;

/** A task stream's Last-Event-ID as a cursor, or null when it is not an id this stream sends. */
export function parseTaskEventId(raw: string): TaskCursor | null {
  const m = TASK_EVENT_ID.exec(raw.trim());
  if (m === null) return null;
  const seq = Number(m[1]);
  if (!Number.isSafeInteger(seq)) return null;
  return { seq, k: m[2] === undefined ? 0 : Number(m[2]) };
}

/** A session stream's Last-Event-ID as the seq after which to resume, or null when malformed. */
export function parseSessionEventId(raw: string): number | null {
  const m = SESSION_EVENT_ID.exec(raw.trim());
  if (m === null) return null;
  const seq = Number(m[1]);
  return Number.isSafeInteger(seq) ? seq : null;
}
