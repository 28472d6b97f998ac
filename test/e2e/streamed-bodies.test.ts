/**
 * Bodies refused as they stream, over real HTTP against `wrangler dev`: a chunked upload far past MAX_BODY_BYTES, or
 * one a caller's token cannot send at all (an observer's `complete`), is answered while the client is still
 * sending, long before the upload would end; a declared Content-Length past the limit is answered without waiting
 * for the body; a small refused body is still taken in, so its client reads the answer. A client still sending past
 * the limit when the refusal comes may see its connection closed under it instead of the answer (the server stops
 * reading), or, under `wrangler dev`, the dev proxy's own 503: either way it has not sent the rest.
 */
import http from "node:http";
import { beforeAll, describe, expect, it, inject } from "vitest";
import { defaultAdminToken } from "../../scripts/dev-server.js";
import { type Sent, streamUpload } from "../../scripts/bench/harness/upload.js";

let base: string;
let s: { sid: string; orch: string; observer: string };
let task: string;
let a2a: string;

async function post(path: string, token: string, body: unknown): Promise<any> {
  const res = await fetch(`${base}${path}`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(body), signal: AbortSignal.timeout(15_000) });
  expect(res.status).toBeLessThan(300);
  return res.json();
}

beforeAll(async () => {
  base = inject("sharedDevServerBase");
  const created = await post("/v1/sessions", defaultAdminToken(), {});
  s = { sid: created.session_id, orch: created.orchestrator.token, observer: created.observer.token };
  await post(`/v1/sessions/${s.sid}/tasks`, s.orch, { task_id: "hostile", wal_name: "hostile", title: "Hostile bodies", summary: "", steps: [{ step_id: "a", title: "A", summary: "", depends_on_step_ids: [] }] });
  task = `/v1/sessions/${s.sid}/tasks/hostile`;
  a2a = (await post(`/v1/sessions/${s.sid}/tokens`, s.orch, { role: "a2a_client" })).token;
});

const UPLOAD = 256 * 2 ** 20;
/** What a client may have sent when it is answered: the limit, and what the sockets and the dev proxy hold in between. */
const SENT_BOUND = 32 * 2 ** 20;

/** The default MAX_BODY_BYTES of the shared server. */
const MAX_BODY_BYTES = 1_048_576;

/**
 * A refusal: the expected status, or the connection closed under the client, or the dev proxy's 503 for it; before
 * SENT_BOUND went out, and, for a 413, after the limit did (the server counted past it first).
 */
function expectRefusedEarly(sent: Sent, status: number): void {
  const seen = sent.status ?? sent.error;
  expect([status, 503].includes(sent.status ?? -1) || sent.error !== undefined, `answer ${seen}: ${sent.body.slice(0, 200)}`).toBe(true);
  expect(sent.sentBytes, `${sent.sentBytes} bytes sent before ${seen}`).toBeLessThan(SENT_BOUND);
  if (status === 413) expect(sent.sentBytes).toBeGreaterThan(MAX_BODY_BYTES);
}

describe("A hostile upload over HTTP", () => {
  it("Should answer an ordinary body a little over the limit (1.5 and 2 MiB, with its Content-Length) with a clean 413 or 403, never a reset", async () => {
    // The refused body is drained (read and dropped) within a shared allowance of 4 × the limit before the answer: cut at once, the bytes
    // the server never read reset the client's connection before it reads the answer.
    for (const mib of [1.5, 2]) {
      const body = JSON.stringify({ reason: "x".repeat(Math.floor(mib * 2 ** 20)) });
      for (const [token, status] of [[s.orch, 413], [s.observer, 403]] as const) {
        for (let i = 0; i < 5; i++) {
          const res = await fetch(`${base}${task}/complete`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body, signal: AbortSignal.timeout(15_000) });
          expect(res.status, `${mib} MiB, try ${i}`).toBe(status);
          expect(((await res.json()) as any).error.code).toBe(status === 413 ? "payload_too_large" : "tool_not_available");
        }
      }
    }
  });

  it("Should answer an observer's write 403 whatever its size: small ones always with the answer, a 256 MiB one before 32 MiB of it went out", async () => {
    // Refused before its body is read, a small body is still taken in whole, so the client always reads the answer.
    for (const body of ['{"reason":"x"}', JSON.stringify({ reason: "x".repeat(200_000) })]) {
      for (let i = 0; i < 5; i++) {
        const res = await fetch(`${base}${task}/complete`, { method: "POST", headers: { authorization: `Bearer ${s.observer}`, "content-type": "application/json" }, body, signal: AbortSignal.timeout(15_000) });
        expect(res.status).toBe(403);
        expect(((await res.json()) as any).error.code).toBe("tool_not_available");
      }
    }
    expectRefusedEarly(await streamUpload(`${base}${task}/complete`, s.observer, UPLOAD, {}), 403);
  });


  it.each([
    { name: "a task's complete with the orchestrator's token", path: () => `${task}/complete`, token: () => s.orch, status: 413 },
    { name: "/mcp", path: () => "/mcp", token: () => s.observer, status: 413 },
    { name: "/a2a", path: () => "/a2a", token: () => a2a, status: 413 },
  ])("Should refuse a 256 MiB chunked body to $name before 32 MiB of it went out", async ({ path, token, status }) => {
    const headers: Record<string, string> = path() === "/mcp" ? { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" } : {};
    expectRefusedEarly(await streamUpload(base + path(), token(), UPLOAD, headers), status);
  });

  it.each([
    { name: "/a2a", path: () => "/a2a", token: () => a2a },
    { name: "/mcp", path: () => "/mcp", token: () => s.observer },
  ])("Should answer $name 413 for a declared Content-Length past the limit without waiting for the body", async ({ path, token }) => {
    // 64 KiB of a declared 2 MiB, then nothing: a server that waits for the body never answers.
    const answer = await new Promise<{ status: number | null; error?: string }>((resolve) => {
      const req = http.request(base + path(), { method: "POST", headers: { authorization: `Bearer ${token()}`, "content-type": "application/json", accept: "application/json, text/event-stream", "content-length": String(2 * 2 ** 20) } }, (res) => {
        res.resume();
        resolve({ status: res.statusCode ?? null });
        req.destroy();
      });
      req.on("error", (e) => resolve({ status: null, error: e.message }));
      req.setTimeout(5_000, () => {
        resolve({ status: null, error: "no answer within 5 s" });
        req.destroy();
      });
      req.write(new Uint8Array(64 * 1024).fill(0x20));
    });
    expect(answer).toEqual({ status: 413 });
  });
});
