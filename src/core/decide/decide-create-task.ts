/** @module agent.task_create: the whole DAG checked at once, then task_created, the roots' task_step_ready, task_running. */
import type { CommandOf } from "../model/commands.js";
import type { DecideContext, Decision } from "./context.js";
import { Emitter } from "./context.js";
import { findCycle, findDelegateError, findUnknownDependency } from "../model/dag.js";
import { recordedStep } from "./decide-shared.js";
import { accept, refuse } from "./decision.js";
import { runtimeError } from "../model/errors.js";
import { TASK_RECORD_FIELDS, type TaskRecordFields } from "../model/records.js";
import type { DagState } from "../model/state.js";

/** The task record fields of a create, each null when not given. */
function recordFieldsOf(cmd: CommandOf<"create_task">): TaskRecordFields {
  return Object.fromEntries(TASK_RECORD_FIELDS.map((field) => [field, cmd[field] ?? null])) as TaskRecordFields;
}

/** agent.task_create: validate the whole DAG, then task_created, the roots' task_step_ready, task_running. */
export function decideCreateTask(state: DagState, cmd: CommandOf<"create_task">, ctx: DecideContext): Decision {
  const { actor } = ctx;
  const submitted = actor.role === "a2a_client";
  if (actor.role !== "orchestrator" && !submitted) return refuse(runtimeError("tool_not_available", "agent.task_create is available to the orchestrator only", { role: actor.role }));
  // An A2A client hands over work, not a plan: the session's orchestrator adds the steps (docs/protocols/a2a.md).
  if (submitted && cmd.steps.length > 0) return refuse(runtimeError("validation_error", "a submitted task starts with no steps: the session's orchestrator plans them", { steps: cmd.steps.length }));
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
  for (const step of cmd.steps) {
    const delegateError = findDelegateError(step);
    if (delegateError !== null) return refuse(delegateError);
  }

  const em = new Emitter(state, ctx);
  const steps = cmd.steps.map(recordedStep);
  em.emit(
    "task_created",
    null,
    {
      task: {
        task_id: cmd.task_id,
        wal_name: cmd.wal_name,
        title: cmd.title,
        summary: cmd.summary,
        ...recordFieldsOf(cmd),
        // Who asked is the token's client, whatever the message said.
        ...(submitted ? { requested_by: actor.agent_id, origin: { protocol: "a2a" as const, client_agent_id: actor.agent_id } } : {}),
        step_lease_timeout_ms: cmd.step_lease_timeout_ms ?? ctx.limits.stepLeaseTimeoutMs,
        ...(cmd.delegated_from === undefined ? {} : { delegated_from: cmd.delegated_from }),
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
