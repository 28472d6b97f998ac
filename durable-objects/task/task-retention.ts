/**
 * @module Retention of an archived task (docs/design.md "Archive and retention"): once the deadline its archive
 * recorded (`delete_after`) has passed, and nothing still references the task, the alarm has the session forget its
 * entry, then deletes the object's storage and leaves a tombstone, so the task's routes answer 404 not_found with
 * `details.reason: "retention"`. The order makes a crash between any two steps safe: the session's entry goes first
 * (a listed task never lacks its storage), the storage only after the session answered, and each step is done again
 * after a restart (the WAL still holds the deadline) until the tombstone is written.
 */
import { type DagState, retentionDeadline, retentionHold, type RuntimeError, runtimeError } from "../../src/core/index.js";
import type { ForgetAnswer } from "../session/session-rpc.js";
import type { Sql } from "./storage/wal-store.js";

/** How soon a deletion that something still holds (a live task, owed work) is tried again. */
export const RETENTION_HELD_RETRY_MS = 3_600_000;
/** How soon a deletion whose call to the session failed is tried again. */
export const RETENTION_FAILED_RETRY_MS = 60_000;
/** The meta row that marks an object whose task retention deleted. */
const TOMBSTONE_KEY = "retention_tombstone";

/** What an object whose storage retention deleted still says of its task. */
export interface Tombstone {
  readonly task_id: string;
  readonly archived_at: string;
  readonly deleted_at: string;
}

/** The tombstone of this object's storage, or null when its task was never deleted by retention. */
export function readTombstone(sql: Sql): Tombstone | null {
  const row = sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", TOMBSTONE_KEY).toArray()[0];
  return row === undefined ? null : (JSON.parse(row.value) as Tombstone);
}

/** Writes the tombstone (into storage that holds nothing else: the shell calls this right after deleting it). */
export function writeTombstone(sql: Sql, tombstone: Tombstone): void {
  sql.exec("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", TOMBSTONE_KEY, JSON.stringify(tombstone));
}

/** The answer of every route of a task retention deleted. */
export function retainedNotFound(tombstone: Tombstone): RuntimeError {
  return runtimeError("not_found", `task ${tombstone.task_id} was archived and its storage deleted by retention`, { reason: "retention", ...tombstone });
}

/** What the retention of one task object calls. */
export interface RetentionPorts {
  /** The session's forgetTask for this task. */
  readonly forget: (sessionId: string, taskId: string, walName: string, walSeq: number) => Promise<ForgetAnswer>;
  /** Deletes the object's storage and writes the tombstone in its place (the shell's retire). */
  readonly retire: (tombstone: Tombstone) => Promise<void>;
}

/** Why the last try kept the task, for tests and logs. */
export type RetentionOutcome = "not_due" | "deleted" | "held" | "failed";

/** The retention of one task object's archived task: due from the core's deadline, run from the alarm. */
export class TaskRetention {
  /** Not before this time again, after a try that something held or that failed (null: the deadline alone). */
  private retryAt: number | null = null;
  /** The one try under way. */
  private running: Promise<RetentionOutcome> | null = null;
  /** Set once retention deleted the task (read back from storage on start): every call is then answered 404 retention. */
  tombstone: Tombstone | null = null;
  /** The clock the tries read (a field: the retention tests move it past the deadline instead of waiting for days). */
  clock: () => number = () => Date.now();
  /** What kept the task at the last try, null when nothing did. */
  lastHold: { readonly reason: string; readonly held_by?: readonly string[] } | null = null;

  constructor(
    private readonly state: () => DagState,
    private readonly ports: RetentionPorts,
  ) {}

  /** The answer for a call that needs a task this object does not hold: never created, or deleted by retention. */
  noTask(): RuntimeError {
    return this.tombstone === null ? runtimeError("not_found", "no such task") : retainedNotFound(this.tombstone);
  }

  /** When the alarm must come by for the task's deletion; null when nothing is due ever (not archived, kept forever). */
  get dueAt(): number | null {
    const deadline = retentionDeadline(this.state());
    if (deadline === null) return null;
    return this.retryAt === null ? deadline : Math.max(deadline, this.retryAt);
  }

  /** Deletes the task when it is due and nothing holds it; otherwise sets the next try. One try at a time. */
  run(): Promise<RetentionOutcome> {
    this.running ??= this.attempt(this.clock()).finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async attempt(now: number): Promise<RetentionOutcome> {
    const due = this.dueAt;
    if (due === null || due > now) return "not_due";
    const state = this.state();
    const task = state.task!;
    const hold = retentionHold(state);
    if (hold !== null) return this.held(now, { reason: hold });
    let answer: ForgetAnswer;
    try {
      answer = await this.ports.forget(task.session_id, task.task_id, task.wal_name, state.last_wal_seq);
    } catch (e) {
      this.retryAt = now + RETENTION_FAILED_RETRY_MS;
      console.error(JSON.stringify({ level: "warn", where: "task object: retention", task_id: task.task_id, error: e instanceof Error ? e.message : String(e) }));
      return "failed";
    }
    if (!answer.forgotten) return this.held(now, { reason: "blocks_live_task", held_by: answer.held_by });
    // Work the task took meanwhile (a late result while the session answered) holds it again: its entry is gone, but
    // its storage stays until the next try, which the session answers forgotten again.
    const after = retentionHold(this.state());
    if (after !== null) return this.held(now, { reason: after });
    const tombstone = { task_id: task.task_id, archived_at: task.archived_at!, deleted_at: new Date(now).toISOString() };
    await this.ports.retire(tombstone);
    this.tombstone = tombstone;
    this.retryAt = null;
    this.lastHold = null;
    return "deleted";
  }

  private held(now: number, hold: { reason: string; held_by?: readonly string[] }): RetentionOutcome {
    this.retryAt = now + RETENTION_HELD_RETRY_MS;
    this.lastHold = hold;
    return "held";
  }
}
