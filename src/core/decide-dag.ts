/** @module Decisions that shape the DAG: agent.task_create and agent.task_update (patch ops in order, atomic). */
import type { DecideContext, Decision } from "./context.js";
import { Emitter } from "./context.js";
import { accept, refuse } from "./decision.js";
import type { CommandOf, PatchOp } from "./commands.js";
import { findCycle, findUnknownDependency } from "./dag.js";
import { type RuntimeError, runtimeError } from "./errors.js";
import { requireLiveTask, requireOrchestrator } from "./guards.js";
import { DEFAULT_WORKER_POOL, HELD_STEP_STATUSES, type StepStatus } from "./records.js";
import type { DagState } from "./state.js";
import { emitRunningIfFirstActive } from "./decide-shared.js";

/** agent.task_create: validate the whole DAG, then task_created, the roots' task_step_ready, task_running. */
export function decideCreateTask(state: DagState, cmd: CommandOf<"create_task">, ctx: DecideContext): Decision {
  const { actor } = ctx;
  if (actor.role !== "orchestrator") return refuse(runtimeError("tool_not_available", "agent.task_create is available to the orchestrator only", { role: actor.role }));
  if (state.task !== null) return refuse(runtimeError("task_id_conflict", `task ${state.task.task_id} already exists`, { task_id: state.task.task_id }));
  if (cmd.steps.length > ctx.limits.maxStepsPerTask) {
    return refuse(runtimeError("validation_error", `a task holds at most ${ctx.limits.maxStepsPerTask} steps`, { steps: cmd.steps.length }));
  }
  const nodes = new Map<string, (typeof cmd.steps)[number]>();
  for (const step of cmd.steps) {
    if (nodes.has(step.step_id)) return refuse(runtimeError("duplicate_step", `step ${step.step_id} appears twice`, { step_id: step.step_id }));
    nodes.set(step.step_id, step);
  }
  const shapeError = findUnknownDependency(nodes) ?? findCycle(nodes);
  if (shapeError !== null) return refuse(shapeError);

  const em = new Emitter(state, ctx);
  const steps = cmd.steps.map((s) => ({
    step_id: s.step_id,
    title: s.title,
    summary: s.summary,
    depends_on_step_ids: [...new Set(s.depends_on_step_ids)],
    required: s.required ?? true,
    worker_pool_id: s.worker_pool_id ?? DEFAULT_WORKER_POOL,
  }));
  em.emit(
    "task_created",
    null,
    {
      task: {
        task_id: cmd.task_id,
        wal_name: cmd.wal_name,
        title: cmd.title,
        summary: cmd.summary,
        objective: cmd.objective ?? null,
        task_kind: cmd.task_kind ?? null,
        priority: cmd.priority ?? null,
        acceptance: cmd.acceptance ?? null,
        parent_task_id: cmd.parent_task_id ?? null,
        metadata: cmd.metadata ?? null,
        step_lease_timeout_ms: cmd.step_lease_timeout_ms ?? ctx.limits.stepLeaseTimeoutMs,
      },
      steps,
    },
    cmd.task_id,
  );
  let anyReady = false;
  for (const step of steps) {
    if (step.depends_on_step_ids.length === 0) {
      em.emit("task_step_ready", step.step_id, {}, cmd.task_id);
      anyReady = true;
    }
  }
  if (anyReady) em.emit("task_running", null, {}, cmd.task_id);
  return accept(em);
}

/** A step of the scratch DAG an update is applied to before anything is written. */
interface ScratchStep {
  step_id: string;
  status: StepStatus;
  depends_on_step_ids: string[];
  required: boolean;
  worker_pool_id: string;
  claimed_by_run_id: string | null;
  ordinal: number;
}

/** Statuses whose content may still change beyond title and summary (003 "DAG Model"). */
const TOPOLOGY_EDITABLE: ReadonlySet<StepStatus> = new Set(["pending", "ready", "blocked", "failed", "claimed", "running"]);
/** Statuses a step may be deleted in. */
const DELETABLE: ReadonlySet<StepStatus> = new Set(["pending", "ready", "cancelled"]);

/**
 * agent.task_update: apply the ops in the given order to a scratch DAG, check the final DAG as a whole,
 * and only then emit: one task_updated with the patch, the status changes cancel_step/reopen_step cause,
 * the readiness changes, and task_running. Any failing op fails the whole update and writes nothing.
 */
export function decideUpdateTask(state: DagState, cmd: CommandOf<"update_task">, ctx: DecideContext): Decision {
  const task = state.task!;
  const guard = requireOrchestrator(task, ctx.actor, "agent.task_update") ?? requireLiveTask(task);
  if (guard !== null) return refuse(guard);

  const scratch = new Map<string, ScratchStep>();
  for (const s of state.steps.values()) {
    scratch.set(s.step_id, {
      step_id: s.step_id,
      status: s.status,
      depends_on_step_ids: s.depends_on_step_ids,
      required: s.required,
      worker_pool_id: s.worker_pool_id,
      claimed_by_run_id: s.claimed_by_run_id,
      ordinal: s.ordinal,
    });
  }
  const dependants = new Map<string, Set<string>>();
  for (const [id, set] of state.index.dependents) dependants.set(id, new Set(set));
  const link = (dep: string, on: string) => {
    let set = dependants.get(dep);
    if (set === undefined) dependants.set(dep, (set = new Set()));
    set.add(on);
  };
  const unlink = (dep: string, on: string) => dependants.get(dep)?.delete(on);

  const normalized: PatchOp[] = [];
  const statusMarks: { index: number; op: "cancel_step" | "reopen_step"; step_id: string; reason: string | null }[] = [];
  const lastDelete = new Map<string, number>();
  const afterDispatch = new Map<string, string>();
  const depsChanged = new Set<string>();
  let nextOrdinal = state.next_ordinal;

  const opError = (index: number, error: RuntimeError): Decision =>
    refuse(runtimeError(error.code, `ops[${index}] (${cmd.ops[index]!.op}): ${error.message}`, { ...error.details, op_index: index }));
  const existing = (index: number, stepId: string): ScratchStep | Decision =>
    scratch.get(stepId) ?? opError(index, runtimeError("not_found", `no step ${stepId}`, { step_id: stepId }));
  const markDispatched = (step: ScratchStep) => {
    if (HELD_STEP_STATUSES.has(step.status) && step.claimed_by_run_id !== null) afterDispatch.set(step.step_id, step.claimed_by_run_id);
  };
  const ownDeps = (step: ScratchStep) => {
    if (!depsChanged.has(step.step_id)) {
      step.depends_on_step_ids = [...step.depends_on_step_ids];
      depsChanged.add(step.step_id);
    }
  };

  for (const [i, op] of cmd.ops.entries()) {
    switch (op.op) {
      case "update_task": {
        if (op.title === undefined && op.summary === undefined) return opError(i, runtimeError("validation_error", "update_task needs a title or a summary"));
        normalized.push(op);
        break;
      }
      case "add_step": {
        const input = op.step;
        if (scratch.has(input.step_id)) return opError(i, runtimeError("duplicate_step", `step ${input.step_id} already exists`, { step_id: input.step_id }));
        if (scratch.size >= ctx.limits.maxStepsPerTask) {
          return opError(i, runtimeError("validation_error", `a task holds at most ${ctx.limits.maxStepsPerTask} steps`));
        }
        const step = {
          step_id: input.step_id,
          title: input.title,
          summary: input.summary,
          depends_on_step_ids: [...new Set(input.depends_on_step_ids)],
          required: input.required ?? true,
          worker_pool_id: input.worker_pool_id ?? DEFAULT_WORKER_POOL,
        };
        // The scratch step gets its own dependency list: later ops must not rewrite the recorded patch.
        scratch.set(step.step_id, { ...step, depends_on_step_ids: [...step.depends_on_step_ids], status: "pending", claimed_by_run_id: null, ordinal: nextOrdinal++ });
        depsChanged.add(step.step_id);
        for (const dep of step.depends_on_step_ids) link(dep, step.step_id);
        normalized.push(op.reason === undefined ? { op: "add_step", step } : { op: "add_step", step, reason: op.reason });
        break;
      }
      case "update_step": {
        const step = existing(i, op.step_id);
        if ("ok" in step) return step;
        const f = op.fields;
        const touchesTopology = f.depends_on_step_ids !== undefined || f.required !== undefined || f.worker_pool_id !== undefined;
        if (touchesTopology && !TOPOLOGY_EDITABLE.has(step.status)) {
          return opError(i, runtimeError("invalid_transition", `a ${step.status} step only takes title and summary changes`, { step_id: step.step_id, status: step.status }));
        }
        if (f.depends_on_step_ids !== undefined) {
          ownDeps(step);
          for (const dep of step.depends_on_step_ids) unlink(dep, step.step_id);
          step.depends_on_step_ids = [...new Set(f.depends_on_step_ids)];
          for (const dep of step.depends_on_step_ids) link(dep, step.step_id);
        }
        if (f.required !== undefined) step.required = f.required;
        if (f.worker_pool_id !== undefined) step.worker_pool_id = f.worker_pool_id;
        markDispatched(step);
        const fields = f.depends_on_step_ids === undefined ? f : { ...f, depends_on_step_ids: [...step.depends_on_step_ids] };
        normalized.push({ ...op, fields });
        break;
      }
      case "delete_step": {
        const step = existing(i, op.step_id);
        if ("ok" in step) return step;
        if (!DELETABLE.has(step.status)) {
          return opError(i, runtimeError("invalid_transition", `a ${step.status} step cannot be deleted (only pending, ready or cancelled)`, { step_id: step.step_id, status: step.status }));
        }
        const users = dependants.get(step.step_id);
        if (users !== undefined && users.size > 0) {
          return opError(i, runtimeError("step_has_dependents", `steps depend on ${step.step_id}; change their depends_on_step_ids first`, { step_id: step.step_id, dependents: [...users].slice(0, 20) }));
        }
        for (const dep of step.depends_on_step_ids) unlink(dep, step.step_id);
        scratch.delete(step.step_id);
        depsChanged.delete(step.step_id);
        afterDispatch.delete(step.step_id);
        lastDelete.set(step.step_id, i);
        normalized.push(op);
        break;
      }
      case "add_dependency":
      case "remove_dependency": {
        const step = existing(i, op.step_id);
        if ("ok" in step) return step;
        if (!TOPOLOGY_EDITABLE.has(step.status)) {
          return opError(i, runtimeError("invalid_transition", `a ${step.status} step's dependencies cannot change`, { step_id: step.step_id, status: step.status }));
        }
        const has = step.depends_on_step_ids.includes(op.depends_on_step_id);
        if (op.op === "add_dependency") {
          if (!scratch.has(op.depends_on_step_id)) {
            return opError(i, runtimeError("unknown_dependency", `no step ${op.depends_on_step_id}`, { step_id: step.step_id, depends_on_step_id: op.depends_on_step_id }));
          }
          if (!has) {
            ownDeps(step);
            step.depends_on_step_ids.push(op.depends_on_step_id);
            link(op.depends_on_step_id, step.step_id);
          }
        } else {
          if (!has) {
            return opError(i, runtimeError("validation_error", `step ${step.step_id} does not depend on ${op.depends_on_step_id}`, { step_id: step.step_id, depends_on_step_id: op.depends_on_step_id }));
          }
          ownDeps(step);
          step.depends_on_step_ids = step.depends_on_step_ids.filter((d) => d !== op.depends_on_step_id);
          unlink(op.depends_on_step_id, step.step_id);
        }
        markDispatched(step);
        normalized.push(op);
        break;
      }
      case "cancel_step": {
        const step = existing(i, op.step_id);
        if ("ok" in step) return step;
        if (step.status !== "pending" && step.status !== "ready") {
          const hint = HELD_STEP_STATUSES.has(step.status) ? "; cancel its worker run instead" : "";
          return opError(i, runtimeError("invalid_transition", `a ${step.status} step cannot be cancelled${hint}`, { step_id: step.step_id, status: step.status }));
        }
        step.status = "cancelled";
        statusMarks.push({ index: i, op: "cancel_step", step_id: step.step_id, reason: op.reason ?? null });
        normalized.push(op);
        break;
      }
      case "reopen_step": {
        const step = existing(i, op.step_id);
        if ("ok" in step) return step;
        if (step.status !== "blocked" && step.status !== "failed") {
          return opError(i, runtimeError("invalid_transition", `only blocked or failed steps can be reopened, not ${step.status}`, { step_id: step.step_id, status: step.status }));
        }
        step.status = "pending";
        statusMarks.push({ index: i, op: "reopen_step", step_id: step.step_id, reason: op.reason ?? null });
        normalized.push(op);
        break;
      }
    }
  }

  // The final DAG is checked as a whole: only steps whose dependencies changed can name unknown steps.
  const changed = [...depsChanged].map((id) => scratch.get(id)!);
  const shapeError = findUnknownDependency(scratch, changed) ?? (changed.length > 0 ? findCycle(scratch) : null);
  if (shapeError !== null) return refuse(shapeError);

  const em = new Emitter(state, ctx);
  em.emit("task_updated", null, {
    ops: normalized,
    updated_after_dispatch: [...afterDispatch].map(([step_id, run_id]) => ({ step_id, run_id })),
  });
  for (const mark of statusMarks) {
    // A step deleted later in the same patch is gone: its earlier status change is moot.
    if ((lastDelete.get(mark.step_id) ?? -1) > mark.index) continue;
    if (mark.op === "cancel_step") em.emit("task_step_cancelled", mark.step_id, { reason: mark.reason, attempt_id: null, run_id: null });
    else em.emit("task_step_reopened", mark.step_id, { reason: mark.reason });
  }
  // Readiness is recomputed for pending and ready steps only (003: blocked/failed stay until reopened).
  let anyActive = false;
  const ordered = [...scratch.values()].sort((a, b) => a.ordinal - b.ordinal);
  for (const step of ordered) {
    if (step.status !== "pending" && step.status !== "ready") {
      if (HELD_STEP_STATUSES.has(step.status)) anyActive = true;
      continue;
    }
    const satisfied = step.depends_on_step_ids.every((d) => scratch.get(d)?.status === "completed");
    if (step.status === "pending" && satisfied) em.emit("task_step_ready", step.step_id, {});
    if (step.status === "ready" && !satisfied) em.emit("task_step_pending", step.step_id, { reason: "dependencies_not_completed" });
    if (satisfied) anyActive = true;
  }
  emitRunningIfFirstActive(state, em, anyActive);
  return accept(em);
}
