/**
 * Idempotency-Keys bound with the cheap request hash (routes/http/body.ts `requestHash`): a keyed retry still replays
 * and the key with another body is still 422 idempotency_conflict on every carrier (a single route, a batch
 * command, a socket frame's command); the session's own key records (the session create, create_keys, link_keys)
 * written with the SHA-256 hash used before still replay; and the ids derived from that SHA-256 (a keyed
 * session's id) come out as before.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { requestHash } from "../../src/lib/hash.js";
import type { SessionObject } from "../../durable-objects/session/session-object.js";
import { ADMIN, call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { bindings, expectError, expectOk, uniqueId, walOf } from "../support/support.js";
import { openSocket } from "../support/test-socket.js";

/** A SHA-256 hex as the hashes stored before requestHash were (any 64 hex digits reads as one). */
async function sha256Hex(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  return [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function sessionStub(sid: string) {
  return bindings.SESSIONS.get(bindings.SESSIONS.idFromName(sid)) as unknown as DurableObjectStub<SessionObject>;
}

describe("Idempotency-Keys with the request hash", () => {
  it("Should replay a keyed retry and refuse the key with another body 422 on a single route, a batch command and a socket frame", async () => {
    const s = await newSession();
    const t = await newTask(s, uniqueId("hash"), [step("a")]);
    const w = await dispatch(s, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    const progress = `${t}/steps/a/progress`;

    const single = { "idempotency-key": uniqueId("single") };
    const first = expectOk(await call("POST", progress, w.token, { phase: "one" }, single));
    expect(expectOk(await call("POST", progress, w.token, { phase: "one" }, single))).toEqual(first);
    expectError(await call("POST", progress, w.token, { phase: "two" }, single), 422, "idempotency_conflict");

    const batchKey = uniqueId("batch");
    const batch = (phase: string) => call("POST", `${t}/batch`, w.token, { commands: [{ token: w.token, method: "POST", path: progress, body: { phase }, idempotency_key: batchKey }] });
    const batched = expectOk(await batch("one")).results[0];
    expect(batched.status).toBe(200);
    expect(expectOk(await batch("one")).results[0]).toEqual(batched);
    expect(expectOk(await batch("two")).results[0]).toMatchObject({ ok: false, status: 422, body: { error: { code: "idempotency_conflict" } } });

    const sock = await openSocket(t, w.token);
    const frameKey = uniqueId("frame");
    const frame = (id: number, phase: string) => ({ id, commands: [{ token: w.token, method: "POST", path: progress, body: { phase }, idempotency_key: frameKey }] });
    const framed = (await sock.ask(frame(1, "one"))).results[0];
    expect(framed.status).toBe(200);
    const walBefore = (await walOf(t, s.orch)).length;
    expect((await sock.ask(frame(2, "one"))).results[0]).toEqual(framed);
    expect((await sock.ask(frame(3, "two"))).results[0]).toMatchObject({ ok: false, status: 422, body: { error: { code: "idempotency_conflict" } } });
    // The frame's retry and its key's reuse with another body wrote nothing.
    expect((await walOf(t, s.orch)).length).toBe(walBefore);
    sock.ws.close();
  });

  it("Should derive a keyed session's id from the SHA-256 of its key as before, and store the create's request hash as q1:", async () => {
    const key = uniqueId("sess-key");
    const created = await call("POST", "/v1/sessions", ADMIN, {}, { "idempotency-key": key });
    expect(created.status).toBe(201);
    expect(created.body.session_id).toBe(`sess_${(await sha256Hex(`session ${key}\n`)).slice(0, 26)}`);
    const stored = await runInDurableObject(sessionStub(created.body.session_id), async (_, state) => {
      const row = state.storage.sql.exec<{ info: string }>("SELECT info FROM session").one();
      return (JSON.parse(row.info) as { creation: { hash: string } }).creation.hash;
    });
    expect(stored).toBe(requestHash("POST", "/v1/sessions", "{}"));
    expectError(await call("POST", "/v1/sessions", ADMIN, { metadata: { other: true } }, { "idempotency-key": key }), 422, "idempotency_conflict");
  });

  it("Should replay a session create whose key was stored with a SHA-256 hash", async () => {
    const key = uniqueId("legacy-sess");
    const first = await call("POST", "/v1/sessions", ADMIN, {}, { "idempotency-key": key });
    expect(first.status).toBe(201);
    await runInDurableObject(sessionStub(first.body.session_id), async (_, state) => {
      const sql = state.storage.sql;
      const info = JSON.parse(sql.exec<{ info: string }>("SELECT info FROM session").one().info) as { creation: { hash: string } };
      info.creation.hash = await sha256Hex(`POST /v1/sessions\n{}`);
      sql.exec("UPDATE session SET info = ?", JSON.stringify(info));
    });
    const retry = await call("POST", "/v1/sessions", ADMIN, {}, { "idempotency-key": key });
    expect(retry.status).toBe(201);
    expect(retry.body).toEqual(first.body);
  });

  it("Should take a task create's reservation whose key was stored with a SHA-256 hash as the same request, and one stored with another q1: hash as a conflict", async () => {
    const s = await newSession();
    const taskId = uniqueId("legacy-create");
    const path = `/v1/sessions/${s.sid}/tasks`;
    const fresh = { key: `orchestrator:orchestrator:-\n${uniqueId("key")}`, hash: requestHash("POST", path, JSON.stringify({ task_id: taskId })) };
    const answers = await runInDurableObject(sessionStub(s.sid), async (instance, state) => {
      const now = Date.now();
      state.storage.sql.exec("INSERT INTO create_keys (key, hash, task_id, created_at_ms) VALUES (?, ?, ?, ?)", fresh.key, await sha256Hex("an earlier request"), taskId, now);
      const legacy = await instance.reserve(taskId, taskId, fresh);
      const otherKey = `${fresh.key}-other`;
      state.storage.sql.exec("INSERT INTO create_keys (key, hash, task_id, created_at_ms) VALUES (?, ?, ?, ?)", otherKey, requestHash("POST", path, "{}"), `${taskId}-2`, now);
      const conflict = await instance.reserve(`${taskId}-2`, `${taskId}-2`, { key: otherKey, hash: fresh.hash });
      return { legacy, conflict };
    });
    expect(answers.legacy).toEqual({ ok: true, value: null });
    expect(answers.conflict).toMatchObject({ ok: false, error: { code: "idempotency_conflict" } });
  });

  it("Should replay a link whose key was stored with a SHA-256 hash", async () => {
    const s: TestSession = await newSession();
    for (const id of ["la", "lb"]) await newTask(s, id, [step("x")]);
    const key = uniqueId("legacy-link");
    const body = { kind: "source_task", from_task_id: "la", to_task_id: "lb" };
    const first = await call("POST", `/v1/sessions/${s.sid}/links`, s.orch, body, { "idempotency-key": key });
    expect(first.status).toBe(201);
    const storedBefore = await runInDurableObject(sessionStub(s.sid), async (_, state) => {
      const sql = state.storage.sql;
      const row = sql.exec<{ key: string; hash: string }>("SELECT key, hash FROM link_keys").one();
      sql.exec("UPDATE link_keys SET hash = ? WHERE key = ?", await sha256Hex("an earlier request"), row.key);
      return row.hash;
    });
    expect(storedBefore).toMatch(/^q1:[0-9a-f]{16}$/);
    const retry = await call("POST", `/v1/sessions/${s.sid}/links`, s.orch, body, { "idempotency-key": key });
    expect(retry.status).toBe(201);
    expect(retry.body.link).toEqual(first.body.link);
  });
});
