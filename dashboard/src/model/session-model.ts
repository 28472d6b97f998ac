/**
 * @module The session view's model (pure): which tasks are shown and in what order, what the list says about the
 * tasks its filter hides, the session's counts as its `task_summary` has them, a task's parent, who may answer the
 * inbox, and a refresher that coalesces the session stream's bursts (at most one read in flight and one queued).
 */
import type { IndexEntry, InboxAction, ListedTask, SessionSnapshot } from "../../../src/client/index.js";
import type { NormalizedStatus } from "../../../src/core/browser.js";

/** The counts the session view shows, named as the session snapshot's `task_summary` names them. */
export const COUNT_NAMES = ["active", "terminal", "failed", "lost", "waiting", "blocked"] as const;
export type CountName = (typeof COUNT_NAMES)[number];
export type SessionCounts = Record<CountName, number> & { readonly open_actions: number; readonly stale: number };

/** Every normalized task status, in the order the status filter lists them (live ones first). */
export const TASK_STATUS_ORDER: readonly NormalizedStatus[] = [
  "queued", "preparing", "running", "waiting_input", "waiting_permission", "blocked", "paused", "retrying", "cancelling",
  "completed", "failed", "cancelled", "timed_out", "lost", "archived", "stale", "unknown",
];

/** The status filter's "every status" value. */
export const ANY_STATUS = "all";

/** How the list is ordered: most recently changed first, or in creation order. */
export type TaskSort = "updated" | "created";

/** What the viewer chose to see. */
export interface TaskFilter {
  readonly status: NormalizedStatus | typeof ANY_STATUS;
  readonly includeTerminal: boolean;
  readonly sort: TaskSort;
}

export const DEFAULT_FILTER: TaskFilter = { status: ANY_STATUS, includeTerminal: false, sort: "updated" };

/** The counts of `task_summary` (GET /v1/sessions/{sid}), as the server computed them. */
export function countsOfSnapshot(snapshot: Pick<SessionSnapshot, "task_summary">): SessionCounts {
  const s = snapshot.task_summary;
  return { active: s.active, terminal: s.terminal, failed: s.failed, lost: s.lost, waiting: s.waiting, blocked: s.blocked, open_actions: s.open_actions, stale: s.stale };
}

/**
 * The same counts from the task rows themselves (every task of the session, terminal ones included), by the
 * task_summary's definitions: waiting is a live task that is pending or has open actions; lost, a live task with
 * a lost attempt; failed counts terminal failures.
 */
export function countsOfRows(rows: readonly ListedTask[]): SessionCounts {
  const active = rows.filter((t) => !t.terminal);
  const open = (t: IndexEntry) => t.open_action_count ?? 0;
  return {
    active: active.length,
    terminal: rows.length - active.length,
    failed: rows.filter((t) => t.native_status === "failed").length,
    lost: active.filter((t) => t.lost_attempts > 0).length,
    waiting: active.filter((t) => t.native_status === "pending" || open(t) > 0).length,
    blocked: active.filter((t) => t.native_status === "blocked").length,
    open_actions: active.reduce((n, t) => n + open(t), 0),
    stale: rows.filter((t) => t.index_state === "stale").length,
  };
}

/** The tasks the filter shows, in its order (ties: task_id, so the order never flickers between reads). */
export function visibleTasks(rows: readonly ListedTask[], filter: TaskFilter): ListedTask[] {
  const shown = rows.filter((t) => (filter.includeTerminal || !t.terminal) && (filter.status === ANY_STATUS || t.status === filter.status));
  const key = filter.sort === "created" ? (t: ListedTask) => t.created_at : (t: ListedTask) => t.updated_at;
  const sign = filter.sort === "created" ? 1 : -1;
  return shown.sort((a, b) => sign * key(a).localeCompare(key(b)) || a.task_id.localeCompare(b.task_id));
}

/** At most this many recently ended tasks are shown when the session has no live task and terminal ones are hidden. */
export const RECENTLY_ENDED = 5;

/** `n` and the noun, in the plural unless n is 1. */
export function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/** How many terminal tasks the filter hides: the session's terminal count while they are hidden, else none. */
export function hiddenTerminal(filter: Pick<TaskFilter, "includeTerminal">, counts: Pick<SessionCounts, "terminal"> | null): number {
  return filter.includeTerminal || counts === null ? 0 : counts.terminal;
}

/** A one-click way out of a filter that hides tasks: include the terminal ones, or every status. */
export type ListRemedy = "show_terminal" | "any_status";

/** The line above the task list: what it shows and hides, and the buttons it offers. */
export interface ListStatus {
  readonly text: string;
  readonly remedies: readonly ListRemedy[];
  /** True when the list is empty and the view shows the session's most recently ended tasks instead. */
  readonly showsRecentlyEnded: boolean;
}

/** How many rows the filter shows, how many the view read (within the terminal choice) of how many, and how many terminal tasks it hides. */
export interface ListCounts {
  readonly shown: number;
  readonly listed: number;
  readonly total: number;
  readonly hidden: number;
}

/**
 * The line above the task list. It says how many rows are shown and how many terminal tasks are hidden, with the
 * button that shows them; when no row is left it says why, never a bare "no task" while the session has tasks: a
 * session whose tasks have all ended shows its most recently ended ones, and a status nothing has offers every
 * status back.
 */
export function listStatus(filter: TaskFilter, { shown, listed, total, hidden }: ListCounts): ListStatus {
  const partial = total > listed ? ` (the first ${listed} of ${total} tasks read)` : "";
  const hiddenNote = hidden > 0 ? ` · ${plural(hidden, "terminal task")} hidden` : "";
  const showTerminal: ListRemedy[] = hidden > 0 ? ["show_terminal"] : [];
  if (shown > 0) return { text: `${shown} shown${partial}${hiddenNote}`, remedies: showTerminal, showsRecentlyEnded: false };
  if (listed === 0 && hidden === 0) return { text: "This session has no task yet.", remedies: [], showsRecentlyEnded: false };
  if (filter.status === ANY_STATUS) {
    const text = hidden === 1 ? "No live task: the session's only task has ended." : `No live task: the session's ${hidden} tasks have all ended.`;
    return { text, remedies: showTerminal, showsRecentlyEnded: true };
  }
  const among = hidden > 0 ? ` among the live ones${partial}; ${plural(hidden, "terminal task")} ${hidden === 1 ? "is" : "are"} hidden` : partial;
  return { text: `No task has status “${filter.status.replace(/_/g, " ")}”${among}.`, remedies: ["any_status", ...showTerminal], showsRecentlyEnded: false };
}

/** The label of a remedy's button. */
export function remedyLabel(remedy: ListRemedy, hidden: number): string {
  if (remedy === "any_status") return "Show all statuses";
  return hidden === 1 ? "Show the terminal task" : `Show the ${hidden} terminal tasks`;
}

/** The caption of the recently ended tasks shown in place of an empty list: it says when they are not all of them. */
export function recentlyEndedCaption(shown: number, hidden: number): string {
  return hidden > shown ? `The ${shown} most recently ended of ${hidden} terminal tasks` : "Recently ended tasks";
}

/** The session's most recently ended tasks, newest first (ties: task id), at most `limit`. */
export function recentlyEnded(rows: readonly ListedTask[], limit = RECENTLY_ENDED): ListedTask[] {
  return visibleTasks(rows.filter((t) => t.terminal), { status: ANY_STATUS, includeTerminal: true, sort: "updated" }).slice(0, limit);
}

/** How many of the rows (within the terminal choice) have each normalized status: the status filter's labels. */
export function statusCounts(rows: readonly ListedTask[], includeTerminal: boolean): Map<NormalizedStatus, number> {
  const counts = new Map<NormalizedStatus, number>();
  for (const t of rows) if (includeTerminal || !t.terminal) counts.set(t.status, (counts.get(t.status) ?? 0) + 1);
  return counts;
}

/** A child task's parent: its id and, when the session's list holds it, its title. */
export function parentOf(task: ListedTask, byId: ReadonlyMap<string, ListedTask>): { readonly taskId: string; readonly title: string | null } | null {
  const id = task.parent_task_id ?? task.delegated_from?.task_id ?? null;
  if (id === null || id === undefined) return null;
  return { taskId: id, title: byId.get(id)?.title ?? null };
}

/** The step counts worth showing: completed of total, then every other status that has steps. */
export function stepSummary(task: Pick<IndexEntry, "step_counts" | "total_steps">): { readonly completed: number; readonly total: number; readonly others: [string, number][] } {
  const others = Object.entries(task.step_counts).filter(([status, n]) => status !== "completed" && n > 0);
  return { completed: task.step_counts.completed ?? 0, total: task.total_steps, others };
}

/** Roles whose token may answer actions (respond_action): the others see the inbox read-only. */
export function canAnswer(role: string): boolean {
  return role === "orchestrator" || role === "approver";
}

/** The inbox in its order: newest first (ties: action_id), only the open actions. */
export function inboxOrder(actions: readonly InboxAction[]): InboxAction[] {
  return actions.filter((a) => a.status === "open").sort((a, b) => b.created_at.localeCompare(a.created_at) || b.action_id.localeCompare(a.action_id));
}

/** A short "how long ago" of `iso` at `now` (ms), for the list; the exact time goes in the element's title. */
export function ago(iso: string, now: number): string {
  const ms = now - Date.parse(iso);
  if (!Number.isFinite(ms)) return iso;
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s ago`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.round(m / 60);
  if (h < 48) return `${h} h ago`;
  return `${Math.round(h / 24)} d ago`;
}

/**
 * Runs `read` on demand, never two at once: a trigger while a read runs queues one more (however many triggers
 * arrive meanwhile), which starts when it ends. `idle()` settles once nothing runs or is queued.
 */
export class Coalescer {
  private running: Promise<void> | null = null;
  private queued = false;
  /** Reads started so far. */
  reads = 0;

  constructor(private readonly read: () => Promise<unknown>) {}

  /** Asks for a read. */
  trigger(): void {
    if (this.running !== null) {
      this.queued = true;
      return;
    }
    this.running = (async () => {
      do {
        this.queued = false;
        this.reads += 1;
        try {
          await this.read();
        } catch {
          // A failed read is the reader's to report; the next trigger reads again.
        }
      } while (this.queued);
    })().finally(() => {
      this.running = null;
    });
  }

  /** Settles when no read runs or waits. */
  async idle(): Promise<void> {
    while (this.running !== null) await this.running;
  }
}
