/**
 * @module One function per agent.task_update patch op, dispatched by a table over every
 * op: each checks its op against the scratch DAG as the ops before it left it, applies it there, and returns the
 * op as the patch records it.
 */
import type { PatchOp } from "../model/commands.js";
import type { DecideContext } from "./context.js";
import { findDelegateError } from "../model/dag.js";
import { recordedStep } from "./decide-shared.js";
import { childCapReached } from "./decide-delegation.js";
import { type RuntimeError, runtimeError } from "../model/errors.js";
import type { PatchScratch, ScratchStep } from "./patch-scratch.js";
import { HELD_STEP_STATUSES, type StepStatus } from "../model/records.js";
import { err, ok, type Result } from "../model/result.js";

/** The patch op of one kind. */
export type PatchOpOf<K extends PatchOp["op"]> = Extract<PatchOp, { op: K }>;

/** Applies op number `index` to the scratch DAG: the op as recorded, or why it cannot apply. */
type PatchOpDecider<K extends PatchOp["op"]> = (scratch: PatchScratch, op: PatchOpOf<K>, index: number, ctx: DecideContext) => Result<PatchOp>;

/** Every patch op has a decider: adding an op without one does not compile. */
type PatchOpDeciders = { [K in PatchOp["op"]]: PatchOpDecider<K> };

/** Statuses whose content may still change beyond title and summary (a completed or cancelled step is history). */
const TOPOLOGY_EDITABLE: ReadonlySet<StepStatus> = new Set(["pending", "ready", "blocked", "failed", "claimed", "running"]);
/** Statuses a step may be deleted in. */
const DELETABLE: ReadonlySet<StepStatus> = new Set(["pending", "ready", "cancelled"]);

/** The step an op names, whose dependencies may still change. */
function dependenciesEditable(scratch: PatchScratch, stepId: string): Result<ScratchStep> {
  const found = scratch.existing(stepId);
  if (!found.ok || TOPOLOGY_EDITABLE.has(found.value.status)) return found;
  const step = found.value;
  return err(runtimeError("invalid_transition", `a ${step.status} step's dependencies cannot change`, { step_id: step.step_id, status: step.status }));
}

const deciders: PatchOpDeciders = {
  update_task(_scratch, op) {
    if (!Object.keys(op).some((key) => key !== "op" && key !== "reason")) {
      return err(runtimeError("validation_error", "update_task needs at least one field to change (title, summary or a task record field)"));
    }
    return ok(op);
  },

  add_step(scratch, op, _index, ctx) {
    const input = op.step;
    if (scratch.steps.has(input.step_id)) return err(runtimeError("duplicate_step", `step ${input.step_id} already exists`, { step_id: input.step_id }));
    if (scratch.steps.size >= ctx.limits.maxStepsPerTask) {
      return err(runtimeError("validation_error", `a task holds at most ${ctx.limits.maxStepsPerTask} steps`));
    }
    const delegateError = findDelegateError(input);
    if (delegateError !== null) return err(delegateError);
    const step = recordedStep(input);
    // The scratch step gets its own dependency list (PatchScratch.add): later ops must not rewrite the recorded patch.
    scratch.add(step);
    return ok(op.reason === undefined ? { op: "add_step", step } : { op: "add_step", step, reason: op.reason });
  },

  update_step(scratch, op) {
    const found = scratch.existing(op.step_id);
    if (!found.ok) return found;
    const step = found.value;
    const f = op.fields;
    const touchesTopology = f.depends_on_step_ids !== undefined || f.required !== undefined || f.worker_pool_id !== undefined;
    if (touchesTopology && !TOPOLOGY_EDITABLE.has(step.status)) {
      return err(runtimeError("invalid_transition", `a ${step.status} step only takes title and summary changes`, { step_id: step.step_id, status: step.status }));
    }
    if (f.depends_on_step_ids !== undefined) scratch.setDependencies(step, [...new Set(f.depends_on_step_ids)]);
    if (f.required !== undefined) step.required = f.required;
    if (f.worker_pool_id !== undefined) step.worker_pool_id = f.worker_pool_id;
    scratch.markDispatched(step);
    const fields = f.depends_on_step_ids === undefined ? f : { ...f, depends_on_step_ids: [...step.depends_on_step_ids] };
    return ok({ ...op, fields });
  },

  delete_step(scratch, op, index) {
    const found = scratch.existing(op.step_id);
    if (!found.ok) return found;
    const step = found.value;
    if (!DELETABLE.has(step.status)) {
      return err(runtimeError("invalid_transition", `a ${step.status} step cannot be deleted (only pending, ready or cancelled)`, { step_id: step.step_id, status: step.status }));
    }
    const users = scratch.dependantsOf(step.step_id);
    if (users !== undefined && users.size > 0) {
      return err(runtimeError("step_has_dependents", `steps depend on ${step.step_id}; change their depends_on_step_ids first`, { step_id: step.step_id, dependents: [...users].slice(0, 20) }));
    }
    scratch.delete(step, index);
    return ok(op);
  },

  add_dependency(scratch, op) {
    const found = dependenciesEditable(scratch, op.step_id);
    if (!found.ok) return found;
    const step = found.value;
    if (!scratch.steps.has(op.depends_on_step_id)) {
      return err(runtimeError("unknown_dependency", `no step ${op.depends_on_step_id}`, { step_id: step.step_id, depends_on_step_id: op.depends_on_step_id }));
    }
    if (!step.depends_on_step_ids.includes(op.depends_on_step_id)) scratch.addDependency(step, op.depends_on_step_id);
    scratch.markDispatched(step);
    return ok(op);
  },

  remove_dependency(scratch, op) {
    const found = dependenciesEditable(scratch, op.step_id);
    if (!found.ok) return found;
    const step = found.value;
    if (!step.depends_on_step_ids.includes(op.depends_on_step_id)) {
      return err(runtimeError("validation_error", `step ${step.step_id} does not depend on ${op.depends_on_step_id}`, { step_id: step.step_id, depends_on_step_id: op.depends_on_step_id }));
    }
    scratch.removeDependency(step, op.depends_on_step_id);
    scratch.markDispatched(step);
    return ok(op);
  },

  cancel_step(scratch, op, index) {
    const found = scratch.existing(op.step_id);
    if (!found.ok) return found;
    const step = found.value;
    if (step.status !== "pending" && step.status !== "ready") {
      const hint = HELD_STEP_STATUSES.has(step.status) ? "; cancel its worker run instead" : "";
      return err(runtimeError("invalid_transition", `a ${step.status} step cannot be cancelled${hint}`, { step_id: step.step_id, status: step.status }));
    }
    scratch.setStatus(step, "cancelled", { index, op: "cancel_step", reason: op.reason ?? null });
    return ok(op);
  },

  reopen_step(scratch, op, index, ctx) {
    const found = scratch.existing(op.step_id);
    if (!found.ok) return found;
    const step = found.value;
    if (step.status !== "blocked" && step.status !== "failed") {
      return err(runtimeError("invalid_transition", `only blocked or failed steps can be reopened, not ${step.status}`, { step_id: step.step_id, status: step.status }));
    }
    const capped = childCapReached(scratch.recorded, step.step_id, ctx.limits);
    if (capped !== null) return err(capped);
    scratch.setStatus(step, "pending", { index, op: "reopen_step", reason: op.reason ?? null });
    return ok(op);
  },
};

/**
 * Applies op number `index` to the scratch DAG and returns it as the patch records it; an error names the op
 * (`ops[i] (kind): …`, with `op_index`), since the whole patch fails on it.
 */
export function decidePatchOp(scratch: PatchScratch, op: PatchOp, index: number, ctx: DecideContext): Result<PatchOp> {
  // The table is total over the op kinds; indexing it by a union loses the pairing of kind and op, hence the cast.
  const applied = (deciders[op.op] as PatchOpDecider<PatchOp["op"]>)(scratch, op, index, ctx);
  return applied.ok ? applied : err(inOp(applied.error, op, index));
}

function inOp(error: RuntimeError, op: PatchOp, index: number): RuntimeError {
  return runtimeError(error.code, `ops[${index}] (${op.op}): ${error.message}`, { ...error.details, op_index: index });
}
