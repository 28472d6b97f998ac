/** @module Signed bearer tokens (HS256): what each role's token carries, minting and verification, and the actor a token stands for. */
import { sign, verify } from "hono/jwt";
import { z } from "zod";
import type { Actor } from "../../src/core/index.js";
import { hexOf } from "../../src/lib/hex.js";

/**
 * Roles a token can carry (docs/api.md "Auth"); admin is the static ADMIN_TOKEN, never a JWT. An approver reads like
 * an observer and may answer human actions, nothing else.
 */
export const TokenRoleSchema = z.enum(["orchestrator", "worker", "observer", "approver", "a2a_client"]);

/** Claims of a runtime token. Worker tokens are scoped to one task and one run. */
export const TokenClaimsSchema = z.object({
  role: TokenRoleSchema,
  sid: z.string(),
  sub: z.string(),
  run: z.string().nullable(),
  tid: z.string().optional(),
  pool: z.string().optional(),
  allowed: z.array(z.string()).nullable().optional(),
  /** The token's id (`token_id`): what the session lists and revokes. Tokens signed before ids have none. */
  jti: z.string().optional(),
  /** The session's token generation when it was minted: revoke-all ends every token of an older one. */
  gen: z.number().int().nonnegative().optional(),
  iat: z.number(),
  exp: z.number(),
});
/** Claims of a runtime token. */
export type TokenClaims = z.infer<typeof TokenClaimsSchema>;

/**
 * Signs claims into a bearer token valid for `ttlSeconds` from `nowMs`, but never past `notAfterSeconds` (the
 * expiry of the token that asked for it: a minted token never outlives its maker).
 */
export async function mintToken(
  secret: string,
  claims: Omit<TokenClaims, "iat" | "exp">,
  nowMs: number,
  ttlSeconds: number,
  notAfterSeconds: number = Number.POSITIVE_INFINITY,
): Promise<{ token: string; expires_at: string; exp: number }> {
  const iat = Math.floor(nowMs / 1000);
  const exp = Math.min(iat + ttlSeconds, notAfterSeconds);
  const token = await sign({ ...claims, iat, exp }, secret, "HS256");
  return { token, expires_at: new Date(exp * 1000).toISOString(), exp };
}

/** Why a token is refused (`details.reason` of its 401). */
export type TokenRefusalReason = "invalid" | "expired" | "revoked" | "run_ended";

/** A token's verdict: its claims, or why it is refused. */
export type TokenCheck = { readonly ok: true; readonly claims: TokenClaims } | { readonly ok: false; readonly reason: TokenRefusalReason };

/** The message of a refused token's 401, by reason. */
export const TOKEN_REFUSAL_MESSAGES: { readonly [R in TokenRefusalReason]: string } = {
  invalid: "the token is malformed or forged",
  expired: "the token has expired",
  revoked: "the token was revoked",
  run_ended: "the worker run of this token has ended",
};

/** Verified tokens kept per isolate: workers send the same token on every call, and a batch carries many. */
const VERIFIED_CACHE_SIZE = 10_000;
const verified = new Map<string, TokenClaims>();

/**
 * Verifies signature, algorithm and expiry: the claims, or why the token is refused (`expired` only for a token
 * whose signature holds). A token already verified with this secret is answered from a bounded cache, its
 * expiry still checked on every use. Revocation is the session's to say (revocations.ts).
 */
export async function checkToken(secret: string, token: string, nowMs: number = Date.now()): Promise<TokenCheck> {
  const cacheKey = `${secret.length}:${secret}\n${token}`;
  let claims = verified.get(cacheKey) ?? null;
  if (claims === null) {
    try {
      // Expiry is checked below, after the signature: a forged token is never told it merely expired.
      const parsed = TokenClaimsSchema.safeParse(await verify(token, secret, { alg: "HS256", exp: false }));
      if (!parsed.success) return { ok: false, reason: "invalid" };
      claims = parsed.data;
    } catch {
      return { ok: false, reason: "invalid" };
    }
    if (verified.size >= VERIFIED_CACHE_SIZE) verified.delete(verified.keys().next().value!);
    verified.set(cacheKey, claims);
  }
  return claims.exp * 1000 > nowMs ? { ok: true, claims } : { ok: false, reason: "expired" };
}

/** checkToken's claims, or null for a token that is malformed, forged or expired. */
export async function verifyToken(secret: string, token: string, nowMs: number = Date.now()): Promise<TokenClaims | null> {
  const check = await checkToken(secret, token, nowMs);
  return check.ok ? check.claims : null;
}

/** Compares two secrets in time independent of where they differ. */
export function secretsEqual(a: string, b: string): boolean {
  const enc = new TextEncoder();
  const x = enc.encode(a);
  const y = enc.encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}

/** The core actor a token stands for: identity only from the signed claims. */
export function actorOf(claims: TokenClaims): Actor {
  return {
    role: claims.role,
    session_id: claims.sid,
    agent_id: claims.sub,
    run_id: claims.run,
    ...(claims.tid === undefined ? {} : { task_id: claims.tid }),
  };
}

/**
 * Who holds an object's slots (token-slots.ts): the first 16 bytes of the SHA-256 of the token's signature, in
 * hex. Every token has its own signature, and the object never sees or keeps the token itself.
 */
export async function tokenIdentity(token: string): Promise<string> {
  const signature = token.slice(token.lastIndexOf(".") + 1);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(signature));
  return hexOf(new Uint8Array(digest, 0, 16));
}
