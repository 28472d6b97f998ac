/**
 * @module A task object's snapshot: its state at one wal_seq, written in the same transaction as the commit that
 * crosses the snapshot interval, so a restart replays only the WAL after it. The WAL stays the truth: a snapshot of
 * another format, one that fails its checksum or does not fit the WAL, is ignored and the whole WAL replayed.
 */
import { type DagSnapshot, type DagState, replay, restoreSnapshot, SNAPSHOT_FORMAT, takeSnapshot } from "../../../src/core/index.js";
import { textParts } from "./row-text.js";
import { lastStoredSeq, loadEvents, type Sql } from "./wal-store.js";

/** FNV-1a over the text's UTF-16 code units: a guard against a torn or altered snapshot, not against an attacker. */
export function checksumOf(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, "0");
}

/** Replaces the stored snapshot by one of `state` (the caller's transaction covers it with the commit). */
export function saveSnapshot(sql: Sql, state: DagState): void {
  const text = JSON.stringify(takeSnapshot(state));
  sql.exec("DELETE FROM snapshot_parts");
  sql.exec("DELETE FROM snapshots");
  // In parts that each fit a row (row-text.ts), never cut inside a surrogate pair.
  const parts = textParts(text);
  parts.forEach((data, part) => sql.exec("INSERT INTO snapshot_parts (part, data) VALUES (?, ?)", part, data));
  sql.exec("INSERT INTO snapshots (wal_seq, format, parts, length, checksum) VALUES (?, ?, ?, ?, ?)", state.last_wal_seq, SNAPSHOT_FORMAT, parts.length, text.length, checksumOf(text));
}

type SnapshotRow = { wal_seq: number; format: number; parts: number; length: number; checksum: string };

/** The stored snapshot (at `seq`), checked (format, parts, length, checksum, fit with the WAL), or why it cannot be used. */
function readSnapshot(sql: Sql): { snapshot: DagSnapshot; seq: number } | { problem: string; seq: number } | null {
  const row = sql.exec<SnapshotRow>("SELECT wal_seq, format, parts, length, checksum FROM snapshots").toArray()[0];
  if (row === undefined) return null;
  const problem = (text: string) => ({ problem: text, seq: row.wal_seq });
  if (row.format !== SNAPSHOT_FORMAT) return problem(`format ${row.format}, not ${SNAPSHOT_FORMAT}`);
  const parts = sql.exec<{ data: string }>("SELECT data FROM snapshot_parts ORDER BY part").toArray();
  if (parts.length !== row.parts) return problem(`${parts.length} of ${row.parts} parts`);
  const text = parts.map((p) => p.data).join("");
  if (text.length !== row.length || checksumOf(text) !== row.checksum) return problem("checksum mismatch");
  const last = lastStoredSeq(sql);
  if (row.wal_seq > last) return problem(`taken at wal_seq ${row.wal_seq}, past the WAL's ${last}`);
  try {
    const snapshot = JSON.parse(text) as DagSnapshot;
    if (snapshot.last_wal_seq !== row.wal_seq) return problem("its state is not at its wal_seq");
    return { snapshot, seq: row.wal_seq };
  } catch {
    return problem("not JSON");
  }
}

/**
 * The task's state from storage: the snapshot plus the WAL after it, or the whole WAL when there is no usable
 * snapshot (a problem is logged, never answered: the WAL alone is enough); with the stored snapshot's wal_seq
 * (0: none), usable or not, which the next snapshot is counted from. Throws when the WAL does not replay.
 */
export function loadState(sql: Sql): { state: DagState; snapshotSeq: number } {
  const found = readSnapshot(sql);
  const snapshotSeq = found?.seq ?? 0;
  if (found !== null && "snapshot" in found) {
    try {
      return { state: replay(loadEvents(sql, found.seq), restoreSnapshot(found.snapshot)), snapshotSeq };
    } catch (e) {
      logIgnored(`the WAL after it does not replay onto it: ${e instanceof Error ? e.message : String(e)}`);
    }
  } else if (found !== null) {
    logIgnored(found.problem);
  }
  return { state: replay(loadEvents(sql)), snapshotSeq };
}

function logIgnored(problem: string): void {
  console.error(JSON.stringify({ level: "warn", where: "task object: snapshot", message: `the snapshot was ignored and the whole WAL replayed: ${problem}` }));
}
