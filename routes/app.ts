/** @module The HTTP application: public routes, authentication, v1 routes, and the error envelope. */
import { Hono } from "hono";
import { runtimeError } from "../src/core/index.js";
import { type AppEnv, authenticate } from "./auth.js";
import { errorResponse, toRuntimeError } from "./http-error.js";
import { sessionRoutes } from "./sessions.js";
import { taskRoutes } from "./tasks.js";

/** Builds the Worker's Hono app. */
export function buildApp(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get("/health", (c) => c.json({ ok: true, service: "agent-task-runtime" }));
  app.use("/v1/*", authenticate);
  app.route("/v1/sessions", sessionRoutes);
  app.route("/v1/sessions", taskRoutes);
  app.notFound((c) => errorResponse(c, runtimeError("not_found", `no route ${c.req.method} ${new URL(c.req.url).pathname}`)));
  app.onError((e, c) => {
    const error = toRuntimeError(e);
    if (error.code === "storage_error") console.error("unexpected error", e);
    return errorResponse(c, error);
  });
  return app;
}
