/**
 * @module The record changes `apply` is made of (a step created, a claim released, a status settled, a retry
 * scheduled) and the reducer of each patch op: shared by the event handlers of apply.ts. No validation, no clock.
 */
import type { PatchOp } from "../model/commands.js";
import type { RetryOutcome, WalEvent } from "../events/events.js";
import {
  type Attempt,
  type AttemptStatus,
  type Delegate,
  DEFAULT_WORKER_POOL,
  type RetryPolicy,
  type Step,
  type StepSnapshot,
  type StepStatus,
  TASK_RECORD_FIELDS,
  TERMINAL_TASK_STATUSES,
  type TaskStatus,
  type WorkerRun,
} from "../model/records.js";
import type { DagState } from "../model/state.js";
import { addDependent, indexStep, removeDependent, setStepStatus, shiftUnmet, unindexStep } from "../model/state.js";

export function stepOf(state: DagState, event: WalEvent): Step {
  const step = state.steps.get(event.step_id ?? "");
  if (step === undefined) throw new Error(`WAL event ${event.wal_seq} (${event.event_type}) names unknown step ${event.step_id}`);
  return step;
}

export function runOf(state: DagState, event: WalEvent, runId: string): WorkerRun {
  const run = state.runs.get(runId);
  if (run === undefined) throw new Error(`WAL event ${event.wal_seq} names unknown run ${runId}`);
  return run;
}

export function createStep(
  state: DagState,
  input: {
    step_id: string;
    title: string;
    summary: string;
    depends_on_step_ids: string[];
    required: boolean;
    worker_pool_id: string;
    retry_policy?: RetryPolicy | null | undefined;
    delegate?: Delegate | undefined;
  },
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
    retry_policy: input.retry_policy ?? null,
    retry_attempts: 0,
    retry_at: null,
    delegate: input.delegate ?? null,
    delegation_id: null,
    ordinal: state.next_ordinal++,
    created_at: at,
    updated_at: at,
  };
  state.steps.set(step.step_id, step);
  indexStep(state, step);
}

/** What a claim records: the run and agent that hold the step, the attempt it opens, its lease (none for the runtime's own). */
export interface Claim {
  readonly run_id: string;
  readonly agent_id: string;
  readonly attempt_id: string;
  readonly attempt_ordinal: number;
  readonly lease_expires_at: string | null;
  readonly step_snapshot: StepSnapshot;
}

/** A claim opens an attempt: the step held (claimed, or running at once), the attempt recorded, the run holding the step. */
export function openAttempt(state: DagState, step: Step, claim: Claim, status: "claimed" | "running", at: string): void {
  setStepStatus(state, step, status);
  step.claimed_by_agent_id = claim.agent_id;
  step.claimed_by_run_id = claim.run_id;
  step.lease_expires_at = claim.lease_expires_at;
  step.current_attempt_id = claim.attempt_id;
  step.attempt_ids.push(claim.attempt_id);
  step.retry_attempts += 1;
  step.updated_after_dispatch = false;
  step.status_reason = null;
  step.updated_at = at;
  const snapshot = claim.step_snapshot;
  state.attempts.set(claim.attempt_id, {
    attempt_id: claim.attempt_id,
    step_id: step.step_id,
    run_id: claim.run_id,
    agent_id: claim.agent_id,
    ordinal: claim.attempt_ordinal,
    status: "active",
    step_snapshot: { ...snapshot, depends_on_step_ids: [...snapshot.depends_on_step_ids] },
    started_at: at,
    ended_at: null,
    result_summary: null,
    last_error: null,
  });
  const run = state.runs.get(claim.run_id);
  if (run !== undefined) {
    run.current_step_id = step.step_id;
    run.claims_used += 1;
  }
  touchTask(state, at);
}

/** A run as its dispatch records it: active, holding nothing yet. */
export function addRun(
  state: DagState,
  run: Pick<WorkerRun, "run_id" | "agent_id" | "worker_pool_id" | "allowed_step_ids" | "max_steps" | "deadline_at" | "dispatched_by_agent_id">,
  at: string,
): void {
  state.runs.set(run.run_id, {
    ...run,
    allowed_step_ids: run.allowed_step_ids === null ? null : [...run.allowed_step_ids],
    claims_used: 0,
    current_step_id: null,
    status: "active",
    status_reason: null,
    result: null,
    cancel_request: null,
    created_at: at,
    ended_at: null,
  });
  state.index.activeRuns.add(run.run_id);
  touchTask(state, at);
}

/** Ends the claim on a held step: closes its attempt and frees its run for another claim. */
export function releaseClaim(state: DagState, step: Step, outcome: AttemptStatus, at: string, error: string | null): void {
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

export function writeResults(step: Step, p: { result_summary: string | null; artifact_ids: string[] | null }): void {
  if (p.result_summary !== null) step.result_summary = p.result_summary;
  if (p.artifact_ids !== null) step.artifact_ids = [...p.artifact_ids];
}

/** A step's status change that also records why (its reason) and when, on the step and the task; it ends any wait for a retry. */
export function settleStep(state: DagState, step: Step, status: StepStatus, reason: string | null, at: string): void {
  setStepStatus(state, step, status);
  step.status_reason = reason;
  step.updated_at = at;
  if (step.retry_at !== null) setRetryAt(state, step, null);
  touchTask(state, at);
}

/** Starts or ends a step's wait for the retry its policy scheduled. */
export function setRetryAt(state: DagState, step: Step, at: string | null): void {
  step.retry_at = at;
  if (at === null) state.index.retrying.delete(step.step_id);
  else state.index.retrying.add(step.step_id);
}

/** The retry policy's outcome for an attempt that just ended: a retry scheduled, or the step failed as retry_exhausted. */
export function applyRetry(state: DagState, step: Step, retry: RetryOutcome | undefined, at: string): void {
  if (retry === undefined) return;
  if (retry.retry_at !== null) setRetryAt(state, step, retry.retry_at);
  else settleStep(state, step, "failed", RETRY_EXHAUSTED, at);
}

/** The reason a step fails with once its retry policy's attempts are used up. */
export const RETRY_EXHAUSTED = "retry_exhausted";

/** Records the task's latest failure fact (`last_error`). */
export function noteError(state: DagState, code: string, message: string | null, stepId: string | null, attemptId: string | null, at: string): void {
  state.task!.last_error = { code, message, step_id: stepId, attempt_id: attemptId, at };
}

/** The task's own status change (blocked, reopened, terminal) with its reason; a terminal one ends the task. */
export function setTaskStatus(state: DagState, status: TaskStatus, reason: string | null, at: string): void {
  const task = state.task!;
  task.status = status;
  task.status_reason = reason;
  if (TERMINAL_TASK_STATUSES.has(status)) {
    task.ended_at = at;
    // A child task's result is owed to its parent from now on (delivery_state).
    if (task.delegated_from !== null && task.delivery_state === null) task.delivery_state = "pending";
    // A finished task retries nothing: the steps that waited for a retry keep their failure.
    for (const id of [...state.index.retrying]) setRetryAt(state, state.steps.get(id)!, null);
  }
  task.updated_at = at;
}

/**
 * The task changed at `at`. Not once it is terminal: only run facts (a late result, a cancellation's end) come
 * after that, and the task list sorts terminal tasks by updated_at, so they must not move a finished task up it.
 */
export function touchTask(state: DagState, at: string): void {
  const task = state.task;
  if (task !== null && !TERMINAL_TASK_STATUSES.has(task.status)) task.updated_at = at;
}

/** Applies one recorded patch op of a task_updated event at its time. */
export type PatchReducer<K extends PatchOp["op"]> = (s: DagState, op: Extract<PatchOp, { op: K }>, at: string) => void;

/** Every patch op has a reducer: an op decide can record but replay would skip does not compile. */
type PatchReducers = { [K in PatchOp["op"]]: PatchReducer<K> };

export const patchReducers: PatchReducers = {
  update_task(s, op) {
    const task = s.task!;
    if (op.title !== undefined) task.title = op.title;
    if (op.summary !== undefined) task.summary = op.summary;
    for (const field of TASK_RECORD_FIELDS) {
      const value = op[field];
      if (value !== undefined) (task as Record<string, unknown>)[field] = value;
    }
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
    if (f.retry_policy !== undefined) step.retry_policy = f.retry_policy;
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
