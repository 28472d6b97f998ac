/**
 * @module The session object's benchmark hooks, served only by the bench routes (routes/rest/bench.ts: the Worker's
 * BENCH_SEED var set to "1" and the admin token): index rows seeded in bulk, copied from a real task's row, for
 * session sizes that creating through the API would take too long to reach; and how many requests carrying index
 * entries the object took since it started.
 */
import type { IndexEntry } from "../../src/contract/index.js";
import { runtimeError } from "../../src/core/index.js";
import { err, ok, type RpcResult } from "../shared/rpc-result.js";
import { recordEntryChange } from "./session-counts.js";

/** Index rows one seed call inserts at most: one call is one storage transaction. */
export const MAX_SEED_ROWS = 20_000;

/** What a seed call did: rows inserted, and the confirmed tasks the index holds now. */
export interface SeedResult { seeded: number; tasks: number }

/**
 * Inserts `count` confirmed index rows `${prefix}000000`, … copied from task `templateTaskId`'s row (its entry with
 * the new task_id, wal_name and, for a root task, root_task_id), as upsertTask stores a task's first push. The seeded
 * tasks have no task object: only reads of the index (snapshot, list, graph) see them. No await: one transaction.
 */
export function seedIndexRows(sql: SqlStorage, templateTaskId: string, count: number, prefix: string): RpcResult<SeedResult> {
  const template = sql.exec<{ entry: string | null }>("SELECT entry FROM tasks WHERE task_id = ? AND state = 'confirmed'", templateTaskId).toArray()[0];
  if (template?.entry == null) return err(runtimeError("not_found", `no confirmed task ${templateTaskId} to copy`, { task_id: templateTaskId }));
  const entry = JSON.parse(template.entry) as IndexEntry;
  let seq = sql.exec<{ n: number }>("SELECT COALESCE(MAX(seq), 0) AS n FROM tasks").one().n;
  const now = Date.now();
  for (let i = 0; i < count; i++) {
    const taskId = `${prefix}${String(i).padStart(6, "0")}`;
    const rootTaskId = entry.root_task_id === entry.task_id ? taskId : (entry.root_task_id ?? null);
    const copy = { ...entry, task_id: taskId, wal_name: taskId, ...(entry.root_task_id === undefined ? {} : { root_task_id: rootTaskId }) };
    sql.exec(
      "INSERT INTO tasks (task_id, wal_name, state, reserved_at_ms, entry, terminal, native_status, status, updated_at, origin_client_agent_id, thread_id, parent_task_id, root_task_id, seq) VALUES (?, ?, 'confirmed', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      taskId, taskId, now, JSON.stringify(copy), entry.terminal ? 1 : 0, entry.native_status, entry.status, entry.updated_at,
      entry.origin_client_agent_id ?? null, entry.thread_id ?? null, entry.parent_task_id ?? null, rootTaskId, ++seq,
    );
    // Counted as a first push is, so the snapshot's kept counts include the seeded tasks.
    recordEntryChange(sql, null, copy);
  }
  const tasks = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM tasks WHERE state = 'confirmed'").one().n;
  return ok({ seeded: count, tasks });
}

/** Requests the object took since it started, by kind: cheap enough to count on every request. */
export class RequestCounts {
  private readonly since = Date.now();
  private readonly counts: Record<string, number> = {};

  add(kind: string): void {
    this.counts[kind] = (this.counts[kind] ?? 0) + 1;
  }

  read(): { since: string; counts: Record<string, number> } {
    return { since: new Date(this.since).toISOString(), counts: { ...this.counts } };
  }
}
