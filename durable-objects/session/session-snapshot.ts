/**
 * @module The session snapshot (GET /v1/sessions/{sid}) in the Agent Runtime snapshot shape, from its parts
 * (pure): the kept counts and bounded lists that snapshot-reads.ts reads.
 */
import { RUNTIME_EVENT_SCHEMA_VERSION } from "../../src/core/index.js";
import type { CompactTask, IndexEntry, ListedTask, SessionSnapshot } from "../../src/contract/index.js";
import { openActionCount, staleAtMs, type TaskCounts } from "./task-counts.js";

/** Live tasks listed, in creation order (the rest: the task list route from this offset). */
export const SNAPSHOT_TASKS = 50;
/** Held-up tasks listed per snapshot (the rest: `?blocked_after=`). */
export const SNAPSHOT_BLOCKED_TASKS = 50;
/** Open action ids listed per held-up task (the rest: the task's actions route). */
export const SNAPSHOT_ACTION_IDS = 10;
/** Terminal tasks listed as recent, newest first. */
export const RECENT_TERMINAL = 10;

/** The index entry of a row as agent.task_list and the snapshot list it: `stale` once past its stale time. */
export function listedTask(entryText: string, now: number): ListedTask {
  const entry = JSON.parse(entryText) as IndexEntry;
  const staleAt = staleAtMs(entry);
  return { ...entry, index_state: staleAt !== null && staleAt < now ? "stale" : "current" };
}

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

/** A held-up task (blocked, with blocked or failed steps, or waiting on people) and what it needs; `actionIds` its first open actions. */
export function blockedTask(t: ListedTask, actionIds: readonly string[]): BlockedTask {
  const open = openActionCount(t);
  const requiredAction = open > 0
    ? `respond to ${open === 1 ? "the open action" : `the ${open} open actions`}`
    : t.native_status === "blocked"
      ? "reopen the task"
      : "reopen or replace the blocked and failed steps";
  return { taskId: t.task_id, nativeStatus: t.native_status, blockedSteps: t.step_counts.blocked, failedSteps: t.step_counts.failed, requiredAction, actionIds: [...actionIds] };
}

/** What the snapshot is made of: the counts and the bounded lists, with how each pages on. */
export interface SnapshotParts {
  counts: TaskCounts;
  /** The newest updated_at of any task (the session's creation when it has none). */
  updatedAt: string;
  tasks: ListedTask[];
  blocked: { task: ListedTask; actionIds: string[] }[];
  recentTerminal: ListedTask[];
  pages: SessionSnapshot["pages"];
}

/** The snapshot from its parts (pure). This runtime has no threads: `threads` is empty. */
export function buildSessionSnapshot(session: { session_id: string; created_at: string }, parts: SnapshotParts): SessionSnapshot {
  const { counts } = parts;
  const recent = parts.recentTerminal;
  return {
    ...session,
    task_summary: {
      active: counts.active,
      terminal: counts.terminal,
      failed: counts.failed,
      lost: counts.lost,
      waiting: counts.waiting,
      blocked: counts.blocked,
      stale: counts.stale,
      open_actions: counts.open_actions,
      recent_terminal: recent,
    },
    schemaVersion: RUNTIME_EVENT_SCHEMA_VERSION,
    sessionId: session.session_id,
    updatedAt: parts.updatedAt,
    threads: [] as never[],
    taskSummary: {
      activeCount: counts.active,
      terminalCount: counts.terminal,
      failedCount: counts.failed,
      lostCount: counts.lost,
      waitingCount: counts.waiting,
      blockedCount: counts.blocked,
      staleCount: counts.stale,
      recentTerminal: recent.map((t) => compactTask(session.session_id, t)),
    },
    tasks: parts.tasks.map((t) => compactTask(session.session_id, t)),
    blockedTasks: parts.blocked.map((b) => blockedTask(b.task, b.actionIds)),
    deliveryState: { status: "not_applicable" },
    pages: parts.pages,
  };
}
