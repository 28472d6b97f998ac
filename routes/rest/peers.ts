/** @module The credentials of a session's A2A peers: set, list and delete one per origin (orchestrator only); a value is never read back. */
import { Hono } from "hono";
import { OriginSchema, SetPeerCredentialBody } from "../../src/contract/index.js";
import type { RpcResult } from "../../durable-objects/shared/rpc-result.js";
import type { PeerCredentialInfo } from "../../durable-objects/session/session-rpc.js";
import { type AppEnv, requireSessionActor } from "../http/auth.js";
import { readCommandBody } from "../http/body.js";
import { errorResponse, fail } from "../../durable-objects/shared/http-errors.js";

/** Routes under /v1/sessions. */
export const peerRoutes = new Hono<AppEnv>();

/** The orchestrator of session `sid`, or 403: a credential is the session owner's to give. */
function requireOrchestrator(c: Parameters<typeof requireSessionActor>[0], sid: string, tool: string): void {
  const actor = requireSessionActor(c, sid);
  if (actor.role !== "orchestrator") fail("tool_not_available", `${tool} is available to the orchestrator only`, { role: actor.role });
}

// Upsert: setting an origin again replaces its value, so a retry needs no Idempotency-Key.
peerRoutes.post("/:sid/peers", async (c) => {
  const sid = c.req.param("sid");
  const { body } = await readCommandBody(c, SetPeerCredentialBody);
  const result = (await c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sid)).setPeerCredential(body.origin, body.authorization)) as RpcResult<PeerCredentialInfo>;
  return result.ok ? c.json({ origin: result.value.origin }, 201) : errorResponse(c, result.error);
});

peerRoutes.get("/:sid/peers", async (c) => {
  const sid = c.req.param("sid");
  requireOrchestrator(c, sid, "list_peers");
  const session = c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sid));
  if ((await session.describe()) === null) fail("not_found", `no session ${sid}`);
  return c.json({ peers: await session.listPeers() });
});

// The origin is the peer's key, as POST sets it and GET lists it, percent-encoded as one path segment.
peerRoutes.delete("/:sid/peers/:origin", async (c) => {
  const sid = c.req.param("sid");
  const origin = c.req.param("origin");
  if (!OriginSchema.safeParse(origin).success) fail("validation_error", "the peer must be named by its origin, percent-encoded: http(s)://host[:port], lowercase, without a path", { origin: origin.slice(0, 200) });
  const result = (await c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sid)).deletePeerCredential(origin)) as RpcResult<{ origin: string }>;
  return result.ok ? c.json(result.value) : errorResponse(c, result.error);
});
