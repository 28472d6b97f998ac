/**
 * @module The API's paths reach the Worker first: wrangler.toml's `run_worker_first` patterns take every route the
 * Worker serves (the catalog's operations, MCP, A2A, the probes, the OpenAPI document, the Agent Card, the bench
 * routes) and none of the dashboard's files, which stay static assets.
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { OPERATIONS } from "../../routes/http/catalog.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** The `run_worker_first` array of wrangler.toml's [assets] table. */
function workerFirstPatterns(): string[] {
  const toml = readFileSync(`${ROOT}wrangler.toml`, "utf8");
  const line = /^run_worker_first\s*=\s*(\[.*\])\s*$/m.exec(toml);
  if (line === null) throw new Error("wrangler.toml has no run_worker_first array");
  return JSON.parse(line[1]!) as string[];
}

/** Cloudflare's route pattern rule: `*` matches any run of characters; a `!` pattern excludes and wins. */
function runsWorkerFirst(patterns: readonly string[], path: string): boolean {
  const matches = (pattern: string) => new RegExp(`^${pattern.split("*").map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`).test(path);
  if (patterns.some((p) => p.startsWith("!") && matches(p.slice(1)))) return false;
  return patterns.some((p) => !p.startsWith("!") && matches(p));
}

/** The Worker's routes outside the catalog (routes/app.ts, routes/rest/meta.ts, routes/rest/bench.ts). */
const OTHER_WORKER_PATHS = ["/mcp", "/a2a", "/health", "/health/object", "/openapi.json", "/.well-known/agent-card.json", "/_bench/objects/x/touch", "/_bench/sessions/s/seed"];

describe("run_worker_first", () => {
  const patterns = workerFirstPatterns();

  it("Should send every route the Worker serves to the Worker first", () => {
    const catalog = OPERATIONS.map((op) => op.path.replace(/\{(\w+)\}/g, "x"));
    expect(catalog.length).toBeGreaterThan(20);
    const missed = [...catalog, ...OTHER_WORKER_PATHS].filter((p) => !runsWorkerFirst(patterns, p));
    expect(missed).toEqual([]);
  });

  it("Should leave every dashboard file and page to the static assets", () => {
    const files = readdirSync(`${ROOT}dashboard`).filter((f) => /\.(html|css|js|ts|svg)$/.test(f)).map((f) => `/${f}`);
    const pages = ["/", "/docs", "/docs.html", "/index.html", "/app.js", "/favicon.svg", ...files];
    expect(pages.filter((p) => runsWorkerFirst(patterns, p))).toEqual([]);
  });

  it("Should tell a path the patterns take from one they do not", () => {
    expect(runsWorkerFirst(["/v1/*", "!/v1/docs/*"], "/v1/sessions")).toBe(true);
    expect(runsWorkerFirst(["/v1/*", "!/v1/docs/*"], "/v1/docs/a")).toBe(false);
    expect(runsWorkerFirst(["/mcp"], "/mcpx")).toBe(false);
  });
});
