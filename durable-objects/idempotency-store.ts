/**
 * @module Idempotency records of a task object: answers stored with the commit that produced them, scoped to
 * the caller who sent the key, replayed only to that caller within 24 hours.
 */
import { type Actor, runtimeError } from "../src/core/index.js";
import { err, ok, type RpcResult } from "./rpc-result.js";
import type { Sql } from "./wal-store.js";

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

/** Where a recent key's answer is: the commit row and the place in its answers. */
interface KeyEntry {
  readonly hash: string;
  readonly seqKey: number;
  readonly index: number;
  readonly at: number;
}

/**
 * The idempotency records of one task object. An answer is written in its commit's WAL row (wal-store.ts
 * `appendCommit`), never in a row of its own; this keeps an index of the keys of the last 24 hours in memory, built
 * from those rows the first time a key is looked up after a start, so a lookup reads storage only for a retry.
 */
export class IdempotencyStore {
  /** Scoped key → where its answer is; in commit order, so the expired ones are at the front. Null until loaded. */
  private recent: Map<string, KeyEntry> | null = null;

  /** `sql` is asked for at each call: the commit path's storage is a field the fault-injection tests replace. */
  constructor(private readonly sql: () => Sql) {}

  /** The stored answers of these (scoped) keys, unexpired or not: replayOf judges their age. */
  read(keys: readonly string[]): Map<string, IdempotencyRow> {
    const rows = new Map<string, IdempotencyRow>();
    const recent = this.index();
    for (const key of keys) {
      const entry = recent.get(key);
      if (entry !== undefined && !rows.has(key)) rows.set(key, { body_hash: entry.hash, answer: this.answerOf(entry), created_at_ms: entry.at });
    }
    return rows;
  }

  /** After a commit's transaction: its answers, stored in the row `seqKey`, join the index. */
  committed(seqKey: number, answers: readonly PendingAnswer[]): void {
    if (this.recent === null) return;
    answers.forEach((a, index) => this.remember(this.recent!, a.key, { hash: a.hash, seqKey, index, at: a.at }));
  }

  /** Memory was rebuilt from storage: the index is rebuilt too, when next needed. */
  forget(): void {
    this.recent = null;
  }

  /** Drops keys past their 24 hours from memory (their rows stay, as the WAL does). */
  expire(now: number): void {
    if (this.recent === null) return;
    for (const [key, entry] of this.recent) {
      if (now - entry.at <= IDEMPOTENCY_TTL_MS) break;
      this.recent.delete(key);
    }
  }

  private index(): Map<string, KeyEntry> {
    if (this.recent !== null) return this.recent;
    const recent = new Map<string, KeyEntry>();
    const since = Date.now() - IDEMPOTENCY_TTL_MS;
    for (const row of this.sql().exec<{ seq_key: number; at_ms: number; keys: string }>("SELECT seq_key, at_ms, keys FROM wal_commits WHERE keys IS NOT NULL AND at_ms >= ? ORDER BY at_ms", since)) {
      (JSON.parse(row.keys) as [string, string][]).forEach(([key, hash], index) => this.remember(recent, key, { hash, seqKey: row.seq_key, index, at: row.at_ms }));
    }
    this.recent = recent;
    return recent;
  }

  /** A key answered again (after its 24 hours) moves to the back, keeping the map in commit order. */
  private remember(recent: Map<string, KeyEntry>, key: string, entry: KeyEntry): void {
    recent.delete(key);
    recent.set(key, entry);
  }

  private answerOf(entry: KeyEntry): string {
    const row = this.sql().exec<{ answers: string }>("SELECT answers FROM wal_commits WHERE seq_key = ?", entry.seqKey).toArray()[0];
    const answers = row === undefined ? [] : (JSON.parse(row.answers) as unknown[]);
    if (answers.length <= entry.index) throw new Error(`the answer of an Idempotency-Key is missing from WAL commit ${entry.seqKey}`);
    return JSON.stringify(answers[entry.index]);
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
