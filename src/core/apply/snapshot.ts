/**
 * @module Snapshots of a task's state: the records as plain JSON at one wal_seq, so a restart replays only the WAL
 * after it. The WAL stays the truth — a snapshot is a shortcut to the same state: `restoreSnapshot` then `replay` of
 * the tail equals `replay` of the whole WAL, indexes and the order of their sets included (decisions iterate them).
 */
import type { Action, Attempt, Delegation, Step, Task, WebhookDeliveryRecord, WorkerRun } from "../model/records.js";
import { type DagIndex, type DagState, emptyState, type ProgressRecord, rebuildIndex, type WebhookTotals } from "../model/state.js";

/** The snapshot format this core writes and reads; a snapshot of another format is ignored (the WAL is replayed). */
export const SNAPSHOT_FORMAT = 3;

/** The index sets whose iteration order decisions depend on, saved in their live order. */
const ORDERED_SETS = ["held", "activeRuns", "cancellingRuns", "openActions", "retrying", "readyDelegated", "openDelegations"] as const;
type OrderedSet = (typeof ORDERED_SETS)[number];

/** A task's state at one wal_seq, as JSON. */
export interface DagSnapshot {
  readonly format: typeof SNAPSHOT_FORMAT;
  readonly last_wal_seq: number;
  readonly next_ordinal: number;
  readonly task: Task | null;
  readonly steps: Step[];
  readonly runs: WorkerRun[];
  readonly attempts: Attempt[];
  readonly actions: Action[];
  /** Each action's action_requested wal_seq (format 2: resolved actions are slim). */
  readonly action_requests: [string, number][];
  readonly delegations: Delegation[];
  readonly progress: [string, ProgressRecord][];
  /** Absent in snapshots written before webhook deliveries existed (a task then had none). */
  readonly webhook_deliveries?: WebhookDeliveryRecord[];
  readonly webhook_totals?: [string, WebhookTotals][];
  readonly order: Record<OrderedSet, string[]>;
}

/** The state as a snapshot (the records in their map order; the index is rebuilt from them on restore). */
export function takeSnapshot(state: DagState): DagSnapshot {
  return {
    format: SNAPSHOT_FORMAT,
    last_wal_seq: state.last_wal_seq,
    next_ordinal: state.next_ordinal,
    task: state.task,
    steps: [...state.steps.values()],
    runs: [...state.runs.values()],
    attempts: [...state.attempts.values()],
    actions: [...state.actions.values()],
    action_requests: [...state.actionRequests.entries()],
    delegations: [...state.delegations.values()],
    progress: [...state.progress.entries()],
    webhook_deliveries: [...state.webhookDeliveries.values()],
    webhook_totals: [...state.webhookTotals.entries()],
    order: Object.fromEntries(ORDERED_SETS.map((name) => [name, [...state.index[name]]])) as Record<OrderedSet, string[]>,
  };
}

/** Puts `set`'s members in `order` (members `order` does not name keep their place after). */
function reorder(set: Set<string>, order: readonly string[]): void {
  const members = new Set(set);
  set.clear();
  for (const id of order) if (members.delete(id)) set.add(id);
  for (const id of members) set.add(id);
}

/**
 * The state a snapshot holds (parsed JSON, so its records are the caller's to keep): records into their maps, the
 * index rebuilt from them, its ordered sets put back in their saved order. Throws on a snapshot of another format.
 */
export function restoreSnapshot(snapshot: DagSnapshot): DagState {
  if (snapshot.format !== SNAPSHOT_FORMAT) throw new Error(`snapshot format ${String(snapshot.format)} is not ${SNAPSHOT_FORMAT}`);
  const state = emptyState();
  state.task = snapshot.task;
  for (const s of snapshot.steps) state.steps.set(s.step_id, s);
  for (const r of snapshot.runs) state.runs.set(r.run_id, r);
  for (const a of snapshot.attempts) state.attempts.set(a.attempt_id, a);
  for (const a of snapshot.actions) state.actions.set(a.action_id, a);
  for (const [id, seq] of snapshot.action_requests) state.actionRequests.set(id, seq);
  for (const d of snapshot.delegations) state.delegations.set(d.delegation_id, d);
  for (const [key, p] of snapshot.progress) state.progress.set(key, p);
  for (const w of snapshot.webhook_deliveries ?? []) state.webhookDeliveries.set(w.delivery_id, w);
  for (const [id, totals] of snapshot.webhook_totals ?? []) state.webhookTotals.set(id, totals);
  state.last_wal_seq = snapshot.last_wal_seq;
  state.next_ordinal = snapshot.next_ordinal;
  const index: DagIndex = rebuildIndex(state);
  for (const name of ORDERED_SETS) reorder(index[name], snapshot.order[name] ?? []);
  return { ...state, index };
}

/**
 * How many events after the last snapshot the next one is due: `every`, or the state's record count when that is
 * larger, so the cost of writing snapshots (proportional to the records) stays a bounded share of each event's
 * however large the DAG grows; a restart then replays at most that many events.
 */
export function snapshotInterval(state: DagState, every: number): number {
  return Math.max(every, state.steps.size + state.attempts.size + state.runs.size + state.actions.size + state.delegations.size + state.webhookDeliveries.size);
}
