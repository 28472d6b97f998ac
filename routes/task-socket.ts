/**
 * @module The task's command socket, `GET .../tasks/{tid}/socket` upgraded to a WebSocket: batches as frames
 * over one connection, for a worker host that writes to one task all the time. A frame is a batch body with
 * an `id` and is answered by one frame with the same `id` and the batch's results (or a frame-level error);
 * every command still carries its own token, exactly as in `POST .../batch`. Frames of a connection are
 * run one after another, in arrival order.
 *
 * Why: a request costs far more than the commands it carries (HTTP parsing on both ends, a hop per proxy),
 * and a worker host's batches are small and frequent; a socket pays the request once.
 */
import { Hono } from "hono";
import { z } from "zod";
import type { RuntimeError } from "../src/core/index.js";
import { type Env, readConfig } from "../src/env.js";
import { type AppEnv, requireTaskActor } from "./auth.js";
import { runBatch } from "./batch.js";
import { fail, STATUS_OF, toRuntimeError } from "./http-error.js";
import { BatchBody } from "./schemas.js";
import { validate } from "./body.js";

/** Frames a connection may have waiting; past it the socket is closed with 1013 (try again later). */
export const MAX_QUEUED_FRAMES = 64;

/** A command frame: a batch body and the caller's id for the answer. */
export const SocketFrame = BatchBody.extend({ id: z.union([z.string().min(1).max(128), z.number().int()]) });

/** The route of the command socket. */
export const taskSocketRoutes = new Hono<AppEnv>();

taskSocketRoutes.get("/:sid/tasks/:tid/socket", (c) => {
  const sid = c.req.param("sid");
  const tid = c.req.param("tid");
  requireTaskActor(c, sid, tid);
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket") fail("validation_error", "this route takes a WebSocket upgrade (Upgrade: websocket)");
  const env = c.env;
  const maxBytes = readConfig(env).maxBodyBytes;
  const pair = new WebSocketPair();
  const socket = pair[1];
  socket.accept();
  let chain: Promise<void> = Promise.resolve();
  let queued = 0;
  // Answer the client's close so the connection ends cleanly on both sides.
  socket.addEventListener("close", (event: CloseEvent) => {
    try {
      socket.close(1000, event.reason);
    } catch {
      // already closed
    }
  });
  socket.addEventListener("message", (event) => {
    if (++queued > MAX_QUEUED_FRAMES) {
      socket.close(1013, `more than ${MAX_QUEUED_FRAMES} frames waiting`);
      return;
    }
    chain = chain
      .then(async () => socket.send(JSON.stringify(await answerFrame(env, sid, tid, event.data, maxBytes))))
      .catch(() => undefined)
      .finally(() => void queued--);
  });
  return new Response(null, { status: 101, webSocket: pair[0] });
});

async function answerFrame(env: Env, sid: string, tid: string, data: string | ArrayBuffer, maxBytes: number): Promise<object> {
  let id: unknown = null;
  try {
    if (typeof data !== "string") fail("validation_error", "frames must be text (JSON)");
    if (data.length > maxBytes) fail("payload_too_large", `the frame is over ${maxBytes} bytes`, { limit: maxBytes });
    let raw: unknown;
    try {
      raw = JSON.parse(data);
    } catch {
      fail("validation_error", "the frame is not valid JSON");
    }
    if (typeof raw === "object" && raw !== null && "id" in raw) id = (raw as { id: unknown }).id;
    const frame = validate(SocketFrame, raw);
    return { id: frame.id, results: await runBatch(env, sid, tid, frame.commands) };
  } catch (e) {
    const error: RuntimeError = toRuntimeError(e);
    return { id: typeof id === "string" || typeof id === "number" ? id : null, status: STATUS_OF[error.code], error: { ...error, details: error.details ?? {} } };
  }
}

