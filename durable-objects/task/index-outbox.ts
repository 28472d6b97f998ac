/**
 * @module The task's entry in its session index, pushed as an outbox: what the index acknowledged is stored,
 * and an unacknowledged change always has a due time that an alarm covers (the object's, or for a new task's
 * first push the session's reservation check), so a crash or an eviction between a commit and its push never
 * leaves the session listing an old entry. A change of status or of open actions (what people and orchestrators
 * wait to see) is pushed at once; the step counts of a busy task at most once per INDEX_PUSH_INTERVAL_MS: the
 * session is one object for all its tasks, and a thousand busy tasks must not cost it more than a thousand requests
 * a second.
 */
import type { IndexEntry, WebhookDelivery } from "../../src/contract/index.js";
import { deliveriesChangedAfter } from "./webhook-outbox.js";
import { type DagState, normalizedTaskStatus } from "../../src/core/index.js";
import { indexEntryOf, openActionsVersion } from "./index-entry.js";
import { readWal, type Sql } from "./storage/wal-store.js";

/** A task's pushes of count-only changes start at least this far apart; changes in between go together in the next one. */
export const INDEX_PUSH_INTERVAL_MS = 1_000;
/** How soon a push is retried after a failure or a push that never answered (doubling up to a minute). */
export const INDEX_RETRY_MS = 2_000;
const INDEX_RETRY_MAX_MS = 60_000;
/** The meta row holding the wal_seq the session index last acknowledged. */
const PUSHED_SEQ_KEY = "index_pushed_seq";

/** The pushes of one task object to its session index. */
export class IndexOutbox {
  /** The wal_seq the index acknowledged. */
  private pushedSeq = 0;
  /** The acknowledged wal_seq as storage holds it (written with the next commit, not in a write of its own). */
  private storedSeq = 0;
  /** The task's statuses (native/normalized) the index last acknowledged (unknown after a restart: the first push goes at once). */
  private pushedStatus: string | null = null;
  /** Which open actions the index last acknowledged (openActionsVersion; unknown after a restart). */
  private pushedActions: string | null = null;
  /** When the last push started (ms); pushes start INDEX_PUSH_INTERVAL_MS apart at the least. */
  private lastPushAt = Number.NEGATIVE_INFINITY;
  /**
   * True while the object holds a task created here whose first push was not yet acknowledged: the session keeps
   * that task's id reserved until the push lands and checks the reservation from its own alarm, so this push needs
   * no alarm of the object (one storage write less per create).
   */
  private firstPushCovered = false;
  private inFlight: Promise<void> | null = null;
  private retryDelay = INDEX_RETRY_MS;
  /** When the next push is due, for the object's alarm; null when the index holds everything. */
  dueAt: number | null = null;

  constructor(
    private readonly sql: Sql,
    /** The task object's live state (replaced wholesale when memory is rebuilt from the WAL). */
    private readonly state: () => DagState,
    /** The session's upsertTask: the entry, with the webhook deliveries changed since the last acknowledged push. */
    private readonly send: (entry: IndexEntry, deliveries: WebhookDelivery[]) => Promise<void>,
    /** Called when a due time was set outside a commit (a push failed): the object's alarm must cover it. */
    private readonly dueAdded: () => void,
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
    this.storedSeq = this.pushedSeq;
    this.firstPushCovered = this.state().task === null;
    if (this.behind()) this.dueAt = now;
  }

  /**
   * After a commit. A change of task status (created, running, paused, blocked, waiting, terminal) or of its open actions
   * (the session's inbox) is pushed at once, with a retry due in case the push never answers; a count-only change
   * goes at once when the last push started an interval ago or more, else when the interval ends (the alarm sends
   * it, with every change committed meanwhile). Either way the due time is set before the caller arms the alarm,
   * in the same turn as the commit.
   */
  noteCommit(now: number): void {
    if (!this.behind()) return;
    const intervalEnd = this.lastPushAt + INDEX_PUSH_INTERVAL_MS;
    if (this.inFlight === null && (this.urgent() || now >= intervalEnd)) {
      if (!(this.firstPushCovered && this.pushedSeq === 0)) this.due(now + this.retryDelay);
      void this.push(now);
    } else {
      this.due(Math.max(now + 1, intervalEnd));
    }
  }

  /** True when the index lacks a change of task status or of open actions (pushed at once). */
  private urgent(): boolean {
    const state = this.state();
    return statusesOf(state) !== this.pushedStatus || openActionsVersion(state) !== this.pushedActions;
  }

  /** Pushes now when a push is due (the alarm calls this); resolves when it settled. */
  async flush(now: number): Promise<void> {
    if (this.dueAt !== null && this.dueAt <= now) {
      this.dueAt = null;
      if (this.behind()) await this.push(now);
    }
  }

  /**
   * Inside a commit's transaction: the acknowledged wal_seq, when storage holds an older one, is written with the
   * commit. An acknowledgement no commit followed is not stored: after a restart that entry is pushed once more,
   * which the index ignores (same wal_seq).
   */
  storeAcknowledged(): void {
    if (this.pushedSeq <= this.storedSeq) return;
    this.sql.exec("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", PUSHED_SEQ_KEY, String(this.pushedSeq));
    this.storedSeq = this.pushedSeq;
  }

  private due(at: number): void {
    if (this.dueAt === null || at < this.dueAt) this.dueAt = at;
  }

  /** One push in flight at a time. */
  private push(now: number): Promise<void> {
    if (this.inFlight !== null) return this.inFlight;
    this.lastPushAt = now;
    const state = this.state();
    const actions = openActionsVersion(state);
    // The open actions travel only when their set changed since the index acknowledged it (unknown after a restart).
    const entry = indexEntryOf(state, actions !== this.pushedActions);
    let acknowledged = false;
    this.inFlight = this.send(entry, deliveriesChangedAfter(state, this.pushedSeq, (afterSeq) => readWal(this.sql, afterSeq, entry.wal_seq - afterSeq)))
      .then(() => {
        acknowledged = true;
        this.pushedSeq = Math.max(this.pushedSeq, entry.wal_seq);
        this.pushedStatus = `${entry.native_status}/${entry.status}`;
        this.pushedActions = actions;
        this.retryDelay = INDEX_RETRY_MS;
        this.firstPushCovered = false;
        // Changes committed while the push was in flight stay due (their commit set the time).
        if (!this.behind()) this.dueAt = null;
      })
      .catch(() => {
        // The session shows the entry as stale once its deadline passes; the alarm retries with backoff.
        this.firstPushCovered = false;
        this.due(Date.now() + this.retryDelay);
        this.retryDelay = Math.min(this.retryDelay * 2, INDEX_RETRY_MAX_MS);
        this.dueAdded();
      })
      .finally(() => {
        this.inFlight = null;
        if (!this.behind()) return;
        // A status or action change committed while this push was in flight goes now, not when the interval ends.
        if (acknowledged && this.urgent()) {
          this.noteCommit(Date.now());
          this.dueAdded();
        } else if (this.dueAt === null) {
          // A change whose due time an alarm already took (it found this push in flight) is due when the interval ends.
          this.due(Math.max(Date.now(), this.lastPushAt + INDEX_PUSH_INTERVAL_MS));
          this.dueAdded();
        }
      });
    return this.inFlight;
  }
}

/** The task's native and normalized statuses as one value (a blocks link holds a running task: only the second changes). */
function statusesOf(state: DagState): string {
  return `${state.task!.status}/${normalizedTaskStatus(state)}`;
}
