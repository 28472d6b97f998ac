/**
 * MCP over real HTTP against `wrangler dev`: the example (scripts/mcp-example.ts) drives a fan-out/fan-in task to
 * completion with the official 2.x client; a 1.x client (2025-11-25, as 2025-era IDE and desktop clients speak)
 * works as a worker; tokens are checked as on REST; a plain 2025 JSON-RPC POST is answered and GET has no stream.
 */
import { createHmac } from "node:crypto";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { beforeAll, describe, expect, it, inject } from "vitest";
import { defaultAdminToken } from "../../scripts/dev-server.js";
import { runMcpExample } from "../../scripts/mcp-example.js";

/** The e2e project's shared dev server (test/e2e/support/shared-server.ts). */
let server: { base: string };

beforeAll(async () => {
  server = { base: inject("sharedDevServerBase") };
});

/** Rejects after `ms` with `what`. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** fetch with every request bounded, for the MCP clients' transports. */
const boundedFetch = (url: string | URL | Request, init?: RequestInit) => fetch(url, { ...init, signal: init?.signal ?? AbortSignal.timeout(15_000) });

/** A fresh session over REST as the admin: its id and orchestrator token. */
async function newSession(): Promise<{ sid: string; token: string }> {
  const res = await fetch(`${server.base}/v1/sessions`, {
    method: "POST",
    headers: { authorization: `Bearer ${defaultAdminToken()}`, "content-type": "application/json" },
    body: "{}",
    signal: AbortSignal.timeout(15_000),
  });
  const body = (await res.json()) as { session_id: string; orchestrator: { token: string } };
  expect(res.status).toBe(201);
  return { sid: body.session_id, token: body.orchestrator.token };
}

/** The official 2.x client, negotiating its revision. */
async function connectModern(url: string, token: string): Promise<Client> {
  const client = new Client({ name: "e2e-modern", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
  await within(client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: boundedFetch, requestInit: { headers: { authorization: `Bearer ${token}` } } })), 15_000, "2.x connect");
  return client;
}

/** The official 1.x client (2025-11-25) and its transport, which holds the negotiated revision. */
async function connectLegacy(url: string, token: string): Promise<{ client: LegacyClient; transport: LegacyTransport }> {
  const client = new LegacyClient({ name: "e2e-legacy", version: "1.0.0" });
  const transport = new LegacyTransport(new URL(url), { fetch: boundedFetch, requestInit: { headers: { authorization: `Bearer ${token}` } } });
  await within(client.connect(transport), 15_000, "1.x connect");
  return { client, transport };
}

/** A raw JSON-RPC POST to /mcp; the answer's JSON-RPC message whether it came as JSON or as one SSE event. */
async function rawPost(message: unknown, headers: Record<string, string>): Promise<{ status: number; headers: Headers; message: any }> {
  const res = await fetch(`${server.base}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify(message),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  const data = (res.headers.get("content-type") ?? "").includes("text/event-stream")
    ? text.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("")
    : text;
  return { status: res.status, headers: res.headers, message: data === "" ? null : JSON.parse(data) };
}

/** A token with a valid token's header and claims, signed with a secret that is not the server's. */
function forge(token: string): string {
  const [header, payload] = token.split(".");
  const signature = createHmac("sha256", "not-the-server-secret").update(`${header}.${payload}`).digest("base64url");
  return `${header}.${payload}.${signature}`;
}

const INITIALIZE_2025 = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1.0.0" } } };

describe("MCP at /mcp against wrangler dev", () => {
  it("Should drive the example's fan-out/fan-in task to completed with every step completed, over revision 2026-07-28", async () => {
    const lines: string[] = [];
    const summary = await within(runMcpExample({ base: server.base, adminToken: defaultAdminToken(), log: (l) => lines.push(l) }), 30_000, "the MCP example");
    expect(summary.status).toBe("completed");
    expect(summary.steps.map((s) => s.step_id).sort()).toEqual(["collect-commits", "collect-issues", "write-notes"]);
    expect(summary.steps.every((s) => s.status === "completed")).toBe(true);
    expect(summary.stepsCompleted).toBe(3);
    expect(summary.protocolVersion).toBe("2026-07-28");
    // create, 3 dispatches, 3 × (claim, running, progress, completed, claim → no_step_claimed, finish), complete, get.
    expect(summary.toolCalls).toBe(1 + 3 + 3 * 6 + 2);
    expect(lines.some((l) => l.includes("No step claimed"))).toBe(true);
  });

  it("Should serve a 1.x client on 2025-11-25 as a worker: the worker's tools, a claim and a completion", async () => {
    const { token } = await newSession();
    const orch = await connectModern(`${server.base}/mcp`, token);
    try {
      expect(orch.getNegotiatedProtocolVersion()).toBe("2026-07-28");
      const created = await orch.callTool({ name: "agent.task_create", arguments: { task_id: "legacy", wal_name: "legacy", title: "Legacy worker", steps: [{ step_id: "draft", title: "Draft", summary: "Write a draft", depends_on_step_ids: [] }] } });
      expect(created.isError).toBeFalsy();
      const dispatched = await orch.callTool({ name: "agent.dispatch_worker", arguments: { task_id: "legacy", agent_id: "legacy-worker" } });
      const run = dispatched.structuredContent as { token: string; mcp_url: string; run_id: string };
      expect(run.mcp_url).toBe(`${server.base}/mcp`);

      const { client: worker, transport } = await connectLegacy(run.mcp_url, run.token);
      try {
        expect(transport.protocolVersion).toBe("2025-11-25");
        const names = (await worker.listTools()).tools.map((t) => t.name);
        expect(names).toEqual(expect.arrayContaining(["agent.task_claim_step", "agent.task_claim_next", "agent.task_update_step", "agent.task_progress", "finish_worker_run", "agent.task_get"]));
        for (const orchestratorOnly of ["agent.task_create", "agent.dispatch_worker", "agent.task_complete", "agent.task_update", "cancel_worker_run"]) expect(names).not.toContain(orchestratorOnly);

        const claim = await worker.callTool({ name: "agent.task_claim_step", arguments: { step_id: "draft" } });
        expect(claim.isError).toBeFalsy();
        expect((claim.structuredContent as any).step).toMatchObject({ step_id: "draft", claimed_by_run_id: run.run_id });
        for (const status of ["running", "completed"]) {
          const update = await worker.callTool({ name: "agent.task_update_step", arguments: { step_id: "draft", status, result_summary: "a draft" } });
          expect(update.isError).toBeFalsy();
        }
        const finished = await worker.callTool({ name: "finish_worker_run", arguments: { outcome: "finished" } });
        expect(finished.isError).toBeFalsy();
      } finally {
        await worker.close();
      }

      const dag = await orch.callTool({ name: "agent.task_get", arguments: { task_id: "legacy" } });
      const draft = (dag.structuredContent as any).steps.find((s: any) => s.step_id === "draft");
      expect(draft).toMatchObject({ status: "completed", result_summary: "a draft" });
    } finally {
      await orch.close();
    }
  });

  it("Should answer an orchestrator's call of a worker-only tool with an isError result coded tool_not_available", async () => {
    const { token } = await newSession();
    const orch = await connectModern(`${server.base}/mcp`, token);
    try {
      const result = await orch.callTool({ name: "agent.task_claim_step", arguments: { task_id: "any", step_id: "any" } });
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toMatchObject({ status: 403, error: { code: "tool_not_available" } });
    } finally {
      await orch.close();
    }
  });

  it("Should refuse a request without a token, and one with a forged token, with 401 and a Bearer challenge", async () => {
    const { token } = await newSession();
    const valid = await rawPost(INITIALIZE_2025, { authorization: `Bearer ${token}` });
    expect(valid.status).toBe(200);
    const noToken: Record<string, string> = {};
    for (const headers of [noToken, { authorization: `Bearer ${forge(token)}` }]) {
      const refused = await rawPost(INITIALIZE_2025, headers);
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toBe('Bearer realm="agent-task-runtime"');
      expect(refused.message.error.code).toBe("unauthorized");
    }
  });

  it("Should refuse the admin token, and a valid token sent from another site's Origin, with 403", async () => {
    const { token } = await newSession();
    const admin = await rawPost(INITIALIZE_2025, { authorization: `Bearer ${defaultAdminToken()}` });
    expect(admin.status).toBe(403);
    const crossSite = await rawPost(INITIALIZE_2025, { authorization: `Bearer ${token}`, origin: "https://evil.example" });
    expect(crossSite.status).toBe(403);
    const sameOrigin = await rawPost(INITIALIZE_2025, { authorization: `Bearer ${token}`, origin: server.base });
    expect(sameOrigin.status).toBe(200);
  });

  it("Should answer a plain 2025-11-25 JSON-RPC initialize, and a tools/list sent without one (stateless)", async () => {
    const { token } = await newSession();
    const init = await rawPost(INITIALIZE_2025, { authorization: `Bearer ${token}` });
    expect(init.status).toBe(200);
    expect(init.message).toMatchObject({ jsonrpc: "2.0", id: 1, result: { protocolVersion: "2025-11-25", serverInfo: { name: "agent-task-runtime" } } });
    expect(init.headers.get("mcp-session-id")).toBeNull();

    const list = await rawPost({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }, { authorization: `Bearer ${token}`, "mcp-protocol-version": "2025-11-25" });
    expect(list.status).toBe(200);
    expect(list.message.result.tools.map((t: { name: string }) => t.name)).toContain("agent.task_create");
  });

  it("Should answer GET /mcp with 405: a stateless server opens no server-to-client stream", async () => {
    const { token } = await newSession();
    const res = await fetch(`${server.base}/mcp`, { headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" }, signal: AbortSignal.timeout(15_000) });
    await res.body?.cancel();
    expect(res.status).toBe(405);
  });
});
