/** @module What a task object tells its session's index about the task: the contract's IndexEntry (the row task_list pages through) with the task's open actions. */
import { type Action, type DagState, isTerminalTask, nextDeadline, normalizedTaskStatus } from "../../src/core/index.js";
import { type IndexEntryWithActions, MAX_ENTRY_OPEN_ACTIONS } from "./open-actions.js";

/**
 * The index entry of a DAG that has a task; `status` is the normalized one, so paused and waiting tasks show as
 * such. With `withActions`, the task's open actions too (the oldest MAX_ENTRY_OPEN_ACTIONS).
 */
export function indexEntryOf(state: DagState, withActions = true): IndexEntryWithActions {
  const task = state.task!;
  let lost = 0;
  for (const a of state.attempts.values()) if (a.status === "lost") lost += 1;
  const deadline = nextDeadline(state);
  return {
    task_id: task.task_id,
    wal_name: task.wal_name,
    title: task.title,
    native_status: task.status,
    status: normalizedTaskStatus(state),
    step_counts: { ...state.index.statusCounts },
    total_steps: state.steps.size,
    active_runs: state.index.activeRuns.size,
    lost_attempts: lost,
    terminal: isTerminalTask(task),
    created_at: task.created_at,
    updated_at: task.updated_at,
    wal_seq: state.last_wal_seq,
    next_deadline_at: deadline === null ? null : new Date(deadline).toISOString(),
    ...(withActions ? { open_actions: oldestOpenActions(state) } : {}),
    open_action_count: state.index.openActions.size,
    origin_client_agent_id: task.origin?.client_agent_id ?? null,
    thread_id: task.thread_id ?? null,
    parent_task_id: task.parent_task_id ?? null,
    root_task_id: task.root_task_id ?? null,
    ...sourceTasksOf(task),
    // A child task's link to the step that delegated it, and whether its result reached that parent.
    ...(task.delegated_from === null ? {} : { delegated_from: { ...task.delegated_from }, delivery_state: task.delivery_state }),
  };
}

/** The tasks the record's relationships name as sources, only when there are any (entries stay small). */
function sourceTasksOf(task: NonNullable<DagState["task"]>): { source_task_ids?: string[] } {
  const ids = (task.relationships ?? []).filter((r) => r.kind === "source_task").map((r) => r.task_id);
  return ids.length === 0 ? {} : { source_task_ids: ids };
}

/** The task's open actions, oldest first (the order they were asked), at most MAX_ENTRY_OPEN_ACTIONS. */
function oldestOpenActions(state: DagState): Action[] {
  const open: Action[] = [];
  for (const id of state.index.openActions) {
    if (open.length === MAX_ENTRY_OPEN_ACTIONS) break;
    open.push(structuredClone(state.actions.get(id)!));
  }
  return open;
}

/**
 * Which open actions the task has, as a value that changes exactly when that set does: every change asks one
 * (the count of actions ever asked grows) or resolves one (the open count falls against it), and neither
 * count ever goes back. Cheap enough to compare after every commit.
 */
export function openActionsVersion(state: DagState): string {
  return `${state.actions.size}/${state.index.openActions.size}`;
}
