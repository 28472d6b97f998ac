/**
 * @module Actions as a read serves them: memory keeps a resolved action slim (no prompt, no input_schema), so each
 * one a read hands out gets its text back from its action_requested event, read from the WAL by its wal_seq, or
 * from the events of the unit being committed when it was asked in the same unit.
 */
import { type Action, type DagState, type WalEvent, withRequestText } from "../../src/core/index.js";
import { readWal, type Sql } from "./storage/wal-store.js";

/** `action` whole (a copy), its text read from the WAL (or from `pending`, the events not written yet) when it is resolved. */
export function fullAction(sql: Sql, state: DagState, action: Action, pending: readonly WalEvent[] = []): Action {
  if (action.status === "open") return structuredClone(action);
  const seq = state.actionRequests.get(action.action_id);
  if (seq === undefined) throw new Error(`action ${action.action_id} has no action_requested wal_seq`);
  const requested = pending.find((e) => e.wal_seq === seq) ?? readWal(sql, seq - 1, 1)[0];
  return withRequestText(action, requested);
}
