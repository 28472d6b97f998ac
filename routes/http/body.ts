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
import { utf8Length } from "../../src/core/index.js";
import type { Idempotency } from "../../durable-objects/task/storage/idempotency-store.js";
import { type AppEnv, inProcessOf } from "./auth.js";
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

/** Bodies readWithin stopped reading past the limit, for discardUnreadBody to drain and cut once the answer is made. */
const partlyRead = new WeakMap<Request, { readonly reader: ReadableStreamDefaultReader<Uint8Array>; readonly read: number }>();

/**
 * A request's body as text, read no further than `max` bytes: a declared Content-Length over it is refused before
 * a byte is read, one within it is read whole (HTTP framing delivers no more than it declares); a body without one
 * (chunked) is read chunk by chunk, counting, and kept no further than the count passing `max`, so a hostile body
 * costs at most the limit and one chunk of memory; what is left is discardUnreadBody's, which the app runs on every
 * request. The bytes are decoded once, at the end. A malformed Content-Length is the caller's to refuse first
 * (declaredLength), as every route does.
 */
export async function readWithin(request: Request, max: number): Promise<BoundedText> {
  const raw = request.headers.get("content-length");
  const declared = raw !== null && /^\d+$/.test(raw) ? Number(raw) : null;
  if (declared !== null && declared > max) return { ok: false, limit: max };
  if (request.body === null) return { ok: true, text: "" };
  // A declared length within the limit bounds the body (HTTP framing delivers no more): read whole, in one call.
  if (declared !== null) return { ok: true, text: await request.text() };
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      // The rest is discardUnreadBody's: drained a little further, dropped, then cut (see there).
      partlyRead.set(request, { reader, read: total });
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
 * How much refused bodies, all of this isolate's together, are drained at once: this many times MAX_BODY_BYTES.
 * Dropped bytes still cost memory until collected (measured with bench:hostile-bodies: 8 clients each drained
 * 8 × the limit at once took workerd's RSS 150 MiB above idle, against 28 MiB at 1 ×), so the allowance is shared:
 * one client a little over the limit has all of it, a crowd of hostile ones none left over.
 */
const DRAIN_BODIES = 4;

/** Bytes of refused bodies this isolate is draining right now, against DRAIN_BODIES × MAX_BODY_BYTES. */
let drainingBytes = 0;

/**
 * The unread rest of a request's body once its answer is made (refused for its token, its role, its size):
 * drained, its bytes dropped, within what is left of the isolate's shared allowance (DRAIN_BODIES ×
 * MAX_BODY_BYTES) and DRAIN_MS, then cancelled, and only then is the answer sent. Left alone, workerd takes in the
 * whole upload before the answer leaves; cut at once, the bytes the server never read make the client's connection
 * reset before it reads the answer, however small its body (measured under wrangler dev: about half the clients
 * sending 1.5 to 8 MiB with a Content-Length got a reset or the dev proxy's 503 instead of the 413). Draining keeps
 * nothing, so an ordinary body a little over the limit gets a clean 413 and a hostile one costs time; a body
 * declared past the allowance is cut unread.
 */
export const discardUnreadBody: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  const request = c.req.raw;
  const partly = partlyRead.get(request);
  if (partly === undefined && (request.body === null || request.bodyUsed)) return;
  const reader = partly?.reader ?? request.body!.getReader();
  const raw = request.headers.get("content-length");
  const declaredRest = raw !== null && /^\d+$/.test(raw) ? Number(raw) - (partly?.read ?? 0) : Infinity;
  const free = DRAIN_BODIES * readConfig(c.env).maxBodyBytes - drainingBytes;
  if (declaredRest > free && Number.isFinite(declaredRest)) return void reader.cancel().catch(() => undefined);
  const allowance = Math.min(declaredRest, free);
  if (allowance <= 0) return void reader.cancel().catch(() => undefined);
  drainingBytes += allowance;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), DRAIN_MS)));
  try {
    for (let drained = 0; ; ) {
      const read = await Promise.race([reader.read(), late]);
      if (read === "late" || (!read.done && (drained += read.value.byteLength) > allowance)) return void reader.cancel().catch(() => undefined);
      if (read.done) return;
    }
  } catch {
    // The client went away: nothing left to drain.
  } finally {
    drainingBytes -= allowance;
    clearTimeout(timer);
  }
};

/** The raw body text, within MAX_BODY_BYTES (413 payload_too_large otherwise, answered before the rest is read). */
export async function readBodyText(c: Context<AppEnv>): Promise<string> {
  declaredLength(c);
  const max = readConfig(c.env).maxBodyBytes;
  // A request the app made of itself carries its body as text (inProcessRequest): bounded the same, not read again.
  const made = inProcessOf(c.req.raw);
  const body: BoundedText = made === undefined ? await readWithin(c.req.raw, max) : utf8Length(made.body) > max ? { ok: false, limit: max } : { ok: true, text: made.body };
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
