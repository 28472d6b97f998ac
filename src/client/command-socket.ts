/**
 * @module A task's command socket on the client side: group-committed batches sent as frames over one
 * WebSocket (`GET .../tasks/{tid}/socket`) instead of one `POST .../batch` each. Same commands, same results,
 * same per-command tokens and Idempotency-Keys; only the carrier differs.
 *
 * Why: a request costs the client and the service far more than the commands it carries; a worker host
 * writing to one task all the time pays it once per connection instead of once per tick.
 *
 * Opening: in a Worker (there is a `WebSocketPair`), a fetch with `Upgrade: websocket` through the client's
 * fetch (so service bindings work); elsewhere `new WebSocket(url)` with the constructor given, else the
 * global one (browsers, Node 22+; on Node 20 pass the `ws` package's). The connection authenticates with the
 * first command's token as `?access_token=` (browsers cannot set headers on a WebSocket); every command is
 * still authenticated with its own token.
 */
import type { BatchResult } from "../contract/index.js";
import type { BatchCommand } from "./group-commit.js";
import { errorFromEnvelope, networkError, RuntimeApiError, unexpectedResponse } from "./errors.js";

/** What the client needs of a WebSocket (the browser's, workerd's and the `ws` package's all have it). */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "open" | "message" | "close" | "error", listener: (event: { data?: unknown; code?: number; reason?: string }) => void): void;
}

/** A WebSocket constructor (`globalThis.WebSocket`, or `ws`'s default export on Node 20). */
export type WebSocketConstructor = new (url: string, protocols?: string | string[], options?: object) => WebSocketLike;

/**
 * Options only the `ws` package reads (browsers and undici ignore a third argument; the second is `[]`, as
 * Chromium sends an explicit `undefined` as a subprotocol): no permessage-deflate.
 * Frames are small and answered within milliseconds; deflating every one cost both ends more CPU than a
 * step's own work on the service (32 workers on one task: ≈ 4,000 steps/s with it, ≈ 5,900 without).
 */
const WS_PACKAGE_OPTIONS = { perMessageDeflate: false };

/** How the client uses command sockets. */
export interface CommandSocketOptions {
  /** The WebSocket constructor outside Workers (default: the global one). */
  readonly WebSocket?: WebSocketConstructor;
  /** Close a task's socket after this long with nothing in flight (default 10 s; it reopens on the next batch). */
  readonly idleMs?: number;
  /**
   * Frames one tick's writes to a task are split into, each of at least 8 commands, sent back to back so the
   * service decides one while this process reads another's answers (default 3; 1: one frame a tick).
   */
  readonly framesPerTick?: number;
  /**
   * Ask for the task summary (`task`) in every answer (default false). Without it a frame asks for it only when
   * one of its commands' calls promises it; the worker calls (claimStep, claimNext, updateStep, appendProgress)
   * do not, and their lean answers cost the service less to build and both ends less to encode.
   */
  readonly summaries?: boolean;
}

const OPEN = 1;

/** The socket could not be opened (refused upgrade, no route, network): the caller may send over HTTP instead. */
export class SocketUnavailable extends Error {
  override readonly name = "SocketUnavailable";
  constructor(readonly reason: RuntimeApiError) {
    super(reason.message);
  }
}

/** One task's socket: frames out, answers matched back by id. */
export class CommandSocket {
  private socket: WebSocketLike | null = null;
  private opening: Promise<WebSocketLike> | null = null;
  private readonly waiting = new Map<number, { resolve(results: BatchResult[]): void; reject(error: unknown): void }>();
  private nextId = 1;
  private idleTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly url: string,
    private readonly open: (url: string) => Promise<WebSocketLike>,
    private readonly idleMs: number,
  ) {}

  /**
   * Sends one batch as a frame: its results in order, or the error of the frame as a whole (a dropped
   * connection is a retryable network_error). Throws SocketUnavailable, having sent nothing, when the
   * socket cannot be opened. Without `summary` the answers leave out the task summary.
   */
  async send(commands: readonly BatchCommand[], summary = false): Promise<BatchResult[]> {
    this.clearIdle();
    let socket: WebSocketLike;
    try {
      socket = await this.connect(commands[0]!.token);
    } catch (e) {
      throw new SocketUnavailable(e instanceof RuntimeApiError ? e : networkError(e));
    }
    const id = this.nextId++;
    return new Promise<BatchResult[]>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      try {
        socket.send(JSON.stringify(summary ? { id, commands, summary } : { id, commands }));
      } catch (e) {
        this.waiting.delete(id);
        reject(networkError(e));
      }
    }).finally(() => this.armIdle());
  }

  /** Closes the socket; frames in flight fail with a retryable network_error. */
  close(): void {
    this.clearIdle();
    const socket = this.socket;
    this.socket = null;
    this.opening = null;
    this.failAll(networkError(new Error("the command socket was closed")));
    try {
      socket?.close(1000, "client closed");
    } catch {
      // already closing
    }
  }

  private connect(token: string): Promise<WebSocketLike> {
    if (this.socket !== null && this.socket.readyState === OPEN) return Promise.resolve(this.socket);
    this.opening ??= this.open(`${this.url}?access_token=${encodeURIComponent(token)}`).then(
      (socket) => {
        this.socket = socket;
        this.opening = null;
        socket.addEventListener("message", (event) => this.onMessage(event.data));
        socket.addEventListener("close", (event) => this.onGone(socket, networkError(new Error(`the command socket closed (${event.code ?? "no code"}${event.reason ? `: ${event.reason}` : ""})`))));
        socket.addEventListener("error", () => this.onGone(socket, networkError(new Error("the command socket failed"))));
        return socket;
      },
      (e: unknown) => {
        this.opening = null;
        throw e instanceof RuntimeApiError ? e : networkError(e);
      },
    );
    return this.opening;
  }

  private onMessage(data: unknown): void {
    let frame: { id?: unknown; results?: unknown; error?: unknown; status?: unknown };
    try {
      frame = JSON.parse(typeof data === "string" ? data : String(data)) as typeof frame;
    } catch {
      return this.failAll(unexpectedResponse(200, "a command socket frame is not JSON"));
    }
    const pending = typeof frame.id === "number" ? this.waiting.get(frame.id) : undefined;
    if (pending === undefined) {
      // An error about a frame the service could not read (no id): every frame in flight is suspect. Frames
      // the service sends unasked (`{event: "action.resolved", …}`) answer no command: this socket closes when
      // idle, so it is no place to wait for them (waitForAction is).
      if (frame.error !== undefined) this.failAll(errorFromEnvelope(typeof frame.status === "number" ? frame.status : 400, { error: frame.error }));
      return;
    }
    this.waiting.delete(frame.id as number);
    if (Array.isArray(frame.results)) pending.resolve(frame.results as BatchResult[]);
    else if (frame.error !== undefined) pending.reject(errorFromEnvelope(typeof frame.status === "number" ? frame.status : 400, { error: frame.error }));
    else pending.reject(unexpectedResponse(200, "a command socket answer has neither results nor error"));
  }

  private onGone(socket: WebSocketLike, error: RuntimeApiError): void {
    if (this.socket !== socket) return;
    this.socket = null;
    this.failAll(error);
  }

  private failAll(error: unknown): void {
    const pending = [...this.waiting.values()];
    this.waiting.clear();
    for (const p of pending) p.reject(error);
  }

  private armIdle(): void {
    if (this.waiting.size > 0 || this.socket === null) return;
    this.clearIdle();
    const timer = setTimeout(() => {
      this.idleTimer = null;
      if (this.waiting.size === 0) this.close();
    }, this.idleMs);
    // An idle socket's timer must not keep a Node process alive on its own.
    (timer as { unref?: () => void }).unref?.();
    this.idleTimer = timer;
  }

  private clearIdle(): void {
    if (this.idleTimer === null) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = null;
  }
}

/**
 * How to open a socket here: a fetch upgrade in Workers, else `new WebSocket(url)` waited open. A refused
 * upgrade becomes the service's error (e.g. 401) when the answer says which; otherwise a network_error.
 */
export function socketOpener(fetchFn: (input: string, init?: RequestInit) => Promise<Response>, options: CommandSocketOptions): (url: string) => Promise<WebSocketLike> {
  if (options.WebSocket === undefined && typeof (globalThis as { WebSocketPair?: unknown }).WebSocketPair === "function") {
    return async (url) => {
      const res = await fetchFn(url.replace(/^ws/, "http"), { headers: { upgrade: "websocket" } });
      const socket = (res as Response & { webSocket?: (WebSocketLike & { accept(): void }) | null }).webSocket;
      if (socket === undefined || socket === null) {
        const text = await res.text().catch(() => "");
        let body: unknown = null;
        try {
          body = JSON.parse(text);
        } catch {
          // not an error envelope
        }
        throw body !== null ? errorFromEnvelope(res.status, body) : unexpectedResponse(res.status, `the socket upgrade was answered ${res.status}`);
      }
      socket.accept();
      return socket;
    };
  }
  const Ctor = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (Ctor === undefined) throw new TypeError("command sockets need a WebSocket: pass socket: { WebSocket } (on Node 20, the `ws` package's)");
  return (url) =>
    new Promise<WebSocketLike>((resolve, reject) => {
      const socket = new Ctor(url, [], WS_PACKAGE_OPTIONS);
      let settled = false;
      socket.addEventListener("open", () => {
        settled = true;
        resolve(socket);
      });
      const fail = (why: string) => {
        if (settled) return;
        settled = true;
        reject(networkError(new Error(why)));
      };
      socket.addEventListener("error", () => fail("the command socket could not be opened"));
      socket.addEventListener("close", (event) => fail(`the command socket closed while opening (${event.code ?? "no code"})`));
    });
}
