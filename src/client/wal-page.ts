/** @module Reads a page of the WAL export (`GET .../wal?after_seq=`) into validated events, and follows pages to the end. */
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

/**
 * The events after `afterSeq` up to the last wal_seq the first page reports, read a page of at most `pageSize` at
 * a time through `readPage` (each page after the last event of the one before).
 */
export async function* followWalPages(readPage: (afterSeq: number, limit: number) => Promise<{ events: WalEvent[]; last_wal_seq: number }>, afterSeq: number, pageSize: number): AsyncGenerator<WalEvent, void, undefined> {
  let after = afterSeq;
  let end = Number.POSITIVE_INFINITY;
  while (after < end) {
    const page = await readPage(after, Math.min(pageSize, end - after));
    if (end === Number.POSITIVE_INFINITY) end = page.last_wal_seq;
    for (const event of page.events) {
      if (event.wal_seq > end) return;
      yield event;
    }
    if (page.events.length === 0) return;
    after = page.events.at(-1)!.wal_seq;
  }
}
