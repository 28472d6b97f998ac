/** @module `apply`'s handlers of the delegated steps' events: the runtime's run and attempt, the delegation record, a child's delivery. */
import type { WalEvent, WalEventOf } from "../events/events.js";
import { addRun, openAttempt, stepOf, touchTask } from "./apply-shared.js";
import type { Delegation } from "../model/records.js";
import type { DagState } from "../model/state.js";

type DelegationEventType = "step_delegated" | "delegation_updated" | "delegation_try_failed" | "delegation_cancel_requested" | "delegation_settled" | "delegation_closed" | "task_delivery_recorded";

/** The agent id of the runtime's own runs: the ones that hold delegated steps. */
export const DELEGATE_AGENT_ID = "runtime";

function delegationOf(state: DagState, event: WalEvent, id: string): Delegation {
  const d = state.delegations.get(id);
  if (d === undefined) throw new Error(`WAL event ${event.wal_seq} names unknown delegation ${id}`);
  return d;
}

/** A delegation's status change, keeping the open-delegations index in step. */
function setDelegationStatus(state: DagState, d: Delegation, status: Delegation["status"], at: string): void {
  d.status = status;
  if (status === "closed") {
    d.closed_at ??= at;
    state.index.openDelegations.delete(d.delegation_id);
  } else {
    state.index.openDelegations.add(d.delegation_id);
  }
}

/** The handlers of the delegation events (apply.ts spreads them into its table). */
export const delegationHandlers: { [K in DelegationEventType]: (s: DagState, e: WalEventOf<K>) => void } = {
  step_delegated(s, e) {
    const step = stepOf(s, e);
    const p = e.payload;
    const run = { run_id: p.run_id, agent_id: DELEGATE_AGENT_ID, worker_pool_id: step.worker_pool_id, allowed_step_ids: [step.step_id], max_steps: 1, deadline_at: null };
    addRun(s, { ...run, dispatched_by_agent_id: e.actor_agent_id }, e.created_at);
    openAttempt(s, step, { ...p, agent_id: DELEGATE_AGENT_ID, lease_expires_at: null }, "running", e.created_at);
    step.delegation_id = p.delegation_id;
    s.delegations.set(p.delegation_id, {
      delegation_id: p.delegation_id,
      step_id: step.step_id,
      attempt_id: p.attempt_id,
      run_id: p.run_id,
      kind: p.kind,
      native_protocol: p.kind === "task" ? "agent-task" : "a2a",
      child_task_id: p.child_task_id,
      agent_card_ref: p.agent_card_ref,
      message: p.message,
      remote_task_id: null,
      remote_context_id: null,
      delivery_mechanism: null,
      remote_status: null,
      remote_artifact_refs: [],
      status: "starting",
      outcome: null,
      input_action_id: null,
      tries: 0,
      next_try_at: null,
      last_error: null,
      cancel_sent_at: null,
      deadline_at: p.deadline_at,
      created_at: e.created_at,
      updated_at: e.created_at,
      closed_at: null,
    });
    s.index.openDelegations.add(p.delegation_id);
    touchTask(s, e.created_at);
  },
  delegation_updated(s, e) {
    const d = delegationOf(s, e, e.payload.delegation_id);
    const p = e.payload;
    if (p.status !== undefined) setDelegationStatus(s, d, p.status, e.created_at);
    if (p.remote_task_id !== undefined) d.remote_task_id = p.remote_task_id;
    if (p.remote_context_id !== undefined) d.remote_context_id = p.remote_context_id;
    if (p.remote_status !== undefined) d.remote_status = p.remote_status;
    if (p.delivery_mechanism !== undefined) d.delivery_mechanism = p.delivery_mechanism;
    if (p.remote_artifact_refs !== undefined) d.remote_artifact_refs = [...p.remote_artifact_refs];
    if (p.input_action_id !== undefined) d.input_action_id = p.input_action_id;
    if (p.remote_action_id !== undefined) d.remote_action_id = p.remote_action_id;
    if (p.cancel_sent === true) d.cancel_sent_at = e.created_at;
    // A call that got through ends the run of failed tries.
    d.tries = 0;
    d.next_try_at = null;
    d.updated_at = e.created_at;
    touchTask(s, e.created_at);
  },
  delegation_try_failed(s, e) {
    const d = delegationOf(s, e, e.payload.delegation_id);
    d.tries = e.payload.tries;
    d.next_try_at = e.payload.next_try_at;
    d.last_error = e.payload.error;
    d.updated_at = e.created_at;
  },
  delegation_cancel_requested(s, e) {
    const d = delegationOf(s, e, e.payload.delegation_id);
    setDelegationStatus(s, d, "cancelling", e.created_at);
    d.outcome ??= "cancelled";
    d.tries = 0;
    d.next_try_at = null;
    d.updated_at = e.created_at;
  },
  delegation_settled(s, e) {
    const d = delegationOf(s, e, e.payload.delegation_id);
    d.outcome = e.payload.outcome;
    if (e.payload.remote_status !== null) d.remote_status = e.payload.remote_status;
    if (e.payload.reason !== null && e.payload.outcome !== "completed") d.last_error = e.payload.reason;
    d.tries = 0;
    d.next_try_at = null;
    setDelegationStatus(s, d, e.payload.cleanup ? "cancelling" : "closed", e.created_at);
    d.updated_at = e.created_at;
  },
  delegation_closed(s, e) {
    const d = delegationOf(s, e, e.payload.delegation_id);
    setDelegationStatus(s, d, "closed", e.created_at);
    d.updated_at = e.created_at;
  },
  task_delivery_recorded(s, e) {
    s.task!.delivery_state = e.payload.delivery_state;
  },
};
