/**
 * @module The session view's model (pure): which tasks are shown and in what order, the session's counts as seed
 * 001's `task_summary` has them, a task's parent, who may answer the inbox, and a refresher that coalesces the
 * session stream's bursts (at most one read in flight and one queued).
 */
import type { IndexEntry, InboxAction, ListedTask, SessionSnapshot } from "../../../src/client/index.js";
import type { NormalizedStatus } from "../../../src/core/browser.js";

/** The counts the session view shows, as seed 001's task_summary names them. */
export const COUNT_NAMES = ["active", "terminal", "failed", "lost", "waiting", "blocked"] as const;
export type CountName = (typeof COUNT_NAMES)[number];
export type SessionCounts = Record<CountName, number> & { readonly open_actions: number; readonly stale: number };

/** Every normalized task status, in the order the status filter lists them (live ones first). */
export const TASK_STATUS_ORDER: readonly NormalizedStatus[] = [
  "queued", "preparing", "running", "waiting_input", "waiting_permission", "blocked", "paused", "retrying", "cancelling",
  "completed", "failed", "cancelled", "timed_out", "lost", "stale", "unknown",
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
 * The same counts from the task rows themselves (every task of the session, terminal ones included), by seed
 * 001's definitions: waiting is a live task that is pending or has open actions; lost, a live task with a lost
 * attempt; failed counts terminal failures.
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
