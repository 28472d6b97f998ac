/**
 * @module A reconnecting Server-Sent Events subscription over fetch streaming (no EventSource: it runs in
 * Workers and Node and sends the Authorization header). On a dropped connection — a stream error, or a close
 * without the end frame — it reconnects with `Last-Event-ID` set to the last id it delivered, with backoff,
 * and drops any frame whose id is not after that one: the consumer sees every event once, in order.
 */
import { runtimeSequence } from "../core/browser.js";
import { networkError, RuntimeApiError, unexpectedResponse } from "./errors.js";
import { backoffDelay, linkedController, type RetryOptions, retryAfterDelay, retryPolicy, sleep } from "./retry.js";
import { type SseFrame, SseParser } from "../lib/sse-parser.js";

/** Options of `subscribe` and `subscribeSession`. */
export interface SubscribeOptions {
  /** First connection: events after this wal_seq (`?after_seq=`); ignored when `lastEventId` is given. */
  readonly afterSeq?: number;
  /** First connection: resume after this event id (`Last-Event-ID`: a runtime event's sequence, a session log seq). */
  readonly lastEventId?: string;
  /** Ends the iteration (quietly) and closes the connection. */
  readonly signal?: AbortSignal;
  /**
   * Reconnection backoff: `attempts` is how many connections in a row may fail before the iterator throws
   * (default unlimited), from 250 ms doubling to 10 s, jittered. A `retry:` field from the server sets the base;
   * a refused open's Retry-After (429: the stream has its most subscribers) is waited out whole.
   */
  readonly reconnect?: RetryOptions;
  /** Reconnect when nothing, not even a heartbeat, arrives for this long (default 60,000 ms; 0: never). */
  readonly idleTimeoutMs?: number;
}

/** Opens one connection: resume after `lastEventId` when set. */
export type OpenStream = (lastEventId: string | undefined, signal: AbortSignal) => Promise<Response>;

/** How a stream's frames become values, and which event type ends it. */
export interface StreamDecoder<T, E> {
  readonly decode: (frame: SseFrame) => T;
  /** The event type of the final frame (`end`), or null for a stream that never ends by itself. */
  readonly endEvent: string | null;
  readonly decodeEnd: (frame: SseFrame) => E;
}

const DEFAULT_RECONNECT = { attempts: Number.POSITIVE_INFINITY, baseDelayMs: 250, maxDelayMs: 10_000 };

/**
 * The position an id stands for: `N` is N (a runtime event's sequence, a session log seq); a legacy task
 * stream id `N.k` (sent before ids were sequences, and perhaps still held as a resume point) is the sequence
 * it names. Undefined for any other id.
 */
function idPosition(id: string): number | undefined {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(id);
  if (m === null) return undefined;
  return m[2] === undefined ? Number(m[1]) : runtimeSequence(Number(m[1]), Number(m[2]));
}

/** True unless both ids are positions and `id` is not after `last` (a frame the consumer already saw). */
export function isAfterId(id: string, last: string | undefined): boolean {
  if (last === undefined) return true;
  const a = idPosition(id);
  const b = idPosition(last);
  if (a === undefined || b === undefined) return true;
  return a > b;
}

/** Reads a chunk, or fails as a dropped connection when nothing arrives within `ms`. */
async function readOrIdle(reader: ReadableStreamDefaultReader<Uint8Array>, ms: number): Promise<ReadableStreamReadResult<Uint8Array>> {
  if (ms <= 0) return reader.read();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const idle = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(networkError(`no data for ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([reader.read(), idle]);
  } finally {
    clearTimeout(timer);
  }
}

/** An async iterable of a stream's events; iterate it once (`for await`), or `close()` it. */
export class EventSubscription<T, E = never> implements AsyncIterable<T> {
  /** The id of the last event delivered: pass it as `lastEventId` to resume later. */
  lastEventId: string | undefined;
  /** The end frame's data once the stream ended by itself (a task stream: the task is terminal). */
  end: E | undefined = undefined;
  /** Connections opened after the first. */
  reconnects = 0;
  private readonly controller: AbortController;
  private readonly unlink: () => void;
  private iterator: AsyncGenerator<T, void, undefined> | undefined;

  constructor(
    private readonly open: OpenStream,
    private readonly decoder: StreamDecoder<T, E>,
    private readonly options: SubscribeOptions = {},
  ) {
    this.lastEventId = options.lastEventId;
    ({ controller: this.controller, unlink: this.unlink } = linkedController(options.signal));
  }

  /** Stops the subscription: the iteration ends and the connection closes. */
  close(): void {
    this.controller.abort();
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    this.iterator ??= this.run();
    return this.iterator;
  }

  private async *run(): AsyncGenerator<T, void, undefined> {
    const signal = this.controller.signal;
    const policy = retryPolicy(this.options.reconnect, DEFAULT_RECONNECT);
    const idleMs = this.options.idleTimeoutMs ?? 60_000;
    let failures = 0;
    let baseDelayMs = policy.baseDelayMs;
    /** Waits before reconnecting (a server's Retry-After whole); false when aborted meanwhile. */
    const pause = async (retryAfterMs?: number): Promise<boolean> => {
      try {
        await sleep(retryAfterMs === undefined ? backoffDelay(failures, { ...policy, baseDelayMs }) : retryAfterDelay(retryAfterMs), signal);
        return true;
      } catch {
        return false;
      }
    };
    try {
      for (let first = true; !signal.aborted; first = false) {
        if (!first) this.reconnects += 1;
        let res: Response;
        try {
          res = await this.open(this.lastEventId, signal);
        } catch (e) {
          if (signal.aborted) return;
          if (!(e instanceof RuntimeApiError) || !e.retryable || ++failures >= policy.attempts) throw e;
          if (!(await pause(e.retryAfterMs))) return;
          continue;
        }
        const parser = new SseParser();
        const reader = res.body?.getReader();
        let dropped: unknown = networkError("the event stream closed without its end frame");
        if (reader !== undefined) {
          const decoder = new TextDecoder();
          const onAbort = () => void reader.cancel().catch(() => undefined);
          signal.addEventListener("abort", onAbort, { once: true });
          try {
            for (;;) {
              const chunk = await readOrIdle(reader, idleMs);
              if (chunk.done) break;
              // Bytes arrived (events or heartbeats): this connection was healthy, whatever ends it later.
              failures = 0;
              for (const frame of parser.push(decoder.decode(chunk.value, { stream: true }))) {
                if (signal.aborted) return;
                if (this.decoder.endEvent !== null && frame.event === this.decoder.endEvent) {
                  this.end = this.decoder.decodeEnd(frame);
                  return;
                }
                if (frame.id !== undefined && !isAfterId(frame.id, this.lastEventId)) continue;
                const value = this.decoder.decode(frame);
                if (frame.id !== undefined) this.lastEventId = frame.id;
                yield value;
              }
            }
          } catch (e) {
            if (signal.aborted) return;
            // A frame we cannot read is the server's bug: reconnecting would read it again.
            if (e instanceof RuntimeApiError && !e.retryable) throw e;
            dropped = e;
          } finally {
            signal.removeEventListener("abort", onAbort);
            void reader.cancel().catch(() => undefined);
          }
        }
        if (signal.aborted) return;
        if (parser.retryMs !== undefined) baseDelayMs = parser.retryMs;
        if (++failures >= policy.attempts) throw dropped instanceof RuntimeApiError ? dropped : networkError(dropped);
        if (!(await pause())) return;
      }
    } finally {
      this.unlink();
      this.controller.abort();
    }
  }
}

/** Parses a frame's JSON data; a frame that is not JSON is an unexpected response. */
export function frameJson(frame: SseFrame): unknown {
  try {
    return JSON.parse(frame.data);
  } catch (cause) {
    throw unexpectedResponse(200, `event ${frame.id ?? "(no id)"} (${frame.event}) has data that is not JSON`, cause);
  }
}
