/**
 * @module The WAL of a task object: schema migrations, one row per commit (its events and idempotency answers; a commit
 * too large for one row has its text in parts), ordered load and paging.
 */
import { type WalEvent, WalEventSchema } from "../../../src/core/index.js";
import { ROW_TEXT_CHARS, textParts } from "./row-text.js";

/** Storage a WAL store needs (tests may pass a fake with just this). */
export type Sql = Pick<SqlStorage, "exec">;

/**
 * What a task object's commit path uses of its storage: SQL and one synchronous transaction. The object holds
 * it as a field so the fault-injection tests can put in one that fails where they choose.
 */
export interface CommitStorage {
  readonly sql: Sql;
  transactionSync<T>(work: () => T): T;
}

/** Migrations, in order; the schema version is the number applied. Only ever append. */
export const MIGRATIONS: readonly (readonly string[])[] = [
  [
    `CREATE TABLE wal (
      wal_seq INTEGER PRIMARY KEY,
      session_id TEXT NOT NULL,
      event_id TEXT NOT NULL UNIQUE,
      event_type TEXT NOT NULL,
      actor_agent_id TEXT NOT NULL,
      actor_run_id TEXT,
      task_id TEXT NOT NULL,
      step_id TEXT,
      payload TEXT NOT NULL,
      created_at TEXT NOT NULL
    )`,
    `CREATE TABLE idempotency (
      key TEXT PRIMARY KEY,
      body_hash TEXT NOT NULL,
      answer TEXT NOT NULL,
      created_at_ms INTEGER NOT NULL
    )`,
    `CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
  ],
  // One JSON text per event instead of ten columns: a bound value costs about a microsecond in the
  // Workers runtime, and the event_id index was never read; the row is the event as WalEventSchema has it.
  [
    `CREATE TABLE wal_events (wal_seq INTEGER PRIMARY KEY, event TEXT NOT NULL)`,
    `INSERT INTO wal_events (wal_seq, event)
      SELECT wal_seq, json_object('wal_seq', wal_seq, 'session_id', session_id, 'event_id', event_id, 'event_type', event_type,
        'actor_agent_id', actor_agent_id, 'actor_run_id', actor_run_id, 'task_id', task_id, 'step_id', step_id,
        'payload', json(payload), 'created_at', created_at)
      FROM wal ORDER BY wal_seq`,
    `DROP TABLE wal`,
  ],
  // Snapshots of the task's state (snapshot-store.ts): one at a time, its JSON in parts under the 2 MB value limit.
  [
    `CREATE TABLE snapshots (wal_seq INTEGER PRIMARY KEY, format INTEGER NOT NULL, parts INTEGER NOT NULL, length INTEGER NOT NULL, checksum TEXT NOT NULL)`,
    `CREATE TABLE snapshot_parts (part INTEGER PRIMARY KEY, data TEXT NOT NULL)`,
  ],
  // One row per commit instead of one per event (a 32-command socket frame is one insert), and idempotency answers in
  // the commit's own row instead of a row per keyed command (idempotency-store.ts keeps an index of recent keys in
  // memory). seq_key is the commit's last wal_seq; a commit that only answered (a keyed command that wrote no
  // event) has a negative seq_key, below every WAL read. Version 2 and 3 rows become one commit per event; their
  // idempotency rows become answer-only commits, so a retry across the upgrade still gets its first answer.
  [
    `CREATE TABLE wal_commits (seq_key INTEGER PRIMARY KEY, first_seq INTEGER NOT NULL, at_ms INTEGER NOT NULL, keys TEXT, answers TEXT, events TEXT NOT NULL)`,
    `INSERT INTO wal_commits (seq_key, first_seq, at_ms, keys, answers, events)
      SELECT wal_seq, wal_seq, 0, NULL, NULL, '[' || event || ']' FROM wal_events ORDER BY wal_seq`,
    `INSERT INTO wal_commits (seq_key, first_seq, at_ms, keys, answers, events)
      SELECT -rowid, 0, created_at_ms, json_array(json_array(key, body_hash)), '[' || answer || ']', '[]' FROM idempotency`,
    `DROP TABLE wal_events`,
    `DROP TABLE idempotency`,
    `CREATE INDEX wal_commits_keyed ON wal_commits (at_ms) WHERE keys IS NOT NULL`,
    // The fingerprints of keys a busy task's memory has no room for (idempotency-store.ts), each to its commit's row.
    `CREATE TABLE idempotency_spill (fingerprint INTEGER PRIMARY KEY, seq_key INTEGER NOT NULL, at_ms INTEGER NOT NULL)`,
  ],
  // A commit too large for one row (SQLite refuses a row past about 2 MB): its row keeps its keys and holds no text
  // ('' for events, and for answers when keyed), `parts` counts its rows in wal_commit_parts, which hold the events'
  // and answers' JSON text in order (row-text.ts). Rows written before have parts NULL and stay whole.
  [
    `ALTER TABLE wal_commits ADD COLUMN parts INTEGER`,
    `CREATE TABLE wal_commit_parts (seq_key INTEGER NOT NULL, field TEXT NOT NULL, part INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (seq_key, field, part))`,
  ],
];

/**
 * The schema every migration above leads to, made in one step for a new object; a test keeps the two equal
 * (test/objects/storage-versions.test.ts).
 */
export const CURRENT_SCHEMA: readonly string[] = [
  `CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
  `CREATE TABLE snapshots (wal_seq INTEGER PRIMARY KEY, format INTEGER NOT NULL, parts INTEGER NOT NULL, length INTEGER NOT NULL, checksum TEXT NOT NULL)`,
  `CREATE TABLE snapshot_parts (part INTEGER PRIMARY KEY, data TEXT NOT NULL)`,
  `CREATE TABLE wal_commits (seq_key INTEGER PRIMARY KEY, first_seq INTEGER NOT NULL, at_ms INTEGER NOT NULL, keys TEXT, answers TEXT, events TEXT NOT NULL, parts INTEGER)`,
  `CREATE INDEX wal_commits_keyed ON wal_commits (at_ms) WHERE keys IS NOT NULL`,
  `CREATE TABLE idempotency_spill (fingerprint INTEGER PRIMARY KEY, seq_key INTEGER NOT NULL, at_ms INTEGER NOT NULL)`,
  `CREATE TABLE wal_commit_parts (seq_key INTEGER NOT NULL, field TEXT NOT NULL, part INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (seq_key, field, part))`,
];

/**
 * Brings the schema up to date, each migration in a transaction of its own (`inTransaction`: the object's
 * transactionSync), so a failed one leaves the previous version whole; runs in the constructor.
 */
export function migrate(sql: Sql, inTransaction: (work: () => void) => void): number {
  sql.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
  const row = sql.exec<{ version: number }>("SELECT version FROM schema_version").toArray()[0];
  let version = row?.version ?? 0;
  if (row === undefined) {
    // A new object: the current schema at once. Replaying every migration on empty tables cost a task's create
    // about a fifth of its time (schema changes are the slowest statements SQLite has).
    inTransaction(() => {
      for (const statement of CURRENT_SCHEMA) sql.exec(statement);
      sql.exec("INSERT INTO schema_version (version) VALUES (?)", MIGRATIONS.length);
    });
    return MIGRATIONS.length;
  }
  for (; version < MIGRATIONS.length; version++) {
    const next = version + 1;
    inTransaction(() => {
      for (const statement of MIGRATIONS[next - 1]!) sql.exec(statement);
      sql.exec("UPDATE schema_version SET version = ?", next);
    });
  }
  return version;
}

/** What one commit writes: its events (possibly none) and the idempotency answers of its keyed commands. */
export interface CommitRow {
  /** The commit's last wal_seq, or a negative key for a commit with no events (see `nextAnswerOnlyKey`). */
  readonly seqKey: number;
  readonly events: readonly WalEvent[];
  /** Scoped Idempotency-Key and request hash of each answer, in the answers' order. */
  readonly keys: readonly (readonly [key: string, hash: string])[];
  /** Each keyed command's answer, as JSON text. */
  readonly answers: readonly string[];
  readonly atMs: number;
}

/**
 * Appends one commit: as one row when its text fits one (`ROW_TEXT_CHARS`), else its row and its text in parts. The
 * caller's transaction covers it with anything else the commit writes. The keys always stay in the commit's row (the
 * idempotency index reads them from there); they are bounded by the batch cap: 256 keys of at most 255 characters
 * with their caller scope and request hash, well under a row.
 */
export function appendCommit(sql: Sql, row: CommitRow): void {
  const keys = row.keys.length > 0 ? JSON.stringify(row.keys) : null;
  const answers = keys !== null ? `[${row.answers.join(",")}]` : null;
  const events = JSON.stringify(row.events);
  const firstSeq = row.events[0]?.wal_seq ?? 0;
  if (events.length + (answers?.length ?? 0) + (keys?.length ?? 0) <= ROW_TEXT_CHARS) {
    sql.exec("INSERT INTO wal_commits (seq_key, first_seq, at_ms, keys, answers, events) VALUES (?, ?, ?, ?, ?, ?)", row.seqKey, firstSeq, row.atMs, keys, answers, events);
    return;
  }
  const fields = answers === null ? { events } : { events, answers };
  let parts = 0;
  for (const [field, text] of Object.entries(fields)) {
    for (const data of textParts(text)) {
      sql.exec("INSERT INTO wal_commit_parts (seq_key, field, part, data) VALUES (?, ?, ?, ?)", row.seqKey, field, parts, data);
      parts++;
    }
  }
  sql.exec("INSERT INTO wal_commits (seq_key, first_seq, at_ms, keys, answers, events, parts) VALUES (?, ?, ?, ?, ?, ?, ?)", row.seqKey, firstSeq, row.atMs, keys, answers === null ? null : "", "", parts);
}

/**
 * A commit's field ("events" or "answers") whose text is in parts, joined. Its parts are numbered on from the events'
 * (0 to `parts` - 1); throws when the field's parts are not all there.
 */
export function partedText(sql: Sql, seqKey: number, parts: number, field: "events" | "answers"): string {
  const rows = sql.exec<{ part: number; data: string }>("SELECT part, data FROM wal_commit_parts WHERE seq_key = ? AND field = ? ORDER BY part", seqKey, field).toArray();
  const first = rows[0]?.part ?? -1;
  const whole = rows.length > 0 && rows.every((r, i) => r.part === first + i) && (field === "events" ? first === 0 : first + rows.length === parts);
  if (!whole) throw new Error(`WAL commit ${seqKey} lacks parts of its ${field}`);
  return rows.map((r) => r.data).join("");
}

/** The key for the next commit without events: below every key in use (and so below every WAL read). */
export function nextAnswerOnlyKey(sql: Sql): number {
  return Math.min(0, sql.exec<{ k: number | null }>("SELECT MIN(seq_key) AS k FROM wal_commits").one().k ?? 0) - 1;
}

type CommitEvents = { seq_key: number; first_seq: number; events: string; parts: number | null };
const commitEventsColumns = "seq_key, first_seq, events, parts";

/**
 * A commit's events, decoded and validated (zod at the storage edge), checked against the row's range: all of them, or
 * `count` from index `from` (a page that starts or ends inside a large commit decodes only the events it returns).
 */
function eventsOf(sql: Sql, row: CommitEvents, from = 0, count = Number.MAX_SAFE_INTEGER): WalEvent[] {
  const text = row.parts === null ? row.events : partedText(sql, row.seq_key, row.parts, "events");
  let candidates: unknown;
  try {
    candidates = JSON.parse(text);
  } catch {
    throw new Error(`WAL commit ${row.seq_key} is not JSON`);
  }
  if (!Array.isArray(candidates) || candidates.length !== row.seq_key - row.first_seq + 1) throw new Error(`WAL commit ${row.seq_key} does not hold events ${row.first_seq}..${row.seq_key}`);
  return candidates.slice(from, from + count).map((candidate, i) => {
    const seq = row.first_seq + from + i;
    const parsed = WalEventSchema.safeParse(candidate);
    if (!parsed.success) throw new Error(`WAL event ${seq} does not decode: ${parsed.error.issues[0]?.message ?? "invalid"}`);
    if (parsed.data.wal_seq !== seq) throw new Error(`WAL commit ${row.seq_key} holds event ${parsed.data.wal_seq} in place of ${seq}`);
    return parsed.data;
  });
}

/** A page of the WAL after `afterSeq`, at most `limit` events, in order; reads only the commit rows it needs. */
export function readWal(sql: Sql, afterSeq: number, limit: number): WalEvent[] {
  const out: WalEvent[] = [];
  if (limit <= 0) return out;
  let expected = afterSeq + 1;
  for (const row of sql.exec<CommitEvents>(`SELECT ${commitEventsColumns} FROM wal_commits WHERE seq_key > ? ORDER BY seq_key`, Math.max(0, afterSeq))) {
    for (const event of eventsOf(sql, row, Math.max(0, expected - row.first_seq), limit - out.length)) {
      if (event.wal_seq !== expected) throw new Error(`WAL event ${expected} is missing`);
      expected++;
      out.push(event);
    }
    if (out.length >= limit) return out;
  }
  return out;
}

/** Every stored event after `afterSeq` (default: all of them), in wal_seq order. */
export function loadEvents(sql: Sql, afterSeq = 0): WalEvent[] {
  return readWal(sql, afterSeq, Number.MAX_SAFE_INTEGER);
}

/** The last `count` events, oldest first. */
export function readWalTail(sql: Sql, count: number): WalEvent[] {
  const rows: CommitEvents[] = [];
  let held = 0;
  for (const row of sql.exec<CommitEvents>(`SELECT ${commitEventsColumns} FROM wal_commits WHERE seq_key > 0 ORDER BY seq_key DESC`)) {
    rows.push(row);
    held += row.seq_key - row.first_seq + 1;
    if (held >= count) break;
  }
  return rows.reverse().flatMap((row) => eventsOf(sql, row)).slice(-count);
}

/** The last wal_seq stored (0: none). */
export function lastStoredSeq(sql: Sql): number {
  return sql.exec<{ n: number | null }>("SELECT MAX(seq_key) AS n FROM wal_commits").one().n ?? 0;
}
