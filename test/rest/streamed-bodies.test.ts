/**
 * Bodies are refused as they stream: a chunked body is counted as it arrives and answered 413 the moment it passes
 * MAX_BODY_BYTES, on a REST route, the batch route, /mcp and /a2a, with the rest of it never read; a declared
 * Content-Length over the limit is refused before a byte is read; a caller the route refuses for its token alone
 * (an observer on a write) is answered 403 before its body is read; the unread rest of a refused body is drained
 * (read and dropped) no further than 4 × the limit before it is cut; a body of exactly MAX_BODY_BYTES is taken.
 */
import { SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { BASE, bindings, mintRole, walText } from "../support/support.js";

const MAX = Number(bindings.MAX_BODY_BYTES);
const CHUNK = 64 * 1024;
/** How far past the limit a refused body may have been pulled: the chunk that crossed it and what the pipe between the client and the Worker buffers. */
const SLACK = 4 * CHUNK;
/**
 * How much of a refused body is drained (read and dropped, never kept) before it is cut, so that a client sending a
 * little over the limit reads its answer instead of a reset: 4 × MAX_BODY_BYTES (routes/http/body.ts).
 */
const DRAINED = 4 * MAX;

/** A body that counts what the Worker pulled from it: `total` bytes of `fill`, 64 KiB a pull, or a pull that never answers once `stallAfter` bytes went out. */
function countedBody(total: number, opts: { stallAfter?: number; fill?: number } = {}) {
  const state = { pulled: 0, done: false };
  const chunk = new Uint8Array(CHUNK).fill(opts.fill ?? 0x20);
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (opts.stallAfter !== undefined && state.pulled >= opts.stallAfter) return new Promise<void>(() => {});
        const n = Math.min(CHUNK, total - state.pulled);
        if (n <= 0) {
          state.done = true;
          controller.close();
          return;
        }
        controller.enqueue(n === CHUNK ? chunk.slice() : chunk.slice(0, n));
        state.pulled += n;
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, state };
}

/** A JSON text padded with spaces to exactly MAX_BODY_BYTES, sent 64 KiB a chunk. */
function bodyAtLimit(json: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(json + " ".repeat(MAX - json.length));
  expect(bytes.byteLength).toBe(MAX);
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.byteLength) return controller.close();
      controller.enqueue(bytes.slice(at, at + CHUNK));
      at += CHUNK;
    },
  });
}

/** Sends `body` to `path` and answers within `ms`, or throws (the route waited for the body). */
async function send(path: string, token: string, body: ReadableStream<Uint8Array>, headers: Record<string, string> = {}, ms = 5_000): Promise<Response> {
  const answer = SELF.fetch(`${BASE}${path}`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers }, body });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer from ${path} within ${ms} ms`)), ms)));
  try {
    return await Promise.race([answer, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Asserts that a refused body was not read: answered before its end, with no more pulled than `bound`. */
function expectUnread(state: { pulled: number; done: boolean }, bound: number): void {
  expect(state.done).toBe(false);
  expect(state.pulled).toBeLessThanOrEqual(bound);
}

let S: TestSession;
let T: string;
let a2aToken: string;
const lastSeq = async () => Number((await walText(T, S.orch, "?limit=1")).headers.get("x-last-wal-seq"));

beforeAll(async () => {
  S = await newSession();
  T = await newTask(S, "streamed-bodies", [step("a")]);
  a2aToken = await mintRole(S, "a2a_client");
});

describe("A chunked body", () => {
  const routes = [
    { name: "a REST write", path: () => `${T}/steps/a/progress`, token: () => S.orch, atLimit: () => '{"phase":"at the limit"}', code: (b: any) => b.error.code },
    { name: "the batch route", path: () => `${T}/batch`, token: () => S.orch, atLimit: () => JSON.stringify({ commands: [{ token: S.orch, method: "POST", path: `${T}/steps/a/progress`, body: { phase: "batched" } }] }), code: (b: any) => b.error.code },
    { name: "/mcp", path: () => "/mcp", token: () => S.orch, atLimit: () => JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }), code: (b: any) => b.error.code },
    { name: "/a2a", path: () => "/a2a", token: () => a2aToken, atLimit: () => JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ListTasks", params: {} }), code: (b: any) => b.error.data[0].reason },
  ];
  const MCP_HEADERS = { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" };

  it.each(routes)("Should take $name's body of exactly MAX_BODY_BYTES, and answer one past it 413 as soon as the count passes the limit, the rest drained no further than 4 × the limit and never kept", async ({ name, path, token, atLimit, code }) => {
    const headers = name === "/mcp" ? MCP_HEADERS : {};
    const taken = await send(path(), token(), bodyAtLimit(atLimit()), headers);
    const answer = await taken.text();
    expect(taken.status, answer).toBe(200);
    expect(answer).not.toMatch(/"error"/);
    const before = await lastSeq();
    const { stream, state } = countedBody(16 * MAX);
    const res = await send(path(), token(), stream, headers);
    expect(res.status).toBe(413);
    expect(String(code(await res.json())).toLowerCase()).toBe("payload_too_large");
    expectUnread(state, MAX + DRAINED + SLACK);
    expect(await lastSeq()).toBe(before);
  });
});

describe("A declared Content-Length past MAX_BODY_BYTES", () => {
  it("Should be answered 413 at once on /a2a, /mcp and a REST write, before the body is read", async () => {
    for (const [path, token] of [["/a2a", a2aToken], ["/mcp", S.orch], [`${T}/complete`, S.orch]] as const) {
      // The body sends one chunk and then nothing: a route that waits for it never answers.
      const { stream, state } = countedBody(2 * MAX, { stallAfter: CHUNK });
      const res = await send(path, token, stream, { "content-length": String(2 * MAX) }, 3_000);
      expect(res.status, path).toBe(413);
      expect(state.pulled, path).toBeLessThanOrEqual(CHUNK);
    }
  });
});

describe("A caller refused for its token alone", () => {
  it.each([
    { name: "complete", path: () => `${T}/complete` },
    { name: "a step's progress", path: () => `${T}/steps/a/progress` },
    { name: "the batch route", path: () => `${T}/batch` },
    { name: "dispatch", path: () => `${T}/workers` },
  ])("Should answer an observer's huge body on $name by 403 tool_not_available, draining no more of it than 4 × the limit", async ({ path }) => {
    const { stream, state } = countedBody(16 * MAX);
    const res = await send(path(), S.observer, stream);
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error.code).toBe("tool_not_available");
    expectUnread(state, MAX + DRAINED + SLACK);
  });

  it("Should answer an observer's PATCH of the task by 403 tool_not_available, draining no more of the body than 4 × the limit", async () => {
    const { stream, state } = countedBody(16 * MAX);
    const res = await SELF.fetch(`${BASE}${T}`, { method: "PATCH", headers: { authorization: `Bearer ${S.observer}`, "content-type": "application/json" }, body: stream });
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error.code).toBe("tool_not_available");
    expectUnread(state, MAX + DRAINED + SLACK);
  });

  it("Should answer a body without a token (401), with another session's token (403 permission_denied) and with an observer's (403 tool_not_available), draining no more of it than 4 × the limit", async () => {
    const other = await newSession();
    for (const [token, status, code] of [[undefined, 401, "unauthorized"], [other.orch, 403, "permission_denied"], [S.observer, 403, "tool_not_available"]] as const) {
      const { stream, state } = countedBody(16 * MAX);
      const res = await SELF.fetch(`${BASE}${T}/cancel`, { method: "POST", headers: token === undefined ? {} : { authorization: `Bearer ${token}` }, body: stream });
      expect(res.status, code).toBe(status);
      expect(((await res.json()) as any).error.code).toBe(code);
      expectUnread(state, MAX + DRAINED + SLACK);
    }
  });
});

