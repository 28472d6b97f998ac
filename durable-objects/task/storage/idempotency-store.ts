/**
 * @module Idempotency records of a task object: answers stored with the commit that produced them, scoped to
 * the caller who sent the key, replayed only to that caller within 24 hours.
 */
import { type Actor, runtimeError } from "../../../src/core/index.js";
import { hashLanes } from "../../../src/lib/hash.js";
import { err, ok, type RpcResult } from "../../shared/rpc-result.js";
import { partedText, type Sql } from "./wal-store.js";

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

/** A 52-bit fingerprint of a scoped key (src/lib/hash.ts `hashLanes`): what the index holds instead of the key itself. */
export function keyFingerprint(key: string): number {
  const [a, b] = hashLanes([key], 0x811c9dc5 ^ key.length, 0x41c6ce57);
  return (a >>> 0) * 0x100000 + ((b >>> 0) & 0xfffff);
}

/** What a commit does to the index: its own keys and time, and how many of the oldest commits it moves to the spill table. */
export interface IndexPlan {
  readonly fingerprints: readonly number[];
  readonly at: number;
  readonly evict: number;
}

/** The spill table is purged of keys past their 24 hours at most this often (a scan of the table). */
const SPILL_PURGE_EVERY_MS = 60 * 60 * 1000;
const spillInsertSql = "INSERT OR REPLACE INTO idempotency_spill (fingerprint, seq_key, at_ms) SELECT value, ?, ? FROM json_each(?)";
const spillKeepSql = "INSERT OR IGNORE INTO idempotency_spill (fingerprint, seq_key, at_ms) SELECT value, ?, ? FROM json_each(?)";

/**
 * The idempotency records of one task object. An answer is written in its commit's WAL row (wal-store.ts
 * `appendCommit`; in that commit's parts when it is too large for one row), never in a row of its own. The keys of the last 24 hours are found through a fingerprint of each
 * and the row of its commit: in memory for the newest (up to `maxKeys`), in the `idempotency_spill` table for the
 * rest. The memory index is built from the WAL rows the first time a key is looked up after a start; a lookup reads
 * a WAL row only when a fingerprint is found (a retry), and the spill table only while it holds keys.
 */
export class IdempotencyStore {
  /** Fingerprint → the seq_key of the commit that answered it. Null until loaded. */
  private recent: Map<number, number> | null = null;
  /** The indexed commits, oldest first from `head`. */
  private commits: IndexedCommit[] = [];
  private head = 0;
  private indexed = 0;
  /** Whether the spill table may hold keys of the last 24 hours. */
  private spilled = false;
  private spillPurgedAt = 0;

  /** `sql` is asked for at each call: the commit path's storage is a field the fault-injection tests replace. */
  constructor(
    private readonly sql: () => Sql,
    /**
     * Fingerprints kept in memory at most (IDEMPOTENCY_INDEX_KEYS; about 60 bytes each). Past it the oldest commits'
     * fingerprints move to the spill table in the transaction of the commit that makes room, so a busy task's
     * memory stays bounded and its keys are still answered for 24 hours.
     */
    private readonly maxKeys: number,
  ) {}

  /** The stored answers of these (scoped) keys, unexpired or not: replayOf judges their age. */
  read(keys: readonly string[]): Map<string, IdempotencyRow> {
    const rows = new Map<string, IdempotencyRow>();
    const recent = this.index();
    const misses: string[] = [];
    const commits: CommitAnswers = new Map();
    for (const key of keys) {
      if (rows.has(key)) continue;
      const seqKey = recent.get(keyFingerprint(key));
      const row = seqKey === undefined ? null : this.storedAnswer(seqKey, key, commits);
      if (row !== null) rows.set(key, row);
      else if (this.spilled) misses.push(key);
    }
    if (misses.length > 0) this.readSpilled(misses, rows, commits);
    return rows;
  }

  /**
   * Inside a commit's transaction, before its WAL row: what the commit does to the index, the fingerprints of the
   * oldest commits it makes room by written to the spill table. Null when the index is not loaded (it will be built
   * from the rows, this one included) or the commit answered no key.
   */
  prepare(answers: readonly PendingAnswer[]): IndexPlan | null {
    if (this.recent === null || answers.length === 0) return null;
    const fingerprints = answers.map((a) => keyFingerprint(a.key));
    let evict = 0;
    for (let room = this.maxKeys - this.indexed - fingerprints.length; room < 0 && this.head + evict < this.commits.length; evict++) {
      const oldest = this.commits[this.head + evict]!;
      this.sql().exec(spillInsertSql, oldest.seqKey, oldest.at, JSON.stringify(oldest.fingerprints));
      room += oldest.fingerprints.length;
    }
    return { fingerprints, at: answers[0]!.at, evict };
  }

  /** After the commit's transaction: its keys, stored in the row `seqKey`, join the index; the spilled ones leave memory. */
  committed(seqKey: number, plan: IndexPlan | null): void {
    if (this.recent === null || plan === null) return;
    for (let i = 0; i < plan.evict; i++) this.dropOldest();
    if (plan.evict > 0) this.spilled = true;
    this.add({ seqKey, at: plan.at, fingerprints: plan.fingerprints });
  }

  /** Memory was rebuilt from storage: the index is rebuilt too, when next needed. */
  forget(): void {
    this.recent = null;
    this.commits = [];
    this.head = 0;
    this.indexed = 0;
  }

  /** Drops keys past their 24 hours from memory, and now and then from the spill table (their WAL rows stay). */
  expire(now: number): void {
    while (this.recent !== null && this.head < this.commits.length && now - this.commits[this.head]!.at > IDEMPOTENCY_TTL_MS) this.dropOldest();
    if (!this.spilled || now - this.spillPurgedAt < SPILL_PURGE_EVERY_MS) return;
    this.spillPurgedAt = now;
    try {
      this.sql().exec("DELETE FROM idempotency_spill WHERE at_ms < ?", now - IDEMPOTENCY_TTL_MS);
    } catch {
      // Expired keys only cost space, and a lookup judges their age anyway; the next purge tries again.
    }
  }

  private index(): Map<number, number> {
    if (this.recent !== null) return this.recent;
    const recent = new Map<number, number>();
    const since = Date.now() - IDEMPOTENCY_TTL_MS;
    // Newest first: as many commits as memory holds, then indexed oldest first; keys older than those belong in the
    // spill table, which they are put in here if a crash or a smaller bound left them out (a newer entry is kept).
    const found: IndexedCommit[] = [];
    let count = 0;
    for (const row of this.sql().exec<{ seq_key: number; at_ms: number; keys: string }>("SELECT seq_key, at_ms, keys FROM wal_commits WHERE keys IS NOT NULL AND at_ms >= ? ORDER BY at_ms DESC", since)) {
      const fingerprints = (JSON.parse(row.keys) as [string, string][]).map(([key]) => keyFingerprint(key));
      if (count + fingerprints.length <= this.maxKeys) {
        found.push({ seqKey: row.seq_key, at: row.at_ms, fingerprints });
        count += fingerprints.length;
        continue;
      }
      count = this.maxKeys + 1;
      this.sql().exec(spillKeepSql, row.seq_key, row.at_ms, JSON.stringify(fingerprints));
    }
    this.recent = recent;
    for (let i = found.length - 1; i >= 0; i--) this.add(found[i]!);
    this.spilled = this.sql().exec("SELECT 1 FROM idempotency_spill LIMIT 1").toArray().length > 0;
    return recent;
  }

  private add(commit: IndexedCommit): void {
    for (const fingerprint of commit.fingerprints) this.recent!.set(fingerprint, commit.seqKey);
    this.commits.push(commit);
    this.indexed += commit.fingerprints.length;
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

  /** The answers of keys found in the spill table, one query per 100 keys. */
  private readSpilled(keys: readonly string[], rows: Map<string, IdempotencyRow>, commits: CommitAnswers): void {
    for (let start = 0; start < keys.length; start += MAX_BOUND_PARAMS) {
      const chunk = keys.slice(start, start + MAX_BOUND_PARAMS);
      const byFingerprint = new Map(chunk.map((key) => [keyFingerprint(key), key]));
      const found = this.sql().exec<{ fingerprint: number; seq_key: number }>(`SELECT fingerprint, seq_key FROM idempotency_spill WHERE fingerprint IN (${chunk.map(() => "?").join(", ")})`, ...byFingerprint.keys());
      for (const { fingerprint, seq_key } of found) {
        const key = byFingerprint.get(fingerprint)!;
        const row = this.storedAnswer(seq_key, key, commits);
        if (row !== null) rows.set(key, row);
      }
    }
  }

  /**
   * The answer to `key` in the commit row `seqKey`, or null when the row does not hold it (another key's fingerprint).
   * `commits` keeps each row read for the rest of one lookup: a retried batch finds all its keys in one commit.
   */
  private storedAnswer(seqKey: number, key: string, commits: CommitAnswers): IdempotencyRow | null {
    let commit = commits.get(seqKey);
    if (commit === undefined) {
      const row = this.sql().exec<{ at_ms: number; keys: string; answers: string; parts: number | null }>("SELECT at_ms, keys, answers, parts FROM wal_commits WHERE seq_key = ?", seqKey).toArray()[0];
      commit = row === undefined ? null : { at: row.at_ms, keys: JSON.parse(row.keys) as [string, string][], answers: row.parts === null ? row.answers : partedText(this.sql(), seqKey, row.parts, "answers"), parsed: null };
      commits.set(seqKey, commit);
    }
    if (commit === null) return null;
    const index = commit.keys.findIndex(([stored]) => stored === key);
    if (index < 0) return null;
    commit.parsed ??= JSON.parse(commit.answers) as unknown[];
    if (commit.parsed.length <= index) throw new Error(`the answer of an Idempotency-Key is missing from WAL commit ${seqKey}`);
    return { body_hash: commit.keys[index]![1], answer: JSON.stringify(commit.parsed[index]), created_at_ms: commit.at };
  }
}

/** Commit rows read during one lookup, by seq_key (null: no such row); answers parsed when first needed. */
type CommitAnswers = Map<number, { at: number; keys: [string, string][]; answers: string; parsed: unknown[] | null } | null>;

/** Most `?` parameters one statement may bind: Durable Object SQLite allows 100. */
const MAX_BOUND_PARAMS = 100;

/**
 * Whether a stored request hash and a fresh one stand for the same request. Hashes stored before the request hash
 * became a cheap non-cryptographic one (routes/http/body.ts `requestHash`, always prefixed) are SHA-256 hex with no
 * prefix; what reaches an object cannot recompute one, so within such a record's 24 hours a retry with its key is
 * taken for the same request (it replays the first answer rather than refuse an honest retry across an upgrade).
 */
export function sameRequest(stored: string, fresh: string): boolean {
  return stored === fresh || (LEGACY_SHA256.test(stored) && !LEGACY_SHA256.test(fresh));
}

const LEGACY_SHA256 = /^[0-9a-f]{64}$/;

/**
 * The JSON text of a keyed write's answer, kept with the answer object: the text it was stored as (remembered, or
 * read back for a replay) is the text its route sends, so the answer is encoded once. Answers are not changed
 * after they are remembered or replayed.
 */
const answerTexts = new WeakMap<object, string>();

/** `answer` as JSON text: the text it was stored as or read from when it has one, else encoded now (and kept). */
export function answerText(answer: object): string {
  let text = answerTexts.get(answer);
  if (text === undefined) {
    text = JSON.stringify(answer);
    answerTexts.set(answer, text);
  }
  return text;
}

/** The earlier answer for a key, its conflict when the request differs, or null when it is new or expired. */
export function replayOf<T>(idem: Idempotency, row: Pick<IdempotencyRow, "body_hash" | "answer" | "created_at_ms"> | undefined, now: number): RpcResult<T> | null {
  if (row === undefined || now - row.created_at_ms > IDEMPOTENCY_TTL_MS) return null;
  if (!sameRequest(row.body_hash, idem.hash)) return err(runtimeError("idempotency_conflict", "this Idempotency-Key was used with a different request", { key: clientKey(idem) }));
  const answer = JSON.parse(row.answer) as T & object;
  answerTexts.set(answer, row.answer);
  return ok(answer);
}
