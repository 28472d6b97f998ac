/** @module What a task object tells its session's index about the task: the contract's IndexEntry, the row task_list pages through. */
import type { IndexEntry } from "../src/contract/index.js";
import { type DagState, isTerminalTask, nextDeadline, normalizeTaskStatus } from "../src/core/index.js";

/** The index entry of a DAG that has a task. */
export function indexEntryOf(state: DagState): IndexEntry {
  const task = state.task!;
  let lost = 0;
  for (const a of state.attempts.values()) if (a.status === "lost") lost += 1;
  const deadline = nextDeadline(state);
  return {
    task_id: task.task_id,
    wal_name: task.wal_name,
    title: task.title,
    native_status: task.status,
    status: normalizeTaskStatus(task.status),
    step_counts: { ...state.index.statusCounts },
    total_steps: state.steps.size,
    active_runs: state.index.activeRuns.size,
    lost_attempts: lost,
    terminal: isTerminalTask(task),
    created_at: task.created_at,
    updated_at: task.updated_at,
    wal_seq: state.last_wal_seq,
    next_deadline_at: deadline === null ? null : new Date(deadline).toISOString(),
  };
}
