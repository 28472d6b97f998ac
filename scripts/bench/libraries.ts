/**
 * @module `npm run bench:libraries`: what the libraries on the per-call path cost, in Node (no workerd, no HTTP), so
 * a decision about them rests on a figure: the MCP SDK's per-request exchange for one 2026-07-28 `tools/call`
 * against the same JSON-RPC answer written by hand (and against one server reused for every request), the SDK's
 * `isLegacyRequest` classification that /mcp skips for such a call, and zod's check of a socket frame's envelope.
 * Each pair is measured in alternating blocks (warm JIT), medians of the blocks; writes bench/libraries-results.json.
 */
import { createMcpHandler, isLegacyRequest, McpServer, PROTOCOL_VERSION_META_KEY } from "@modelcontextprotocol/server";
import os from "node:os";
import { performance } from "node:perf_hooks";
import "../../src/zod-setup.js";
import { SocketFrame } from "../../durable-objects/commands/command-schemas.js";
import { validate } from "../../durable-objects/commands/command-json.js";
import { parseCli, run } from "./harness/cli.js";
import { median } from "./harness/rounds.js";
import { round, sourceState } from "./harness/meter.js";
import { fmt, printTables, writeResults } from "./harness/report.js";

/** A task answer of about the size of bench:mcp's read (a 4-step task, ≈ 4.5 kB of JSON). */
const ANSWER_TEXT = JSON.stringify({
  task: {
    task_id: "t1",
    title: "Read",
    summary: "MCP benchmark read",
    status: "running",
    steps: Array.from({ length: 4 }, (_, i) => ({ step_id: `s${i}`, title: `Step ${i}`, status: "ready", deps: [], attempts: [], summary: "y".repeat(900) })),
  },
});
const META = { [PROTOCOL_VERSION_META_KEY]: "2026-07-28", "io.modelcontextprotocol/clientInfo": { name: "bench", version: "1" }, "io.modelcontextprotocol/clientCapabilities": {} };
const CALL = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "agent.task_get", arguments: { task_id: "t1" }, _meta: META } };
const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "agent.task_get" };
const RESULT_TEXT = "Task t1 \"Read\": 4 steps";

/** A server answering tools/call with the task answer, as /mcp's does (low-level handler, structuredContent = the REST answer). */
function buildServer(): McpServer {
  const server = new McpServer({ name: "bench", version: "1" }, { capabilities: { tools: { listChanged: false } } });
  server.server.setRequestHandler("tools/call", () => server.server.projectCallToolResult({ content: [{ type: "text", text: RESULT_TEXT }], structuredContent: JSON.parse(ANSWER_TEXT) as Record<string, unknown> }, undefined));
  return server;
}

const perRequest = createMcpHandler(() => buildServer(), { legacy: "stateless" });
const pool: McpServer[] = [];
const reused = createMcpHandler(() => pool.find((s) => s.server.transport === undefined) ?? (pool.push(buildServer()), pool.at(-1)!), { legacy: "stateless" });
const post = () => new Request("http://bench/mcp", { method: "POST", headers: HEADERS, body: JSON.stringify(CALL) });

/** One call of each measured thing, returning something so nothing is optimized away. */
const subjects: Record<string, () => Promise<unknown> | unknown> = {
  "SDK exchange, a server per request": async () => (await perRequest.fetch(post(), { parsedBody: CALL })).text(),
  "SDK exchange, one server reused": async () => (await reused.fetch(post(), { parsedBody: CALL })).text(),
  "the same answer written by hand": async () => {
    post();
    const result = { content: [{ type: "text", text: RESULT_TEXT }], structuredContent: JSON.parse(ANSWER_TEXT) as unknown };
    return new Response(JSON.stringify({ jsonrpc: "2.0", id: CALL.id, result }), { headers: { "content-type": "application/json" } }).text();
  },
  "isLegacyRequest (2026-07-28 tools/call)": () => isLegacyRequest(post(), CALL),
  "a Request alone (in the two above)": () => post(),
  "SocketFrame check, 32 commands": () => validate(SocketFrame, FRAME),
};
const FRAME = { id: 7, commands: Array.from({ length: 32 }, (_, i) => ({ token: `tok_${"x".repeat(120)}`, method: "POST", path: `/v1/sessions/s/tasks/t/steps/s${i}/status`, body: { status: "completed", result_summary: "done", claim_next: true }, idempotency_key: `k${i}` })) };

run(async () => {
  const opts = parseCli("usage: npm run bench:libraries -- [--blocks 6] [--calls 4000]", { blocks: 6, calls: 4000 });
  const wall0 = performance.now();
  const names = Object.keys(subjects);
  for (const name of names) for (let i = 0; i < 2000; i++) await subjects[name]!();
  const blocks = new Map<string, number[]>(names.map((n) => [n, []]));
  for (let b = 0; b < opts.blocks; b++) {
    for (const name of b % 2 === 0 ? names : [...names].reverse()) {
      const f = subjects[name]!;
      const t0 = performance.now();
      for (let i = 0; i < opts.calls; i++) await f();
      blocks.get(name)!.push(((performance.now() - t0) * 1000) / opts.calls);
    }
  }
  const us = (name: string) => round(median(blocks.get(name)!), 2);
  const results = {
    generated_at: new Date().toISOString(),
    source: sourceState(),
    machine: { cpus: os.cpus().length, node: process.version, loadavg: os.loadavg() },
    plan: { blocks: opts.blocks, calls_per_block: opts.calls, answer_bytes: ANSWER_TEXT.length },
    us_per_call: Object.fromEntries(names.map((n) => [n, { median: us(n), by_block: blocks.get(n)!.map((x) => round(x, 2)) }])),
    mcp_sdk_exchange_us: round(us("SDK exchange, a server per request") - us("the same answer written by hand"), 1),
  };
  printTables([{ title: `µs a call in Node ${process.version}, median of ${opts.blocks} alternating blocks of ${opts.calls} calls`, headers: ["what", "µs a call", "blocks"], rows: names.map((n) => [n, fmt(us(n), 2), blocks.get(n)!.map((x) => fmt(x, 1)).join(" ")]) }]);
  console.log(`\nthe SDK's exchange adds ${fmt(results.mcp_sdk_exchange_us, 1)} µs to a tools/call answer of ${ANSWER_TEXT.length} bytes (per request server − by hand)`);
  writeResults("bench/libraries-results.json", results, round((performance.now() - wall0) / 1000, 1));
});
