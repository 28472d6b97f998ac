/** @module Reads a page of the WAL export (`GET .../wal?after_seq=`) into validated events. */
import { parseWalJsonl, type WalEvent, WalEventSchema } from "../core/index.js";
import { unexpectedResponse } from "./errors.js";

/**
 * The events of a WAL export page. From the start (after_seq 0) it is `parseWalJsonl`, which checks every line
 * and that wal_seq runs 1, 2, 3…; a later page is checked the same way from `afterSeq + 1` (parseWalJsonl
 * expects the whole WAL). Any problem is an unexpected_response naming the line.
 */
export function parseWalPage(text: string, afterSeq: number): WalEvent[] {
  try {
    if (afterSeq === 0) return parseWalJsonl(text);
    const rows = text.split("\n");
    while (rows.length > 0 && rows[rows.length - 1]!.trim() === "") rows.pop();
    return rows.map((row, i) => {
      const event = WalEventSchema.parse(JSON.parse(row));
      if (event.wal_seq !== afterSeq + i + 1) throw new Error(`line ${i + 1}: wal_seq ${event.wal_seq} where ${afterSeq + i + 1} was expected`);
      return event;
    });
  } catch (cause) {
    throw unexpectedResponse(200, `the WAL export does not parse: ${cause instanceof Error ? cause.message : String(cause)}`, cause);
  }
}
