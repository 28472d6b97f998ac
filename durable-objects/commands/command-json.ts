/**
 * @module The JSON of a command, however it arrives (an HTTP body, a batch command, a socket frame): parsed with
 * its depth checked first, actor fields dropped, validated with zod into one validation_error.
 */
import type { z } from "zod";
import { jsonTextDepth, MAX_DOCUMENT_DEPTH } from "../../src/core/index.js";
import { fail } from "../shared/http-errors.js";

/** Actor fields a caller might send; identity comes from the token, so they are dropped, never trusted. */
export const ACTOR_FIELDS = ["actor_agent_id", "actor_run_id", "actor_role", "actor"] as const;

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

/** Whether a parsed JSON value is an object (not null, not an array). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Parses JSON text; an empty body is `{}`; malformed or too deep JSON, or a non-object, is validation_error. */
export function parseJsonObject(text: string): Record<string, unknown> {
  if (text.trim() === "") return {};
  const value = parseJsonText(text);
  if (!isPlainObject(value)) fail("validation_error", "the body must be a JSON object");
  return withoutActorFields(value);
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
