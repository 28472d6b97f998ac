/** @module What an unexpected exception answers: a bug is 500 internal_error with a logged incident id; a platform storage fault is 503 storage_error. */
import { afterEach, describe, expect, it, vi } from "vitest";
import { buildApp } from "../../routes/app.js";
import { bindings } from "../support/support.js";

/** The Worker's bindings with a session namespace whose lookup throws `thrown`. */
function envThrowing(thrown: unknown) {
  return { ...bindings, SESSIONS: { idFromName: () => { throw thrown; } } };
}

describe("Unexpected exceptions", () => {
  afterEach(() => vi.restoreAllMocks());

  it("Should answer a bug with 500 internal_error whose incident_id is the one in the log line", async () => {
    const logged: string[] = [];
    vi.spyOn(console, "error").mockImplementation((line: unknown) => void logged.push(String(line)));
    const res = await buildApp().request("/health/object", {}, envThrowing(new TypeError("cannot read properties of undefined")));
    expect(res.status).toBe(500);
    const body = (await res.json()) as { error: { code: string; details: { incident_id: string } } };
    expect(body.error.code).toBe("internal_error");
    expect(body.error.details.incident_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(logged).toHaveLength(1);
    const line = JSON.parse(logged[0]!);
    expect(line).toMatchObject({ level: "error", incident_id: body.error.details.incident_id, where: "GET /health/object", error: "cannot read properties of undefined" });
  });

  it("Should answer a fault the platform marks retryable with 503 storage_error, not internal_error", async () => {
    vi.spyOn(console, "error").mockImplementation(() => undefined);
    const fault = Object.assign(new Error("Durable Object storage operation exceeded timeout"), { retryable: true });
    const res = await buildApp().request("/health/object", {}, envThrowing(fault));
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("storage_error");
  });
});
