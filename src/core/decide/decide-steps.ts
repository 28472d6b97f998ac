/** @module Decisions on one step's execution: claim, claim-next, agent.task_update_step, progress. */
import type { CommandOf } from "../model/commands.js";
import type { DecideContext, Decision } from "./context.js";
import { Emitter } from "./context.js";
import { closing, emitDependantsReady, emitRunningIfFirstActive, snapshotOf } from "./decide-shared.js";
import { accept, acceptNothing, refuse } from "./decision.js";
import { blockedRefusal } from "./decide-links.js";
import { runtimeError } from "../model/errors.js";
import { checkScope, requireActiveWorkerRun, requireLiveTaskFor, runMaySee } from "./guards.js";
import { HELD_STEP_STATUSES, type Step, type StepStatus, type WorkerRun } from "../model/records.js";
import { err, ok, type Result } from "../model/result.js";
import { retryField, retryOutcome } from "../model/retry-policy.js";
import type { DagState } from "../model/state.js";

/** The lease a claim or renewal sets: now + the task's step_lease_timeout_ms. */
function leaseUntil(state: DagState, ctx: DecideContext): string {
  return new Date(ctx.now + state.task!.step_lease_timeout_ms).toISOString();
}

/** The lease an update of a held step renews: none for a delegated step, which the runtime holds without one. */
function renewedLease(state: DagState, step: Step, ctx: DecideContext): string | null {
  return step.delegate !== null ? null : leaseUntil(state, ctx);
}

/** Who may claim: an active worker run of this task, live and not blocked, holding nothing. */
function checkClaimer(state: DagState, ctx: DecideContext, tool: string): Result<WorkerRun> {
  const task = state.task!;
  if (ctx.actor.role !== "worker") return err(runtimeError("tool_not_available", `${tool} is available to worker runs only`, { role: ctx.actor.role }));
  // A terminal task answers task_terminal before the run's status is looked at, saying so when the run
  // was asked to cancel.
  const guard = checkScope(task, ctx.actor) ?? requireLiveTaskFor(state, ctx.actor);
  if (guard !== null) return err(guard);
  const active = requireActiveWorkerRun(state, ctx.actor);
  if (!active.ok) return active;
  const run = active.value;
  if (task.status === "blocked" || task.status === "paused") {
    return err(runtimeError("task_not_dispatchable", `the task is ${task.status}; the orchestrator must ${task.status === "blocked" ? "reopen" : "resume"} it first`, { status: task.status }));
  }
  const blocked = blockedRefusal(state);
  if (blocked !== null) return err(blocked);
  if (run.current_step_id !== null) {
    return err(runtimeError("step_already_claimed_by_run", `this run already holds step ${run.current_step_id}`, { step_id: run.current_step_id }));
  }
  return ok(run);
}

function emitClaim(state: DagState, em: Emitter, ctx: DecideContext, run: WorkerRun, step: Step): Decision {
  const attemptId = `att_${ctx.newId().toLowerCase()}`;
  em.emit("task_step_claimed", step.step_id, {
    run_id: run.run_id,
    agent_id: run.agent_id,
    attempt_id: attemptId,
    attempt_ordinal: step.attempt_ids.length + 1,
    lease_expires_at: leaseUntil(state, ctx),
    step_snapshot: snapshotOf(step),
  });
  emitRunningIfFirstActive(state, em, true);
  return accept(em, { kind: "claimed", step_id: step.step_id, attempt_id: attemptId });
}

/** agent.task_claim_step: atomic; a live lease is step_already_claimed, a second claim step_already_claimed_by_run. */
export function decideClaimStep(state: DagState, cmd: CommandOf<"claim_step">, ctx: DecideContext): Decision {
  const claimer = checkClaimer(state, ctx, "agent.task_claim_step");
  if (!claimer.ok) return refuse(claimer.error);
  const run = claimer.value;
  if (run.claims_used >= run.max_steps) {
    return refuse(runtimeError("step_already_claimed_by_run", `this run has used its ${run.max_steps} claim(s)`, { max_steps: run.max_steps }));
  }
  const step = state.steps.get(cmd.step_id);
  if (step === undefined) return refuse(runtimeError("not_found", `no step ${cmd.step_id}`, { step_id: cmd.step_id }));
  if (step.delegate !== null) {
    return refuse(runtimeError("permission_denied", `step ${step.step_id} is delegated: the runtime runs it through its delegate`, { step_id: step.step_id, delegate: step.delegate.kind }));
  }
  if (!runMaySee(run, step)) {
    return refuse(runtimeError("permission_denied", `step ${step.step_id} is outside this run's scope`, { step_id: step.step_id }));
  }
  if (HELD_STEP_STATUSES.has(step.status)) {
    return refuse(runtimeError("step_already_claimed", `step ${step.step_id} is held by another run`, { step_id: step.step_id, lease_expires_at: step.lease_expires_at }));
  }
  if (step.status !== "ready") {
    return refuse(runtimeError("invalid_transition", `step ${step.step_id} is ${step.status}, not ready`, { step_id: step.step_id, status: step.status }));
  }
  return emitClaim(state, new Emitter(state, ctx), ctx, run, step);
}

/** The first ready step a run may claim, in creation order (no priority beyond the DAG). */
export function firstClaimable(state: DagState, run: WorkerRun): Step | undefined {
  const ready = state.index.ready.get(run.worker_pool_id);
  if (ready === undefined) return undefined;
  if (run.allowed_step_ids === null) return state.steps.get(ready.first()!);
  // Walk whichever is shorter: the run's scope or the pool's ready queue.
  if (run.allowed_step_ids.length < ready.size) {
    let best: Step | undefined;
    for (const id of run.allowed_step_ids) {
      const step = state.steps.get(id);
      if (step?.status === "ready" && step.delegate === null && step.worker_pool_id === run.worker_pool_id && (best === undefined || step.ordinal < best.ordinal)) best = step;
    }
    return best;
  }
  const allowed = new Set(run.allowed_step_ids);
  for (const id of ready) if (allowed.has(id)) return state.steps.get(id);
  return undefined;
}

/** Query and claim in one decision: the first claimable step, or no_step_claimed (a normal result, no event). */
export function decideClaimNext(state: DagState, _cmd: CommandOf<"claim_next">, ctx: DecideContext): Decision {
  const claimer = checkClaimer(state, ctx, "claim-next");
  if (!claimer.ok) return refuse(claimer.error);
  const run = claimer.value;
  if (run.claims_used >= run.max_steps) return acceptNothing({ kind: "no_step_claimed", reason: "run_budget_spent" });
  const step = firstClaimable(state, run);
  if (step === undefined) return acceptNothing({ kind: "no_step_claimed", reason: "no_ready_step" });
  return emitClaim(state, new Emitter(state, ctx), ctx, run, step);
}

/** Statuses the orchestrator may set on a step no run holds (ready is the core's to set; cancel only pending/ready). */
const ORCHESTRATOR_UNHELD: Partial<Record<StepStatus, ReadonlySet<StepStatus>>> = {
  pending: new Set(["blocked", "failed", "cancelled"]),
  ready: new Set(["blocked", "completed", "failed", "cancelled"]),
};

/** agent.task_update_step: execution status and results; never content or topology. */
export function decideUpdateStep(state: DagState, cmd: CommandOf<"update_step">, ctx: DecideContext): Decision {
  const task = state.task!;
  const { actor } = ctx;
  if (actor.role !== "worker" && actor.role !== "orchestrator") {
    return refuse(runtimeError("tool_not_available", "agent.task_update_step is available to orchestrators and worker runs", { role: actor.role }));
  }
  const guard = checkScope(task, actor) ?? requireLiveTaskFor(state, actor);
  if (guard !== null) return refuse(guard);
  const step = state.steps.get(cmd.step_id);
  if (step === undefined) return refuse(runtimeError("not_found", `no step ${cmd.step_id}`, { step_id: cmd.step_id }));
  const held = HELD_STEP_STATUSES.has(step.status);
  const to = cmd.status;
  const badTransition = () => refuse(runtimeError("invalid_transition", `a ${step.status} step cannot become ${to}`, { step_id: step.step_id, from: step.status, to }));
  // Ready is the core's to set, and only the orchestrator reopens (task_update reopen_step).
  if (to === "pending" || to === "ready") {
    return refuse(runtimeError("invalid_transition", `no caller sets a step ${to}: the core keeps readiness; the orchestrator reopens with task_update reopen_step`, { step_id: step.step_id, from: step.status, to }));
  }

  if (actor.role === "worker") {
    const run = requireActiveWorkerRun(state, actor);
    if (!run.ok) return refuse(run.error);
    if (!held || step.claimed_by_run_id !== run.value.run_id) {
      return refuse(runtimeError("permission_denied", `step ${step.step_id} is not held by this run`, { step_id: step.step_id, status: step.status }));
    }
  } else if (held) {
    // The orchestrator stops a held step by cancelling its worker run, not the step.
    if (to === "cancelled") {
      return refuse(runtimeError("invalid_transition", `step ${step.step_id} is ${step.status} by a worker run; cancel the run instead`, { step_id: step.step_id, run_id: step.claimed_by_run_id }));
    }
  } else if (!(ORCHESTRATOR_UNHELD[step.status]?.has(to) ?? false)) {
    return badTransition();
  }
  if (held && to === "claimed" && step.status === "running") return badTransition();

  const em = new Emitter(state, ctx);
  const results = { result_summary: cmd.result_summary ?? null, artifact_ids: cmd.artifact_ids ?? null };
  switch (to) {
    case "claimed":
    case "running":
      // Non-terminal updates of a held step renew its claim's lease.
      if (to === step.status) em.emit("task_step_updated", step.step_id, { lease_expires_at: renewedLease(state, step, ctx), ...results });
      else em.emit("task_step_started", step.step_id, { lease_expires_at: renewedLease(state, step, ctx), ...results });
      break;
    case "blocked":
      em.emit("task_step_blocked", step.step_id, { reason: cmd.reason ?? null, ...results, ...closing(step) });
      break;
    case "completed":
      em.emit("task_step_completed", step.step_id, { ...results, ...closing(step) });
      emitRunningIfFirstActive(state, em, emitDependantsReady(state, em, step));
      break;
    case "failed": {
      // A worker's failure of its attempt is what a retry policy retries; the orchestrator's failure of a step is final.
      const retry = held && actor.role === "worker" ? retryField(retryOutcome(state, step, "failed", cmd.reason ?? null, ctx.now)) : {};
      em.emit("task_step_failed", step.step_id, { reason: cmd.reason ?? null, ...results, attempt_status: "failed", ...closing(step), ...retry });
      break;
    }
    case "cancelled":
      em.emit("task_step_cancelled", step.step_id, { reason: cmd.reason ?? null, ...closing(step) });
      break;
  }
  return accept(em);
}

/** agent.task_progress: progress facts; a worker's progress on its held step renews the lease. */
export function decideAppendProgress(state: DagState, cmd: CommandOf<"append_progress">, ctx: DecideContext): Decision {
  const task = state.task!;
  const { actor } = ctx;
  if (actor.role !== "worker" && actor.role !== "orchestrator") {
    return refuse(runtimeError("tool_not_available", "agent.task_progress is available to orchestrators and worker runs", { role: actor.role }));
  }
  const guard = checkScope(task, actor) ?? requireLiveTaskFor(state, actor);
  if (guard !== null) return refuse(guard);
  let stepId = cmd.step_id ?? null;
  let lease: string | null = null;
  if (actor.role === "worker") {
    const active = requireActiveWorkerRun(state, actor);
    if (!active.ok) return refuse(active.error);
    const run = active.value;
    stepId ??= run.current_step_id;
    const step = stepId === null ? undefined : state.steps.get(stepId);
    if (step === undefined || step.claimed_by_run_id !== run.run_id || !HELD_STEP_STATUSES.has(step.status)) {
      return refuse(runtimeError("permission_denied", "a worker reports progress on the step its run holds", { step_id: stepId }));
    }
    lease = leaseUntil(state, ctx);
  } else if (stepId !== null && !state.steps.has(stepId)) {
    return refuse(runtimeError("not_found", `no step ${stepId}`, { step_id: stepId }));
  }
  const em = new Emitter(state, ctx);
  em.emit("task_progress", stepId, {
    phase: cmd.phase ?? null,
    summary: cmd.summary ?? null,
    counters: cmd.counters ?? null,
    output_refs: cmd.output_refs ?? null,
    lease_expires_at: lease,
  });
  return accept(em);
}
