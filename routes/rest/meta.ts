/**
 * @module Public and self-describing routes: OpenAPI, the task template and /v1/tools. The API reference page
 * (/docs) is a static asset drawn from /openapi.json in the browser (dashboard/docs.html), so it needs no other host.
 */
import { Hono } from "hono";
import { type AppEnv } from "../http/auth.js";
import { jsonSchemaOf, type Operation, OPERATIONS, openApiDocument, type Role } from "../http/catalog.js";
import { type JsonSchema, SchemaDefinitions } from "../http/schema-definitions.js";
import { fail } from "../../durable-objects/shared/http-errors.js";
import { TASK_TEMPLATE } from "./task-template.js";

/** Routes that need no token. */
export const publicRoutes = new Hono<AppEnv>();

publicRoutes.get("/openapi.json", (c) => c.json(openApiDocument(new URL(c.req.url).origin)));

/** Authenticated self-description routes under /v1. */
export const metaRoutes = new Hono<AppEnv>();

metaRoutes.get("/task-template", (c) => c.json({ role: "user", content: TASK_TEMPLATE }));

metaRoutes.get("/tools", (c) => {
  const caller = c.get("caller");
  const role: Role = caller.kind === "admin" ? "admin" : caller.claims.role;
  if (caller.kind !== "admin" && caller.claims.role === undefined) fail("unauthorized", "unknown role");
  const tools = OPERATIONS.filter((op) => op.roles.includes(role) && op.stream === undefined).map((op) => ({
    name: op.tool,
    description: op.summary,
    http: { method: op.method.toUpperCase(), path: op.path },
    input_schema: toolInputSchema(op),
  }));
  return c.json({ role, tools });
});

/** A tool's input: its path parameters, `body` and `query`, whole (the definitions of body and query sit at its root). */
function toolInputSchema(op: Operation): JsonSchema {
  const definitions = new SchemaDefinitions("#/$defs/");
  const properties = {
    ...Object.fromEntries([...op.path.matchAll(/\{(\w+)\}/g)].map((m) => [m[1], { type: "string" }])),
    ...(op.body === undefined ? {} : { body: definitions.take(jsonSchemaOf(op.body)) }),
    ...(op.query === undefined ? {} : { query: definitions.take(jsonSchemaOf(op.query)) }),
  };
  return { type: "object", properties, ...(Object.keys(definitions.defs).length === 0 ? {} : { $defs: definitions.defs }) };
}
