/**
 * @module A task object's large reads in flight: answers of more than LARGE_PAGE_ITEMS records, encoded once and
 * streamed out a chunk at a time as the reader takes them. Each holds its bytes until it is read to the end,
 * cancelled, or cut at its deadline, so their number (TASK_MAX_LARGE_READS) bounds what the object's answers
 * hold at once; past it a large read is refused with rate_limited before anything is built.
 */
import { rateLimited, type RuntimeError } from "../../src/core/index.js";
import { TokenSlots, tokenShareReached } from "../shared/token-slots.js";

/** Bytes handed to the reader per pull. */
const CHUNK_BYTES = 64 * 1024;
/** How soon a refused reader should try again: a read in flight usually ends well within it. */
export const LARGE_READ_RETRY_MS = 1_000;
/**
 * A large answer not taken by then is cut (the reader sees the body break off) and its slot freed. A client
 * that goes away is not reliably reported to the object (see sse-hub.ts), so without it a slot could be held
 * for as long as the object lives.
 */
export const LARGE_READ_DEADLINE_MS = 30_000;

/** The large reads of one object. */
export class LargeReads {
  private inFlight = 0;
  private readonly byToken = new TokenSlots();
  /** Counters for tests and diagnostics. */
  readonly stats = { started: 0, refused: 0, cut: 0 };

  constructor(
    private readonly maxConcurrent: number,
    /** Large reads one token may have in flight (its share of maxConcurrent). */
    private readonly maxPerToken: number = maxConcurrent,
  ) {}

  /** Large answers being read now. */
  get open(): number {
    return this.inFlight;
  }

  /** Null when a large read (by `token`, when known) may start; otherwise the rate_limited answer to give instead. */
  full(token?: string): RuntimeError | null {
    const held = token === undefined ? 0 : this.byToken.of(token);
    if (this.inFlight < this.maxConcurrent && held < this.maxPerToken) return null;
    this.stats.refused += 1;
    if (this.inFlight < this.maxConcurrent) return tokenShareReached("large_reads", "large reads", held, this.maxPerToken, LARGE_READ_RETRY_MS);
    return rateLimited(`${this.inFlight} large reads of this task are in flight (the most it serves at once); retry, or ask for a smaller page (limit)`, LARGE_READ_RETRY_MS, {
      limit: "large_reads",
      max: this.maxConcurrent,
    });
  }

  /** A stream of `bytes` (pulled a chunk at a time, nothing queued ahead) that holds one slot while it lasts. */
  stream(bytes: Uint8Array, token?: string): ReadableStream<Uint8Array> {
    this.inFlight += 1;
    if (token !== undefined) this.byToken.take(token);
    this.stats.started += 1;
    let data: Uint8Array | null = bytes;
    let at = 0;
    let deadline: ReturnType<typeof setTimeout> | undefined;
    const release = () => {
      if (data === null) return;
      data = null;
      clearTimeout(deadline);
      this.inFlight -= 1;
      if (token !== undefined) this.byToken.release(token);
    };
    return new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          deadline = setTimeout(() => {
            if (data === null) return;
            release();
            this.stats.cut += 1;
            controller.error(new Error(`the answer was not read within ${LARGE_READ_DEADLINE_MS} ms`));
          }, LARGE_READ_DEADLINE_MS);
        },
        pull: (controller) => {
          if (data === null) return;
          const end = Math.min(data.byteLength, at + CHUNK_BYTES);
          // A copy: the reader may transfer what it gets, which must not detach the rest.
          controller.enqueue(data.slice(at, end));
          at = end;
          if (at >= data.byteLength) {
            release();
            controller.close();
          }
        },
        cancel: () => release(),
      },
      { highWaterMark: 0 },
    );
  }
}
