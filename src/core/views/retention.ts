/**
 * @module Retention of archived tasks (docs/design.md "Archive and retention"): when an archived task's storage is due
 * to go, and what of the task itself still needs it. What other tasks hold (a live task a `blocks` link of this one
 * holds) is the session's to say.
 */
import type { DagState } from "../model/state.js";
import { outboundWork } from "./delegation-outbox.js";

/** When the archived task's storage is due to go (ms since the epoch); null when never (not archived, or kept forever). */
export function retentionDeadline(state: DagState): number | null {
  const at = state.task?.delete_after ?? null;
  return at === null ? null : Date.parse(at);
}

/** Why the task's storage is still needed by the task's own work. */
export type RetentionHold = "open_delegation" | "outbound_work" | "cancelling_run";

/**
 * What still references the task from its own records, or null when nothing does: a delegation not yet closed (a
 * child or a peer may still report to it), a call it still owes (its own result to its parent, a cancellation to a
 * child), or a run asked to cancel that may still hand in its result. Checked again when the deletion is retried.
 */
export function retentionHold(state: DagState): RetentionHold | null {
  if (state.task === null) return null;
  if (state.index.openDelegations.size > 0) return "open_delegation";
  if (outboundWork(state).length > 0) return "outbound_work";
  if (state.index.cancellingRuns.size > 0) return "cancelling_run";
  return null;
}
