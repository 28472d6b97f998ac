/**
 * The webhook sender (durable-objects/peers/webhook-sender.ts) against a real receiver on loopback
 * (test/support/webhook-receiver.ts, started in Node by the worker project's global setup): a message the
 * `standardwebhooks` library itself verifies, a redirect answered and never followed, a slow receiver cut at the
 * timeout, an endless answer cut at the response cap, and hosts the outbound rules refuse never called.
 */
import { Webhook } from "standardwebhooks";
import { describe, expect, inject, it } from "vitest";
import { postOutbound, sendWebhook, WEBHOOK_USER_AGENT, type WebhookLimits } from "../../durable-objects/peers/webhook-sender.js";
import type { DeliveryTarget } from "../../durable-objects/session/session-rpc.js";
import { HUGE_BYTES, type ReceivedRequest } from "../support/webhook-receiver.js";
import { uniqueId } from "../support/support.js";

const base = inject("webhookReceiverBase");
const LIMITS: WebhookLimits = { allowlist: ["loopback"], timeoutMs: 5_000, maxResponseBytes: 65_536, maxTries: 8, retryBaseMs: 100 };
const SECRET = `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))}`;

function target(url: string, over: Partial<DeliveryTarget> = {}): DeliveryTarget {
  return { webhook_id: "wh_test", kind: "webhook", url, events: ["task.created"], task_id: null, created_at: new Date().toISOString(), secret: SECRET, token: null, authorization: null, ...over };
}

async function received(id: string): Promise<ReceivedRequest[]> {
  return (await (await fetch(`${base}/_received/${id}`)).json()) as ReceivedRequest[];
}

/** Reads what `id` received until `done` holds (the receiver notes a client's leaving when its socket closes). */
async function receivedUntil(id: string, done: (r: ReceivedRequest[]) => boolean): Promise<ReceivedRequest[]> {
  for (let i = 0; i < 200; i++) {
    const seen = await received(id);
    if (done(seen)) return seen;
    await new Promise((r) => setTimeout(r, 25));
  }
  return received(id);
}

const message = (deliveryId: string) => ({ delivery_id: deliveryId, type: "task.completed", timestamp: new Date(), data: { type: "task.completed", taskId: "t-1", payload: { n: 1, text: "é ✓" } } });

describe("sendWebhook", () => {
  it("Should send a Standard Webhooks message that the standardwebhooks library verifies with the secret", async () => {
    const id = uniqueId("signed");
    const sent = message(`dlv_${id}`);
    const outcome = await sendWebhook(LIMITS, target(`${base}/${id}/ok`), sent);
    expect(outcome).toEqual({ status: 200, error: null });
    const [request] = await received(id);
    expect(request!.headers).toMatchObject({ "content-type": "application/json", "user-agent": WEBHOOK_USER_AGENT, "webhook-id": sent.delivery_id, "webhook-timestamp": String(Math.floor(sent.timestamp.getTime() / 1000)) });
    const verified = new Webhook(SECRET).verify(request!.body, request!.headers);
    expect(verified).toEqual({ type: "task.completed", timestamp: sent.timestamp.toISOString(), data: sent.data });
    // Another secret, or a body changed on the way, is refused by the library.
    expect(() => new Webhook(`whsec_${btoa("another secret of 32 bytes......")}`).verify(request!.body, request!.headers)).toThrow();
    expect(() => new Webhook(SECRET).verify(request!.body.replace("t-1", "t-2"), request!.headers)).toThrow();
  });

  it("Should sign every try of a delivery with the same webhook-id", async () => {
    const id = uniqueId("retried");
    for (let i = 0; i < 2; i++) await sendWebhook(LIMITS, target(`${base}/${id}/status-500`), { ...message("dlv_same"), timestamp: new Date(Date.now() + i * 1_000) });
    const tries = await received(id);
    expect(tries.map((r) => r.headers["webhook-id"])).toEqual(["dlv_same", "dlv_same"]);
    for (const r of tries) expect(new Webhook(SECRET).verify(r.body, r.headers)).toMatchObject({ type: "task.completed" });
  });

  it("Should send an A2A push config's token and Authorization, unsigned", async () => {
    const id = uniqueId("push");
    await sendWebhook(LIMITS, target(`${base}/${id}/ok`, { kind: "a2a_push", secret: null, token: "tok-1", authorization: "Bearer push" }), message("dlv_push"));
    const [request] = await received(id);
    expect(request!.headers).toMatchObject({ "x-a2a-notification-token": "tok-1", authorization: "Bearer push", "webhook-id": "dlv_push" });
    expect(request!.headers["webhook-signature"]).toBeUndefined();
  });

  it("Should answer a receiver's status as it is (a 410, a 500)", async () => {
    for (const code of [410, 500]) {
      expect(await sendWebhook(LIMITS, target(`${base}/${uniqueId("status")}/status-${code}`), message("dlv_s"))).toEqual({ status: code, error: null });
    }
  });
});

describe("postOutbound", () => {
  it("Should answer a redirect with its 3xx status and never follow it", async () => {
    const id = uniqueId("redirect");
    expect(await postOutbound(LIMITS, `${base}/${id}/redirect`, { "content-type": "application/json" }, "{}")).toEqual({ status: 302, error: null });
    expect((await received(id)).map((r) => r.path)).toEqual([`/${id}/redirect`]);
  });

  it("Should give up on a receiver slower than the timeout, with no status", async () => {
    const outcome = await postOutbound({ ...LIMITS, timeoutMs: 300 }, `${base}/${uniqueId("slow")}/slow`, {}, "{}");
    expect(outcome.status).toBeNull();
    expect(outcome.error).toContain("did not answer within 300 ms");
  });

  it("Should read an endless answer only up to the cap, cancel the rest and answer its status", async () => {
    const id = uniqueId("huge");
    expect(await postOutbound({ ...LIMITS, maxResponseBytes: 100_000 }, `${base}/${id}/huge`, {}, "{}")).toEqual({ status: 200, error: null });
    const [request] = await receivedUntil(id, (r) => r[0]?.cut != null);
    expect(request!.cut).toBe(true);
    expect(request!.sent).toBeLessThan(HUGE_BYTES);
  });

  it("Should refuse a loopback host the allowlist does not name, and the runtime's own network through *, sending nothing", async () => {
    const id = uniqueId("refused");
    const outcome = await postOutbound({ ...LIMITS, allowlist: [] }, `${base}/${id}/ok`, {}, "{}");
    expect(outcome.status).toBeNull();
    expect(outcome.error).toContain("is not in OUTBOUND_ALLOWLIST");
    for (const url of [`${base}/${id}/ok`, "http://10.0.0.1/hook", "http://[::1]/hook", "http://169.254.169.254/latest/meta-data"]) {
      const wild = await postOutbound({ ...LIMITS, allowlist: ["*"] }, url, {}, "{}");
      expect(wild.status, url).toBeNull();
      expect(wild.error, url).toMatch(/is a (loopback|private|link-local) address: OUTBOUND_ALLOWLIST must name it/);
    }
    expect(await postOutbound(LIMITS, "ftp://example.com/hook", {}, "{}")).toMatchObject({ status: null, error: expect.stringContaining("not an http(s) URL") });
    expect(await received(id)).toEqual([]);
  });

  // workerd logs the refused connection ("Network connection lost") on its own; the call still answers.
  it("Should answer an unreachable host with no status, never throwing", async () => {
    const outcome = await postOutbound(LIMITS, "http://127.0.0.1:9/hook", {}, "{}");
    expect(outcome.status).toBeNull();
    expect(outcome.error).toMatch(/could not be reached|did not answer/);
  });
});
