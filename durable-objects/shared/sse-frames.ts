/**
 * @module The SSE wire format of the two event streams (docs/protocols/sse.md): runtime event frames whose
 * `id:` is the event's `sequence`, the task stream's `end` frame, the session's `snapshot.updated` frames, and
 * the resume cursor an id stands for. Encoded in the object, once per event for every subscriber.
 */
import { projectEvent, sequencePosition, type WalEvent } from "../../src/core/index.js";

/**
 * Where a task stream resumes: after runtime event `k` of WAL event `seq` (`Last-Event-ID: <sequence>` is
 * seq = ⌊sequence / SEQUENCE_STRIDE⌋ and k = sequence mod SEQUENCE_STRIDE), or after every runtime event of
 * WAL event `seq` (`k` null: `?after_seq=seq`, or the start at 0).
 */
export interface TaskCursor {
  readonly seq: number;
  readonly k: number | null;
}

/** The frames of one WAL event's runtime events, skipping those at or before index `skipThrough`. */
export function runtimeFrames(e: WalEvent, skipThrough = -1): string {
  let out = "";
  const events = projectEvent(e);
  for (let k = skipThrough + 1; k < events.length; k++) {
    const event = events[k]!;
    // The id is the event's own sequence, so a client may resume or de-duplicate by either.
    out += `id: ${event.sequence}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
  }
  return out;
}

/** The task stream's last frame: the task is terminal, nothing follows. It carries no id (it is no runtime event). */
export function endFrame(status: string, walSeq: number): string {
  return `event: end\ndata: ${JSON.stringify({ reason: "task_terminal", status, wal_seq: walSeq })}\n\n`;
}

/**
 * The last frame of a stream opened with a worker run's token once that run has ended: the token reads nothing
 * more (a reconnect is 401 run_ended). An `end` frame, so clients stop rather than reconnect; no id.
 */
export function runEndedFrame(runId: string, status: string, walSeq: number): string {
  return `event: end\ndata: ${JSON.stringify({ reason: "run_ended", run_id: runId, status, wal_seq: walSeq })}\n\n`;
}

/** A session stream frame: one row of the session event log, its data stored as sent. */
export function snapshotFrame(seq: number, data: string): string {
  return `id: ${seq}\nevent: snapshot.updated\ndata: ${data}\n\n`;
}

/** `N`, digits only, no leading zeros: the ids both streams send (a runtime event's `sequence`, a session log seq). */
const EVENT_ID = /^(0|[1-9]\d{0,15})$/;
/**
 * `N.k` (k ≥ 1): the id the task stream gave WAL event N's k-th follow-up before ids were sequences. Still
 * accepted, so a client that was mid-stream across that deploy resumes exactly; no longer sent.
 */
const LEGACY_TASK_EVENT_ID = /^(0|[1-9]\d{0,15})\.([1-9]\d{0,5})$/;

/** A task stream's Last-Event-ID (a sequence, or a legacy `N.k`) as a cursor, or null when it is neither. */
export function parseTaskEventId(raw: string): TaskCursor | null {
  const id = raw.trim();
  const legacy = LEGACY_TASK_EVENT_ID.exec(id);
  if (legacy !== null) {
    const seq = Number(legacy[1]);
    return Number.isSafeInteger(seq) ? { seq, k: Number(legacy[2]) } : null;
  }
  const sequence = parseNumericId(id);
  if (sequence === null) return null;
  const { walSeq, k } = sequencePosition(sequence);
  return { seq: walSeq, k };
}

/** A session stream's Last-Event-ID as the seq after which to resume, or null when malformed. */
export function parseSessionEventId(raw: string): number | null {
  return parseNumericId(raw.trim());
}

/** An `N` id as a safe integer, or null. */
function parseNumericId(id: string): number | null {
  const m = EVENT_ID.exec(id);
  if (m === null) return null;
  const n = Number(m[1]);
  return Number.isSafeInteger(n) ? n : null;
}
