/**
 * @module Delegated steps (a child task, or an A2A peer's task, does the step's work; docs/model.md): the runtime
 * takes up a ready delegated step itself, records what its delegate's outbound calls found, and settles the step only
 * when the delegate is terminal and its artifacts are recorded. What must be sent where (the outbox) is derived
 * from the records here too (`outboundWork`), so the shell only delivers.
 */
import type { CommandOf, DelegationReport } from "../model/commands.js";
import type { DecideContext, Decision } from "./context.js";
import { Emitter, systemActor } from "./context.js";
import { blockedBy } from "./decide-links.js";
import { CLAIM_ENDING_EVENTS, closing, emitDependantsReady, emitRunningIfFirstActive, snapshotOf } from "./decide-shared.js";
import { accept, acceptNothing, refuse } from "./decision.js";
import { limitExceeded, type RuntimeError, runtimeError } from "../model/errors.js";
import type { WalEvent } from "../events/events.js";
import { LIMIT_SETTINGS, MAX_ARTIFACTS, MAX_TEXT } from "../model/limits.js";
import { clipText } from "../model/text.js";
import {
  type AttemptStatus,
  type Delegation,
  type DelegationOutcome,
  HELD_STEP_STATUSES,
  LIVE_DELEGATION_STATUSES,
  type Step,
} from "../model/records.js";
import { retryField, retryOutcome } from "../model/retry-policy.js";
import type { DagState } from "../model/state.js";

/** The A2A v1.0 task states after which a peer's task changes no more. */
const A2A_TERMINAL: Readonly<Record<string, DelegationOutcome>> = {
  TASK_STATE_COMPLETED: "completed",
  TASK_STATE_FAILED: "failed",
  TASK_STATE_REJECTED: "failed",
  TASK_STATE_CANCELED: "cancelled",
};
/** The A2A v1.0 task states in which a peer waits for its client. */
const A2A_WAITING: ReadonlySet<string> = new Set(["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"]);

/** Longest wait between two tries of an outbound call. */
const MAX_RETRY_MS = 60_000;

/** True when the task may start delegated steps now: live, not paused or blocked, no task blocking it (the same rule as dispatch). */
export function startsDelegations(state: DagState): boolean {
  const status = state.task!.status;
  return (status === "pending" || status === "running") && blockedBy(state).length === 0;
}

/** The wait before try number `tries` + 1 of an outbound call. */
export function delegateRetryDelay(limits: { delegateRetryMs: number }, tries: number): number {
  return Math.min(limits.delegateRetryMs * 2 ** Math.max(0, tries - 1), MAX_RETRY_MS);
}

/** How many child tasks the step's attempts created (delegations of kind task, one child each). */
export function childrenOfStep(state: DagState, stepId: string): number {
  let n = 0;
  for (const d of state.delegations.values()) if (d.step_id === stepId && d.kind === "task") n += 1;
  return n;
}

/**
 * The children-per-step cap when `stepId` would be taken up again (reopen_step): its delegate creates a child
 * each attempt, and `maxChildrenPerStep` were created already. The value is the count one more attempt would make.
 */
export function childCapReached(state: DagState, stepId: string, limits: { maxChildrenPerStep: number }): RuntimeError | null {
  if (state.steps.get(stepId)?.delegate?.kind !== "task") return null;
  const children = childrenOfStep(state, stepId) + 1;
  if (children <= limits.maxChildrenPerStep) return null;
  return limitExceeded(`a delegated step creates at most ${limits.maxChildrenPerStep} child tasks over its attempts`, limits.maxChildrenPerStep, children, LIMIT_SETTINGS.maxChildrenPerStep);
}

/** The id a child task of `step` gets: readable, unique, and fixed before it is created so every retry names it. */
function childTaskIdOf(step: Step, id: string): string {
  return `${step.step_id.slice(0, 36)}-${id.toLowerCase()}`;
}

/**
 * Takes up every ready delegated step (in creation order) as the runtime's own attempt: step_delegated. Called by
 * lease reconciliation, so a step that became ready is taken up by the next commit's reconciliation or the alarm.
 */
export function emitDelegationStarts(state: DagState, em: Emitter, ctx: DecideContext): boolean {
  const { index } = state;
  if (index.readyDelegated.size === 0 || !startsDelegations(state)) return false;
  const steps = [...index.readyDelegated].map((id) => state.steps.get(id)!).sort((a, b) => a.ordinal - b.ordinal);
  for (const step of steps) {
    const delegate = step.delegate!;
    const id = ctx.newId();
    const timeout = delegate.timeout_ms ?? (delegate.kind === "a2a" ? ctx.limits.delegateTimeoutMs : null);
    em.emit("step_delegated", step.step_id, {
      delegation_id: `dlg_${id.toLowerCase()}`,
      run_id: `run_${ctx.newId().toLowerCase()}`,
      attempt_id: `att_${ctx.newId().toLowerCase()}`,
      attempt_ordinal: step.attempt_ids.length + 1,
      kind: delegate.kind,
      child_task_id: delegate.kind === "task" ? childTaskIdOf(step, id) : null,
      agent_card_ref: delegate.kind === "a2a" ? delegate.agent_card_url : null,
      message: delegate.kind === "a2a" ? (delegate.message ?? (step.summary === "" ? step.title : `${step.title}\n\n${step.summary}`)) : null,
      deadline_at: timeout === null ? null : new Date(ctx.now + timeout).toISOString(),
      step_snapshot: snapshotOf(step),
    });
  }
  if (!em.events.some((e) => e.event_type === "task_running")) emitRunningIfFirstActive(state, em, true);
  return true;
}

/** True while the runtime holds the delegation's step for it (its attempt is the step's open one). */
function holdsStep(state: DagState, d: Delegation): Step | undefined {
  const step = state.steps.get(d.step_id);
  return step !== undefined && HELD_STEP_STATUSES.has(step.status) && step.current_attempt_id === d.attempt_id ? step : undefined;
}

/** How the run of a delegation ends with its outcome. */
const RUN_END: Record<DelegationOutcome, { status: "finished" | "cancelled" | "timed_out"; attempt: AttemptStatus }> = {
  completed: { status: "finished", attempt: "completed" },
  failed: { status: "finished", attempt: "failed" },
  lost: { status: "finished", attempt: "lost" },
  timed_out: { status: "timed_out", attempt: "timed_out" },
  cancelled: { status: "cancelled", attempt: "failed" },
};

/** Ends the delegation's run when it is still open: as its outcome says, or as a task-level stop asked. */
function emitRunEnded(state: DagState, em: Emitter, d: Delegation, outcome: DelegationOutcome | null): void {
  const run = state.runs.get(d.run_id);
  if (run === undefined) return;
  if (run.status === "cancelling") {
    em.emit("worker_run_ended", null, { run_id: run.run_id, status: "cancelled", reason: run.cancel_request!.reason, result: null, cancel_requested: true });
  } else if (run.status === "active") {
    const how = RUN_END[outcome ?? "cancelled"];
    em.emit("worker_run_ended", null, { run_id: run.run_id, status: how.status, reason: `delegate_${outcome ?? "cancelled"}`, result: null });
  }
}

/** What the step's result says, and its artifacts, when the delegation's attempt ends. */
interface Settlement {
  readonly outcome: DelegationOutcome;
  readonly reason: string | null;
  readonly remote_status: string | null;
  readonly result_summary: string | null;
  readonly artifact_ids: string[];
  /** The delegate may still run (a timeout, a refused answer): it is told to stop. */
  readonly cleanup: boolean;
}

/**
 * Ends a live delegation's attempt: delegation_settled, then the step's own event (completed, or failed with the
 * attempt status its outcome maps to and the step's retry policy applied), then its run's end.
 */
function emitSettle(state: DagState, em: Emitter, d: Delegation, s: Settlement): void {
  em.emit("delegation_settled", d.step_id, { delegation_id: d.delegation_id, outcome: s.outcome, reason: s.reason, remote_status: s.remote_status, cleanup: s.cleanup });
  const step = holdsStep(state, d);
  if (step !== undefined) {
    if (s.outcome === "completed") {
      em.emit("task_step_completed", step.step_id, { result_summary: s.result_summary, artifact_ids: s.artifact_ids, ...closing(step) });
      emitRunningIfFirstActive(state, em, emitDependantsReady(state, em, step));
    } else {
      const attempt = RUN_END[s.outcome].attempt;
      // A child-task delegate past its children cap is not retried: the failure is final, as without a policy.
      const capped = d.kind === "task" && childCapReached(state, step.step_id, em.limits) !== null;
      const retry = capped ? {} : retryField(retryOutcome(state, step, attempt, s.reason, em.now));
      em.emit("task_step_failed", step.step_id, { reason: s.reason, result_summary: s.result_summary ?? s.reason, artifact_ids: null, attempt_status: attempt, ...closing(step), ...retry });
    }
  }
  emitRunEnded(state, em, d, s.outcome);
}

/** Closes a delegation whose step is already settled (a cancellation confirmed, or given up on). */
function emitClose(state: DagState, em: Emitter, d: Delegation, reason: string): void {
  em.emit("delegation_closed", d.step_id, { delegation_id: d.delegation_id, reason });
  emitRunEnded(state, em, d, d.outcome);
}


/** The artifact refs a peer's artifacts are recorded as: `a2a:<remote task>/<artifact id>`. */
function peerArtifactRefs(d: Delegation, artifacts: readonly { artifact_id: string }[]): string[] {
  return artifacts.slice(0, MAX_ARTIFACTS).map((a) => `a2a:${d.remote_task_id ?? "unknown"}/${a.artifact_id}`.slice(0, 512));
}

/** A peer's task as last seen: its state mapped to the step (settle, ask a person, or record the change). */
function onRemoteStatus(state: DagState, em: Emitter, ctx: DecideContext, d: Delegation, r: Extract<DelegationReport, { kind: "remote_status" }>): void {
  const artifacts = r.artifacts ?? [];
  const refs = peerArtifactRefs(d, artifacts);
  const refsChanged = refs.length > 0 && refs.join("\n") !== d.remote_artifact_refs.join("\n");
  const terminal = A2A_TERMINAL[r.remote_status];
  // A switch between the peer's stream and polling (either way) is a fact of its own.
  const switched = r.delivery_mechanism !== undefined && r.delivery_mechanism !== d.delivery_mechanism;
  const mechanism = switched ? { delivery_mechanism: r.delivery_mechanism } : {};
  if (d.status === "cancelling") {
    if (terminal === undefined) {
      if (r.remote_status !== d.remote_status || switched) em.emit("delegation_updated", d.step_id, { delegation_id: d.delegation_id, remote_status: r.remote_status, ...mechanism });
      return;
    }
    em.emit("delegation_updated", d.step_id, { delegation_id: d.delegation_id, remote_status: r.remote_status, ...mechanism, ...(refsChanged ? { remote_artifact_refs: refs } : {}) });
    emitClose(state, em, d, `peer task ${r.remote_status}`);
    return;
  }
  if (terminal !== undefined) {
    // Artifacts are recorded before the step settles: completion binds to them.
    em.emit("delegation_updated", d.step_id, { delegation_id: d.delegation_id, remote_status: r.remote_status, ...mechanism, remote_artifact_refs: refs });
    const texts = artifacts.map((a) => a.text).filter((t): t is string => t !== null && t !== "");
    const summary = r.status_message ?? (texts.length > 0 ? texts.join("\n\n") : `peer task ${d.remote_task_id} ${r.remote_status}`);
    emitSettle(state, em, d, {
      outcome: terminal,
      reason: terminal === "completed" ? null : terminal === "cancelled" ? "delegate_cancelled" : "delegate_failed",
      remote_status: r.remote_status,
      result_summary: clipText(summary, MAX_TEXT),
      artifact_ids: terminal === "completed" ? refs : [],
      cleanup: false,
    });
    return;
  }
  // A step waits for one action at a time: while another is open on it, the question is asked at a later report.
  if (A2A_WAITING.has(r.remote_status) && d.status === "active" && !state.index.stepActions.has(d.step_id)) {
    const actionId = `act_${ctx.newId().toLowerCase()}`;
    // The peer's id of its question, kept (or an earlier question's cleared) so the answer names the right one.
    const remoteAction = (r.remote_action_id ?? null) !== (d.remote_action_id ?? null) ? { remote_action_id: r.remote_action_id ?? null } : {};
    em.emit("delegation_updated", d.step_id, { delegation_id: d.delegation_id, status: "input_required", remote_status: r.remote_status, input_action_id: actionId, ...remoteAction, ...mechanism, ...(refsChanged ? { remote_artifact_refs: refs } : {}) });
    em.emit("action_requested", d.step_id, {
      action_id: actionId,
      kind: "input",
      prompt: clipText(r.status_message ?? "The delegated agent asks for input.", MAX_TEXT),
      input_schema: null,
      expires_at: new Date(ctx.now + ctx.limits.actionTimeoutMs).toISOString(),
      attempt_id: d.attempt_id,
      run_id: d.run_id,
    });
    return;
  }
  if (r.remote_status !== d.remote_status || refsChanged || switched) {
    em.emit("delegation_updated", d.step_id, { delegation_id: d.delegation_id, remote_status: r.remote_status, ...mechanism, ...(refsChanged ? { remote_artifact_refs: refs } : {}) });
  }
}

/** The intents whose failure fails the attempt (the delegate never got it), loses it (it stopped answering), or gives up a cancellation. */
const STARTING_INTENTS: ReadonlySet<string> = new Set(["create_child", "a2a_send"]);

/** An outbound call failed: tried again after a backoff, or, once tries are used up (or retrying cannot help), the attempt ends. */
function onTryFailed(state: DagState, em: Emitter, ctx: DecideContext, d: Delegation, r: Extract<DelegationReport, { kind: "try_failed" }>): void {
  const tries = d.tries + 1;
  if (r.retryable && tries < ctx.limits.delegateMaxTries) {
    em.emit("delegation_try_failed", d.step_id, {
      delegation_id: d.delegation_id,
      intent: r.intent,
      error: clipText(r.error, 2_000),
      tries,
      next_try_at: new Date(ctx.now + delegateRetryDelay(ctx.limits, tries)).toISOString(),
    });
    return;
  }
  const error = clipText(`${r.intent}: ${r.error}`, 2_000);
  if (d.status === "cancelling") {
    emitClose(state, em, d, `cancellation not confirmed: ${error}`);
    return;
  }
  const lost = r.intent === "a2a_follow";
  emitSettle(state, em, d, {
    outcome: lost ? "lost" : "failed",
    reason: lost ? "delegate_lost" : r.retryable ? "delegate_unreachable" : "delegate_refused",
    remote_status: null,
    result_summary: error,
    artifact_ids: [],
    // A peer that has the task but stopped taking our answer is told to stop.
    cleanup: r.intent === "a2a_answer",
  });
}

/** Does this report belong to the delegation's current state (a stale or repeated report changes nothing)? */
function reportFits(d: Delegation, r: DelegationReport): boolean {
  switch (r.kind) {
    case "started":
      return d.status === "starting" || (d.status === "cancelling" && d.remote_task_id === null);
    case "remote_status":
      return d.kind === "a2a" && d.status !== "closed" && d.status !== "starting";
    case "try_failed":
      if (d.status === "closed") return false;
      if (d.status === "cancelling") return r.intent === "cancel_child" || r.intent === "a2a_cancel" || STARTING_INTENTS.has(r.intent) || r.intent === "a2a_follow";
      if (d.status === "starting") return STARTING_INTENTS.has(r.intent);
      if (d.status === "answering") return r.intent === "a2a_answer" || r.intent === "a2a_follow";
      return r.intent === "a2a_follow";
    case "child_settled":
      return d.kind === "task" && d.status !== "closed";
    case "answered":
      return d.status === "answering";
    case "cancel_acknowledged":
      return d.status === "cancelling" && d.cancel_sent_at === null;
  }
}

/** The runtime records what one of a delegation's outbound calls found (or a child's report). */
export function decideRecordDelegation(state: DagState, cmd: CommandOf<"record_delegation">, ctx: DecideContext): Decision {
  const d = state.delegations.get(cmd.delegation_id);
  if (d === undefined) return refuse(runtimeError("not_found", `no delegation ${cmd.delegation_id}`, { delegation_id: cmd.delegation_id }));
  const r = cmd.report;
  if (r.kind === "child_settled" && r.child_task_id !== d.child_task_id) {
    return refuse(runtimeError("validation_error", `delegation ${d.delegation_id} created child ${d.child_task_id}, not ${r.child_task_id}`, { child_task_id: d.child_task_id }));
  }
  if (!reportFits(d, r)) return acceptNothing();
  const em = new Emitter(state, ctx, systemActor(state.task!.session_id));
  switch (r.kind) {
    case "started":
      em.emit("delegation_updated", d.step_id, {
        delegation_id: d.delegation_id,
        ...(d.status === "starting" ? { status: "active" as const } : {}),
        remote_task_id: r.remote_task_id,
        remote_context_id: r.remote_context_id ?? null,
        remote_status: r.remote_status ?? null,
        delivery_mechanism: r.delivery_mechanism,
      });
      break;
    case "remote_status":
      onRemoteStatus(state, em, ctx, d, r);
      break;
    case "try_failed":
      onTryFailed(state, em, ctx, d, r);
      break;
    case "child_settled":
      if (d.status === "cancelling") {
        em.emit("delegation_updated", d.step_id, { delegation_id: d.delegation_id, remote_status: r.child_status });
        emitClose(state, em, d, `child task ${r.child_status}`);
      } else {
        emitSettle(state, em, d, {
          outcome: r.child_status,
          reason: r.child_status === "completed" ? null : `delegate_${r.child_status}`,
          remote_status: r.child_status,
          result_summary: r.result_summary,
          artifact_ids: r.child_status === "completed" ? r.artifact_ids : [],
          cleanup: false,
        });
      }
      break;
    case "answered":
      em.emit("delegation_updated", d.step_id, { delegation_id: d.delegation_id, status: "active", input_action_id: null });
      break;
    case "cancel_acknowledged":
      if (r.remote_state === "not_created") emitClose(state, em, d, "the delegate was never created");
      else em.emit("delegation_updated", d.step_id, { delegation_id: d.delegation_id, cancel_sent: true });
      break;
  }
  return accept(em);
}

/** A child task records whether its result reached its parent. */
export function decideRecordDelivery(state: DagState, cmd: CommandOf<"record_delivery">, ctx: DecideContext): Decision {
  const task = state.task!;
  if (task.delegated_from === null) return refuse(runtimeError("invalid_transition", "only a child task owes its parent a result", { task_id: task.task_id }));
  if (task.delivery_state !== "pending") return acceptNothing();
  const em = new Emitter(state, ctx, systemActor(task.session_id));
  em.emit("task_delivery_recorded", null, { delivery_state: cmd.delivery_state, detail: cmd.detail ?? null });
  return accept(em);
}

/** A delegation whose deadline passed: the attempt ends timed_out and the delegate is told to stop. */
export function emitDelegationTimeout(state: DagState, em: Emitter, d: Delegation): void {
  emitSettle(state, em, d, { outcome: "timed_out", reason: "delegate_timeout", remote_status: d.remote_status, result_summary: "delegate_timeout", artifact_ids: [], cleanup: true });
}

const DELEGATION_EVENTS: ReadonlySet<string> = new Set(["step_delegated", "delegation_updated", "delegation_try_failed", "delegation_cancel_requested", "delegation_settled", "delegation_closed"]);

/**
 * After any accepted decision (the delegation counterpart of withdrawEndedActions): a live delegation whose step's
 * claim the decision ended some other way (a task-level stop, a cancelled run, the orchestrator settling the step)
 * is to be cancelled, so the delegate never runs on unobserved; a peer's question that a person answered is sent
 * back, and one refused or left to expire ends the attempt. Delegations the decision itself changed are left alone.
 */
export function followUpDelegations(state: DagState, events: WalEvent[], ctx: DecideContext): void {
  if (state.index.openDelegations.size === 0 || events.length === 0) return;
  const touched = new Set<string>();
  const ended = new Map<string, string | null>();
  const answers = new Map<string, string>();
  for (const e of events) {
    if (DELEGATION_EVENTS.has(e.event_type)) touched.add((e.payload as { delegation_id: string }).delegation_id);
    else if (CLAIM_ENDING_EVENTS.has(e.event_type) && e.step_id !== null) ended.set(e.step_id, (e.payload as { reason?: string | null }).reason ?? e.event_type);
    else if (e.event_type === "action_resolved") answers.set(e.payload.action_id, e.payload.decision);
  }
  let em: Emitter | null = null;
  const emitter = () => (em ??= new Emitter(state, ctx, systemActor(state.task!.session_id), events[events.length - 1]!.wal_seq));
  for (const id of state.index.openDelegations) {
    const d = state.delegations.get(id)!;
    if (touched.has(id) || !LIVE_DELEGATION_STATUSES.has(d.status)) continue;
    if (ended.has(d.step_id) && holdsStep(state, d) !== undefined) {
      emitter().emit("delegation_cancel_requested", d.step_id, { delegation_id: id, reason: ended.get(d.step_id) ?? "claim_ended" });
      continue;
    }
    const decision = d.input_action_id === null ? undefined : answers.get(d.input_action_id);
    if (decision === undefined || d.status !== "input_required") continue;
    if (decision === "submitted") {
      emitter().emit("delegation_updated", d.step_id, { delegation_id: id, status: "answering" });
    } else if (decision === "rejected" || decision === "expired") {
      const reason = `delegate_input_${decision}`;
      emitSettle(state, emitter(), d, { outcome: "failed", reason, remote_status: d.remote_status, result_summary: reason, artifact_ids: [], cleanup: true });
    }
  }
  if (em !== null) events.push(...(em as Emitter).events);
}
