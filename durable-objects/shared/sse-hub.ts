/**
 * @module The live Server-Sent Event subscribers of one Durable Object: each a ReadableStream of bytes that
 * first catches up on history (read synchronously from storage, one page per pull) and then receives the
 * frames the commit path publishes. Bounded on every side: subscribers per object and per token, queued bytes
 * per subscriber, stream lifetime, heartbeats and probes that find vanished clients.
 *
 * Platform facts this is built around (cited so the next reader knows why the belt and the braces):
 * - A client disconnect does not reliably reach the object. workerd stopped calling a JS ReadableStream's
 *   `cancel()` when the client goes away (cloudflare/workerd#6832, regressed in 1.20260619.1, fix proposed in
 *   cloudflare/workerd#6833, still open); see also cloudflare/workerd#5611 ("Need a disconnect hook for
 *   streaming response") and cloudflare/workers-sdk#9438 (the request's abort signal is lost when the request
 *   is forwarded to a Durable Object).
 * - For a stream returned over RPC, the origin learns that the receiver cancelled only when its next write
 *   fails; an idle source never learns (cloudflare/workerd#7298, open). Cancelling such a stream in
 *   `wrangler dev` also logs "Network connection lost" and later an IoContext error (cloudflare/workers-sdk#11071).
 * - An open stream is an in-flight request of the object: a graceful eviction waits for it (in the test pool
 *   `evictDurableObject` gives up after 30 s: "it still has active references"), so streams must not be endless.
 * - Measured under `wrangler dev` (workerd 2026-10-23): for a client that aborts its request, neither `cancel()`
 *   nor a failing `enqueue` reaches the object, even with it writing every 200 ms; the Worker that relays the
 *   stream does see it: its request's abort signal fires (with the `enable_request_signal` compatibility flag),
 *   and its writes to the client fail from about the fourth write on. Some drops are seen neither way for
 *   seconds under load.
 * So the Worker relays each stream (routes/http/subscriber-relay.ts) and reports its client gone by id
 * (`dropById`); before refusing a subscriber for want of a slot the hub probes the subscribers in the way
 * through their relays (`admit`); one token holds at most its share of the slots (maxPerToken), so drops seen
 * late never lock others out; `cancel()` is used when it comes, every heartbeat is a write that fails for a
 * gone reader, and every stream closes after SSE_MAX_STREAM_MS whatever happens: nothing outlives that, and
 * the client resumes with Last-Event-ID.
 */
import { rateLimited, type RuntimeError } from "../../src/core/index.js";
import { err, ok, type RpcResult } from "./rpc-result.js";
import { TokenSlots, tokenShareReached } from "./token-slots.js";

/** Limits of the hub's streams (SSE_HEARTBEAT_MS, SSE_MAX_STREAM_MS, SSE_MAX_QUEUED_BYTES, SSE_MAX_SUBSCRIBERS, and a token's share of them). */
export interface HubLimits {
  readonly heartbeatMs: number;
  readonly maxStreamMs: number;
  readonly maxQueuedBytes: number;
  readonly maxSubscribers: number;
  readonly maxPerToken: number;
}

/**
 * Who a subscriber is: its token's identity (its share is counted by it) and worker run (`runId`, set by the object: its
 * streams end with the run); when the Worker serving the client holds the stream (routes/http/subscriber-relay.ts), an id
 * by which it reports the client gone (`dropSubscriber`) and a probe the hub calls when a slot is wanted: true while it is.
 */
export interface SubscriberHolder {
  readonly token: string;
  readonly id?: string;
  readonly probe?: () => Promise<boolean>;
  readonly runId?: string | null;
}

/** Why a new subscriber was not taken: the hub (scope "object") or the token's share ("token") is full; try again after `retryAfterMs`. */
export interface HubFull {
  readonly scope: "object" | "token";
  readonly open: number;
  readonly max: number;
  readonly retryAfterMs: number;
}

/** How long a probe may take to answer before its subscriber is taken as still there (a gone one answers in about 20 ms). */
const PROBE_WAIT_MS = 1_000;
/**
 * One step of a subscriber's catch-up, taken synchronously: the frames of the next page of history, and
 * what follows. "live" must be answered in the same synchronous turn that read the last stored event, so no
 * commit can fall between the history and the live frames (the commit path is synchronous too).
 */
export interface CatchUpStep {
  readonly frames: string;
  /** more: call again when the client has room; live: history done, publish to it; close: done, end it. */
  readonly next: "more" | "live" | "close";
}

/** Reads the next page of history after the subscriber's own cursor (a closure that advances it). */
export type CatchUp = () => CatchUpStep;

/** Why a stream ended, for counters and tests. */
export type CloseReason = "end" | "cancelled" | "lifetime" | "slow" | "gone";

/** Counters of the hub, for tests and diagnostics. */
export interface HubStats {
  open: number;
  live: number;
  opened: number;
  closed: Record<CloseReason, number>;
}

/** The answer to a stream opened while the hub is full: 429 rate_limited, Retry-After when a slot may free. */
export function subscribersFull(full: HubFull): RuntimeError {
  if (full.scope === "token") return tokenShareReached("sse_subscribers", "subscribers", full.open, full.max, full.retryAfterMs);
  return rateLimited(`this stream already has ${full.open} subscribers (the most one object serves); retry later`, full.retryAfterMs, { limit: "sse_subscribers", max: full.max });
}

const HEARTBEAT = new TextEncoder().encode(": heartbeat\n\n");
const TOO_SLOW = "the subscriber fell too far behind; resume with Last-Event-ID";

class Subscriber {
  live = false;
  done = false;
  /** The reader asked for data and got none yet: the next frames go out at once. */
  waiting = false;
  /** Published frames not yet handed to the stream (shared chunks: encoded once for everyone). */
  pending: Uint8Array[] = [];
  pendingBytes = 0;
  /** More than maxQueuedBytes was pending at the last heartbeat too: a whole period without reading it. */
  overAtLastBeat = false;
  lifetime: ReturnType<typeof setTimeout> | null = null;
  /** The probe in flight (see SseHub.reclaim), shared by every new subscriber that waits on it. */
  probing: Promise<void> | null = null;
  readonly openedAt = Date.now();
  constructor(
    readonly controller: ReadableStreamDefaultController<Uint8Array>,
    readonly catchUp: CatchUp,
    readonly holder: SubscriberHolder,
  ) {}
}

/**
 * The subscribers of one object and the one heartbeat timer they share.
 *
 * Delivery is pulled by the reader: a stream's queue holds nothing (high-water mark 0); published frames
 * wait in the subscriber's `pending` list and go out when the reader asks (`pull`), all of them as one
 * chunk. A reader that is still busy with the previous chunk gets everything since in one chunk; readers
 * already waiting are served by one zero-delay timer, after the commits queued behind this one, so a burst
 * of commits costs each subscriber one chunk, not one per commit (measured by `npm run bench:sse`: half
 * the server CPU per delivered event with 200 subscribers). Past maxQueuedBytes pending, the subscriber is
 * closed as too slow and resumes by Last-Event-ID. The commit path itself only encodes once and appends a
 * reference to each live subscriber's list.
 */
export class SseHub {
  private readonly subscribers = new Set<Subscriber>();
  private readonly byToken = new TokenSlots();
  private heartbeat: ReturnType<typeof setInterval> | null = null;
  private flushTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly encoder = new TextEncoder();
  readonly stats: HubStats = { open: 0, live: 0, opened: 0, closed: { end: 0, cancelled: 0, lifetime: 0, slow: 0, gone: 0 } };

  constructor(private readonly limits: HubLimits) {}

  /** Subscribers that receive published frames (caught up on history). */
  get liveCount(): number {
    return this.stats.live;
  }

  /**
   * Null when a new subscriber may open; otherwise how full the hub is and when to try again: at the next
   * heartbeat (which finds subscribers whose clients vanished) or when the oldest stream reaches its lifetime,
   * whichever comes first, in whole seconds. Each subscriber may hold maxQueuedBytes, so their number is what
   * bounds the memory of an object's streams.
   */
  full(token: string, now = Date.now()): HubFull | null {
    const objectFull = this.subscribers.size >= this.limits.maxSubscribers;
    const held = this.byToken.of(token);
    if (!objectFull && held < this.limits.maxPerToken) return null;
    let soonest = this.limits.heartbeatMs;
    for (const sub of this.subscribers) if (objectFull || sub.holder.token === token) soonest = Math.min(soonest, sub.openedAt + this.limits.maxStreamMs - now);
    const retryAfterMs = Math.max(1, Math.ceil(soonest / 1000)) * 1000;
    if (objectFull) return { scope: "object", open: this.subscribers.size, max: this.limits.maxSubscribers, retryAfterMs };
    return { scope: "token", open: held, max: this.limits.maxPerToken, retryAfterMs };
  }

  /**
   * A new subscriber (`open`), or the answer to give when there is no slot for it. When the object or the
   * token's share is full, the subscribers in the way (the token's own, or all) are probed first and those
   * whose clients are gone are dropped, so a client that went away never keeps anyone out: the object cannot
   * tell by itself (see the header), the Worker that serves the client can. The check after the probes and
   * the opening happen in one turn, so two subscribers waiting on the same probes never take one slot.
   */
  async admit(catchUp: CatchUp, holder: SubscriberHolder): Promise<RpcResult<ReadableStream<Uint8Array>>> {
    const full = this.full(holder.token);
    if (full !== null) {
      await this.reclaim(full.scope === "token" ? holder.token : null);
      const still = this.full(holder.token);
      if (still !== null) return err(subscribersFull(still));
    }
    return ok(this.open(catchUp, holder));
  }

  /** Probes the subscribers (of `token`, or all) that can be; those whose clients are gone are dropped. */
  private async reclaim(token: string | null): Promise<void> {
    const answers: Promise<void>[] = [];
    for (const sub of this.subscribers) if (sub.holder.probe !== undefined && (token === null || sub.holder.token === token)) answers.push(this.probeOf(sub));
    await Promise.all(answers);
  }

  /** One probe per subscriber at a time: new subscribers waiting at once share its answer. */
  private probeOf(sub: Subscriber): Promise<void> {
    if (sub.probing !== null) return sub.probing;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const unanswered = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), PROBE_WAIT_MS)));
    sub.probing = Promise.race([sub.holder.probe!().catch(() => false), unanswered]).then((there) => {
      clearTimeout(timer);
      sub.probing = null;
      if (!there) this.release(sub);
    });
    return sub.probing;
  }

  /** The Worker that serves subscriber `id` saw its client go: its slot is freed now. */
  dropById(id: string): void {
    for (const sub of this.subscribers) if (sub.holder.id === id) return this.release(sub);
  }

  /**
   * A new stream (callers check `full()` first; opening past the limit throws). Its history is read by
   * `catchUp` each time the reader asks (pull), one page at a time, so a long history never sits in memory;
   * published frames reach it only once it is live.
   */
  open(catchUp: CatchUp, holder: SubscriberHolder): ReadableStream<Uint8Array> {
    if (this.full(holder.token) !== null) throw new RangeError(`the hub already serves ${this.subscribers.size} subscribers, ${this.byToken.of(holder.token)} of them this token's`);
    let sub: Subscriber | null = null;
    return new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          // A probe passed over RPC is a stub the callee must keep (dup) to call after the call that passed it.
          const probe = (holder.probe as { dup?: () => () => Promise<boolean> } | undefined)?.dup?.() ?? holder.probe;
          sub = new Subscriber(controller, catchUp, { ...holder, ...(probe === undefined ? {} : { probe }) });
          this.subscribers.add(sub);
          this.byToken.take(holder.token);
          this.stats.open += 1;
          this.stats.opened += 1;
          const s = sub;
          s.lifetime = setTimeout(() => this.close(s, "lifetime"), this.limits.maxStreamMs);
          this.heartbeat ??= setInterval(() => this.beat(), this.limits.heartbeatMs);
        },
        pull: () => {
          if (sub !== null) this.pull(sub);
        },
        cancel: () => {
          if (sub !== null) this.forget(sub, "cancelled");
        },
      },
      // pull() is called only when the reader waits for data: the pending list is the queue.
      { highWaterMark: 0 },
    );
  }

  /** Sends frames encoded once to every live subscriber; one that cannot keep up is closed (it resumes). */
  publish(frames: string): void {
    if (this.stats.live === 0 || frames === "") return;
    const bytes = this.encoder.encode(frames);
    for (const sub of this.subscribers) if (sub.live) this.push(sub, bytes);
  }

  /** Ends, after what is pending and a last frame, every live subscriber (the task is terminal), or those `match` picks, live or not. */
  end(lastFrame: (holder: SubscriberHolder) => string, match?: (holder: SubscriberHolder) => boolean): void {
    for (const sub of this.subscribers) if (match === undefined ? sub.live : match(sub.holder)) this.close(sub, "end", this.encoder.encode(lastFrame(sub.holder)));
  }

  private push(sub: Subscriber, bytes: Uint8Array): void {
    // With nothing pending a reader takes one commit whole, however large (one buffer shared by all): a 10,000-op
    // patch closes no live stream. Anything more while it waits is too far behind: maxQueuedBytes or one commit.
    const keepingUp = sub.pendingBytes === 0;
    if (!keepingUp && sub.pendingBytes + bytes.byteLength > this.limits.maxQueuedBytes) {
      // Erroring drops what waits for this reader at once (closing would keep it until read, which a stuck
      // reader never does).
      this.drop(sub, "slow", new Error(TOO_SLOW));
      return;
    }
    sub.pending.push(bytes);
    sub.pendingBytes += bytes.byteLength;
    if (sub.waiting) this.flushSoon();
  }

  /** Flushes the waiting subscribers after the commits already queued behind this one: one chunk for all of them. */
  private flushSoon(): void {
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = null;
      for (const sub of this.subscribers) if (sub.waiting && sub.pending.length > 0) this.flush(sub);
    }, 0);
  }

  private pull(sub: Subscriber): void {
    if (sub.done) return;
    if (sub.live) {
      if (sub.pending.length > 0) this.flush(sub);
      else sub.waiting = true;
      return;
    }
    let step: CatchUpStep;
    try {
      step = sub.catchUp();
    } catch (e) {
      // A WAL row that no longer decodes: end this stream with the error rather than skip an event.
      this.drop(sub, "gone", e instanceof Error ? e : new Error(String(e)));
      return;
    }
    if (step.frames !== "" && !this.enqueue(sub, this.encoder.encode(step.frames))) return;
    if (step.next === "live") {
      sub.live = true;
      this.stats.live += 1;
      // Caught up with nothing to send on this read: wait for the next commit.
      if (step.frames === "") sub.waiting = true;
    } else if (step.next === "close") this.close(sub, "end");
    else if (step.frames === "") this.pull(sub); // an empty page that is not the end: read on
  }

  /** A comment to every idle stream: keeps proxies from timing it out and finds readers that are gone. */
  private beat(): void {
    for (const sub of this.subscribers) {
      // Only an idle reader gets a heartbeat: one with frames waiting for their flush (a busy isolate) gets them
      // first. One that has left more than maxQueuedBytes (a large commit) unread for a whole period is closed.
      const over = sub.live && sub.pendingBytes > this.limits.maxQueuedBytes;
      if (over && sub.overAtLastBeat) this.drop(sub, "slow", new Error(TOO_SLOW));
      else if (sub.waiting && sub.pendingBytes === 0) this.push(sub, HEARTBEAT);
      sub.overAtLastBeat = over;
    }
  }

  /** Hands everything pending to the stream as one chunk (allowed any time; the stream queues it). */
  private flush(sub: Subscriber): void {
    const chunks = sub.pending;
    if (chunks.length === 0 || sub.done) return;
    let chunk: Uint8Array;
    if (chunks.length === 1) chunk = chunks[0]!;
    else {
      chunk = new Uint8Array(sub.pendingBytes);
      let at = 0;
      for (const c of chunks) {
        chunk.set(c, at);
        at += c.byteLength;
      }
    }
    sub.pending = [];
    sub.pendingBytes = 0;
    sub.waiting = false;
    this.enqueue(sub, chunk);
  }

  /** Enqueues; a stream that no longer takes chunks (cancelled, errored) is removed. */
  private enqueue(sub: Subscriber, bytes: Uint8Array): boolean {
    try {
      sub.controller.enqueue(bytes);
      return true;
    } catch {
      this.forget(sub, "gone");
      return false;
    }
  }

  /** Closes after the pending frames and `last` (they stay queued in the stream until read). */
  private close(sub: Subscriber, reason: CloseReason, last?: Uint8Array): void {
    if (sub.done) return;
    if (last !== undefined) {
      sub.pending.push(last);
      sub.pendingBytes += last.byteLength;
    }
    this.flush(sub);
    try {
      sub.controller.close();
    } catch {
      // already closed or errored
    }
    this.forget(sub, reason);
  }

  /** Errors the stream: what waits for the reader is dropped. */
  private drop(sub: Subscriber, reason: CloseReason, error: Error): void {
    if (sub.done) return;
    try {
      sub.controller.error(error);
    } catch {
      // already closed or errored
    }
    this.forget(sub, reason);
  }

  /** Frees a gone client's slot: closed, not errored (an error would only be an unhandled rejection in its pump). */
  private release(sub: Subscriber): void {
    if (sub.done) return;
    this.forget(sub, "gone");
    try {
      sub.controller.close();
    } catch {
      // already closed or errored
    }
  }

  private forget(sub: Subscriber, reason: CloseReason): void {
    if (sub.done) return;
    sub.done = true;
    sub.pending = [];
    sub.pendingBytes = 0;
    if (sub.lifetime !== null) clearTimeout(sub.lifetime);
    this.subscribers.delete(sub);
    this.byToken.release(sub.holder.token);
    // A probe passed over RPC is a stub that holds the Worker's side until it is released.
    (sub.holder.probe as { [Symbol.dispose]?: () => void } | undefined)?.[Symbol.dispose]?.();
    this.stats.open -= 1;
    if (sub.live) this.stats.live -= 1;
    this.stats.closed[reason] += 1;
    if (this.subscribers.size === 0 && this.heartbeat !== null) {
      clearInterval(this.heartbeat);
      this.heartbeat = null;
    }
  }
}
