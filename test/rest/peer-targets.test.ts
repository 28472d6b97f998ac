/**
 * Where the outbound peer client (durable-objects/peers/a2a-peer.ts) may send a request: only to the origin of the
 * Agent Card it was given (a card cannot aim our call, and the credential stored for another origin, elsewhere), and
 * never to a loopback, private or link-local address through `OUTBOUND_ALLOWLIST="*"`, however the address is spelt,
 * unless the allowlist names that host.
 */
import { describe, expect, it } from "vitest";
import { PeerClient, type PeerLimits } from "../../durable-objects/peers/a2a-peer.js";
import { type Env, outboundAllowlist, readConfig } from "../../durable-objects/shared/env.js";

const LIMITS = (allowlist: string[]): PeerLimits => ({ allowlist, timeoutMs: 5_000, maxResponseBytes: 1_048_576 });

/** A peer network: every request recorded with its Authorization; a card at `/card` naming `rpcUrl(origin)`, a task on every JSON-RPC call. */
function network(rpcUrl: (origin: string) => string) {
  const seen: { url: string; authorization: string | null }[] = [];
  const fetchImpl: typeof fetch = async (input, init) => {
    const request = new Request(input as RequestInfo, init);
    seen.push({ url: request.url, authorization: request.headers.get("authorization") });
    const origin = new URL(request.url).origin;
    if (request.method === "GET") return Response.json({ name: "peer", supportedInterfaces: [{ url: rpcUrl(origin), protocolBinding: "JSONRPC", protocolVersion: "1.0" }], capabilities: {} });
    const body = (await request.json()) as { id: number; method: string };
    const task = { id: "remote-1", contextId: "ctx-1", status: { state: "TASK_STATE_WORKING" } };
    return Response.json({ jsonrpc: "2.0", id: body.id, result: body.method === "SendMessage" ? { task } : task });
  };
  return { seen, fetchImpl };
}

/** Each origin's own stored credential. */
const credentials = async (origin: string) => `Bearer secret-of-${new URL(origin).host}`;

describe("Outbound calls stay on the Agent Card's origin", () => {
  it("Should refuse a card that puts its JSON-RPC URL on another allowlisted origin, sending nothing there and no credential of that origin", async () => {
    const { seen, fetchImpl } = network(() => "https://bank-agent.example/a2a");
    const client = new PeerClient(LIMITS(["peer.example", "bank-agent.example"]), fetchImpl, credentials);
    const sent = await client.send("https://peer.example/card", { message_id: "m-1", text: "move the funds" });
    expect(sent).toMatchObject({ ok: false, code: "not_allowed", retryable: false });
    if (!sent.ok) expect(sent.message).toContain("off the card's origin https://peer.example");
    expect(seen).toEqual([{ url: "https://peer.example/card", authorization: "Bearer secret-of-peer.example" }]);
    expect(await client.get("https://peer.example/card", "remote-1")).toMatchObject({ ok: false, code: "not_allowed" });
    expect(seen.filter((r) => r.url.startsWith("https://bank-agent.example"))).toEqual([]);
  });

  it("Should call a card's JSON-RPC URL on its own origin (another path, an explicit default port) with that origin's credential only", async () => {
    const { seen, fetchImpl } = network((origin) => `${origin}:443/rpc/a2a`);
    const client = new PeerClient(LIMITS(["peer.example", "bank-agent.example"]), fetchImpl, credentials);
    expect(await client.send("https://peer.example/card", { message_id: "m-2", text: "summarise" })).toMatchObject({ ok: true, task: { remote_task_id: "remote-1" } });
    expect(seen.map((r) => r.url)).toEqual(["https://peer.example/card", "https://peer.example/rpc/a2a"]);
    expect(seen.every((r) => r.authorization === "Bearer secret-of-peer.example")).toBe(true);
  });

  it("Should refuse a JSON-RPC URL on the same host under another scheme or port (another origin, another credential)", async () => {
    for (const rpc of ["http://peer.example/a2a", "https://peer.example:8443/a2a"]) {
      const { seen, fetchImpl } = network(() => rpc);
      const sent = await new PeerClient(LIMITS(["peer.example"]), fetchImpl, credentials).send("https://peer.example/card", { message_id: "m-3", text: "x" });
      expect(sent, rpc).toMatchObject({ ok: false, code: "not_allowed" });
      expect(seen.map((r) => r.url), rpc).toEqual(["https://peer.example/card"]);
    }
  });
});

describe('OUTBOUND_ALLOWLIST="*" and the runtime\'s own network', () => {
  const internal = [
    "http://127.0.0.1:8080/card",
    "http://127.9.9.9/card",
    "http://localhost/card",
    "http://LOCALHOST./card",
    "http://agent.localhost/card",
    "http://10.1.2.3/card",
    "http://172.16.0.1/card",
    "http://172.31.255.255/card",
    "http://192.168.1.1/card",
    "http://169.254.169.254/latest/meta-data",
    "http://100.64.0.1/card",
    "http://100.127.255.254/card",
    "http://0.0.0.0/card",
    "http://0/card",
    "http://[::1]/card",
    "http://[::]/card",
    "http://[fc00::1]/card",
    "http://[fd12:3456::1]/card",
    "http://[fe80::1]/card",
    "http://[febf::1]/card",
    "http://[::ffff:127.0.0.1]/card",
    "http://[::ffff:a9fe:a9fe]/card",
    "http://[::ffff:10.0.0.1]/card",
    "http://[64:ff9b::192.168.0.1]/card",
    "http://2130706433/card",
    "http://0x7f.1/card",
    "http://0177.0.0.1/card",
    "http://127.1/card",
    "http://0xa9.0xfe.0xa9.0xfe/card",
    "http://3232235777/card",
  ];

  it("Should refuse loopback, private and link-local hosts in every spelling, before any request", async () => {
    for (const url of internal) {
      const { seen, fetchImpl } = network((origin) => `${origin}/a2a`);
      const sent = await new PeerClient(LIMITS(["*"]), fetchImpl, credentials).send(url, { message_id: "m", text: "x" });
      expect(sent, url).toMatchObject({ ok: false, code: "not_allowed", retryable: false });
      if (!sent.ok) expect(sent.message, url).toMatch(/is a (loopback|private|link-local) address: OUTBOUND_ALLOWLIST must name it/);
      expect(seen, url).toEqual([]);
    }
  });

  it("Should still reach public hosts and addresses next to those ranges through *", async () => {
    for (const url of ["https://peer.example/card", "http://172.32.0.1/card", "http://100.128.0.1/card", "http://11.0.0.1/card", "http://192.169.0.1/card", "http://[2001:db8::1]/card", "http://[::ffff:8.8.8.8]/card"]) {
      const { seen, fetchImpl } = network((origin) => `${origin}/a2a`);
      expect(await new PeerClient(LIMITS(["*"]), fetchImpl).send(url, { message_id: "m", text: "x" }), url).toMatchObject({ ok: true });
      expect(seen.length, url).toBe(2);
    }
  });

  it("Should reach an internal host the allowlist names (by host, host:port or loopback), and no other", async () => {
    const limits = LIMITS(["*", "10.1.2.3", "localhost:8080", "[fd00::7]"]);
    for (const url of ["http://10.1.2.3/card", "http://10.1.2.3:9000/card", "http://localhost:8080/card", "http://[fd00::7]/card"]) {
      const { fetchImpl } = network((origin) => `${origin}/a2a`);
      expect(await new PeerClient(limits, fetchImpl).send(url, { message_id: "m", text: "x" }), url).toMatchObject({ ok: true });
    }
    for (const url of ["http://10.1.2.4/card", "http://localhost:9090/card", "http://127.0.0.1:8080/card", "http://[fd00::8]/card"]) {
      const { seen, fetchImpl } = network((origin) => `${origin}/a2a`);
      expect(await new PeerClient(limits, fetchImpl).send(url, { message_id: "m", text: "x" }), url).toMatchObject({ ok: false, code: "not_allowed" });
      expect(seen, url).toEqual([]);
    }
    const { fetchImpl } = network((origin) => `${origin}/a2a`);
    expect(await new PeerClient(LIMITS(["loopback"]), fetchImpl).send("http://127.0.0.1:8080/card", { message_id: "m", text: "x" })).toMatchObject({ ok: true });
    expect(await new PeerClient(LIMITS(["loopback"]), fetchImpl).send("http://10.1.2.3/card", { message_id: "m", text: "x" })).toMatchObject({ ok: false, code: "not_allowed" });
  });

  it("Should refuse a public card whose JSON-RPC URL points into the runtime's network, before any JSON-RPC request", async () => {
    const { seen, fetchImpl } = network(() => "http://169.254.169.254/a2a");
    expect(await new PeerClient(LIMITS(["*"]), fetchImpl).send("https://peer.example/card", { message_id: "m", text: "x" })).toMatchObject({ ok: false, code: "not_allowed" });
    expect(seen.map((r) => r.url)).toEqual(["https://peer.example/card"]);
  });
});

describe("OUTBOUND_ALLOWLIST and its older name A2A_PEER_ALLOWLIST", () => {
  it("Should read OUTBOUND_ALLOWLIST, and A2A_PEER_ALLOWLIST only while it is unset or empty", () => {
    expect(outboundAllowlist({ OUTBOUND_ALLOWLIST: " peer.example , loopback ", A2A_PEER_ALLOWLIST: "old.example" })).toEqual(["peer.example", "loopback"]);
    expect(outboundAllowlist({ A2A_PEER_ALLOWLIST: "old.example" })).toEqual(["old.example"]);
    expect(outboundAllowlist({ OUTBOUND_ALLOWLIST: "", A2A_PEER_ALLOWLIST: "old.example,*" })).toEqual(["old.example", "*"]);
    expect(outboundAllowlist({})).toEqual([]);
  });

  it("Should give peers and webhooks the same list, and webhooks their documented defaults", () => {
    const config = readConfig({ OUTBOUND_ALLOWLIST: "hooks.example" } as Env);
    expect(config.peers.allowlist).toEqual(["hooks.example"]);
    expect(config.webhooks).toEqual({ allowlist: ["hooks.example"], timeoutMs: 10_000, maxResponseBytes: 65_536, maxTries: 8, retryBaseMs: 5_000 });
    expect(readConfig({ WEBHOOK_TIMEOUT_MS: "2500", WEBHOOK_MAX_RESPONSE_BYTES: "1024", WEBHOOK_MAX_TRIES: "3", WEBHOOK_RETRY_BASE_MS: "250" } as Env).webhooks).toMatchObject({ timeoutMs: 2_500, maxResponseBytes: 1_024, maxTries: 3, retryBaseMs: 250 });
    // Capped: tries at 100 (the command's limit), the first wait at an hour.
    expect(readConfig({ WEBHOOK_MAX_TRIES: "1000", WEBHOOK_RETRY_BASE_MS: "999999999" } as Env).webhooks).toMatchObject({ maxTries: 100, retryBaseMs: 3_600_000 });
  });
});
