/** @module Normalized statuses of tasks, steps and attempts (docs/model.md); native statuses stay as native_status. */
import type { ActionKind, AttemptStatus, Step, StepStatus, TaskStatus } from "./records.js";
import type { DagState } from "./state.js";

/** The normalized statuses runtime events and read models use. */
export type NormalizedStatus =
  | "queued" | "preparing" | "running" | "waiting_input" | "waiting_permission" | "blocked" | "paused" | "retrying" | "cancelling" | "cancelled"
  | "timed_out" | "failed" | "lost" | "completed" | "archived" | "stale" | "unknown";

/** Normalized status of a native step status (claimed: a worker holds it but has not started: preparing). */
export const STEP_STATUS_MAP: Record<StepStatus, NormalizedStatus> = {
  pending: "queued",
  ready: "queued",
  claimed: "preparing",
  running: "running",
  blocked: "blocked",
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled",
};

/** Normalized status of an attempt (a lease that expired is lost; a worker timeout is timed_out). */
export const ATTEMPT_STATUS_MAP: Record<AttemptStatus, NormalizedStatus> = {
  active: "running",
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled",
  blocked: "blocked",
  lost: "lost",
  timed_out: "timed_out",
};

/** Normalized status of a native task status. */
export const TASK_STATUS_MAP: Record<TaskStatus, NormalizedStatus> = {
  pending: "queued",
  running: "running",
  blocked: "blocked",
  paused: "paused",
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled",
};

/** Normalized statuses a task index entry may show (stale: the entry may lag its task). */
export type NormalizedTaskStatus = NormalizedStatus;

/** The normalized status of a native task status (pending waits for scheduling: queued). */
export function normalizeTaskStatus(status: TaskStatus): NormalizedStatus {
  return TASK_STATUS_MAP[status];
}

/** What an open action of this kind makes its step or task wait for: a permission, or input. */
export const WAITING_STATUS: Record<ActionKind, NormalizedStatus> = { approval: "waiting_permission", input: "waiting_input" };

/**
 * A step's normalized status from its facts: waiting for a person while an action on it is open, retrying while a
 * retry its policy scheduled is pending, else the map of its native status.
 */
export function normalizedStepStatus(state: DagState, step: Step): NormalizedStatus {
  const actionId = state.index.stepActions.get(step.step_id);
  if (actionId !== undefined) return WAITING_STATUS[state.actions.get(actionId)!.kind];
  if (step.retry_at !== null) return "retrying";
  return STEP_STATUS_MAP[step.status];
}

/**
 * The task's normalized status: an archived task is archived (it keeps its native terminal status); a live task with
 * an open task-level action waits for a person (approval before input: permission gates the work); otherwise the map
 * of its native status.
 */
export function normalizedTaskStatus(state: DagState): NormalizedStatus {
  const task = state.task!;
  if (task.archived_at !== null) return "archived";
  if (task.status === "pending" || task.status === "running" || task.status === "blocked") {
    let waiting: NormalizedStatus | null = null;
    for (const id of state.index.openActions) {
      const action = state.actions.get(id)!;
      if (action.step_id !== null) continue;
      if (action.kind === "approval") return "waiting_permission";
      waiting = "waiting_input";
    }
    if (waiting !== null) return waiting;
  }
  // Held by a `blocks` link of the session's graph until its blockers complete.
  if ((task.status === "pending" || task.status === "running") && (task.blocked_by?.length ?? 0) > 0) return "blocked";
  return TASK_STATUS_MAP[task.status];
}
