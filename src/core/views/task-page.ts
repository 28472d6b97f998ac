/**
 * @module Pages of agent.task_get: a task's steps, runs, attempts and actions a bounded number at a time, and the cursor
 * to the next page, so one answer (and the memory it takes to build and send) does not grow with the DAG.
 */
import type { Action, Attempt, Step, WorkerRun } from "../model/records.js";
import type { DagState } from "../model/state.js";

/** Most steps, runs, attempts and actions one page carries, each: the default `limit` and the largest a caller may ask. */
export const TASK_PAGE_LIMIT = 1_000;

/**
 * Pages with more items than this (steps, runs and attempts together) are large reads: the task object serves
 * a bounded number of them at once (TASK_MAX_LARGE_READS); smaller answers are never refused.
 */
export const LARGE_PAGE_ITEMS = 250;

/**
 * Where a page starts: the first step whose ordinal is at least `stepOrdinal` (steps are kept in ordinal order,
 * and a deleted step's ordinal is never reused, so a step created meanwhile comes in a later page, none twice),
 * and after the first `runs` runs, `attempts` attempts and `actions` actions (all only ever appended).
 */
export interface TaskPagePosition {
  readonly stepOrdinal: number;
  readonly runs: number;
  readonly attempts: number;
  readonly actions: number;
}

/** The first page. */
export const FIRST_TASK_PAGE: TaskPagePosition = { stepOrdinal: 0, runs: 0, attempts: 0, actions: 0 };

/**
 * The cursor syntax: `s<step ordinal>r<runs>a<attempts>c<actions>`. A cursor sent before actions were paged has no
 * `c` part: its pages carried their steps' actions, so it goes on from the first action.
 */
export const TASK_CURSOR_PATTERN = /^s(\d{1,9})r(\d{1,9})a(\d{1,9})(?:c(\d{1,9}))?$/;

/** The cursor of a page position (opaque to callers). */
export function encodeTaskCursor(p: TaskPagePosition): string {
  return `s${p.stepOrdinal}r${p.runs}a${p.attempts}c${p.actions}`;
}

/** The position a cursor names, or null when it is not a cursor this API sent. */
export function decodeTaskCursor(cursor: string): TaskPagePosition | null {
  const m = TASK_CURSOR_PATTERN.exec(cursor);
  return m === null ? null : { stepOrdinal: Number(m[1]), runs: Number(m[2]), attempts: Number(m[3]), actions: Number(m[4] ?? 0) };
}

/** The records one page carries, and where the next page starts (null: nothing is left after this one). */
export interface TaskPageItems {
  readonly steps: Step[];
  readonly runs: WorkerRun[];
  readonly attempts: Attempt[];
  /** Actions, task- and step-level, in the order they were asked. */
  readonly actions: Action[];
  readonly next: TaskPagePosition | null;
}

/** How a paged answer describes itself (`page` of GET .../tasks/{tid}). */
export interface TaskPageInfo {
  readonly limit: number;
  /** Pass as `?cursor=` for the next page; null on the last page. */
  readonly next_cursor: string | null;
  /** The task's whole counts when this page was read. */
  readonly totals: { readonly steps: number; readonly runs: number; readonly attempts: number; readonly actions: number };
}

/** Up to `limit` entries of `values` after skipping `skip`; and whether more follow. */
function slice<T>(values: Iterable<T>, skip: number, limit: number): { items: T[]; more: boolean } {
  const items: T[] = [];
  let i = 0;
  for (const v of values) {
    if (i++ < skip) continue;
    if (items.length === limit) return { items, more: true };
    items.push(v);
  }
  return { items, more: false };
}

/** The steps, runs, attempts and actions of the page starting at `from`, at most `limit` of each. */
export function pageItems(state: DagState, from: TaskPagePosition, limit: number): TaskPageItems {
  const steps: Step[] = [];
  let moreSteps = false;
  for (const step of state.steps.values()) {
    if (step.ordinal < from.stepOrdinal) continue;
    if (steps.length === limit) {
      moreSteps = true;
      break;
    }
    steps.push(step);
  }
  const runs = slice(state.runs.values(), from.runs, limit);
  const attempts = slice(state.attempts.values(), from.attempts, limit);
  const actions = slice(state.actions.values(), from.actions, limit);
  const next = moreSteps || runs.more || attempts.more || actions.more
    ? {
        // Past the last step sent; once steps are exhausted, past every ordinal given so far.
        stepOrdinal: moreSteps ? steps[steps.length - 1]!.ordinal + 1 : Math.max(from.stepOrdinal, state.next_ordinal),
        runs: from.runs + runs.items.length,
        attempts: from.attempts + attempts.items.length,
        actions: from.actions + actions.items.length,
      }
    : null;
  return { steps, runs: runs.items, attempts: attempts.items, actions: actions.items, next };
}

/** Every step, run, attempt and action: the one page of a task that fits in one. */
export function allItems(state: DagState): TaskPageItems {
  return { steps: [...state.steps.values()], runs: [...state.runs.values()], attempts: [...state.attempts.values()], actions: [...state.actions.values()], next: null };
}

/** Steps, runs, attempts and actions a page carries together: what makes it a large read. */
export function pageItemCount(items: TaskPageItems): number {
  return items.steps.length + items.runs.length + items.attempts.length + items.actions.length;
}

/** The `page` of a paged answer. */
export function pageInfo(state: DagState, items: TaskPageItems, limit: number): TaskPageInfo {
  return {
    limit,
    next_cursor: items.next === null ? null : encodeTaskCursor(items.next),
    totals: { steps: state.steps.size, runs: state.runs.size, attempts: state.attempts.size, actions: state.actions.size },
  };
}
