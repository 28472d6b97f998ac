/** @module The Worker entry: builds the HTTP app and exports the Durable Object classes. */
import { Hono } from "hono";

/** The HTTP application served by the Worker. */
export const app = new Hono();

app.get("/health", (c) => c.json({ ok: true, service: "agent-task-runtime" }));

export default app;
