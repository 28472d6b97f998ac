/**
 * @module agent.task_update: the patch ops applied in order to a scratch DAG (one decider per op,
 * decide-patch-ops.ts), the final DAG checked as a whole, and only then the events; atomic.
 */
import type { CommandOf, PatchOp } from "../model/commands.js";
import type { DecideContext, Decision } from "./context.js";
import { Emitter } from "./context.js";
import { findCycle, findUnknownDependency } from "../model/dag.js";
import { decidePatchOp } from "./decide-patch-ops.js";
import { emitRunningIfFirstActive } from "./decide-shared.js";
import { accept, refuse } from "./decision.js";
import { requireLiveTask, requireOrchestrator } from "./guards.js";
import { PatchScratch } from "./patch-scratch.js";
import { HELD_STEP_STATUSES } from "../model/records.js";
import type { DagState } from "../model/state.js";

/**
 * agent.task_update: apply the ops in the given order to a scratch DAG, check the final DAG as a whole,
 * and only then emit: one task_updated with the patch, the status changes cancel_step/reopen_step cause,
 * the readiness changes, and task_running. Any failing op fails the whole update and writes nothing.
 */
export function decideUpdateTask(state: DagState, cmd: CommandOf<"update_task">, ctx: DecideContext): Decision {
  const task = state.task!;
  const guard = requireOrchestrator(task, ctx.actor, "agent.task_update") ?? requireLiveTask(task);
  if (guard !== null) return refuse(guard);

  const scratch = new PatchScratch(state);
  const recorded: PatchOp[] = [];
  for (const [i, op] of cmd.ops.entries()) {
    const applied = decidePatchOp(scratch, op, i, ctx);
    if (!applied.ok) return refuse(applied.error);
    recorded.push(applied.value);
  }

  // The final DAG is checked as a whole: only steps whose dependencies changed can name unknown steps.
  const changed = [...scratch.depsChanged].map((id) => scratch.steps.get(id)!);
  const shapeError = findUnknownDependency(scratch.steps, changed) ?? (changed.length > 0 ? findCycle(scratch.steps) : null);
  if (shapeError !== null) return refuse(shapeError);

  const em = new Emitter(state, ctx);
  em.emit("task_updated", null, {
    ops: recorded,
    updated_after_dispatch: [...scratch.afterDispatch].map(([step_id, run_id]) => ({ step_id, run_id })),
  });
  for (const mark of scratch.statusMarks) {
    // A step deleted later in the same patch is gone: its earlier status change is moot.
    if ((scratch.lastDelete.get(mark.step_id) ?? -1) > mark.index) continue;
    if (mark.op === "cancel_step") em.emit("task_step_cancelled", mark.step_id, { reason: mark.reason, attempt_id: null, run_id: null });
    else em.emit("task_step_reopened", mark.step_id, { reason: mark.reason });
  }
  // Readiness is recomputed for pending and ready steps only (blocked and failed steps stay until reopened).
  let anyActive = false;
  const ordered = [...scratch.steps.values()].sort((a, b) => a.ordinal - b.ordinal);
  for (const step of ordered) {
    if (step.status !== "pending" && step.status !== "ready") {
      if (HELD_STEP_STATUSES.has(step.status)) anyActive = true;
      continue;
    }
    const satisfied = step.depends_on_step_ids.every((d) => scratch.steps.get(d)?.status === "completed");
    if (step.status === "pending" && satisfied && !step.awaiting_retry) em.emit("task_step_ready", step.step_id, {});
    if (step.status === "ready" && !satisfied) em.emit("task_step_pending", step.step_id, { reason: "dependencies_not_completed" });
    if (satisfied && !step.awaiting_retry) anyActive = true;
  }
  emitRunningIfFirstActive(state, em, anyActive);
  return accept(em);
}
