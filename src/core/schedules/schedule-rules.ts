/**
 * @module The rules of durable schedules (docs/design.md "ScheduleObject"), pure: no clock, no storage, `now` comes
 * in. When a schedule's occurrences fall (its cron in its time zone, within start_at and end_at), which of them are
 * due or missed given the last one processed and the catch-up window, what the overlap policy decides given the
 * previous occurrence's task, and the task id and input ref of an occurrence. Cron patterns are read by `croner`
 * (no code generation, time zones through Intl, so it runs in workerd).
 */
import { Cron } from "croner";
import type { DecideContext } from "../decide/context.js";
import { decide } from "../decide/decide.js";
import { runtimeError, type RuntimeError } from "../model/errors.js";
import { emptyState } from "../model/state.js";

/** What a schedule does when an occurrence falls while the previous occurrence's task is not terminal. */
export const OVERLAP_POLICIES = ["skip", "allow", "buffer_one", "cancel_previous"] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

/** An occurrence missed while nothing ran is still started when it is at most this late (catchup_window_ms). */
export const DEFAULT_CATCHUP_WINDOW_MS = 60_000;
/** The largest catch-up window a schedule may ask for: a week. */
export const MAX_CATCHUP_WINDOW_MS = 7 * 86_400_000;
/**
 * A schedule id: an occurrence's task id is `{schedule_id}-{yyyymmddthhmmssz}` (17 more characters), and a task
 * id is at most 64, so a schedule id is at most 47.
 */
export const SCHEDULE_ID_PATTERN = /^[a-z0-9_-]{1,47}$/;
/** Occurrences one pass of the alarm looks at, at most: a long stop of a frequent schedule is caught up in bounded passes. */
export const MAX_OCCURRENCES_PER_PASS = 1_000;

/** When a schedule's occurrences fall. */
export interface ScheduleTiming {
  /** 5 fields (minute first) or 6 (second first). */
  readonly cron: string;
  /** An IANA time zone the cron's fields are read in. */
  readonly timezone: string;
  /** No occurrence before this time (ms since the epoch), when set. */
  readonly start_at_ms: number | null;
  /** No occurrence after this time, when set. */
  readonly end_at_ms: number | null;
}

/** Whether `timezone` names a time zone this runtime knows (Intl's own table). */
export function isKnownTimeZone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/** The fields of a cron pattern: 5 or 6, separated by spaces. */
function cronFields(cron: string): string[] {
  return cron.trim().split(/\s+/);
}

/** A cron read by croner, in the schedule's time zone (memoized: the alarm asks for the same one again and again). */
const parsed = new Map<string, Cron>();
function cronOf(timing: Pick<ScheduleTiming, "cron" | "timezone">): Cron {
  const key = `${timing.timezone}\u0000${timing.cron}`;
  let cron = parsed.get(key);
  if (cron === undefined) {
    // No function: croner only evaluates the pattern, it starts no timer. Day of month and day of week are
    // OR-ed when both are restricted (Vixie cron's rule, croner's legacy mode, its default).
    cron = new Cron(cronFields(timing.cron).join(" "), { timezone: timing.timezone });
    if (parsed.size >= 256) parsed.clear();
    parsed.set(key, cron);
  }
  return cron;
}

/** Why a schedule's timing cannot be used (400 validation_error), or null: the cron, the time zone, the window. */
export function timingError(timing: ScheduleTiming): RuntimeError | null {
  const fields = cronFields(timing.cron);
  if (fields.length !== 5 && fields.length !== 6) {
    return runtimeError("validation_error", "cron has 5 fields (minute hour day month weekday) or 6 (second first)", { cron: timing.cron, fields: fields.length });
  }
  if (!isKnownTimeZone(timing.timezone)) return runtimeError("validation_error", `unknown time zone ${timing.timezone}: use an IANA name such as Europe/Paris or UTC`, { timezone: timing.timezone });
  try {
    cronOf(timing);
  } catch (e) {
    return runtimeError("validation_error", `cron ${JSON.stringify(timing.cron)} cannot be read: ${e instanceof Error ? e.message : String(e)}`, { cron: timing.cron });
  }
  if (timing.start_at_ms !== null && timing.end_at_ms !== null && timing.end_at_ms <= timing.start_at_ms) {
    return runtimeError("validation_error", "end_at must be after start_at", { start_at: new Date(timing.start_at_ms).toISOString(), end_at: new Date(timing.end_at_ms).toISOString() });
  }
  const first = nextOccurrence(timing, (timing.start_at_ms ?? 0) - 1);
  if (first === null) return runtimeError("validation_error", "the cron has no occurrence between start_at and end_at", { cron: timing.cron });
  return null;
}

/** The first occurrence strictly after `afterMs`, within start_at and end_at; null when there is none. */
export function nextOccurrence(timing: ScheduleTiming, afterMs: number): number | null {
  const from = timing.start_at_ms === null ? afterMs : Math.max(afterMs, timing.start_at_ms - 1);
  const next = cronOf(timing).nextRun(new Date(from));
  if (next === null) return null;
  const at = next.getTime();
  // croner answers the next whole second after `from`; a start_at between seconds is respected here.
  if (timing.start_at_ms !== null && at < timing.start_at_ms) return nextOccurrence(timing, at);
  return timing.end_at_ms !== null && at > timing.end_at_ms ? null : at;
}

/** Up to `limit` occurrences strictly after `afterMs` and at or before `throughMs`, in order. */
export function occurrencesBetween(timing: ScheduleTiming, afterMs: number, throughMs: number, limit: number): number[] {
  const out: number[] = [];
  let cursor = afterMs;
  while (out.length < limit) {
    const at = nextOccurrence(timing, cursor);
    if (at === null || at > throughMs) break;
    out.push(at);
    cursor = at;
  }
  return out;
}

/** What one pass finds: occurrences to start, how many were missed (and when), and the new cursor. */
export interface DueScan {
  /** Occurrences at most the catch-up window late, in order: each is decided (started, skipped, buffered). */
  readonly start: number[];
  /** Occurrences more than the window late: counted, never started. */
  readonly missed: { readonly count: number; readonly first_at: number | null; readonly last_at: number | null; readonly at_least: boolean };
  /** Every occurrence at or before it has been processed. */
  readonly cursor: number;
  /** More occurrences are due now: run another pass at once. */
  readonly more: boolean;
}

/**
 * The occurrences due at `now`: those after `cursor` (the last processed) and at or before `now`. One at most
 * `catchupWindowMs` late is started; an older one was missed while nothing ran and is only counted. A pass looks at
 * `limit` occurrences at most; when all of those were missed and more are, the cursor jumps to the start of the
 * window and the count is a lower bound (`at_least`): a long stop of a frequent schedule costs one pass, not one per
 * missed occurrence.
 */
export function scanDue(timing: ScheduleTiming, cursor: number, now: number, catchupWindowMs: number, limit = MAX_OCCURRENCES_PER_PASS): DueScan {
  const found = occurrencesBetween(timing, cursor, now, limit);
  const oldestStartable = now - catchupWindowMs;
  const start = found.filter((at) => at >= oldestStartable);
  const missedAt = found.filter((at) => at < oldestStartable);
  const full = found.length === limit;
  const last = found.at(-1) ?? cursor;
  // All of a full pass missed: jump to the window's start, counting what lies between as missed too (at least one).
  const windowStart = oldestStartable - 1;
  const skippedOver = full && start.length === 0 && last < windowStart ? nextOccurrence(timing, last) : null;
  const jumped = skippedOver !== null && skippedOver <= windowStart;
  const newCursor = jumped ? windowStart : last;
  const upcoming = nextOccurrence(timing, newCursor);
  return {
    start,
    missed: { count: missedAt.length, first_at: missedAt[0] ?? null, last_at: missedAt.at(-1) ?? null, at_least: jumped },
    cursor: newCursor,
    more: full && upcoming !== null && upcoming <= now,
  };
}

/** Where the previous occurrence's task stands when the next one falls. */
export type PreviousState = "none" | "terminal" | "active";
/** What becomes of an occurrence. */
export type OverlapDecision = "start" | "skip" | "buffer" | "cancel_previous";

/**
 * The overlap policy's decision for an occurrence, given the previous occurrence's task and whether an occurrence
 * already waits (buffer_one keeps one at most: a later one while one waits is skipped).
 */
export function overlapDecision(policy: OverlapPolicy, previous: PreviousState, bufferTaken: boolean): OverlapDecision {
  if (previous !== "active" || policy === "allow") return "start";
  switch (policy) {
    case "skip":
      return "skip";
    case "buffer_one":
      return bufferTaken ? "skip" : "buffer";
    case "cancel_previous":
      return "cancel_previous";
  }
}

/** `yyyymmddthhmmssz` of a time, in UTC (lower case: a task id is `^[a-z0-9_-]{1,64}$`). */
export function occurrenceStamp(atMs: number): string {
  const iso = new Date(atMs).toISOString();
  return `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}t${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}z`;
}

/** The task id of the occurrence of `scheduleId` at `atMs`: the same for every try, so it is created once. */
export function occurrenceTaskId(scheduleId: string, atMs: number): string {
  return `${scheduleId}-${occurrenceStamp(atMs)}`;
}

/** The input ref an occurrence's task carries: which schedule made it, for which time. */
export interface ScheduleTriggerRef {
  readonly kind: "schedule_trigger";
  readonly schedule_id: string;
  readonly scheduled_at: string;
}

export function scheduleTriggerRef(scheduleId: string, atMs: number): ScheduleTriggerRef {
  return { kind: "schedule_trigger", schedule_id: scheduleId, scheduled_at: new Date(atMs).toISOString() };
}

/** Whether a task's input refs hold this occurrence's trigger: the task is the one the schedule created. */
export function holdsTrigger(inputRefs: readonly unknown[] | null | undefined, ref: ScheduleTriggerRef): boolean {
  return (inputRefs ?? []).some((r) => {
    const o = r as Partial<ScheduleTriggerRef> | null;
    return o !== null && typeof o === "object" && o.kind === ref.kind && o.schedule_id === ref.schedule_id && o.scheduled_at === ref.scheduled_at;
  });
}

/** The body of the create of an occurrence's task: the template, the derived id as task id and wal name, and the trigger ref. */
export function occurrenceTaskBody(template: Readonly<Record<string, unknown>>, scheduleId: string, atMs: number): Record<string, unknown> {
  const taskId = occurrenceTaskId(scheduleId, atMs);
  const refs = (template.input_refs as unknown[] | undefined) ?? [];
  return { ...template, task_id: taskId, wal_name: taskId, input_refs: [...refs, scheduleTriggerRef(scheduleId, atMs)] };
}

/**
 * Why the template's task could not be created (its DAG: a cycle, an unknown dependency, too many steps…), decided
 * as the create of one occurrence would be, at schedule creation: a schedule whose every occurrence would fail is
 * refused then. Null when it could.
 */
export function templateError(template: Readonly<Record<string, unknown>>, scheduleId: string, ctx: DecideContext): RuntimeError | null {
  const decision = decide(emptyState(), { type: "create_task", ...occurrenceTaskBody(template, scheduleId, ctx.now) }, ctx);
  return decision.ok ? null : decision.error;
}
