/** @module Request bodies: size limit, JSON parsing, zod validation, actor fields dropped, idempotency keys. */
import type { Context, MiddlewareHandler } from "hono";
import type { z } from "zod";
import { jsonTextDepth, MAX_DOCUMENT_DEPTH } from "../src/core/index.js";
import { readConfig } from "../src/env.js";
import { hashLanes } from "../src/hash.js";
import { hexOf } from "../src/hex.js";
import type { Idempotency } from "../durable-objects/idempotency-store.js";
import type { AppEnv } from "./auth.js";
import { fail } from "./http-error.js";

/** Actor fields a caller might send; identity comes from the token, so they are dropped, never trusted. */
export const ACTOR_FIELDS = ["actor_agent_id", "actor_run_id", "actor_role", "actor"] as const;

/**
 * The request's Content-Length, or null without one. Anything but digits (negative, fractional, hex, a list)
 * is validation_error: RFC 9110 §8.6 makes it unrecoverable, and Number() would read "-1" or "abc" as no limit.
 */
export function declaredLength(c: Context<AppEnv>): number | null {
  const raw = c.req.header("content-length");
  if (raw === undefined) return null;
  if (!/^\d+$/.test(raw)) fail("validation_error", "Content-Length must be a whole number of bytes", { content_length: raw.slice(0, 100) });
  return Number(raw);
}

/** Refuses a request with a malformed Content-Length before anything else reads it, whatever its route. */
export const requireValidContentLength: MiddlewareHandler<AppEnv> = async (c, next) => {
  declaredLength(c);
  await next();
};

/** The raw body text, within MAX_BODY_BYTES (413 payload_too_large otherwise). */
export async function readBodyText(c: Context<AppEnv>): Promise<string> {
  const max = readConfig(c.env).maxBodyBytes;
  const declared = declaredLength(c) ?? 0;
  if (declared > max) fail("payload_too_large", `the body is over ${max} bytes`, { limit: max });
  const text = await c.req.text();
  if (new TextEncoder().encode(text).length > max) fail("payload_too_large", `the body is over ${max} bytes`, { limit: max });
  return text;
}

/**
 * Parses the JSON text of a body or a socket frame (`what` names it in the message): nested deeper than
 * MAX_DOCUMENT_DEPTH or malformed is validation_error. Depth is checked on the raw text, before anything
 * (JSON.parse, zod, hashing, a call to an object) walks the value.
 */
export function parseJsonText(text: string, what = "the body"): unknown {
  const value = parseJsonTextIfValid(text, what);
  if (value === undefined) fail("validation_error", `${what} is not valid JSON`);
  return value;
}

/**
 * parseJsonText for a protocol that answers malformed JSON itself (MCP's JSON-RPC parse error): such text is
 * `undefined`; too deep, or a `__proto__` key, is still validation_error.
 */
export function parseJsonTextIfValid(text: string, what = "the body"): unknown {
  if (jsonTextDepth(text, MAX_DOCUMENT_DEPTH) > MAX_DOCUMENT_DEPTH) {
    fail("validation_error", `${what} is nested deeper than ${MAX_DOCUMENT_DEPTH} levels`, { max_depth: MAX_DOCUMENT_DEPTH });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  // Only text that spells "proto" or escapes a character can hold the key, so the walk is skipped on the hot
  // path (searching for "proto" costs a fifth of searching for "__proto__" in a frame full of underscores).
  if ((text.includes("proto") || text.includes("\\u")) && hasProtoKey(value)) {
    fail("validation_error", `${what} has a key named __proto__, which is not accepted anywhere`);
  }
  return value;
}

/**
 * True when a parsed value has an own `__proto__` key at any depth (walked without recursion). zod's records
 * drop such a key while strict objects refuse it, so the same body would be refused on its route and taken
 * with the key gone inside a batch command or in metadata: it is refused everywhere instead.
 */
function hasProtoKey(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== "object" || node === null) continue;
    if (!Array.isArray(node) && Object.hasOwn(node, "__proto__")) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push(child);
  }
  return false;
}

/** Parses JSON text; an empty body is `{}`; malformed or too deep JSON, or a non-object, is validation_error. */
export function parseJsonObject(text: string): Record<string, unknown> {
  if (text.trim() === "") return {};
  const value = parseJsonText(text);
  if (typeof value !== "object" || value === null || Array.isArray(value)) fail("validation_error", "the body must be a JSON object");
  return withoutActorFields(value as Record<string, unknown>);
}

/** A copy of a parsed body without the actor fields a caller may have sent. */
export function withoutActorFields(value: Record<string, unknown>): Record<string, unknown> {
  const body = { ...value };
  for (const field of ACTOR_FIELDS) delete body[field];
  return body;
}

/** Validates with zod; the first issues become one validation_error. */
export function validate<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 20).map((i) => ({ path: i.path.map(String).join("."), message: i.message }));
    fail("validation_error", issues.map((i) => (i.path === "" ? i.message : `${i.path}: ${i.message}`)).join("; "), { issues });
  }
  return parsed.data;
}

/** The request's Idempotency-Key and the requestHash of its method, path and body, or null without the header. */
export function idempotencyOf(c: Context<AppEnv>, bodyText: string): Idempotency | null {
  const key = c.req.header("idempotency-key");
  if (key === undefined) return null;
  if (key.length < 1 || key.length > 255) fail("validation_error", "Idempotency-Key must be 1 to 255 characters");
  return { key, hash: requestHash(c.req.method, new URL(c.req.url).pathname, bodyText) };
}

/**
 * What an Idempotency-Key is bound to: a 64-bit non-cryptographic hash of the request's method, path and body,
 * as "q1:" and 16 hex digits. It tells a retry from another request sent with the same key, which needs no
 * resistance to an attacker (a caller can only collide with their own keys), and is synchronous and about four
 * times cheaper than a SHA-256 through crypto.subtle (a step update's request, ≈ 170 characters: 1.7–2.3 µs
 * against 7–9 µs in workerd, ≈ 1.1 µs in Node 20, on a loaded 2-core machine). The prefix keeps it from ever
 * equalling a SHA-256 hex stored before it (idempotency-store.ts `sameRequest`) and names its version. It is
 * src/hash.ts `hashLanes` over the three, seeded with their lengths so where they meet is part of what is hashed.
 */
export function requestHash(method: string, path: string, bodyText: string): string {
  const [h1, h2] = hashLanes([method, path, bodyText], 0x811c9dc5 ^ method.length ^ (path.length << 8), 0x41c6ce57 ^ bodyText.length);
  return `q1:${hex8(h2)}${hex8(h1)}`;
}

function hex8(n: number): string {
  return (n >>> 0).toString(16).padStart(8, "0");
}

/**
 * SHA-256 (hex) of a method, path and body. Not an idempotency hash any more (requestHash is): ids derived from
 * it (a keyed session's id, an A2A message's task and thread) name stored sessions and tasks, so they must keep
 * coming out exactly as before.
 */
export async function sha256DerivedId(method: string, path: string, bodyText: string): Promise<string> {
  return hexOf(new Uint8Array(await crypto.subtle.digest("SHA-256", UTF8.encode(`${method} ${path}\n${bodyText}`))));
}

const UTF8 = new TextEncoder();

/** Reads, parses and validates a JSON body; returns it with its idempotency record. */
export async function readCommandBody<S extends z.ZodType>(c: Context<AppEnv>, schema: S): Promise<{ body: z.infer<S>; idem: Idempotency | null }> {
  const text = await readBodyText(c);
  const body = validate(schema, parseJsonObject(text));
  return { body, idem: idempotencyOf(c, text) };
}
