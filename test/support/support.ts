/** @module Extra helpers for the service tests: error-envelope assertions, WAL reads, tokens, task objects, polling. */
import { env, runInDurableObject, SELF } from "cloudflare:test";
import { sign } from "hono/jwt";
import { expect } from "vitest";
import { type FetchLike, RuntimeApiError } from "../../src/client/index.js";
import type { WalEvent } from "../../src/core/index.js";
import { WalEventSchema } from "../../src/core/index.js";
import type { Env } from "../../durable-objects/shared/env.js";
import type { JsonAnswer } from "./helpers.js";

/** The origin the helpers call. */
export const BASE = "http://runtime.test";

/** The Worker's bindings, typed as the service sees them. */
export const bindings = env as unknown as Env;

/** The test configuration's token secret. */
export const TOKEN_SECRET = "test-token-secret";

/** Asserts a non-2xx answer: its status and the `{"error": {code, message, details}}` envelope, nothing else. */
export function expectError(res: JsonAnswer, status: number, code: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body).toEqual({ error: { code, message: expect.any(String), details: expect.any(Object) } });
  expect(res.body.error.message.length).toBeGreaterThan(0);
}

/** Asserts a 2xx answer with this status and returns its body. */
export function expectOk<T = any>(res: JsonAnswer<T>, status = 200): T {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res.body;
}

/** Asserts the shape every write answers with: task summary, event ids, wal_seq. */
export function expectWriteAnswer(body: any, taskId: string): void {
  expect(body.task).toMatchObject({
    task_id: taskId,
    title: expect.any(String),
    status: expect.any(String),
    step_counts: expect.any(Object),
    total_steps: expect.any(Number),
    active_runs: expect.any(Number),
    diagnostics: { completeable: expect.any(Boolean), stalled: expect.any(Boolean) },
    updated_at: expect.any(String),
    wal_seq: expect.any(Number),
  });
  expect(Array.isArray(body.event_ids)).toBe(true);
  for (const id of body.event_ids) expect(typeof id).toBe("string");
  expect(body.wal_seq).toBe(body.task.wal_seq);
}

/** Parses an NDJSON WAL export: one WalEvent per line, each validated by the core's schema. */
export function parseWal(text: string): WalEvent[] {
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => WalEventSchema.parse(JSON.parse(line)));
}

/** The task's WAL as events (GET .../wal reads without reconciling leases). */
export async function walOf(taskPath: string, token: string, query = ""): Promise<WalEvent[]> {
  const res = await walText(taskPath, token, query);
  expect(res.status, res.text).toBe(200);
  return parseWal(res.text);
}

/** GET .../wal as raw text with its headers. */
export async function walText(taskPath: string, token: string, query = ""): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await SELF.fetch(`${BASE}${taskPath}/wal${query}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

/** Signs arbitrary claims (for forged, expired or foreign-session tokens). */
export async function signClaims(claims: Record<string, unknown>, secret = TOKEN_SECRET): Promise<string> {
  return sign(claims, secret, "HS256");
}

/** The task's Durable Object stub. */
export function taskStub(sid: string, tid: string) {
  return bindings.TASK_GRAPHS.get(bindings.TASK_GRAPHS.idFromName(`${sid}/${tid}`));
}

/** Waits `ms` real milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Retries an assertion until it passes (the session index hears of task changes asynchronously). */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 3_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (e) {
      if (Date.now() > until) throw e;
      await sleep(20);
    }
  }
}

let counter = 0;
/** A task id unique within this test file's shared session. */
export function uniqueId(prefix = "t"): string {
  counter += 1;
  return `${prefix}${counter.toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
}

/** Mints a session token of `role` with the session's orchestrator token. */
export async function mintRole(s: { sid: string; orch: string }, role: "orchestrator" | "observer" | "approver" | "a2a_client", agentId?: string): Promise<string> {
  const res = await SELF.fetch(`${BASE}/v1/sessions/${s.sid}/tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${s.orch}`, "content-type": "application/json" },
    body: JSON.stringify({ role, ...(agentId === undefined ? {} : { agent_id: agentId }) }),
  });
  const body = (await res.json()) as { token: string };
  expect(res.status, JSON.stringify(body)).toBe(201);
  return body.token;
}

/** The task's whole WAL export as text: equal before and after a refused request when it wrote nothing. */
export async function walExport(taskPath: string, token: string): Promise<string> {
  const res = await walText(taskPath, token);
  expect(res.status, res.text).toBe(200);
  return res.text;
}

/** Asserts that `send` is refused with `status`/`code` and that the task's WAL (read with `readToken`) is exactly as before. */
export async function expectRefusedWritingNothing(taskPath: string, readToken: string, send: () => Promise<JsonAnswer>, status: number, code: string): Promise<void> {
  const before = await walExport(taskPath, readToken);
  expectError(await send(), status, code);
  expect(await walExport(taskPath, readToken)).toBe(before);
}

/** Moves the task object's alarm far past the test, so that only the test runs it (with runDurableObjectAlarm). */
export async function holdAlarm(stub: DurableObjectStub): Promise<void> {
  await runInDurableObject(stub, async (_instance, state) => {
    await state.storage.setAlarm(Date.now() + 600_000);
  });
}

/** The SDK error a call fails with; fails the test when the call succeeds or throws anything else. */
export async function rejection(p: Promise<unknown>): Promise<RuntimeApiError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(RuntimeApiError);
    return e as RuntimeApiError;
  }
  throw new Error("expected the call to fail");
}

/**
 * Rewrites the stored JSON text of event `walSeq` inside its commit row (tests that damage or age a stored WAL):
 * `edit` gets the event's JSON text and returns the text to store in its place.
 */
export function editStoredEvent(sql: SqlStorage, walSeq: number, edit: (eventText: string) => string): void {
  const row = sql.exec<{ seq_key: number; events: string }>("SELECT seq_key, events FROM wal_commits WHERE seq_key >= ? ORDER BY seq_key LIMIT 1", walSeq).one();
  const texts = (JSON.parse(row.events) as WalEvent[]).map((e) => (e.wal_seq === walSeq ? edit(JSON.stringify(e)) : JSON.stringify(e)));
  sql.exec("UPDATE wal_commits SET events = ? WHERE seq_key = ?", `[${texts.join(",")}]`, row.seq_key);
}

/** How many events the task object's WAL stores. */
export function storedEventCount(sql: SqlStorage): number {
  return sql.exec<{ n: number | null }>("SELECT SUM(seq_key - first_seq + 1) AS n FROM wal_commits WHERE seq_key > 0").one().n ?? 0;
}

/** A fetch through SELF whose WebSockets record each frame they send, parsed and then kept as `keep` maps it. */
export function socketFrameRecorder<T>(keep: (frame: any) => T): { frames: T[]; fetch: FetchLike } {
  const frames: T[] = [];
  const fetch: FetchLike = async (input, init) => {
    const res = await SELF.fetch(input, init);
    const ws = (res as Response & { webSocket?: WebSocket | null }).webSocket;
    if (ws === undefined || ws === null) return res;
    const send = ws.send.bind(ws);
    ws.send = (data: string) => {
      frames.push(keep(JSON.parse(data)));
      send(data);
    };
    return res;
  };
  return { frames, fetch };
}
