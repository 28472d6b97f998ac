/**
 * @module The reads behind the session snapshot: the kept counts (session-counts.ts) and bounded lists, each an
 * index search capped by its list's size, so the snapshot's cost does not grow with the session.
 */
import type { SnapshotListPage } from "../../src/contract/index.js";
import { readCounts } from "./session-counts.js";
import { listedTask, RECENT_TERMINAL, SNAPSHOT_ACTION_IDS, SNAPSHOT_BLOCKED_TASKS, SNAPSHOT_TASKS, type SnapshotParts } from "./session-snapshot.js";

/** A capped list's page: `next` only while it holds fewer than there are. */
function page(listed: number, total: number, next: string): SnapshotListPage {
  return { listed, total, next: listed < total ? next : null };
}

/**
 * Reads the snapshot's parts: every statement is an index search bounded by a list's cap (the stale count
 * reads the overdue rows only). `blockedAfter`: the seq the previous page of held-up tasks ended at.
 */
export function readSnapshotParts(sql: SqlStorage, session: { session_id: string; created_at: string }, now: number, blockedAfter = 0): SnapshotParts {
  const counts = readCounts(sql, now);
  const entries = (query: string, ...args: (string | number)[]) => sql.exec<{ entry: string }>(query, ...args).toArray().map((r) => listedTask(r.entry, now));
  const tasks = entries("SELECT entry FROM tasks WHERE state = 'confirmed' AND terminal = 0 ORDER BY seq LIMIT ?", SNAPSHOT_TASKS);
  // One row past the cap says whether a next page exists.
  const heldRows = sql.exec<{ entry: string; seq: number }>("SELECT entry, seq FROM tasks WHERE held_up = 1 AND seq > ? ORDER BY seq LIMIT ?", blockedAfter, SNAPSHOT_BLOCKED_TASKS + 1).toArray();
  const more = heldRows.length > SNAPSHOT_BLOCKED_TASKS;
  if (more) heldRows.pop();
  const blocked = heldRows.map((r) => {
    const task = listedTask(r.entry, now);
    const ids = sql.exec<{ action_id: string }>("SELECT action_id FROM actions WHERE task_id = ? ORDER BY created_at, action_id LIMIT ?", task.task_id, SNAPSHOT_ACTION_IDS);
    return { task, actionIds: ids.toArray().map((a) => a.action_id) };
  });
  const recentTerminal = entries("SELECT entry FROM tasks WHERE terminal = 1 ORDER BY updated_at DESC LIMIT ?", RECENT_TERMINAL);
  const latestActive = sql.exec<{ at: string }>("SELECT updated_at AS at FROM tasks WHERE terminal = 0 AND updated_at IS NOT NULL ORDER BY updated_at DESC LIMIT 1").toArray()[0]?.at;
  const updatedAt = [latestActive, recentTerminal[0]?.updated_at].reduce<string>((a, b) => (b !== undefined && b > a ? b : a), session.created_at);
  const base = `/v1/sessions/${encodeURIComponent(session.session_id)}`;
  return {
    counts,
    updatedAt,
    tasks,
    blocked,
    recentTerminal,
    pages: {
      tasks: page(tasks.length, counts.active, `${base}/tasks?offset=${tasks.length}&limit=${SNAPSHOT_TASKS}`),
      blockedTasks: { listed: blocked.length, total: counts.held_up, next: more ? `${base}?blocked_after=${heldRows.at(-1)!.seq}` : null },
      recentTerminal: page(recentTerminal.length, counts.terminal, `${base}/tasks?include_terminal=true&include_archived=true&offset=${counts.active + recentTerminal.length}`),
    },
  };
}
