/**
 * @module The WAL export read with the WAL schema: every line must be an event `WalEventSchema` accepts, and the
 * lines must fit together (events/wal-jsonl.ts); every failure names its 1-based line number.
 */
import { readWalJsonlLines, replayWalLines, type WalLine, type WalLineCheck } from "../events/wal-jsonl.js";
import type { WalEvent } from "../events/events.js";
import type { DagState } from "../model/state.js";
import { WalEventSchema } from "./wal-events.js";

function describeIssues(issues: readonly { path: readonly PropertyKey[]; message: string }[]): string {
  return issues
    .slice(0, 5)
    .map((i) => (i.path.length === 0 ? i.message : `${i.path.map(String).join(".")}: ${i.message}`))
    .join("; ");
}

/** A line checked against the whole WAL event schema, as stored rows are. */
const schemaCheck: WalLineCheck = (value) => {
  const parsed = WalEventSchema.safeParse(value);
  return parsed.success ? { event: parsed.data } : { problem: describeIssues(parsed.error.issues), cause: parsed.error };
};

/**
 * Parses a `.wal.jsonl` text into events with their line numbers. Each line must be a JSON object that
 * `WalEventSchema` accepts; `wal_seq` must run 1, 2, 3, … with no gap; every line names the first line's
 * session and task. Trailing empty lines are allowed (a final newline); an empty line inside is not.
 */
export function parseWalJsonlLines(text: string): WalLine[] {
  return readWalJsonlLines(text, schemaCheck);
}

/** Parses a `.wal.jsonl` text into its events (see `parseWalJsonlLines`); throws a WalJsonlError naming the line. */
export function parseWalJsonl(text: string): WalEvent[] {
  return parseWalJsonlLines(text).map((l) => l.event);
}

/**
 * Parses and replays a `.wal.jsonl` text into a DAG. An event that does not fit the DAG built so far
 * (an unknown step or run, a second task_created) is a WalJsonlError naming its line.
 */
export function replayWalJsonl(text: string): DagState {
  return replayWalLines(parseWalJsonlLines(text));
}
