/** @module Reads a page of the WAL export (`GET .../wal?after_seq=`) into events, and follows pages to the end. */
import { readWalJsonlLines, type WalEvent, walEnvelopeCheck, walEnvelopeProblem } from "../core/browser.js";
import { unexpectedResponse } from "./errors.js";

/**
 * The events of a WAL export page. Each line's envelope is checked (walEnvelopeCheck: the service checked every
 * field of the row against the WAL schema before it served it). From the start (after_seq 0) the lines are read
 * as a whole WAL (readWalJsonlLines: wal_seq runs 1, 2, 3…, one session and task); a later page is checked to run
 * from `afterSeq + 1`. Any problem is an unexpected_response naming the line.
 */
export function parseWalPage(text: string, afterSeq: number): WalEvent[] {
  try {
    if (afterSeq === 0) return readWalJsonlLines(text, walEnvelopeCheck).map((l) => l.event);
    const rows = text.split("\n");
    while (rows.length > 0 && rows[rows.length - 1]!.trim() === "") rows.pop();
    return rows.map((row, i) => {
      const value: unknown = JSON.parse(row);
      const problem = walEnvelopeProblem(value);
      if (problem !== null) throw new Error(`line ${i + 1}: not a WAL event: ${problem}`);
      const event = value as WalEvent;
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
