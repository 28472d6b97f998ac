/**
 * /mcp skips the SDK's isLegacyRequest for a message claimsModernEra accepts (the handler classifies it anyway).
 * That is sound only if the SDK never routes such a message to its legacy path: fast-check generates JSON-RPC
 * messages — requests, notifications, responses, batches, initialize, claims valid, malformed or absent, headers
 * agreeing or not — and every one claimsModernEra accepts must be one the SDK itself answers "not legacy" for.
 * The generated set must also hold both kinds, so the check cannot pass by accepting nothing.
 */
import { isLegacyRequest, PROTOCOL_VERSION_META_KEY } from "@modelcontextprotocol/server";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { claimsModernEra } from "../../routes/mcp/mcp.js";

const META_VALUES = fc.oneof(fc.constantFrom("2026-07-28", "2025-11-25", "2099-01-01", ""), fc.integer(), fc.constant(null), fc.dictionary(fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), { maxKeys: 2 }));

const otherMeta = { "io.modelcontextprotocol/clientInfo": fc.constantFrom({ name: "t", version: "1" }, "bad"), "io.modelcontextprotocol/clientCapabilities": fc.constantFrom({}, 7) };
const meta = fc.oneof(
  { weight: 4, arbitrary: fc.record({ [PROTOCOL_VERSION_META_KEY]: META_VALUES, ...otherMeta }, { requiredKeys: [PROTOCOL_VERSION_META_KEY] }) },
  { weight: 1, arbitrary: fc.record(otherMeta, { requiredKeys: [] }) },
  { weight: 1, arbitrary: fc.constantFrom(undefined, null, "text", [1]) },
);

const callFields = { name: fc.constantFrom("agent.task_get", "x"), arguments: fc.constant({}), protocolVersion: fc.constantFrom("2025-11-25", "2026-07-28") };
const params = fc.oneof(
  { weight: 4, arbitrary: fc.record({ ...callFields, _meta: meta }, { requiredKeys: ["_meta"] }) },
  { weight: 1, arbitrary: fc.record(callFields, { requiredKeys: [] }) },
  { weight: 1, arbitrary: fc.constantFrom(undefined, null, "text", [1, 2]) },
);

const call = {
  jsonrpc: fc.constantFrom("2.0", "2.0", "2.0", "1.0"),
  id: fc.oneof(fc.integer(), fc.string({ maxLength: 4 }), fc.constant(null)),
  method: fc.oneof({ weight: 6, arbitrary: fc.constantFrom("tools/call", "tools/list", "initialize", "notifications/initialized", "server/discover", "prompts/get") }, { weight: 1, arbitrary: fc.integer() }),
  params,
};
// Requests and notifications (no id), and now and then a response shape (result or error) with a method and params too.
const message = fc.oneof(
  { weight: 6, arbitrary: fc.record(call, { requiredKeys: ["jsonrpc", "method"] }) },
  { weight: 1, arbitrary: fc.record({ ...call, result: fc.constant({}), error: fc.constant({ code: -1, message: "e" }) }, { requiredKeys: ["jsonrpc"] }) },
);

const body = fc.oneof({ weight: 5, arbitrary: message }, { weight: 1, arbitrary: fc.array(message, { maxLength: 3 }) });
const headers = fc.record({ "mcp-protocol-version": fc.constantFrom("2026-07-28", "2025-11-25", "2099-01-01"), "mcp-method": fc.constantFrom("tools/call", "tools/list", "initialize") }, { requiredKeys: [] });

describe("the era shortcut agrees with the SDK's classification", () => {
  it("every message claimsModernEra accepts is one isLegacyRequest calls not legacy (and both kinds are generated)", async () => {
    const seen = { accepted: 0, declined: 0 };
    await fc.assert(
      fc.asyncProperty(body, headers, async (generated, h) => {
        // As /mcp holds it: parsed from the text (plain objects, undefined fields gone).
        const b: unknown = JSON.parse(JSON.stringify(generated));
        const request = new Request("https://runtime.example/mcp", { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...h }, body: JSON.stringify(b) });
        if (!claimsModernEra(b)) {
          seen.declined++;
          return;
        }
        seen.accepted++;
        expect(await isLegacyRequest(request, b)).toBe(false);
      }),
      { numRuns: 2_000 },
    );
    expect(seen.accepted).toBeGreaterThan(100);
    expect(seen.declined).toBeGreaterThan(100);
  });

  it("a 2026-07-28 tools/call is accepted; initialize, a batch, a response and a claim-less call are not", () => {
    const claim = { [PROTOCOL_VERSION_META_KEY]: "2026-07-28" };
    expect(claimsModernEra({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "agent.task_get", _meta: claim } })).toBe(true);
    expect(claimsModernEra({ jsonrpc: "2.0", id: 1, method: "initialize", params: { _meta: claim } })).toBe(false);
    expect(claimsModernEra([{ jsonrpc: "2.0", id: 1, method: "tools/call", params: { _meta: claim } }])).toBe(false);
    expect(claimsModernEra({ jsonrpc: "2.0", id: 1, result: {}, method: "tools/call", params: { _meta: claim } })).toBe(false);
    expect(claimsModernEra({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "agent.task_get" } })).toBe(false);
    expect(claimsModernEra({ jsonrpc: "2.0", id: 1, method: "tools/call", params: null })).toBe(false);
  });
});
