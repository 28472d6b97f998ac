/**
 * Credentials of a session's A2A peers (POST/GET /v1/sessions/{sid}/peers): the orchestrator sets one
 * Authorization value per peer origin and lists the origins; no read answers a value, only the session object's
 * peerAuthorization (what delegated steps send) gives it; other roles are refused and bad origins are 400. And
 * the outbound peer client (durable-objects/peers/a2a-peer.ts) under workerd, with the runtime's own A2A facade as peer.
 */
import { SELF } from "cloudflare:test";
import { Task } from "@a2a-js/sdk";
import { describe, expect, it } from "vitest";
import { PeerClient } from "../../durable-objects/peers/a2a-peer.js";
import { MAX_PEER_CREDENTIALS } from "../../durable-objects/session/session-peers.js";
import { call, dispatch, newSession, newTask, step } from "../support/helpers.js";
import { connectMcp } from "../support/mcp-clients.js";
import { BASE, bindings, expectError, expectOk, mintRole, uniqueId } from "../support/support.js";

const peersOf = (sid: string) => `/v1/sessions/${sid}/peers`;
const sessionStub = (sid: string) => bindings.SESSIONS.get(bindings.SESSIONS.idFromName(sid));

describe("Peer credentials", () => {
  it("Should set a credential per origin (201 with the origin), replace it on a second set, and list origins without values", async () => {
    const s = await newSession();
    expect(expectOk(await call("GET", peersOf(s.sid), s.orch))).toEqual({ peers: [] });
    expect(expectOk(await call("POST", peersOf(s.sid), s.orch, { origin: "https://peer.example", authorization: "Bearer first-secret" }), 201)).toEqual({ origin: "https://peer.example" });
    expectOk(await call("POST", peersOf(s.sid), s.orch, { origin: "http://127.0.0.1:9999", authorization: "Bearer local-secret" }), 201);
    expectOk(await call("POST", peersOf(s.sid), s.orch, { origin: "https://peer.example", authorization: "Bearer second-secret" }), 201);
    const listed = await call("GET", peersOf(s.sid), s.orch);
    expect(expectOk(listed)).toEqual({
      peers: [
        { origin: "http://127.0.0.1:9999", updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
        { origin: "https://peer.example", updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
      ],
    });
    expect(JSON.stringify(listed.body)).not.toContain("secret");
    expect(await sessionStub(s.sid).peerAuthorization("https://peer.example")).toBe("Bearer second-secret");
    expect(await sessionStub(s.sid).peerAuthorization("http://127.0.0.1:9999")).toBe("Bearer local-secret");
    expect(await sessionStub(s.sid).peerAuthorization("https://other.example")).toBeNull();
  });

  it("Should never answer a value in the session's reads", async () => {
    const s = await newSession();
    expectOk(await call("POST", peersOf(s.sid), s.orch, { origin: "https://peer.example", authorization: "Bearer do-not-leak" }), 201);
    await newTask(s, uniqueId("peers"), [step("a")]);
    for (const path of [`/v1/sessions/${s.sid}`, `/v1/sessions/${s.sid}/tasks?include_terminal=true`, `/v1/sessions/${s.sid}/actions`, peersOf(s.sid)]) {
      const answer = await call("GET", path, s.orch);
      expect(answer.status, path).toBe(200);
      expect(JSON.stringify(answer.body), path).not.toContain("do-not-leak");
    }
  });

  it("Should refuse observers, workers, approvers, the admin and another session's orchestrator with 403, storing nothing", async () => {
    const s = await newSession();
    const other = await newSession();
    const worker = await dispatch(s, await newTask(s, uniqueId("peers"), [step("a")]));
    // [token, code of the write, code of the read]: a worker's token reads only its own task, so the session-wide
    // list is outside its scope.
    const refused = {
      observer: [s.observer, "tool_not_available", "tool_not_available"],
      worker: [worker.token, "tool_not_available", "permission_denied"],
      approver: [await mintRole(s, "approver"), "tool_not_available", "tool_not_available"],
      admin: ["test-admin-token", "permission_denied", "permission_denied"],
      "another session's orchestrator": [other.orch, "permission_denied", "permission_denied"],
    } as const;
    for (const [who, [token, setCode, listCode]] of Object.entries(refused)) {
      const set = await call("POST", peersOf(s.sid), token, { origin: "https://peer.example", authorization: `Bearer from-${who}` });
      expect(set.status, who).toBe(403);
      expect(set.body.error.code, who).toBe(setCode);
      const list = await call("GET", peersOf(s.sid), token);
      expect(list.status, who).toBe(403);
      expect(list.body.error.code, who).toBe(listCode);
    }
    expect(expectOk(await call("GET", peersOf(s.sid), s.orch))).toEqual({ peers: [] });
    expect(await sessionStub(s.sid).peerAuthorization("https://peer.example")).toBeNull();
  });

  it("Should answer 400 validation_error for an origin that is not a URL origin, or a value that cannot be a header, storing nothing", async () => {
    const s = await newSession();
    const bad = [
      { origin: "https://peer.example/", authorization: "Bearer x" },
      { origin: "https://peer.example/a2a", authorization: "Bearer x" },
      { origin: "https://peer.example?x=1", authorization: "Bearer x" },
      { origin: "HTTPS://PEER.example", authorization: "Bearer x" },
      { origin: "http://peer.example:80", authorization: "Bearer x" },
      { origin: "ftp://peer.example", authorization: "Bearer x" },
      { origin: "peer.example", authorization: "Bearer x" },
      { origin: "", authorization: "Bearer x" },
      { origin: "https://peer.example", authorization: "" },
      { origin: "https://peer.example", authorization: "Bearer x\r\nX-Injected: 1" },
      { origin: "https://peer.example", authorization: "x".repeat(4_097) },
      { origin: "https://peer.example" },
      { origin: "https://peer.example", authorization: "Bearer x", extra: true },
    ];
    for (const body of bad) expectError(await call("POST", peersOf(s.sid), s.orch, body), 400, "validation_error");
    expect(expectOk(await call("GET", peersOf(s.sid), s.orch))).toEqual({ peers: [] });
  });

  it(`Should hold at most ${MAX_PEER_CREDENTIALS} origins per session, still replacing a known one`, async () => {
    const s = await newSession();
    for (let i = 0; i < MAX_PEER_CREDENTIALS; i++) expectOk(await call("POST", peersOf(s.sid), s.orch, { origin: `https://peer-${i}.example`, authorization: `Bearer ${i}` }), 201);
    expectError(await call("POST", peersOf(s.sid), s.orch, { origin: "https://one-too-many.example", authorization: "Bearer x" }), 400, "validation_error");
    expectOk(await call("POST", peersOf(s.sid), s.orch, { origin: "https://peer-0.example", authorization: "Bearer replaced" }), 201);
    expect(expectOk(await call("GET", peersOf(s.sid), s.orch)).peers).toHaveLength(MAX_PEER_CREDENTIALS);
    expect(await sessionStub(s.sid).peerAuthorization("https://peer-0.example")).toBe("Bearer replaced");
  });

  it("Should delete an origin's credential by its percent-encoded origin (then 404), leaving the others, so the peer client sends it no more", async () => {
    const s = await newSession();
    const origin = "http://127.0.0.1:9999";
    expectOk(await call("POST", peersOf(s.sid), s.orch, { origin, authorization: "Bearer to-forget" }), 201);
    expectOk(await call("POST", peersOf(s.sid), s.orch, { origin: "https://peer.example", authorization: "Bearer to-keep" }), 201);
    expect(expectOk(await call("DELETE", `${peersOf(s.sid)}/${encodeURIComponent(origin)}`, s.orch))).toEqual({ origin });
    expect(await sessionStub(s.sid).peerAuthorization(origin)).toBeNull();
    expect(await sessionStub(s.sid).peerAuthorization("https://peer.example")).toBe("Bearer to-keep");
    expect(expectOk(await call("GET", peersOf(s.sid), s.orch)).peers.map((p: { origin: string }) => p.origin)).toEqual(["https://peer.example"]);
    expectError(await call("DELETE", `${peersOf(s.sid)}/${encodeURIComponent(origin)}`, s.orch), 404, "not_found");
    expectError(await call("DELETE", `${peersOf(s.sid)}/${encodeURIComponent("https://never.example")}`, s.orch), 404, "not_found");
    const unknownSession = `sess_${uniqueId("none").toLowerCase()}`;
    const elsewhere = await call("DELETE", `${peersOf(unknownSession)}/${encodeURIComponent(origin)}`, s.orch);
    expect(elsewhere.status).toBe(403);
  });

  it("Should answer 400 validation_error for a DELETE naming no origin (a host, a path, upper case), deleting nothing", async () => {
    const s = await newSession();
    expectOk(await call("POST", peersOf(s.sid), s.orch, { origin: "https://peer.example", authorization: "Bearer stays" }), 201);
    for (const key of ["peer.example", "https%3A%2F%2Fpeer.example%2F", "HTTPS%3A%2F%2FPEER.EXAMPLE", "https%3A%2F%2Fpeer.example%2Fa2a"]) {
      expectError(await call("DELETE", `${peersOf(s.sid)}/${key}`, s.orch), 400, "validation_error");
    }
    expect(await sessionStub(s.sid).peerAuthorization("https://peer.example")).toBe("Bearer stays");
  });

  it("Should refuse a DELETE from observers, workers, approvers, the admin and another session's orchestrator with 403, keeping the credential", async () => {
    const s = await newSession();
    const other = await newSession();
    expectOk(await call("POST", peersOf(s.sid), s.orch, { origin: "https://peer.example", authorization: "Bearer stays" }), 201);
    const worker = await dispatch(s, await newTask(s, uniqueId("peers"), [step("a")]));
    const path = `${peersOf(s.sid)}/${encodeURIComponent("https://peer.example")}`;
    for (const [who, token] of Object.entries({ observer: s.observer, worker: worker.token, approver: await mintRole(s, "approver"), admin: "test-admin-token", other: other.orch })) {
      expect((await call("DELETE", path, token)).status, who).toBe(403);
    }
    expect(await sessionStub(s.sid).peerAuthorization("https://peer.example")).toBe("Bearer stays");
  });

  it("Should offer set_peer_credential and list_peers as MCP tools of the orchestrator, answering as REST does", async () => {
    const s = await newSession();
    const mcp = await connectMcp(s.orch, "modern");
    try {
      const set = await mcp.callTool({ name: "set_peer_credential", arguments: { origin: "https://peer.example", authorization: "Bearer via-mcp" } });
      expect(set.isError ?? false).toBe(false);
      expect(set.structuredContent).toEqual({ origin: "https://peer.example" });
      const listed = await mcp.callTool({ name: "list_peers", arguments: {} });
      expect(listed.structuredContent).toEqual({ peers: [{ origin: "https://peer.example", updated_at: expect.any(String) }] });
      expect(JSON.stringify(listed)).not.toContain("via-mcp");
      const deleted = await mcp.callTool({ name: "delete_peer_credential", arguments: { origin: "https://other.example" } });
      expect(deleted.isError).toBe(true);
      expect(JSON.stringify(deleted.content)).toContain("not_found");
    } finally {
      await mcp.close();
    }
    expect(await sessionStub(s.sid).peerAuthorization("https://peer.example")).toBe("Bearer via-mcp");
    const again = await connectMcp(s.orch, "modern");
    try {
      const deleted = await again.callTool({ name: "delete_peer_credential", arguments: { origin: "https://peer.example" } });
      expect(deleted.structuredContent).toEqual({ origin: "https://peer.example" });
    } finally {
      await again.close();
    }
    expect(await sessionStub(s.sid).peerAuthorization("https://peer.example")).toBeNull();
  });
});

describe("PeerClient inside workerd, with the runtime's own A2A facade as the peer", () => {
  // SELF.fetch must be called on SELF; every request the client makes is recorded with its Authorization.
  const seen: { url: string; authorization: string | null }[] = [];
  const selfFetch: typeof fetch = async (input, init) => {
    const request = new Request(input as RequestInfo, init);
    seen.push({ url: request.url, authorization: request.headers.get("authorization") });
    return SELF.fetch(request) as unknown as Promise<Response>;
  };
  const CARD = `${BASE}/.well-known/agent-card.json`;

  it("Should send a message (a SUBMITTED task), read it and cancel it, with the credential sent to that origin only", async () => {
    const s = await newSession();
    const token = await mintRole(s, "a2a_client", "delegating-runtime");
    const asked: string[] = [];
    const client = new PeerClient({ allowlist: ["runtime.test"], timeoutMs: 10_000, maxResponseBytes: 1_048_576 }, selfFetch, async (origin) => {
      asked.push(origin);
      return origin === new URL(BASE).origin ? `Bearer ${token}` : null;
    });
    const sent = await client.send(CARD, { message_id: `step-${uniqueId()}`, text: "Translate the release notes" });
    expect(sent).toMatchObject({ ok: true, streaming: true, task: { remote_status: "TASK_STATE_SUBMITTED", remote_context_id: expect.any(String), artifacts: [] } });
    if (!sent.ok) return;
    const id = sent.task.remote_task_id;
    expect(expectOk(await call("GET", `/v1/sessions/${s.sid}/tasks/${id}`, s.orch)).task).toMatchObject({ objective: "Translate the release notes", origin: { client_agent_id: "delegating-runtime" } });
    expect(await client.get(CARD, id)).toMatchObject({ ok: true, task: { remote_task_id: id, remote_status: "TASK_STATE_SUBMITTED" } });
    expect(await client.cancel(CARD, id)).toMatchObject({ ok: true, task: { remote_task_id: id, remote_status: "TASK_STATE_CANCELED" } });
    expect(await client.cancel(CARD, id)).toMatchObject({ ok: false, code: "rpc_error", retryable: false });
    expect(new Set(asked)).toEqual(new Set([new URL(BASE).origin]));
    expect(seen.length).toBeGreaterThanOrEqual(5);
    expect(seen.every((r) => r.authorization === `Bearer ${token}`)).toBe(true);
  });

  it("Should answer the facade's 401 (no credential stored) as http_error, not retryable, and refuse a host off the allowlist before any request", async () => {
    const before = seen.length;
    const refused = await new PeerClient({ allowlist: ["elsewhere.example"], timeoutMs: 10_000, maxResponseBytes: 1_048_576 }, selfFetch).send(CARD, { message_id: "m", text: "x" });
    expect(refused).toMatchObject({ ok: false, code: "not_allowed", retryable: false });
    expect(seen.length).toBe(before);
    const anonymous = await new PeerClient({ allowlist: ["runtime.test"], timeoutMs: 10_000, maxResponseBytes: 1_048_576 }, selfFetch).send(CARD, { message_id: "m", text: "x" });
    expect(anonymous).toMatchObject({ ok: false, code: "http_error", retryable: false });
    if (!anonymous.ok) expect(anonymous.message).toContain("HTTP 401");
  });
});

describe("PeerClient and a peer's bytes parts", () => {
  const PEER = "http://peer.test";
  const task = {
    id: "remote-1",
    contextId: "ctx-1",
    status: { state: "TASK_STATE_COMPLETED", timestamp: "2026-01-01T00:00:00Z" },
    artifacts: [{ artifactId: "a1", name: "report", parts: [{ raw: "aGVsbG8=", mediaType: "application/octet-stream" }, { text: "the summary" }] }],
  };
  // A peer answering every GetTask with a task whose artifact has a bytes (raw) part next to a text part.
  const peerFetch: typeof fetch = async (input, init) => {
    const request = new Request(input as RequestInfo, init);
    if (request.method === "GET") return Response.json({ name: "bytes", supportedInterfaces: [{ url: `${PEER}/a2a`, protocolBinding: "JSONRPC", protocolVersion: "1.0" }], capabilities: {} });
    const body = (await request.json()) as { id: number };
    return Response.json({ jsonrpc: "2.0", id: body.id, result: task });
  };

  it("Should read the text parts of a task whose artifact also has bytes, where workerd has no Buffer (no nodejs_compat)", async () => {
    // The pool injects Buffer; `wrangler dev` and production do not. The SDK's Part decoding calls it for bytes.
    const saved = globalThis.Buffer;
    delete (globalThis as { Buffer?: unknown }).Buffer;
    try {
      expect(() => Task.fromJSON(task)).toThrow(/Buffer/);
      const result = await new PeerClient({ allowlist: ["peer.test"], timeoutMs: 10_000, maxResponseBytes: 1_048_576 }, peerFetch).get(`${PEER}/.well-known/agent-card.json`, "remote-1");
      expect(result).toEqual({
        ok: true,
        streaming: false,
        task: { remote_task_id: "remote-1", remote_context_id: "ctx-1", remote_status: "TASK_STATE_COMPLETED", status_message: null, artifacts: [{ artifact_id: "a1", name: "report", text: "the summary" }] },
      });
    } finally {
      globalThis.Buffer = saved;
    }
  });
});
