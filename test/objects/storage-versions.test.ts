/**
 * Every stored format of a task object's WAL loads: the committed golden WAL (test/fixtures/golden.wal.jsonl) is
 * (but its last event) stored as schema versions 1 (ten columns per event), 2 (one JSON row per event), 3 (version 2 with snapshot
 * tables) and 4 (one row per commit, answers in the commit's row), with an idempotency record of its time, and the
 * object migrates it in place to the current version (a commit too large for one row in parts; the rows before stay
 * whole): the same DAG, the same export line by line, the old key's answer replayed, and new commits on top.
 */
import { evictDurableObject, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { parseWalJsonl, replay, taskView, type WalEvent } from "../../src/core/index.js";
import { CURRENT_SCHEMA, MIGRATIONS } from "../../durable-objects/task/storage/wal-store.js";
import goldenText from "../fixtures/golden.wal.jsonl?raw";
import { call } from "../support/helpers.js";
import { BASE, expectError, expectOk, signClaims, taskStub, walOf } from "../support/support.js";

// Without its last event (task_completed), so that new commands can still commit on top of it.
const goldenLines = goldenText.trimEnd().split("\n").slice(0, -1);
const golden = `${goldenLines.join("\n")}\n`;
const events: WalEvent[] = parseWalJsonl(golden);
const SID = events[0]!.session_id;
const TID = events[0]!.task_id;
const TASK = `/v1/sessions/${SID}/tasks/${TID}`;

/** The current tables and the ones before them, dropped so a version's own tables can be laid down. */
const STORAGE_TABLES = ["wal_commit_parts", "wal_commits", "idempotency_spill", "wal_events", "wal", "idempotency", "snapshots", "snapshot_parts", "meta", "schema_version"];

/** Lays `events` (and one idempotency record) down in the task object's storage exactly as schema `version` stored them. */
function storeAsVersion(sql: SqlStorage, version: number, record: { key: string; hash: string; answer: string; at: number }): void {
  for (const table of STORAGE_TABLES) sql.exec(`DROP TABLE IF EXISTS ${table}`);
  for (const statements of MIGRATIONS.slice(0, version)) for (const statement of statements) sql.exec(statement);
  sql.exec("CREATE TABLE schema_version (version INTEGER NOT NULL)");
  sql.exec("INSERT INTO schema_version (version) VALUES (?)", version);
  if (version === 4) {
    // One commit per event, and the record as an answer-only commit (as migration 4 converts them).
    for (const e of events) sql.exec("INSERT INTO wal_commits (seq_key, first_seq, at_ms, keys, answers, events) VALUES (?, ?, 0, NULL, NULL, ?)", e.wal_seq, e.wal_seq, JSON.stringify([e]));
    sql.exec("INSERT INTO wal_commits (seq_key, first_seq, at_ms, keys, answers, events) VALUES (-1, 0, ?, ?, ?, '[]')", record.at, JSON.stringify([[record.key, record.hash]]), `[${record.answer}]`);
    return;
  }
  for (const e of events) {
    if (version === 1) {
      sql.exec("INSERT INTO wal VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", e.wal_seq, e.session_id, e.event_id, e.event_type, e.actor_agent_id, e.actor_run_id, e.task_id, e.step_id, JSON.stringify(e.payload), e.created_at);
    } else {
      sql.exec("INSERT INTO wal_events (wal_seq, event) VALUES (?, ?)", e.wal_seq, JSON.stringify(e));
    }
  }
  sql.exec("INSERT INTO idempotency (key, body_hash, answer, created_at_ms) VALUES (?, ?, ?, ?)", record.key, record.hash, record.answer, record.at);
}

async function tokenOf(role: "orchestrator" | "observer", sub: string, run: string | null): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return signClaims({ role, sid: SID, sub, run, iat: now, exp: now + 3600 });
}

describe("schema versions 1 to 4 of the WAL", () => {
  it.each([1, 2, 3, 4])("Should migrate the golden WAL stored as version %i to the current version in place: same DAG, same export, the stored answer replayed, new commits on top", async (version) => {
    const stub = taskStub(SID, TID);
    const orch = await tokenOf("orchestrator", "orch", "orch_run");
    const observer = await tokenOf("observer", "observer", null);
    // A keyed PATCH answered before the upgrade: its record is scoped to the caller, as the object stores keys.
    const clientKey = `rename-v${version}`;
    const storedAnswer = { task: { task_id: TID }, event_ids: ["id-before-upgrade"], wal_seq: events.length, marker: `v${version}` };
    const legacyHash = "ab".repeat(32);
    await runInDurableObject(stub, (_i, state) => {
      state.storage.transactionSync(() => storeAsVersion(state.storage.sql, version, { key: `orchestrator:orch:orch_run\n${clientKey}`, hash: legacyHash, answer: JSON.stringify(storedAnswer), at: Date.now() - 60_000 }));
    });
    await evictDurableObject(stub);

    const view = expectOk(await call("GET", TASK, observer));
    const expected = taskView(replay(events));
    expect(view.steps).toEqual(expected.steps);
    expect(view.attempts).toEqual(expected.attempts);
    expect(view.wal_seq).toBe(events.length);
    const exported = await SELF.fetch(`${BASE}${TASK}/wal?limit=1000`, { headers: { authorization: `Bearer ${observer}` } });
    const lines = (await exported.text()).trimEnd().split("\n");
    expect(lines).toHaveLength(events.length);
    expect(lines.map((line) => JSON.parse(line))).toEqual(events);

    const stored = await runInDurableObject(stub, (_i, state) => ({
      version: state.storage.sql.exec<{ version: number }>("SELECT version FROM schema_version").one().version,
      tables: state.storage.sql.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('wal', 'wal_events', 'idempotency', 'wal_commits') ORDER BY name").toArray().map((r) => r.name),
      commits: state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM wal_commits WHERE seq_key > 0").one().n,
    }));
    expect(stored).toEqual({ version: MIGRATIONS.length, tables: ["wal_commits"], commits: events.length });

    // The key answered before the upgrade still gets its first answer, whatever the body (its hash predates the cheap one).
    const body = { ops: [{ op: "update_task", title: "Renamed" }] };
    expect(expectOk(await call("PATCH", TASK, orch, body, { "idempotency-key": clientKey }))).toEqual(storedAnswer);
    // A new keyed command commits on top, and its retry replays; another body with its key is a conflict.
    const first = expectOk(await call("PATCH", TASK, orch, body, { "idempotency-key": `after-${clientKey}` }));
    expect(first.wal_seq).toBe(events.length + 1);
    expect(expectOk(await call("PATCH", TASK, orch, body, { "idempotency-key": `after-${clientKey}` }))).toEqual(first);
    expectError(await call("PATCH", TASK, orch, { ops: [{ op: "update_task", title: "Other" }] }, { "idempotency-key": `after-${clientKey}` }), 422, "idempotency_conflict");
    await evictDurableObject(stub);
    expect(expectOk(await call("PATCH", TASK, orch, body, { "idempotency-key": `after-${clientKey}` }))).toEqual(first);
    const wal = await walOf(TASK, observer);
    expect(wal.slice(0, events.length)).toEqual(events);
    expect(wal.map((e) => e.wal_seq)).toEqual(Array.from({ length: events.length + 1 }, (_, i) => i + 1));
  });
});

/** Every table's columns and every index's columns, as SQLite describes them (not the CREATE text, which ALTER TABLE leaves as it was). */
function describeSchema(sql: SqlStorage): unknown {
  const tables = sql.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' ORDER BY name").toArray().map((r) => r.name);
  return tables.map((table) => ({
    table,
    columns: sql.exec(`SELECT name, type, "notnull", pk, dflt_value FROM pragma_table_info('${table}') ORDER BY cid`).toArray(),
    indexes: sql
      .exec<{ name: string; unique: number; partial: number }>(`SELECT name, "unique", partial FROM pragma_index_list('${table}') ORDER BY name`)
      .toArray()
      .map((index) => ({ ...index, name: index.name.startsWith("sqlite_autoindex") ? "auto" : index.name, columns: sql.exec(`SELECT name FROM pragma_index_info('${index.name}') ORDER BY seqno`).toArray() })),
  }));
}

describe("a new task object's schema", () => {
  it("Should be made at once as the current version, equal to what every migration applied in order makes", async () => {
    const stub = taskStub(SID, "fresh-schema-task");
    const described = await runInDurableObject(stub, (_i, state) => {
      const sql = state.storage.sql;
      const fresh = { version: sql.exec<{ version: number }>("SELECT version FROM schema_version").one().version, schema: describeSchema(sql) };
      for (const table of STORAGE_TABLES) sql.exec(`DROP TABLE IF EXISTS ${table}`);
      for (const statements of MIGRATIONS) for (const statement of statements) sql.exec(statement);
      sql.exec("CREATE TABLE schema_version (version INTEGER NOT NULL)");
      return { fresh, migrated: describeSchema(sql) };
    });
    expect(described.fresh.version).toBe(MIGRATIONS.length);
    expect(CURRENT_SCHEMA.length).toBeGreaterThan(0);
    expect(described.fresh.schema).toEqual(described.migrated);
  });
});
