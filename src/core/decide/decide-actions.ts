/**
 * @module Human actions (request_action / respond_action; runtime events action.required / action.resolved):
 * asking, answering, and withdrawing the actions whose step or task ended. An open action keeps its step's lease
 * from expiring; its resolution restarts it.
 */
import { Validator } from "@cfworker/json-schema";
import type { CommandOf } from "../model/commands.js";
import type { DecideContext, Decision } from "./context.js";
import { Emitter, systemActor } from "./context.js";
import { CLAIM_ENDING_EVENTS } from "./decide-shared.js";
import { accept, refuse } from "./decision.js";
import { limitExceeded, type RuntimeError, runtimeError } from "../model/errors.js";
import { LIMIT_SETTINGS } from "../model/limits.js";
import type { WalEvent } from "../events/events.js";
import { checkScope, requireActiveWorkerRun, requireLiveTaskFor } from "./guards.js";
import { type Action, HELD_STEP_STATUSES } from "../model/records.js";
import type { DagState } from "../model/state.js";

/** Most problems an input's validation reports. */
const MAX_SCHEMA_ERRORS = 20;

/**
 * Compiles every regular expression the schema holds (`pattern` values, `patternProperties` keys), anywhere in it:
 * the validator compiles them only when an instance reaches them, so a bad one would otherwise surface as a throw
 * while an answer is checked.
 */
function checkPatterns(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) checkPatterns(item);
    return;
  }
  if (typeof node !== "object" || node === null) return;
  for (const [key, value] of Object.entries(node)) {
    if (key === "pattern" && typeof value === "string") new RegExp(value, "u");
    if (key === "patternProperties" && typeof value === "object" && value !== null && !Array.isArray(value)) {
      for (const regex of Object.keys(value)) new RegExp(regex, "u");
    }
    checkPatterns(value);
  }
}

/** A validator of `schema` (draft 2020-12, interpreted: no code generation), or why the schema is unusable. */
function validatorOf(schema: Record<string, unknown>): Validator | RuntimeError {
  try {
    checkPatterns(schema);
    const validator = new Validator(schema as never, "2020-12", false);
    // Walking the schema once surfaces a top-level $ref it cannot resolve.
    validator.validate(null);
    return validator;
  } catch (e) {
    return runtimeError("validation_error", `input_schema is not a usable JSON Schema: ${(e as Error).message}`);
  }
}

/** Checks `input` against the action's validator; a schema part it cannot apply (a nested $ref it cannot resolve) is the answer's 400, not a crash. */
function validateInput(validator: Validator, input: unknown): ReturnType<Validator["validate"]> | RuntimeError {
  try {
    return validator.validate(input);
  } catch (e) {
    return runtimeError("validation_error", `the action's input_schema cannot be applied to this input: ${(e as Error).message}`);
  }
}

/** request_action: a step-level action by its holder or the orchestrator, or a task-level one by the orchestrator. */
export function decideRequestAction(state: DagState, cmd: CommandOf<"request_action">, ctx: DecideContext): Decision {
  const task = state.task!;
  const { actor } = ctx;
  const guard = checkScope(task, actor) ?? requireLiveTaskFor(state, actor);
  if (guard !== null) return refuse(guard);
  if (cmd.input_schema !== undefined) {
    if (cmd.kind !== "input") return refuse(runtimeError("validation_error", "input_schema belongs to input actions; an approval is answered approved or rejected"));
    const checked = validatorOf(cmd.input_schema);
    if (!(checked instanceof Validator)) return refuse(checked);
  }
  let attemptId: string | null = null;
  let runId: string | null = null;
  const stepId = cmd.step_id ?? null;
  if (stepId === null) {
    if (actor.role !== "orchestrator") return refuse(runtimeError("tool_not_available", "a task-level action is the orchestrator's; a worker asks on the step it holds", { role: actor.role }));
  } else {
    const step = state.steps.get(stepId);
    if (step === undefined) return refuse(runtimeError("not_found", `no step ${stepId}`, { step_id: stepId }));
    if (actor.role === "worker") {
      const run = requireActiveWorkerRun(state, actor);
      if (!run.ok) return refuse(run.error);
      if (step.claimed_by_run_id !== run.value.run_id || !HELD_STEP_STATUSES.has(step.status)) {
        return refuse(runtimeError("permission_denied", `step ${stepId} is not held by this run`, { step_id: stepId, status: step.status }));
      }
    } else if (!HELD_STEP_STATUSES.has(step.status)) {
      return refuse(runtimeError("invalid_transition", `step ${stepId} is ${step.status}: a step-level action asks on behalf of the run holding the step; use a task-level action`, { step_id: stepId, status: step.status }));
    }
    const open = state.index.stepActions.get(stepId);
    if (open !== undefined) return refuse(runtimeError("invalid_transition", `step ${stepId} already waits on action ${open}`, { step_id: stepId, action_id: open }));
    attemptId = step.current_attempt_id;
    runId = step.claimed_by_run_id;
  }
  const capped = actionCapReached(state, attemptId, ctx);
  if (capped !== null) return refuse(capped);
  const actionId = `act_${ctx.newId().toLowerCase()}`;
  const em = new Emitter(state, ctx);
  em.emit("action_requested", stepId, {
    action_id: actionId,
    kind: cmd.kind,
    prompt: cmd.prompt,
    input_schema: cmd.input_schema ?? null,
    expires_at: new Date(ctx.now + (cmd.timeout_ms ?? ctx.limits.actionTimeoutMs)).toISOString(),
    attempt_id: attemptId,
    run_id: runId,
  });
  return accept(em, { kind: "action", action_id: actionId });
}

/**
 * The counted caps on asking (docs/limits.md "Counted caps"): actions open at once in the task, and actions one
 * attempt asked, open or resolved. The value is the count the request would make.
 */
function actionCapReached(state: DagState, attemptId: string | null, ctx: DecideContext): RuntimeError | null {
  const { maxOpenActionsPerTask, maxActionsPerAttempt } = ctx.limits;
  const open = state.index.openActions.size + 1;
  if (open > maxOpenActionsPerTask) {
    return limitExceeded(`a task has at most ${maxOpenActionsPerTask} open actions; answer or let one expire first`, maxOpenActionsPerTask, open, LIMIT_SETTINGS.maxOpenActionsPerTask);
  }
  if (attemptId === null) return null;
  const asked = (state.index.attemptActions.get(attemptId) ?? 0) + 1;
  if (asked > maxActionsPerAttempt) {
    return limitExceeded(`one attempt of a step asks at most ${maxActionsPerAttempt} actions`, maxActionsPerAttempt, asked, LIMIT_SETTINGS.maxActionsPerAttempt);
  }
  return null;
}

/** The lease a resolution restarts: the step's, from now, when the claim that asked still holds it. */
export function leaseAfterResolution(state: DagState, action: Action, now: number): string | null {
  if (action.step_id === null) return null;
  const step = state.steps.get(action.step_id);
  if (step === undefined || !HELD_STEP_STATUSES.has(step.status) || step.current_attempt_id !== action.attempt_id) return null;
  // The runtime holds a delegated step without a lease: its delegate's deadline bounds it instead.
  if (step.delegate !== null) return null;
  return new Date(now + state.task!.step_lease_timeout_ms).toISOString();
}

/** respond_action: the orchestrator or an approver decides; the input is checked against the action's schema. */
export function decideRespondAction(state: DagState, cmd: CommandOf<"respond_action">, ctx: DecideContext): Decision {
  const task = state.task!;
  const guard = checkScope(task, ctx.actor);
  if (guard !== null) return refuse(guard);
  const action = state.actions.get(cmd.action_id);
  if (action === undefined) return refuse(runtimeError("not_found", `no action ${cmd.action_id}`, { action_id: cmd.action_id }));
  if (action.status !== "open") {
    return refuse(runtimeError("action_resolved", `action ${action.action_id} was already resolved (${action.decision})`, { action_id: action.action_id, decision: action.decision, resolved_at: action.resolved_at }));
  }
  const fits = action.kind === "approval" ? cmd.decision !== "submitted" : cmd.decision !== "approved";
  if (!fits) {
    const allowed = action.kind === "approval" ? "approved or rejected" : "submitted or rejected";
    return refuse(runtimeError("validation_error", `an ${action.kind} action is answered ${allowed}, not ${cmd.decision}`, { kind: action.kind, decision: cmd.decision }));
  }
  if (cmd.decision !== "submitted" && cmd.input !== undefined) {
    return refuse(runtimeError("validation_error", "input goes with the decision submitted", { decision: cmd.decision }));
  }
  if (cmd.decision === "submitted") {
    if (cmd.input === undefined) return refuse(runtimeError("validation_error", "an input action's answer needs input"));
    if (action.input_schema !== null) {
      const validator = validatorOf(action.input_schema);
      if (!(validator instanceof Validator)) return refuse(validator);
      const result = validateInput(validator, cmd.input);
      if (!("valid" in result)) return refuse(result);
      if (!result.valid) {
        const issues = result.errors.slice(0, MAX_SCHEMA_ERRORS).map((e) => ({ path: e.instanceLocation, keyword: e.keyword, message: e.error }));
        const leaves = issues.filter((i) => i.keyword !== "properties" && i.keyword !== "items");
        return refuse(runtimeError("validation_error", `input does not match the action's input_schema: ${(leaves[0] ?? issues[0])?.message ?? "invalid"}`, { issues }));
      }
    }
  }
  const em = new Emitter(state, ctx);
  em.emit("action_resolved", action.step_id, {
    action_id: action.action_id,
    decision: cmd.decision,
    input: cmd.input ?? null,
    comment: cmd.comment ?? null,
    resolved_by_role: ctx.actor.role,
    lease_expires_at: leaseAfterResolution(state, action, ctx.now),
  });
  return accept(em, { kind: "action", action_id: action.action_id });
}

/** Task events after which no action can be answered. */
const TASK_ENDING = new Set(["task_completed", "task_failed", "task_cancelled"]);

/**
 * After any accepted decision: open actions whose claim or task the decision ended are withdrawn (action_resolved,
 * decision withdrawn, recorded as the system's), so no action stays open with nobody left to act on its answer.
 * One place for every way a step or a task ends. Actions the decision itself resolved are left alone.
 */
export function withdrawEndedActions(state: DagState, events: WalEvent[], ctx: DecideContext): void {
  if (state.index.openActions.size === 0 || events.length === 0) return;
  const resolved = new Set<string>();
  const endedSteps = new Set<string>();
  let taskEnded = false;
  for (const e of events) {
    if (e.event_type === "action_resolved") resolved.add(e.payload.action_id);
    else if (TASK_ENDING.has(e.event_type)) taskEnded = true;
    else if (CLAIM_ENDING_EVENTS.has(e.event_type) && e.step_id !== null) endedSteps.add(e.step_id);
  }
  const withdrawn: Action[] = [];
  for (const id of state.index.openActions) {
    const action = state.actions.get(id)!;
    if (resolved.has(id)) continue;
    if (taskEnded || (action.step_id !== null && endedSteps.has(action.step_id))) withdrawn.push(action);
  }
  if (withdrawn.length === 0) return;
  const em = new Emitter(state, ctx, systemActor(state.task!.session_id), events[events.length - 1]!.wal_seq);
  for (const action of withdrawn) {
    em.emit("action_resolved", action.step_id, {
      action_id: action.action_id,
      decision: "withdrawn",
      input: null,
      comment: taskEnded ? "the task ended" : "the claim that asked ended",
      resolved_by_role: "system",
      lease_expires_at: null,
    });
  }
  events.push(...em.events);
}
