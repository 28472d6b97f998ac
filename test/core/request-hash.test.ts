/**
 * requestHash, what an Idempotency-Key is bound to: the same request hashes the same every time; a request that
 * differs in method, path or body (by one character, or only in where path ends and body begins) hashes
 * differently; the hash is versioned ("q1:") so it can never be taken for a stored SHA-256 hex.
 */
import { describe, expect, it } from "vitest";
import { requestHash, sha256DerivedId } from "../../src/lib/hash.js";
import { sameRequest } from "../../durable-objects/task/storage/idempotency-store.js";

const body = JSON.stringify({ status: "completed", result_summary: "3 facts", claim_next: true });
const path = "/v1/sessions/sess_1/tasks/t1/steps/a/status";

describe("requestHash", () => {
  it("Should hash the same request to the same q1: value, 64 bits as 16 hex digits", () => {
    const hash = requestHash("POST", path, body);
    expect(hash).toMatch(/^q1:[0-9a-f]{16}$/);
    expect(requestHash("POST", path, body)).toBe(hash);
    expect(requestHash("POST", `${path}`, `${body}`)).toBe(hash);
  });

  it("Should hash requests that differ in method, path or body differently", () => {
    const base = requestHash("POST", path, body);
    const others = [
      requestHash("PATCH", path, body),
      requestHash("POST", path.replace("/a/", "/b/"), body),
      requestHash("POST", path, body.replace("3 facts", "4 facts")),
      requestHash("POST", path, `${body} `),
      requestHash("POST", path, ""),
      // The same characters split differently between path and body.
      requestHash("POST", `${path}\n{`, body.slice(1)),
    ];
    expect(new Set([base, ...others]).size).toBe(others.length + 1);
  });

  it("Should spread single-character changes over distinct hashes (no collision among 20,000 near-identical bodies)", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) seen.add(requestHash("POST", path, JSON.stringify({ phase: "reading", counters: { pages: i } })));
    expect(seen.size).toBe(20_000);
  });

  it("Should hash text beyond Latin-1 by its characters (two texts that differ only there differ)", () => {
    expect(requestHash("POST", path, '{"t":"日本"}')).not.toBe(requestHash("POST", path, '{"t":"日木"}'));
    expect(requestHash("POST", path, '{"t":"😀"}')).not.toBe(requestHash("POST", path, '{"t":"😁"}'));
  });

  it("Should never equal a SHA-256 hex, so a legacy record is told apart by sameRequest", async () => {
    const legacy = await sha256DerivedId("POST", path, body);
    expect(legacy).toMatch(/^[0-9a-f]{64}$/);
    const fresh = requestHash("POST", path, body);
    expect(fresh).not.toBe(legacy);
    expect(sameRequest(legacy, fresh)).toBe(true);
    expect(sameRequest(fresh, fresh)).toBe(true);
    expect(sameRequest(requestHash("POST", path, "{}"), fresh)).toBe(false);
  });
});
