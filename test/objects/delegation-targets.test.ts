/**
 * A delegated step whose peer's Agent Card puts its JSON-RPC interface on another origin: the task object's outbound
 * call is refused before anything is sent there, and the refusal is the attempt's recorded failure, with its reason.
 */
import { describe, expect, it } from "vitest";
import { PeerClient } from "../../durable-objects/peers/a2a-peer.js";
import { call, newSession } from "../support/helpers.js";
import { delegatedTask } from "../support/peer-delegation.js";
import { eventually, expectOk } from "../support/support.js";

describe("A delegated step's calls and the Agent Card's origin", () => {
  it("Should fail the attempt (delegate_refused, the reason in its summary) when the card aims the call at another allowlisted origin, sending it nothing", async () => {
    const s = await newSession();
    const taskId = "off-origin";
    const seen: { url: string; authorization: string | null }[] = [];
    const fetchImpl: typeof fetch = async (input, init) => {
      const request = new Request(input as RequestInfo, init);
      seen.push({ url: request.url, authorization: request.headers.get("authorization") });
      if (request.method === "GET") return Response.json({ name: "peer", supportedInterfaces: [{ url: "https://payments.example/a2a", protocolBinding: "JSONRPC", protocolVersion: "1.0" }], capabilities: {} });
      return new Response("must not be reached", { status: 500 });
    };
    const client = new PeerClient({ allowlist: ["peer.example", "payments.example"], timeoutMs: 5_000, maxResponseBytes: 1_048_576 }, fetchImpl, async (origin) => `Bearer secret-of-${new URL(origin).host}`);
    const path = await delegatedTask(s, taskId, client, "https://peer.example/card", "Pay the invoice");
    const step = await eventually(async () => {
      const remote = expectOk(await call("GET", path, s.orch)).steps.find((st: { step_id: string }) => st.step_id === "remote");
      expect(remote.status).toBe("failed");
      return remote;
    });
    expect(step).toMatchObject({ status_reason: "delegate_refused", result_summary: expect.stringContaining("off the card's origin https://peer.example") });
    expect(seen).toEqual([{ url: "https://peer.example/card", authorization: "Bearer secret-of-peer.example" }]);
  });
});
