/**
 * @module CORS for browsers on /v1/* and /mcp (dashboards with EventSource, product UIs), from the CORS_ORIGINS var:
 * comma-separated origins, or `*`; unset or empty: no CORS headers at all.
 */
import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import type { AppEnv } from "./auth.js";

/** Request headers a browser may send: the bearer token, JSON bodies, SSE resume, idempotent retries, MCP's own. */
const ALLOW_HEADERS = ["Authorization", "Content-Type", "Last-Event-ID", "Idempotency-Key", "Mcp-Protocol-Version", "Mcp-Session-Id", "Mcp-Method", "Mcp-Name"];
/** Methods a browser may use: every method of the route catalog (DELETE unlinks tasks), and the preflight's. */
const ALLOW_METHODS = ["GET", "POST", "PATCH", "DELETE", "OPTIONS"];
/** Response headers a browser script may read. */
const EXPOSE_HEADERS = ["X-Last-Wal-Seq", "Mcp-Session-Id", "WWW-Authenticate"];

/** The origins of a CORS_ORIGINS value: `*`, a list, or none. */
export function parseCorsOrigins(raw: string | undefined): "*" | string[] {
  const list = (raw ?? "")
    .split(",")
    .map((s) => s.trim().replace(/\/+$/, ""))
    .filter((s) => s !== "");
  return list.includes("*") ? "*" : list;
}

let cached: { raw: string | undefined; handler: MiddlewareHandler<AppEnv> | null } | null = null;

/** hono's cors middleware configured from the request's bindings (built once per CORS_ORIGINS value). */
export const corsFromEnv: MiddlewareHandler<AppEnv> = async (c, next) => {
  const raw = c.env.CORS_ORIGINS;
  if (cached === null || cached.raw !== raw) {
    const origins = parseCorsOrigins(raw);
    const handler =
      origins !== "*" && origins.length === 0
        ? null
        : cors({ origin: origins, allowHeaders: ALLOW_HEADERS, exposeHeaders: EXPOSE_HEADERS, allowMethods: ALLOW_METHODS, maxAge: 600 });
    cached = { raw, handler };
  }
  return cached.handler === null ? next() : cached.handler(c, next);
};
