/** @module What one task's index entry adds to the session's task_summary counts (pure; kept by session-counts.ts). */
import type { IndexEntry, ListedTask } from "../../src/contract/index.js";

/** An entry that still shows held steps this long past its task's own next deadline is stale. */
export const STALE_GRACE_MS = 5_000;

/** The counts kept in the task_counts table (stale is not: it is read from the clock). */
/** `archived`: terminal tasks whose normalized status is archived (still counted terminal; the task list's totals). */
export const KEPT_COUNTS = ["active", "terminal", "failed", "lost", "waiting", "blocked", "held_up", "open_actions", "archived"] as const;
export type KeptCounts = Record<(typeof KEPT_COUNTS)[number], number>;
/** The counts the snapshot answers: the kept ones and `stale`. */
export type TaskCounts = KeptCounts & { stale: number };

// Frozen: countsOf(null) hands it out, and a caller adding into it would shift every later count.
const ZERO: Readonly<KeptCounts> = Object.freeze({ active: 0, terminal: 0, failed: 0, lost: 0, waiting: 0, blocked: 0, held_up: 0, open_actions: 0, archived: 0 });

/** How many actions of the task are open (0 for an entry pushed before actions existed). */
export function openActionCount(e: IndexEntry): number {
  return e.open_action_count ?? 0;
}

/** Held up: a live task listed under the snapshot's blockedTasks (blocked, with blocked or failed steps, or waiting on people). */
export function isHeldUp(e: IndexEntry): boolean {
  return !e.terminal && (e.native_status === "blocked" || e.step_counts.blocked + e.step_counts.failed > 0 || openActionCount(e) > 0);
}

/** When the entry turns stale (ms), null when it never does (no deadline). */
export function staleAtMs(e: IndexEntry): number | null {
  return e.next_deadline_at === null ? null : Date.parse(e.next_deadline_at) + STALE_GRACE_MS;
}

/** What one task adds to each kept count; all zero for no entry (a reservation). */
export function countsOf(e: IndexEntry | null): KeptCounts {
  if (e === null) return ZERO;
  const live = !e.terminal;
  return {
    active: live ? 1 : 0,
    terminal: live ? 0 : 1,
    failed: e.native_status === "failed" ? 1 : 0,
    lost: live && e.lost_attempts > 0 ? 1 : 0,
    waiting: live && (e.native_status === "pending" || openActionCount(e) > 0) ? 1 : 0,
    blocked: live && e.native_status === "blocked" ? 1 : 0,
    held_up: isHeldUp(e) ? 1 : 0,
    open_actions: live ? openActionCount(e) : 0,
    archived: !live && e.status === "archived" ? 1 : 0,
  };
}

/** The counts of a list of tasks, as the session's index holds them (the stale ones by their index_state). */
export function countTasks(rows: readonly ListedTask[]): TaskCounts {
  const total: TaskCounts = { ...ZERO, stale: 0 };
  for (const t of rows) {
    const c = countsOf(t);
    for (const k of KEPT_COUNTS) total[k] += c[k];
    if (t.index_state === "stale") total.stale += 1;
  }
  return total;
}

