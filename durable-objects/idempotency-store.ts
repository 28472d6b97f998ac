/**
 * @module Idempotency records of a task object: answers stored with the commit that produced them, scoped to
 * the caller who sent the key, replayed only to that caller within 24 hours.
 */
import { type Actor, runtimeError } from "../src/core/index.js";
import { err, ok, type RpcResult } from "./rpc-result.js";
import { execRows, MAX_BOUND_PARAMS, multiRowSql, placeholders, type Sql, sqlPerCount } from "./wal-store.js";

/** An Idempotency-Key and the hash of the request it came with. */
export interface Idempotency {
  readonly key: string;
  readonly hash: string;
}

/** How long an idempotency record is kept. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * The key as stored: the caller's role, agent and run before the client's key, so a key is only ever
 * replayed to the token subject and run that sent it (as payment APIs scope keys per account). Without
 * this an observer replaying an orchestrator's keyed dispatch got its worker token back.
 */
export function scopeIdempotency(actor: Actor, idem: Idempotency | null): Idempotency | null {
  return idem === null ? null : { key: `${actor.role}:${actor.agent_id}:${actor.run_id ?? "-"}\n${idem.key}`, hash: idem.hash };
}

/** The key the client sent, without the caller scope (what error details show). */
export function clientKey(idem: Idempotency): string {
  return idem.key.slice(idem.key.indexOf("\n") + 1);
}

/** A stored idempotency record. */
export type IdempotencyRow = {
  readonly body_hash: string;
  readonly answer: string;
  readonly created_at_ms: number;
};

/** An answer to write with a commit. */
export interface PendingAnswer {
  readonly key: string;
  readonly hash: string;
  readonly answer: string;
  readonly at: number;
}

const insertSql = multiRowSql("INSERT OR REPLACE INTO idempotency (key, body_hash, answer, created_at_ms) VALUES ", 4);
const selectSql = sqlPerCount((keys) => `SELECT key, body_hash, answer, created_at_ms FROM idempotency WHERE key IN (${placeholders(keys)})`);
/** Writes between two purges of expired records: a purge is a table scan, not worth paying per write. */
const WRITES_PER_PURGE = 500;

/** The idempotency table of one task object: every statement that reads or writes it. */
export class IdempotencyStore {
  private writesSincePurge = 0;

  /** `sql` is asked for at each call: the commit path's storage is a field the fault-injection tests replace. */
  constructor(private readonly sql: () => Sql) {}

  /** Writes a commit's answers; called inside the commit's transaction. */
  write(answers: readonly PendingAnswer[]): void {
    execRows(this.sql(), answers, 4, insertSql, (row) => [row.key, row.hash, row.answer, row.at]);
  }

  /** The stored answers of these (scoped) keys: one query per 100 keys, so a batch asks once, not per command. */
  read(keys: readonly string[]): Map<string, IdempotencyRow> {
    const rows = new Map<string, IdempotencyRow>();
    for (let start = 0; start < keys.length; start += MAX_BOUND_PARAMS) {
      const chunk = keys.slice(start, start + MAX_BOUND_PARAMS);
      for (const row of this.sql().exec<IdempotencyRow & { key: string }>(selectSql(chunk.length), ...chunk)) rows.set(row.key, row);
    }
    return rows;
  }

  /** Drops records past their 24 hours, once every WRITES_PER_PURGE writes. */
  purgeNowAndThen(now: number): void {
    if (++this.writesSincePurge < WRITES_PER_PURGE) return;
    this.writesSincePurge = 0;
    try {
      this.sql().exec("DELETE FROM idempotency WHERE created_at_ms < ?", now - IDEMPOTENCY_TTL_MS);
    } catch {
      // Expired records only cost space; the next purge tries again.
    }
  }
}

/**
 * Whether a stored request hash and a fresh one stand for the same request. Hashes stored before the request hash
 * became a cheap non-cryptographic one (routes/body.ts `requestHash`, always prefixed) are SHA-256 hex with no
 * prefix; what reaches an object cannot recompute one, so within such a record's 24 hours a retry with its key is
 * taken for the same request (it replays the first answer rather than refuse an honest retry across an upgrade).
 */
export function sameRequest(stored: string, fresh: string): boolean {
  return stored === fresh || (LEGACY_SHA256.test(stored) && !LEGACY_SHA256.test(fresh));
}

const LEGACY_SHA256 = /^[0-9a-f]{64}$/;

/** The earlier answer for a key, its conflict when the request differs, or null when it is new or expired. */
export function replayOf<T>(idem: Idempotency, row: Pick<IdempotencyRow, "body_hash" | "answer" | "created_at_ms"> | undefined, now: number): RpcResult<T> | null {
  if (row === undefined || now - row.created_at_ms > IDEMPOTENCY_TTL_MS) return null;
  if (!sameRequest(row.body_hash, idem.hash)) return err(runtimeError("idempotency_conflict", "this Idempotency-Key was used with a different request", { key: clientKey(idem) }));
  return ok(JSON.parse(row.answer) as T);
}
