/**
 * @module Bounds on JSON: how deep a whole body or frame may nest, and how deep and how big a free-form value
 * (task or session `metadata`, a run's `result`) may be. One place for the concept: the routes check raw text
 * against MAX_DOCUMENT_DEPTH before JSON.parse, and every free-form field is checked with `jsonBoundsProblem`
 * (through the JSON value schemas in ../schemas/json-values.ts).
 *
 * Why: the Workers runtime serialises values recursively. Measured in workerd (the test pool's, 2026-04-20
 * compatibility date): structured clone, which every Worker ↔ Durable Object call uses for its arguments and
 * answers, throws "Maximum call stack size exceeded" at 2,548 levels of nested objects; JSON.stringify of a
 * WAL event (whose strings make V8 leave its iterative fast path) at about 5,070; JSON.parse never did, up to
 * 600,000. A value that was written but cannot be read back makes its task unreadable for good, so the bounds
 * sit far below the first break.
 */

/** Deepest nesting of a free-form value: `{}` or `[]` is 1, `{"a":{}}` is 2, a scalar 0. */
export const MAX_JSON_DEPTH = 32;
/** Largest free-form value: the UTF-8 bytes of its compact JSON text. */
export const MAX_JSON_BYTES = 65_536;
/**
 * Deepest nesting of a whole request body or socket frame. The deepest place a free-form value sits is a run
 * result in a socket frame's command body (frame, commands, command, body: 4 levels), so this must be at
 * least MAX_JSON_DEPTH + 4; 64 leaves room and is still 40 times below the first stack break.
 */
export const MAX_DOCUMENT_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;

/**
 * How deep JSON text nests, scanned without recursion and without parsing; stops counting once past
 * `stopAbove`. Exact for valid JSON (brackets inside strings do not count); for malformed text it is only a
 * number, and JSON.parse refuses the text anyway.
 */
export function jsonTextDepth(text: string, stopAbove: number): number {
  let depth = 0;
  let max = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = closingQuote(text, i);
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > max) {
        max = depth;
        if (max > stopAbove) return max;
      }
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
  }
  return max;
}

/** The index of the quote that closes the string opened at `open` (the text's length when none does). */
function closingQuote(text: string, open: number): number {
  let at = open;
  for (;;) {
    at = text.indexOf('"', at + 1);
    if (at === -1) return text.length;
    // An even run of backslashes before it escapes nothing: the quote closes the string.
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
}

/** How deep a parsed value nests, walked without recursion; stops counting once past `stopAbove`. */
export function jsonValueDepth(value: unknown, stopAbove: number): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (typeof node !== "object" || node === null) continue;
    if (depth > max) {
      max = depth;
      if (max > stopAbove) return max;
    }
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === "object" && child !== null) stack.push([child, depth + 1]);
    }
  }
  return max;
}

/** UTF-8 bytes of a string (JSON.stringify leaves no lone surrogates, so every pair is 4 bytes). */
export function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x80) bytes += c < 0x800 || (c >= 0xd800 && c <= 0xdfff) ? 1 : 2;
  }
  return bytes;
}

/** Why a free-form value is out of bounds, or null when it is within them. Depth first: only then is it stringified. */
export function jsonBoundsProblem(value: unknown): string | null {
  if (jsonValueDepth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) return `nested deeper than ${MAX_JSON_DEPTH} levels`;
  const text = JSON.stringify(value);
  // Three bytes per UTF-16 unit at most: a short text needs no count.
  if (text !== undefined && text.length * 3 > MAX_JSON_BYTES) {
    const bytes = utf8Length(text);
    if (bytes > MAX_JSON_BYTES) return `${bytes} bytes of JSON, over ${MAX_JSON_BYTES}`;
  }
  return null;
}

