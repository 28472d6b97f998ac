/** @module Normalized statuses of seed 001 for task statuses (native ones stay as native_status). */
import type { TaskStatus } from "./records.js";

/** Seed 001's normalized task statuses this runtime reports. */
export type NormalizedTaskStatus = "queued" | "running" | "blocked" | "completed" | "failed" | "cancelled" | "stale" | "unknown";

const TASK: Record<TaskStatus, NormalizedTaskStatus> = {
  pending: "queued",
  running: "running",
  blocked: "blocked",
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled",
};

/** The normalized status of a native task status (pending waits for scheduling: queued). */
export function normalizeTaskStatus(status: TaskStatus): NormalizedTaskStatus {
  return TASK[status];
}
