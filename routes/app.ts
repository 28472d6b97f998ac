/** @module The HTTP application: public routes, authentication, v1 routes, the MCP and A2A endpoints, and the error envelope. */
import { Hono } from "hono";
import { runtimeError } from "../src/core/index.js";
import { serveA2a, serveAgentCard } from "./a2a/a2a.js";
import { type AppEnv, authenticate, inProcessRequest, requireOperationRole } from "./http/auth.js";
import { discardUnreadBody, requireValidContentLength } from "./http/body.js";
import { OPERATIONS } from "./http/catalog.js";
import { corsFromEnv } from "./http/cors.js";
import { benchRoutes } from "./rest/bench.js";
import { eventRoutes } from "./rest/events.js";
import { linkRoutes } from "./rest/links.js";
import { errorResponse, toRuntimeError } from "../durable-objects/shared/http-errors.js";
import { serveMcp } from "./mcp/mcp.js";
import { metaRoutes, publicRoutes } from "./rest/meta.js";
import { peerRoutes } from "./rest/peers.js";
import { scheduleRoutes } from "./rest/schedules.js";
import { sessionRoutes } from "./rest/sessions.js";
import { taskSocketRoutes } from "./socket/task-socket.js";
import { taskRoutes } from "./rest/tasks.js";
import { webhookRoutes } from "./rest/webhooks.js";

/** Builds the Worker's Hono app. */
export function buildApp(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use("*", discardUnreadBody);
  app.get("/health", (c) => c.json({ ok: true, service: "agent-task-runtime" }));
  // A round trip Worker → Durable Object → response doing no work: a liveness probe and the benchmark floor.
  app.get("/health/object", async (c) => {
    const pong = await c.env.SESSIONS.get(c.env.SESSIONS.idFromName("health-probe")).ping();
    return c.json({ ok: pong === "pong" });
  });
  app.route("/", publicRoutes);
  // Bench only: 404 unless the BENCH_SEED var is "1", then the admin token's alone (rest/bench.ts).
  app.route("/_bench", benchRoutes);
  // A2A: the public Agent Card, and JSON-RPC for a2a_client tokens (the route authenticates: its errors are JSON-RPC's).
  app.get("/.well-known/agent-card.json", serveAgentCard);
  app.use("/a2a", requireValidContentLength);
  app.post("/a2a", serveA2a);
  // MCP: the same tokens, CORS and body checks as /v1; each tool call runs its /v1 route through this app.
  app.use("/mcp", corsFromEnv, requireValidContentLength, authenticate);
  app.all("/mcp", (c) => serveMcp(c, async (url, init) => app.fetch(inProcessRequest(url, init, c.get("caller")), c.env, c.executionCtx)));
  // CORS first: a browser's preflight carries no token, and error answers need the headers too.
  app.use("/v1/*", corsFromEnv);
  app.use("/v1/*", requireValidContentLength);
  app.use("/v1/*", authenticate);
  // A call the caller's token alone refuses (by the catalog's roles) is answered here, before its body is read.
  for (const op of OPERATIONS) app.on(op.method.toUpperCase(), op.path.replace(/\{(\w+)\}/g, ":$1"), requireOperationRole(op));
  app.route("/v1", metaRoutes);
  app.route("/v1/sessions", eventRoutes);
  app.route("/v1/sessions", sessionRoutes);
  app.route("/v1/sessions", peerRoutes);
  app.route("/v1/sessions", linkRoutes);
  app.route("/v1/sessions", scheduleRoutes);
  app.route("/v1/sessions", webhookRoutes);
  app.route("/v1/sessions", taskSocketRoutes);
  app.route("/v1/sessions", taskRoutes);
  app.notFound((c) => errorResponse(c, runtimeError("not_found", `no route ${c.req.method} ${new URL(c.req.url).pathname}`)));
  // toRuntimeError logs what it does not recognise (an incident), once, with the id it answers.
  app.onError((e, c) => errorResponse(c, toRuntimeError(e, `${c.req.method} ${new URL(c.req.url).pathname}`)));
  return app;
}
