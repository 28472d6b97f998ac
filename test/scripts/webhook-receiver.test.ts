/** @module The benchmarks' webhook receiver: what it verifies (with the standardwebhooks library), counts and refuses. */
import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it } from "vitest";
import { standardVerifier, WebhookReceiver } from "../../scripts/bench/harness/webhook-receiver.js";

const secret = `whsec_${randomBytes(32).toString("base64")}`;
let receiver: WebhookReceiver | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

/** POSTs one runtime event to `url` as the runtime does: body `{type, timestamp, data}`, signed with `signWith`. */
async function deliver(url: string, webhookId: string, data: Record<string, unknown>, signWith = secret): Promise<number> {
  const now = new Date();
  const body = JSON.stringify({ type: data.type, timestamp: now.toISOString(), data });
  const signature = new Webhook(signWith).sign(webhookId, now, body);
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", "webhook-id": webhookId, "webhook-timestamp": String(Math.floor(now.getTime() / 1000)), "webhook-signature": signature }, body });
  await res.text();
  return res.status;
}

const event = (sequence: number, eventId: string, stepId?: string) => ({ type: "task.attempt.completed", taskId: "t1", sequence, eventId, ...(stepId === undefined ? {} : { stepId }) });

describe("WebhookReceiver", () => {
  it("Should record a verified delivery once by webhook-id, with its event's fields, and count what repeats or comes out of order", async () => {
    receiver = await WebhookReceiver.start();
    receiver.register("g", "a", standardVerifier(secret));
    const url = receiver.url("g", "a");
    const seen: string[] = [];
    receiver.onArrival = (a) => seen.push(a.webhookId);

    expect(await deliver(url, "dlv_1", event(10, "E1", "s1"))).toBe(204);
    expect(await deliver(url, "dlv_1", event(10, "E1", "s1"))).toBe(204); // a retry of the same delivery
    expect(await deliver(url, "dlv_2", event(10, "E1", "s1"))).toBe(204); // the same event under another id
    expect(await deliver(url, "dlv_3", event(5, "E0"))).toBe(204); // an earlier event after a later one

    expect(seen).toEqual(["dlv_1", "dlv_2", "dlv_3"]);
    expect(receiver.arrivals[0]).toMatchObject({ webhookId: "dlv_1", group: "g", path: "/hooks/g/a", type: "task.attempt.completed", eventId: "E1", taskId: "t1", stepId: "s1", sequence: 10 });
    expect(receiver.arrivals[0]!.message.data).toEqual(event(10, "E1", "s1"));
    expect(receiver.countsOf("g")).toEqual({ received: 3, duplicate_webhook_ids: 1, duplicate_events: 1, out_of_order: 1, rejected: 0 });
    // fetch keeps its connection alive between the four POSTs.
    expect(receiver.connectionsAccepted).toBeGreaterThanOrEqual(1);
    expect(receiver.connectionsAccepted).toBeLessThanOrEqual(4);
  });

  it("Should answer 400 to a signature it cannot verify and 404 to a path with no subscription, recording neither", async () => {
    receiver = await WebhookReceiver.start();
    receiver.register("g", "a", standardVerifier(secret));
    expect(await deliver(receiver.url("g", "a"), "dlv_1", event(1, "E1"), `whsec_${randomBytes(32).toString("base64")}`)).toBe(400);
    expect(await deliver(receiver.url("g", "nobody"), "dlv_2", event(2, "E2"))).toBe(404);
    const counts = receiver.countsOf("g");
    expect(counts).toMatchObject({ received: 0, rejected: 2 });
    expect(counts.first_rejection).toMatch(/^400: not verified/);
    expect(receiver.arrivals).toEqual([]);
  });

  it("Should resolve a wait once a group has what it expects, and say it stalled when nothing more comes", async () => {
    receiver = await WebhookReceiver.start();
    receiver.register("g", "a", standardVerifier(secret));
    receiver.register("h", "a", standardVerifier(secret));
    const waiting = receiver.waitFor("g", 2, 5_000);
    await deliver(receiver.url("h", "a"), "dlv_h", event(1, "H1")); // another group's arrival does not count
    await deliver(receiver.url("g", "a"), "dlv_1", event(1, "E1"));
    await deliver(receiver.url("g", "a"), "dlv_2", event(2, "E2"));
    expect(await waiting).toEqual({ received: 2, stalled: false });
    expect(await receiver.waitFor("g", 3, 50)).toEqual({ received: 2, stalled: true });
  });
});
