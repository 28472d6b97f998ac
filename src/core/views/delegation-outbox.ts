/**
 * @module The outbox of delegated steps (outbound work goes through an outbox: docs/design.md): every
 * outbound call a task object owes — create or cancel a child task, send to, follow, answer or cancel an A2A peer's
 * task, report a child's result to its parent — derived from the WAL's records alone, with when it is due. The
 * shell performs them and records each outcome as a `record_delegation` / `record_delivery` command.
 */
import { MAX_ARTIFACTS, MAX_TEXT } from "../model/limits.js";
import { clipText } from "../model/text.js";
import type { ChildStep, Delegation, DelegatedFrom, TaskStatus } from "../model/records.js";
import type { DagState } from "../model/state.js";



/** A child task as its delegation creates it. */
export interface ChildTaskRequest {
  readonly task_id: string;
  readonly wal_name: string;
  readonly title: string;
  readonly summary: string;
  readonly objective: string | null;
  readonly steps: ChildStep[];
  readonly parent_task_id: string;
  readonly root_task_id: string;
  readonly delegated_from: DelegatedFrom;
}

/** One outbound call a task object owes, and when it is due (ms since the epoch). */
export type OutboundWork =
  | { readonly intent: "create_child"; readonly delegation: Delegation; readonly due_at: number; readonly child: ChildTaskRequest }
  | { readonly intent: "cancel_child"; readonly delegation: Delegation; readonly due_at: number }
  | { readonly intent: "a2a_send"; readonly delegation: Delegation; readonly due_at: number; readonly message_id: string; readonly text: string }
  | { readonly intent: "a2a_follow"; readonly delegation: Delegation; readonly due_at: number }
  /** `message_id` is derived from the delegation and our action (WAL facts), so every retry of the answer sends the same. */
  | { readonly intent: "a2a_answer"; readonly delegation: Delegation; readonly due_at: number; readonly message_id: string; readonly text: string; readonly remote_action_id: string | null }
  | { readonly intent: "a2a_cancel"; readonly delegation: Delegation; readonly due_at: number }
  | { readonly intent: "deliver"; readonly due_at: number; readonly report: ChildReport };

/** What a child task reports to its parent when it ends. */
export interface ChildReport {
  readonly parent_task_id: string;
  readonly step_id: string;
  readonly delegation_id: string;
  readonly child_task_id: string;
  readonly child_status: "completed" | "failed" | "cancelled";
  readonly result_summary: string | null;
  readonly artifact_ids: string[];
}

/** The text an input action's answer is sent to a peer as: a string as is, anything else as JSON. */
function answerText(input: unknown): string {
  return typeof input === "string" ? input : JSON.stringify(input);
}

/** One delegation's outbound call, if it owes one. */
function delegationWork(state: DagState, d: Delegation): OutboundWork | null {
  const due = d.next_try_at === null ? 0 : Date.parse(d.next_try_at);
  const task = state.task!;
  if (d.kind === "task") {
    if (d.status === "starting") {
      const step = state.steps.get(d.step_id);
      const delegate = step?.delegate;
      if (delegate?.kind !== "task") return null;
      const child: ChildTaskRequest = {
        task_id: d.child_task_id!,
        wal_name: d.child_task_id!,
        title: delegate.task.title,
        summary: delegate.task.summary ?? "",
        objective: delegate.task.objective ?? null,
        steps: delegate.task.steps,
        parent_task_id: task.task_id,
        root_task_id: task.root_task_id ?? task.task_id,
        delegated_from: { task_id: task.task_id, step_id: d.step_id, delegation_id: d.delegation_id },
      };
      return { intent: "create_child", delegation: d, due_at: due, child };
    }
    if (d.status === "cancelling" && d.cancel_sent_at === null) return { intent: "cancel_child", delegation: d, due_at: due };
    return null;
  }
  switch (d.status) {
    case "starting":
      return { intent: "a2a_send", delegation: d, due_at: due, message_id: `${d.delegation_id}-send`, text: d.message ?? "" };
    case "active":
    case "input_required":
      return { intent: "a2a_follow", delegation: d, due_at: due };
    case "answering": {
      const action = d.input_action_id === null ? undefined : state.actions.get(d.input_action_id);
      return { intent: "a2a_answer", delegation: d, due_at: due, message_id: `${d.delegation_id}-${d.input_action_id}`, text: answerText(action?.input ?? ""), remote_action_id: d.remote_action_id ?? null };
    }
    case "cancelling":
      return d.cancel_sent_at === null ? { intent: "a2a_cancel", delegation: d, due_at: due } : { intent: "a2a_follow", delegation: d, due_at: due };
    case "closed":
      return null;
  }
}

/**
 * What a child task reports to its parent: its status, a result summary (the reason it was completed with, else its
 * completed steps' results) and the artifacts its completed steps produced.
 */
export function childReport(state: DagState): ChildReport | null {
  const task = state.task;
  if (task === null || task.delegated_from === null) return null;
  const status = task.status as TaskStatus;
  if (status !== "completed" && status !== "failed" && status !== "cancelled") return null;
  const completed = [...state.steps.values()].filter((s) => s.status === "completed").sort((a, b) => a.ordinal - b.ordinal);
  const artifacts: string[] = [];
  for (const step of completed) for (const id of step.artifact_ids) if (artifacts.length < MAX_ARTIFACTS && !artifacts.includes(id)) artifacts.push(id);
  const results = completed.filter((s) => s.result_summary !== null && s.result_summary !== "").map((s) => `${s.title}: ${s.result_summary}`);
  const summary = task.status_reason !== null && task.status_reason !== "" ? task.status_reason : results.length > 0 ? results.join("\n") : `child task ${task.task_id} ${status}`;
  return {
    parent_task_id: task.delegated_from.task_id,
    step_id: task.delegated_from.step_id,
    delegation_id: task.delegated_from.delegation_id,
    child_task_id: task.task_id,
    child_status: status,
    result_summary: clipText(summary, 4_000),
    artifact_ids: artifacts,
  };
}

/** Every outbound call the task owes now or later: its delegations' calls, and a child's report to its parent. */
export function outboundWork(state: DagState): OutboundWork[] {
  if (state.task === null) return [];
  const out: OutboundWork[] = [];
  for (const id of state.index.openDelegations) {
    const work = delegationWork(state, state.delegations.get(id)!);
    if (work !== null) out.push(work);
  }
  if (state.task.delivery_state === "pending") {
    const report = childReport(state);
    if (report !== null) out.push({ intent: "deliver", due_at: 0, report });
  }
  return out;
}
