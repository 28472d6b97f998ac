/**
 * @module The names of WAL events and of runtime events as plain lists, so a browser reads them without zod.
 * The WAL schema (../schemas/wal-events.ts) and the runtime-event schema are checked against them.
 */

/** Every WAL event type, in the order the WAL event schema lists them. */
export const WAL_EVENT_TYPES = [
  "task_created", "task_updated", "task_running", "task_blocked", "task_reopened", "task_completed", "task_failed",
  "task_cancelled", "task_step_ready", "task_step_pending", "task_step_claimed", "task_step_started",
  "task_step_updated", "task_step_blocked", "task_step_completed", "task_step_failed", "task_step_cancelled",
  "task_step_reopened", "task_step_lease_expired", "task_paused", "task_resumed", "action_requested",
  "action_resolved", "step_delegated", "delegation_updated", "delegation_try_failed", "delegation_cancel_requested",
  "delegation_settled", "delegation_closed", "webhook_deliveries_queued", "webhook_deliveries_tried", "webhook_delivery_retried", "task_delivery_recorded", "task_progress", "worker_dispatched",
  "worker_run_cancel_requested", "child_agent_cancel_timeout", "worker_run_ended", "task_blockers_updated",
  "task_archived",
] as const;

/** The envelope version of the runtime events this runtime emits. */
export const RUNTIME_EVENT_SCHEMA_VERSION = "0.4.0";

/** The runtime event types the WAL projection emits. */
export const RUNTIME_EVENT_TYPES = [
  "task.created", "task.accepted", "task.queued", "task.started", "task.updated", "task.progress", "task.waiting",
  "task.blocked", "task.resumed", "task.retrying", "task.cancel_requested", "task.cancelled", "task.timed_out",
  "task.failed", "task.lost", "task.completed", "task.delegated", "task.dependency.updated",
  "task.attempt.started", "task.attempt.completed", "task.attempt.failed",
  "subagent.spawned", "subagent.completed", "subagent.failed", "subagent.closed", "subagent.status",
  "task.paused", "action.required", "action.resolved", "task.archived",
] as const;
