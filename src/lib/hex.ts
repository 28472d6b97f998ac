/** @module Bytes as lowercase hex, shared by the service (request hashes) and the client (UUIDv7 keys). */

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

/** The two hex digits of each byte, in order. */
export function hexOf(bytes: Uint8Array): string {
  let hex = "";
  for (const byte of bytes) hex += HEX[byte];
  return hex;
}
