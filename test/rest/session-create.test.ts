import { describe, expect, it } from "vitest";
import { ADMIN, call } from "../support/helpers.js";
import { expectError, expectOk } from "../support/support.js";

describe("POST /v1/sessions with an Idempotency-Key", () => {
  it("Should answer a retry with the first answer and create one session", async () => {
    const key = `create-${Math.random().toString(36).slice(2)}`;
    const first = expectOk(await call("POST", "/v1/sessions", ADMIN, { metadata: { team: "a" } }, { "idempotency-key": key }), 201);
    const again = expectOk(await call("POST", "/v1/sessions", ADMIN, { metadata: { team: "a" } }, { "idempotency-key": key }), 201);
    expect(again).toEqual(first);
    // The first answer's orchestrator token works in that session.
    expectOk(await call("GET", `/v1/sessions/${first.session_id}`, first.orchestrator.token));
  });

  it("Should answer the same key with another body with 422 idempotency_conflict", async () => {
    const key = `conflict-${Math.random().toString(36).slice(2)}`;
    expectOk(await call("POST", "/v1/sessions", ADMIN, {}, { "idempotency-key": key }), 201);
    expectError(await call("POST", "/v1/sessions", ADMIN, { orchestrator_agent_id: "other" }, { "idempotency-key": key }), 422, "idempotency_conflict");
  });

  it("Should refuse to create a chosen session id twice without the creation's key", async () => {
    const sid = `sess_fixed_${Math.random().toString(36).slice(2, 8)}`;
    expectOk(await call("POST", "/v1/sessions", ADMIN, { session_id: sid }), 201);
    expectError(await call("POST", "/v1/sessions", ADMIN, { session_id: sid }), 400, "validation_error");
  });

  it("Should create distinct sessions for distinct keys", async () => {
    const a = expectOk(await call("POST", "/v1/sessions", ADMIN, {}, { "idempotency-key": `k1-${Math.random()}` }), 201);
    const b = expectOk(await call("POST", "/v1/sessions", ADMIN, {}, { "idempotency-key": `k2-${Math.random()}` }), 201);
    expect(a.session_id).not.toBe(b.session_id);
  });
});
