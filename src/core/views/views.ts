/** @module Read-side functions over a DAG: agent.task_query_steps, the task view, summaries and diagnostics. */
import { webhookDeliveryState } from "./webhook-outbox.js";
import type { StepQuery } from "../model/commands.js";
import type { Actor } from "../decide/context.js";
import { runtimeError } from "../model/errors.js";
import { checkScope } from "../decide/guards.js";
import { err, ok, type Result } from "../model/result.js";
import { HELD_STEP_STATUSES, type Step, type StepStatus, TERMINAL_STEP_STATUSES, type Task, type WorkerRun } from "../model/records.js";
import { normalizedTaskStatus, type NormalizedStatus } from "../model/normalize.js";
import { type DagState, isTerminalTask, taskCompleteable } from "../model/state.js";
import { allItems, type TaskPageItems } from "./task-page.js";

/** Diagnostics of a task's status: derived facts, never written to the WAL. */
export interface Diagnostics {
  /** Every required step completed, none claimed or running, and every artifact acceptance requires produced. */
  readonly completeable: boolean;
  /** Nothing ready, claimed, running or waiting for a scheduled retry, yet pending, blocked or failed steps remain. */
  readonly stalled: boolean;
}

/** `completeable` and `stalled` for a live task (both false once the task is terminal). */
export function diagnostics(state: DagState): Diagnostics {
  const task = state.task;
  if (task === null || isTerminalTask(task)) return { completeable: false, stalled: false };
  const c = state.index.statusCounts;
  const moving = c.ready + c.claimed + c.running + state.index.retrying.size;
  return {
    completeable: taskCompleteable(state),
    stalled: moving === 0 && c.pending + c.blocked + c.failed > 0,
  };
}

/** The compact summary every write answers with. */
export interface TaskSummary {
  readonly task_id: string;
  readonly title: string;
  readonly status: Task["status"];
  /** The normalized status: paused, waiting_permission / waiting_input (an open task-level action), or the native one's. */
  readonly normalized_status: NormalizedStatus;
  readonly step_counts: Record<StepStatus, number>;
  /** Open actions, task- and step-level: people the task waits for. */
  readonly open_actions: number;
  /** Steps waiting for a retry their policy scheduled. */
  readonly retrying_steps: number;
  readonly total_steps: number;
  readonly active_runs: number;
  /** Runs a task-level fail/cancel asked to cancel that have not ended yet (waited for until a deadline). */
  readonly cancelling_runs: number;
  readonly diagnostics: Diagnostics;
  readonly updated_at: string;
  readonly wal_seq: number;
}

/**
 * A copy of a step that later events cannot change (apply updates steps in place): its arrays copied, every
 * other field a primitive. What an answer carries when more commands of its batch follow; a fraction of a
 * structuredClone's cost on the write path.
 */
export function stepSnapshot(step: Step): Step {
  return { ...step, depends_on_step_ids: [...step.depends_on_step_ids], attempt_ids: [...step.attempt_ids], artifact_ids: [...step.artifact_ids] };
}

/** The task summary after the last applied event. */
export function taskSummary(state: DagState): TaskSummary {
  const task = state.task!;
  return {
    task_id: task.task_id,
    title: task.title,
    status: task.status,
    normalized_status: normalizedTaskStatus(state),
    step_counts: { ...state.index.statusCounts },
    open_actions: state.index.openActions.size,
    retrying_steps: state.index.retrying.size,
    total_steps: state.steps.size,
    active_runs: state.index.activeRuns.size,
    cancelling_runs: state.index.cancellingRuns.size,
    diagnostics: diagnostics(state),
    updated_at: task.updated_at,
    wal_seq: state.last_wal_seq,
  };
}

/** Steps in creation order (created_at ascending). */
export function orderedSteps(state: DagState): Step[] {
  // Map order is insertion order; a deleted-and-re-added id moves to the end, as its new ordinal says.
  return [...state.steps.values()];
}

/**
 * agent.task_get: the DAG with attempts, runs, actions, progress and diagnostics, as plain JSON; the whole of it, or
 * one page's steps, runs, attempts and actions (`root_step_ids` and `progress` then cover the page's steps, the task's
 * own progress included).
 */
export function taskView(state: DagState, items: TaskPageItems = allItems(state)) {
  const task = state.task!;
  const steps = items.steps;
  return {
    task: {
      ...task,
      root_step_ids: steps.filter((s) => s.depends_on_step_ids.length === 0).map((s) => s.step_id),
      /** Each webhook subscription's deliveries of this task's events (delivery_state is a child task's report to its parent). */
      webhook_delivery_state: webhookDeliveryState(state),
    },
    steps,
    attempts: items.attempts,
    runs: items.runs,
    progress: steps.length === state.steps.size ? [...state.progress.values()] : pageProgress(state, steps),
    /** The page's actions: paged on their own, in the order they were asked (task- and step-level alike). */
    actions: items.actions,
    /** Delegated steps' attempts with the remote task's refs (child task, A2A peer task), oldest first. */
    delegations: steps.length === state.steps.size ? [...state.delegations.values()] : pageDelegations(state, steps),
    diagnostics: diagnostics(state),
    wal_seq: state.last_wal_seq,
  };
}

/** The delegations of these steps, in the order they started. */
function pageDelegations(state: DagState, steps: readonly Step[]) {
  const ids = new Set(steps.map((s) => s.step_id));
  return [...state.delegations.values()].filter((d) => ids.has(d.step_id));
}

/** The progress records of these steps and the task's own, in the order they were first reported. */
function pageProgress(state: DagState, steps: readonly Step[]) {
  const ids = new Set(steps.map((s) => s.step_id));
  return [...state.progress].filter(([key]) => key === "" || ids.has(key)).map(([, record]) => record);
}

/** One page of agent.task_query_steps. */
export interface StepPage {
  readonly steps: Step[];
  readonly total: number;
  readonly limit: number;
  readonly offset: number;
  readonly next_offset: number | null;
}

function page(matches: Step[], limit: number, offset: number): StepPage {
  const steps = matches.slice(offset, offset + limit);
  return { steps, total: matches.length, limit, offset, next_offset: offset + steps.length < matches.length ? offset + steps.length : null };
}

/**
 * agent.task_query_steps. Terminal steps only with include_terminal_steps; created_at order; limit 50 by
 * default. A worker sees its pool and allowed_step_ids only, ready (lease-free) steps by default, limit 5.
 * Callers reconcile expired leases first, so a ready step here has no live lease.
 */
export function querySteps(state: DagState, actor: Actor, query: StepQuery): Result<StepPage> {
  const task = state.task;
  if (task === null) return err(runtimeError("not_found", "no such task"));
  const scope = checkScope(task, actor);
  if (scope !== null) return err(scope);
  const includeTerminal = query.include_terminal_steps === true;
  const terminalAsked = query.statuses?.filter((s) => TERMINAL_STEP_STATUSES.has(s)) ?? [];
  if (terminalAsked.length > 0 && !includeTerminal) {
    return err(runtimeError("validation_error", `statuses ${terminalAsked.join(", ")} are terminal: pass include_terminal_steps=true`, { statuses: terminalAsked }));
  }
  let run: WorkerRun | undefined;
  if (actor.role === "worker") {
    run = actor.run_id === null ? undefined : state.runs.get(actor.run_id);
    if (run === undefined) return err(runtimeError("permission_denied", "the caller holds no worker run of this task"));
  }
  const statuses = query.statuses ?? (run !== undefined ? ["ready"] : undefined);
  const wanted = statuses === undefined ? null : new Set<StepStatus>(statuses);
  const limit = query.limit ?? (run !== undefined ? 5 : 50);
  const offset = query.offset ?? 0;
  const allowed = run?.allowed_step_ids == null ? null : new Set(run.allowed_step_ids);
  const pool = run?.worker_pool_id ?? query.worker_pool_id;

  const keep = (s: Step) =>
    (wanted === null || wanted.has(s.status)) &&
    (includeTerminal || !TERMINAL_STEP_STATUSES.has(s.status)) &&
    (pool === undefined || s.worker_pool_id === pool) &&
    (query.worker_pool_id === undefined || s.worker_pool_id === query.worker_pool_id) &&
    (query.claimed_by_agent_id === undefined || s.claimed_by_agent_id === query.claimed_by_agent_id) &&
    (allowed === null || allowed.has(s.step_id));

  // Ready-only queries read the ready queue instead of scanning the DAG.
  if (wanted !== null && wanted.size === 1 && wanted.has("ready") && pool !== undefined) {
    let ready = (state.index.ready.get(pool)?.ids() ?? []).map((id) => state.steps.get(id)!);
    // Ready delegated steps are in no pool's queue (no worker claims them); anyone but a worker sees them too.
    if (run === undefined && state.index.readyDelegated.size > 0) {
      const delegated = [...state.index.readyDelegated].map((id) => state.steps.get(id)!).filter((s) => s.worker_pool_id === pool);
      ready = [...ready, ...delegated].sort((a, b) => a.ordinal - b.ordinal);
    }
    return ok(page(ready.filter(keep), limit, offset));
  }
  return ok(page(orderedSteps(state).filter(keep), limit, offset));
}

/** Steps a worker still holds under a lease, for diagnostics and summaries. */
export function heldSteps(state: DagState): Step[] {
  return [...state.index.held].map((id) => state.steps.get(id)!).filter((s) => HELD_STEP_STATUSES.has(s.status));
}
