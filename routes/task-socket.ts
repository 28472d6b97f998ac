/**
 * @module The task's command socket, `GET .../tasks/{tid}/socket` upgraded to a WebSocket: batches as frames
 * over one connection, for a worker host that writes to one task all the time. A frame is a batch body with
 * an `id` and is answered by one frame with the same `id` and the batch's results (or a frame-level error);
 * every command still carries its own token, exactly as in `POST .../batch`. Frames of a connection are
 * run one after another, in arrival order.
 *
 * The Worker authenticates the upgrade and hands it to the task's object, which holds the socket with the
 * WebSocket Hibernation API: frames go straight to the object that decides them (no Worker → object hop per
 * frame), every frame is an event of its own for the platform's CPU limits, and an idle socket costs no
 * duration. The object class the Worker exports is TaskGraphObject with this transport added, so the
 * protocol (frames, auth, status codes) stays in routes/ and the object keeps only the commit path.
 *
 * Why a socket: a request costs far more than the commands it carries (HTTP parsing on both ends, a hop per
 * proxy), and a worker host's batches are small and frequent; a socket pays the request once.
 */
import { Hono } from "hono";
import { z } from "zod";
import { rateLimited, type RuntimeError, runtimeError } from "../src/core/index.js";
import type { Env } from "../src/env.js";
import { TaskGraphObject } from "../durable-objects/task-graph-object.js";
import { type AppEnv, requireTaskActor } from "./auth.js";
import { prepareBatch, settleBatch, taskStub } from "./batch.js";
import { parseJsonText, validate } from "./body.js";
import { errorEnvelope, fail, retryAfterSeconds, STATUS_OF, toRuntimeError } from "./http-error.js";
import { BatchBody } from "./schemas.js";

/** Frames a connection may have waiting; past it the socket is closed with 1013 (try again later). */
export const MAX_QUEUED_FRAMES = 64;
/** How soon a client refused a socket (SOCKET_MAX_CONNECTIONS) should try again; the SDK sends over HTTP meanwhile. */
export const SOCKET_RETRY_MS = 30_000;

/** A command frame: a batch body and the caller's id for the answer. */
export const SocketFrame = z.strictObject({ ...BatchBody.shape, id: z.union([z.string().min(1).max(128), z.number().int()]) });

/** The route of the command socket: authenticate, then hand the upgrade to the task's object. */
export const taskSocketRoutes = new Hono<AppEnv>();

taskSocketRoutes.get("/:sid/tasks/:tid/socket", (c) => {
  const sid = c.req.param("sid");
  const tid = c.req.param("tid");
  requireTaskActor(c, sid, tid);
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket") fail("validation_error", "this route takes a WebSocket upgrade (Upgrade: websocket)");
  const url = new URL(c.req.url);
  url.searchParams.delete("access_token");
  return taskStub(c.env, sid, tid).fetch(url.toString(), { headers: { upgrade: "websocket", [SCOPE_HEADER]: JSON.stringify({ sid, tid }) } });
});

/** How the route tells the object which task a socket is for (the object only accepts a socket for itself). */
const SCOPE_HEADER = "x-task-scope";

/** What each socket remembers across hibernation. */
interface SocketScope {
  sid: string;
  tid: string;
}

/** TaskGraphObject serving command sockets; exported by the Worker under the binding's class name. */
export class TaskGraphObjectWithSocket extends TaskGraphObject {
  /** Per socket: the frame being run (the next waits for it) and how many are waiting. */
  private readonly lanes = new Map<WebSocket, { tail: Promise<void>; queued: number }>();
  /**
   * Characters of frames waiting or running, all sockets together: with SOCKET_MAX_CONNECTIONS this bounds what
   * frames hold in memory (64 frames of up to MAX_BODY_BYTES on each socket alone would not).
   */
  private queuedBytes = 0;

  override async fetch(request: Request): Promise<Response> {
    const scope = parseScope(request.headers.get(SCOPE_HEADER));
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket" || scope === null) return notFound("no such route");
    const held = this.taskIdentity();
    if (held === null || held.sessionId !== scope.sid || held.taskId !== scope.tid) return notFound("no such task");
    const open = this.ctx.getWebSockets().length;
    const max = this.config.socket.maxConnections;
    if (open >= max) {
      const error = rateLimited(`this task already holds ${open} command sockets (the most it serves); send batches with POST .../batch meanwhile`, SOCKET_RETRY_MS, { limit: "sockets", max });
      return Response.json(errorEnvelope(error), { status: STATUS_OF.rate_limited, headers: { "retry-after": String(retryAfterSeconds(error)) } });
    }
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1]);
    pair[1].serializeAttachment(scope);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  override async webSocketMessage(socket: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const lane = this.lanes.get(socket) ?? { tail: Promise.resolve(), queued: 0 };
    this.lanes.set(socket, lane);
    const bytes = typeof message === "string" ? message.length : message.byteLength;
    const maxBytes = this.config.socket.maxQueuedBytes;
    if (++lane.queued > MAX_QUEUED_FRAMES || this.queuedBytes + bytes > maxBytes) {
      this.lanes.delete(socket);
      socket.close(1013, lane.queued > MAX_QUEUED_FRAMES ? `more than ${MAX_QUEUED_FRAMES} frames waiting` : `more than ${maxBytes} bytes of frames waiting on this task`);
      return;
    }
    this.queuedBytes += bytes;
    const scope = socket.deserializeAttachment() as SocketScope;
    const run = lane.tail.then(async () => {
      const answer = await this.answerFrame(scope, message);
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

  override async webSocketClose(socket: WebSocket, _code: number, reason: string): Promise<void> {
    this.lanes.delete(socket);
    try {
      socket.close(1000, reason);
    } catch {
      // already closed
    }
  }

  override async webSocketError(socket: WebSocket): Promise<void> {
    this.lanes.delete(socket);
  }

  private async answerFrame(scope: SocketScope, data: string | ArrayBuffer): Promise<object> {
    let id: unknown = null;
    try {
      if (typeof data !== "string") fail("validation_error", "frames must be text (JSON)");
      const maxBytes = this.config.maxBodyBytes;
      if (data.length > maxBytes) fail("payload_too_large", `the frame is over ${maxBytes} bytes`, { limit: maxBytes });
      const raw = parseJsonText(data, "the frame");
      if (typeof raw === "object" && raw !== null && "id" in raw) id = (raw as { id: unknown }).id;
      const frame = validate(SocketFrame, raw);
      const env = this.env as Env;
      const prepared = await prepareBatch(env, scope.sid, scope.tid, frame.commands);
      return { id: frame.id, results: await settleBatch(env, scope.sid, prepared, (items) => this.executeBatch(items)) };
    } catch (e) {
      const error: RuntimeError = toRuntimeError(e);
      return { id: typeof id === "string" || typeof id === "number" ? id : null, status: STATUS_OF[error.code], ...errorEnvelope(error) };
    }
  }
}

function notFound(message: string): Response {
  return Response.json(errorEnvelope(runtimeError("not_found", message)), { status: STATUS_OF.not_found });
}

function parseScope(header: string | null): SocketScope | null {
  if (header === null) return null;
  try {
    const value = JSON.parse(header) as Partial<SocketScope>;
    return typeof value.sid === "string" && typeof value.tid === "string" ? { sid: value.sid, tid: value.tid } : null;
  } catch {
    return null;
  }
}
