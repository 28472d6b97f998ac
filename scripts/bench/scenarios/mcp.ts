/**
 * @module The MCP scenario: the same operation as a REST call and as an MCP `tools/call` to `/mcp`, by C
 * concurrent clients, in rounds of a fixed number of calls, so rounds of each carrier can be interleaved on one
 * server. A read (`agent.task_get` of a 4-step task ↔ GET .../tasks/{tid}) and a write (`agent.task_progress` on
 * the step the client's worker run holds ↔ POST .../steps/{step}/progress: renews the lease, writes a WAL event).
 */
import { Client as McpClient, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type Client, type Session, stepsOf } from "../harness/http-client.js";
import { round } from "../harness/meter.js";
import { pooledRounds, type TimedRound, timeCalls } from "../harness/rounds.js";

/** The two operations. */
export type McpOp = "read" | "write";

/**
 * How a round's calls travel: `floor` = GET /health/object (an empty Worker → Durable Object round trip, no
 * token); `rest` = the REST route with fetch; `mcp` = @modelcontextprotocol/client 2.x (versionNegotiation auto:
 * 2026-07-28, one POST per call); `mcp-2025` = @modelcontextprotocol/sdk 1.x (2025-11-25 through the server's
 * stateless fallback; answers come as an SSE stream); `mcp-raw` = the modern client's exact POST sent with fetch,
 * no SDK (what the server costs without the client library's own work).
 */
export type Carrier = "floor" | "rest" | "mcp" | "mcp-2025" | "mcp-raw";
export const CARRIERS: readonly Carrier[] = ["floor", "rest", "mcp", "mcp-2025", "mcp-raw"];

/** One client's tokens: its own observer (reads) and its own worker run holding `stepId` of the write task (writes). */
interface BenchClient { readToken: string; workerToken: string; stepId: string }

/** One call of one client; throws on an answer other than the operation's success. */
type Call = (op: McpOp, seq: number) => Promise<void>;

/** A block: one concurrency, one operation, its tasks, clients and one caller per carrier and client. */
export interface Block { concurrency: number; op: McpOp; readTask: string; writeTask: string; answerBytes: { rest: number; mcp: number }; callers: Map<Carrier, Call[]>; httpRequests: Map<Carrier, { n: number }>; close(): Promise<void> }

/** The exact request the modern client sends for a tools/call (headers and `_meta`), for `mcp-raw`. */
const MODERN_VERSION = "2026-07-28";
const CLIENT_INFO = { name: "bench-mcp", version: "1.0.0" };

const progressBody = (seq: number) => ({ phase: "bench", summary: `call ${seq}` });

/** A tool result that is not an error and carries the task (both operations answer the task's view). */
function checkToolResult(result: { isError?: boolean; structuredContent?: { task?: unknown } } | undefined, what: string): void {
  if (result?.isError === true || result?.structuredContent?.task === undefined) throw new Error(`${what}: ${JSON.stringify(result).slice(0, 300)}`);
}

/**
 * Sets up a block: a session, a 4-step read task, a write task with one step per client; per client a minted
 * observer token and a worker run that claims its own step; and, per carrier, a caller for each client (MCP
 * clients connected here, outside any measured window; their fetch counts HTTP requests).
 */
export async function setupBlock(client: Client, adminToken: string, concurrency: number, op: McpOp, carriers: readonly Carrier[]): Promise<Block> {
  const session: Session = await client.session(adminToken);
  const readTask = (await client.task(session, "read", { title: "Read", summary: "MCP benchmark read", steps: stepsOf(4) })).path;
  const writeTask = (await client.task(session, "write", { title: "Write", summary: "MCP benchmark write", steps: stepsOf(concurrency) })).path;
  const clients: BenchClient[] = [];
  for (let i = 0; i < concurrency; i++) {
    const stepId = stepsOf(concurrency)[i]!.step_id;
    const own: BenchClient = { readToken: "", workerToken: "", stepId };
    if (op === "read") own.readToken = (await client.must(201, "POST", `/v1/sessions/${session.sid}/tokens`, adminToken, { role: "observer", agent_id: `reader-${i}` })).body.token;
    else {
      // A block's rounds follow each other closely and every round renews each client's lease: the claim holds throughout.
      own.workerToken = (await client.must(201, "POST", `${writeTask}/workers`, session.orch, { agent_id: `writer-${i}` })).body.token;
      await client.must(200, "POST", `${writeTask}/steps/${stepId}/claim`, own.workerToken, {});
    }
    clients.push(own);
  }
  const readId = readTask.split("/").at(-1)!;
  const tokenOf = (c: BenchClient, o: McpOp) => (o === "read" ? c.readToken : c.workerToken);
  const toolOf = (c: BenchClient, o: McpOp, seq: number) =>
    o === "read" ? { name: "agent.task_get", arguments: { task_id: readId } } : { name: "agent.task_progress", arguments: { step_id: c.stepId, ...progressBody(seq) } };

  /** The REST call; answers the body's text. */
  const restCall = async (c: BenchClient, o: McpOp, seq: number): Promise<string> => {
    const a = o === "read" ? await client.call("GET", readTask, c.readToken, undefined, false) : await client.call("POST", `${writeTask}/steps/${c.stepId}/progress`, c.workerToken, progressBody(seq), false);
    if (a.status !== 200 || (JSON.parse(a.body as string) as { task?: unknown }).task === undefined) throw new Error(`REST ${o} ${a.status}: ${String(a.body).slice(0, 300)}`);
    return a.body as string;
  };
  /** The 2026 client's tools/call request, byte for byte its headers and body, sent with fetch; answers the body's text. */
  let rawId = 0;
  const rawToolCall = async (c: BenchClient, o: McpOp, seq: number): Promise<string> => {
    const tool = toolOf(c, o, seq);
    const meta = { "io.modelcontextprotocol/protocolVersion": MODERN_VERSION, "io.modelcontextprotocol/clientInfo": CLIENT_INFO, "io.modelcontextprotocol/clientCapabilities": {} };
    const res = await fetch(`${client.base}/mcp`, {
      method: "POST",
      headers: { accept: "application/json, text/event-stream", authorization: `Bearer ${tokenOf(c, o)}`, "content-type": "application/json", "mcp-method": "tools/call", "mcp-name": tool.name, "mcp-protocol-version": MODERN_VERSION },
      body: JSON.stringify({ method: "tools/call", params: { ...tool, _meta: meta }, jsonrpc: "2.0", id: rawId++ }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`mcp-raw ${o} ${res.status}: ${text.slice(0, 300)}`);
    checkToolResult((JSON.parse(text) as { result?: never }).result, `mcp-raw ${o}`);
    return text;
  };
  // What one call carries back each way (outside any measured window; a write here is one more progress event).
  const answerBytes = { rest: Buffer.byteLength(await restCall(clients[0]!, op, 0)), mcp: Buffer.byteLength(await rawToolCall(clients[0]!, op, 0)) };

  const callers = new Map<Carrier, Call[]>();
  const httpRequests = new Map<Carrier, { n: number }>(carriers.map((k) => [k, { n: 0 }]));
  const closers: (() => Promise<void>)[] = [];
  const counted = (k: Carrier) => {
    const counter = httpRequests.get(k)!;
    return ((url: string | URL | Request, init?: RequestInit) => {
      counter.n++;
      return fetch(url, init);
    }) as typeof fetch;
  };
  for (const k of carriers) {
    const counter = httpRequests.get(k)!;
    const calls: Call[] = [];
    for (const c of clients) {
      if (k === "floor") {
        calls.push(async () => {
          counter.n++;
          const a = await client.call("GET", "/health/object", undefined, undefined, false);
          if (a.status !== 200) throw new Error(`GET /health/object ${a.status}`);
        });
      } else if (k === "rest") {
        calls.push(async (o, seq) => {
          counter.n++;
          await restCall(c, o, seq);
        });
      } else if (k === "mcp") {
        // Each client its own official client and token, as each agent would have.
        const m = new McpClient(CLIENT_INFO, { versionNegotiation: { mode: "auto" } });
        await m.connect(new StreamableHTTPClientTransport(new URL(`${client.base}/mcp`), { fetch: counted(k), requestInit: { headers: { authorization: `Bearer ${tokenOf(c, op)}` } } }));
        closers.push(() => m.close());
        calls.push(async (o, seq) => checkToolResult((await m.callTool(toolOf(c, o, seq))) as never, `mcp ${o}`));
      } else if (k === "mcp-2025") {
        const m = new LegacyClient(CLIENT_INFO);
        await m.connect(new LegacyTransport(new URL(`${client.base}/mcp`), { fetch: counted(k), requestInit: { headers: { authorization: `Bearer ${tokenOf(c, op)}` } } }));
        closers.push(() => m.close());
        calls.push(async (o, seq) => checkToolResult((await m.callTool(toolOf(c, o, seq))) as never, `mcp-2025 ${o}`));
      } else {
        calls.push(async (o, seq) => {
          counter.n++;
          await rawToolCall(c, o, seq);
        });
      }
    }
    callers.set(k, calls);
  }
  return { concurrency, op, readTask, writeTask, answerBytes, callers, httpRequests, close: async () => void (await Promise.allSettled(closers.map((f) => f()))) };
}

/** One round: one carrier, `callsPerClient` calls by each client of the block back to back; `samples` stay in memory. */
export interface Round extends TimedRound {
  carrier: Carrier;
  op: McpOp;
  concurrency: number;
  pair: number;
  http_requests_per_call: number;
}

/** Runs one round of `carrier` in `block`; `serverGroup` is the dev server's process group (its CPU is measured when given). */
export async function runRound(block: Block, carrier: Carrier, callsPerClient: number, pair: number, serverGroup: number | null | undefined): Promise<Round> {
  const counter = block.httpRequests.get(carrier)!;
  const requestsBefore = counter.n;
  const timed = await timeCalls(block.callers.get(carrier)!.map((call) => (i: number) => call(block.op, i)), callsPerClient, serverGroup);
  return { carrier, op: block.op, concurrency: block.concurrency, pair, ...timed, http_requests_per_call: round((counter.n - requestsBefore) / Math.max(1, timed.calls + timed.errors), 3) };
}

/** The rounds of one carrier (one op, one concurrency) as one: calls and time summed, latencies pooled, CPU summed. */
export function pooled(rounds: Round[]) {
  const calls = rounds.reduce((a, r) => a + r.calls, 0);
  return {
    ...pooledRounds(rounds),
    calls_per_s_by_round: rounds.map((r) => r.calls_per_s),
    http_requests_per_call: round(rounds.reduce((a, r) => a + r.http_requests_per_call * r.calls, 0) / Math.max(1, calls), 3),
  };
}
