/**
 * @module The open actions a task object pushes to its session's index with its entry; the session keeps them
 * in its inbox (one row each: a hundred actions with 64 KB input schemas would not fit the task's row).
 */
import type { IndexEntry } from "../../src/contract/index.js";
import type { Action } from "../../src/core/index.js";

/** Open actions an index entry carries at most (the oldest); `open_action_count` counts them all. */
export const MAX_ENTRY_OPEN_ACTIONS = 100;

/** What an index entry tells the session of the task's open actions. */
export interface OpenActionFields {
  /** The task's open actions, oldest first, at most MAX_ENTRY_OPEN_ACTIONS. */
  readonly open_actions: Action[];
  /** How many actions of the task are open. */
  readonly open_action_count: number;
}

/**
 * An index entry as a task object pushes it: with the task's open actions when their set changed since the index
 * last acknowledged one (without them, the index keeps the ones it has), so a busy task's frequent pushes do not
 * carry every open prompt and input schema each time.
 */
export type IndexEntryWithActions = IndexEntry & Pick<OpenActionFields, "open_action_count"> & Partial<Pick<OpenActionFields, "open_actions">>;
