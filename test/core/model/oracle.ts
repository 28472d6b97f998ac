/**
 * @module The model's own, deliberately naive, view of what a command must do: accept or refuse, with which
 * code where the rules leave no doubt, and what must hold afterwards. Computed by full scans, independently of
 * the core's indexes.
 */
import { isDeepStrictEqual } from "node:util";
import { expect } from "vitest";
import {
  type Action,
  type Actor,
  type Command,
  type CommandOf,
  CommandSchema,
  type CoreLimits,
  type DagState,
  type Decision,
  type ErrorCode,
  HELD_STEP_STATUSES,
  isTerminalTask,
  type Step,
  type WorkerRun,
} from "../../../src/core/index.js";
import { BAD_INPUT_SCHEMA } from "./actions.js";

/** What the model expects of one command; unset fields are left to the invariants. */
export interface Prediction {
  accept?: boolean;
  code?: ErrorCode;
  /** claim_step / claim_next: the step that must be claimed, or the no_step_claimed reason. */
  claim?: { step_id: string } | { none: "no_ready_step" | "run_budget_spent" };
  /** Accepted events may only be these types (a terminal task takes a late run result and nothing else). */
  onlyEvents?: readonly string[];
  /** A refusal's details must include these (a run asked to cancel is told so). */
  details?: Record<string, unknown>;
  /** A check on the state after an accepted command. */
  after?: (state: DagState) => void;
}

type Caller = { kind: "orchestrator" } | { kind: "worker"; run: WorkerRun } | { kind: "approver" } | { kind: "outsider" } | { kind: "system" };

/** Who the caller really is for this task: a forged, foreign or other-session token is an outsider. */
function classify(state: DagState, actor: Actor): Caller {
  const task = state.task!;
  if (actor.role === "system") return { kind: "system" };
  if (actor.session_id !== task.session_id || actor.role === "observer") return { kind: "outsider" };
  if (actor.role === "orchestrator") return { kind: "orchestrator" };
  if (actor.role === "approver") return { kind: "approver" };
  const run = actor.run_id === null ? undefined : state.runs.get(actor.run_id);
  if (actor.task_id !== task.task_id || run === undefined || run.agent_id !== actor.agent_id) return { kind: "outsider" };
  return { kind: "worker", run };
}

/** Steps in creation order, by a full scan. */
function byOrdinal(state: DagState): Step[] {
  return [...state.steps.values()].sort((a, b) => a.ordinal - b.ordinal);
}

/** The step claim_next must take: the oldest ready step in the run's pool and scope (naive scan). */
export function naiveFirstClaimable(state: DagState, run: WorkerRun): Step | undefined {
  return byOrdinal(state).find((s) => s.status === "ready" && s.delegate === null && s.worker_pool_id === run.worker_pool_id && (run.allowed_step_ids === null || run.allowed_step_ids.includes(s.step_id)));
}

const WORKER_TOOLS: ReadonlySet<string> = new Set(["claim_step", "claim_next", "update_step", "append_progress", "finish_run", "request_action"]);
const ORCHESTRATOR_TOOLS: ReadonlySet<string> = new Set([
  "create_task", "update_task", "update_step", "append_progress", "complete_task", "fail_task", "cancel_task", "block_task", "reopen_task", "dispatch_worker", "finish_run", "cancel_run",
  "pause_task", "resume_task", "request_action", "respond_action", "archive_task",
]);
/** Tools that change the DAG: on a terminal task every one answers task_terminal and writes nothing. */
const STEP_CHANGING: ReadonlySet<string> = new Set([
  "claim_step", "claim_next", "update_step", "append_progress", "update_task", "complete_task", "fail_task", "cancel_task", "block_task", "reopen_task", "dispatch_worker", "cancel_run",
  "pause_task", "resume_task", "request_action",
]);

const ORCHESTRATOR_UNHELD: Record<string, readonly string[]> = {
  pending: ["blocked", "failed", "cancelled"],
  ready: ["blocked", "completed", "failed", "cancelled"],
};

function predictClaim(state: DagState, run: WorkerRun, cmd: Command): Prediction {
  const task = state.task!;
  // A live run of a blocked or paused task is told so before anything else about its claim.
  if (run.status === "active" && (task.status === "blocked" || task.status === "paused")) return { accept: false, code: "task_not_dispatchable" };
  // So is one of a task other tasks still block (the session graph's blocks links).
  if (run.status === "active" && task.blocked_by.length > 0) return { accept: false, code: "task_not_dispatchable", details: { blocked_by: task.blocked_by } };
  if (run.status !== "active" || run.current_step_id !== null) return { accept: false };
  if (cmd.type === "claim_next") {
    if (run.claims_used >= run.max_steps) return { accept: true, claim: { none: "run_budget_spent" } };
    const first = naiveFirstClaimable(state, run);
    return { accept: true, claim: first === undefined ? { none: "no_ready_step" } : { step_id: first.step_id } };
  }
  if (cmd.type !== "claim_step") throw new Error("not a claim");
  const step = state.steps.get(cmd.step_id);
  // The runtime runs a delegated step through its delegate: no worker may claim it (said once the run may claim at all).
  if (step?.delegate != null && run.claims_used < run.max_steps) return { accept: false, code: "permission_denied" };
  const ok =
    run.claims_used < run.max_steps &&
    step !== undefined &&
    step.status === "ready" &&
    step.worker_pool_id === run.worker_pool_id &&
    (run.allowed_step_ids === null || run.allowed_step_ids.includes(step.step_id));
  return ok ? { accept: true, claim: { step_id: step.step_id } } : { accept: false };
}

function predictLive(state: DagState, caller: Caller & { kind: "orchestrator" | "worker" }, cmd: Command, now: number, limits: CoreLimits): Prediction {
  const task = state.task!;
  if (caller.kind === "worker" && !WORKER_TOOLS.has(cmd.type)) return { accept: false, code: "tool_not_available" };
  if (caller.kind === "orchestrator" && !ORCHESTRATOR_TOOLS.has(cmd.type)) return { accept: false, code: "tool_not_available" };
  switch (cmd.type) {
    case "create_task":
      return { accept: false, code: "task_id_conflict" };
    case "claim_step":
    case "claim_next":
      return predictClaim(state, (caller as { run: WorkerRun }).run, cmd);
    case "update_step": {
      const step = state.steps.get(cmd.step_id);
      const held = step !== undefined && HELD_STEP_STATUSES.has(step.status);
      const after = (s: DagState) => expect(s.steps.get(cmd.step_id)?.status, "update_step sets the status asked for").toBe(cmd.status);
      // Readiness is the core's: nobody writes pending or ready (refused by the schema or by decide).
      const asked: string = cmd.status;
      if (asked === "pending" || asked === "ready") return { accept: false };
      // Nobody writes pending or ready: readiness is the core's, reopening the orchestrator's task_update.
      if (step !== undefined && (cmd.status === "pending" || cmd.status === "ready")) return { accept: false, code: "invalid_transition" };
      if (caller.kind === "worker") {
        if (caller.run.status !== "active" || !held || step.claimed_by_run_id !== caller.run.run_id) return { accept: false };
        return cmd.status === "claimed" && step.status === "running" ? { accept: false, code: "invalid_transition" } : { accept: true, after };
      }
      if (step === undefined) return { accept: false, code: "not_found" };
      if (held) return cmd.status === "cancelled" || (cmd.status === "claimed" && step.status === "running") ? { accept: false, code: "invalid_transition" } : { accept: true, after };
      return ORCHESTRATOR_UNHELD[step.status]?.includes(cmd.status) ? { accept: true, after } : { accept: false, code: "invalid_transition" };
    }
    case "append_progress": {
      if (caller.kind === "orchestrator") return { accept: cmd.step_id === undefined || state.steps.has(cmd.step_id) };
      const stepId = cmd.step_id ?? caller.run.current_step_id;
      const step = stepId === null ? undefined : state.steps.get(stepId);
      return { accept: caller.run.status === "active" && step !== undefined && HELD_STEP_STATUSES.has(step.status) && step.claimed_by_run_id === caller.run.run_id };
    }
    case "complete_task": {
      const ok = byOrdinal(state).every((s) => (!s.required || s.status === "completed") && !HELD_STEP_STATUSES.has(s.status));
      return ok ? { accept: true, after: (s) => expect(s.task!.status).toBe("completed") } : { accept: false, code: "task_not_completeable" };
    }
    case "fail_task":
    case "cancel_task": {
      const status = cmd.type === "fail_task" ? "failed" : "cancelled";
      // A forced stop: every live run is asked to cancel, with one deadline, and stays open; the task is terminal at once.
      const live = [...state.runs.values()].filter((r) => r.status === "active").map((r) => r.run_id);
      const deadline = new Date(now + limits.childCancelTimeoutMs).toISOString();
      return {
        accept: true,
        after: (s) => {
          expect(s.task!.status).toBe(status);
          for (const id of live) expect(s.runs.get(id), `run ${id} asked to cancel`).toMatchObject({ status: "cancelling", cancel_request: { reason: `task_${status}`, deadline_at: deadline } });
        },
      };
    }
    case "block_task":
      return task.status === "blocked" || task.status === "paused" ? { accept: false, code: "invalid_transition" } : { accept: true, after: (s) => expect(s.task!.status).toBe("blocked") };
    case "reopen_task":
      return task.status === "blocked" ? { accept: true, after: (s) => expect(s.task!.status === "pending" || s.task!.status === "running").toBe(true) } : { accept: false, code: "invalid_transition" };
    case "dispatch_worker": {
      if (task.status === "blocked" || task.status === "paused") return { accept: false, code: "task_not_dispatchable" };
      if (task.blocked_by.length > 0) return { accept: false, code: "task_not_dispatchable", details: { blocked_by: task.blocked_by } };
      const known = (cmd.allowed_step_ids ?? []).every((id) => state.steps.has(id));
      return known ? { accept: true } : { accept: false, code: "validation_error" };
    }
    case "cancel_run": {
      const run = state.runs.get(cmd.run_id);
      return { accept: run?.status === "active", after: (s) => expect(s.runs.get(cmd.run_id)?.status).toBe("cancelled") };
    }
    case "finish_run": {
      const run = state.runs.get(cmd.run_id);
      if (caller.kind === "worker" && cmd.run_id !== caller.run.run_id) return { accept: false, code: "permission_denied" };
      if (run === undefined) return { accept: false, code: "not_found" };
      // An ended run of a live task: refused unless it hands in a late result (the late-result rule is the core's).
      return run.status === "active" ? { accept: true, after: (s) => expect(s.runs.get(cmd.run_id)?.status).not.toBe("active") } : { onlyEvents: ["worker_run_ended"] };
    }
    case "pause_task":
      return task.status === "pending" || task.status === "running"
        ? { accept: true, after: (s) => expect(s.task!.status).toBe("paused") }
        : { accept: false, code: "invalid_transition" };
    case "resume_task":
      return task.status === "paused"
        ? { accept: true, after: (s) => expect(["pending", "running"]).toContain(s.task!.status) }
        : { accept: false, code: "invalid_transition" };
    case "archive_task":
      return { accept: false, code: "invalid_transition" };
    case "request_action":
      return predictRequest(state, caller, cmd);
    case "respond_action":
      return predictRespond(state, cmd, now);
    case "reconcile_leases":
    case "update_task":
      return {};
    // The runtime's own records: no token's role sends them.
    case "record_delegation":
    case "record_delivery":
    case "cancel_for_parent":
    case "set_blockers":
    case "queue_webhook_deliveries":
    case "record_webhook_tries":
    case "retry_webhook_delivery":
      return { accept: false, code: "tool_not_available" };
  }
}

/** The open action on a step, by a full scan. */
function openActionOn(state: DagState, stepId: string): Action | undefined {
  return [...state.actions.values()].find((a) => a.status === "open" && a.step_id === stepId);
}

/** request_action by the orchestrator or a worker of a live task. */
function predictRequest(state: DagState, caller: Caller & { kind: "orchestrator" | "worker" }, cmd: CommandOf<"request_action">): Prediction {
  if (cmd.input_schema !== undefined && (cmd.kind === "approval" || isDeepStrictEqual(cmd.input_schema, BAD_INPUT_SCHEMA))) return { accept: false, code: "validation_error" };
  const asked = (s: DagState) => {
    const mine = [...s.actions.values()].filter((a) => a.status === "open" && a.step_id === (cmd.step_id ?? null) && a.prompt === cmd.prompt);
    expect(mine.length, "the asked action is open").toBeGreaterThan(0);
  };
  if (cmd.step_id === undefined) return caller.kind === "worker" ? { accept: false, code: "tool_not_available" } : { accept: true, after: asked };
  const step = state.steps.get(cmd.step_id);
  if (step === undefined) return { accept: false, code: "not_found" };
  const held = HELD_STEP_STATUSES.has(step.status);
  if (caller.kind === "worker" && (caller.run.status !== "active" || !held || step.claimed_by_run_id !== caller.run.run_id)) return { accept: false, code: "permission_denied" };
  if (!held || openActionOn(state, step.step_id) !== undefined) return { accept: false, code: "invalid_transition" };
  return {
    accept: true,
    after: (s) => {
      asked(s);
      expect(openActionOn(s, step.step_id)?.attempt_id, "a step's action belongs to its current attempt").toBe(step.current_attempt_id);
    },
  };
}

/** True when `input` fits the model's INPUT_SCHEMA (an object whose region is a string). */
function fitsInputSchema(input: unknown): boolean {
  return typeof input === "object" && input !== null && !Array.isArray(input) && typeof (input as { region?: unknown }).region === "string";
}

/** respond_action by the orchestrator or an approver. */
function predictRespond(state: DagState, cmd: CommandOf<"respond_action">, now: number): Prediction {
  const action = state.actions.get(cmd.action_id);
  if (action === undefined) return { accept: false, code: "not_found" };
  if (action.status !== "open") return { accept: false, code: "action_resolved" };
  const fits = action.kind === "approval" ? cmd.decision !== "submitted" : cmd.decision !== "approved";
  if (!fits || (cmd.decision !== "submitted" && cmd.input !== undefined)) return { accept: false, code: "validation_error" };
  if (cmd.decision === "submitted" && (cmd.input === undefined || (action.input_schema !== null && !fitsInputSchema(cmd.input)))) return { accept: false, code: "validation_error" };
  const step = action.step_id === null ? undefined : state.steps.get(action.step_id);
  const waiting = step !== undefined && HELD_STEP_STATUSES.has(step.status) && step.current_attempt_id === action.attempt_id;
  const lease = new Date(now + state.task!.step_lease_timeout_ms).toISOString();
  return {
    accept: true,
    after: (s) => {
      expect(s.actions.get(action.action_id), "the answer resolves the action").toMatchObject({ status: "resolved", decision: cmd.decision, input: cmd.input ?? null });
      // A step the runtime holds for its delegate has no lease to restart.
      if (waiting) expect(s.steps.get(step.step_id)?.lease_expires_at, "the answer restarts the step's lease").toBe(step.delegate === null ? lease : null);
    },
  };
}

/**
 * After reconciling at `now`, nothing held is past its lease, no active run is past its deadline, no run asked
 * to cancel is past its cancellation deadline, no live delegation is past its deadline, and `alsoHolds`.
 */
function nothingDue(now: number, alsoHolds: (state: DagState) => void) {
  return (state: DagState) => {
    alsoHolds(state);
    for (const run of state.runs.values()) {
      if (run.status === "cancelling") expect(Date.parse(run.cancel_request!.deadline_at) > now, `cancellation of ${run.run_id} timed out`).toBe(true);
    }
    if (isTerminalTask(state.task!)) return;
    const waiting = new Set<string>();
    for (const action of state.actions.values()) {
      if (action.status !== "open") continue;
      expect(Date.parse(action.expires_at) > now, `action ${action.action_id} expired`).toBe(true);
      if (action.step_id !== null) waiting.add(action.step_id);
    }
    for (const step of state.steps.values()) {
      // An open action suspends its step's lease; a step the runtime holds for its delegate has none.
      if (HELD_STEP_STATUSES.has(step.status) && !waiting.has(step.step_id) && step.delegate === null) expect(Date.parse(step.lease_expires_at!) > now, `lease of ${step.step_id} reconciled`).toBe(true);
      if (step.retry_at !== null) expect(Date.parse(step.retry_at) > now, `retry of ${step.step_id} fired`).toBe(true);
    }
    for (const run of state.runs.values()) {
      if (run.status === "active" && run.deadline_at !== null) expect(Date.parse(run.deadline_at) > now, `deadline of ${run.run_id} reconciled`).toBe(true);
    }
    for (const d of state.delegations.values()) {
      if (LIVE.has(d.status) && d.deadline_at !== null) expect(Date.parse(d.deadline_at) > now, `deadline of delegation ${d.delegation_id} reconciled`).toBe(true);
    }
  };
}

const LIVE: ReadonlySet<string> = new Set(["starting", "active", "input_required", "answering"]);

/** Every delegated step ready before reconciling a task that may start delegates (pending or running, no task blocking it) is taken up by it. */
function readyDelegatedTakenUp(before: DagState): (state: DagState) => void {
  const starts = (before.task!.status === "pending" || before.task!.status === "running") && before.task!.blocked_by.length === 0;
  const ready = starts ? byOrdinal(before).filter((s) => s.delegate !== null && s.status === "ready").map((s) => s.step_id) : [];
  return (state) => {
    for (const id of ready) {
      const step = state.steps.get(id)!;
      expect(step.status, `ready delegated step ${id} taken up`).toBe("running");
      expect(state.delegations.get(step.delegation_id!)?.attempt_id, `step ${id} runs a new delegation`).toBe(step.current_attempt_id);
    }
  };
}

/** A2A task states after which a peer's task changes no more. */
const PEER_TERMINAL: ReadonlySet<string> = new Set(["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_REJECTED", "TASK_STATE_CANCELED"]);

/**
 * The runtime's record of a delegation's outbound call: an unknown delegation is not_found, a child report naming
 * another child a validation_error; a closed delegation takes nothing; a delegate's end settles a live delegation
 * (its step no longer held by it) or closes one being cancelled.
 */
function predictRecordDelegation(state: DagState, cmd: CommandOf<"record_delegation">): Prediction {
  const d = state.delegations.get(cmd.delegation_id);
  if (d === undefined) return { accept: false, code: "not_found" };
  const r = cmd.report;
  if (r.kind === "child_settled" && r.child_task_id !== d.child_task_id) return { accept: false, code: "validation_error" };
  if (d.status === "closed") return { accept: true, onlyEvents: [] };
  const wrongKind = (r.kind === "remote_status" && d.kind !== "a2a") || (r.kind === "child_settled" && d.kind !== "task");
  if (wrongKind || (r.kind === "answered" && d.status !== "answering") || (r.kind === "started" && d.status !== "starting" && d.status !== "cancelling")) return { accept: true, onlyEvents: [] };
  const ends = r.kind === "child_settled" || (r.kind === "remote_status" && d.status !== "starting" && PEER_TERMINAL.has(r.remote_status));
  if (!ends) return { accept: true };
  const live = LIVE.has(d.status);
  return {
    accept: true,
    after: (s) => {
      const after = s.delegations.get(d.delegation_id)!;
      expect(after.status, `delegation ${d.delegation_id} ends with its delegate`).toBe("closed");
      const step = s.steps.get(d.step_id);
      if (step !== undefined) expect(step.current_attempt_id === d.attempt_id, `step ${d.step_id} is no longer held by the ended delegation`).toBe(false);
      if (live) expect(s.attempts.get(d.attempt_id)?.status, "the delegation's attempt ended").not.toBe("active");
      if (live && after.outcome === "completed") expect(step?.status, "a completed delegate completes its step").toBe("completed");
    },
  };
}

/** A child task records its delivery once it ended, once; a task nobody delegated refuses. */
function predictRecordDelivery(state: DagState, cmd: CommandOf<"record_delivery">): Prediction {
  const task = state.task!;
  if (task.delegated_from === null) return { accept: false, code: "invalid_transition" };
  if (task.delivery_state !== "pending") return { accept: true, onlyEvents: [] };
  return { accept: true, onlyEvents: ["task_delivery_recorded"], after: (s) => expect(s.task!.delivery_state).toBe(cmd.delivery_state) };
}

/**
 * The webhook outbox, in any task status: a delivery is queued once, pending; a try of a pending one counts, a 2xx
 * delivers it, a 410, a final refusal or the last try fails it, anything else leaves it pending; other outcomes
 * change nothing; only a failed delivery is retried (not_found for one never queued).
 */
function predictWebhook(state: DagState, cmd: CommandOf<"queue_webhook_deliveries" | "record_webhook_tries" | "retry_webhook_delivery">): Prediction {
  if (cmd.type === "queue_webhook_deliveries") {
    const fresh = new Set(cmd.deliveries.map((d) => d.delivery_id).filter((id) => !state.webhookDeliveries.has(id)));
    return { accept: true, onlyEvents: fresh.size === 0 ? [] : ["webhook_deliveries_queued"], after: (s) => fresh.forEach((id) => expect(s.webhookDeliveries.get(id)?.status).toBe("pending")) };
  }
  if (cmd.type === "retry_webhook_delivery") {
    const d = state.webhookDeliveries.get(cmd.delivery_id);
    if (d === undefined) return { accept: false, code: "not_found" };
    if (d.status !== "failed") return { accept: false, code: "invalid_transition" };
    return { accept: true, onlyEvents: ["webhook_delivery_retried"], after: (s) => expect(s.webhookDeliveries.get(d.delivery_id)!.status).toBe("pending") };
  }
  const expected = new Map<string, string>();
  for (const t of cmd.tries) {
    const d = state.webhookDeliveries.get(t.delivery_id);
    if (d === undefined || d.status !== "pending" || expected.has(t.delivery_id)) continue;
    const ok = t.status_code !== null && t.status_code >= 200 && t.status_code < 300;
    expected.set(t.delivery_id, ok ? "delivered" : t.final === true || t.status_code === 410 || d.attempts + 1 >= cmd.max_tries ? "failed" : "pending");
  }
  // A delivered delivery leaves memory (its subscription's count keeps it).
  return { accept: true, onlyEvents: expected.size === 0 ? [] : ["webhook_deliveries_tried"], after: (s) => expected.forEach((status, id) => expect(s.webhookDeliveries.get(id)?.status, `delivery ${id}`).toBe(status === "delivered" ? undefined : status)) };
}

/** A finish_run on a terminal task: a run asked to cancel ends cancelled with its result; others only a late result. */
function predictTerminalFinish(state: DagState, caller: Caller & { kind: "orchestrator" | "worker" }, cmd: Command & { type: "finish_run" }): Prediction {
  const run = state.runs.get(cmd.run_id);
  const own = caller.kind === "orchestrator" || caller.run.run_id === cmd.run_id;
  if (run?.status !== "cancelling" || !own) return { onlyEvents: ["worker_run_ended"] };
  const reason = run.cancel_request!.reason;
  return {
    accept: true,
    onlyEvents: ["worker_run_ended"],
    after: (s) => expect(s.runs.get(cmd.run_id), "a run asked to cancel ends with its result").toMatchObject({ status: "cancelled", status_reason: reason, result: cmd.result ?? null }),
  };
}

/** Run statuses after which the run's token is spent. */
const ENDED_RUN: ReadonlySet<string> = new Set(["finished", "cancelled", "timed_out"]);
/** Why a task's own end stopped a run: such a run may still hand in its result, once. */
const TASK_END_REASONS: ReadonlySet<string> = new Set(["task_completed", "task_failed", "task_cancelled", "child_agent_cancel_timeout"]);

/** The one command a spent run token may still send: its own finish with the result of a run the task's end stopped, once. */
function handsInLateResult(run: WorkerRun, cmd: Command): boolean {
  return cmd.type === "finish_run" && cmd.run_id === run.run_id && cmd.result != null && run.result === null && run.status_reason !== null && TASK_END_REASONS.has(run.status_reason);
}

/** An answer on an ended task: its actions were all withdrawn when it ended. */
function respondToEnded(state: DagState, cmd: CommandOf<"respond_action">): Prediction {
  return { accept: false, code: state.actions.has(cmd.action_id) ? "action_resolved" : "not_found" };
}

/** What a terminal task's refusal tells a worker whose run it asked to cancel. */
function cancelDetails(caller: Caller): Record<string, unknown> | undefined {
  if (caller.kind !== "worker" || caller.run.cancel_request === null) return undefined;
  return { run_cancel_requested: true, run_id: caller.run.run_id, reason: caller.run.cancel_request.reason, cancel_deadline_at: caller.run.cancel_request.deadline_at };
}

/** The system records a newer push of blockers (live or terminal task alike) and ignores an older or equal one. */
function predictSetBlockers(task: NonNullable<DagState["task"]>, cmd: CommandOf<"set_blockers">): Prediction {
  const before = { blocked_by: [...task.blocked_by], blockers_version: task.blockers_version };
  const newer = cmd.version > task.blockers_version;
  return {
    accept: true,
    after: (s) => {
      const expected = newer ? { blocked_by: [...new Set(cmd.blocked_by)].sort(), blockers_version: cmd.version } : before;
      expect({ blocked_by: s.task!.blocked_by, blockers_version: s.task!.blockers_version }).toEqual(expected);
    },
  };
}

/** The orchestrator archives a terminal task once (with its retention deadline); again, it writes nothing. */
function predictArchive(task: NonNullable<DagState["task"]>, now: number, limits: CoreLimits): Prediction {
  if (task.archived_at !== null) return { accept: true, onlyEvents: [], after: (s) => expect(s.task!.archived_at).toBe(task.archived_at) };
  const deleteAfter = limits.retentionDays > 0 ? new Date(now + limits.retentionDays * 86_400_000).toISOString() : null;
  return {
    accept: true,
    onlyEvents: ["task_archived"],
    after: (s) => expect({ archived_at: s.task!.archived_at, delete_after: s.task!.delete_after, status: s.task!.status }).toEqual({ archived_at: new Date(now).toISOString(), delete_after: deleteAfter, status: task.status }),
  };
}

/** The model's prediction for `command` by `actor` at `now` under `limits`, before the core decides it. */
export function predict(state: DagState, actor: Actor, command: unknown, now: number, limits: CoreLimits): Prediction {
  const parsed = CommandSchema.safeParse(command);
  if (!parsed.success) return { accept: false, code: "validation_error" };
  const cmd = parsed.data;
  const task = state.task;
  if (task === null) return cmd.type === "create_task" && actor.role === "orchestrator" ? {} : { accept: false };
  // A terminal task only stops waiting for the runs it asked to cancel.
  if (cmd.type === "reconcile_leases") return { accept: true, after: nothingDue(now, readyDelegatedTakenUp(state)), ...(isTerminalTask(task) ? { onlyEvents: ["child_agent_cancel_timeout", "worker_run_ended"] } : {}) };
  const caller = classify(state, actor);
  if (caller.kind === "system") {
    if (cmd.type === "record_delegation") return predictRecordDelegation(state, cmd);
    if (cmd.type === "record_delivery") return predictRecordDelivery(state, cmd);
    if (cmd.type === "set_blockers") return predictSetBlockers(task, cmd);
    if (cmd.type === "queue_webhook_deliveries" || cmd.type === "record_webhook_tries" || cmd.type === "retry_webhook_delivery") return predictWebhook(state, cmd);
    return { accept: false };
  }
  if (caller.kind === "outsider") return { accept: false };
  if (caller.kind === "approver") {
    if (cmd.type !== "respond_action") return { accept: false, code: "tool_not_available" };
    return isTerminalTask(task) ? respondToEnded(state, cmd) : predictRespond(state, cmd, now);
  }
  if (caller.kind === "worker" && WORKER_TOOLS.has(cmd.type) && ENDED_RUN.has(caller.run.status) && !handsInLateResult(caller.run, cmd)) {
    return { accept: false, code: "unauthorized", details: { reason: "run_ended", run_id: caller.run.run_id, run_status: caller.run.status } };
  }
  if (isTerminalTask(task)) {
    if (cmd.type === "respond_action" && caller.kind === "orchestrator") return respondToEnded(state, cmd);
    // A run stopped by the task's end may still hand in its result; nothing else is written.
    if (cmd.type === "finish_run") return predictTerminalFinish(state, caller, cmd);
    if (cmd.type === "archive_task" && caller.kind === "orchestrator") return predictArchive(task, now, limits);
    const mayUse = caller.kind === "orchestrator" ? ORCHESTRATOR_TOOLS.has(cmd.type) : WORKER_TOOLS.has(cmd.type);
    if (!mayUse) return { accept: false };
    if (cmd.type === "create_task") return { accept: false, code: "task_id_conflict" };
    if (!STEP_CHANGING.has(cmd.type)) return { accept: false };
    const details = cancelDetails(caller);
    return { accept: false, code: "task_terminal", ...(details === undefined ? {} : { details }) };
  }
  return predictLive(state, caller, cmd, now, limits);
}

/** Checks a decision against the prediction; `state` is the state after the events were applied. */
export function verify(prediction: Prediction, decision: Decision, state: DagState, label: string): void {
  if (prediction.accept !== undefined && prediction.accept !== decision.ok) {
    const got = decision.ok ? `accepted (${decision.events.map((e) => e.event_type).join(", ")})` : `refused with ${decision.error.code}: ${decision.error.message}`;
    throw new Error(`${label}: expected ${prediction.accept ? "acceptance" : "refusal"}, got ${got}`);
  }
  if (!decision.ok) {
    if (prediction.code !== undefined && decision.error.code !== prediction.code) {
      throw new Error(`${label}: expected ${prediction.code}, got ${decision.error.code}: ${decision.error.message}`);
    }
    if (prediction.details !== undefined) expect(decision.error.details, `${label}: details of ${decision.error.code}`).toMatchObject(prediction.details);
    return;
  }
  if (prediction.onlyEvents !== undefined) {
    const extra = decision.events.filter((e) => !prediction.onlyEvents!.includes(e.event_type));
    if (extra.length > 0) throw new Error(`${label}: unexpected events ${extra.map((e) => e.event_type).join(", ")}`);
  }
  if (prediction.claim !== undefined) {
    if ("step_id" in prediction.claim) {
      expect(decision.value, `${label}: claimed step`).toMatchObject({ kind: "claimed", step_id: prediction.claim.step_id });
      expect(state.steps.get(prediction.claim.step_id)?.status).toBe("claimed");
    } else {
      expect(decision.value, `${label}: no step claimed`).toEqual({ kind: "no_step_claimed", reason: prediction.claim.none });
      expect(decision.events).toEqual([]);
    }
  }
  prediction.after?.(state);
}
