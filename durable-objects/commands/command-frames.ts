/**
 * @module The command socket's frame protocol, shared by the route that authenticates an upgrade
 * (routes/socket/task-socket.ts) and the task object that holds the socket (durable-objects/task/command-sockets.ts):
 * how the route names the socket's task, the object's answers to an upgrade it refuses, and the answer frame of
 * one command frame (a batch, run through the object's group commit).
 */
import type { AnyWriteAnswer as WriteAnswer } from "../../src/contract/index.js";
import { rateLimited, type RuntimeError, runtimeError, utf8Length } from "../../src/core/index.js";
import type { Env } from "../shared/env.js";
import { tokenShareReached } from "../shared/token-slots.js";
import { BEARER_CHALLENGE, errorEnvelope, fail, retryAfterSeconds, STATUS_OF, toRuntimeError } from "../shared/http-errors.js";
import type { RpcResult } from "../shared/rpc-result.js";
import type { BatchItem } from "../task/task-graph-rpc.js";
import { prepareBatch, settleBatch, type TokenVerifier } from "./batch.js";
import { parseJsonText, validate } from "./command-json.js";
import { SocketFrame } from "./command-schemas.js";

/** How soon a client refused a socket (SOCKET_MAX_CONNECTIONS) should try again; the SDK sends over HTTP meanwhile. */
export const SOCKET_RETRY_MS = 30_000;

/** How the route tells the object which task a socket is for (the object only accepts a socket for itself). */
export const SCOPE_HEADER = "x-task-scope";

/** How the route names the token that opens a socket (its identity, tokens.ts `tokenIdentity`): its share is counted by it. */
export const HOLDER_HEADER = "x-slot-holder";

/**
 * What each socket remembers across hibernation (its attachment): the task the route authenticated it for and,
 * of the token that opened it, its role, its worker run (null for other roles) and when it expires (`exp`,
 * seconds since the epoch), its id and its session's token generation when it was minted: the socket closes when
 * that run ends, that time comes or the session revokes the token. A socket opened before these were kept has none
 * of them (and keeps only its task).
 */
export interface SocketScope {
  sid: string;
  tid: string;
  role?: string;
  run?: string | null;
  exp?: number;
  token_id?: string | null;
  generation?: number;
}

/** The scope of an upgrade the route handed to the object; null for any other request. */
export function upgradeScope(request: Request): SocketScope | null {
  if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") return null;
  const header = request.headers.get(SCOPE_HEADER);
  if (header === null) return null;
  try {
    const value = JSON.parse(header) as Partial<SocketScope>;
    if (typeof value.sid !== "string" || typeof value.tid !== "string") return null;
    return {
      sid: value.sid,
      tid: value.tid,
      ...(typeof value.role === "string" ? { role: value.role } : {}),
      ...(typeof value.run === "string" || value.run === null ? { run: value.run } : {}),
      ...(typeof value.exp === "number" ? { exp: value.exp } : {}),
      ...(typeof value.token_id === "string" || value.token_id === null ? { token_id: value.token_id } : {}),
      ...(typeof value.generation === "number" ? { generation: value.generation } : {}),
    };
  } catch {
    return null;
  }
}

/** WebSocket close code of a socket whose token no longer holds (401 unauthorized); the reason says why: `run_ended`, `expired`, `revoked`. */
export const TOKEN_ENDED_CLOSE = 4401;

/** The object's answer to an upgrade whose token no longer holds (its run has ended): 401 with the envelope and challenge. */
export function upgradeUnauthorized(error: RuntimeError): Response {
  return Response.json(errorEnvelope(error), { status: STATUS_OF.unauthorized, headers: { "www-authenticate": BEARER_CHALLENGE } });
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

/** The object's answer to an upgrade past the token's share of SOCKET_MAX_CONNECTIONS: 429 rate_limited with Retry-After. */
export function upgradeRefusedForToken(held: number, share: number): Response {
  const error = tokenShareReached("sockets", "command sockets", held, share, SOCKET_RETRY_MS);
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
    if (frameOverLimit(data, maxBodyBytes)) fail("payload_too_large", `the frame is over ${maxBodyBytes} bytes`, { limit: maxBodyBytes });
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

/**
 * Whether a text frame is over `max` UTF-8 bytes, as it came over the wire (MAX_BODY_BYTES counts bytes, as for a
 * body; a string's length counts UTF-16 units, which let 1 MiB of "é", 2 MiB on the wire, through). A unit is 1 to
 * 3 bytes, so only a frame between max / 3 and max units is counted.
 */
function frameOverLimit(data: string, max: number): boolean {
  if (data.length > max) return true;
  return data.length * 3 > max && utf8Length(data) > max;
}
