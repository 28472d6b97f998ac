/**
 * @module The task's entry in its session index, pushed as an outbox: what the index acknowledged is stored,
 * and an unacknowledged change always has a due time that the object's alarm covers, so a crash or an
 * eviction between a commit and its push never leaves the session listing an old entry.
 */
import type { IndexEntry } from "../../src/contract/index.js";
import type { DagState } from "../../src/core/index.js";
import { indexEntryOf, openActionsVersion } from "./index-entry.js";
import type { Sql } from "./storage/wal-store.js";

/** How long count-only index changes are gathered before one push. */
export const INDEX_PUSH_DEBOUNCE_MS = 200;
/** How soon a push is retried after a failure or a push that never answered (doubling up to a minute). */
export const INDEX_RETRY_MS = 2_000;
const INDEX_RETRY_MAX_MS = 60_000;
/** The meta row holding the wal_seq the session index last acknowledged. */
const PUSHED_SEQ_KEY = "index_pushed_seq";

/** The pushes of one task object to its session index. */
export class IndexOutbox {
  /** The wal_seq the index acknowledged (stored, so a restart knows whether it is behind). */
  private pushedSeq = 0;
  /** The task status the index last acknowledged (unknown after a restart: the first push goes at once). */
  private pushedStatus: string | null = null;
  /** Which open actions the index last acknowledged (openActionsVersion; unknown after a restart). */
  private pushedActions: string | null = null;
  private inFlight: Promise<void> | null = null;
  private retryDelay = INDEX_RETRY_MS;
  /** When the next push is due, for the object's alarm; null when the index holds everything. */
  dueAt: number | null = null;

  constructor(
    private readonly sql: Sql,
    /** The task object's live state (replaced wholesale when memory is rebuilt from the WAL). */
    private readonly state: () => DagState,
    private readonly send: (entry: IndexEntry) => Promise<void>,
  ) {}

  /** True when the index lacks a committed change. */
  behind(): boolean {
    const state = this.state();
    return state.task !== null && state.last_wal_seq > this.pushedSeq;
  }

  /** On start, after the WAL replayed: a change the index never acknowledged (a crash before its push) is due now. */
  recover(now: number): void {
    const row = this.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", PUSHED_SEQ_KEY).toArray()[0];
    this.pushedSeq = row === undefined ? 0 : Number(row.value);
    if (this.behind()) this.dueAt = now;
  }

  /**
   * After a commit. A change of task status (created, running, paused, blocked, terminal) or of its open
   * actions (the session's inbox: a person waits to see them) is pushed at once, with a retry due in case the
   * push never answers; count-only changes are due after INDEX_PUSH_DEBOUNCE_MS, so a busy task costs its
   * session one push per window, not one per step. Either way the due time is set before the caller arms the
   * alarm, in the same turn as the commit.
   */
  noteCommit(now: number): void {
    if (!this.behind()) return;
    if (this.urgent() && this.inFlight === null) {
      this.due(now + this.retryDelay);
      void this.push();
    } else {
      this.due(now + INDEX_PUSH_DEBOUNCE_MS);
    }
  }

  /** True when the index lacks a change of task status or of open actions (pushed at once, not debounced). */
  private urgent(): boolean {
    const state = this.state();
    return state.task!.status !== this.pushedStatus || openActionsVersion(state) !== this.pushedActions;
  }

  /** Pushes now when a push is due (the alarm calls this); resolves when it settled. */
  async flush(now: number): Promise<void> {
    if (this.dueAt !== null && this.dueAt <= now) {
      this.dueAt = null;
      if (this.behind()) await this.push();
    }
  }

  private due(at: number): void {
    if (this.dueAt === null || at < this.dueAt) this.dueAt = at;
  }

  /** One push in flight at a time; the acknowledged wal_seq is stored when it answers. */
  private push(): Promise<void> {
    if (this.inFlight !== null) return this.inFlight;
    const state = this.state();
    const actions = openActionsVersion(state);
    // The open actions travel only when their set changed since the index acknowledged it (unknown after a restart).
    const entry = indexEntryOf(state, actions !== this.pushedActions);
    let acknowledged = false;
    this.inFlight = this.send(entry)
      .then(() => {
        acknowledged = true;
        this.pushedSeq = Math.max(this.pushedSeq, entry.wal_seq);
        this.pushedStatus = entry.native_status;
        this.pushedActions = actions;
        this.retryDelay = INDEX_RETRY_MS;
        try {
          this.sql.exec("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", PUSHED_SEQ_KEY, String(this.pushedSeq));
        } catch {
          // Not stored: after a restart the entry is pushed once more, which the index ignores (same wal_seq).
        }
        // Changes committed while the push was in flight stay due (their commit set the time).
        if (!this.behind()) this.dueAt = null;
      })
      .catch(() => {
        // The session shows the entry as stale once its deadline passes; the alarm retries with backoff.
        this.due(Date.now() + this.retryDelay);
        this.retryDelay = Math.min(this.retryDelay * 2, INDEX_RETRY_MAX_MS);
      })
      .finally(() => {
        this.inFlight = null;
        // A status or action change committed while this push was in flight goes now, not when the debounce ends.
        if (acknowledged && this.behind() && this.urgent()) this.noteCommit(Date.now());
      });
    return this.inFlight;
  }
}
