/**
 * @module The fair share of an object's slots: one token may hold at most SLOT_SHARE_PER_TOKEN_PERCENT of each
 * pool of concurrent work (SSE subscribers, command sockets, action long-polls, large reads), so a single
 * client, however many connections it opens, leaves the rest of the pool to others. A token is known to the
 * object by its identity (tokenIdentity in tokens.ts: a hash of its signature), never by the token itself.
 */
import { rateLimited, type RuntimeError } from "../../src/core/index.js";

/** Slots of a pool of `max` one token may hold: `percent` of it, rounded down, at least one. */
export function perTokenShare(max: number, percent: number): number {
  return Math.max(1, Math.floor((max * Math.min(percent, 100)) / 100));
}

/** How many slots of one pool each token holds now. */
export class TokenSlots {
  private readonly held = new Map<string, number>();

  /** Slots `token` holds. */
  of(token: string): number {
    return this.held.get(token) ?? 0;
  }

  take(token: string): void {
    this.held.set(token, this.of(token) + 1);
  }

  release(token: string): void {
    const n = this.of(token) - 1;
    if (n > 0) this.held.set(token, n);
    else this.held.delete(token);
  }
}

/**
 * The answer to a token past its share of a pool: 429 rate_limited naming the bound (`<pool>_per_token`) and
 * the share, so the client knows another token would still be served.
 */
export function tokenShareReached(pool: string, what: string, held: number, share: number, retryAfterMs: number): RuntimeError {
  return rateLimited(`this token already holds ${held} ${what} of this object (a token's share: SLOT_SHARE_PER_TOKEN_PERCENT of the pool); retry later`, retryAfterMs, {
    limit: `${pool}_per_token`,
    max: share,
  });
}
