/**
 * @module The credentials of a session's A2A peers: one Authorization value per peer origin, kept in the session
 * object's own table (never in a WAL, never in an answer), read only by the outbound peer client of that
 * session's delegated steps, which sends it to that origin alone.
 */
import { runtimeError } from "../../src/core/index.js";
import { err, ok, type RpcResult } from "../shared/rpc-result.js";
import type { PeerCredentialInfo } from "./session-rpc.js";

/** Peer origins one session may hold credentials for. */
export const MAX_PEER_CREDENTIALS = 100;

/** The peer_credentials table of one session object. */
export class SessionPeers {
  constructor(private readonly sql: SqlStorage) {
    this.sql.exec("CREATE TABLE IF NOT EXISTS peer_credentials (origin TEXT PRIMARY KEY, authorization TEXT NOT NULL, updated_at TEXT NOT NULL)");
  }

  /** Sets (or replaces) the credential of `origin`; validation_error past MAX_PEER_CREDENTIALS origins. */
  set(origin: string, authorization: string): RpcResult<PeerCredentialInfo> {
    const known = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM peer_credentials WHERE origin = ?", origin).one().n > 0;
    if (!known && this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM peer_credentials").one().n >= MAX_PEER_CREDENTIALS) {
      return err(runtimeError("validation_error", `a session holds credentials for at most ${MAX_PEER_CREDENTIALS} peer origins`, { limit: MAX_PEER_CREDENTIALS }));
    }
    const updatedAt = new Date().toISOString();
    this.sql.exec(
      "INSERT INTO peer_credentials (origin, authorization, updated_at) VALUES (?, ?, ?) ON CONFLICT (origin) DO UPDATE SET authorization = excluded.authorization, updated_at = excluded.updated_at",
      origin,
      authorization,
      updatedAt,
    );
    return ok({ origin, updated_at: updatedAt });
  }

  /** Every origin with a credential, in origin order, without the values. */
  list(): PeerCredentialInfo[] {
    return this.sql.exec<{ origin: string; updated_at: string }>("SELECT origin, updated_at FROM peer_credentials ORDER BY origin").toArray().map((r) => ({ origin: r.origin, updated_at: r.updated_at }));
  }

  /** Forgets the credential of `origin`; not_found when none was set for it (the next call there goes without). */
  delete(origin: string): RpcResult<{ origin: string }> {
    if (this.sql.exec("DELETE FROM peer_credentials WHERE origin = ?", origin).rowsWritten > 0) return ok({ origin });
    return err(runtimeError("not_found", `the session holds no credential for ${origin}`, { origin }));
  }

  /** The Authorization value to send to `origin`, or null when none was set for it. */
  authorizationFor(origin: string): string | null {
    return this.sql.exec<{ authorization: string }>("SELECT authorization FROM peer_credentials WHERE origin = ?", origin).toArray()[0]?.authorization ?? null;
  }
}
