/**
 * @module The command sockets a task object holds (WebSocket Hibernation API): accepting an upgrade within
 * SOCKET_MAX_CONNECTIONS, one lane per socket that runs its frames in arrival order, the caps on what
 * frames waiting may hold, and the life of the token that opened each socket: the socket closes (4401) when
 * that token's worker run ends or the token expires. The frame protocol itself (parsing, per-command tokens, answers, status codes) is
 * the routes' (routes/socket/task-socket.ts): this is the transport that carries it to the object's group commit.
 */
import { type Action, type RuntimeError, runtimeError } from "../../src/core/index.js";
import type { Env, RuntimeConfig } from "../shared/env.js";
import {
  answerFrame,
  HOLDER_HEADER,
  type SocketScope,
  TOKEN_ENDED_CLOSE,
  upgradeNotFound,
  upgradeRefused,
  upgradeRefusedForToken,
  upgradeScope,
  upgradeUnauthorized,
} from "../commands/command-frames.js";
import { perTokenShare } from "../shared/token-slots.js";
// A frame's tokens are checked as any request's: admitToken's caches spare the HMAC and the session's round trip.
import { admitToken } from "../shared/revocations.js";
import type { RpcResult } from "../shared/rpc-result.js";
import type { AnyWriteAnswer as WriteAnswer } from "../../src/contract/index.js";
import type { BatchItem } from "./task-graph-rpc.js";

/** Frames a connection may have waiting; past it the socket is closed with 1013 (try again later). */
export const MAX_QUEUED_FRAMES = 64;


/** What the sockets need of their task object. */
export interface SocketHost {
  readonly ctx: DurableObjectState;
  readonly env: Env;
  readonly config: RuntimeConfig;
  /** Which task the object holds; null before it is created or while its WAL is broken. */
  identity(): { sessionId: string; taskId: string } | null;
  /** The object's group commit. */
  executeBatch(items: BatchItem[]): Promise<RpcResult<WriteAnswer>[]>;
  /** Why the token a socket was opened with no longer holds for the task (its worker run has ended: run_ended), or null. */
  spentToken(scope: SocketScope): RuntimeError | null;
  /** A socket whose token expires was taken: the object's alarm must come by then (see `nextExpiry`). */
  expiryAdded(): void;
}

/** Why a socket's token no longer holds: the reason of its 4401 close. */
export type TokenEnd = "run_ended" | "expired" | "revoked";

/** Whether the token a socket was opened with has expired at `now` (ms). */
function expiredAt(scope: SocketScope, now: number): boolean {
  return scope.exp !== undefined && scope.exp * 1000 <= now;
}

/** The command sockets of one task object. */
export class CommandSockets {
  /** Per socket: the frame being run (the next waits for it) and how many are waiting. */
  private readonly lanes = new Map<WebSocket, { tail: Promise<void>; queued: number }>();
  /**
   * Characters of frames waiting or running, all sockets together: with SOCKET_MAX_CONNECTIONS this bounds what
   * frames hold in memory (64 frames of up to MAX_BODY_BYTES on each socket alone would not).
   */
  private queuedBytes = 0;
  /** Sockets to close once the frame they are running is answered (its answer is the last thing they get). */
  private readonly closeAfterFrame = new Map<WebSocket, { code: number; reason: string }>();
  /** Sockets this object closed: the frames still queued on them are not run. */
  private readonly closedHere = new WeakSet<WebSocket>();
  /** The earliest expiry (ms) of an open socket's token; undefined until computed again from the attachments. */
  private earliestExpiry: number | null | undefined = undefined;

  constructor(private readonly host: SocketHost) {}

  /** The object's `fetch`: takes an upgrade the route handed over for this very task, within the cap. */
  async accept(request: Request): Promise<Response> {
    const scope = upgradeScope(request);
    if (scope === null) return upgradeNotFound("no such route");
    const held = this.host.identity();
    if (held === null || held.sessionId !== scope.sid || held.taskId !== scope.tid) return upgradeNotFound("no such task");
    const spent = expiredAt(scope, Date.now()) ? runtimeError("unauthorized", "the token has expired", { reason: "expired" }) : this.host.spentToken(scope);
    if (spent !== null) return upgradeUnauthorized(spent);
    const ctx = this.host.ctx;
    const open = ctx.getWebSockets().length;
    const max = this.host.config.socket.maxConnections;
    if (open >= max) return upgradeRefused(open, max);
    // Each socket is tagged with its token's identity, so the sockets a token holds are counted by the platform
    // (hibernation keeps tags), and one token holds at most its share of the pool.
    const holder = request.headers.get(HOLDER_HEADER) ?? "";
    const share = perTokenShare(max, this.host.config.slotSharePercent);
    const ownSockets = holder === "" ? 0 : ctx.getWebSockets(holder).length;
    if (ownSockets >= share) return upgradeRefusedForToken(ownSockets, share);
    const pair = new WebSocketPair();
    ctx.acceptWebSocket(pair[1], holder === "" ? [] : [holder]);
    pair[1].serializeAttachment(scope);
    if (scope.exp !== undefined) {
      this.earliestExpiry = undefined;
      this.host.expiryAdded();
    }
    // The session learns where the token holds a socket before the socket is handed out: a revocation reaches it.
    if (typeof scope.token_id === "string" && scope.exp !== undefined) {
      const session = this.host.env.SESSIONS.get(this.host.env.SESSIONS.idFromName(scope.sid));
      await session.noteSocket({ token_id: scope.token_id, task_id: scope.tid, expires_at_ms: scope.exp * 1000 });
    }
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  /**
   * The session's close of revoked tokens: every socket opened with one of `tokenIds`, or with a token of a
   * generation older than `generation`, closes with 4401 "revoked".
   */
  closeRevoked(tokenIds: readonly string[], generation: number): number {
    const ids = new Set(tokenIds);
    const revoked = (scope: SocketScope) => (typeof scope.token_id === "string" && ids.has(scope.token_id)) || (scope.generation ?? 0) < generation;
    return this.closeSockets(revoked, TOKEN_ENDED_CLOSE, "revoked" satisfies TokenEnd);
  }

  /**
   * The earliest time (ms) an open socket's token expires, for the object's alarm (which closes it then, also
   * while the object hibernates); null when none will. Read from the attachments once, then kept until a socket
   * comes or goes.
   */
  nextExpiry(): number | null {
    if (this.earliestExpiry !== undefined) return this.earliestExpiry;
    let earliest: number | null = null;
    for (const socket of this.host.ctx.getWebSockets()) {
      if (socket.readyState !== WebSocket.OPEN || this.ending(socket)) continue;
      const exp = (socket.deserializeAttachment() as SocketScope).exp;
      if (exp !== undefined && (earliest === null || exp * 1000 < earliest)) earliest = exp * 1000;
    }
    return (this.earliestExpiry = earliest);
  }

  /**
   * Closes the open sockets whose attachment `match`es with `code` and `reason`; how many. A socket running a
   * frame is closed once that frame is answered (a worker's own finish gets its answer), and the frames queued
   * behind it are not run. Used when a run ends, when tokens expire, and for any other end of a token.
   */
  closeSockets(match: (scope: SocketScope) => boolean, code: number, reason: string): number {
    let closed = 0;
    for (const socket of this.host.ctx.getWebSockets()) {
      if (socket.readyState !== WebSocket.OPEN || this.ending(socket) || !match(socket.deserializeAttachment() as SocketScope)) continue;
      closed += 1;
      if (this.lanes.has(socket)) this.closeAfterFrame.set(socket, { code, reason });
      else this.closeNow(socket, code, reason);
    }
    if (closed > 0) this.earliestExpiry = undefined;
    return closed;
  }

  /** Whether this object closed the socket, or will once its frame in flight is answered. */
  private ending(socket: WebSocket): boolean {
    return this.closedHere.has(socket) || this.closeAfterFrame.has(socket);
  }

  /** After a commit that ended worker runs: the sockets their tokens opened close (4401 run_ended). */
  closeRuns(runIds: ReadonlySet<string>): number {
    return this.closeSockets((scope) => typeof scope.run === "string" && runIds.has(scope.run), TOKEN_ENDED_CLOSE, "run_ended" satisfies TokenEnd);
  }

  /** The sockets whose tokens have expired by `now` close (4401 expired): the object's alarm calls it. */
  closeExpired(now: number): number {
    return this.closeSockets((scope) => expiredAt(scope, now), TOKEN_ENDED_CLOSE, "expired" satisfies TokenEnd);
  }

  /** Why this socket's token no longer holds, checked before each frame and push (a hibernated object set no timer). */
  private tokenEnd(scope: SocketScope): TokenEnd | null {
    if (expiredAt(scope, Date.now())) return "expired";
    return this.host.spentToken(scope) === null ? null : "run_ended";
  }

  private closeNow(socket: WebSocket, code: number, reason: string): void {
    this.lanes.delete(socket);
    this.closeAfterFrame.delete(socket);
    this.closedHere.add(socket);
    try {
      socket.close(code, reason);
    } catch {
      // already closed
    }
  }

  /** The object's `webSocketMessage`: queues the frame on its socket's lane, or closes a socket past the caps. */
  async message(socket: WebSocket, message: string | ArrayBuffer): Promise<void> {
    // A socket being closed runs nothing more; one whose token no longer holds is closed, its frame not run.
    if (this.ending(socket)) return;
    const scope = socket.deserializeAttachment() as SocketScope;
    const ended = this.tokenEnd(scope);
    if (ended !== null) {
      if (this.lanes.has(socket)) this.closeAfterFrame.set(socket, { code: TOKEN_ENDED_CLOSE, reason: ended });
      else this.closeNow(socket, TOKEN_ENDED_CLOSE, ended);
      this.earliestExpiry = undefined;
      return;
    }
    const lane = this.lanes.get(socket) ?? { tail: Promise.resolve(), queued: 0 };
    this.lanes.set(socket, lane);
    const bytes = typeof message === "string" ? message.length : message.byteLength;
    const maxBytes = this.host.config.socket.maxQueuedBytes;
    if (++lane.queued > MAX_QUEUED_FRAMES || this.queuedBytes + bytes > maxBytes) {
      this.lanes.delete(socket);
      socket.close(1013, lane.queued > MAX_QUEUED_FRAMES ? `more than ${MAX_QUEUED_FRAMES} frames waiting` : `more than ${maxBytes} bytes of frames waiting on this task`);
      return;
    }
    this.queuedBytes += bytes;
    const run = lane.tail.then(async () => {
      // Queued behind the frame after which its socket was closed: not run.
      if (this.closedHere.has(socket)) return;
      const answer = await answerFrame(this.host.env, this.host.config.maxBodyBytes, scope, message, (items) => this.host.executeBatch(items), (token) => admitToken(this.host.env, token));
      try {
        socket.send(JSON.stringify(answer));
      } catch {
        // the client is gone; its commands were written and a retry with the same keys gets their answers
      }
      const close = this.closeAfterFrame.get(socket);
      if (close !== undefined) this.closeNow(socket, close.code, close.reason);
    });
    lane.tail = run.catch(() => undefined).finally(() => {
      this.queuedBytes -= bytes;
      if (--lane.queued === 0 && this.lanes.get(socket) === lane) this.lanes.delete(socket);
    });
    await run.catch(() => undefined);
  }

  /**
   * After a commit that resolved actions: one unsolicited `{"event":"action.resolved","task_id","action"}` frame
   * per action to every open socket of the task (answer frames keep `{id, results}`, so clients tell them apart).
   * Sent outside the lanes: a push neither waits behind nor counts against a socket's queued frames. A socket
   * that is closing (closed for its queue, or by its client) is skipped.
   */
  pushActionsResolved(taskId: string, actions: readonly Action[]): void {
    const sockets = this.host.ctx.getWebSockets();
    if (sockets.length === 0 || actions.length === 0) return;
    const frames = actions.map((action) => JSON.stringify({ event: "action.resolved", task_id: taskId, action }));
    // An expired token hears nothing more: its socket closes now, should the alarm not have come yet.
    this.closeExpired(Date.now());
    for (const socket of sockets) {
      if (socket.readyState !== WebSocket.OPEN || this.ending(socket)) continue;
      for (const frame of frames) {
        try {
          socket.send(frame);
        } catch {
          // The client is gone; the resolution is in the WAL and in GET .../actions/{action_id}.
          break;
        }
      }
    }
  }

  /** The object's `webSocketClose`: forgets the lane and completes the close handshake. */
  close(socket: WebSocket, reason: string): void {
    this.lanes.delete(socket);
    this.closeAfterFrame.delete(socket);
    this.earliestExpiry = undefined;
    try {
      socket.close(1000, reason);
    } catch {
      // already closed
    }
  }

  /** The object's `webSocketError`: forgets the lane. */
  error(socket: WebSocket): void {
    this.lanes.delete(socket);
    this.closeAfterFrame.delete(socket);
    this.earliestExpiry = undefined;
  }
}
