/** @module The WAL table of a task object: schema migrations, one-transaction append, ordered load and paging. */
import { type WalEvent, WalEventSchema } from "../src/core/index.js";

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
const MIGRATIONS: readonly (readonly string[])[] = [
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
];

/**
 * Brings the schema up to date, each migration in a transaction of its own (`inTransaction`: the object's
 * transactionSync), so a failed one leaves the previous version whole; runs in the constructor.
 */
export function migrate(sql: Sql, inTransaction: (work: () => void) => void): number {
  sql.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
  const row = sql.exec<{ version: number }>("SELECT version FROM schema_version").toArray()[0];
  let version = row?.version ?? 0;
  if (row === undefined) sql.exec("INSERT INTO schema_version (version) VALUES (0)");
  for (; version < MIGRATIONS.length; version++) {
    const next = version + 1;
    inTransaction(() => {
      for (const statement of MIGRATIONS[next - 1]!) sql.exec(statement);
      sql.exec("UPDATE schema_version SET version = ?", next);
    });
  }
  return version;
}

type WalRow = { wal_seq: number; event: string };

/**
 * Most `?` parameters one statement may bind: Durable Object SQLite allows 100. Multi-row statements are
 * filled up to it, because a statement costs far more than a row (a batch writes dozens of events).
 */
export const MAX_BOUND_PARAMS = 100;

const WAL_ROW_PARAMS = 2;
const insertWalSql = multiRowSql("INSERT INTO wal_events (wal_seq, event) VALUES ", WAL_ROW_PARAMS);

/** `count` placeholders: "?, ?, ?". */
export function placeholders(count: number): string {
  return Array.from({ length: count }, () => "?").join(", ");
}

/** A statement text that depends on a count, built once per count (and so prepared once by SQLite). */
export function sqlPerCount(build: (count: number) => string): (count: number) => string {
  const memo = new Map<number, string>();
  return (count) => {
    let text = memo.get(count);
    if (text === undefined) {
      text = build(count);
      memo.set(count, text);
    }
    return text;
  };
}

/** `rows` rows of `width` placeholders each after `head`, e.g. "INSERT … VALUES (?, ?), (?, ?)". */
export function multiRowSql(head: string, width: number): (rows: number) => string {
  const row = `(${placeholders(width)})`;
  return sqlPerCount((rows) => head + Array.from({ length: rows }, () => row).join(", "));
}

/** Runs `statement(rows)` over `items` in chunks that fit MAX_BOUND_PARAMS, binding `params(item)` per row. */
export function execRows<T>(sql: Sql, items: readonly T[], width: number, statement: (rows: number) => string, params: (item: T) => SqlStorageValue[]): void {
  const perStatement = Math.floor(MAX_BOUND_PARAMS / width);
  for (let start = 0; start < items.length; start += perStatement) {
    const chunk = items.slice(start, start + perStatement);
    const bound: SqlStorageValue[] = [];
    for (const item of chunk) bound.push(...params(item));
    sql.exec(statement(chunk.length), ...bound);
  }
}

/** Appends events; the caller wraps this in one storage transaction with anything else the commit writes. */
export function appendEvents(sql: Sql, events: readonly WalEvent[]): void {
  execRows(sql, events, WAL_ROW_PARAMS, insertWalSql, (e) => [e.wal_seq, JSON.stringify(e)]);
}

function rowToEvent(row: WalRow): WalEvent {
  let candidate: unknown;
  try {
    candidate = JSON.parse(row.event);
  } catch {
    throw new Error(`WAL row ${row.wal_seq} is not JSON`);
  }
  const parsed = WalEventSchema.safeParse(candidate);
  if (!parsed.success) throw new Error(`WAL row ${row.wal_seq} does not decode: ${parsed.error.issues[0]?.message ?? "invalid"}`);
  if (parsed.data.wal_seq !== row.wal_seq) throw new Error(`WAL row ${row.wal_seq} holds event ${parsed.data.wal_seq}`);
  return parsed.data;
}

/** Every stored event in wal_seq order, decoded and validated (zod at the storage edge). */
export function loadEvents(sql: Sql): WalEvent[] {
  return sql.exec<WalRow>("SELECT wal_seq, event FROM wal_events ORDER BY wal_seq").toArray().map(rowToEvent);
}

/** A page of the WAL after `afterSeq`, as stored. */
export function readWal(sql: Sql, afterSeq: number, limit: number): WalEvent[] {
  return sql.exec<WalRow>("SELECT wal_seq, event FROM wal_events WHERE wal_seq > ? ORDER BY wal_seq LIMIT ?", afterSeq, limit).toArray().map(rowToEvent);
}

/** The last `count` events, oldest first. */
export function readWalTail(sql: Sql, count: number): WalEvent[] {
  return sql.exec<WalRow>("SELECT wal_seq, event FROM wal_events ORDER BY wal_seq DESC LIMIT ?", count).toArray().reverse().map(rowToEvent);
}
