/** @module Seed 001's normalized statuses for tasks, steps and attempts; native statuses stay as native_status. */
import type { AttemptStatus, StepStatus, TaskStatus } from "./records.js";

/** Seed 001's normalized statuses used on runtime events. */
export type NormalizedStatus =
  | "queued" | "preparing" | "running" | "blocked" | "retrying" | "cancelling" | "cancelled" | "timed_out" | "failed" | "lost" | "completed" | "unknown";

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
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled",
};

/** Normalized statuses a task index entry may show (stale: the entry may lag its task). */
export type NormalizedTaskStatus = (typeof TASK_STATUS_MAP)[TaskStatus] | "stale" | "unknown";

/** The normalized status of a native task status (pending waits for scheduling: queued). */
export function normalizeTaskStatus(status: TaskStatus): NormalizedStatus {
  return TASK_STATUS_MAP[status];
}
