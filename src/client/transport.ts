/**
 * @module The HTTP transport every client of one family shares: base URL, fetch, retries with one
 * Idempotency-Key per logical call, and the group commit that batches task writes. Fetch only, so it runs in
 * Node 20, browsers and Workers.
 */
import { errorFromResponse, networkError, RuntimeApiError, unexpectedResponse } from "./errors.js";
import { CommandSocket, type CommandSocketOptions, SocketUnavailable, socketOpener, type WebSocketLike } from "./command-socket.js";
import type { BatchResult } from "../contract/index.js";
import { type BatchCommand, type BatchingOptions, type BatchSender, GroupCommit, type QueuedCall } from "./group-commit.js";
import { batchTarget, queryString, type QueryValue } from "./paths.js";
import { abortReason, backoffDelay, type RetryOptions, type RetryPolicy, retryPolicy, sleep } from "./retry.js";
import { hexOf } from "../lib/hex.js";

/** The fetch the client calls: the global one by default; a Worker's service binding or a test double otherwise. */
export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

/** How a Transport talks to the runtime. */
export interface TransportOptions {
  /** The runtime's origin, e.g. `https://tasks.example.com` (a trailing slash is ignored). */
  readonly baseUrl: string;
  /** The fetch to call (default: the global fetch). */
  readonly fetch?: FetchLike;
  /** Retries of 429, 503 and network failures (default: 3 tries, 100 ms doubling, jittered). */
  readonly retry?: RetryOptions;
  /** Group commit of task writes issued in the same tick (default on; `false` sends every write alone). */
  readonly batching?: boolean | BatchingOptions;
  /**
   * Send group-committed batches over each task's command socket (one WebSocket per task) instead of one
   * `POST .../batch` each (default off). Where a socket cannot be opened, batches go over HTTP and the socket
   * is tried again after 30 s. Call `close()` when done so open sockets do not hold the process.
   */
  readonly socket?: boolean | CommandSocketOptions;
}

/** How long a task whose socket could not be opened sends its batches over HTTP before trying again. */
const SOCKET_RETRY_MS = 30_000;
/**
 * Default frames per tick over a socket (CommandSocketOptions.framesPerTick). 32 workers on one task,
 * `npm run bench:socket`: 3 beat 1 by 2–10 % in steps/s (2 and 4 did worse than 3), for about a quarter
 * more of the task object's CPU per step (a frame costs it ≈ 0.2 ms whatever it carries).
 */
const SOCKET_FRAMES_PER_TICK = 3;

/** One API call as a client method describes it. */
export interface ApiRequest {
  readonly method: "GET" | "POST" | "PATCH" | "DELETE";
  /** The path, starting with `/v1/...`, its segments already encoded. */
  readonly path: string;
  readonly token: string | undefined;
  readonly query?: Readonly<Record<string, QueryValue>>;
  /** JSON body of a POST/PATCH (`{}` when absent, so a retry and a batched send hash the same body). */
  readonly body?: object;
  readonly signal?: AbortSignal;
  readonly idempotencyKey?: string;
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * The caller's answer type leaves out the task summary (StepWriteAnswer): sent over a command socket, its
   * frame may ask for lean answers. Any other write makes its frame ask for `summary`.
   */
  readonly lean?: boolean;
}

/**
 * A fresh Idempotency-Key: a UUIDv7 (RFC 9562), 48 bits of Unix milliseconds then 74 random bits. Time-ordered
 * keys land at the end of the service's key index, where a batch's keys share a page or two; random (v4)
 * keys each touched a page of their own, which the task object then wrote out on every commit.
 */
export function newIdempotencyKey(nowMs: number = Date.now()): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let ms = Math.max(0, Math.floor(nowMs));
  for (let i = 5; i >= 0; i--) {
    bytes[i] = ms % 256;
    ms = Math.floor(ms / 256);
  }
  bytes[6] = 0x70 | (bytes[6]! & 0x0f); // version 7
  bytes[8] = 0x80 | (bytes[8]! & 0x3f); // variant 10
  const hex = hexOf(bytes);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Sends API calls with retries; shared by a RuntimeClient, the clients `withToken` makes, and its workers. */
export class Transport implements BatchSender {
  readonly baseUrl: string;
  readonly retry: RetryPolicy;
  private readonly fetchFn: FetchLike;
  private readonly groupCommit: GroupCommit | null;
  /** With the `socket` option: how to open a task's socket, and each task's socket or when to try it again. */
  private readonly sockets: {
    readonly open: (url: string) => Promise<WebSocketLike>;
    readonly idleMs: number;
    readonly framesPerTick: number;
    readonly summaries: boolean;
    readonly byTask: Map<string, CommandSocket>;
    readonly downUntil: Map<string, number>;
  } | null;

  constructor(options: TransportOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.retry = retryPolicy(options.retry);
    // Called unbound, the global fetch throws "Illegal invocation" in Workers: wrap it.
    this.fetchFn = options.fetch ?? ((input, init) => fetch(input, init));
    const batching = options.batching ?? true;
    this.groupCommit = batching === false ? null : new GroupCommit(this, batching === true ? {} : batching);
    const socket = options.socket ?? false;
    const socketOptions = socket === true ? {} : socket === false ? null : socket;
    this.sockets =
      socketOptions === null
        ? null
        : {
            open: socketOpener(this.fetchFn, socketOptions),
            idleMs: socketOptions.idleMs ?? 10_000,
            framesPerTick: Math.max(1, Math.floor(socketOptions.framesPerTick ?? SOCKET_FRAMES_PER_TICK)),
            summaries: socketOptions.summaries === true,
            byTask: new Map(),
            downUntil: new Map(),
          };
  }

  /** Closes every command socket (frames in flight fail with a retryable network_error). */
  close(): void {
    for (const socket of this.sockets?.byTask.values() ?? []) socket.close();
    this.sockets?.byTask.clear();
  }

  /** Over a command socket a one-command frame costs less than a request of its own. */
  get loneWritesInBatches(): boolean {
    return this.sockets !== null;
  }

  /** Frames per tick over a task's command socket; 1 over HTTP. */
  framesPerTick(taskPath: string): number {
    return this.socketsFor(taskPath)?.framesPerTick ?? 1;
  }

  /** The socket settings when this task's batches go over its socket: sockets on, and not down lately. */
  private socketsFor(taskPath: string): NonNullable<Transport["sockets"]> | null {
    const sockets = this.sockets;
    return sockets !== null && (sockets.downUntil.get(taskPath) ?? 0) <= Date.now() ? sockets : null;
  }

  /** True when task writes are group-committed. */
  get batching(): boolean {
    return this.groupCommit !== null;
  }

  /**
   * A call answered with JSON, retried per the policy. A mutating call gets one Idempotency-Key for all its
   * tries, so a retry after a lost answer returns the first answer and writes nothing twice. Task writes join
   * the task's next batch when group commit is on.
   */
  json<T>(req: ApiRequest): Promise<T> {
    const key = req.method === "GET" ? undefined : (req.idempotencyKey ?? newIdempotencyKey());
    const target = this.groupCommit !== null && req.token !== undefined && req.query === undefined && req.headers === undefined ? batchTarget(req.method, req.path) : null;
    if (target === null) return this.withRetry(req.signal, () => this.once(req, key, readJson<T>));
    const command: BatchCommand = {
      token: req.token!,
      method: req.method as "POST" | "PATCH",
      path: req.path,
      body: (req.body ?? {}) as Record<string, unknown>,
      ...(key === undefined ? {} : { idempotency_key: key }),
    };
    const summary = req.lean !== true;
    return this.withRetry(req.signal, (attempt) => this.groupCommit!.submit(target, { command, signal: req.signal, attempt, summary }) as Promise<T>);
  }

  /** A GET answered with text (the WAL export), retried per the policy. */
  text(req: ApiRequest): Promise<{ text: string; headers: Headers }> {
    return this.withRetry(req.signal, () =>
      this.once(req, undefined, async (res) => {
        try {
          // Decoded here, not with res.text(): the WAL is application/x-ndjson, which workerd warns about.
          return { text: new TextDecoder().decode(await res.arrayBuffer()), headers: res.headers };
        } catch (cause) {
          throw networkError(cause);
        }
      }),
    );
  }

  /** Opens a GET once, no retry, and hands back the response with its body unread (event streams). */
  open(req: ApiRequest): Promise<Response> {
    return this.once(req, undefined, async (res) => res);
  }

  /** One try of a batched command sent alone. */
  sendSingle(call: QueuedCall): Promise<unknown> {
    const c = call.command;
    return this.once({ method: c.method, path: c.path, token: c.token, body: c.body, ...(call.signal === undefined ? {} : { signal: call.signal }) }, c.idempotency_key, readJson);
  }

  /**
   * One try of a batch: over the task's command socket when sockets are on and it can be opened, else as a
   * request whose token is the first command's (every command is re-authenticated either way). A frame asks
   * for the task summary in its answers when `summary` (a command's answer type has it) or the socket option
   * `summaries` says so; a batch request's answers always have it.
   */
  async sendBatch(taskPath: string, commands: readonly BatchCommand[], summary = true): Promise<BatchResult[]> {
    const sockets = this.socketsFor(taskPath);
    if (sockets !== null) {
      let socket = sockets.byTask.get(taskPath);
      if (socket === undefined) {
        socket = new CommandSocket(`${this.baseUrl.replace(/^http/, "ws")}${taskPath}/socket`, sockets.open, sockets.idleMs);
        sockets.byTask.set(taskPath, socket);
      }
      try {
        return await socket.send(commands, summary || sockets.summaries);
      } catch (e) {
        if (!(e instanceof SocketUnavailable)) throw e;
        sockets.downUntil.set(taskPath, Date.now() + SOCKET_RETRY_MS);
      }
    }
    const answer = await this.once({ method: "POST", path: `${taskPath}/batch`, token: commands[0]!.token, body: { commands } }, undefined, readJson<{ results?: unknown }>);
    if (!Array.isArray(answer.results)) throw unexpectedResponse(200, "the batch answer has no results");
    return answer.results as BatchResult[];
  }

  private async withRetry<T>(signal: AbortSignal | undefined, attemptOnce: (attempt: number) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await attemptOnce(attempt);
      } catch (e) {
        if (signal?.aborted === true) throw abortReason(signal);
        if (!(e instanceof RuntimeApiError) || !e.retryable || attempt >= this.retry.attempts) throw e;
        await sleep(Math.min(this.retry.maxDelayMs, e.retryAfterMs ?? backoffDelay(attempt, this.retry)), signal);
      }
    }
  }

  /** One request: a non-2xx answer becomes a RuntimeApiError, a fetch that throws a network_error. */
  private async once<T>(req: ApiRequest, idempotencyKey: string | undefined, read: (res: Response) => Promise<T>): Promise<T> {
    const headers: Record<string, string> = { accept: "application/json", ...req.headers };
    if (req.token !== undefined) headers.authorization = `Bearer ${req.token}`;
    if (idempotencyKey !== undefined) headers["idempotency-key"] = idempotencyKey;
    const init: RequestInit = { method: req.method, headers };
    if (req.method !== "GET") {
      headers["content-type"] = "application/json";
      init.body = JSON.stringify(req.body ?? {});
    }
    if (req.signal !== undefined) init.signal = req.signal;
    let res: Response;
    try {
      res = await this.fetchFn(`${this.baseUrl}${req.path}${queryString(req.query)}`, init);
    } catch (e) {
      if (req.signal?.aborted === true) throw abortReason(req.signal);
      throw networkError(e);
    }
    if (!res.ok) throw await errorFromResponse(res);
    return read(res);
  }
}

/** Reads a 2xx JSON body; a body that breaks off is a network failure, one that does not parse is unexpected. */
async function readJson<T>(res: Response): Promise<T> {
  let text: string;
  try {
    text = await res.text();
  } catch (cause) {
    throw networkError(cause);
  }
  try {
    return JSON.parse(text) as T;
  } catch (cause) {
    throw unexpectedResponse(res.status, `the answer is not JSON: ${text.slice(0, 200)}`, cause);
  }
}
