/**
 * @module `apply` and `replay`: fold WAL events into the DAG. Total and deterministic: no validation,
 * no clock (time comes from each event), nothing re-derived — every status change is its own event.
 */
import type { PatchOp } from "./commands.js";
import type { WalEvent, WalEventOf, WalEventType } from "./events.js";
import { type Attempt, type AttemptStatus, DEFAULT_WORKER_POOL, type Step, type StepStatus, TERMINAL_TASK_STATUSES, type TaskStatus, type WorkerRun } from "./records.js";
import type { DagState } from "./state.js";
import {
  addDependent,
  emptyState,
  indexStep,
  removeDependent,
  setStepStatus,
  shiftUnmet,
  unindexStep,
} from "./state.js";

type Handlers = { [K in WalEventType]: (s: DagState, e: WalEventOf<K>) => void };

function stepOf(state: DagState, event: WalEvent): Step {
  const step = state.steps.get(event.step_id ?? "");
  if (step === undefined) throw new Error(`WAL event ${event.wal_seq} (${event.event_type}) names unknown step ${event.step_id}`);
  return step;
}

function runOf(state: DagState, event: WalEvent, runId: string): WorkerRun {
  const run = state.runs.get(runId);
  if (run === undefined) throw new Error(`WAL event ${event.wal_seq} names unknown run ${runId}`);
  return run;
}

function createStep(
  state: DagState,
  input: { step_id: string; title: string; summary: string; depends_on_step_ids: string[]; required: boolean; worker_pool_id: string },
  at: string,
): void {
  const step: Step = {
    step_id: input.step_id,
    title: input.title,
    summary: input.summary,
    status: "pending",
    depends_on_step_ids: [...input.depends_on_step_ids],
    required: input.required,
    worker_pool_id: input.worker_pool_id,
    claimed_by_agent_id: null,
    claimed_by_run_id: null,
    lease_expires_at: null,
    current_attempt_id: null,
    attempt_ids: [],
    result_summary: null,
    artifact_ids: [],
    status_reason: null,
    updated_after_dispatch: false,
    ordinal: state.next_ordinal++,
    created_at: at,
    updated_at: at,
  };
  state.steps.set(step.step_id, step);
  indexStep(state, step);
}

/** Ends the claim on a held step: closes its attempt and frees its run for another claim. */
function releaseClaim(state: DagState, step: Step, outcome: AttemptStatus, at: string, error: string | null): void {
  const attempt: Attempt | undefined = step.current_attempt_id === null ? undefined : state.attempts.get(step.current_attempt_id);
  if (attempt !== undefined && attempt.status === "active") {
    attempt.status = outcome;
    attempt.ended_at = at;
    attempt.result_summary = step.result_summary;
    attempt.last_error = error;
  }
  const run = step.claimed_by_run_id === null ? undefined : state.runs.get(step.claimed_by_run_id);
  if (run !== undefined && run.current_step_id === step.step_id) run.current_step_id = null;
  step.claimed_by_agent_id = null;
  step.claimed_by_run_id = null;
  step.lease_expires_at = null;
  step.current_attempt_id = null;
}

function writeResults(step: Step, p: { result_summary: string | null; artifact_ids: string[] | null }): void {
  if (p.result_summary !== null) step.result_summary = p.result_summary;
  if (p.artifact_ids !== null) step.artifact_ids = [...p.artifact_ids];
}

/** A step's status change that also records why (its reason) and when, on the step and the task. */
function settleStep(state: DagState, step: Step, status: StepStatus, reason: string | null, at: string): void {
  setStepStatus(state, step, status);
  step.status_reason = reason;
  step.updated_at = at;
  touchTask(state, at);
}

/** The task's own status change (blocked, reopened, terminal) with its reason; a terminal one ends the task. */
function setTaskStatus(state: DagState, status: TaskStatus, reason: string | null, at: string): void {
  const task = state.task!;
  task.status = status;
  task.status_reason = reason;
  if (TERMINAL_TASK_STATUSES.has(status)) task.ended_at = at;
  task.updated_at = at;
}

/**
 * The task changed at `at`. Not once it is terminal: only run facts (a late result, a cancellation's end) come
 * after that, and 003 sorts terminal tasks by updated_at, so they must not move a finished task up the list.
 */
function touchTask(state: DagState, at: string): void {
  const task = state.task;
  if (task !== null && !TERMINAL_TASK_STATUSES.has(task.status)) task.updated_at = at;
}

/** Applies one recorded patch op of a task_updated event at its time. */
type PatchReducer<K extends PatchOp["op"]> = (s: DagState, op: Extract<PatchOp, { op: K }>, at: string) => void;

/** Every patch op has a reducer: an op decide can record but replay would skip does not compile. */
type PatchReducers = { [K in PatchOp["op"]]: PatchReducer<K> };

const patchReducers: PatchReducers = {
  update_task(s, op) {
    if (op.title !== undefined) s.task!.title = op.title;
    if (op.summary !== undefined) s.task!.summary = op.summary;
  },
  add_step(s, op, at) {
    createStep(s, { required: true, worker_pool_id: DEFAULT_WORKER_POOL, ...op.step }, at);
  },
  update_step(s, op, at) {
    const step = s.steps.get(op.step_id)!;
    unindexStep(s, step);
    const f = op.fields;
    if (f.title !== undefined) step.title = f.title;
    if (f.summary !== undefined) step.summary = f.summary;
    if (f.depends_on_step_ids !== undefined) step.depends_on_step_ids = [...f.depends_on_step_ids];
    if (f.required !== undefined) step.required = f.required;
    if (f.worker_pool_id !== undefined) step.worker_pool_id = f.worker_pool_id;
    indexStep(s, step);
    step.updated_at = at;
  },
  delete_step(s, op) {
    const step = s.steps.get(op.step_id)!;
    unindexStep(s, step);
    s.steps.delete(op.step_id);
    s.progress.delete(op.step_id);
  },
  add_dependency(s, op, at) {
    const step = s.steps.get(op.step_id)!;
    if (!step.depends_on_step_ids.includes(op.depends_on_step_id)) {
      step.depends_on_step_ids.push(op.depends_on_step_id);
      addDependent(s, op.depends_on_step_id, op.step_id);
      if (s.steps.get(op.depends_on_step_id)?.status !== "completed") shiftUnmet(s, op.step_id, 1);
    }
    step.updated_at = at;
  },
  remove_dependency(s, op, at) {
    const step = s.steps.get(op.step_id)!;
    const had = step.depends_on_step_ids.includes(op.depends_on_step_id);
    step.depends_on_step_ids = step.depends_on_step_ids.filter((d) => d !== op.depends_on_step_id);
    removeDependent(s, op.depends_on_step_id, op.step_id);
    if (had && s.steps.get(op.depends_on_step_id)?.status !== "completed") shiftUnmet(s, op.step_id, -1);
    step.updated_at = at;
  },
  // Recorded as part of the patch; the status change is its own event right after.
  cancel_step() {},
  reopen_step() {},
};

const handlers: Handlers = {
  task_created(s, e) {
    const t = e.payload.task;
    s.task = {
      ...t,
      metadata: t.metadata === null ? null : { ...t.metadata },
      session_id: e.session_id,
      status: "pending",
      status_reason: null,
      created_by_agent_id: e.actor_agent_id,
      created_by_run_id: e.actor_run_id,
      created_at: e.created_at,
      updated_at: e.created_at,
      ended_at: null,
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
    touchTask(s, e.created_at);
  },
  task_blocked: (s, e) => setTaskStatus(s, "blocked", e.payload.reason, e.created_at),
  task_reopened: (s, e) => setTaskStatus(s, "pending", e.payload.reason, e.created_at),
  task_completed: (s, e) => setTaskStatus(s, "completed", e.payload.reason, e.created_at),
  task_failed: (s, e) => setTaskStatus(s, "failed", e.payload.reason, e.created_at),
  task_cancelled: (s, e) => setTaskStatus(s, "cancelled", e.payload.reason, e.created_at),
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
    const step = stepOf(s, e);
    const p = e.payload;
    setStepStatus(s, step, "claimed");
    step.claimed_by_agent_id = p.agent_id;
    step.claimed_by_run_id = p.run_id;
    step.lease_expires_at = p.lease_expires_at;
    step.current_attempt_id = p.attempt_id;
    step.attempt_ids.push(p.attempt_id);
    step.updated_after_dispatch = false;
    step.status_reason = null;
    step.updated_at = e.created_at;
    s.attempts.set(p.attempt_id, {
      attempt_id: p.attempt_id,
      step_id: step.step_id,
      run_id: p.run_id,
      agent_id: p.agent_id,
      ordinal: p.attempt_ordinal,
      status: "active",
      step_snapshot: { ...p.step_snapshot, depends_on_step_ids: [...p.step_snapshot.depends_on_step_ids] },
      started_at: e.created_at,
      ended_at: null,
      result_summary: null,
      last_error: null,
    });
    const run = s.runs.get(p.run_id);
    if (run !== undefined) {
      run.current_step_id = step.step_id;
      run.claims_used += 1;
    }
    touchTask(s, e.created_at);
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
    writeResults(step, e.payload);
    releaseClaim(s, step, e.payload.attempt_status, e.created_at, e.payload.reason);
    settleStep(s, step, "failed", e.payload.reason, e.created_at);
  },
  task_step_cancelled(s, e) {
    const step = stepOf(s, e);
    releaseClaim(s, step, "cancelled", e.created_at, e.payload.reason);
    settleStep(s, step, "cancelled", e.payload.reason, e.created_at);
  },
  task_step_reopened(s, e) {
    const step = stepOf(s, e);
    settleStep(s, step, "pending", e.payload.reason, e.created_at);
  },
  task_step_lease_expired(s, e) {
    const step = stepOf(s, e);
    releaseClaim(s, step, "lost", e.created_at, "lease_expired");
    settleStep(s, step, "pending", "lease_expired", e.created_at);
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
  worker_dispatched(s, e) {
    const p = e.payload;
    s.runs.set(p.run_id, {
      run_id: p.run_id,
      agent_id: p.agent_id,
      worker_pool_id: p.worker_pool_id,
      allowed_step_ids: p.allowed_step_ids === null ? null : [...p.allowed_step_ids],
      max_steps: p.max_steps,
      claims_used: 0,
      current_step_id: null,
      status: "active",
      status_reason: null,
      result: null,
      deadline_at: p.deadline_at,
      cancel_request: null,
      dispatched_by_agent_id: e.actor_agent_id,
      created_at: e.created_at,
      ended_at: null,
    });
    s.index.activeRuns.add(p.run_id);
    touchTask(s, e.created_at);
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
    // A run stopped by a task-level termination may still hand in its result later (003).
    if (e.payload.result !== null) run.result = e.payload.result;
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
