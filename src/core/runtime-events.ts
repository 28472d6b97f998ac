/**
 * @module Runtime events: a pure projection of WAL events (seed 003 names) into the portable envelope of the
 * Agent Runtime draft (seeds 001/004: `task.created`, `task.attempt.started`, …). One WAL event gives one or
 * more runtime events; the k-th carries `sequence` = wal_seq * SEQUENCE_STRIDE + k (runtime-sequence.ts), so
 * sequences strictly increase along the WAL and each names one event. Nothing is inferred beyond what the event says.
 *
 * | WAL event                | runtime events                                                       |
 * |--------------------------|----------------------------------------------------------------------|
 * | task_created             | task.created, task.accepted                                          |
 * | task_updated             | task.dependency.updated (only dependency ops) or task.updated        |
 * | task_running             | task.started                                                         |
 * | task_blocked             | task.blocked                                                         |
 * | task_reopened            | task.resumed                                                         |
 * | task_completed/failed/cancelled | task.completed / task.failed / task.cancelled                 |
 * | task_step_ready          | task.queued (step)                                                   |
 * | task_step_pending        | task.waiting (step, on dependencies)                                 |
 * | task_step_claimed        | task.attempt.started                                                 |
 * | task_step_started/updated| task.progress (step)                                                 |
 * | task_step_blocked        | task.blocked (step; its attempt ends blocked)                        |
 * | task_step_completed      | task.attempt.completed (or task.updated when no attempt was open)    |
 * | task_step_failed         | task.attempt.failed (+ task.timed_out for worker_timeout), or task.updated with no attempt |
 * | task_step_cancelled      | task.attempt.failed with status cancelled, or task.updated           |
 * | task_step_reopened       | task.retrying (step)                                                 |
 * | task_step_lease_expired  | task.lost (step, attempt lost)                                       |
 * | task_progress            | task.progress                                                        |
 * | worker_dispatched        | task.delegated, subagent.spawned                                     |
 * | worker_run_ended         | finished: subagent.completed; cancelled: task.cancel_requested (unless requested earlier or a late result), subagent.closed; timed_out: subagent.failed |
 * | worker_run_cancel_requested | task.cancel_requested (status cancelling, with the cancellation deadline)   |
 * | child_agent_cancel_timeout  | subagent.status (status unknown: the run never confirmed it stopped)        |
 */
import { z } from "zod";
import type { WalEvent, WalEventOf } from "./events.js";
import { ATTEMPT_STATUS_MAP, TASK_STATUS_MAP } from "./normalize.js";
import { runtimeSequence } from "./runtime-sequence.js";

/** The envelope version this runtime emits. */
export const RUNTIME_EVENT_SCHEMA_VERSION = "0.4.0";

/** The runtime event types this projection emits. */
export const RUNTIME_EVENT_TYPES = [
  "task.created", "task.accepted", "task.queued", "task.started", "task.updated", "task.progress", "task.waiting",
  "task.blocked", "task.resumed", "task.retrying", "task.cancel_requested", "task.cancelled", "task.timed_out",
  "task.failed", "task.lost", "task.completed", "task.delegated", "task.dependency.updated",
  "task.attempt.started", "task.attempt.completed", "task.attempt.failed",
  "subagent.spawned", "subagent.completed", "subagent.failed", "subagent.closed", "subagent.status",
] as const;

/** The envelope of a runtime event (our own schema; the draft's published JSON Schema is the contract it must meet). */
export const RuntimeEventSchema = z.object({
  type: z.enum(RUNTIME_EVENT_TYPES),
  eventId: z.string().min(1),
  timestamp: z.string(),
  sequence: z.number().int().nonnegative(),
  schemaVersion: z.string(),
  sessionId: z.string().min(1),
  taskId: z.string().min(1),
  stepId: z.string().min(1).optional(),
  runId: z.string().min(1).optional(),
  attemptId: z.string().min(1).optional(),
  subagentId: z.string().min(1).optional(),
  nativeStatus: z.string().optional(),
  status: z.string().optional(),
  statusReason: z.string().optional(),
  phase: z.string().optional(),
  worker: z.record(z.string(), z.unknown()).optional(),
  taskProgress: z.record(z.string(), z.unknown()).optional(),
  payload: z.record(z.string(), z.unknown()),
  refs: z.record(z.string(), z.unknown()).optional(),
});
/** A runtime event. */
export type RuntimeEvent = z.infer<typeof RuntimeEventSchema>;

type Fields = Omit<RuntimeEvent, "eventId" | "timestamp" | "sequence" | "schemaVersion" | "sessionId" | "taskId" | "payload"> & {
  payload?: Record<string, unknown>;
};

const DEPENDENCY_OPS: ReadonlySet<string> = new Set(["add_dependency", "remove_dependency"]);

/** Drops undefined fields, so the envelope carries only the ids that apply. */
function compact<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== null)) as T;
}

function stepFields(e: WalEvent): { stepId?: string } {
  return e.step_id === null ? {} : { stepId: e.step_id };
}

/** The runtime events of one WAL event, in order (fewer than SEQUENCE_STRIDE of them). */
export function projectEvent(e: WalEvent): RuntimeEvent[] {
  const out: Fields[] = [];
  const actor = { actorAgentId: e.actor_agent_id, ...(e.actor_run_id === null ? {} : { actorRunId: e.actor_run_id }) };
  switch (e.event_type) {
    case "task_created": {
      const p = e.payload;
      const task = { title: p.task.title, summary: p.task.summary, walName: p.task.wal_name, stepIds: p.steps.map((s) => s.step_id), stepCount: p.steps.length };
      out.push({ type: "task.created", nativeStatus: "pending", status: "queued", payload: { ...task, ...actor } });
      out.push({ type: "task.accepted", nativeStatus: "pending", status: "queued", payload: { ...actor } });
      break;
    }
    case "task_updated": {
      const onlyDeps = e.payload.ops.every((op) => DEPENDENCY_OPS.has(op.op));
      out.push({
        type: onlyDeps ? "task.dependency.updated" : "task.updated",
        payload: { ops: e.payload.ops, updatedAfterDispatch: e.payload.updated_after_dispatch, ...actor },
      });
      break;
    }
    case "task_running":
      out.push({ type: "task.started", nativeStatus: "running", status: "running", payload: {} });
      break;
    case "task_blocked":
    case "task_reopened":
    case "task_completed":
    case "task_failed":
    case "task_cancelled": {
      const to = { task_blocked: ["task.blocked", "blocked"], task_reopened: ["task.resumed", "pending"], task_completed: ["task.completed", "completed"], task_failed: ["task.failed", "failed"], task_cancelled: ["task.cancelled", "cancelled"] } as const;
      const [type, native] = to[e.event_type];
      out.push({ type, nativeStatus: native, status: TASK_STATUS_MAP[native], statusReason: e.payload.reason ?? undefined, payload: { ...actor } });
      break;
    }
    case "task_step_ready":
      out.push({ type: "task.queued", ...stepFields(e), nativeStatus: "ready", status: "queued", payload: {} });
      break;
    case "task_step_pending":
      out.push({ type: "task.waiting", ...stepFields(e), nativeStatus: "pending", status: "queued", statusReason: e.payload.reason, payload: { waitingFor: "dependency" } });
      break;
    case "task_step_claimed": {
      const p = e.payload;
      out.push({
        type: "task.attempt.started",
        ...stepFields(e),
        runId: p.run_id,
        attemptId: p.attempt_id,
        nativeStatus: "claimed",
        status: "running",
        worker: { agentId: p.agent_id, runId: p.run_id },
        payload: { attemptOrdinal: p.attempt_ordinal, leaseExpiresAt: p.lease_expires_at, step: p.step_snapshot },
      });
      break;
    }
    case "task_step_started":
    case "task_step_updated": {
      const started = e.event_type === "task_step_started";
      out.push({
        type: "task.progress",
        ...stepFields(e),
        runId: e.actor_run_id ?? undefined,
        nativeStatus: started ? "running" : undefined,
        status: started ? "running" : undefined,
        phase: started ? "working" : undefined,
        payload: compact({ leaseExpiresAt: e.payload.lease_expires_at, resultSummary: e.payload.result_summary, artifactIds: e.payload.artifact_ids, ...actor }),
      });
      break;
    }
    case "task_step_blocked":
      out.push({
        type: "task.blocked",
        ...stepFields(e),
        attemptId: attemptOf(e),
        runId: runOf(e),
        nativeStatus: "blocked",
        status: "blocked",
        statusReason: e.payload.reason ?? undefined,
        payload: compact({ resultSummary: e.payload.result_summary, artifactIds: e.payload.artifact_ids, ...actor }),
      });
      break;
    case "task_step_completed": {
      const attemptId = attemptOf(e);
      out.push({
        type: attemptId === undefined ? "task.updated" : "task.attempt.completed",
        ...stepFields(e),
        attemptId,
        runId: runOf(e),
        nativeStatus: "completed",
        status: "completed",
        payload: compact({ resultSummary: e.payload.result_summary, artifactIds: e.payload.artifact_ids, ...actor }),
        refs: e.payload.artifact_ids === null || e.payload.artifact_ids.length === 0 ? undefined : { artifactIds: e.payload.artifact_ids },
      });
      break;
    }
    case "task_step_failed": {
      const attemptId = attemptOf(e);
      const status = ATTEMPT_STATUS_MAP[e.payload.attempt_status];
      const base = { ...stepFields(e), attemptId, runId: runOf(e), nativeStatus: "failed", statusReason: e.payload.reason ?? undefined };
      const payload = compact({ resultSummary: e.payload.result_summary, artifactIds: e.payload.artifact_ids, ...actor });
      if (attemptId === undefined) out.push({ type: "task.updated", ...base, status: "failed", payload });
      else {
        out.push({ type: "task.attempt.failed", ...base, status, payload });
        if (e.payload.attempt_status === "timed_out") out.push({ type: "task.timed_out", ...base, status: "timed_out", payload: {} });
      }
      break;
    }
    case "task_step_cancelled": {
      const attemptId = attemptOf(e);
      const base = { ...stepFields(e), attemptId, runId: runOf(e), nativeStatus: "cancelled", status: "cancelled", statusReason: e.payload.reason ?? undefined, payload: { ...actor } };
      out.push({ type: attemptId === undefined ? "task.updated" : "task.attempt.failed", ...base });
      break;
    }
    case "task_step_reopened":
      out.push({ type: "task.retrying", ...stepFields(e), nativeStatus: "pending", status: "retrying", statusReason: e.payload.reason ?? undefined, payload: { ...actor } });
      break;
    case "task_step_lease_expired":
      out.push({
        type: "task.lost",
        ...stepFields(e),
        runId: e.payload.run_id,
        attemptId: e.payload.attempt_id,
        nativeStatus: "pending",
        status: "lost",
        statusReason: "lease_expired",
        payload: { leaseExpiresAt: e.payload.lease_expires_at },
      });
      break;
    case "task_progress": {
      const p = e.payload;
      const progress = compact({ phase: p.phase, summary: p.summary, counters: p.counters, outputRefs: p.output_refs });
      out.push({ type: "task.progress", ...stepFields(e), runId: e.actor_run_id ?? undefined, phase: p.phase ?? undefined, taskProgress: progress, payload: { ...progress, ...actor } });
      break;
    }
    case "worker_dispatched": {
      const p = e.payload;
      const worker = compact({ agentId: p.agent_id, runId: p.run_id, workerPoolId: p.worker_pool_id, allowedStepIds: p.allowed_step_ids, maxSteps: p.max_steps, deadlineAt: p.deadline_at });
      out.push({ type: "task.delegated", runId: p.run_id, worker, payload: { ...actor } });
      out.push({ type: "subagent.spawned", runId: p.run_id, subagentId: p.run_id, status: "running", worker, payload: {} });
      break;
    }
    case "worker_run_cancel_requested": {
      const p = e.payload;
      out.push({
        type: "task.cancel_requested",
        runId: p.run_id,
        subagentId: p.run_id,
        stepId: p.step_id ?? undefined,
        attemptId: p.attempt_id ?? undefined,
        nativeStatus: "cancelling",
        status: "cancelling",
        statusReason: p.reason,
        payload: { deadlineAt: p.deadline_at, ...actor },
      });
      break;
    }
    case "child_agent_cancel_timeout": {
      const p = e.payload;
      // The run may still be working: the runtime stops waiting, it cannot say the run stopped.
      out.push({ type: "subagent.status", runId: p.run_id, subagentId: p.run_id, nativeStatus: "cancelling", status: "unknown", statusReason: "child_agent_cancel_timeout", payload: { cancelReason: p.reason, deadlineAt: p.deadline_at } });
      break;
    }
    case "worker_run_ended": {
      const p = e.payload;
      const base = { runId: p.run_id, subagentId: p.run_id, statusReason: p.reason, payload: compact({ result: p.result ?? undefined, ...actor }) };
      if (p.status === "finished") out.push({ type: "subagent.completed", ...base, status: "completed" });
      else if (p.status === "timed_out") out.push({ type: "subagent.failed", ...base, status: "timed_out" });
      else {
        // A run ended at once is asked and closed in one fact; one asked earlier (worker_run_cancel_requested
        // already projected the request) or handing in a late result is only closed.
        if (p.cancel_requested !== true && p.reason !== "late_result") {
          out.push({ type: "task.cancel_requested", runId: p.run_id, status: "cancelling", statusReason: p.reason, payload: { ...actor } });
        }
        out.push({ type: "subagent.closed", ...base, status: "cancelled" });
      }
      break;
    }
  }
  return out.map((fields, k) =>
    compact({
      ...fields,
      payload: fields.payload ?? {},
      eventId: k === 0 ? e.event_id : `${e.event_id}.${k}`,
      timestamp: e.created_at,
      sequence: runtimeSequence(e.wal_seq, k),
      schemaVersion: RUNTIME_EVENT_SCHEMA_VERSION,
      sessionId: e.session_id,
      taskId: e.task_id,
    }) as RuntimeEvent,
  );
}

/** The attempt an attempt-closing event closed, when the WAL recorded it. */
function attemptOf(e: WalEventOf<"task_step_completed" | "task_step_failed" | "task_step_cancelled" | "task_step_blocked">): string | undefined {
  return e.payload.attempt_id ?? undefined;
}

/** The run whose attempt an event closed, when the WAL recorded it. */
function runOf(e: WalEventOf<"task_step_completed" | "task_step_failed" | "task_step_cancelled" | "task_step_blocked">): string | undefined {
  return e.payload.run_id ?? undefined;
}

/** Projects a WAL in order. */
export function projectWal(events: Iterable<WalEvent>): RuntimeEvent[] {
  const out: RuntimeEvent[] = [];
  for (const e of events) out.push(...projectEvent(e));
  return out;
}
