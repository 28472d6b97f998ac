/**
 * @module WAL export format: JSON Lines, one WAL event per line in `wal_seq` order (`<wal_name>.wal.jsonl`).
 * Reading checks each line with a given check and that the lines fit together; every failure names its 1-based
 * line number. The service and the tools check lines with the WAL schema (../schemas/wal-jsonl.ts); a browser
 * with the envelope check (wal-envelope.ts). Pure: text in, events or state out.
 */
import { apply } from "../apply/apply.js";
import type { WalEvent } from "./events.js";
import { type DagState, emptyState } from "../model/state.js";

/** A WAL export that cannot be read back: `line` is the 1-based line of the first problem (0: the file as a whole). */
export class WalJsonlError extends Error {
  override readonly name = "WalJsonlError";

  constructor(
    readonly line: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(line > 0 ? `line ${line}: ${message}` : message, options);
  }
}

/** One parsed line: the event and the line it came from. */
export interface WalLine {
  readonly line: number;
  readonly event: WalEvent;
}

/** How one line's JSON value is checked: the event it is, or what is wrong with it (and the error that said so). */
export type WalLineCheck = (value: unknown) => { readonly event: WalEvent } | { readonly problem: string; readonly cause?: unknown };

/**
 * Reads a `.wal.jsonl` text into events with their line numbers. Each line must be a JSON object that `check`
 * accepts; `wal_seq` must run 1, 2, 3, … with no gap; every line names the first line's session and task.
 * Trailing empty lines are allowed (a final newline); an empty line inside is not.
 */
export function readWalJsonlLines(text: string, check: WalLineCheck): WalLine[] {
  const rows = text.split("\n").map((row) => (row.endsWith("\r") ? row.slice(0, -1) : row));
  while (rows.length > 0 && rows[rows.length - 1]!.trim() === "") rows.pop();
  const out: WalLine[] = [];
  rows.forEach((row, i) => {
    const line = i + 1;
    if (row.trim() === "") throw new WalJsonlError(line, "empty line inside the WAL (one event per line, no gaps)");
    let value: unknown;
    try {
      value = JSON.parse(row);
    } catch (cause) {
      throw new WalJsonlError(line, `not valid JSON (${cause instanceof Error ? cause.message : String(cause)})`, { cause });
    }
    const checked = check(value);
    if (!("event" in checked)) throw new WalJsonlError(line, `not a WAL event: ${checked.problem}`, { cause: checked.cause });
    const event = checked.event;
    const expected = out.length + 1;
    if (event.wal_seq !== expected) {
      const missing = event.wal_seq - 1 === expected ? `event ${expected} is missing` : `events ${expected}..${event.wal_seq - 1} are missing`;
      const what = event.wal_seq > expected ? `a gap: ${missing}` : "out of order or repeated";
      throw new WalJsonlError(line, `wal_seq ${event.wal_seq} where ${expected} was expected (${what})`);
    }
    const first = out[0]?.event;
    if (first !== undefined && (event.session_id !== first.session_id || event.task_id !== first.task_id)) {
      throw new WalJsonlError(line, `event of ${event.session_id}/${event.task_id} in the WAL of ${first.session_id}/${first.task_id}`);
    }
    out.push({ line, event });
  });
  return out;
}

/**
 * Replays read lines into a DAG. An event that does not fit the DAG built so far (an unknown step or run, a
 * second task_created) is a WalJsonlError naming its line.
 */
export function replayWalLines(lines: readonly WalLine[]): DagState {
  if (lines.length === 0) throw new WalJsonlError(0, "the WAL is empty: it must start with task_created");
  const state = emptyState();
  for (const { line, event } of lines) {
    try {
      apply(state, event);
    } catch (cause) {
      throw new WalJsonlError(line, `event does not fit the WAL before it: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    }
  }
  return state;
}

/** Serialises events as JSON Lines, one per line, with a final newline. */
export function toWalJsonl(events: Iterable<WalEvent>): string {
  let text = "";
  for (const event of events) text += `${JSON.stringify(event)}\n`;
  return text;
}
