/**
 * The SDK's webhook calls against the Worker (create with its secret once, list, get, the deliveries page, a
 * retry's 404, delete; a create retried with its Idempotency-Key answered as the first), and the receiver's
 * verifier (agent-task-runtime/client/webhooks): it accepts a message the `standardwebhooks` library signed, in
 * fetch Headers or Node's plain record, and one our sender POSTed to a loopback receiver, and throws for a wrong
 * secret, a changed body, a stale timestamp or a body that is no runtime message.
 */
import { SELF } from "cloudflare:test";
import { Webhook } from "standardwebhooks";
import { describe, expect, inject, it } from "vitest";
import { sendWebhook } from "../../durable-objects/peers/webhook-sender.js";
import { type FetchLike, RuntimeClient } from "../../src/client/index.js";
import { verifyWebhook, WebhookVerificationError } from "../../src/client/webhook-verify.js";
import { ADMIN } from "../support/helpers.js";
import { BASE, rejection, uniqueId } from "../support/support.js";
import type { ReceivedRequest } from "../support/webhook-receiver.js";

const selfFetch: FetchLike = SELF.fetch.bind(SELF);
const client = (token: string) => new RuntimeClient({ baseUrl: BASE, token, fetch: selfFetch });
const HOOK = "http://127.0.0.1:9/sdk";

describe("RuntimeClient: webhooks", () => {
  it("Should create (the secret once), list, read, page and delete a subscription", async () => {
    const admin = client(ADMIN);
    const s = await admin.createSession();
    const orch = admin.withToken(s.orchestrator.token);
    const sid = s.session_id;
    const created = await orch.createWebhook(sid, { url: HOOK, events: ["task.completed", "task.failed"], description: "ops" }, { idempotencyKey: "sdk-hook" });
    expect(created.secret).toMatch(/^whsec_/);
    expect(await orch.createWebhook(sid, { url: HOOK, events: ["task.completed", "task.failed"], description: "ops" }, { idempotencyKey: "sdk-hook" })).toEqual(created);
    expect(await orch.listWebhooks(sid)).toEqual({ webhooks: [created.webhook] });
    expect(await orch.getWebhook(sid, created.webhook_id)).toEqual(created.webhook);
    expect(await orch.listWebhookDeliveries(sid, created.webhook_id, { status: "failed", limit: 10 })).toEqual({ deliveries: [], next_cursor: null });
    const retry = await rejection(orch.retryWebhookDelivery(sid, created.webhook_id, "dlv_none"));
    expect([retry.status, retry.code]).toEqual([404, "not_found"]);
    const refused = await rejection(admin.withToken(s.observer.token).listWebhooks(sid));
    expect([refused.status, refused.code]).toEqual([403, "tool_not_available"]);
    expect(await orch.deleteWebhook(sid, created.webhook_id)).toEqual({ webhook_id: created.webhook_id });
    const gone = await rejection(orch.getWebhook(sid, created.webhook_id));
    expect([gone.status, gone.code]).toEqual([404, "not_found"]);
  });
});

describe("verifyWebhook", () => {
  const secret = `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))}`;
  const event = { type: "task.completed", eventId: "evt_1", taskId: "t-1", payload: { summary: "done ✓" } };

  /** A message as the library signs it: its body and its three headers. */
  function signed(body: string, at = new Date(), key = secret): { body: string; headers: Record<string, string> } {
    const id = `msg_${uniqueId()}`;
    return { body, headers: { "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": new Webhook(key).sign(id, at, body) } };
  }

  it("Should answer {type, timestamp, data} of a message the standardwebhooks library signed, from Headers or a plain record, text or bytes", () => {
    const message = { type: "task.completed", timestamp: new Date().toISOString(), data: event };
    const { body, headers } = signed(JSON.stringify(message));
    expect(verifyWebhook(secret, body, headers)).toEqual(message);
    expect(verifyWebhook(secret, body, new Headers(headers))).toEqual(message);
    expect(verifyWebhook(secret, new TextEncoder().encode(body), { ...headers, "Webhook-Id": undefined })).toEqual(message);
  });

  it("Should throw for a wrong secret, a changed body, a missing header, a stale timestamp, or a body that is no runtime message", () => {
    const message = JSON.stringify({ type: "task.completed", timestamp: new Date().toISOString(), data: event });
    const { body, headers } = signed(message);
    const otherSecret = `whsec_${btoa("another key of thirty-two bytes!")}`;
    expect(() => verifyWebhook(otherSecret, body, headers)).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook(secret, body.replace("t-1", "t-2"), headers)).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook(secret, body, { ...headers, "webhook-signature": undefined })).toThrow(WebhookVerificationError);
    const stale = signed(message, new Date(Date.now() - 10 * 60_000));
    expect(() => verifyWebhook(secret, stale.body, stale.headers)).toThrow(WebhookVerificationError);
    for (const notOurs of ['{"hello":"world"}', "[1,2]"]) {
      const other = signed(notOurs);
      expect(() => verifyWebhook(secret, other.body, other.headers), notOurs).toThrow(WebhookVerificationError);
    }
  });

  it("Should verify what the runtime's sender POSTed to a receiver, with the secret a create answered", async () => {
    const admin = client(ADMIN);
    const s = await admin.createSession();
    const id = uniqueId("sdk-received");
    const base = inject("webhookReceiverBase");
    const created = await admin.withToken(s.orchestrator.token).createWebhook(s.session_id, { url: `${base}/${id}/ok`, events: ["task.completed"] });
    const timestamp = new Date();
    const target = { webhook_id: created.webhook_id, kind: "webhook" as const, url: created.webhook.url, events: created.webhook.events, task_id: null, created_at: created.webhook.created_at, secret: created.secret, token: null, authorization: null };
    const outcome = await sendWebhook({ allowlist: ["loopback"], timeoutMs: 5_000, maxResponseBytes: 1_024 }, target, { delivery_id: "dlv_sdk_1", type: "task.completed", timestamp, data: event });
    expect(outcome).toEqual({ status: 200, error: null });
    const [request] = (await (await fetch(`${base}/_received/${id}`)).json()) as ReceivedRequest[];
    expect(verifyWebhook(created.secret, request!.body, request!.headers)).toEqual({ type: "task.completed", timestamp: timestamp.toISOString(), data: event });
  });
});
