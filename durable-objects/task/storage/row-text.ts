/**
 * @module Text too long for one SQLite row, cut into parts that each fit one: a WAL commit's events or answers
 * (wal-store.ts) and a snapshot's JSON (snapshot-store.ts). Whatever the contract admits is stored this way; no
 * size surfaces as SQLITE_TOOBIG.
 */

/**
 * UTF-16 code units of text one row holds at most. A Durable Object's SQLite refuses a row (all its values together)
 * past its length limit with SQLITE_TOOBIG; measured, 2,200,000 bytes in the workerd `wrangler dev` runs (Cloudflare
 * documents 2 MB for deployed objects) and 8 MiB in the newer workerd of the test pool. A code unit is at most 3 bytes
 * of UTF-8 (a surrogate pair, two units, is 4), so 262,144 units are at most 768 KiB: under half the smallest limit,
 * with room for the row's other values, and a 10,000-step commit (about 6 MB of JSON) is a few dozen rows.
 */
export const ROW_TEXT_CHARS = 262_144;

/**
 * `text` in order, in parts of at most `maxChars` code units (one part when it fits). A cut never falls between the
 * two halves of a surrogate pair: SQLite stores UTF-8, in which a lone half is no character and would not come back.
 */
export function textParts(text: string, maxChars = ROW_TEXT_CHARS): string[] {
  if (text.length <= maxChars) return [text];
  const parts: string[] = [];
  for (let start = 0; start < text.length; ) {
    let end = Math.min(start + maxChars, text.length);
    // One unit short (a part of at least 2 units always keeps at least one), so the pair goes whole into the next.
    if (end < text.length && end - start > 1 && isHighSurrogate(text.charCodeAt(end - 1))) end--;
    parts.push(text.slice(start, end));
    start = end;
  }
  return parts;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
