/**
 * @module A malformed Content-Length (negative, fractional, hex, a list, not a number) is `400
 * validation_error` with the error envelope on every /v1 route, and nothing is written; digits are read as
 * they are. (In front of the service, workerd's own HTTP server answers a bare 500 to such a request before
 * the Worker runs: see docs/limits.md.)
 */
import { SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { BASE, expectError, walText } from "../support/support.js";

let S: TestSession;
let T: string;
let worker: { token: string };
beforeAll(async () => {
  S = await newSession();
  T = await newTask(S, "content-length", [step("a")]);
  worker = await dispatch(S, T);
});

/** A request through SELF with this Content-Length header as it is. */
async function send(method: string, path: string, token: string, contentLength: string, body?: string) {
  const res = await SELF.fetch(`${BASE}${path}`, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "content-length": contentLength }, ...(body === undefined ? {} : { body }) });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text), headers: res.headers };
}

const lastSeq = async () => Number((await walText(T, S.orch, "?limit=1")).headers.get("x-last-wal-seq"));

describe("Content-Length", () => {
  const routes = [
    { name: "a step claim", method: "POST", path: () => `${T}/steps/a/claim`, token: () => worker.token, body: () => "{}" },
    { name: "a progress report", method: "POST", path: () => `${T}/steps/a/progress`, token: () => S.orch, body: () => '{"phase":"p"}' },
    { name: "a batch", method: "POST", path: () => `${T}/batch`, token: () => worker.token, body: () => JSON.stringify({ commands: [{ token: worker.token, method: "POST", path: `${T}/steps/a/claim` }] }) },
    { name: "a task read", method: "GET", path: () => T, token: () => S.orch, body: () => undefined },
  ];
  const values = ["-1", "abc", "1.5", "0x10", "1e3", "2, 2", "+2"];

  it.each(routes.flatMap((route) => values.map((value) => ({ ...route, value }))))(
    "Should answer $name with Content-Length $value by 400 validation_error with the envelope, writing nothing",
    async ({ method, path, token, body, value }) => {
      const before = await lastSeq();
      expectError(await send(method, path(), token(), value, body()), 400, "validation_error");
      expect(await lastSeq()).toBe(before);
    },
  );

  it("Should still take a Content-Length of digits, and answer one over MAX_BODY_BYTES by 413 payload_too_large", async () => {
    expect((await send("POST", `${T}/steps/a/progress`, S.orch, "13", '{"phase":"p"}')).status).toBe(200);
    expectError(await send("POST", `${T}/steps/a/progress`, S.orch, "99999999999999999999", '{"phase":"p"}'), 413, "payload_too_large");
  });
});
