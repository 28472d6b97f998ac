/**
 * @module Request bodies over HTTP: the size limit (before the body is read), the body text, its Idempotency-Key.
 * Parsing and validating the JSON is the commands' (durable-objects/commands/command-json.ts).
 */
import type { Context, MiddlewareHandler } from "hono";
import type { z } from "zod";
import { readConfig } from "../../durable-objects/shared/env.js";
import { parseJsonObject, validate } from "../../durable-objects/commands/command-json.js";
import { requestHash } from "../../src/lib/hash.js";
import type { Idempotency } from "../../durable-objects/task/storage/idempotency-store.js";
import type { AppEnv } from "./auth.js";
import { fail } from "../../durable-objects/shared/http-errors.js";

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

/** The request's Idempotency-Key and the requestHash of its method, path and body, or null without the header. */
export function idempotencyOf(c: Context<AppEnv>, bodyText: string): Idempotency | null {
  const key = c.req.header("idempotency-key");
  if (key === undefined) return null;
  if (key.length < 1 || key.length > 255) fail("validation_error", "Idempotency-Key must be 1 to 255 characters");
  return { key, hash: requestHash(c.req.method, new URL(c.req.url).pathname, bodyText) };
}

/** Reads, parses and validates a JSON body; returns it with its idempotency record. */
export async function readCommandBody<S extends z.ZodType>(c: Context<AppEnv>, schema: S): Promise<{ body: z.infer<S>; idem: Idempotency | null }> {
  const text = await readBodyText(c);
  const body = validate(schema, parseJsonObject(text));
  return { body, idem: idempotencyOf(c, text) };
}
