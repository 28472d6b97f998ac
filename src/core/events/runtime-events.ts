/**
 * @module Runtime events: a pure projection of WAL events (`task_created`, `task_step_claimed`, …) into the
 * portable envelope of the Agent Runtime event schema (`task.created`, `task.attempt.started`, …; the envelope
 * and its normalized statuses: docs/model.md). One WAL event gives one or more runtime events; the k-th carries
 * `sequence` = wal_seq * SEQUENCE_STRIDE + k (runtime-sequence.ts), so sequences strictly increase along the WAL
 * and each names one event. Nothing is inferred beyond what the event says.
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
 * | task_step_failed         | task.attempt.failed (+ task.timed_out for worker_timeout), or task.updated with no attempt; then task.retrying (retry scheduled) or task.failed (retry_exhausted) under a retry policy |
 * | task_step_cancelled      | task.attempt.failed with status cancelled, or task.updated           |
 * | task_step_reopened       | task.retrying (step)                                                 |
 * | task_step_lease_expired  | task.lost (step, attempt lost); then task.retrying or task.failed under a retry policy |
 * | task_paused / task_resumed | task.paused / task.resumed                                         |
 * | action_requested         | action.required, task.waiting (waiting_permission or waiting_input)  |
 * | action_resolved          | action.resolved (decision approved, rejected, submitted, expired or withdrawn) |
 * | task_progress            | task.progress                                                        |
 * | worker_dispatched        | task.delegated, subagent.spawned                                     |
 * | worker_run_ended         | finished: subagent.completed; cancelled: task.cancel_requested (unless requested earlier or a late result), subagent.closed; timed_out: subagent.failed |
 * | worker_run_cancel_requested | task.cancel_requested (status cancelling, with the cancellation deadline)   |
 * | child_agent_cancel_timeout  | subagent.status (status unknown: the run never confirmed it stopped)        |
 * | step_delegated           | task.delegated (the delegate, its run and attempt), task.attempt.started          |
 * | delegation_updated / _try_failed / _settled / _closed | task.dependency.updated (remote refs, status, outcome) |
 * | delegation_cancel_requested | task.cancel_requested (step; the delegate is told to stop)             |
 * | task_delivery_recorded   | task.progress (phase delivering, deliveryState)                          |
 * | task_blockers_updated    | task.dependency.updated (payload blockedBy, blockersVersion: the session graph's blocks links) |
 * | task_archived            | task.archived (status archived; payload deleteAfter when a retention period applies) |
 */
import type { z } from "zod";
import type { RuntimeEventSchema } from "../schemas/runtime-event.js";
import type { WalEvent, WalEventOf, WalEventType } from "./events.js";
import { ATTEMPT_STATUS_MAP, TASK_STATUS_MAP, WAITING_STATUS } from "../model/normalize.js";
import { RUNTIME_EVENT_SCHEMA_VERSION } from "./event-types.js";
import { runtimeSequence } from "./runtime-sequence.js";

export { RUNTIME_EVENT_SCHEMA_VERSION, RUNTIME_EVENT_TYPES } from "./event-types.js";

/** A runtime event (the output of the envelope's zod schema, ../schemas/runtime-event.ts, imported as a type only). */
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

/** Who caused an event, as every payload that names its actor carries it. */
type ActorFields = { actorAgentId: string; actorRunId?: string };

/** One WAL event type's projection: its runtime events in order, before the envelope is stamped. */
type Projection<K extends WalEventType> = (e: WalEventOf<K>, actor: ActorFields) => Fields[];

/** Every WAL event type has a projection: adding an event type without one does not compile. */
type Projections = { [K in WalEventType]: Projection<K> };

/** A task's own status change: one runtime event of `type`, the task's native status and its reason. */
function taskStatus(
  type: "task.blocked" | "task.resumed" | "task.paused" | "task.completed" | "task.failed" | "task.cancelled",
  native: "blocked" | "pending" | "paused" | "completed" | "failed" | "cancelled",
) {
  return (e: WalEventOf<"task_blocked" | "task_reopened" | "task_paused" | "task_resumed" | "task_completed" | "task_failed" | "task_cancelled">, actor: ActorFields): Fields[] => [
    { type, nativeStatus: native, status: TASK_STATUS_MAP[native], statusReason: e.payload.reason ?? undefined, payload: { ...actor } },
  ];
}

/** A held step's non-terminal update: task.progress, saying running when it started. */
function stepProgress(started: boolean) {
  return (e: WalEventOf<"task_step_started" | "task_step_updated">, actor: ActorFields): Fields[] => [
    {
      type: "task.progress",
      ...stepFields(e),
      runId: e.actor_run_id ?? undefined,
      nativeStatus: started ? "running" : undefined,
      status: started ? "running" : undefined,
      phase: started ? "working" : undefined,
      payload: compact({ leaseExpiresAt: e.payload.lease_expires_at, resultSummary: e.payload.result_summary, artifactIds: e.payload.artifact_ids, ...actor }),
    },
  ];
}

const projections: Projections = {
  task_created(e, actor) {
    const p = e.payload;
    const task = { title: p.task.title, summary: p.task.summary, walName: p.task.wal_name, stepIds: p.steps.map((s) => s.step_id), stepCount: p.steps.length };
    return [
      { type: "task.created", nativeStatus: "pending", status: "queued", payload: { ...task, ...actor } },
      { type: "task.accepted", nativeStatus: "pending", status: "queued", payload: { ...actor } },
    ];
  },
  task_updated(e, actor) {
    const onlyDeps = e.payload.ops.every((op) => DEPENDENCY_OPS.has(op.op));
    return [
      {
        type: onlyDeps ? "task.dependency.updated" : "task.updated",
        payload: { ops: e.payload.ops, updatedAfterDispatch: e.payload.updated_after_dispatch, ...actor },
      },
    ];
  },
  task_running: () => [{ type: "task.started", nativeStatus: "running", status: "running", payload: {} }],
  task_blocked: taskStatus("task.blocked", "blocked"),
  task_reopened: taskStatus("task.resumed", "pending"),
  task_paused: taskStatus("task.paused", "paused"),
  task_resumed: taskStatus("task.resumed", "pending"),
  task_completed: taskStatus("task.completed", "completed"),
  task_failed: taskStatus("task.failed", "failed"),
  task_cancelled: taskStatus("task.cancelled", "cancelled"),
  task_step_ready: (e) => [{ type: "task.queued", ...stepFields(e), nativeStatus: "ready", status: "queued", payload: {} }],
  task_step_pending: (e) => [
    { type: "task.waiting", ...stepFields(e), nativeStatus: "pending", status: "queued", statusReason: e.payload.reason, payload: { waitingFor: "dependency" } },
  ],
  task_step_claimed(e) {
    const p = e.payload;
    return [
      {
        type: "task.attempt.started",
        ...stepFields(e),
        runId: p.run_id,
        attemptId: p.attempt_id,
        nativeStatus: "claimed",
        status: "running",
        worker: { agentId: p.agent_id, runId: p.run_id },
        payload: { attemptOrdinal: p.attempt_ordinal, leaseExpiresAt: p.lease_expires_at, step: p.step_snapshot },
      },
    ];
  },
  task_step_started: stepProgress(true),
  task_step_updated: stepProgress(false),
  task_step_blocked: (e, actor) => [
    {
      type: "task.blocked",
      ...stepFields(e),
      attemptId: attemptOf(e),
      runId: runOf(e),
      nativeStatus: "blocked",
      status: "blocked",
      statusReason: e.payload.reason ?? undefined,
      payload: compact({ resultSummary: e.payload.result_summary, artifactIds: e.payload.artifact_ids, ...actor }),
    },
  ],
  task_step_completed(e, actor) {
    const attemptId = attemptOf(e);
    return [
      {
        type: attemptId === undefined ? "task.updated" : "task.attempt.completed",
        ...stepFields(e),
        attemptId,
        runId: runOf(e),
        nativeStatus: "completed",
        status: "completed",
        payload: compact({ resultSummary: e.payload.result_summary, artifactIds: e.payload.artifact_ids, ...actor }),
        refs: e.payload.artifact_ids === null || e.payload.artifact_ids.length === 0 ? undefined : { artifactIds: e.payload.artifact_ids },
      },
    ];
  },
  task_step_failed(e, actor) {
    const attemptId = attemptOf(e);
    const status = ATTEMPT_STATUS_MAP[e.payload.attempt_status];
    const base = { ...stepFields(e), attemptId, runId: runOf(e), nativeStatus: "failed", statusReason: e.payload.reason ?? undefined };
    const payload = compact({ resultSummary: e.payload.result_summary, artifactIds: e.payload.artifact_ids, ...actor });
    if (attemptId === undefined) return [{ type: "task.updated", ...base, status: "failed", payload }];
    const failed: Fields = { type: "task.attempt.failed", ...base, status, payload };
    const out = e.payload.attempt_status === "timed_out" ? [failed, { type: "task.timed_out" as const, ...base, status: "timed_out", payload: {} }] : [failed];
    return [...out, ...retryEvents(e)];
  },
  task_step_cancelled(e, actor) {
    const attemptId = attemptOf(e);
    const base = { ...stepFields(e), attemptId, runId: runOf(e), nativeStatus: "cancelled", status: "cancelled", statusReason: e.payload.reason ?? undefined, payload: { ...actor } };
    return [{ type: attemptId === undefined ? "task.updated" : "task.attempt.failed", ...base }];
  },
  task_step_reopened: (e, actor) => [
    { type: "task.retrying", ...stepFields(e), nativeStatus: "pending", status: "retrying", statusReason: e.payload.reason ?? undefined, payload: { ...actor } },
  ],
  task_step_lease_expired: (e) => [
    {
      type: "task.lost",
      ...stepFields(e),
      runId: e.payload.run_id,
      attemptId: e.payload.attempt_id,
      nativeStatus: "pending",
      status: "lost",
      statusReason: "lease_expired",
      payload: { leaseExpiresAt: e.payload.lease_expires_at },
    },
    ...retryEvents(e),
  ],
  action_requested(e, actor) {
    const p = e.payload;
    const status = WAITING_STATUS[p.kind];
    const ids = { ...stepFields(e), actionId: p.action_id, attemptId: p.attempt_id ?? undefined, runId: p.run_id ?? undefined };
    return [
      {
        type: "action.required",
        ...ids,
        status: "open",
        payload: compact({ kind: p.kind, prompt: p.prompt, inputSchema: p.input_schema, expiresAt: p.expires_at, ...actor }),
      },
      { type: "task.waiting", ...ids, status, statusReason: p.kind === "approval" ? "waiting_for_approval" : "waiting_for_input", payload: { waitingFor: p.kind === "approval" ? "permission" : "input", expiresAt: p.expires_at } },
    ];
  },
  action_resolved(e, actor) {
    const p = e.payload;
    return [
      {
        type: "action.resolved",
        ...stepFields(e),
        actionId: p.action_id,
        status: "resolved",
        statusReason: p.decision,
        payload: compact({ decision: p.decision, input: p.input, comment: p.comment, resolvedBy: { ...actor, role: p.resolved_by_role }, leaseExpiresAt: p.lease_expires_at }),
      },
    ];
  },
  task_progress(e, actor) {
    const p = e.payload;
    const progress = compact({ phase: p.phase, summary: p.summary, counters: p.counters, outputRefs: p.output_refs });
    return [{ type: "task.progress", ...stepFields(e), runId: e.actor_run_id ?? undefined, phase: p.phase ?? undefined, taskProgress: progress, payload: { ...progress, ...actor } }];
  },
  step_delegated(e, actor) {
    const p = e.payload;
    const delegate = compact({ delegationId: p.delegation_id, kind: p.kind, childTaskId: p.child_task_id, agentCardRef: p.agent_card_ref, deadlineAt: p.deadline_at });
    const worker = { agentId: "runtime", runId: p.run_id };
    return [
      { type: "task.delegated", ...stepFields(e), runId: p.run_id, attemptId: p.attempt_id, worker, payload: { ...delegate, ...actor }, refs: p.child_task_id === null ? undefined : { childTaskId: p.child_task_id } },
      { type: "task.attempt.started", ...stepFields(e), runId: p.run_id, attemptId: p.attempt_id, nativeStatus: "running", status: "running", worker, payload: { attemptOrdinal: p.attempt_ordinal, step: p.step_snapshot, delegationId: p.delegation_id } },
    ];
  },
  delegation_updated(e, actor) {
    const p = e.payload;
    const refs = compact({
      remoteTaskId: p.remote_task_id,
      remoteContextId: p.remote_context_id,
      remoteStatus: p.remote_status,
      deliveryMechanism: p.delivery_mechanism,
      remoteArtifactRefs: p.remote_artifact_refs,
    });
    return [{ type: "task.dependency.updated", ...stepFields(e), nativeStatus: p.remote_status ?? undefined, status: p.status, payload: { delegationId: p.delegation_id, ...refs, ...actor } }];
  },
  delegation_try_failed: (e) => [
    { type: "task.dependency.updated", ...stepFields(e), statusReason: e.payload.error, payload: { delegationId: e.payload.delegation_id, intent: e.payload.intent, tries: e.payload.tries, nextTryAt: e.payload.next_try_at } },
  ],
  delegation_cancel_requested: (e) => [{ type: "task.cancel_requested", ...stepFields(e), status: "cancelling", statusReason: e.payload.reason, payload: { delegationId: e.payload.delegation_id } }],
  delegation_settled: (e) => [
    {
      type: "task.dependency.updated",
      ...stepFields(e),
      nativeStatus: e.payload.remote_status ?? undefined,
      status: e.payload.outcome,
      statusReason: e.payload.reason ?? undefined,
      payload: { delegationId: e.payload.delegation_id, outcome: e.payload.outcome, cleanup: e.payload.cleanup },
    },
  ],
  delegation_closed: (e) => [{ type: "task.dependency.updated", ...stepFields(e), status: "closed", statusReason: e.payload.reason, payload: { delegationId: e.payload.delegation_id } }],
  // Delivering an event is not itself an event: nothing to deliver or stream (and no delivery of a delivery).
  webhook_deliveries_queued: () => [],
  webhook_deliveries_tried: () => [],
  webhook_delivery_retried: () => [],
  task_delivery_recorded: (e) => [
    { type: "task.progress", phase: "delivering", statusReason: e.payload.detail ?? undefined, payload: { deliveryState: e.payload.delivery_state }, taskProgress: { deliveryState: e.payload.delivery_state } },
  ],
  worker_dispatched(e, actor) {
    const p = e.payload;
    const worker = compact({ agentId: p.agent_id, runId: p.run_id, workerPoolId: p.worker_pool_id, allowedStepIds: p.allowed_step_ids, maxSteps: p.max_steps, deadlineAt: p.deadline_at });
    return [
      { type: "task.delegated", runId: p.run_id, worker, payload: { ...actor } },
      { type: "subagent.spawned", runId: p.run_id, subagentId: p.run_id, status: "running", worker, payload: {} },
    ];
  },
  worker_run_cancel_requested(e, actor) {
    const p = e.payload;
    return [
      {
        type: "task.cancel_requested",
        runId: p.run_id,
        subagentId: p.run_id,
        stepId: p.step_id ?? undefined,
        attemptId: p.attempt_id ?? undefined,
        nativeStatus: "cancelling",
        status: "cancelling",
        statusReason: p.reason,
        payload: { deadlineAt: p.deadline_at, ...actor },
      },
    ];
  },
  child_agent_cancel_timeout(e) {
    const p = e.payload;
    // The run may still be working: the runtime stops waiting, it cannot say the run stopped.
    return [
      { type: "subagent.status", runId: p.run_id, subagentId: p.run_id, nativeStatus: "cancelling", status: "unknown", statusReason: "child_agent_cancel_timeout", payload: { cancelReason: p.reason, deadlineAt: p.deadline_at } },
    ];
  },
  worker_run_ended(e, actor) {
    const p = e.payload;
    const base = { runId: p.run_id, subagentId: p.run_id, statusReason: p.reason, payload: compact({ result: p.result ?? undefined, ...actor }) };
    if (p.status === "finished") return [{ type: "subagent.completed", ...base, status: "completed" }];
    if (p.status === "timed_out") return [{ type: "subagent.failed", ...base, status: "timed_out" }];
    const closed: Fields = { type: "subagent.closed", ...base, status: "cancelled" };
    // A run ended at once is asked and closed in one fact; one asked earlier (worker_run_cancel_requested
    // already projected the request) or handing in a late result is only closed.
    if (p.cancel_requested === true || p.reason === "late_result") return [closed];
    return [{ type: "task.cancel_requested", runId: p.run_id, status: "cancelling", statusReason: p.reason, payload: { ...actor } }, closed];
  },
  task_archived: (e, actor) => [
    { type: "task.archived", status: "archived", statusReason: e.payload.reason ?? undefined, payload: compact({ deleteAfter: e.payload.delete_after, ...actor }) },
  ],
  task_blockers_updated: (e, actor) => [
    { type: "task.dependency.updated", payload: { blockedBy: [...e.payload.blocked_by], blockersVersion: e.payload.version, ...actor } },
  ],
};

/** The runtime events of one WAL event, in order (fewer than SEQUENCE_STRIDE of them). */
export function projectEvent(e: WalEvent): RuntimeEvent[] {
  const actor: ActorFields = { actorAgentId: e.actor_agent_id, ...(e.actor_run_id === null ? {} : { actorRunId: e.actor_run_id }) };
  // The table is total over WalEventType; indexing it by a union loses the pairing of key and event, hence the cast.
  const out = (projections[e.event_type] as (e: WalEvent, actor: ActorFields) => Fields[])(e, actor);
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

/** What a retry policy made of an ended attempt: task.retrying until retry_at, or task.failed as retry_exhausted. */
function retryEvents(e: WalEventOf<"task_step_failed" | "task_step_lease_expired">): Fields[] {
  const retry = e.payload.retry;
  if (retry === undefined) return [];
  const counts = { attempts: retry.attempts, maxAttempts: retry.max_attempts };
  if (retry.retry_at === null) {
    return [{ type: "task.failed", ...stepFields(e), nativeStatus: "failed", status: "failed", statusReason: "retry_exhausted", payload: counts }];
  }
  return [{ type: "task.retrying", ...stepFields(e), nativeStatus: e.event_type === "task_step_failed" ? "failed" : "pending", status: "retrying", statusReason: "retry_policy", payload: { ...counts, retryAt: retry.retry_at } }];
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
