/**
 * @module Group commit, DataLoader-style: task writes issued in the same tick by any client sharing a
 * Transport are coalesced into one `POST .../tasks/{tid}/batch` per task (at most 256 commands). Each command
 * keeps its own token and Idempotency-Key and each caller gets its own answer or error.
 *
 * Why: one Worker → Durable Object round trip costs the same whether it carries one command or 256, and an
 * empty round trip tops out at a few hundred requests/s; many workers of one task writing at once is the
 * common case (a pool of workers completing and claiming).
 */
import type { BatchResult } from "../contract/index.js";
import { MAX_BATCH_COMMANDS } from "../contract/limits.js";
import { errorFromEnvelope, RuntimeApiError, unexpectedResponse } from "./errors.js";
import { abortReason, backoffDelay, type RetryPolicy } from "./retry.js";

/** One command of a batch request, as the batch route takes it. */
export interface BatchCommand {
  readonly token: string;
  readonly method: "POST" | "PATCH";
  readonly path: string;
  readonly body: Record<string, unknown>;
  readonly idempotency_key?: string;
}

/** A logical call waiting to be written: its command and how many times it has been tried. */
export interface QueuedCall {
  readonly command: BatchCommand;
  readonly signal: AbortSignal | undefined;
  /** Tries so far, this one included (the Transport's retry loop counts them). */
  readonly attempt: number;
  /** The caller's answer type has the task summary, so a socket frame carrying it must ask for `summary` (default true). */
  readonly summary?: boolean;
}

/** What the group commit needs from the Transport. */
export interface BatchSender {
  readonly retry: RetryPolicy;
  /** True when a lone command is cheaper as a one-command batch (over a command socket) than as its own request. */
  readonly loneWritesInBatches: boolean;
  /**
   * Into how many batches one tick's commands for this task are split (each of at least
   * MIN_COMMANDS_PER_SPLIT commands), sent back to back: 1 for requests, more over a command socket, where
   * the service decides one frame while this process reads the answers of the one before.
   */
  framesPerTick(taskPath: string): number;
  /** Sends one command as its own request (one try). */
  sendSingle(call: QueuedCall): Promise<unknown>;
  /**
   * Sends a batch request (one try): the results in order, or the error of the request as a whole. `summary`:
   * some command's caller needs the task summary in its answer.
   */
  sendBatch(taskPath: string, commands: readonly BatchCommand[], summary: boolean): Promise<BatchResult[]>;
}

/** Limits of one batch request. */
export interface BatchingOptions {
  /** Most commands per request (default and server maximum 256). */
  readonly maxCommands?: number;
  /** Most body bytes per request, approximately (default 512 KiB; the server refuses bodies over 1 MiB). */
  readonly maxBytes?: number;
}

interface Pending {
  readonly call: QueuedCall;
  readonly size: number;
  settled: boolean;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** Fewest commands in a batch split off a tick's writes: below it a frame's fixed cost outweighs the overlap. */
export const MIN_COMMANDS_PER_SPLIT = 8;

/**
 * Runs `fn` once the current macrotask and every microtask it queued are done. setImmediate where there is
 * one (Node): the same coalescing as setTimeout(0) (all microtasks run first) without Node's 1 ms timer
 * clamp, which a lone writer (one worker, nothing to coalesce) paid on every call. setTimeout(0) elsewhere.
 */
const nextMacrotask: (fn: () => void) => void =
  typeof setImmediate === "function"
    ? (fn) => {
        setImmediate(fn);
      }
    : (fn) => {
        setTimeout(fn, 0);
      };

/** Coalesces task writes of one tick into batch requests, per task. */
export class GroupCommit {
  private readonly queues = new Map<string, Pending[]>();
  private scheduled = false;
  private readonly maxCommands: number;
  private readonly maxBytes: number;

  constructor(
    private readonly sender: BatchSender,
    options: BatchingOptions = {},
  ) {
    this.maxCommands = Math.min(MAX_BATCH_COMMANDS, Math.max(1, options.maxCommands ?? MAX_BATCH_COMMANDS));
    this.maxBytes = Math.max(1_024, options.maxBytes ?? 512 * 1_024);
  }

  /** One try of a call: queued for the task's next batch; settles with its own answer or error. */
  submit(taskPath: string, call: QueuedCall): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const signal = call.signal;
      if (signal?.aborted === true) return reject(abortReason(signal));
      const onAbort = () => settle(pending, () => pending.reject(abortReason(signal!)));
      const pending: Pending = {
        call,
        size: commandSize(call.command),
        settled: false,
        resolve: (v) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(v);
        },
        reject: (e) => {
          signal?.removeEventListener("abort", onAbort);
          reject(e);
        },
      };
      // An aborted caller stops waiting at once; a request already sent may still write (as with fetch).
      signal?.addEventListener("abort", onAbort, { once: true });
      const queue = this.queues.get(taskPath);
      if (queue === undefined) this.queues.set(taskPath, [pending]);
      else queue.push(pending);
      // A macrotask, not a microtask: callers that await a few promises before writing still make this batch.
      if (!this.scheduled) {
        this.scheduled = true;
        nextMacrotask(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const queues = [...this.queues];
    this.queues.clear();
    for (const [taskPath, queue] of queues) {
      for (const chunk of this.chunks(queue.filter((p) => !p.settled), this.sender.framesPerTick(taskPath))) void this.send(taskPath, chunk);
    }
  }

  /**
   * Splits a queue into batches within maxCommands and maxBytes (a command over maxBytes goes alone), and
   * into up to `frames` batches of about equal size, at least MIN_COMMANDS_PER_SPLIT commands each. That
   * split keeps one caller's commands (one token) together in their order: split batches may still go as
   * concurrent requests (a socket that cannot be opened falls back to HTTP), which could reorder them.
   */
  private chunks(queue: Pending[], frames: number): Pending[][] {
    const parts = Math.max(1, Math.min(frames, Math.floor(queue.length / MIN_COMMANDS_PER_SPLIT)));
    const target = Math.ceil(queue.length / parts);
    const out: Pending[][] = [];
    let current: Pending[] = [];
    let bytes = 0;
    const cut = () => {
      out.push(current);
      current = [];
      bytes = 0;
    };
    for (const group of parts > 1 ? byToken(queue) : [queue]) {
      if (current.length > 0 && current.length + group.length > target && current.length >= MIN_COMMANDS_PER_SPLIT) cut();
      for (const p of group) {
        if (current.length > 0 && (current.length >= this.maxCommands || bytes + p.size > this.maxBytes)) cut();
        current.push(p);
        bytes += p.size;
      }
    }
    if (current.length > 0) out.push(current);
    return out;
  }

  private async send(taskPath: string, items: Pending[]): Promise<void> {
    // A lone write goes as itself over HTTP: same answer, one less layer, its real status code.
    if (items.length === 1 && !this.sender.loneWritesInBatches) return this.sendEach(items);
    let results: BatchResult[];
    try {
      results = await this.sender.sendBatch(
        taskPath,
        items.map((p) => p.call.command),
        items.some((p) => p.call.summary !== false),
      );
      if (!Array.isArray(results) || results.length !== items.length) throw unexpectedResponse(200, `the batch answered ${Array.isArray(results) ? results.length : "no"} results for ${items.length} commands`);
    } catch (e) {
      if (e instanceof RuntimeApiError && e.retryable) {
        // The batch failed as a whole: nothing or everything was written; every command retries with its
        // own Idempotency-Key after one shared delay, so they come back in one batch again.
        const attempt = Math.max(...items.map((p) => p.call.attempt));
        const error = e.withRetryAfter(Math.max(e.retryAfterMs ?? 0, backoffDelay(attempt, this.sender.retry)));
        for (const p of items) settle(p, () => p.reject(error));
      } else if (e instanceof RuntimeApiError && e.code !== "unexpected_response") {
        // The request as a whole was refused before any command ran (the batch's own token, size, an older
        // server without the route): each command answers for itself instead.
        await this.sendEach(items);
      } else {
        for (const p of items) settle(p, () => p.reject(e));
      }
      return;
    }
    items.forEach((p, n) => {
      const r: unknown = results[n];
      if (typeof r !== "object" || r === null || typeof (r as BatchResult).ok !== "boolean") return settle(p, () => p.reject(unexpectedResponse(200, `batch result ${n} is not {ok, status, body}`)));
      const { ok, status, body } = r as BatchResult;
      settle(p, () => (ok ? p.resolve(body) : p.reject(errorFromEnvelope(status, body))));
    });
  }

  private async sendEach(items: Pending[]): Promise<void> {
    await Promise.all(
      items.map(async (p) => {
        if (p.settled) return;
        try {
          const value = await this.sender.sendSingle(p.call);
          settle(p, () => p.resolve(value));
        } catch (e) {
          settle(p, () => p.reject(e));
        }
      }),
    );
  }
}

/** A command's size in a batch body, to within a few bytes (only the body needs serialising to know it). */
function commandSize(c: BatchCommand): number {
  return 64 + c.token.length + c.path.length + (c.idempotency_key?.length ?? 0) + JSON.stringify(c.body).length;
}

/** The queue's commands grouped by token, groups in the order their first command came, each in order. */
function byToken(queue: readonly Pending[]): Pending[][] {
  const groups = new Map<string, Pending[]>();
  for (const p of queue) {
    const group = groups.get(p.call.command.token);
    if (group === undefined) groups.set(p.call.command.token, [p]);
    else group.push(p);
  }
  return [...groups.values()];
}

function settle(p: Pending, action: () => void): void {
  if (p.settled) return;
  p.settled = true;
  action();
}
