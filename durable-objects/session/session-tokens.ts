/**
 * @module The tokens of one session, kept by its object: every token minted for the session (never the token
 * itself: its id, role, agent, run and expiry), which were revoked, and the session's token generation (revoke-all
 * starts a new one, and every token of an older generation is revoked at once). The Worker and the objects read
 * the revocation state through a short cache (durable-objects/shared/revocations.ts); the task objects holding a
 * revoked token's command sockets are told from the session's alarm (an outbox: the closes survive a crash).
 */
import { runtimeError } from "../../src/core/index.js";
import type { ListedToken, TokenListPage } from "../../src/contract/index.js";
import { ulidFactory } from "../../src/lib/ids.js";
import { err, ok, type RpcResult } from "../shared/rpc-result.js";
import { mintToken, type TokenClaims } from "../shared/tokens.js";

/** What the session answers to a revocation check: tokens of an older generation and the listed ids are revoked. */
export interface RevocationState {
  readonly generation: number;
  readonly revoked: readonly string[];
}

/** A token the session is asked to mint: its claims but the id and generation, which the session gives. */
export type TokenRequest = Omit<TokenClaims, "iat" | "exp" | "jti" | "gen">;

/** A minted token as routes answer it. */
export interface MintedToken {
  readonly token: string;
  readonly token_id: string;
  readonly expires_at: string;
}

/** A command socket a token holds on a task, so its revocation can close it. */
export interface SocketHolding {
  readonly token_id: string;
  readonly task_id: string;
  readonly expires_at_ms: number;
}

/** The revoked tokens of a generation: read through the partial index tokens_revoked, whatever the number of live tokens. */
export const REVOKED_TOKENS_SQL = "SELECT token_id FROM tokens WHERE revoked_at IS NOT NULL AND generation = ?";

/** Tasks told of revocations per alarm; the rest wait for the next ring. */
const PUSHES_PER_ALARM = 100;

type TokenRow = { token_id: string; role: string; agent_id: string; run_id: string | null; task_id: string | null; expires_at_ms: number };

/** The token tables of one session object. */
export class SessionTokens {
  private readonly newId = ulidFactory();
  private generationCache: number | null = null;

  constructor(
    private readonly sql: SqlStorage,
    private readonly secret: () => string,
  ) {
    // `seq` orders the list in minting order, and never comes back once used (a cursor stays exact).
    sql.exec(`CREATE TABLE IF NOT EXISTS tokens (
      seq INTEGER PRIMARY KEY AUTOINCREMENT, token_id TEXT NOT NULL UNIQUE, role TEXT NOT NULL, agent_id TEXT NOT NULL, run_id TEXT, task_id TEXT,
      generation INTEGER NOT NULL, expires_at_ms INTEGER NOT NULL, revoked_at TEXT
    )`);
    sql.exec("CREATE INDEX IF NOT EXISTS tokens_by_expiry ON tokens (expires_at_ms)");
    // The revocation check reads the revoked ones only (every REVOCATION_CHECK_MS per isolate), never the live ones.
    sql.exec("CREATE INDEX IF NOT EXISTS tokens_revoked ON tokens (generation) WHERE revoked_at IS NOT NULL");
    sql.exec("CREATE TABLE IF NOT EXISTS token_generation (id INTEGER PRIMARY KEY CHECK (id = 1), generation INTEGER NOT NULL)");
    sql.exec("CREATE TABLE IF NOT EXISTS token_sockets (token_id TEXT NOT NULL, task_id TEXT NOT NULL, expires_at_ms INTEGER NOT NULL, PRIMARY KEY (token_id, task_id))");
    // A task whose sockets of revoked tokens (or of an older generation) must be closed: sent from the alarm.
    sql.exec("CREATE TABLE IF NOT EXISTS socket_closes (task_id TEXT PRIMARY KEY, token_ids TEXT NOT NULL, generation INTEGER NOT NULL)");
  }

  /** The session's current token generation (0 until the first revoke-all). */
  generation(): number {
    this.generationCache ??= this.sql.exec<{ generation: number }>("SELECT generation FROM token_generation").toArray()[0]?.generation ?? 0;
    return this.generationCache;
  }

  /**
   * Mints a token of the current generation and records it; it expires after `ttlSeconds`, never after
   * `notAfterSeconds`. A worker run's tokens share the id `tokenId` (a dispatch answered again mints its run's
   * token again): the row keeps the latest expiry, and a revoked run stays revoked.
   */
  async mint(request: TokenRequest, nowMs: number, ttlSeconds: number, notAfterSeconds?: number, tokenId: string = `tok_${this.newId().toLowerCase()}`): Promise<MintedToken> {
    const generation = this.generation();
    const minted = await mintToken(this.secret(), { ...request, jti: tokenId, gen: generation }, nowMs, ttlSeconds, notAfterSeconds);
    this.sql.exec(
      `INSERT INTO tokens (token_id, role, agent_id, run_id, task_id, generation, expires_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (token_id) DO UPDATE SET generation = excluded.generation, expires_at_ms = MAX(expires_at_ms, excluded.expires_at_ms)`,
      tokenId, request.role, request.sub, request.run, request.tid ?? null, generation, minted.exp * 1000,
    );
    return { token: minted.token, token_id: tokenId, expires_at: minted.expires_at };
  }

  /** The live tokens (not revoked, not expired), in the order they were first minted, `limit` after the cursor `after` (a page's next_cursor, checked by the route's query schema). */
  list(nowMs: number, limit: number, after: string | null): RpcResult<TokenListPage> {
    this.forgetExpired(nowMs);
    const rows = this.sql
      .exec<TokenRow & { seq: number }>(
        "SELECT seq, token_id, role, agent_id, run_id, task_id, expires_at_ms FROM tokens WHERE revoked_at IS NULL AND seq > ? ORDER BY seq LIMIT ?",
        after === null ? 0 : Number(after), limit + 1,
      )
      .toArray();
    const page = rows.slice(0, limit);
    const tokens: ListedToken[] = page.map((r) => ({
      token_id: r.token_id, role: r.role as ListedToken["role"], agent_id: r.agent_id, run_id: r.run_id, task_id: r.task_id, expires_at: new Date(r.expires_at_ms).toISOString(),
    }));
    return ok({ tokens, next_cursor: rows.length > limit ? String(page[page.length - 1]!.seq) : null });
  }

  /** Revokes one token; not_found for an id this session never minted or one already expired. Revoking twice is no error. */
  revoke(tokenId: string, nowMs: number): RpcResult<{ token_id: string; revoked_at: string }> {
    const row = this.sql.exec<{ revoked_at: string | null; expires_at_ms: number }>("SELECT revoked_at, expires_at_ms FROM tokens WHERE token_id = ?", tokenId).toArray()[0];
    if (row === undefined || row.expires_at_ms <= nowMs) return err(runtimeError("not_found", `no live token ${tokenId} in this session`, { token_id: tokenId }));
    if (row.revoked_at !== null) return ok({ token_id: tokenId, revoked_at: row.revoked_at });
    const revokedAt = new Date(nowMs).toISOString();
    this.sql.exec("UPDATE tokens SET revoked_at = ? WHERE token_id = ?", revokedAt, tokenId);
    for (const { task_id } of this.sql.exec<{ task_id: string }>("SELECT task_id FROM token_sockets WHERE token_id = ?", tokenId).toArray()) this.queueClose(task_id, [tokenId], 0);
    return ok({ token_id: tokenId, revoked_at: revokedAt });
  }

  /** Starts a new generation: every token minted so far is revoked, every task holding their sockets told. */
  revokeAll(nowMs: number): number {
    const generation = this.generation() + 1;
    this.sql.exec("INSERT INTO token_generation (id, generation) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET generation = excluded.generation", generation);
    this.generationCache = generation;
    this.sql.exec("UPDATE tokens SET revoked_at = ? WHERE revoked_at IS NULL", new Date(nowMs).toISOString());
    for (const { task_id } of this.sql.exec<{ task_id: string }>("SELECT DISTINCT task_id FROM token_sockets").toArray()) this.queueClose(task_id, [], generation);
    this.sql.exec("DELETE FROM token_sockets");
    return generation;
  }

  /** What a revocation check needs: the generation, and the ids of revoked tokens not yet expired. */
  state(nowMs: number): RevocationState {
    this.forgetExpired(nowMs);
    const revoked = this.sql.exec<{ token_id: string }>(REVOKED_TOKENS_SQL, this.generation()).toArray().map((r) => r.token_id);
    return { generation: this.generation(), revoked };
  }

  /** A task object took a command socket of this token: a later revocation must reach it. */
  noteSocket(holding: SocketHolding): void {
    this.sql.exec(
      "INSERT INTO token_sockets (token_id, task_id, expires_at_ms) VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET expires_at_ms = excluded.expires_at_ms",
      holding.token_id, holding.task_id, holding.expires_at_ms,
    );
  }

  /** Whether closes wait to be sent. */
  hasPendingCloses(): boolean {
    return this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM socket_closes").one().n > 0;
  }

  /**
   * Sends the waiting closes through `send` (the task object's RPC), at most PUSHES_PER_ALARM; a close that
   * fails stays and is sent again. Answers whether any are left.
   */
  async sendCloses(send: (taskId: string, tokenIds: string[], generation: number) => Promise<void>): Promise<boolean> {
    const rows = this.sql.exec<{ task_id: string; token_ids: string; generation: number }>("SELECT * FROM socket_closes LIMIT ?", PUSHES_PER_ALARM).toArray();
    for (const row of rows) {
      try {
        await send(row.task_id, JSON.parse(row.token_ids) as string[], row.generation);
        // Only the close sent: one queued meanwhile for the same task (more ids) stays.
        this.sql.exec("DELETE FROM socket_closes WHERE task_id = ? AND token_ids = ? AND generation = ?", row.task_id, row.token_ids, row.generation);
      } catch {
        // The task object is unreachable now; the alarm tries again.
      }
    }
    return this.hasPendingCloses();
  }

  private queueClose(taskId: string, tokenIds: string[], generation: number): void {
    const queued = this.sql.exec<{ token_ids: string; generation: number }>("SELECT token_ids, generation FROM socket_closes WHERE task_id = ?", taskId).toArray()[0];
    const ids = [...new Set([...(queued === undefined ? [] : (JSON.parse(queued.token_ids) as string[])), ...tokenIds])];
    this.sql.exec(
      "INSERT INTO socket_closes (task_id, token_ids, generation) VALUES (?, ?, ?) ON CONFLICT (task_id) DO UPDATE SET token_ids = excluded.token_ids, generation = excluded.generation",
      taskId, JSON.stringify(ids), Math.max(generation, queued?.generation ?? 0),
    );
  }

  /** Expired tokens need no revocation: their expiry refuses them. */
  private forgetExpired(nowMs: number): void {
    this.sql.exec("DELETE FROM tokens WHERE expires_at_ms <= ?", nowMs);
    this.sql.exec("DELETE FROM token_sockets WHERE expires_at_ms <= ?", nowMs);
  }
}
