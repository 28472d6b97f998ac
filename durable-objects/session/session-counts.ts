/**
 * @module The session's task_summary counts, kept in their own table and moved by each index change (the
 * difference between a task's previous entry and its new one), so the snapshot reads them instead of counting
 * rows. `stale` depends on the clock: each row keeps the time its entry turns stale (`stale_at_ms`, indexed),
 * and the count is a range over the overdue rows only.
 */
import type { IndexEntry } from "../../src/contract/index.js";
import { countsOf, KEPT_COUNTS, type KeptCounts, staleAtMs, type TaskCounts } from "./task-counts.js";

/**
 * Creates the counts table, the columns and indexes the snapshot reads by, and, for a session made before
 * them, fills the columns and counts once from the stored entries (no await: one implicit transaction).
 */
export function createCountTables(sql: SqlStorage): void {
  const present = new Set(sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('tasks')").toArray().map((c) => c.name));
  if (!present.has("stale_at_ms")) sql.exec("ALTER TABLE tasks ADD COLUMN stale_at_ms INTEGER");
  if (!present.has("held_up")) sql.exec("ALTER TABLE tasks ADD COLUMN held_up INTEGER NOT NULL DEFAULT 0");
  // The snapshot's reads: overdue entries, held-up tasks and live tasks in creation order.
  sql.exec("CREATE INDEX IF NOT EXISTS tasks_by_stale_at ON tasks (stale_at_ms) WHERE stale_at_ms IS NOT NULL");
  sql.exec("CREATE INDEX IF NOT EXISTS tasks_held_up ON tasks (held_up, seq)");
  sql.exec("CREATE INDEX IF NOT EXISTS tasks_by_state ON tasks (state, terminal, seq)");
  sql.exec(`CREATE TABLE IF NOT EXISTS task_counts (id INTEGER PRIMARY KEY CHECK (id = 1), ${KEPT_COUNTS.map((k) => `${k} INTEGER NOT NULL`).join(", ")})`);
  // A counts table made before archived tasks were counted: its column, filled from the stored entries.
  const counted = new Set(sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('task_counts')").toArray().map((c) => c.name));
  if (!counted.has("archived")) {
    sql.exec("ALTER TABLE task_counts ADD COLUMN archived INTEGER NOT NULL DEFAULT 0");
    sql.exec("UPDATE task_counts SET archived = (SELECT COUNT(*) FROM tasks WHERE terminal = 1 AND status = 'archived')");
  }
  if (sql.exec("SELECT 1 FROM task_counts").toArray().length > 0) return;
  const total = { ...countsOf(null) };
  for (const row of sql.exec<{ task_id: string; entry: string }>("SELECT task_id, entry FROM tasks WHERE entry IS NOT NULL")) {
    const entry = JSON.parse(row.entry) as IndexEntry;
    const c = countsOf(entry);
    for (const k of KEPT_COUNTS) total[k] += c[k];
    sql.exec("UPDATE tasks SET stale_at_ms = ?, held_up = ? WHERE task_id = ?", staleAtMs(entry), c.held_up, row.task_id);
  }
  sql.exec(`INSERT INTO task_counts (id, ${KEPT_COUNTS.join(", ")}) VALUES (1, ${KEPT_COUNTS.map(() => "?").join(", ")})`, ...KEPT_COUNTS.map((k) => total[k]));
}

/**
 * A task's entry went from `previous` (null: none yet) to `next`: its row's stale time and held-up mark follow,
 * and each count moves by the difference. Called with the row's write, no await between.
 */
export function recordEntryChange(sql: SqlStorage, previous: IndexEntry | null, next: IndexEntry): void {
  const before = countsOf(previous);
  const after = countsOf(next);
  sql.exec("UPDATE tasks SET stale_at_ms = ?, held_up = ? WHERE task_id = ?", staleAtMs(next), after.held_up, next.task_id);
  const moved = KEPT_COUNTS.filter((k) => after[k] !== before[k]);
  if (moved.length === 0) return;
  sql.exec(`UPDATE task_counts SET ${moved.map((k) => `${k} = ${k} + ?`).join(", ")} WHERE id = 1`, ...moved.map((k) => after[k] - before[k]));
}

/** A task's entry was removed (retention): each count moves back by what `previous` added. Called with the row's delete, no await between. */
export function recordEntryRemoved(sql: SqlStorage, previous: IndexEntry | null): void {
  const before = countsOf(previous);
  const moved = KEPT_COUNTS.filter((k) => before[k] !== 0);
  if (moved.length === 0) return;
  sql.exec(`UPDATE task_counts SET ${moved.map((k) => `${k} = ${k} - ?`).join(", ")} WHERE id = 1`, ...moved.map((k) => before[k]));
}

/** The counts at `now`: the kept ones, and the entries overdue then (a range of the stale_at_ms index). */
export function readCounts(sql: SqlStorage, now: number): TaskCounts {
  const kept = sql.exec<KeptCounts>(`SELECT ${KEPT_COUNTS.join(", ")} FROM task_counts WHERE id = 1`).one();
  const stale = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM tasks WHERE stale_at_ms < ?", now).one().n;
  return { ...kept, stale };
}
