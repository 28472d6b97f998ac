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
  iat: z.number(),
  exp: z.number(),
});
/** Claims of a runtime token. */
export type TokenClaims = z.infer<typeof TokenClaimsSchema>;

/** Signs claims into a bearer token valid for `ttlSeconds` from `nowMs`. */
export async function mintToken(secret: string, claims: Omit<TokenClaims, "iat" | "exp">, nowMs: number, ttlSeconds: number): Promise<{ token: string; expires_at: string }> {
  const iat = Math.floor(nowMs / 1000);
  const exp = iat + ttlSeconds;
  const token = await sign({ ...claims, iat, exp }, secret, "HS256");
  return { token, expires_at: new Date(exp * 1000).toISOString() };
}

/** Verified tokens kept per isolate: workers send the same token on every call, and a batch carries many. */
const VERIFIED_CACHE_SIZE = 10_000;
const verified = new Map<string, TokenClaims>();

/**
 * Verifies signature, algorithm and expiry; null for anything not a valid runtime token. A token already
 * verified with this secret is answered from a bounded cache, its expiry still checked on every use.
 */
export async function verifyToken(secret: string, token: string, nowMs: number = Date.now()): Promise<TokenClaims | null> {
  const cacheKey = `${secret.length}:${secret}\n${token}`;
  const cached = verified.get(cacheKey);
  if (cached !== undefined) {
    if (cached.exp * 1000 > nowMs) return cached;
    verified.delete(cacheKey);
    return null;
  }
  let claims: TokenClaims | null = null;
  try {
    const payload = await verify(token, secret, "HS256");
    const parsed = TokenClaimsSchema.safeParse(payload);
    claims = parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
  if (claims === null) return null;
  if (verified.size >= VERIFIED_CACHE_SIZE) verified.delete(verified.keys().next().value!);
  verified.set(cacheKey, claims);
  return claims;
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
