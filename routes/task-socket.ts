/**
 * @module The task's command socket, `GET .../tasks/{tid}/socket` upgraded to a WebSocket: batches as frames
 * over one connection, for a worker host that writes to one task all the time. A frame is a batch body with
 * an `id` and is answered by one frame with the same `id` and the batch's results (or a frame-level error);
 * every command still carries its own token, exactly as in `POST .../batch`. Frames of a connection are
 * run one after another, in arrival order.
 *
 * The Worker authenticates the upgrade and hands it to the task's object, which holds the socket with the
 * WebSocket Hibernation API (durable-objects/command-sockets.ts): frames go straight to the object that
 * decides them (no Worker → object hop per frame), every frame is an event of its own for the platform's CPU
 * limits, and an idle socket costs no duration. The protocol (frames, auth, status codes, error envelopes)
 * stays here with the other routes; the object's transport calls it, and this module knows the object only
 * by its RPC interface.
 *
 * Why a socket: a request costs far more than the commands it carries (HTTP parsing on both ends, a hop per
 * proxy), and a worker host's batches are small and frequent; a socket pays the request once.
 */
import { Hono } from "hono";
import { z } from "zod";
import type { AnyWriteAnswer as WriteAnswer } from "../src/contract/index.js";
import { rateLimited, type RuntimeError, runtimeError } from "../src/core/index.js";
import type { Env } from "../src/env.js";
import type { RpcResult } from "../durable-objects/rpc-result.js";
import type { BatchItem } from "../durable-objects/task-graph-rpc.js";
import { type AppEnv, requireTaskActor } from "./auth.js";
import { prepareBatch, settleBatch, taskStub, type TokenVerifier } from "./batch.js";
import { parseJsonText, validate } from "./body.js";
import { errorEnvelope, fail, retryAfterSeconds, STATUS_OF, toRuntimeError } from "./http-error.js";
import { BatchBody } from "./schemas.js";

/** How soon a client refused a socket (SOCKET_MAX_CONNECTIONS) should try again; the SDK sends over HTTP meanwhile. */
export const SOCKET_RETRY_MS = 30_000;

/**
 * A command frame: a batch body and the caller's id for the answer. Its command answers leave out the task
 * summary (`task`) unless it sends `"summary": true`.
 */
export const SocketFrame = z.strictObject({ ...BatchBody.shape, id: z.union([z.string().min(1).max(128), z.number().int()]), summary: z.boolean().optional() });

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

/** What each socket remembers across hibernation: the task the route authenticated it for. */
export interface SocketScope {
  sid: string;
  tid: string;
}

/** The scope of an upgrade the route handed to the object; null for any other request. */
export function upgradeScope(request: Request): SocketScope | null {
  if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") return null;
  const header = request.headers.get(SCOPE_HEADER);
  if (header === null) return null;
  try {
    const value = JSON.parse(header) as Partial<SocketScope>;
    return typeof value.sid === "string" && typeof value.tid === "string" ? { sid: value.sid, tid: value.tid } : null;
  } catch {
    return null;
  }
}

/** The object's answer to an upgrade it does not take: 404 with the error envelope. */
export function upgradeNotFound(message: string): Response {
  return Response.json(errorEnvelope(runtimeError("not_found", message)), { status: STATUS_OF.not_found });
}

/** The object's answer to an upgrade past SOCKET_MAX_CONNECTIONS: 429 rate_limited with Retry-After. */
export function upgradeRefused(open: number, max: number): Response {
  const error = rateLimited(`this task already holds ${open} command sockets (the most it serves); send batches with POST .../batch meanwhile`, SOCKET_RETRY_MS, { limit: "sockets", max });
  return Response.json(errorEnvelope(error), { status: STATUS_OF.rate_limited, headers: { "retry-after": String(retryAfterSeconds(error)) } });
}

/**
 * The answer frame of one command frame: its batch run through `execute` (the object's group commit), or a
 * frame-level error with the `id` when one could be read. `verify` checks the commands' tokens (the socket's
 * cache of tokens it verified).
 */
export async function answerFrame(
  env: Env,
  maxBodyBytes: number,
  scope: SocketScope,
  data: string | ArrayBuffer,
  execute: (items: BatchItem[]) => Promise<RpcResult<WriteAnswer>[]>,
  verify?: TokenVerifier,
): Promise<object> {
  let id: unknown = null;
  try {
    if (typeof data !== "string") fail("validation_error", "frames must be text (JSON)");
    if (data.length > maxBodyBytes) fail("payload_too_large", `the frame is over ${maxBodyBytes} bytes`, { limit: maxBodyBytes });
    const raw = parseJsonText(data, "the frame");
    if (typeof raw === "object" && raw !== null && "id" in raw) id = (raw as { id: unknown }).id;
    const frame = validate(SocketFrame, raw);
    const prepared = await prepareBatch(env, scope.sid, scope.tid, frame.commands, { lean: frame.summary !== true, ...(verify === undefined ? {} : { verify }) });
    return { id: frame.id, results: await settleBatch(env, scope.sid, prepared, execute) };
  } catch (e) {
    const error: RuntimeError = toRuntimeError(e);
    return { id: typeof id === "string" || typeof id === "number" ? id : null, status: STATUS_OF[error.code], ...errorEnvelope(error) };
  }
}
