/**
 * @module Actions as a read serves them: memory keeps a resolved action slim (no prompt, no input_schema), so each
 * one a read hands out gets its text back from its action_requested event, read from the WAL by its wal_seq, or
 * from the events of the unit being committed when it was asked in the same unit.
 */
import { type Action, type DagState, type WalEvent, withRequestText } from "../../src/core/index.js";
import { readWal, type Sql } from "./storage/wal-store.js";

/**
 * Request events at most this far apart are read in one pass of the WAL: actions asked close together (a batch
 * of them, one commit row) then cost one read of their rows, not one each.
 */
const ONE_READ_GAP = 256;

/** `actions` whole (copies), in order: each resolved one's text read from the WAL, or from `pending` (events not written yet). */
export function fullActions(sql: Sql, state: DagState, actions: readonly Action[], pending: readonly WalEvent[] = []): Action[] {
  const seqOf = (a: Action): number => {
    const seq = state.actionRequests.get(a.action_id);
    if (seq === undefined) throw new Error(`action ${a.action_id} has no action_requested wal_seq`);
    return seq;
  };
  const found = new Map<number, WalEvent>();
  const unwritten = new Map(pending.map((e) => [e.wal_seq, e]));
  const needed: number[] = [];
  for (const a of actions) {
    if (a.status === "open") continue;
    const seq = seqOf(a);
    const event = unwritten.get(seq);
    if (event === undefined) needed.push(seq);
    else found.set(seq, event);
  }
  needed.sort((x, y) => x - y);
  for (let i = 0; i < needed.length; ) {
    let j = i;
    while (j + 1 < needed.length && needed[j + 1]! - needed[j]! <= ONE_READ_GAP) j++;
    for (const e of readWal(sql, needed[i]! - 1, needed[j]! - needed[i]! + 1)) found.set(e.wal_seq, e);
    i = j + 1;
  }
  return actions.map((a) => (a.status === "open" ? structuredClone(a) : withRequestText(a, found.get(seqOf(a)))));
}

/** One action whole (a copy); see `fullActions`. */
export function fullAction(sql: Sql, state: DagState, action: Action, pending: readonly WalEvent[] = []): Action {
  return fullActions(sql, state, [action], pending)[0]!;
}
