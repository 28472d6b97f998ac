/** @module The session object's tables, made (or brought up to date in place) when the object starts. */
import { createCountTables } from "./session-counts.js";

/** Columns of the tasks table copied from the entry for filtering, added in place to tables made before them. */
export const LISTED_COLUMNS = ["origin_client_agent_id", "thread_id", "parent_task_id", "root_task_id"] as const;

/** Creates the session's tables and indexes that do not exist yet, and adds listed columns to an older tasks table. */
export function createSessionTables(sql: SqlStorage): void {
  sql.exec("CREATE TABLE IF NOT EXISTS session (id INTEGER PRIMARY KEY CHECK (id = 1), session_id TEXT NOT NULL, created_at TEXT NOT NULL, info TEXT NOT NULL)");
  sql.exec(`CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY,
    wal_name TEXT NOT NULL UNIQUE,
    state TEXT NOT NULL,
    reserved_at_ms INTEGER NOT NULL,
    entry TEXT,
    terminal INTEGER NOT NULL DEFAULT 0,
    native_status TEXT,
    status TEXT,
    updated_at TEXT,
    seq INTEGER NOT NULL,
    origin_client_agent_id TEXT,
    thread_id TEXT
  )`);
  addListedColumns(sql);
  sql.exec("CREATE INDEX IF NOT EXISTS tasks_by_terminal ON tasks (terminal, updated_at)");
  // A2A ListTasks: one client's tasks, newest first (the index is read backwards).
  sql.exec("CREATE INDEX IF NOT EXISTS tasks_by_origin ON tasks (origin_client_agent_id, updated_at, task_id)");
  // Idempotency-Keys of task creates: a create's own record lives in its task's object, which a retry
  // naming another task_id never reaches; the session sees every create.
  sql.exec("CREATE TABLE IF NOT EXISTS create_keys (key TEXT PRIMARY KEY, hash TEXT NOT NULL, task_id TEXT NOT NULL, created_at_ms INTEGER NOT NULL)");
  // Each reservation drops the keys past their 24 hours and numbers its task after the last: both are index reads,
  // not scans, so a reservation costs the same in a session of 100,000 tasks as in an empty one.
  sql.exec("CREATE INDEX IF NOT EXISTS create_keys_by_time ON create_keys (created_at_ms)");
  sql.exec("CREATE INDEX IF NOT EXISTS tasks_by_seq ON tasks (seq)");
  // The session event log: one row per index change, `data` the snapshot.updated event as streamed.
  sql.exec("CREATE TABLE IF NOT EXISTS session_events (seq INTEGER PRIMARY KEY, task_id TEXT NOT NULL, data TEXT NOT NULL)");
  // The inbox: the open actions each task's latest entry reports, `data` the action with its task's title.
  sql.exec("CREATE TABLE IF NOT EXISTS actions (action_id TEXT PRIMARY KEY, task_id TEXT NOT NULL, created_at TEXT NOT NULL, data TEXT NOT NULL)");
  sql.exec("CREATE INDEX IF NOT EXISTS actions_by_created ON actions (created_at, action_id)");
  sql.exec("CREATE INDEX IF NOT EXISTS actions_by_task ON actions (task_id)");
  // The snapshot's first open actions of a held-up task.
  sql.exec("CREATE INDEX IF NOT EXISTS actions_by_task_created ON actions (task_id, created_at, action_id)");
  // Tasks whose storage retention deleted: their ids and wal names stay taken, and a late index push is ignored.
  sql.exec("CREATE TABLE IF NOT EXISTS retired_tasks (task_id TEXT PRIMARY KEY, wal_name TEXT NOT NULL UNIQUE, wal_seq INTEGER NOT NULL, retired_at TEXT NOT NULL)");
  createCountTables(sql);
  createWebhookTables(sql);
}

/**
 * The subscriptions (session-webhooks.ts): webhooks and A2A push configs, their secrets and credentials kept here
 * only; and the replica of their deliveries that the task objects push, paged newest first by `seq` (the order the
 * session first heard of each), per subscription and per status.
 */
export function createWebhookTables(sql: SqlStorage): void {
  sql.exec(`CREATE TABLE IF NOT EXISTS webhooks (
    webhook_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    description TEXT,
    task_id TEXT,
    secret TEXT,
    token TEXT,
    authorization TEXT,
    status TEXT NOT NULL,
    disabled_reason TEXT,
    created_at TEXT NOT NULL
  )`);
  sql.exec("CREATE INDEX IF NOT EXISTS webhooks_by_task ON webhooks (task_id)");
  // Idempotency-Keys of webhook creates, kept 24 hours: a retried create answers its webhook again, not a second one.
  sql.exec("CREATE TABLE IF NOT EXISTS webhook_create_keys (key TEXT PRIMARY KEY, hash TEXT NOT NULL, webhook_id TEXT NOT NULL, created_at_ms INTEGER NOT NULL)");
  sql.exec("CREATE INDEX IF NOT EXISTS webhook_create_keys_by_time ON webhook_create_keys (created_at_ms)");
  sql.exec(`CREATE TABLE IF NOT EXISTS webhook_deliveries (
    delivery_id TEXT PRIMARY KEY,
    webhook_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    event_id TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    last_status_code INTEGER,
    last_error TEXT,
    next_attempt_at TEXT,
    updated_at TEXT NOT NULL,
    seq INTEGER NOT NULL
  )`);
  sql.exec("CREATE INDEX IF NOT EXISTS webhook_deliveries_by_seq ON webhook_deliveries (seq)");
  sql.exec("CREATE INDEX IF NOT EXISTS webhook_deliveries_page ON webhook_deliveries (webhook_id, seq)");
  sql.exec("CREATE INDEX IF NOT EXISTS webhook_deliveries_page_by_status ON webhook_deliveries (webhook_id, status, seq)");
  sql.exec("CREATE INDEX IF NOT EXISTS webhook_deliveries_by_task ON webhook_deliveries (task_id)");
}

/**
 * In place: a tasks table made before origins and threads were listed gains their columns, filled from the
 * stored entries (null where an entry predates them; the task's next push sets them). No await in between,
 * so a column is added and filled in one implicit transaction.
 */
export function addListedColumns(sql: SqlStorage): void {
  const present = new Set(sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('tasks')").toArray().map((c) => c.name));
  for (const column of LISTED_COLUMNS) {
    if (present.has(column)) continue;
    sql.exec(`ALTER TABLE tasks ADD COLUMN ${column} TEXT`);
    sql.exec(`UPDATE tasks SET ${column} = json_extract(entry, '$.${column}') WHERE entry IS NOT NULL`);
  }
}
