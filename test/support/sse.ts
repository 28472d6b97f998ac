/** @module An SSE reader for the service tests: opens a stream through SELF, parses frames, every wait bounded. */
import { SELF } from "cloudflare:test";
import { expect } from "vitest";
import { BASE } from "./support.js";

/** One frame as the SSE format defines it (comments kept apart). */
export interface SseFrame {
  readonly id?: string;
  readonly event?: string;
  readonly data: string;
}

/** How long a test waits for one frame before failing. */
export const FRAME_TIMEOUT_MS = 3_000;

/** Reads an event-stream body frame by frame; a heartbeat comment is counted, not returned. */
export class SseReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();
  private buffer = "";
  private pending: Promise<ReadableStreamReadResult<Uint8Array>> | null = null;
  private ended = false;
  /** Heartbeat comments seen so far. */
  heartbeats = 0;
  /** Every byte received, as text. */
  raw = "";

  constructor(readonly response: Response) {
    expect(response.body).not.toBeNull();
    this.reader = response.body!.getReader();
  }

  /** The next frame, null when the stream ended; throws when none arrives within `timeoutMs`. */
  async next(timeoutMs = FRAME_TIMEOUT_MS): Promise<SseFrame | null> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const frame = this.parseOne();
      if (frame !== undefined) return frame;
      if (this.ended) return null;
      const left = until - Date.now();
      if (left <= 0) throw new Error(`no SSE frame within ${timeoutMs} ms (buffer: ${JSON.stringify(this.buffer.slice(0, 200))})`);
      this.pending ??= this.reader.read();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), left)));
      const result = await Promise.race([this.pending, timeout]);
      clearTimeout(timer);
      if (result === "timeout") continue;
      this.pending = null;
      if (result.done) this.ended = true;
      else {
        const text = this.decoder.decode(result.value, { stream: true });
        this.raw += text;
        this.buffer += text;
      }
    }
  }

  /** The next `n` frames (fails if the stream ends first). */
  async take(n: number, timeoutMs = FRAME_TIMEOUT_MS): Promise<SseFrame[]> {
    const out: SseFrame[] = [];
    while (out.length < n) {
      const frame = await this.next(timeoutMs);
      if (frame === null) throw new Error(`the stream ended after ${out.length} of ${n} frames`);
      out.push(frame);
    }
    return out;
  }

  /** Every frame until the stream ends. */
  async rest(timeoutMs = FRAME_TIMEOUT_MS): Promise<SseFrame[]> {
    const out: SseFrame[] = [];
    for (;;) {
      const frame = await this.next(timeoutMs);
      if (frame === null) return out;
      out.push(frame);
    }
  }

  /** Frames until (and including) one for which `stop` holds. */
  async until(stop: (f: SseFrame) => boolean, timeoutMs = FRAME_TIMEOUT_MS): Promise<SseFrame[]> {
    const out: SseFrame[] = [];
    for (;;) {
      const frame = await this.next(timeoutMs);
      if (frame === null) throw new Error(`the stream ended before the awaited frame (after ${out.length} frames)`);
      out.push(frame);
      if (stop(frame)) return out;
    }
  }

  /** Asserts that no frame (heartbeats aside) arrives within `ms`. */
  async expectQuiet(ms: number): Promise<void> {
    let frame: SseFrame | null | undefined;
    try {
      frame = await this.next(ms);
    } catch {
      return;
    }
    expect.fail(`expected no frame, got ${JSON.stringify(frame)}`);
  }

  /** Drops the connection (the client goes away). */
  async cancel(): Promise<void> {
    this.ended = true;
    await this.reader.cancel().catch(() => undefined);
  }

  /** Parses one complete frame from the buffer; heartbeat-only blocks are counted and skipped. */
  private parseOne(): SseFrame | undefined {
    for (;;) {
      const end = this.buffer.indexOf("\n\n");
      if (end < 0) return undefined;
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      let id: string | undefined;
      let event: string | undefined;
      const data: string[] = [];
      let fields = 0;
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) {
          if (line === ": heartbeat") this.heartbeats += 1;
          continue;
        }
        const colon = line.indexOf(":");
        const name = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        fields += 1;
        if (name === "id") id = value;
        else if (name === "event") event = value;
        else if (name === "data") data.push(value);
      }
      if (fields === 0) continue;
      return { ...(id === undefined ? {} : { id }), ...(event === undefined ? {} : { event }), data: data.join("\n") };
    }
  }
}

/** Opens an event stream; expects 200 text/event-stream. */
export async function openStream(path: string, token: string | null, headers: Record<string, string> = {}): Promise<SseReader> {
  const res = await SELF.fetch(`${BASE}${path}`, { headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...headers } });
  if (res.status !== 200) throw new Error(`stream ${path} answered ${res.status}: ${await res.text()}`);
  expect(res.headers.get("content-type")).toBe("text/event-stream");
  expect(res.headers.get("cache-control")).toBe("no-cache");
  return new SseReader(res);
}

/** The runtime event a frame carries. */
export function eventOf(frame: SseFrame): any {
  return JSON.parse(frame.data);
}
