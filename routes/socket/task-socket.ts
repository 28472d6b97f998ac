/**
 * @module The task's command socket, `GET .../tasks/{tid}/socket` upgraded to a WebSocket: batches as frames
 * over one connection, for a worker host that writes to one task all the time. A frame is a batch body with
 * an `id` and is answered by one frame with the same `id` and the batch's results (or a frame-level error);
 * every command still carries its own token, exactly as in `POST .../batch`. Frames of a connection are
 * run one after another, in arrival order.
 *
 * The Worker authenticates the upgrade and hands it to the task's object, which holds the socket with the
 * WebSocket Hibernation API (durable-objects/task/command-sockets.ts): frames go straight to the object that
 * decides them (no Worker → object hop per frame), every frame is an event of its own for the platform's CPU
 * limits, and an idle socket costs no duration. The frame protocol (frames, auth, status codes, error
 * envelopes) is the commands' (durable-objects/commands/command-frames.ts), which both sides use; this module
 * is the route alone.
 *
 * Why a socket: a request costs far more than the commands it carries (HTTP parsing on both ends, a hop per
 * proxy), and a worker host's batches are small and frequent; a socket pays the request once.
 */
import { Hono } from "hono";
import { taskStub } from "../../durable-objects/commands/batch.js";
import { HOLDER_HEADER, SCOPE_HEADER, type SocketScope } from "../../durable-objects/commands/command-frames.js";
import { fail } from "../../durable-objects/shared/http-errors.js";
import { type AppEnv, requireTaskActor, slotHolder } from "../http/auth.js";

/** The route of the command socket: authenticate, then hand the upgrade to the task's object. */
export const taskSocketRoutes = new Hono<AppEnv>();

taskSocketRoutes.get("/:sid/tasks/:tid/socket", async (c) => {
  const sid = c.req.param("sid");
  const tid = c.req.param("tid");
  // requireOperationRole has refused the roles that can send no command over it (roleRefusal): a socket holds one
  // of its task object's slots for as long as it stays open.
  const actor = requireTaskActor(c, sid, tid);
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket") fail("validation_error", "this route takes a WebSocket upgrade (Upgrade: websocket)");
  const url = new URL(c.req.url);
  url.searchParams.delete("access_token");
  // The object keeps the token's run, expiry, id and generation with the socket: it closes the socket when the run
  // ends, the token expires or the session revokes it.
  const caller = c.get("caller");
  const claims = caller.kind === "token" ? caller.claims : null;
  const scope: SocketScope = {
    sid, tid, role: actor.role, run: actor.run_id,
    ...(claims === null ? {} : { exp: claims.exp, token_id: claims.jti ?? null, generation: claims.gen ?? 0 }),
  };
  const headers = { upgrade: "websocket", [SCOPE_HEADER]: JSON.stringify(scope), [HOLDER_HEADER]: await slotHolder(c) };
  return taskStub(c.env, sid, tid).fetch(url.toString(), { headers });
});

