/** @module The session read model (task summary, tasks, blockers, delivery state) in the Agent Runtime snapshot shape, from index entries (pure). */
import { RUNTIME_EVENT_SCHEMA_VERSION } from "../../src/core/index.js";
import type { CompactTask, ListedTask, SessionSnapshot } from "../../src/contract/index.js";

/** Terminal tasks listed as recent. */
const RECENT_TERMINAL = 10;

/** A task of the session as the snapshot schema's compact `task`; `stale` when the entry may lag the task. */
export function compactTask(sessionId: string, t: ListedTask): CompactTask {
  return {
    taskId: t.task_id,
    sessionId,
    title: t.title,
    status: t.index_state === "stale" ? "stale" : t.status,
    nativeStatus: t.native_status,
    progress: { steps: { total: t.total_steps, ...t.step_counts }, activeRuns: t.active_runs },
    createdAt: t.created_at,
    updatedAt: t.updated_at,
  };
}

type BlockedTask = SessionSnapshot["blockedTasks"][number];

/** How many actions of the task are open (0 for an entry pushed before actions existed). */
function openActionCount(t: ListedTask): number {
  return t.open_action_count ?? 0;
}

/** Blocked tasks: tasks waiting on people (their open actions to answer), blocked tasks, tasks with blocked or failed steps. */
function blockedTasks(active: readonly ListedTask[], openActionIds: ReadonlyMap<string, readonly string[]>): BlockedTask[] {
  const listed: BlockedTask[] = [];
  for (const t of active) {
    const actionIds = [...(openActionIds.get(t.task_id) ?? [])];
    const stuck = t.native_status === "blocked" || t.step_counts.blocked + t.step_counts.failed > 0;
    if (!stuck && openActionCount(t) === 0) continue;
    const requiredAction = openActionCount(t) > 0
      ? `respond to ${openActionCount(t) === 1 ? "the open action" : `the ${openActionCount(t)} open actions`}`
      : t.native_status === "blocked"
        ? "reopen the task"
        : "reopen or replace the blocked and failed steps";
    listed.push({ taskId: t.task_id, nativeStatus: t.native_status, blockedSteps: t.step_counts.blocked, failedSteps: t.step_counts.failed, requiredAction, actionIds });
  }
  return listed;
}

/**
 * The session snapshot: snake_case `task_summary` counts (active, terminal, failed, lost, waiting — pending
 * or with open actions —, blocked, stale, open actions, recent terminal) and the Agent Runtime snapshot fields
 * (schemaVersion, sessionId, threads, taskSummary, tasks, blockedTasks, deliveryState). This runtime has no
 * threads: `threads` is empty.
 */
export function buildSessionSnapshot(
  session: { session_id: string; created_at: string },
  rows: readonly ListedTask[],
  /** Each task's open actions in the inbox, oldest first. */
  openActionIds: ReadonlyMap<string, readonly string[]> = new Map(),
): SessionSnapshot {
  const terminal = rows.filter((t) => t.terminal).sort((a, b) => b.updated_at.localeCompare(a.updated_at));
  const active = rows.filter((t) => !t.terminal);
  const summary = {
    active: active.length,
    terminal: terminal.length,
    failed: rows.filter((t) => t.native_status === "failed").length,
    lost: active.filter((t) => t.lost_attempts > 0).length,
    waiting: active.filter((t) => t.native_status === "pending" || openActionCount(t) > 0).length,
    blocked: active.filter((t) => t.native_status === "blocked").length,
    stale: rows.filter((t) => t.index_state === "stale").length,
    open_actions: active.reduce((n, t) => n + openActionCount(t), 0),
    recent_terminal: terminal.slice(0, RECENT_TERMINAL),
  };
  const updatedAt = rows.reduce((latest, t) => (t.updated_at > latest ? t.updated_at : latest), session.created_at);
  return {
    ...session,
    task_summary: summary,
    schemaVersion: RUNTIME_EVENT_SCHEMA_VERSION,
    sessionId: session.session_id,
    updatedAt,
    threads: [] as never[],
    taskSummary: {
      activeCount: summary.active,
      terminalCount: summary.terminal,
      failedCount: summary.failed,
      lostCount: summary.lost,
      waitingCount: summary.waiting,
      blockedCount: summary.blocked,
      staleCount: summary.stale,
      recentTerminal: summary.recent_terminal.map((t) => compactTask(session.session_id, t)),
    },
    tasks: rows.map((t) => compactTask(session.session_id, t)),
    blockedTasks: blockedTasks(active, openActionIds),
    deliveryState: { status: "not_applicable" },
  };
}
