/**
 * @module What the WAL timeline draws, as pure functions of the task's WAL events: one row per event (wal_seq, time,
 * type, step, actor, a one-line summary of its payload), the filters built from the events present, and a page of
 * rows (newest or oldest first) so that a long WAL never becomes one DOM row per event. Also the WAL export (all
 * pages joined as JSON Lines) and a once-per-frame scheduler for the replay slider.
 */
import { clipText, type WalEvent, type WalEventType } from "../../../src/core/browser.js";

/** Rows shown at first, and added by each "Show more". */
export const TIMELINE_PAGE = 200;
/** Longest summary, in characters (the row stays one line). */
export const SUMMARY_MAX = 160;

/** One drawn timeline row. */
export interface TimelineRow {
  readonly walSeq: number;
  /** The event's created_at (ISO 8601). */
  readonly time: string;
  readonly type: WalEventType;
  readonly stepId: string | null;
  /** The actor's agent id, with its run when it acted in one. */
  readonly actor: string;
  readonly summary: string;
}

/** The timeline's filters: an event type and a step (null: all). `step` "" means task-level events (no step). */
export interface TimelineFilter {
  readonly type: string | null;
  readonly step: string | null;
}

/** Which end of the WAL comes first. */
export type TimelineOrder = "newest" | "oldest";

/** A window of rows and what lies either side of it. */
export interface TimelinePage {
  readonly rows: TimelineRow[];
  /** Events that match the filters. */
  readonly matched: number;
  /** Matching events before the window (above `rows`). */
  readonly before: number;
  /** Matching events after the window (below `rows`). */
  readonly remaining: number;
}

/** The rows shown: `count` matching events from position `start` (0 = the first in the order shown). */
export interface TimelineWindow {
  readonly start: number;
  readonly count: number;
}

/** The step filter's value for events without a step. */
export const TASK_LEVEL = "";

const clip = (text: string, max = SUMMARY_MAX): string => clipText(text.replace(/\s+/g, " ").trim(), max);

const join = (...parts: (string | null | undefined | false)[]): string => parts.filter((p): p is string => typeof p === "string" && p !== "").join(" · ");

const quoted = (text: string | null | undefined): string | null => (text === null || text === undefined || text === "" ? null : `“${text}”`);

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

const artifacts = (ids: readonly string[] | null | undefined): string | null => (ids === null || ids === undefined || ids.length === 0 ? null : plural(ids.length, "artifact"));

const retryText = (retry: { attempts: number; max_attempts: number; retry_at: string | null } | undefined): string | null =>
  retry === undefined ? null : retry.retry_at === null ? `retries exhausted (${retry.attempts}/${retry.max_attempts})` : `retry ${retry.attempts}/${retry.max_attempts} at ${retry.retry_at}`;

/** Counts patch ops by kind, in first-seen order: "2 add_step, 1 update_step". */
function opCounts(ops: readonly { op: string }[]): string {
  const counts = new Map<string, number>();
  for (const { op } of ops) counts.set(op, (counts.get(op) ?? 0) + 1);
  return [...counts].map(([op, n]) => `${n} ${op}`).join(", ");
}

/** A one-line, human summary of what a WAL event records (its payload; the envelope is shown in its own columns). */
export function eventSummary(event: WalEvent): string {
  switch (event.event_type) {
    case "task_created":
      return clip(join(quoted(event.payload.task.title), plural(event.payload.steps.length, "step")));
    case "task_updated": {
      const after = event.payload.updated_after_dispatch.map((u) => u.step_id);
      return clip(join(opCounts(event.payload.ops), after.length > 0 && `updated after dispatch: ${after.join(", ")}`));
    }
    case "task_running":
    case "task_step_ready":
      return "";
    case "task_blocked":
    case "task_reopened":
    case "task_completed":
    case "task_failed":
    case "task_cancelled":
    case "task_paused":
    case "task_resumed":
      return clip(event.payload.reason ?? "");
    case "task_archived":
      return clip(join(event.payload.reason ?? "", event.payload.delete_after !== null && `storage deleted after ${event.payload.delete_after}`));
    case "task_step_pending":
      return clip(event.payload.reason);
    case "task_step_claimed":
      return clip(join(`by ${event.payload.agent_id}`, `attempt ${event.payload.attempt_ordinal}`, `run ${event.payload.run_id}`));
    case "task_step_started":
    case "task_step_updated":
      return clip(join(quoted(event.payload.result_summary), artifacts(event.payload.artifact_ids)));
    case "task_step_blocked":
      return clip(join(event.payload.reason, quoted(event.payload.result_summary), artifacts(event.payload.artifact_ids)));
    case "task_step_completed":
      return clip(join(quoted(event.payload.result_summary), artifacts(event.payload.artifact_ids)));
    case "task_step_failed":
      return clip(join(event.payload.reason, `attempt ${event.payload.attempt_status}`, quoted(event.payload.result_summary), retryText(event.payload.retry)));
    case "task_step_cancelled":
      return clip(event.payload.reason ?? "");
    case "task_step_reopened":
      return clip(join(event.payload.reason, event.payload.by_retry_policy === true && "by retry policy"));
    case "task_step_lease_expired":
      return clip(join(`run ${event.payload.run_id}`, `lease ended ${event.payload.lease_expires_at}`, retryText(event.payload.retry)));
    case "action_requested":
      return clip(join(event.payload.kind, quoted(event.payload.prompt)));
    case "action_resolved":
      return clip(join(event.payload.decision, `by ${event.payload.resolved_by_role}`, quoted(event.payload.comment)));
    case "step_delegated":
      return clip(join(`to ${event.payload.kind === "task" ? `child task ${event.payload.child_task_id ?? "?"}` : `A2A agent ${event.payload.agent_card_ref ?? "?"}`}`, `attempt ${event.payload.attempt_ordinal}`));
    case "delegation_updated": {
      const p = event.payload;
      return clip(join(p.status, p.remote_status !== undefined && p.remote_status !== null && `remote ${p.remote_status}`, p.remote_task_id !== undefined && `remote task ${p.remote_task_id}`, p.cancel_sent === true && "cancel sent"));
    }
    case "delegation_try_failed":
      return clip(join(`${event.payload.intent} failed (try ${event.payload.tries})`, event.payload.error));
    case "delegation_cancel_requested":
    case "delegation_closed":
      return clip(event.payload.reason);
    case "delegation_settled":
      return clip(join(event.payload.outcome, event.payload.reason));
    case "task_delivery_recorded":
      return clip(join(event.payload.delivery_state, event.payload.detail));
    case "task_progress": {
      const p = event.payload;
      const counters = p.counters === null ? null : Object.entries(p.counters).map(([k, v]) => `${k}=${v}`).join(" ");
      return clip(join(p.phase, quoted(p.summary), counters));
    }
    case "worker_dispatched":
      return clip(join(`run ${event.payload.run_id}`, `agent ${event.payload.agent_id}`, `pool ${event.payload.worker_pool_id}`, `max ${plural(event.payload.max_steps, "step")}`));
    case "worker_run_cancel_requested":
      return clip(join(`run ${event.payload.run_id}`, event.payload.reason));
    case "child_agent_cancel_timeout":
      return clip(join(`run ${event.payload.run_id}`, event.payload.reason));
    case "worker_run_ended":
      return clip(join(`run ${event.payload.run_id}`, event.payload.status, event.payload.reason));
    case "webhook_deliveries_queued": {
      const queued = event.payload.deliveries;
      return clip(join(plural(queued.length, "delivery", "deliveries"), queued.map((q) => `${q.event_type} → ${q.webhook_id}`).join(", ")));
    }
    case "webhook_deliveries_tried":
      return clip(event.payload.tries.map((t) => `${t.status} (${t.status_code === null ? (t.error ?? "no answer") : `HTTP ${t.status_code}`}, try ${t.attempts})`).join("; "));
    case "webhook_delivery_retried":
      return clip(`${event.payload.delivery_id} owed again`);
    case "task_blockers_updated":
      return clip(event.payload.blocked_by.length === 0 ? "no blockers" : `blocked by ${event.payload.blocked_by.join(", ")}`);
    default:
      return "";
  }
}

/** The row of one event. */
export function rowOf(event: WalEvent): TimelineRow {
  return {
    walSeq: event.wal_seq,
    time: event.created_at,
    type: event.event_type,
    stepId: event.step_id,
    actor: event.actor_run_id === null ? event.actor_agent_id : `${event.actor_agent_id} (${event.actor_run_id})`,
    summary: eventSummary(event),
  };
}

/** The event types present, sorted: the "Event type" filter's options. */
export function eventTypesOf(events: readonly WalEvent[]): WalEventType[] {
  return [...new Set(events.map((e) => e.event_type))].sort();
}

/** The step ids present, sorted (task-level events are the TASK_LEVEL option, not listed here). */
export function stepIdsOf(events: readonly WalEvent[]): string[] {
  const ids = new Set<string>();
  for (const e of events) if (e.step_id !== null) ids.add(e.step_id);
  return [...ids].sort();
}

/** Whether an event passes the filters. */
export function matches(event: WalEvent, filter: TimelineFilter): boolean {
  if (filter.type !== null && event.event_type !== filter.type) return false;
  if (filter.step === null) return true;
  return filter.step === TASK_LEVEL ? event.step_id === null : event.step_id === filter.step;
}

/**
 * The rows at positions `start` to `start + limit` among the events that pass the filters, newest or oldest first.
 * Only the shown rows are built (a 10,000-event WAL with limit 200 makes 200 rows); the rest is counted.
 */
export function timelinePage(events: readonly WalEvent[], filter: TimelineFilter, order: TimelineOrder, limit: number = TIMELINE_PAGE, start = 0): TimelinePage {
  const rows: TimelineRow[] = [];
  let matched = 0;
  const n = events.length;
  for (let i = 0; i < n; i += 1) {
    const event = events[order === "newest" ? n - 1 - i : i]!;
    if (!matches(event, filter)) continue;
    if (matched >= start && rows.length < limit) rows.push(rowOf(event));
    matched += 1;
  }
  const before = Math.min(start, matched);
  return { rows, matched, before, remaining: matched - before - rows.length };
}

/** The position of `walSeq` among the events that pass the filters in that order; -1 when it does not pass. */
export function positionOf(events: readonly WalEvent[], filter: TimelineFilter, order: TimelineOrder, walSeq: number): number {
  let position = 0;
  const n = events.length;
  for (let i = 0; i < n; i += 1) {
    const event = events[order === "newest" ? n - 1 - i : i]!;
    if (!matches(event, filter)) continue;
    if (event.wal_seq === walSeq) return position;
    position += 1;
  }
  return -1;
}

/**
 * The window that shows `position`: `current` itself when it does, otherwise the page of `page` rows holding it (so
 * seeking far away never builds every row between here and there).
 */
export function windowShowing(position: number, current: TimelineWindow, page: number = TIMELINE_PAGE): TimelineWindow {
  if (position >= current.start && position < current.start + current.count) return current;
  return { start: Math.floor(position / page) * page, count: page };
}

/** The clock time of an ISO timestamp, HH:MM:SS.mmm in UTC (the full timestamp is the element's datetime). */
export function clockOf(iso: string): string {
  const match = /T(\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?)/.exec(iso);
  return match === null ? iso : match[1]!;
}

/** The file the WAL export is saved as. */
export function walFileName(taskId: string): string {
  return `${taskId}.wal.jsonl`;
}

/** One page of the WAL export as the SDK's walExport answers it. */
export interface WalExportPage {
  readonly events: readonly { readonly wal_seq: number }[];
  readonly text: string;
  readonly last_wal_seq: number;
}

/**
 * The whole WAL as JSON Lines: reads page after page (`after_seq` = the last wal_seq read) until the WAL's end,
 * joining the pages' text, one event per line with a final newline.
 */
export async function exportWalText(readPage: (afterSeq: number) => Promise<WalExportPage>): Promise<string> {
  const parts: string[] = [];
  let after = 0;
  for (;;) {
    const page = await readPage(after);
    if (page.events.length === 0) break;
    const text = page.text.endsWith("\n") ? page.text : `${page.text}\n`;
    parts.push(text);
    after = page.events[page.events.length - 1]!.wal_seq;
    if (after >= page.last_wal_seq) break;
  }
  return parts.join("");
}

/**
 * Calls `run` with the latest value at most once per frame: values given between two frames collapse into the last
 * one (a slider dragged across a thousand wal_seqs rebuilds the DAG once per frame, not a thousand times).
 */
export function perFrame<T>(run: (value: T) => void, schedule: (callback: () => void) => unknown): { push(value: T): void; cancel(): void } {
  let pending = false;
  let cancelled = false;
  let latest: T;
  return {
    push(value: T) {
      latest = value;
      cancelled = false;
      if (pending) return;
      pending = true;
      schedule(() => {
        pending = false;
        if (!cancelled) run(latest);
      });
    },
    cancel() {
      cancelled = true;
    },
  };
}
