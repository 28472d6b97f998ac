/**
 * @module Is a token revoked: the session object says (session-tokens.ts), through a cache per isolate so the
 * hot path pays no round trip. A session's revocation state (its token generation and the ids of revoked tokens
 * not yet expired) is read once per REVOCATION_CHECK_MS per isolate, whatever the number of its tokens; only the
 * requests that meet an outdated state at the same moment read it each (a read in flight is never shared between
 * requests: a Worker request that awaits another request's I/O hangs, which workerd reports as code that "had
 * hung"). A revocation made through this isolate applies here at once; every other isolate sees it within
 * REVOCATION_CHECK_MS.
 */
import type { Env } from "./env.js";
import { readConfig } from "./env.js";
import { checkToken, type TokenCheck, type TokenClaims } from "./tokens.js";

/** A session's revocation state as the session object answers it. */
export interface RevocationView {
  readonly generation: number;
  readonly revoked: readonly string[];
}

interface Cached {
  readonly generation: number;
  readonly revoked: ReadonlySet<string>;
  readonly readAtMs: number;
}

/** Sessions whose state one isolate keeps; the oldest is dropped past it. */
const CACHED_SESSIONS = 10_000;
const cache = new Map<string, Cached>();

function remember(sid: string, view: RevocationView, readAtMs: number): Cached {
  const entry = { generation: view.generation, revoked: new Set(view.revoked), readAtMs };
  // Reads of one session may answer out of order: an older one never replaces a newer.
  const held = cache.get(sid);
  if (held !== undefined && held.readAtMs > readAtMs) return entry;
  cache.delete(sid);
  if (cache.size >= CACHED_SESSIONS) cache.delete(cache.keys().next().value!);
  cache.set(sid, entry);
  return entry;
}

const checkMsOf = new WeakMap<Env, number>();

/** REVOCATION_CHECK_MS, read once per bindings object (this is the hot path). */
export function revocationCheckMs(env: Env): number {
  let ms = checkMsOf.get(env);
  if (ms === undefined) checkMsOf.set(env, (ms = readConfig(env).revocationCheckMs));
  return ms;
}

async function stateOf(env: Env, sid: string, nowMs: number): Promise<Cached> {
  const cached = cache.get(sid);
  if (cached !== undefined && nowMs - cached.readAtMs < revocationCheckMs(env)) return cached;
  const session = env.SESSIONS.get(env.SESSIONS.idFromName(sid));
  try {
    return remember(sid, await session.revocationState(), nowMs);
  } catch (e) {
    // The session cannot answer now: the last state read stands for a while rather than refusing everyone.
    if (cached !== undefined) return cached;
    throw e;
  }
}

/** Whether the session revoked this token: its id was revoked, or it is of an older generation. */
export async function isRevoked(env: Env, claims: TokenClaims, nowMs: number = Date.now()): Promise<boolean> {
  const state = await stateOf(env, claims.sid, nowMs);
  return (claims.gen ?? 0) < state.generation || (claims.jti !== undefined && state.revoked.has(claims.jti));
}

/**
 * The one check of a presented token, on every surface: signature and expiry (checkToken), then revocation. The
 * claims, or why it is refused. A worker run that ended is its task object's to say (`run_ended`).
 */
export async function admitToken(env: Env, token: string, nowMs: number = Date.now()): Promise<TokenCheck> {
  const check = await checkToken(env.TOKEN_SECRET, token, nowMs);
  if (!check.ok) return check;
  return (await isRevoked(env, check.claims, nowMs)) ? { ok: false, reason: "revoked" } : check;
}

/** A revocation this isolate just made (the session's new state): it applies here without waiting for the next read. */
export function rememberRevocation(sid: string, view: RevocationView, nowMs: number = Date.now()): void {
  remember(sid, view, nowMs);
}
