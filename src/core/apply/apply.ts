/**
 * @module `apply` and `replay`: fold WAL events into the DAG. Total and deterministic: no validation,
 * no clock (time comes from each event), nothing re-derived — every status change is its own event.
 */
import type { PatchOp } from "../model/commands.js";
import type { WalEvent, WalEventOf, WalEventType } from "../events/events.js";
import {
  addRun,
  applyRetry,
  createStep,
  noteError,
  openAttempt,
  type PatchReducer,
  patchReducers,
  releaseClaim,
  runOf,
  setTaskStatus,
  settleStep,
  stepOf,
  touchTask,
  writeResults,
} from "./apply-shared.js";
import { delegationHandlers } from "./apply-delegation.js";
import { webhookHandlers } from "./apply-webhooks.js";
import { acceptanceOf, type Action, TASK_RECORD_FIELDS, type TaskRecordFields } from "../model/records.js";
import type { DagState } from "../model/state.js";
import { countAttemptAction, emptyState, setStepStatus } from "../model/state.js";

type Handlers = { [K in WalEventType]: (s: DagState, e: WalEventOf<K>) => void };

const handlers: Handlers = {
  ...delegationHandlers,
  ...webhookHandlers,
  task_created(s, e) {
    const t = e.payload.task;
    const fields = Object.fromEntries(TASK_RECORD_FIELDS.map((field) => [field, t[field] ?? null])) as TaskRecordFields;
    s.task = {
      task_id: t.task_id,
      wal_name: t.wal_name,
      title: t.title,
      summary: t.summary,
      step_lease_timeout_ms: t.step_lease_timeout_ms,
      ...fields,
      acceptance: acceptanceOf(t.acceptance),
      session_id: e.session_id,
      status: "pending",
      status_reason: null,
      last_error: null,
      started_at: null,
      created_by_agent_id: e.actor_agent_id,
      created_by_run_id: e.actor_run_id,
      origin: t.origin ?? null,
      delegated_from: t.delegated_from ?? null,
      delivery_state: null,
      created_at: e.created_at,
      updated_at: e.created_at,
      ended_at: null,
      blocked_by: [],
      blockers_version: 0,
      archived_at: null,
      delete_after: null,
    };
    for (const step of e.payload.steps) createStep(s, step, e.created_at);
  },
  task_updated(s, e) {
    const at = e.created_at;
    for (const op of e.payload.ops) (patchReducers[op.op] as PatchReducer<PatchOp["op"]>)(s, op, at);
    for (const { step_id } of e.payload.updated_after_dispatch) {
      const step = s.steps.get(step_id);
      if (step !== undefined) step.updated_after_dispatch = true;
    }
    touchTask(s, at);
  },
  task_running(s, e) {
    s.task!.status = "running";
    s.task!.started_at ??= e.created_at;
    touchTask(s, e.created_at);
  },
  task_paused: (s, e) => setTaskStatus(s, "paused", e.payload.reason, e.created_at),
  task_resumed: (s, e) => setTaskStatus(s, "pending", e.payload.reason, e.created_at),
  task_blocked: (s, e) => setTaskStatus(s, "blocked", e.payload.reason, e.created_at),
  task_reopened: (s, e) => setTaskStatus(s, "pending", e.payload.reason, e.created_at),
  task_completed: (s, e) => setTaskStatus(s, "completed", e.payload.reason, e.created_at),
  task_failed(s, e) {
    setTaskStatus(s, "failed", e.payload.reason, e.created_at);
    noteError(s, "task_failed", e.payload.reason, null, null, e.created_at);
  },
  task_cancelled: (s, e) => setTaskStatus(s, "cancelled", e.payload.reason, e.created_at),
  task_archived(s, e) {
    s.task!.archived_at = e.created_at;
    s.task!.delete_after = e.payload.delete_after;
    // updated_at stays the end's: terminal tasks are listed by it, and an archive does not move one up the list.
  },
  task_step_ready(s, e) {
    const step = stepOf(s, e);
    setStepStatus(s, step, "ready");
    step.updated_at = e.created_at;
  },
  task_step_pending(s, e) {
    const step = stepOf(s, e);
    setStepStatus(s, step, "pending");
    step.updated_at = e.created_at;
  },
  task_step_claimed(s, e) {
    openAttempt(s, stepOf(s, e), e.payload, "claimed", e.created_at);
  },
  task_step_started(s, e) {
    const step = stepOf(s, e);
    setStepStatus(s, step, "running");
    if (e.payload.lease_expires_at !== null) step.lease_expires_at = e.payload.lease_expires_at;
    writeResults(step, e.payload);
    step.updated_at = e.created_at;
    touchTask(s, e.created_at);
  },
  task_step_updated(s, e) {
    const step = stepOf(s, e);
    if (e.payload.lease_expires_at !== null) step.lease_expires_at = e.payload.lease_expires_at;
    writeResults(step, e.payload);
    step.updated_at = e.created_at;
    touchTask(s, e.created_at);
  },
  task_step_blocked(s, e) {
    const step = stepOf(s, e);
    writeResults(step, e.payload);
    releaseClaim(s, step, "blocked", e.created_at, e.payload.reason);
    settleStep(s, step, "blocked", e.payload.reason, e.created_at);
  },
  task_step_completed(s, e) {
    const step = stepOf(s, e);
    writeResults(step, e.payload);
    releaseClaim(s, step, "completed", e.created_at, null);
    settleStep(s, step, "completed", null, e.created_at);
  },
  task_step_failed(s, e) {
    const step = stepOf(s, e);
    const p = e.payload;
    writeResults(step, p);
    releaseClaim(s, step, p.attempt_status, e.created_at, p.reason);
    settleStep(s, step, "failed", p.reason, e.created_at);
    if (p.attempt_id != null && (p.attempt_status === "failed" || p.attempt_status === "timed_out")) {
      noteError(s, p.reason ?? "step_failed", p.result_summary, step.step_id, p.attempt_id, e.created_at);
    }
    applyRetry(s, step, p.retry, e.created_at);
  },
  task_step_cancelled(s, e) {
    const step = stepOf(s, e);
    releaseClaim(s, step, "cancelled", e.created_at, e.payload.reason);
    settleStep(s, step, "cancelled", e.payload.reason, e.created_at);
  },
  task_step_reopened(s, e) {
    const step = stepOf(s, e);
    settleStep(s, step, "pending", e.payload.reason, e.created_at);
    // The orchestrator's reopen gives the retry policy a fresh count; the policy's own reopen does not.
    if (e.payload.by_retry_policy !== true) step.retry_attempts = 0;
  },
  task_step_lease_expired(s, e) {
    const step = stepOf(s, e);
    releaseClaim(s, step, "lost", e.created_at, "lease_expired");
    settleStep(s, step, "pending", "lease_expired", e.created_at);
    noteError(s, "lease_expired", null, step.step_id, e.payload.attempt_id, e.created_at);
    applyRetry(s, step, e.payload.retry, e.created_at);
  },
  task_progress(s, e) {
    const p = e.payload;
    s.progress.set(e.step_id ?? "", {
      step_id: e.step_id,
      phase: p.phase,
      summary: p.summary,
      counters: p.counters === null ? null : { ...p.counters },
      output_refs: p.output_refs === null ? [] : [...p.output_refs],
      updated_at: e.created_at,
    });
    if (p.lease_expires_at !== null && e.step_id !== null) {
      const step = stepOf(s, e);
      step.lease_expires_at = p.lease_expires_at;
      step.updated_at = e.created_at;
    }
    touchTask(s, e.created_at);
  },
  action_requested(s, e) {
    const p = e.payload;
    s.actions.set(p.action_id, {
      action_id: p.action_id,
      task_id: e.task_id,
      step_id: e.step_id,
      attempt_id: p.attempt_id,
      run_id: p.run_id,
      kind: p.kind,
      prompt: p.prompt,
      input_schema: p.input_schema,
      status: "open",
      requested_by_agent_id: e.actor_agent_id,
      created_at: e.created_at,
      expires_at: p.expires_at,
      decision: null,
      input: null,
      comment: null,
      resolved_by: null,
      resolved_at: null,
    });
    s.actionRequests.set(p.action_id, e.wal_seq);
    s.index.openActions.add(p.action_id);
    if (e.step_id !== null) s.index.stepActions.set(e.step_id, p.action_id);
    if (p.attempt_id !== null) countAttemptAction(s.index, p.attempt_id);
    touchTask(s, e.created_at);
  },
  action_resolved(s, e) {
    const p = e.payload;
    const action = s.actions.get(p.action_id);
    if (action === undefined) throw new Error(`WAL event ${e.wal_seq} names unknown action ${p.action_id}`);
    action.status = "resolved";
    action.decision = p.decision;
    action.input = p.input;
    action.comment = p.comment;
    action.resolved_by = { agent_id: e.actor_agent_id, role: p.resolved_by_role };
    action.resolved_at = e.created_at;
    // The asker's text stays in the WAL only: memory keeps what open actions and summaries need.
    action.prompt = "";
    action.input_schema = null;
    s.index.openActions.delete(action.action_id);
    if (action.step_id !== null && s.index.stepActions.get(action.step_id) === action.action_id) s.index.stepActions.delete(action.step_id);
    if (p.lease_expires_at !== null && action.step_id !== null) {
      const step = s.steps.get(action.step_id);
      if (step !== undefined) step.lease_expires_at = p.lease_expires_at;
    }
    touchTask(s, e.created_at);
  },
  worker_dispatched(s, e) {
    const p = e.payload;
    const run = { run_id: p.run_id, agent_id: p.agent_id, worker_pool_id: p.worker_pool_id, allowed_step_ids: p.allowed_step_ids, max_steps: p.max_steps, deadline_at: p.deadline_at };
    addRun(s, { ...run, dispatched_by_agent_id: e.actor_agent_id }, e.created_at);
  },
  worker_run_cancel_requested(s, e) {
    const run = runOf(s, e, e.payload.run_id);
    const p = e.payload;
    run.status = "cancelling";
    run.cancel_request = { requested_at: e.created_at, requested_by_agent_id: e.actor_agent_id, reason: p.reason, deadline_at: p.deadline_at, timed_out_at: null };
    s.index.activeRuns.delete(run.run_id);
    s.index.cancellingRuns.add(run.run_id);
    touchTask(s, e.created_at);
  },
  child_agent_cancel_timeout(s, e) {
    const run = runOf(s, e, e.payload.run_id);
    if (run.cancel_request !== null) run.cancel_request.timed_out_at = e.created_at;
    touchTask(s, e.created_at);
  },
  worker_run_ended(s, e) {
    const run = runOf(s, e, e.payload.run_id);
    if (run.status === "active" || run.status === "cancelling") {
      run.status = e.payload.status;
      run.status_reason = e.payload.reason;
      run.ended_at = e.created_at;
      s.index.activeRuns.delete(run.run_id);
      s.index.cancellingRuns.delete(run.run_id);
    }
    // A run stopped by a task-level termination may still hand in its result later.
    if (e.payload.result !== null) run.result = e.payload.result;
    touchTask(s, e.created_at);
  },
  task_blockers_updated(s, e) {
    s.task!.blocked_by = [...e.payload.blocked_by];
    s.task!.blockers_version = e.payload.version;
    touchTask(s, e.created_at);
  },
};

/** Applies one event to `state` in place and returns it (in place: copying a 10,000-step DAG per event would dominate). */
export function apply(state: DagState, event: WalEvent): DagState {
  if ((state.task === null) !== (event.event_type === "task_created")) {
    throw new Error(`WAL event ${event.wal_seq} (${event.event_type}) does not fit: a WAL starts with task_created, once`);
  }
  (handlers[event.event_type] as (s: DagState, e: WalEvent) => void)(state, event);
  state.last_wal_seq = event.wal_seq;
  return state;
}

/** Rebuilds a DAG from its WAL, in order. Throws on a WAL that does not fit together (a gap, an unknown step). */
export function replay(events: Iterable<WalEvent>, into: DagState = emptyState()): DagState {
  for (const event of events) {
    if (event.wal_seq !== into.last_wal_seq + 1) {
      throw new Error(`WAL gap: expected wal_seq ${into.last_wal_seq + 1}, found ${event.wal_seq}`);
    }
    apply(into, event);
  }
  return into;
}

/**
 * The action as it was answered, text included: a resolved action is kept slim in memory, and `requested` (its
 * action_requested event, at `state.actionRequests`) gives back its prompt and input_schema. An open action is
 * whole already. Always a copy.
 */
export function withRequestText(action: Action, requested: WalEvent | undefined): Action {
  const copy = structuredClone(action);
  if (action.status === "open") return copy;
  if (requested?.event_type !== "action_requested" || requested.payload.action_id !== action.action_id) {
    throw new Error(`the WAL holds no action_requested event for action ${action.action_id}`);
  }
  copy.prompt = requested.payload.prompt;
  copy.input_schema = requested.payload.input_schema;
  return copy;
}
