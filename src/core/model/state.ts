/** @module The in-memory task DAG and the derived indexes that keep the hot path free of whole-DAG scans. */
import type { Action, Attempt, Delegation, Step, StepStatus, Task, WebhookDeliveryRecord, WorkerRun } from "./records.js";
import { HELD_STEP_STATUSES, STEP_STATUSES, TERMINAL_TASK_STATUSES } from "./records.js";
import { ReadyQueue } from "./ready-queue.js";

/** The latest progress facts reported for the task or one step (phase, summary, counters, output refs). */
export interface ProgressRecord {
  readonly step_id: string | null;
  readonly phase: string | null;
  readonly summary: string | null;
  readonly counters: Record<string, number> | null;
  readonly output_refs: readonly string[];
  readonly updated_at: string;
}

/**
 * Derived indexes, rebuilt by `apply` exactly as the records change, so `replay` rebuilds them too.
 * They exist for speed only: every fact here can be recomputed from `steps` and `runs` (see `checkIndexes`).
 */
export interface DagIndex {
  /** Ready steps per worker pool, in creation order: the ready queue claims take from. */
  readonly ready: Map<string, ReadyQueue>;
  /** step id → ids of the steps that depend on it. */
  readonly dependents: Map<string, Set<string>>;
  /**
   * step id → how many of its dependencies are not completed (an id not created yet counts). Lets a
   * completion find its newly ready dependants without re-reading their dependency lists: a fan-in over
   * n steps would otherwise cost O(n) per completion, O(n²) over the DAG.
   */
  readonly unmetDeps: Map<string, number>;
  /** How many steps are in each status. */
  readonly statusCounts: Record<StepStatus, number>;
  /** Required steps not completed: zero is the first half of `completeable`. */
  requiredNotCompleted: number;
  /** Steps held under a lease (claimed or running). */
  readonly held: Set<string>;
  /** Runs whose status is active. */
  readonly activeRuns: Set<string>;
  /** Runs a task-level stop asked to cancel and not yet ended: their deadlines outlive the task. */
  readonly cancellingRuns: Set<string>;
  /** Open actions, in the order they were asked. */
  readonly openActions: Set<string>;
  /** step id → its open action: while there is one, the step's lease does not expire. */
  readonly stepActions: Map<string, string>;
  /** attempt id → actions asked in that attempt, open and resolved (the per-attempt cap counts them). */
  readonly attemptActions: Map<string, number>;
  /** Steps waiting for a retry their policy scheduled (retry_at set). */
  readonly retrying: Set<string>;
  /** Ready delegated steps: the runtime takes them up itself (they are in no worker pool's ready queue). */
  readonly readyDelegated: Set<string>;
  /** Delegations not closed: each has outbound work or a report it waits for. */
  readonly openDelegations: Set<string>;
  /**
   * Webhook deliveries still owed (pending), per subscription, each set in WAL order (wal_seq, then the runtime
   * event's place): its first is what the subscription is sent next, so finding it never scans the others.
   */
  readonly pendingByWebhook: Map<string, Set<string>>;
}

/** WAL order of two deliveries: the WAL event's wal_seq, then the runtime event's place among its events. */
export function deliveryOrder(a: WebhookDeliveryRecord, b: WebhookDeliveryRecord): number {
  return a.wal_seq - b.wal_seq || a.index - b.index;
}

/** Adds a delivery to its subscription's pending set, kept in WAL order (a retried one goes back to its place). */
export function addPendingDelivery(index: DagIndex, d: WebhookDeliveryRecord, all?: ReadonlyMap<string, WebhookDeliveryRecord>): void {
  let set = index.pendingByWebhook.get(d.webhook_id);
  if (set === undefined) index.pendingByWebhook.set(d.webhook_id, (set = new Set()));
  const last = all === undefined ? undefined : [...set].pop();
  if (all === undefined || last === undefined || deliveryOrder(all.get(last)!, d) < 0) {
    set.add(d.delivery_id);
    return;
  }
  // Behind deliveries queued after it (a retry): the set is rebuilt in order; rare, and one subscription's.
  const ordered = [...set].map((id) => all.get(id)!).concat(d).sort(deliveryOrder);
  set.clear();
  for (const o of ordered) set.add(o.delivery_id);
}

/** Takes a delivery out of its subscription's pending set (the set goes when empty). */
export function removePendingDelivery(index: DagIndex, d: WebhookDeliveryRecord): void {
  const set = index.pendingByWebhook.get(d.webhook_id);
  if (set === undefined) return;
  set.delete(d.delivery_id);
  if (set.size === 0) index.pendingByWebhook.delete(d.webhook_id);
}

/** A subscription's deliveries of the task that were delivered, and its last try's status code. */
export interface WebhookTotals {
  delivered: number;
  last_status_code: number | null;
}

/** A task DAG as the core holds it: records plus derived indexes. */
export interface DagState {
  task: Task | null;
  readonly steps: Map<string, Step>;
  readonly runs: Map<string, WorkerRun>;
  readonly attempts: Map<string, Attempt>;
  /**
   * Human actions, open and resolved, in the order they were asked. A resolved action is kept slim: its `prompt` is
   * "" and its `input_schema` null (nothing decides on them any more); a read serves them from the action's
   * action_requested event in the WAL (see `actionRequests` and `withRequestText`).
   */
  readonly actions: Map<string, Action>;
  /** action id → wal_seq of its action_requested event, where a resolved action's prompt and input_schema are read back. */
  readonly actionRequests: Map<string, number>;
  /** Delegations of delegated steps, one per attempt, in the order they started. */
  readonly delegations: Map<string, Delegation>;
  /** Latest progress per step id; the key "" holds task-level progress. */
  readonly progress: Map<string, ProgressRecord>;
  /**
   * Webhook deliveries of the task's events still pending or failed (a failed one may be retried), in the order
   * they were queued. A delivered one leaves: memory does not grow with what went well.
   */
  readonly webhookDeliveries: Map<string, WebhookDeliveryRecord>;
  /** Per subscription: its deliveries delivered, and its last try's status code and wal_seq (for the read model). */
  readonly webhookTotals: Map<string, WebhookTotals>;
  last_wal_seq: number;
  next_ordinal: number;
  readonly index: DagIndex;
}

function zeroCounts(): Record<StepStatus, number> {
  return Object.fromEntries(STEP_STATUSES.map((s) => [s, 0])) as Record<StepStatus, number>;
}

/** The state before any event: no task yet. */
export function emptyState(): DagState {
  return {
    task: null,
    steps: new Map(),
    runs: new Map(),
    attempts: new Map(),
    actions: new Map(),
    actionRequests: new Map(),
    delegations: new Map(),
    progress: new Map(),
    webhookDeliveries: new Map(),
    webhookTotals: new Map(),
    last_wal_seq: 0,
    next_ordinal: 0,
    index: {
      ready: new Map(),
      dependents: new Map(),
      unmetDeps: new Map(),
      statusCounts: zeroCounts(),
      requiredNotCompleted: 0,
      held: new Set(),
      activeRuns: new Set(),
      cancellingRuns: new Set(),
      openActions: new Set(),
      stepActions: new Map(),
      attemptActions: new Map(),
      retrying: new Set(),
      readyDelegated: new Set(),
      openDelegations: new Set(),
      pendingByWebhook: new Map(),
    },
  };
}

function addReady(state: DagState, step: Step): void {
  if (step.delegate !== null) {
    state.index.readyDelegated.add(step.step_id);
    return;
  }
  let queue = state.index.ready.get(step.worker_pool_id);
  if (queue === undefined) {
    queue = new ReadyQueue();
    state.index.ready.set(step.worker_pool_id, queue);
  }
  queue.add(step.step_id, step.ordinal);
}

function removeReady(state: DagState, step: Step): void {
  if (step.delegate !== null) {
    state.index.readyDelegated.delete(step.step_id);
    return;
  }
  const queue = state.index.ready.get(step.worker_pool_id);
  if (queue === undefined) return;
  queue.remove(step.step_id, step.ordinal);
  if (queue.size === 0) state.index.ready.delete(step.worker_pool_id);
}

/** Counts `step` into the indexes (on creation). */
export function indexStep(state: DagState, step: Step): void {
  const { index } = state;
  index.statusCounts[step.status] += 1;
  if (step.required && step.status !== "completed") index.requiredNotCompleted += 1;
  if (step.status === "ready") addReady(state, step);
  if (HELD_STEP_STATUSES.has(step.status)) index.held.add(step.step_id);
  if (step.retry_at !== null) index.retrying.add(step.step_id);
  for (const dep of step.depends_on_step_ids) addDependent(state, dep, step.step_id);
  index.unmetDeps.set(step.step_id, countUnmet(state.steps, step));
}

/** How many of `step`'s dependencies are not completed (unknown ids included). */
function countUnmet(steps: ReadonlyMap<string, Step>, step: Step): number {
  let n = 0;
  for (const dep of step.depends_on_step_ids) if (steps.get(dep)?.status !== "completed") n += 1;
  return n;
}

/** Adjusts the unmet-dependency count of `stepId` by `delta` (a dependency added or removed, or completed). */
export function shiftUnmet(state: DagState, stepId: string, delta: number): void {
  const n = state.index.unmetDeps.get(stepId);
  if (n !== undefined) state.index.unmetDeps.set(stepId, n + delta);
}

/** Takes `step` out of the indexes (on deletion, or before a change of pool or requiredness). */
export function unindexStep(state: DagState, step: Step): void {
  const { index } = state;
  index.statusCounts[step.status] -= 1;
  if (step.required && step.status !== "completed") index.requiredNotCompleted -= 1;
  if (step.status === "ready") removeReady(state, step);
  index.held.delete(step.step_id);
  index.retrying.delete(step.step_id);
  for (const dep of step.depends_on_step_ids) removeDependent(state, dep, step.step_id);
  index.unmetDeps.delete(step.step_id);
}

/** Records that `dependant` depends on `dependency`. */
export function addDependent(state: DagState, dependency: string, dependant: string): void {
  let set = state.index.dependents.get(dependency);
  if (set === undefined) {
    set = new Set();
    state.index.dependents.set(dependency, set);
  }
  set.add(dependant);
}

/** Forgets that `dependant` depends on `dependency`. */
export function removeDependent(state: DagState, dependency: string, dependant: string): void {
  const set = state.index.dependents.get(dependency);
  if (set === undefined) return;
  set.delete(dependant);
  if (set.size === 0) state.index.dependents.delete(dependency);
}

/** Moves `step` to `status`, keeping every index in step. The only way a step's status changes. */
export function setStepStatus(state: DagState, step: Step, status: StepStatus): void {
  if (step.status === status) return;
  const { index } = state;
  index.statusCounts[step.status] -= 1;
  index.statusCounts[status] += 1;
  if (step.required) {
    if (step.status === "completed") index.requiredNotCompleted += 1;
    if (status === "completed") index.requiredNotCompleted -= 1;
  }
  if (step.status === "ready") removeReady(state, step);
  if (HELD_STEP_STATUSES.has(step.status)) index.held.delete(step.step_id);
  if ((step.status === "completed") !== (status === "completed")) {
    const delta = status === "completed" ? -1 : 1;
    for (const id of index.dependents.get(step.step_id) ?? []) shiftUnmet(state, id, delta);
  }
  step.status = status;
  if (status === "ready") addReady(state, step);
  if (HELD_STEP_STATUSES.has(status)) index.held.add(step.step_id);
}

/** True when every dependency of `step` is completed (only completed satisfies a dependency). */
export function dependenciesCompleted(steps: ReadonlyMap<string, Step>, step: Step): boolean {
  for (const dep of step.depends_on_step_ids) {
    if (steps.get(dep)?.status !== "completed") return false;
  }
  return true;
}

/** The steps' part of `completeable`, whatever the task's status: every required step completed, none claimed or running. */
export function stepsCompleteable(state: DagState): boolean {
  return state.index.requiredNotCompleted === 0 && state.index.held.size === 0;
}

/**
 * The task's `acceptance.required_artifacts` that no completed step has produced (completion binds to artifact
 * facts). Scans the steps only when the task names required artifacts.
 */
export function missingRequiredArtifacts(state: DagState): string[] {
  const required = state.task?.acceptance?.required_artifacts;
  if (required === undefined || required.length === 0) return [];
  const produced = new Set<string>();
  for (const step of state.steps.values()) if (step.status === "completed") for (const id of step.artifact_ids) produced.add(id);
  return required.filter((id) => !produced.has(id));
}

/** `completeable`: the steps allow it and every required artifact is produced. */
export function taskCompleteable(state: DagState): boolean {
  return stepsCompleteable(state) && missingRequiredArtifacts(state).length === 0;
}

/** True when the task is completed, failed or cancelled. */
export function isTerminalTask(task: Task): boolean {
  return TERMINAL_TASK_STATUSES.has(task.status);
}

/** Counts one more action asked in `attemptId`. */
export function countAttemptAction(index: DagIndex, attemptId: string): void {
  index.attemptActions.set(attemptId, (index.attemptActions.get(attemptId) ?? 0) + 1);
}

/** Rebuilds the indexes from the records; tests compare it with the live indexes. */
export function rebuildIndex(state: DagState): DagIndex {
  const fresh = emptyState();
  for (const step of state.steps.values()) fresh.steps.set(step.step_id, step);
  for (const step of state.steps.values()) {
    const { index } = fresh;
    index.statusCounts[step.status] += 1;
    if (step.required && step.status !== "completed") index.requiredNotCompleted += 1;
    if (HELD_STEP_STATUSES.has(step.status)) index.held.add(step.step_id);
    for (const dep of step.depends_on_step_ids) addDependent(fresh, dep, step.step_id);
    index.unmetDeps.set(step.step_id, countUnmet(state.steps, step));
  }
  const ready = [...state.steps.values()].filter((s) => s.status === "ready").sort((a, b) => a.ordinal - b.ordinal);
  for (const step of ready) addReady(fresh, step);
  for (const run of state.runs.values()) {
    if (run.status === "active") fresh.index.activeRuns.add(run.run_id);
    if (run.status === "cancelling") fresh.index.cancellingRuns.add(run.run_id);
  }
  for (const action of state.actions.values()) {
    if (action.attempt_id !== null) countAttemptAction(fresh.index, action.attempt_id);
    if (action.status !== "open") continue;
    fresh.index.openActions.add(action.action_id);
    if (action.step_id !== null) fresh.index.stepActions.set(action.step_id, action.action_id);
  }
  for (const step of state.steps.values()) if (step.retry_at !== null) fresh.index.retrying.add(step.step_id);
  for (const d of state.delegations.values()) if (d.status !== "closed") fresh.index.openDelegations.add(d.delegation_id);
  const pending = [...state.webhookDeliveries.values()].filter((w) => w.status === "pending").sort(deliveryOrder);
  for (const w of pending) addPendingDelivery(fresh.index, w);
  return fresh.index;
}
