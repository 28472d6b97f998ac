/**
 * @module The answer shapes of the action reads and the open actions an index entry carries, as the objects
 * build them: the task's action page, the session's inbox page, and the index entry with its open actions.
 */
import type { IndexEntry, ListedTask } from "../src/contract/index.js";
import type { Action } from "../src/core/index.js";

/** Open actions an index entry carries at most (the oldest); `open_action_count` counts them all. */
export const MAX_ENTRY_OPEN_ACTIONS = 100;

/** What an index entry tells the session of the task's open actions. */
export interface OpenActionFields {
  /** The task's open actions, oldest first, at most MAX_ENTRY_OPEN_ACTIONS. */
  readonly open_actions: Action[];
  /** How many actions of the task are open. */
  readonly open_action_count: number;
}

/** An index entry with the task's open actions, as a task object pushes it. */
export type IndexEntryWithActions = IndexEntry & OpenActionFields;

/**
 * A task as the session lists it: the entry without its open actions, which the session keeps in its inbox
 * (one row each: a hundred actions with 64 KB input schemas would not fit one row), with their count. Entries
 * pushed before actions existed have no count.
 */
export type ListedTaskWithActions = ListedTask & Partial<Pick<OpenActionFields, "open_action_count">>;

/** A page of GET .../tasks/{tid}/actions: the task's actions, oldest first. */
export interface ActionPage {
  readonly actions: Action[];
  readonly total: number;
  readonly limit: number;
  readonly offset: number;
  readonly next_offset: number | null;
}

/** A page of GET /v1/sessions/{sid}/actions: the session's open actions, newest first, each with its task's title. */
export interface SessionActionPage {
  readonly actions: (Action & { readonly task_title: string })[];
  readonly total: number;
  readonly limit: number;
  readonly offset: number;
  readonly next_offset: number | null;
}
