/**
 * The session view's Failed deliveries: per subscription its failed deliveries, a Retry per row that shows the
 * retry's answer (pending) in place, and what a later read says became of it (failed again, still pending, or
 * delivered), never misled by the session's replica lagging the retry; refusals and read errors shown as text.
 * Against a fake of the three SDK calls holding the session's replica of the deliveries.
 */
import { describe, expect, it } from "vitest";
import { RuntimeApiError } from "../../src/client/errors.js";
import type { Webhook, WebhookDelivery, WebhookDeliveryStatus } from "../../src/client/index.js";
import { type DeliveryApi, FAILED_PAGE, FailedDeliveries, rowFacts, stableOrder } from "../../dashboard/src/model/failed-deliveries.js";

const SID = "sess_1";
const T = (s: number) => new Date(Date.UTC(2026, 11, 6, 12, 0, s)).toISOString();

function webhook(id: string): Webhook {
  return { webhook_id: id, kind: "webhook", url: `http://127.0.0.1:9/${id}`, events: ["task.created"], description: null, task_id: null, status: "active", disabled_reason: null, created_at: T(0) };
}

function delivery(id: string, webhookId: string, status: WebhookDeliveryStatus, at: number, over: Partial<WebhookDelivery> = {}): WebhookDelivery {
  return {
    delivery_id: id, webhook_id: webhookId, event_type: "task.created", event_id: `ev_${id}`, task_id: `task_${id}`, status, attempts: status === "pending" ? 0 : 1,
    last_status_code: status === "failed" ? 500 : status === "delivered" ? 200 : null, last_error: status === "failed" ? "HTTP 500" : null,
    next_attempt_at: null, updated_at: T(at), ...over,
  };
}

/** The session's replica of the deliveries, paged as the route pages it (newest first by when first heard), and the retry route. */
class FakeSession implements DeliveryApi {
  webhooks: Webhook[] = [];
  /** Rows in the order the session first heard of them. */
  readonly rows = new Map<string, WebhookDelivery>();
  /** The retry route's answer, or its refusal. */
  retryAnswer: ((id: string) => WebhookDelivery) | RuntimeApiError = (id) => ({ ...this.rows.get(id)!, status: "pending", attempts: 0, updated_at: T(30), next_attempt_at: T(30) });
  listError: RuntimeApiError | null = null;
  gone = new Set<string>();
  readonly calls: string[] = [];

  put(d: WebhookDelivery): void {
    this.rows.set(d.delivery_id, d);
  }

  async listWebhooks() {
    this.calls.push("list");
    if (this.listError !== null) throw this.listError;
    return { webhooks: this.webhooks };
  }

  async listWebhookDeliveries(_sid: string, webhookId: string, query: { status?: WebhookDeliveryStatus; limit?: number }) {
    this.calls.push(`${webhookId}:${query.status}`);
    if (this.gone.has(webhookId)) throw new RuntimeApiError({ code: "not_found", status: 404, message: `no webhook ${webhookId}` });
    const all = [...this.rows.values()].filter((d) => d.webhook_id === webhookId && (query.status === undefined || d.status === query.status)).reverse();
    const limit = query.limit ?? 50;
    return { deliveries: all.slice(0, limit), next_cursor: all.length > limit ? "more" : null };
  }

  async retryWebhookDelivery(_sid: string, _webhookId: string, deliveryId: string) {
    this.calls.push(`retry:${deliveryId}`);
    if (this.retryAnswer instanceof RuntimeApiError) throw this.retryAnswer;
    return { delivery: this.retryAnswer(deliveryId) };
  }
}

const view = (m: FailedDeliveries) => m.groups().map((g) => [g.webhook.webhook_id, g.rows.map((r) => `${r.delivery.delivery_id}:${r.phase}${r.error === null ? "" : `!${r.error}`}`)]);

/** Two subscriptions: wh_a with d1 and d2 failed (d3 delivered), wh_b with nothing failed. */
function session(): FakeSession {
  const s = new FakeSession();
  s.webhooks = [webhook("wh_a"), webhook("wh_b")];
  s.put(delivery("d1", "wh_a", "failed", 1));
  s.put(delivery("d2", "wh_a", "failed", 2));
  s.put(delivery("d3", "wh_a", "delivered", 3));
  s.put(delivery("d4", "wh_b", "delivered", 4));
  return s;
}

describe("the Failed deliveries model", () => {
  it("Should list each subscription's failed deliveries, newest first, and none for a subscription with none", async () => {
    const s = session();
    const m = new FailedDeliveries(s, SID);
    await m.read();
    expect(view(m)).toEqual([["wh_a", ["d2:failed", "d1:failed"]], ["wh_b", []]]);
    expect(m.failedCount()).toBe(2);
    expect(m.groups()[0]!.rows[0]!.delivery).toMatchObject({ task_id: "task_d2", event_type: "task.created", attempts: 1, last_status_code: 500, last_error: "HTTP 500" });
    // Only failed deliveries are asked for while no retry waits for its outcome.
    expect(s.calls).toEqual(["list", "wh_a:failed", "wh_b:failed"]);
  });

  it("Should show a retried row pending in place, keep it pending while the replica lags or still owes it, then say delivered", async () => {
    const s = session();
    const m = new FailedDeliveries(s, SID);
    await m.read();
    const retried = m.retry("wh_a", "d1");
    expect(view(m)[0]).toEqual(["wh_a", ["d2:failed", "d1:retrying"]]);
    await retried;
    expect(view(m)[0]).toEqual(["wh_a", ["d2:failed", "d1:pending"]]);
    expect(m.groups()[0]!.rows[1]!.delivery.updated_at).toBe(T(30));

    // The task's push has not reached the session yet: its replica still says failed, from before the retry.
    s.calls.length = 0;
    await m.read();
    expect(view(m)[0]).toEqual(["wh_a", ["d2:failed", "d1:pending"]]);
    // The pending list is read for the subscription whose retry waits, and for it alone.
    expect(s.calls.sort()).toEqual(["list", "wh_a:failed", "wh_a:pending", "wh_b:failed"]);

    // The replica has the retry: pending.
    s.put({ ...s.rows.get("d1")!, status: "pending", attempts: 0, updated_at: T(30) });
    await m.read();
    expect(view(m)[0]).toEqual(["wh_a", ["d2:failed", "d1:pending"]]);

    // Delivered: in neither the failed nor the pending list, both read whole.
    s.put({ ...s.rows.get("d1")!, status: "delivered", attempts: 1, last_status_code: 200, updated_at: T(31) });
    await m.read();
    expect(view(m)[0]).toEqual(["wh_a", ["d2:failed", "d1:delivered"]]);
    expect(m.failedCount()).toBe(1);
    // Its tries since the retry were not read: a 2xx, how many unknown.
    expect(m.groups()[0]!.rows.map(rowFacts)).toEqual([
      { attempts: "1", lastAnswer: "HTTP 500", lastError: "HTTP 500" },
      { attempts: "—", lastAnswer: "HTTP 2xx", lastError: null },
    ]);
    // Nothing waits any more: the pending list is not read again.
    s.calls.length = 0;
    await m.read();
    expect(s.calls).toEqual(["list", "wh_a:failed", "wh_b:failed"]);
    expect(view(m)[0]).toEqual(["wh_a", ["d2:failed", "d1:delivered"]]);
  });

  it("Should show a retried delivery that failed again as failed, with Retry offered again", async () => {
    const s = session();
    const m = new FailedDeliveries(s, SID);
    await m.read();
    await m.retry("wh_a", "d2");
    s.put({ ...s.rows.get("d2")!, status: "failed", attempts: 1, last_status_code: 503, updated_at: T(32) });
    await m.read();
    expect(view(m)[0]).toEqual(["wh_a", ["d2:failed", "d1:failed"]]);
    expect(m.groups()[0]!.rows[0]!.delivery.last_status_code).toBe(503);
  });

  it("Should not call a retried delivery delivered when a list was not read whole", async () => {
    const s = session();
    for (let i = 0; i < FAILED_PAGE; i++) s.put(delivery(`x${i}`, "wh_a", "failed", 5));
    const m = new FailedDeliveries(s, SID);
    await m.read();
    expect(m.groups()[0]!.more).toBe(true);
    expect(m.groups()[0]!.rows).toHaveLength(FAILED_PAGE);
    await m.retry("wh_a", "x0");
    s.put({ ...s.rows.get("x0")!, status: "delivered", updated_at: T(31) });
    await m.read();
    expect(m.groups()[0]!.rows.find((r) => r.delivery.delivery_id === "x0")!.phase).toBe("pending");
  });

  it("Should show why a Retry was refused on its row, and drop the note once the row is no longer failed", async () => {
    const s = session();
    const m = new FailedDeliveries(s, SID);
    await m.read();
    s.retryAnswer = new RuntimeApiError({ code: "invalid_transition", status: 409, message: "delivery d1 is pending: only a failed delivery is retried" });
    await m.retry("wh_a", "d1");
    expect(view(m)[0]).toEqual(["wh_a", ["d2:failed", "d1:failed!delivery d1 is pending: only a failed delivery is retried"]]);
    s.put({ ...s.rows.get("d1")!, status: "pending", updated_at: T(40) });
    await m.read();
    expect(view(m)[0]).toEqual(["wh_a", ["d2:failed"]]);
  });

  it("Should show a refused read (a token without the orchestrator role: permission_denied) as an error, keeping what it had", async () => {
    const s = session();
    const m = new FailedDeliveries(s, SID);
    await m.read();
    s.listError = new RuntimeApiError({ code: "permission_denied", status: 403, message: "the observer role may not list_webhooks" });
    await m.read();
    expect(m.error).toBe("the observer role may not list_webhooks");
    expect(view(m)[0]).toEqual(["wh_a", ["d2:failed", "d1:failed"]]);
    s.listError = null;
    await m.read();
    expect(m.error).toBeNull();
  });

  it("Should put a new failure first and leave the rows shown where they were", async () => {
    const s = session();
    const m = new FailedDeliveries(s, SID);
    await m.read();
    s.put(delivery("d5", "wh_a", "failed", 5));
    s.put(delivery("d6", "wh_b", "failed", 6));
    await m.read();
    expect(view(m)).toEqual([["wh_a", ["d5:failed", "d2:failed", "d1:failed"]], ["wh_b", ["d6:failed"]]]);
  });

  it("Should drop a subscription deleted meanwhile, with its rows and retries", async () => {
    const s = session();
    const m = new FailedDeliveries(s, SID);
    await m.read();
    await m.retry("wh_a", "d1");
    s.gone.add("wh_a");
    await m.read();
    expect(view(m)).toEqual([["wh_b", []]]);
    expect(m.error).toBeNull();
    s.gone.clear();
    s.webhooks = [webhook("wh_b")];
    await m.read();
    expect(view(m)).toEqual([["wh_b", []]]);
  });

  it("Should tell its listeners of every change", async () => {
    const s = session();
    const m = new FailedDeliveries(s, SID);
    let changes = 0;
    const off = m.onChange(() => (changes += 1));
    await m.read();
    await m.retry("wh_a", "d1");
    expect(changes).toBe(3);
    off();
    await m.read();
    expect(changes).toBe(3);
  });
});

describe("stableOrder", () => {
  it("Should keep what was shown in place, put new ids first, and drop what is neither failed nor kept", () => {
    expect(stableOrder([], ["b", "a"], new Set())).toEqual(["b", "a"]);
    expect(stableOrder(["b", "a"], ["c", "b", "a"], new Set())).toEqual(["c", "b", "a"]);
    expect(stableOrder(["c", "b", "a"], ["c", "a"], new Set(["b"]))).toEqual(["c", "b", "a"]);
    expect(stableOrder(["c", "b", "a"], ["c", "a"], new Set())).toEqual(["c", "a"]);
  });
});
