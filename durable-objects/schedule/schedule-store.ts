/**
 * @module The storage of one schedule object (docs/design.md "ScheduleObject"): the schedule row, the occurrences
 * (the outbox: an occurrence is decided and written before its task is created, and what became of it is written
 * after), and the append-only log of the schedule's runtime events, which its event stream reads. Synchronous SQL
 * only: the object calls these inside `transactionSync`, so a decision, its events and the cursor commit together.
 */
import type { OccurrenceOutcome, Schedule, ScheduleRun } from "../../src/contract/index.js";
import { nextOccurrence, type ScheduleFact, type ScheduleTiming } from "../../src/core/index.js";

/** Log rows kept; a resume from before the oldest starts at the oldest. */
export const SCHEDULE_EVENT_LOG_ROWS = 10_000;
/** Occurrences a schedule's answer lists (newest first). */
const RECENT_RUNS = 20;
/** Settled occurrences kept (the newest); older ones are dropped, so a frequent cron's table stays bounded. */
export const KEPT_OCCURRENCES = 1_000;

/** The schedule as stored (its row's `record`), fixed at creation: the answer's fields but its state and runs. */
export type ScheduleRecord = Omit<Schedule, "paused" | "next_run_at" | "recent_runs" | "missed" | "skipped">;

/** The schedule row: the record and what moves. */
export interface ScheduleRow {
  readonly record: ScheduleRecord;
  readonly paused: boolean;
  readonly deleted: boolean;
  /** Every cron occurrence at or before this time has been processed (decided or counted missed). */
  readonly cursor_ms: number;
  readonly missed: number;
  readonly skipped: number;
  readonly create_key: string | null;
  readonly create_hash: string | null;
}

/**
 * Where an occurrence stands: `decided` (its task is owed: the outbox), `created` (its task exists; its end not seen
 * yet), `ended` (the task's terminal status in `outcome`), `skipped`, `buffered` (waits for the previous task's end),
 * `create_failed` (the create was refused for good), `abandoned` (still owed when the schedule was deleted).
 */
export type OccurrenceState = "decided" | "created" | "ended" | "skipped" | "buffered" | "create_failed" | "abandoned";

export type OccurrenceRow = {
  readonly at_ms: number;
  readonly task_id: string;
  readonly trigger: "cron" | "manual";
  readonly state: OccurrenceState;
  readonly outcome: string | null;
  /** cancel_previous: the task to cancel before this one is created; null once cancelled (or for any other). */
  readonly cancel_task_id: string | null;
  readonly tries: number;
  readonly retry_at_ms: number;
};

/** The schedule's timing, as the core's rules take it. */
export function timingOf(record: ScheduleRecord): ScheduleTiming {
  return {
    cron: record.cron,
    timezone: record.timezone,
    start_at_ms: record.start_at === null ? null : Date.parse(record.start_at),
    end_at_ms: record.end_at === null ? null : Date.parse(record.end_at),
  };
}

/** The tables of one schedule object. */
export class ScheduleStore {
  /** The highest seq of the event log (0: empty). */
  lastEventSeq = 0;

  constructor(private readonly sql: SqlStorage) {}

  /** Creates what does not exist yet (additive, as the session's tables are). */
  createTables(): void {
    this.sql.exec(`CREATE TABLE IF NOT EXISTS schedule (
      id INTEGER PRIMARY KEY CHECK (id = 1), record TEXT NOT NULL, paused INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0,
      cursor_ms INTEGER NOT NULL, missed INTEGER NOT NULL DEFAULT 0, skipped INTEGER NOT NULL DEFAULT 0, create_key TEXT, create_hash TEXT)`);
    this.sql.exec(`CREATE TABLE IF NOT EXISTS occurrences (
      at_ms INTEGER PRIMARY KEY, task_id TEXT NOT NULL, trigger TEXT NOT NULL, state TEXT NOT NULL, outcome TEXT,
      cancel_task_id TEXT, tries INTEGER NOT NULL DEFAULT 0, retry_at_ms INTEGER NOT NULL DEFAULT 0, decided_at_ms INTEGER NOT NULL, ended_at_ms INTEGER)`);
    this.sql.exec("CREATE INDEX IF NOT EXISTS occurrences_open ON occurrences (state, at_ms) WHERE state IN ('decided', 'created', 'buffered')");
    // Whether the schedule archived the occurrence's task (archive_after_days); the ended ones still to archive, by end.
    const columns = new Set(this.sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('occurrences')").toArray().map((c) => c.name));
    if (!columns.has("archived")) this.sql.exec("ALTER TABLE occurrences ADD COLUMN archived INTEGER NOT NULL DEFAULT 0");
    this.sql.exec("CREATE INDEX IF NOT EXISTS occurrences_to_archive ON occurrences (ended_at_ms) WHERE state = 'ended' AND archived = 0");
    this.sql.exec("CREATE TABLE IF NOT EXISTS schedule_events (seq INTEGER PRIMARY KEY, data TEXT NOT NULL)");
    this.lastEventSeq = this.sql.exec<{ n: number }>("SELECT COALESCE(MAX(seq), 0) AS n FROM schedule_events").one().n;
  }

  /** The schedule row, or null before it was created. */
  schedule(): ScheduleRow | null {
    const row = this.sql
      .exec<{ record: string; paused: number; deleted: number; cursor_ms: number; missed: number; skipped: number; create_key: string | null; create_hash: string | null }>("SELECT * FROM schedule WHERE id = 1")
      .toArray()[0];
    if (row === undefined) return null;
    return { ...row, record: JSON.parse(row.record) as ScheduleRecord, paused: row.paused === 1, deleted: row.deleted === 1 };
  }

  insertSchedule(record: ScheduleRecord, paused: boolean, cursorMs: number, idem: { key: string; hash: string } | null): void {
    this.sql.exec("INSERT INTO schedule (id, record, paused, cursor_ms, create_key, create_hash) VALUES (1, ?, ?, ?, ?, ?)", JSON.stringify(record), paused ? 1 : 0, cursorMs, idem?.key ?? null, idem?.hash ?? null);
  }

  setPaused(paused: boolean, cursorMs: number): void {
    this.sql.exec("UPDATE schedule SET paused = ?, cursor_ms = ? WHERE id = 1", paused ? 1 : 0, cursorMs);
  }

  setDeleted(): void {
    this.sql.exec("UPDATE schedule SET deleted = 1 WHERE id = 1");
  }

  advance(cursorMs: number, missed: number, skipped: number): void {
    this.sql.exec("UPDATE schedule SET cursor_ms = ?, missed = missed + ?, skipped = skipped + ? WHERE id = 1", cursorMs, missed, skipped);
  }

  occurrence(atMs: number): OccurrenceRow | null {
    return this.sql.exec<OccurrenceRow>("SELECT at_ms, task_id, trigger, state, outcome, cancel_task_id, tries, retry_at_ms FROM occurrences WHERE at_ms = ?", atMs).toArray()[0] ?? null;
  }

  /** Occurrences in one state, oldest first. */
  inState(state: OccurrenceState): OccurrenceRow[] {
    return this.sql.exec<OccurrenceRow>("SELECT at_ms, task_id, trigger, state, outcome, cancel_task_id, tries, retry_at_ms FROM occurrences WHERE state = ? ORDER BY at_ms", state).toArray();
  }

  /** The latest occurrence that started (or is owed a task): the one the next occurrence's overlap is judged against. */
  previousStarted(): OccurrenceRow | null {
    return (
      this.sql
        .exec<OccurrenceRow>("SELECT at_ms, task_id, trigger, state, outcome, cancel_task_id, tries, retry_at_ms FROM occurrences WHERE state IN ('decided', 'created', 'ended') ORDER BY at_ms DESC LIMIT 1")
        .toArray()[0] ?? null
    );
  }

  insertOccurrence(row: Omit<OccurrenceRow, "tries" | "retry_at_ms" | "outcome">, decidedAtMs: number): void {
    this.sql.exec(
      "INSERT INTO occurrences (at_ms, task_id, trigger, state, cancel_task_id, decided_at_ms) VALUES (?, ?, ?, ?, ?, ?)",
      row.at_ms,
      row.task_id,
      row.trigger,
      row.state,
      row.cancel_task_id,
      decidedAtMs,
    );
  }

  setState(atMs: number, state: OccurrenceState, outcome: string | null = null, endedAtMs: number | null = null): void {
    this.sql.exec("UPDATE occurrences SET state = ?, outcome = COALESCE(?, outcome), ended_at_ms = COALESCE(?, ended_at_ms) WHERE at_ms = ?", state, outcome, endedAtMs, atMs);
  }

  /** When the longest-ended occurrence not yet archived ended; null when none waits. */
  oldestEndedUnarchived(): number | null {
    return this.sql.exec<{ t: number | null }>("SELECT MIN(ended_at_ms) AS t FROM occurrences WHERE state = 'ended' AND archived = 0").one().t;
  }

  /** Ended occurrences not yet archived that ended at or before `endedBy`, oldest first, at most `limit`. */
  endedToArchive(endedBy: number, limit: number): OccurrenceRow[] {
    return this.sql
      .exec<OccurrenceRow>("SELECT at_ms, task_id, trigger, state, outcome, cancel_task_id, tries, retry_at_ms FROM occurrences WHERE state = 'ended' AND archived = 0 AND ended_at_ms <= ? ORDER BY ended_at_ms LIMIT ?", endedBy, limit)
      .toArray();
  }

  markArchived(atMs: number): void {
    this.sql.exec("UPDATE occurrences SET archived = 1 WHERE at_ms = ?", atMs);
  }

  /**
   * Drops settled occurrences older than the newest KEPT_OCCURRENCES. Safe: the cursor never goes back, so a dropped
   * cron occurrence is never decided again, and an open one (owed, running, waiting) is never dropped.
   */
  prune(archiving = false): void {
    this.sql.exec(
      `DELETE FROM occurrences WHERE state IN ('ended', 'skipped', 'create_failed', 'abandoned') AND NOT (state = 'ended' AND archived = 0 AND ${archiving ? 1 : 0})
        AND at_ms < (SELECT at_ms FROM occurrences ORDER BY at_ms DESC LIMIT 1 OFFSET ${KEPT_OCCURRENCES - 1})`,
    );
  }

  /** The occurrence's task exists: the last try's error is forgotten. */
  markCreated(atMs: number): void {
    this.sql.exec("UPDATE occurrences SET state = 'created', outcome = NULL WHERE at_ms = ?", atMs);
  }

  cancelled(atMs: number): void {
    this.sql.exec("UPDATE occurrences SET cancel_task_id = NULL WHERE at_ms = ?", atMs);
  }

  retryLater(atMs: number, retryAtMs: number, error: string): void {
    this.sql.exec("UPDATE occurrences SET tries = tries + 1, retry_at_ms = ?, outcome = ? WHERE at_ms = ?", retryAtMs, error, atMs);
  }

  /** Appends one event row at `seq`, keeping the last SCHEDULE_EVENT_LOG_ROWS (the caller moves lastEventSeq once committed). */
  appendEvent(seq: number, data: string): void {
    this.sql.exec("INSERT INTO schedule_events (seq, data) VALUES (?, ?)", seq, data);
    this.sql.exec("DELETE FROM schedule_events WHERE seq <= ?", seq - SCHEDULE_EVENT_LOG_ROWS);
  }

  /** Event rows after `afterSeq`, at most `limit`. */
  eventsAfter(afterSeq: number, limit: number): { seq: number; data: string }[] {
    return this.sql.exec<{ seq: number; data: string }>("SELECT seq, data FROM schedule_events WHERE seq > ? ORDER BY seq LIMIT ?", afterSeq, limit).toArray();
  }

  /** The schedule as its routes answer it. */
  view(row: ScheduleRow): Schedule {
    const r = row.record;
    const next = row.paused || row.deleted ? null : nextOccurrence(timingOf(r), row.cursor_ms);
    const runs = this.sql
      .exec<OccurrenceRow>(`SELECT at_ms, task_id, trigger, state, outcome, cancel_task_id, tries, retry_at_ms FROM occurrences ORDER BY at_ms DESC LIMIT ${RECENT_RUNS}`)
      .toArray()
      .map(runOf);
    return {
      schedule_id: r.schedule_id,
      session_id: r.session_id,
      cron: r.cron,
      timezone: r.timezone,
      overlap: r.overlap,
      catchup_window_ms: r.catchup_window_ms,
      start_at: r.start_at,
      end_at: r.end_at,
      paused: row.paused,
      task: r.task,
      archive_after_days: r.archive_after_days ?? null,
      created_at: r.created_at,
      created_by_agent_id: r.created_by_agent_id,
      next_run_at: next === null ? null : new Date(next).toISOString(),
      recent_runs: runs,
      missed: row.missed,
      skipped: row.skipped,
    };
  }
}

/** An occurrence as a schedule's answer lists it. */
export function runOf(row: OccurrenceRow): ScheduleRun {
  return { scheduled_at: new Date(row.at_ms).toISOString(), task_id: row.task_id, outcome: outcomeOf(row), trigger: row.trigger };
}

function outcomeOf(row: OccurrenceRow): OccurrenceOutcome {
  switch (row.state) {
    case "decided":
      return "pending";
    case "created":
      return "running";
    case "ended":
      return (row.outcome ?? "completed") as OccurrenceOutcome;
    default:
      return row.state;
  }
}

/** A fact of one occurrence's task: the events the schedule's log gets for it. */
export function itemFact(type: ScheduleFact["type"], row: Pick<OccurrenceRow, "at_ms" | "task_id" | "trigger">, extra: { status?: string; payload?: Record<string, unknown>; phase?: string } = {}): ScheduleFact {
  return {
    type,
    taskId: row.task_id,
    ...(extra.status === undefined ? {} : { status: extra.status }),
    ...(extra.phase === undefined ? {} : { phase: extra.phase }),
    payload: { scheduled_at: new Date(row.at_ms).toISOString(), task_id: row.task_id, trigger: row.trigger, ...(extra.payload ?? {}) },
  };
}
