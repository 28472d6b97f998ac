/**
 * Token lifecycle (docs/security.md "Token lifecycle"): every token has a token_id and is listed by its session;
 * one token or all of them can be revoked; a minted token never outlives its maker; a revoked, expired or forged
 * token is 401 with details.reason on every surface (REST, batch, socket frames, MCP, A2A), and the streams and
 * sockets it holds end within a second.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { ADMIN, call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { expectError, expectOk, mintRole, signClaims, sleep, uniqueId } from "../support/support.js";
import { openSocket, socketFrame } from "../support/test-socket.js";
import { openStream } from "../support/sse.js";
import { connectMcp, postMcp } from "../support/mcp-clients.js";
import { connectA2a, rpc, send } from "../support/a2a-clients.js";
import { sessionStub } from "../support/surfaces.js";
import { runInDurableObject } from "cloudflare:test";
import { REVOKED_TOKENS_SQL } from "../../durable-objects/session/session-tokens.js";

let S: TestSession;
beforeAll(async () => {
  S = await newSession();
});

/** A fresh session with one task: each revoke-all test needs a session of its own. */
async function sessionWithTask() {
  const s = await newSession();
  const path = await newTask(s, uniqueId(), [step("a"), step("b")]);
  return { s, path };
}

function expectUnauthorized(res: { status: number; body: any }, reason: string) {
  expectError(res as never, 401, "unauthorized");
  expect(res.body.error.details).toEqual({ reason });
}

async function minted(s: TestSession, token: string, body: Record<string, unknown>) {
  return expectOk(await call("POST", `/v1/sessions/${s.sid}/tokens`, token, body), 201);
}

describe("token ids and the token list", () => {
  it("Should list every live token with its id, role, agent and expiry, and never the token itself", async () => {
    const s = await newSession();
    const observer = await minted(s, s.orch, { role: "approver", agent_id: "alice" });
    const path = await newTask(s, uniqueId(), [step("a")]);
    const worker = expectOk(await call("POST", `${path}/workers`, s.orch, { agent_id: "w1" }), 201);
    expect(worker.token_id).toMatch(/^tok_[a-z0-9]{26}$/);
    const page = expectOk(await call("GET", `/v1/sessions/${s.sid}/tokens`, s.orch));
    expect(page.next_cursor).toBeNull();
    expect(page.tokens.map((t: any) => t.role)).toEqual(["orchestrator", "observer", "approver", "worker"]);
    expect(page.tokens[2]).toEqual({ token_id: observer.token_id, role: "approver", agent_id: "alice", run_id: null, task_id: null, expires_at: observer.expires_at });
    expect(page.tokens[3]).toMatchObject({ token_id: worker.token_id, role: "worker", agent_id: "w1", run_id: worker.run_id, task_id: path.split("/").pop() });
    expect(JSON.stringify(page)).not.toContain(s.orch);
    expect(JSON.stringify(page)).not.toContain(worker.token);
  });

  it("Should page the list by cursor", async () => {
    const s = await newSession();
    for (let i = 0; i < 3; i++) await minted(s, s.orch, { role: "observer" });
    const first = expectOk(await call("GET", `/v1/sessions/${s.sid}/tokens?limit=2`, s.orch));
    expect(first.tokens).toHaveLength(2);
    const second = expectOk(await call("GET", `/v1/sessions/${s.sid}/tokens?limit=2&cursor=${first.next_cursor}`, s.orch));
    const third = expectOk(await call("GET", `/v1/sessions/${s.sid}/tokens?limit=2&cursor=${second.next_cursor}`, s.orch));
    expect(third.next_cursor).toBeNull();
    const ids = [...first.tokens, ...second.tokens, ...third.tokens].map((t: any) => t.token_id);
    expect(new Set(ids).size).toBe(5);
    expectError(await call("GET", `/v1/sessions/${s.sid}/tokens?limit=1001`, s.orch), 400, "validation_error");
    expect(expectOk(await call("GET", `/v1/sessions/${s.sid}/tokens?limit=1000`, s.orch)).tokens).toHaveLength(5);
  });

  it("Should let only the admin and the session's orchestrators list and revoke tokens", async () => {
    const other = await newSession();
    const path = await newTask(S, uniqueId(), [step("a")]);
    const worker = await dispatch(S, path);
    const approver = await mintRole(S, "approver");
    expectOk(await call("GET", `/v1/sessions/${S.sid}/tokens`, ADMIN));
    // A worker reads nothing session-wide: its refusal of the list is permission_denied, as for every such read.
    expectError(await call("GET", `/v1/sessions/${S.sid}/tokens`, worker.token), 403, "permission_denied");
    for (const token of [S.observer, approver, worker.token]) {
      if (token !== worker.token) expectError(await call("GET", `/v1/sessions/${S.sid}/tokens`, token), 403, "tool_not_available");
      expectError(await call("DELETE", `/v1/sessions/${S.sid}/tokens/tok_x`, token), 403, "tool_not_available");
      expectError(await call("POST", `/v1/sessions/${S.sid}/tokens/revoke-all`, token, {}), 403, "tool_not_available");
    }
    expectError(await call("GET", `/v1/sessions/${S.sid}/tokens`, other.orch), 403, "permission_denied");
    expectError(await call("DELETE", `/v1/sessions/${S.sid}/tokens/tok_x`, other.orch), 403, "permission_denied");
    expectError(await call("POST", `/v1/sessions/${S.sid}/tokens/revoke-all`, other.orch, {}), 403, "permission_denied");
    expectError(await call("DELETE", `/v1/sessions/${S.sid}/tokens/tok_unknown`, S.orch), 404, "not_found");
    expectError(await call("GET", `/v1/sessions/sess_nope/tokens`, ADMIN), 404, "not_found");
  });
});

describe("a minted token never outlives its maker", () => {
  it("Should cap a token an orchestrator mints at the orchestrator's own expiry, even when it asks for 30 days", async () => {
    const s = await newSession();
    const shortOrch = await minted(s, s.orch, { role: "orchestrator", ttl_seconds: 3_600 });
    const longer = await minted(s, shortOrch.token, { role: "orchestrator", ttl_seconds: 2_592_000 });
    expect(Date.parse(longer.expires_at)).toBeLessThanOrEqual(Date.parse(shortOrch.expires_at));
    // And so on down the chain: no repeat of the mint escapes the first token's expiry.
    const again = await minted(s, longer.token, { role: "orchestrator", ttl_seconds: 2_592_000 });
    expect(Date.parse(again.expires_at)).toBeLessThanOrEqual(Date.parse(shortOrch.expires_at));
    const approver = await minted(s, again.token, { role: "approver", ttl_seconds: 2_592_000 });
    expect(Date.parse(approver.expires_at)).toBeLessThanOrEqual(Date.parse(shortOrch.expires_at));
  });

  it("Should give a worker token no longer life than the token that dispatched it", async () => {
    const s = await newSession();
    const shortOrch = await minted(s, s.orch, { role: "orchestrator", ttl_seconds: 120 });
    const path = await newTask(s, uniqueId(), [step("a")]);
    const worker = expectOk(await call("POST", `${path}/workers`, shortOrch.token, {}), 201);
    expect(Date.parse(worker.expires_at)).toBeLessThanOrEqual(Date.parse(shortOrch.expires_at));
    const batch = expectOk(await call("POST", `${path}/batch`, shortOrch.token, { commands: [{ token: shortOrch.token, method: "POST", path: `${path}/workers`, body: {} }] }));
    expect(Date.parse(batch.results[0].body.expires_at)).toBeLessThanOrEqual(Date.parse(shortOrch.expires_at));
  });

  it("Should let the admin mint the full 30 days", async () => {
    const s = await newSession();
    const body = await minted(s, ADMIN, { role: "orchestrator", ttl_seconds: 2_592_000 });
    expect(Date.parse(body.expires_at) - Date.now()).toBeGreaterThan(2_592_000_000 - 60_000);
  });
});

describe("revoking one token", () => {
  it("Should answer the revoked token 401 revoked on REST, batch, socket frames and MCP, and leave every other token working", async () => {
    const { s, path } = await sessionWithTask();
    const victim = await minted(s, s.orch, { role: "orchestrator" });
    const worker = expectOk(await call("POST", `${path}/workers`, s.orch, {}), 201);
    expectOk(await call("GET", path, victim.token));
    // An official MCP client connected before the revocation.
    const mcpClient = await connectMcp(victim.token);
    expect((await mcpClient.listTools()).tools.length).toBeGreaterThan(0);
    const revoked = expectOk(await call("DELETE", `/v1/sessions/${s.sid}/tokens/${victim.token_id}`, s.orch));
    expect(revoked).toEqual({ token_id: victim.token_id, revoked_at: expect.any(String) });
    // Revoking it again is the same answer.
    expect(expectOk(await call("DELETE", `/v1/sessions/${s.sid}/tokens/${victim.token_id}`, s.orch))).toEqual(revoked);

    expectUnauthorized(await call("GET", path, victim.token), "revoked");
    expectUnauthorized(await call("POST", `${path}/progress`, victim.token, {}), "revoked");
    const batch = expectOk(await call("POST", `${path}/batch`, s.orch, { commands: [{ token: victim.token, method: "POST", path: `${path}/pause`, body: {} }] }));
    expect(batch.results[0]).toMatchObject({ ok: false, status: 401, body: { error: { code: "unauthorized", details: { reason: "revoked" } } } });
    const frame = await socketFrame(path, s.orch, [{ token: victim.token, method: "POST", path: `${path}/pause`, body: {} }]);
    expect(frame.results[0]).toMatchObject({ ok: false, status: 401, body: { error: { code: "unauthorized", details: { reason: "revoked" } } } });
    const mcp = await postMcp({ id: 1, method: "tools/list", params: {} }, { authorization: `Bearer ${victim.token}` });
    expect(mcp.status).toBe(401);
    expect(mcp.message.error.details).toEqual({ reason: "revoked" });
    await expect(mcpClient.callTool({ name: "agent.task_get", arguments: { task_id: path.split("/").pop() } })).rejects.toThrow();
    await mcpClient.close().catch(() => undefined);

    // Every other token goes on.
    expectOk(await call("GET", path, s.orch));
    expectOk(await call("GET", path, worker.token));
    expectOk(await call("GET", path, s.observer));
    const listed = expectOk(await call("GET", `/v1/sessions/${s.sid}/tokens`, s.orch)).tokens.map((t: any) => t.token_id);
    expect(listed).not.toContain(victim.token_id);
    expect(listed).toContain(worker.token_id);
  });

  it("Should answer a revoked a2a_client token 401 revoked on A2A", async () => {
    const s = await newSession();
    const client = await minted(s, s.orch, { role: "a2a_client", agent_id: "peer-1" });
    const before = await rpc(client.token, { jsonrpc: "2.0", id: 1, method: "ListTasks", params: {} });
    expect(before.status).toBe(200);
    expectOk(await call("DELETE", `/v1/sessions/${s.sid}/tokens/${client.token_id}`, s.orch));
    const after = await rpc(client.token, { jsonrpc: "2.0", id: 2, method: "ListTasks", params: {} });
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe(-32000);
    expect(after.body.error.data[0]).toMatchObject({ reason: "UNAUTHENTICATED", metadata: { reason: "revoked" } });
  });

  it("Should read only the revoked tokens for a revocation check, through their own index", async () => {
    const s = await newSession();
    const plan = await runInDurableObject(sessionStub(s.sid), (_o, state) => state.storage.sql.exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${REVOKED_TOKENS_SQL}`, 0).toArray().map((r) => r.detail));
    expect(plan.join(" ")).toContain("USING INDEX tokens_revoked");
  });

  it("Should reach every isolate within REVOCATION_CHECK_MS, also when the revocation was made elsewhere", async () => {
    const s = await newSession();
    const victim = await minted(s, s.orch, { role: "observer" });
    expectOk(await call("GET", `/v1/sessions/${s.sid}`, victim.token));
    // Revoked in the session object directly: this isolate's cache is not told and must read it again.
    await sessionStub(s.sid).revokeToken(victim.token_id);
    const started = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - started < 3_000) {
      status = (await call("GET", `/v1/sessions/${s.sid}`, victim.token)).status;
      if (status === 200) await sleep(50);
    }
    expect(status).toBe(401);
    expect(Date.now() - started).toBeLessThan(1_500);
  });
});

describe("many requests meeting an outdated revocation state at once", () => {
  it("Should answer every one of them (each reads the state itself: a read shared between requests hangs the others)", async () => {
    const s = await newSession();
    const t = await newTask(s, uniqueId("many"), [step("a")]);
    expectOk(await call("GET", t, s.orch));
    // Past REVOCATION_CHECK_MS the session's state is outdated in this isolate: the next requests all miss together.
    await sleep(600);
    const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => call("GET", i % 2 === 0 ? t : `/v1/sessions/${s.sid}/tasks?limit=1`, i % 3 === 0 ? s.observer : s.orch)));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
  });
});

describe("revoke-all", () => {
  it("Should revoke every token of the session, the caller's too, and answer a fresh orchestrator token that works", async () => {
    const { s, path } = await sessionWithTask();
    const worker = expectOk(await call("POST", `${path}/workers`, s.orch, {}), 201);
    const approver = await minted(s, s.orch, { role: "approver" });
    const fresh = expectOk(await call("POST", `/v1/sessions/${s.sid}/tokens/revoke-all`, s.orch, {}), 201);
    expect(fresh).toMatchObject({ role: "orchestrator", agent_id: "orchestrator", run_id: expect.stringMatching(/^orun_/), token: expect.any(String), token_id: expect.stringMatching(/^tok_/) });
    for (const token of [s.orch, s.observer, worker.token, approver.token]) expectUnauthorized(await call("GET", path, token), "revoked");
    expectOk(await call("GET", path, fresh.token));
    const listed = expectOk(await call("GET", `/v1/sessions/${s.sid}/tokens`, fresh.token)).tokens;
    expect(listed.map((t: any) => t.token_id)).toEqual([fresh.token_id]);
    // Tokens minted after it live.
    const observer = await minted(s, fresh.token, { role: "observer" });
    expectOk(await call("GET", path, observer.token));
  });

  it("Should revoke tokens signed before token ids existed (they carry no id and no generation)", async () => {
    const { s, path } = await sessionWithTask();
    const now = Math.floor(Date.now() / 1000);
    const legacy = await signClaims({ role: "orchestrator", sid: s.sid, sub: "old", run: "orun_old", iat: now, exp: now + 3_600 });
    expectOk(await call("GET", path, legacy));
    expectOk(await call("POST", `/v1/sessions/${s.sid}/tokens/revoke-all`, ADMIN, {}), 201);
    expectUnauthorized(await call("GET", path, legacy), "revoked");
  });
});

describe("why a token is refused", () => {
  it("Should say expired for a well-signed token past its expiry, and invalid for a forged one", async () => {
    const path = await newTask(S, uniqueId(), [step("a")]);
    const now = Math.floor(Date.now() / 1000);
    const expired = await signClaims({ role: "orchestrator", sid: S.sid, sub: "o", run: "orun_x", iat: now - 100, exp: now - 10 });
    expectUnauthorized(await call("GET", path, expired), "expired");
    const forged = await signClaims({ role: "orchestrator", sid: S.sid, sub: "o", run: "orun_x", iat: now - 100, exp: now - 10 }, "another-secret");
    expectUnauthorized(await call("GET", path, forged), "invalid");
    const batch = expectOk(await call("POST", `${path}/batch`, S.orch, { commands: [{ token: expired, method: "POST", path: `${path}/pause`, body: {} }] }));
    expect(batch.results[0].body.error.details).toEqual({ reason: "expired" });
    const a2a = await rpc(expired, { jsonrpc: "2.0", id: 1, method: "ListTasks", params: {} });
    expect(a2a.body.error.data[0].metadata).toEqual({ reason: "expired" });
  });
});

describe("open streams and sockets of a token that stops holding", () => {
  it("Should end a task event stream, a session event stream and close a command socket within a second of the revocation", async () => {
    const { s, path } = await sessionWithTask();
    const victim = await minted(s, s.orch, { role: "orchestrator" });
    const taskStream = await openStream(`${path}/events`, victim.token);
    const sessionStream = await openStream(`/v1/sessions/${s.sid}/events`, victim.token);
    const socket = await openSocket(path, victim.token);
    const bystander = await openSocket(path, s.orch);
    const revokedAt = Date.now();
    expectOk(await call("DELETE", `/v1/sessions/${s.sid}/tokens/${victim.token_id}`, s.orch));
    const closed = await socket.closed;
    expect(closed).toEqual({ code: 4401, reason: "revoked" });
    for (const stream of [taskStream, sessionStream]) {
      let frame = await stream.next(2_000);
      while (frame !== null && frame.event !== "end") frame = await stream.next(2_000);
      expect(frame).toEqual({ event: "end", data: JSON.stringify({ reason: "revoked" }) });
      expect(await stream.next(2_000)).toBeNull();
    }
    expect(Date.now() - revokedAt).toBeLessThan(1_500);
    // The socket of another token stays open and answers.
    const answer = await bystander.ask({ id: "f1", commands: [{ token: s.orch, method: "POST", path: `${path}/steps/a/progress`, body: { message: "x" } }] });
    expect(answer.id).toBe("f1");
  });

  it("Should end a stream whose token expires", async () => {
    const path = await newTask(S, uniqueId(), [step("a")]);
    const now = Math.floor(Date.now() / 1000);
    const shortLived = await signClaims({ role: "observer", sid: S.sid, sub: "o", run: null, iat: now, exp: now + 2 });
    const stream = await openStream(`${path}/events`, shortLived);
    let frame = await stream.next(4_000);
    while (frame !== null && frame.event !== "end") frame = await stream.next(4_000);
    expect(frame?.data).toBe(JSON.stringify({ reason: "expired" }));
    expect(Date.now() / 1000).toBeLessThan(now + 4);
  });

  it("Should end an A2A stream whose token is revoked with the 401's error", async () => {
    const s = await newSession();
    const client = await minted(s, s.orch, { role: "a2a_client", agent_id: "peer-2" });
    const a2a = await connectA2a(client.token);
    const sent = (await a2a.sendMessage(send("watch me", {}, { returnImmediately: true }))) as any;
    const taskId = sent.id ?? sent.task?.id;
    expect(typeof taskId).toBe("string");
    const events: unknown[] = [];
    let failure: unknown = null;
    const reading = (async () => {
      try {
        for await (const event of a2a.resubscribeTask({ tenant: "", id: taskId })) events.push(event);
      } catch (e) {
        failure = e;
      }
    })();
    await sleep(300);
    expectOk(await call("DELETE", `/v1/sessions/${s.sid}/tokens/${client.token_id}`, s.orch));
    await reading;
    expect(events.length).toBeGreaterThan(0);
    expect(String(failure)).toMatch(/revoked/);
  });
});
