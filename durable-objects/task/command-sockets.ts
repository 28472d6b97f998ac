/**
 * @module The command sockets a task object holds (WebSocket Hibernation API): accepting an upgrade within
 * SOCKET_MAX_CONNECTIONS, one lane per socket that runs its frames in arrival order, and the caps on what
 * frames waiting may hold. The frame protocol itself (parsing, per-command tokens, answers, status codes) is
 * the routes' (routes/socket/task-socket.ts): this is the transport that carries it to the object's group commit.
 */
import type { Action } from "../../src/core/index.js";
import type { Env, RuntimeConfig } from "../shared/env.js";
import { answerFrame, HOLDER_HEADER, TOKEN_HEADER, type SocketScope, upgradeNotFound, upgradeRefused, upgradeRefusedForToken, upgradeScope } from "../commands/command-frames.js";
import { perTokenShare } from "../shared/token-slots.js";
import type { TokenVerifier } from "../commands/batch.js";
import type { TokenClaims } from "../shared/tokens.js";
import { admitToken, isRevoked } from "../shared/revocations.js";
import type { RpcResult } from "../shared/rpc-result.js";
import type { AnyWriteAnswer as WriteAnswer } from "../../src/contract/index.js";
import type { BatchItem } from "./task-graph-rpc.js";

const TOKEN_TAG = "token:";
const GENERATION_TAG = "generation:";

/** The opening token's id and generation the route sent (TOKEN_HEADER), or null. */
function socketToken(request: Request): { token_id: string | null; generation: number; exp: number } | null {
  const header = request.headers.get(TOKEN_HEADER);
  if (header === null) return null;
  try {
    const value = JSON.parse(header) as { token_id?: unknown; generation?: unknown; exp?: unknown };
    const tokenId = typeof value.token_id === "string" ? value.token_id : null;
    const generation = typeof value.generation === "number" ? value.generation : 0;
    return { token_id: tokenId, generation, exp: typeof value.exp === "number" ? value.exp : 0 };
  } catch {
    return null;
  }
}

function tokenTags(token: { token_id: string | null; generation: number }): string[] {
  return [...(token.token_id === null ? [] : [`${TOKEN_TAG}${token.token_id}`]), `${GENERATION_TAG}${token.generation}`];
}

/** Frames a connection may have waiting; past it the socket is closed with 1013 (try again later). */
export const MAX_QUEUED_FRAMES = 64;

/** Tokens a socket remembers as verified: a worker host sends a handful (one per worker) on every frame. */
export const SOCKET_VERIFIED_TOKENS = 64;

/** What the sockets need of their task object. */
export interface SocketHost {
  readonly ctx: DurableObjectState;
  readonly env: Env;
  readonly config: RuntimeConfig;
  /** Which task the object holds; null before it is created or while its WAL is broken. */
  identity(): { sessionId: string; taskId: string } | null;
  /** The object's group commit. */
  executeBatch(items: BatchItem[]): Promise<RpcResult<WriteAnswer>[]>;
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
  /**
   * Per socket: the tokens its frames carried that verified, with their claims, so a frame's commands skip the
   * HMAC of a token an earlier frame already checked. Held in memory only: a socket woken from hibernation
   * verifies its tokens again.
   */
  private readonly verified = new WeakMap<WebSocket, Map<string, TokenClaims>>();

  constructor(private readonly host: SocketHost) {}

  /**
   * The token verifier of a socket's frames: a token this socket already verified is answered from its cache
   * (at most SOCKET_VERIFIED_TOKENS, emptied when full), its expiry checked on every use; only tokens that
   * verify are kept, so a forged one is checked (and refused) every time.
   */
  private verifierOf(socket: WebSocket): TokenVerifier {
    let cache = this.verified.get(socket);
    if (cache === undefined) this.verified.set(socket, (cache = new Map()));
    const known = cache;
    const env = this.host.env;
    return async (token) => {
      const cached = known.get(token);
      if (cached !== undefined) {
        if (cached.exp * 1000 <= Date.now()) {
          known.delete(token);
          return { ok: false, reason: "expired" };
        }
        // The signature is known good; the session's revocations are read through their own cache.
        return (await isRevoked(env, cached)) ? { ok: false, reason: "revoked" } : { ok: true, claims: cached };
      }
      const check = await admitToken(env, token);
      if (check.ok) {
        if (known.size >= SOCKET_VERIFIED_TOKENS) known.clear();
        known.set(token, check.claims);
      }
      return check;
    };
  }

  /** The object's `fetch`: takes an upgrade the route handed over for this very task, within the cap. */
  async accept(request: Request): Promise<Response> {
    const scope = upgradeScope(request);
    if (scope === null) return upgradeNotFound("no such route");
    const held = this.host.identity();
    if (held === null || held.sessionId !== scope.sid || held.taskId !== scope.tid) return upgradeNotFound("no such task");
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
    const token = socketToken(request);
    ctx.acceptWebSocket(pair[1], [...(holder === "" ? [] : [holder]), ...(token === null ? [] : tokenTags(token))]);
    pair[1].serializeAttachment(scope);
    // The session learns where the token holds a socket before the socket is handed out: a revocation reaches it.
    if (token?.token_id != null) {
      const session = this.host.env.SESSIONS.get(this.host.env.SESSIONS.idFromName(scope.sid));
      await session.noteSocket({ token_id: token.token_id, task_id: scope.tid, expires_at_ms: token.exp * 1000 });
    }
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  /**
   * The session's close of revoked tokens: every socket opened with one of `tokenIds`, or with a token of a
   * generation older than `generation`, is closed with 4401 "revoked".
   */
  closeTokenSockets(tokenIds: readonly string[], generation: number): void {
    const ids = new Set(tokenIds);
    for (const socket of this.host.ctx.getWebSockets()) {
      const tags = this.host.ctx.getTags(socket);
      const id = tags.find((t) => t.startsWith(TOKEN_TAG))?.slice(TOKEN_TAG.length);
      const gen = Number(tags.find((t) => t.startsWith(GENERATION_TAG))?.slice(GENERATION_TAG.length) ?? 0);
      if ((id !== undefined && ids.has(id)) || gen < generation) this.refuse(socket, 4401, "revoked");
    }
  }

  /** Closes a socket whose token no longer holds, with the reason as the close reason. */
  private refuse(socket: WebSocket, code: number, reason: string): void {
    this.lanes.delete(socket);
    this.verified.delete(socket);
    try {
      socket.close(code, reason);
    } catch {
      // already closed
    }
  }

  /** The object's `webSocketMessage`: queues the frame on its socket's lane, or closes a socket past the caps. */
  async message(socket: WebSocket, message: string | ArrayBuffer): Promise<void> {
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
    const scope = socket.deserializeAttachment() as SocketScope;
    const run = lane.tail.then(async () => {
      const answer = await answerFrame(this.host.env, this.host.config.maxBodyBytes, scope, message, (items) => this.host.executeBatch(items), this.verifierOf(socket));
      try {
        socket.send(JSON.stringify(answer));
      } catch {
        // the client is gone; its commands were written and a retry with the same keys gets their answers
      }
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
    for (const socket of sockets) {
      if (socket.readyState !== WebSocket.OPEN) continue;
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
    try {
      socket.close(1000, reason);
    } catch {
      // already closed
    }
  }

  /** The object's `webSocketError`: forgets the lane. */
  error(socket: WebSocket): void {
    this.lanes.delete(socket);
  }
}
