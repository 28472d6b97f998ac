/**
 * @module Request bodies over HTTP: the size limit (counted as the body streams, cut where it is passed), the body
 * text, its Idempotency-Key. Every route that reads a body (/v1, /mcp, /a2a) reads it here.
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

/** What readWithin found: the body's text, or that it is over the limit (nothing more was read). */
export type BoundedText = { readonly ok: true; readonly text: string } | { readonly ok: false; readonly limit: number };

const UTF8 = new TextDecoder();

/**
 * A request's body as text, read no further than `max` bytes: a declared Content-Length over it is refused before
 * a byte is read; otherwise the stream is read chunk by chunk, counting, and cancelled as soon as the count
 * passes `max` (a chunked body declares no length), so a hostile body costs at most the limit and one chunk of
 * memory. The bytes are decoded once, at the end. A malformed Content-Length is the caller's to refuse first
 * (declaredLength), as every route does.
 */
export async function readWithin(request: Request, max: number): Promise<BoundedText> {
  const raw = request.headers.get("content-length");
  if (raw !== null && /^\d+$/.test(raw) && Number(raw) > max) return { ok: false, limit: max };
  if (request.body === null) return { ok: true, text: "" };
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      // Not awaited: the answer goes out now, whatever the client still sends.
      reader.cancel().catch(() => undefined);
      return { ok: false, limit: max };
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return { ok: true, text: UTF8.decode(chunks[0]) };
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return { ok: true, text: UTF8.decode(bytes) };
}

/** How long the unread body of a refused request is drained before it is cut. */
const DRAIN_MS = 1_000;

/**
 * The unread body of a request answered without reading it (refused for its token, its role, its declared
 * length): drained, its bytes dropped, up to MAX_BODY_BYTES and DRAIN_MS, then cancelled. Left alone, workerd takes
 * in the whole upload before the answer leaves; cancelled at once, a client whose bytes the server never read may
 * find its connection reset before it reads the answer, however small its body. A body declared over the limit
 * is cancelled without reading.
 */
export const discardUnreadBody: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  const request = c.req.raw;
  if (request.body === null || request.bodyUsed) return;
  const reader = request.body.getReader();
  const max = readConfig(c.env).maxBodyBytes;
  const raw = request.headers.get("content-length");
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), DRAIN_MS)));
  try {
    if (raw !== null && /^\d+$/.test(raw) && Number(raw) > max) return void reader.cancel().catch(() => undefined);
    for (let total = 0; ; ) {
      const read = await Promise.race([reader.read(), late]);
      if (read === "late" || (!read.done && (total += read.value.byteLength) > max)) return void reader.cancel().catch(() => undefined);
      if (read.done) return;
    }
  } catch {
    // The client went away: nothing left to drain.
  } finally {
    clearTimeout(timer);
  }
};

/** The raw body text, within MAX_BODY_BYTES (413 payload_too_large otherwise, answered before the rest is read). */
export async function readBodyText(c: Context<AppEnv>): Promise<string> {
  declaredLength(c);
  const body = await readWithin(c.req.raw, readConfig(c.env).maxBodyBytes);
  if (!body.ok) fail("payload_too_large", `the body is over ${body.limit} bytes`, { limit: body.limit });
  return body.text;
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
