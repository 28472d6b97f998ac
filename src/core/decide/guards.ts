/** @module Permission and state guards shared by the decisions: who may change a task, and when it accepts no change. */
import type { Actor } from "./context.js";
import { type RuntimeError, runtimeError } from "../model/errors.js";
import type { Step, Task, WorkerRun } from "../model/records.js";
import { err, ok, type Result } from "../model/result.js";
import { type DagState, isTerminalTask } from "../model/state.js";
import { awaitsLateResult } from "./decide-shared.js";

/** The caller must be in the task's session (and, for a worker, scoped to this task). */
export function checkScope(task: Task, actor: Actor): RuntimeError | null {
  if (actor.role === "system") return null;
  if (actor.session_id !== task.session_id) return runtimeError("permission_denied", "the caller belongs to another session");
  if (actor.role === "worker" && actor.task_id !== task.task_id) return runtimeError("permission_denied", "the worker run is scoped to another task");
  // An A2A client reaches only what it submitted, and cannot learn that other tasks exist.
  if (actor.role === "a2a_client" && task.origin?.client_agent_id !== actor.agent_id) return runtimeError("not_found", "no such task");
  return null;
}

/** The statuses of a run that is over: its token is spent. A `cancelling` run is not over yet (it may still finish). */
const ENDED_RUN_STATUSES: ReadonlySet<WorkerRun["status"]> = new Set(["finished", "cancelled", "timed_out"]);

/**
 * A worker token lives as long as its run: once the run has ended (finished, cancelled, timed out), every read and
 * command of the task with it is `unauthorized`, reason `run_ended` (with the run's status and why it ended), an
 * idempotent replay included, on every surface. One command passes: the run's own `finish_run` carrying the result
 * a run ended by a task-level stop may still hand in, once (decided as `late_result`). `command` is the command
 * being authorized (absent for a read).
 */
export function checkRunToken(state: DagState, actor: { readonly role: string; readonly run_id: string | null }, command?: { readonly [field: string]: unknown }): RuntimeError | null {
  if (actor.role !== "worker" || actor.run_id === null) return null;
  const run = state.runs.get(actor.run_id);
  if (run === undefined || !ENDED_RUN_STATUSES.has(run.status)) return null;
  if (command?.type === "finish_run" && command.run_id === run.run_id && command.result != null && awaitsLateResult(run)) return null;
  return runtimeError("unauthorized", `worker run ${run.run_id} has ended (${run.status}${run.status_reason === null ? "" : `: ${run.status_reason}`}); its token is no longer valid`, {
    reason: "run_ended",
    run_id: run.run_id,
    run_status: run.status,
    status_reason: run.status_reason,
  });
}

/**
 * Orchestrator-only tools: anyone else gets tool_not_available. `alsoSubmitter`: the A2A
 * client that submitted the task may too (it may cancel its own work).
 */
export function requireOrchestrator(task: Task, actor: Actor, tool: string, alsoSubmitter = false): RuntimeError | null {
  if (actor.role !== "orchestrator" && !(alsoSubmitter && actor.role === "a2a_client")) return runtimeError("tool_not_available", `${tool} is available to the orchestrator only`, { role: actor.role });
  return checkScope(task, actor);
}

/** Task changes stop at a terminal task (task_terminal, nothing written). */
export function requireLiveTask(task: Task): RuntimeError | null {
  return isTerminalTask(task) ? runtimeError("task_terminal", `the task is ${task.status}`, { status: task.status }) : null;
}

/**
 * requireLiveTask for a caller: a worker whose run a task-level stop asked to cancel learns it from the refusal
 * of its next command, with what it needs to act: its run, why, and until when the runtime waits for its
 * finish_run (a result handed in later is still kept).
 */
export function requireLiveTaskFor(state: DagState, actor: Actor): RuntimeError | null {
  const task = state.task!;
  const terminal = requireLiveTask(task);
  if (terminal === null || actor.role !== "worker" || actor.run_id === null) return terminal;
  const run = state.runs.get(actor.run_id);
  if (run === undefined || run.agent_id !== actor.agent_id || run.cancel_request === null) return terminal;
  const request = run.cancel_request;
  const message =
    run.status === "cancelling"
      ? `the task is ${task.status}; cancellation of run ${run.run_id} was requested (${request.reason}): finish the run by ${request.deadline_at}`
      : `the task is ${task.status}; run ${run.run_id} was cancelled (${run.status_reason})`;
  return runtimeError("task_terminal", message, {
    status: task.status,
    run_cancel_requested: true,
    run_id: run.run_id,
    run_status: run.status,
    reason: request.reason,
    cancel_requested_at: request.requested_at,
    cancel_deadline_at: request.deadline_at,
  });
}

/** The worker's own run, active; anything else is permission_denied. */
export function requireActiveWorkerRun(state: DagState, actor: Actor): Result<WorkerRun> {
  const run = actor.run_id === null ? undefined : state.runs.get(actor.run_id);
  if (run === undefined || run.agent_id !== actor.agent_id) return err(runtimeError("permission_denied", "the caller holds no worker run of this task"));
  if (run.status !== "active") return err(runtimeError("permission_denied", `the worker run has ended (${run.status})`, { run_status: run.status }));
  return ok(run);
}

/** True when a run may see and claim this step: its pool, and its allowed_step_ids when given. */
export function runMaySee(run: WorkerRun, step: Step): boolean {
  if (run.worker_pool_id !== step.worker_pool_id) return false;
  return run.allowed_step_ids === null || run.allowed_step_ids.includes(step.step_id);
}
