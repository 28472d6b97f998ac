/** @module State invariants the model tests check after every command, each one a plain assertion on a DagState. */
import { isDeepStrictEqual } from "node:util";
import { expect } from "vitest";
import { findCycle } from "../../../src/core/model/dag.js";
import { childReport, type DagState, HELD_STEP_STATUSES, isTerminalTask, normalizedTaskStatus, outboundWork, rebuildIndex, type WorkerRun } from "../../../src/core/index.js";

/** vitest `toEqual`, with a fast structural pre-check so big DAGs stay cheap (strict equality implies toEqual). */
export function expectSame(actual: unknown, expected: unknown, label: string): void {
  if (!isDeepStrictEqual(actual, expected)) expect(actual, label).toEqual(expected);
}

function fail(message: string): never {
  throw new Error(`invariant broken: ${message}`);
}

/** The derived indexes equal a from-scratch rebuild (ready queues in creation order included). */
export function checkIndex(state: DagState): void {
  expectSame(state.index, rebuildIndex(state), "state.index equals rebuildIndex(state)");
}

/** Claims: a held step names an active run that names it back; a run holds at most one step; no step has two runs. */
export function checkClaims(state: DagState): void {
  const holderOf = new Map<string, string>();
  for (const step of state.steps.values()) {
    const held = HELD_STEP_STATUSES.has(step.status);
    if (!held) {
      if (step.claimed_by_run_id !== null || step.claimed_by_agent_id !== null || step.lease_expires_at !== null || step.current_attempt_id !== null) {
        fail(`${step.status} step ${step.step_id} keeps claim fields`);
      }
      continue;
    }
    const runId = step.claimed_by_run_id;
    // The runtime holds a delegated step for its delegate without a lease (the delegate's deadline bounds it).
    const leased = step.delegate === null;
    if (runId === null || (step.lease_expires_at === null) === leased || step.current_attempt_id === null) fail(`held step ${step.step_id} lacks a claim, or a lease only a worker's claim has`);
    if ((step.claimed_by_agent_id === RUNTIME) === leased) fail(`step ${step.step_id} (delegated: ${!leased}) is held by ${step.claimed_by_agent_id}`);
    const other = holderOf.get(runId);
    if (other !== undefined) fail(`run ${runId} holds both ${other} and ${step.step_id}`);
    holderOf.set(runId, step.step_id);
    const run = state.runs.get(runId);
    if (run === undefined) fail(`step ${step.step_id} is held by unknown run ${runId}`);
    if (run.status !== "active") fail(`step ${step.step_id} is held by ${run.status} run ${runId}`);
    if (run.current_step_id !== step.step_id) fail(`run ${runId} does not name its held step ${step.step_id} (${run.current_step_id})`);
    if (step.claimed_by_agent_id !== run.agent_id) fail(`step ${step.step_id} names agent ${step.claimed_by_agent_id}, its run is ${run.agent_id}'s`);
  }
  for (const run of state.runs.values()) {
    if (run.current_step_id !== null && holderOf.get(run.run_id) !== run.current_step_id) {
      fail(`run ${run.run_id} claims to hold ${run.current_step_id}, which it does not`);
    }
    if (run.claims_used > run.max_steps) fail(`run ${run.run_id} used ${run.claims_used} of ${run.max_steps} claims`);
    const open = run.status === "active" || run.status === "cancelling";
    if (open !== (run.ended_at === null)) fail(`run ${run.run_id} is ${run.status} with ended_at ${run.ended_at}`);
    checkCancelRequest(state, run);
  }
}

/**
 * A run asked to cancel (a forced stop's request): only a failed or cancelled task asks, the run holds nothing from then on, and it
 * ends cancelled; a timed-out wait ends it with child_agent_cancel_timeout.
 */
function checkCancelRequest(state: DagState, run: WorkerRun): void {
  const request = run.cancel_request;
  if (run.status === "cancelling" && request === null) fail(`cancelling run ${run.run_id} has no cancel request`);
  if (request === null) return;
  const task = state.task!;
  if (task.status !== "failed" && task.status !== "cancelled") fail(`run ${run.run_id} was asked to cancel by a ${task.status} task`);
  if (request.reason !== `task_${task.status}`) fail(`run ${run.run_id} was asked to cancel for ${request.reason} by a ${task.status} task`);
  if (run.current_step_id !== null) fail(`run ${run.run_id} asked to cancel still holds ${run.current_step_id}`);
  if (run.status !== "cancelling" && run.status !== "cancelled") fail(`run ${run.run_id} asked to cancel ended ${run.status}`);
  if (request.timed_out_at !== null && (run.status !== "cancelled" || run.status_reason !== "child_agent_cancel_timeout")) {
    fail(`run ${run.run_id} timed out cancelling but is ${run.status} (${run.status_reason})`);
  }
}

/** Attempts: ordinals 1..n per step, exactly the held steps have one open attempt, runs count their claims. */
export function checkAttempts(state: DagState): void {
  const claimsByRun = new Map<string, number>();
  let active = 0;
  for (const attempt of state.attempts.values()) {
    claimsByRun.set(attempt.run_id, (claimsByRun.get(attempt.run_id) ?? 0) + 1);
    if (attempt.status === "active") active += 1;
    if ((attempt.status === "active") !== (attempt.ended_at === null)) fail(`attempt ${attempt.attempt_id} is ${attempt.status} with ended_at ${attempt.ended_at}`);
    const run = state.runs.get(attempt.run_id);
    if (run === undefined) fail(`attempt ${attempt.attempt_id} names unknown run ${attempt.run_id}`);
    // Scope is checked against the step as the worker saw it when it claimed.
    if (attempt.step_snapshot.worker_pool_id !== run.worker_pool_id) fail(`attempt ${attempt.attempt_id} claimed a step outside its run's pool`);
    if (run.allowed_step_ids !== null && !run.allowed_step_ids.includes(attempt.step_id)) fail(`attempt ${attempt.attempt_id} claimed a step outside allowed_step_ids`);
  }
  let held = 0;
  for (const step of state.steps.values()) {
    step.attempt_ids.forEach((id, i) => {
      const attempt = state.attempts.get(id);
      if (attempt === undefined || attempt.step_id !== step.step_id) fail(`step ${step.step_id} lists foreign attempt ${id}`);
      if (attempt.ordinal !== i + 1) fail(`attempt ${id} of ${step.step_id} has ordinal ${attempt.ordinal}, expected ${i + 1}`);
      const open = attempt.status === "active";
      if (open !== (step.current_attempt_id === id)) fail(`attempt ${id} is ${attempt.status} but current is ${step.current_attempt_id}`);
    });
    if (HELD_STEP_STATUSES.has(step.status)) {
      held += 1;
      if (step.attempt_ids[step.attempt_ids.length - 1] !== step.current_attempt_id) fail(`held step ${step.step_id}'s current attempt is not its last`);
    }
  }
  if (active !== held) fail(`${active} open attempts for ${held} held steps`);
  for (const run of state.runs.values()) {
    if ((claimsByRun.get(run.run_id) ?? 0) !== run.claims_used) fail(`run ${run.run_id} counts ${run.claims_used} claims, attempts say ${claimsByRun.get(run.run_id) ?? 0}`);
  }
}

/** DAG shape: dependencies name existing steps, no cycle; readiness is exactly "every dependency completed". */
export function checkShapeAndReadiness(state: DagState): void {
  for (const step of state.steps.values()) {
    let allDone = true;
    for (const dep of step.depends_on_step_ids) {
      const d = state.steps.get(dep);
      if (d === undefined) fail(`step ${step.step_id} depends on unknown step ${dep}`);
      if (d.status !== "completed") allDone = false;
    }
    if (step.status === "ready" && !allDone) fail(`step ${step.step_id} is ready with an unfinished dependency`);
    // A step waiting for the retry its policy scheduled stays pending until the retry is due.
    if (step.status === "pending" && allDone && step.retry_at === null) fail(`step ${step.step_id} is pending although every dependency is completed`);
  }
  const cycle = findCycle(state.steps);
  if (cycle !== null) fail(`the DAG has a cycle: ${cycle.message}`);
}

/** Task status against the steps: pending means nothing moves yet; terminal means nothing moves ever. */
export function checkTaskStatus(state: DagState): void {
  const task = state.task;
  if (task === null) return;
  const c = state.index.statusCounts;
  if (task.status === "pending" && c.ready + c.claimed + c.running > 0) fail("a pending task has ready, claimed or running steps (task_running missing)");
  if (isTerminalTask(task)) {
    if (c.pending + c.ready + c.claimed + c.running > 0) fail(`a ${task.status} task still has unfinished steps`);
    // A forced stop (fail/cancel) finishes blocked steps too; completion only cancels pending/ready optional ones.
    if (task.status !== "completed" && c.blocked > 0) fail(`a ${task.status} task still has blocked steps`);
    for (const run of state.runs.values()) if (run.status === "active") fail(`a ${task.status} task has active run ${run.run_id}`);
    if (task.ended_at === null) fail(`a ${task.status} task has no ended_at`);
    // Terminal tasks are listed by updated_at: run facts after the end (late results) must not move it.
    if (task.updated_at !== task.ended_at) fail(`a ${task.status} task was updated at ${task.updated_at} after it ended at ${task.ended_at}`);
    if (task.status === "completed") {
      for (const step of state.steps.values()) if (step.required && step.status !== "completed") fail(`completed task with required step ${step.step_id} ${step.status}`);
    }
  } else if (task.ended_at !== null) fail(`a ${task.status} task has ended_at`);
  for (const key of state.progress.keys()) if (key !== "" && !state.steps.has(key)) fail(`progress kept for deleted step ${key}`);
}

/**
 * Human actions: an open step action's step is held by the attempt and run that asked (its lease suspended, not
 * ended); an ended task has no open action; a resolved one says how, by whom and when, an open one none of that.
 */
export function checkActions(state: DagState): void {
  const task = state.task;
  for (const action of state.actions.values()) {
    const open = action.status === "open";
    if (open !== (action.decision === null) || open !== (action.resolved_at === null) || open !== (action.resolved_by === null)) {
      fail(`${action.status} action ${action.action_id} has decision ${action.decision}, resolved_at ${action.resolved_at}`);
    }
    if (!open) continue;
    if (task === null || isTerminalTask(task)) fail(`action ${action.action_id} is open on a ${task?.status} task`);
    if (action.step_id === null) continue;
    const step = state.steps.get(action.step_id);
    if (step === undefined || !HELD_STEP_STATUSES.has(step.status)) fail(`open action ${action.action_id} waits on step ${action.step_id}, which is ${step?.status ?? "gone"}`);
    if (step.current_attempt_id !== action.attempt_id || step.claimed_by_run_id !== action.run_id) fail(`open action ${action.action_id} belongs to another claim of ${step.step_id}`);
  }
}

/** Retries: a step waiting for one failed or lost its attempt (failed or pending), and only a live task waits. */
export function checkRetries(state: DagState): void {
  const task = state.task;
  for (const step of state.steps.values()) {
    if (step.retry_at === null) continue;
    if (step.status !== "failed" && step.status !== "pending") fail(`${step.status} step ${step.step_id} waits for a retry`);
    if (task === null || isTerminalTask(task)) fail(`step ${step.step_id} waits for a retry on a ${task?.status} task`);
    if (!state.index.retrying.has(step.step_id)) fail(`step ${step.step_id} waits for a retry outside index.retrying`);
  }
}

/** The results a completed step had when it completed; they may never change afterwards. */
export class CompletedResults {
  private readonly seen = new Map<string, { result_summary: string | null; artifact_ids: string[] }>();

  /** Checks the steps completed earlier, then remembers the newly completed ones. */
  check(state: DagState): void {
    for (const [id, results] of this.seen) {
      const step = state.steps.get(id);
      if (step === undefined) fail(`completed step ${id} disappeared`);
      if (step.status !== "completed") fail(`completed step ${id} became ${step.status}`);
      expectSame({ result_summary: step.result_summary, artifact_ids: step.artifact_ids }, results, `results of completed step ${id} are unchanged`);
    }
    if (this.seen.size === state.index.statusCounts.completed) return;
    for (const step of state.steps.values()) {
      if (step.status === "completed" && !this.seen.has(step.step_id)) {
        this.seen.set(step.step_id, { result_summary: step.result_summary, artifact_ids: [...step.artifact_ids] });
      }
    }
  }
}

/** The agent id of the runtime's own runs, which hold delegated steps. */
const RUNTIME = "runtime";
const LIVE_DELEGATION: ReadonlySet<string> = new Set(["starting", "active", "input_required", "answering"]);

/**
 * Delegations: exactly the live ones hold their step (its current attempt and run, the step naming them); a
 * question being asked or answered has its action (open while asked, answered while answering); a closed one has
 * closed_at and an outcome; an ended task has no live one. The outbox owes one call per delegation at most, none
 * for a closed one, every call for a live peer; a child task owes its parent its report exactly while the delivery
 * is pending.
 */
export function checkDelegations(state: DagState): void {
  const task = state.task;
  for (const d of state.delegations.values()) {
    const step = state.steps.get(d.step_id);
    const holds = step !== undefined && HELD_STEP_STATUSES.has(step.status) && step.current_attempt_id === d.attempt_id;
    const live = LIVE_DELEGATION.has(d.status);
    if (live !== holds) fail(`${d.status} delegation ${d.delegation_id} ${holds ? "holds" : "does not hold"} step ${d.step_id}`);
    if (live) {
      if (step!.claimed_by_run_id !== d.run_id || step!.delegation_id !== d.delegation_id) fail(`step ${d.step_id} names another claim than delegation ${d.delegation_id}`);
      if (state.runs.get(d.run_id)?.status !== "active") fail(`live delegation ${d.delegation_id} has a ${state.runs.get(d.run_id)?.status} run`);
      if (task !== null && isTerminalTask(task)) fail(`delegation ${d.delegation_id} is ${d.status} on a ${task.status} task`);
    }
    const action = d.input_action_id === null ? undefined : state.actions.get(d.input_action_id);
    if (d.status === "input_required" && action?.status !== "open") fail(`delegation ${d.delegation_id} asks with no open action`);
    if (d.status === "answering" && (action?.status !== "resolved" || action.decision !== "submitted")) fail(`delegation ${d.delegation_id} answers with no submitted answer`);
    if ((d.status === "closed") !== (d.closed_at !== null)) fail(`${d.status} delegation ${d.delegation_id} has closed_at ${d.closed_at}`);
    if ((d.status === "closed" || d.status === "cancelling") && d.outcome === null) fail(`${d.status} delegation ${d.delegation_id} has no outcome`);
    if (d.kind === "task" && d.child_task_id === null) fail(`child delegation ${d.delegation_id} names no child`);
  }
  const work = outboundWork(state);
  const owed = new Set<string>();
  for (const w of work) {
    if (w.intent === "deliver") continue;
    const id = w.delegation.delegation_id;
    if (owed.has(id)) fail(`delegation ${id} owes two calls`);
    owed.add(id);
    if (w.delegation.status === "closed") fail(`closed delegation ${id} owes ${w.intent}`);
  }
  for (const d of state.delegations.values()) if (d.kind === "a2a" && d.status !== "closed" && !owed.has(d.delegation_id)) fail(`${d.status} peer delegation ${d.delegation_id} owes nothing`);
  const delivers = work.some((w) => w.intent === "deliver");
  if (delivers !== (task?.delivery_state === "pending")) fail(`delivery ${task?.delivery_state} but ${delivers ? "a" : "no"} report owed`);
  if (task !== null) {
    const ended = isTerminalTask(task);
    if ((childReport(state) !== null) !== (task.delegated_from !== null && ended)) fail(`child report of a ${task.status} task (child: ${task.delegated_from !== null})`);
    if ((task.delivery_state !== null) !== (task.delegated_from !== null && ended)) fail(`delivery_state ${task.delivery_state} on a ${task.status} task`);
  }
}

/** Only a terminal task is archived, and an archived one shows as archived (its native status kept); a deadline only with an archive. */
export function checkArchive(state: DagState): void {
  const task = state.task;
  if (task === null) return;
  if (task.archived_at !== null && !isTerminalTask(task)) fail(`a ${task.status} task is archived`);
  if ((task.archived_at !== null) !== (normalizedTaskStatus(state) === "archived")) fail(`archived_at ${task.archived_at} but normalized ${normalizedTaskStatus(state)}`);
  if (task.delete_after !== null && task.archived_at === null) fail("a retention deadline without an archive");
}

/** Every state invariant except replay and completed-results (the driver owns those). */
export function checkState(state: DagState): void {
  checkIndex(state);
  checkClaims(state);
  checkAttempts(state);
  checkShapeAndReadiness(state);
  checkTaskStatus(state);
  checkActions(state);
  checkRetries(state);
  checkDelegations(state);
  checkArchive(state);
}
