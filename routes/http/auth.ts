/** @module Bearer-token authentication: who calls (admin, or a token's role and scope) and scope checks. */
import type { Context, MiddlewareHandler } from "hono";
import { actorOf, secretsEqual, TOKEN_REFUSAL_MESSAGES, type TokenClaims, tokenIdentity } from "../../durable-objects/shared/tokens.js";
import { admitToken } from "../../durable-objects/shared/revocations.js";
import { type Actor, ID_PATTERN } from "../../src/core/index.js";
import type { Env } from "../../durable-objects/shared/env.js";
import { type Operation, roleRefusal } from "./catalog.js";
import { fail } from "../../durable-objects/shared/http-errors.js";

/** Claims of a token the REST and MCP routes serve: every role but `a2a_client`, which speaks A2A only. */
export type SessionTokenClaims = TokenClaims & { readonly role: Exclude<TokenClaims["role"], "a2a_client"> };

/** The authenticated caller of a request. */
export type Caller = { readonly kind: "admin" } | { readonly kind: "token"; readonly claims: SessionTokenClaims; readonly actor: Actor; readonly token: string };

/** Hono environment of every route. */
export interface AppEnv {
  Bindings: Env;
  Variables: { caller: Caller };
}

/**
 * Requests the Worker makes of its own app: an MCP tool call runs its REST operation through the same routes. The
 * outer request already proved its token and read its body, so the inner one carries the verified caller and its
 * body as text: `authenticate` takes the caller as it is (one verification a call, not two) and `readBodyText` the
 * text (no second stream to read). Only inProcessRequest makes such requests: one from outside is never one.
 */
interface InProcess {
  readonly caller: Caller;
  readonly body: string;
}

const inProcessRequests = new WeakMap<Request, InProcess>();

/** A request of the app by `caller`, verified already, with `body` (JSON text) if any. */
export function inProcessRequest(url: string, init: { readonly method: string; readonly headers: Record<string, string>; readonly body?: string }, caller: Caller): Request {
  const request = new Request(url, { method: init.method, headers: init.headers });
  inProcessRequests.set(request, { caller, body: init.body ?? "" });
  return request;
}

/** The verified caller and body text of a request made by inProcessRequest; undefined for any other. */
export function inProcessOf(request: Request): InProcess | undefined {
  return inProcessRequests.get(request);
}

/** Reads `Authorization: Bearer …` (or `?access_token=` on a GET, for EventSource) and verifies it; 401 otherwise. */
export const authenticate: MiddlewareHandler<AppEnv> = async (c, next) => {
  const made = inProcessOf(c.req.raw);
  if (made !== undefined) {
    c.set("caller", made.caller);
    return next();
  }
  const header = c.req.header("authorization");
  let token: string | undefined;
  if (header !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (match === null) fail("unauthorized", "the Authorization header must be `Bearer <token>`");
    token = match[1];
  } else if (c.req.method === "GET") {
    token = c.req.query("access_token");
  }
  if (token === undefined || token === "") fail("unauthorized", "a bearer token is required");
  if (typeof c.env.ADMIN_TOKEN === "string" && c.env.ADMIN_TOKEN !== "" && secretsEqual(token, c.env.ADMIN_TOKEN)) {
    c.set("caller", { kind: "admin" });
    return next();
  }
  const check = await admitToken(c.env, token);
  if (!check.ok) fail("unauthorized", TOKEN_REFUSAL_MESSAGES[check.reason], { reason: check.reason });
  const claims = check.claims;
  if (claims.role === "a2a_client") fail("tool_not_available", "an a2a_client token speaks A2A at /a2a only", { role: claims.role });
  c.set("caller", { kind: "token", claims: claims as SessionTokenClaims, actor: actorOf(claims), token });
  return next();
};

/** The admin caller, or 403. */
export function requireAdmin(c: Context<AppEnv>): void {
  if (c.get("caller").kind !== "admin") fail("permission_denied", "this operation needs the admin token");
}

/** A token caller in session `sid` (any role), or 403. Admin tokens do not act inside sessions. */
export function requireSessionActor(c: Context<AppEnv>, sid: string): Actor {
  const caller = c.get("caller");
  if (caller.kind !== "token") fail("permission_denied", "use a session token (orchestrator, worker, observer or approver) for this operation");
  if (caller.claims.sid !== sid) fail("permission_denied", "the token belongs to another session");
  return caller.actor;
}

/** A token caller in scope of task `tid` of session `sid`: workers are scoped to one task. */
export function requireTaskActor(c: Context<AppEnv>, sid: string, tid: string): Actor {
  const actor = requireSessionActor(c, sid);
  if (actor.role === "worker" && actor.task_id !== tid) fail("permission_denied", "the worker token is scoped to another task");
  // A malformed id is validation_error, not a lookup (and never a task object named after it).
  if (!ID_PATTERN.test(tid)) fail("validation_error", "the task id must match ^[a-z0-9_-]{1,64}$", { task_id: tid.slice(0, 100) });
  return actor;
}

/**
 * The identity of the caller's token, by which an object counts the slots it holds (its share of streams,
 * sockets, long-polls and large reads); the token itself stays in the Worker.
 */
export function slotHolder(c: Context<AppEnv>): Promise<string> {
  const caller = c.get("caller");
  return tokenIdentity(caller.kind === "token" ? caller.token : "admin");
}

/**
 * The checks of an operation that need only the token and the path, run before its body or query is read: a
 * caller who may not call it at all is answered without a byte of the body read (an observer's 200 MB `complete`
 * costs nothing). In the order the routes and objects check them: the session and a worker's task (403
 * permission_denied, a malformed task id 400), then what the catalog lets the caller's role do (roleRefusal: 403
 * tool_not_available, or permission_denied for the admin inside a session, a session token on admin work, a
 * worker's session-wide read). Checks that need the object (a run, a step, an action) stay with it.
 */
export function requireOperationRole(op: Operation): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const caller = c.get("caller");
    const sid = c.req.param("sid");
    const tid = c.req.param("tid");
    if (caller.kind === "token" && sid !== undefined) {
      if (tid === undefined) requireSessionActor(c, sid);
      else requireTaskActor(c, sid, tid);
    }
    const refusal = roleRefusal(op, caller.kind === "admin" ? "admin" : caller.claims.role);
    if (refusal !== null) fail(refusal.code, refusal.message, refusal.details);
    return next();
  };
}
