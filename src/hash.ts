/**
 * @module Non-cryptographic 64-bit string hashes, for telling requests and keys apart (a caller can only collide with
 * their own), not for resisting an attacker: request hashes (routes/body.ts) and Idempotency-Key fingerprints
 * (durable-objects/idempotency-store.ts).
 */

/**
 * Two 32-bit multiply-xor lanes over the UTF-16 code units of `texts` in order (a string is its code units, so no
 * character is lost), from the given seeds, each finished with a mix of both so every input bit reaches every output
 * bit.
 */
export function hashLanes(texts: readonly string[], seed1: number, seed2: number): [number, number] {
  let h1 = seed1;
  let h2 = seed2;
  for (const text of texts) {
    for (let i = 0; i < text.length; i++) {
      const ch = text.charCodeAt(i);
      h1 = Math.imul(h1 ^ ch, 2654435761);
      h2 = Math.imul(h2 ^ ch, 1597334677);
    }
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return [h1, h2];
}
