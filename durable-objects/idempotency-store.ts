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

/** The keys one commit answered, as the index holds them. */
interface IndexedCommit {
  readonly seqKey: number;
  readonly at: number;
  readonly fingerprints: readonly number[];
}

/**
 * Keys the index holds at most (about 60 bytes each: a 52-bit fingerprint and its commit). Past it the oldest are
 * forgotten before their 24 hours, so a task's memory stays bounded however busy it is (at 8,000 keyed commands/s
 * this still covers about a minute of retries); each time that happens it is logged.
 */
export const MAX_INDEXED_KEYS = 500_000;

/** A 52-bit fingerprint of a scoped key (two FNV-1a hashes): what the index holds instead of the key itself. */
export function keyFingerprint(key: string): number {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ key.length;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
  }
  return (a >>> 0) * 0x100000 + ((b >>> 0) & 0xfffff);
}

/**
 * The idempotency records of one task object. An answer is written in its commit's WAL row (wal-store.ts
 * `appendCommit`), never in a row of its own. In memory the object keeps an index of the keys of the last 24 hours
 * (up to MAX_INDEXED_KEYS): a fingerprint of each key and the row of its commit, built from those rows the first
 * time a key is looked up after a start. A lookup reads storage only when a fingerprint is found: a retry.
 */
export class IdempotencyStore {
  /** Fingerprint → the seq_key of the commit that answered it. Null until loaded. */
  private recent: Map<number, number> | null = null;
  /** The indexed commits, oldest first from `head`. */
  private commits: IndexedCommit[] = [];
  private head = 0;
  private indexed = 0;

  /** `sql` is asked for at each call: the commit path's storage is a field the fault-injection tests replace. */
  constructor(
    private readonly sql: () => Sql,
    private readonly maxKeys = MAX_INDEXED_KEYS,
  ) {}

  /** The stored answers of these (scoped) keys, unexpired or not: replayOf judges their age. */
  read(keys: readonly string[]): Map<string, IdempotencyRow> {
    const rows = new Map<string, IdempotencyRow>();
    const recent = this.index();
    for (const key of keys) {
      const seqKey = recent.get(keyFingerprint(key));
      if (seqKey === undefined || rows.has(key)) continue;
      const row = this.storedAnswer(seqKey, key);
      if (row !== null) rows.set(key, row);
    }
    return rows;
  }

  /** After a commit's transaction: its answers, stored in the row `seqKey`, join the index. */
  committed(seqKey: number, answers: readonly PendingAnswer[]): void {
    if (this.recent === null || answers.length === 0) return;
    this.add({ seqKey, at: answers[0]!.at, fingerprints: answers.map((a) => keyFingerprint(a.key)) });
  }

  /** Memory was rebuilt from storage: the index is rebuilt too, when next needed. */
  forget(): void {
    this.recent = null;
    this.commits = [];
    this.head = 0;
    this.indexed = 0;
  }

  /** Drops keys past their 24 hours from memory (their rows stay, as the WAL does). */
  expire(now: number): void {
    while (this.recent !== null && this.head < this.commits.length && now - this.commits[this.head]!.at > IDEMPOTENCY_TTL_MS) this.dropOldest();
  }

  private index(): Map<number, number> {
    if (this.recent !== null) return this.recent;
    this.recent = new Map();
    // Newest first, as many as the index holds, then indexed oldest first.
    const found: IndexedCommit[] = [];
    let count = 0;
    for (const row of this.sql().exec<{ seq_key: number; at_ms: number; keys: string }>("SELECT seq_key, at_ms, keys FROM wal_commits WHERE keys IS NOT NULL AND at_ms >= ? ORDER BY at_ms DESC", Date.now() - IDEMPOTENCY_TTL_MS)) {
      const fingerprints = (JSON.parse(row.keys) as [string, string][]).map(([key]) => keyFingerprint(key));
      found.push({ seqKey: row.seq_key, at: row.at_ms, fingerprints });
      count += fingerprints.length;
      if (count >= this.maxKeys) break;
    }
    for (let i = found.length - 1; i >= 0; i--) this.add(found[i]!);
    return this.recent;
  }

  private add(commit: IndexedCommit): void {
    const recent = this.recent!;
    for (const fingerprint of commit.fingerprints) recent.set(fingerprint, commit.seqKey);
    this.commits.push(commit);
    this.indexed += commit.fingerprints.length;
    if (this.indexed > this.maxKeys) {
      const before = this.indexed;
      while (this.indexed > this.maxKeys) this.dropOldest();
      console.warn(JSON.stringify({ level: "warn", where: "task object: idempotency index", message: `more than ${this.maxKeys} keys in 24 hours: the oldest ${before - this.indexed} are no longer replayed` }));
    }
  }

  private dropOldest(): void {
    const oldest = this.commits[this.head++]!;
    for (const fingerprint of oldest.fingerprints) if (this.recent!.get(fingerprint) === oldest.seqKey) this.recent!.delete(fingerprint);
    this.indexed -= oldest.fingerprints.length;
    if (this.head > 1_024 && this.head * 2 > this.commits.length) {
      this.commits = this.commits.slice(this.head);
      this.head = 0;
    }
  }

  /** The answer to `key` in the commit row `seqKey`, or null when the row does not hold it (another key's fingerprint). */
  private storedAnswer(seqKey: number, key: string): IdempotencyRow | null {
    const row = this.sql().exec<{ at_ms: number; keys: string; answers: string }>("SELECT at_ms, keys, answers FROM wal_commits WHERE seq_key = ?", seqKey).toArray()[0];
    if (row === undefined) return null;
    const keys = JSON.parse(row.keys) as [string, string][];
    const index = keys.findIndex(([stored]) => stored === key);
    if (index < 0) return null;
    const answers = JSON.parse(row.answers) as unknown[];
    if (answers.length <= index) throw new Error(`the answer of an Idempotency-Key is missing from WAL commit ${seqKey}`);
    return { body_hash: keys[index]![1], answer: JSON.stringify(answers[index]), created_at_ms: row.at_ms };
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
