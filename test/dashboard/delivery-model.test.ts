/**
 * The task view's Delivery panel: each subscription's deliveries of the task as the read model's
 * webhook_delivery_state says (computed from the WAL the page holds, so an earlier wal_seq shows the earlier
 * state), the subscription's URL when the viewer may list them, and when a session event should make the view
 * read the task's WAL again.
 */
import { describe, expect, it } from "vitest";
import type { RuntimeClient, Webhook } from "../../src/client/index.js";
import { deliveriesOwed, type DeliveryFilter, replay, taskView, type WalEvent } from "../../src/core/index.js";
import { canReadWebhooks, deliveryBadge, deliveryCounts, deliveryPanelRows, lastStatusLabel, walMovedOn } from "../../dashboard/src/model/delivery-model.js";
import { TaskModel } from "../../dashboard/src/model/task-model.js";
import { Harness, SESSION, step, TASK } from "../core/harness.js";
import { systemCaller } from "../core/rules/support.js";

const EPOCH = new Date(0).toISOString();
const ALL: DeliveryFilter = { webhook_id: "wh_all", events: ["task.created", "task.completed"], task_id: null, created_at: EPOCH };
const OPS: DeliveryFilter = { webhook_id: "wh_ops", events: ["task.created"], task_id: null, created_at: EPOCH };

function webhook(id: string, over: Partial<Webhook> = {}): Webhook {
  return { webhook_id: id, kind: "webhook", url: `https://hooks.example/${id}`, events: ["task.created"], description: null, task_id: null, status: "active", disabled_reason: null, created_at: EPOCH, ...over };
}

/** A task whose creation is owed to two subscriptions: wh_all's receiver answers 204, wh_ops's 500 on its only try. */
function delivered(): { h: Harness; queuedAt: number } {
  const h = new Harness();
  h.create([step("a")]);
  h.ok({ type: "queue_webhook_deliveries", deliveries: deliveriesOwed(h.wal, [ALL, OPS]) }, systemCaller);
  const queuedAt = h.state.last_wal_seq;
  const [toAll, toOps] = [...h.state.index.pendingByWebhook.values()].flatMap((set) => [...set]);
  h.ok({ type: "record_webhook_tries", tries: [{ delivery_id: toAll, status_code: 204, error: null }, { delivery_id: toOps, status_code: 500, error: "HTTP 500" }], max_tries: 1, retry_base_ms: 1_000 }, systemCaller);
  return { h, queuedAt };
}

describe("the Delivery panel's model", () => {
  it("Should list each subscription's state, counts and last status as the task read model's webhook_delivery_state does", () => {
    const { h } = delivered();
    const rows = deliveryPanelRows(h.state, null);
    // In the core's order: subscriptions with deliveries held (failed, pending) first, then the delivered ones.
    expect(rows.map((r) => [r.webhookId, r.state, r.pending, r.delivered, r.failed, r.lastStatus])).toEqual([
      ["wh_ops", "failed", 0, 0, 1, "HTTP 500"],
      ["wh_all", "delivered", 0, 1, 0, "HTTP 204"],
    ]);
    const readModel = taskView(h.state).task.webhook_delivery_state;
    expect(rows.map((r) => ({ webhook_id: r.webhookId, state: r.state, pending: r.pending, delivered: r.delivered, failed: r.failed }))).toEqual(
      readModel.map(({ webhook_id, state, pending, delivered, failed }) => ({ webhook_id, state, pending, delivered, failed })),
    );
    // Without the subscriptions (a token that cannot list them) the ids alone.
    expect(rows.map((r) => [r.url, r.subscription])).toEqual([[null, null], [null, null]]);
  });

  it("Should name each subscription's URL and status when the subscriptions were read", () => {
    const { h } = delivered();
    const rows = deliveryPanelRows(h.state, [webhook("wh_ops", { status: "disabled", disabled_reason: "410 Gone" }), webhook("wh_all")]);
    expect(rows.map((r) => [r.webhookId, r.url, r.subscription])).toEqual([
      ["wh_ops", "https://hooks.example/wh_ops", "disabled"],
      ["wh_all", "https://hooks.example/wh_all", "active"],
    ]);
    // A subscription deleted since: its deliveries stay in the WAL, its URL is unknown.
    expect(deliveryPanelRows(h.state, [webhook("wh_all")]).find((r) => r.webhookId === "wh_ops")!.url).toBeNull();
  });

  it("Should show the state at an earlier wal_seq (the replay slider): pending before the tries, nothing before the queue", () => {
    const { h, queuedAt } = delivered();
    const before = replay(h.wal.filter((e) => e.wal_seq <= queuedAt));
    expect(deliveryPanelRows(before, null).map((r) => [r.webhookId, r.state, r.pending, r.lastStatus])).toEqual([
      ["wh_all", "pending", 1, "no HTTP status"],
      ["wh_ops", "pending", 1, "no HTTP status"],
    ]);
    expect(deliveryPanelRows(replay(h.wal.filter((e) => e.wal_seq < queuedAt)), null)).toEqual([]);
  });

  it("Should show a failed delivery retried as pending again", () => {
    const { h } = delivered();
    const failed = [...h.state.webhookDeliveries.values()].find((d) => d.status === "failed")!;
    h.ok({ type: "retry_webhook_delivery", delivery_id: failed.delivery_id }, systemCaller);
    expect(deliveryPanelRows(h.state, null).find((r) => r.webhookId === "wh_ops")).toMatchObject({ state: "pending", pending: 1, failed: 0 });
  });

  it("Should say the counts and the last status in words", () => {
    expect(deliveryCounts({ delivered: 2, pending: 0, failed: 1 })).toBe("2 delivered · 0 pending · 1 failed");
    expect(lastStatusLabel(410)).toBe("HTTP 410");
    expect(lastStatusLabel(null)).toBe("no HTTP status");
    expect([deliveryBadge("delivered"), deliveryBadge("pending"), deliveryBadge("failed")]).toEqual(["completed", "queued", "failed"]);
  });

  it("Should let only the orchestrator read the subscriptions (the webhook routes' role)", () => {
    expect(canReadWebhooks("orchestrator")).toBe(true);
    for (const role of ["observer", "approver", "worker", "admin"]) expect(canReadWebhooks(role), role).toBe(false);
  });

  it("Should read the task's WAL again when a session event says its WAL went past what the view holds", () => {
    const event = (taskId: string, walSeq: number) => ({ taskId, payload: { task: { wal_seq: walSeq } } });
    expect(walMovedOn(event("t1", 9), "t1", 8)).toBe(true);
    expect(walMovedOn(event("t1", 8), "t1", 8)).toBe(false);
    expect(walMovedOn(event("t2", 9), "t1", 8)).toBe(false);
  });

  it("Should read the WAL again when the session's stream says the task moved on, so tries the task's own stream never reports are drawn", async () => {
    const { h, queuedAt } = delivered();
    let served = queuedAt;
    const reads: number[] = [];
    const sessionEvents = (walSeqs: [string, number][]) => walSeqs.map(([taskId, walSeq]) => ({ type: "snapshot.updated", taskId, payload: { task: { wal_seq: walSeq } } }));
    let events: ReturnType<typeof sessionEvents> = [];
    const client = {
      async walExport(_task: unknown, query: { after_seq?: number }) {
        reads.push(query.after_seq ?? 0);
        const list: WalEvent[] = h.wal.slice(query.after_seq ?? 0, served);
        return { events: list, last_wal_seq: list.at(-1)?.wal_seq ?? query.after_seq ?? 0 };
      },
      subscribeSession: () => (async function* () {
        yield* events;
      })(),
    } as unknown as RuntimeClient;
    const model = new TaskModel(client, SESSION, TASK);
    await model.catchUp();
    expect(deliveryPanelRows(model.state, null).map((r) => r.state)).toEqual(["pending", "pending"]);

    // Another task's event, and one at the wal_seq already held: no read.
    reads.length = 0;
    events = sessionEvents([["other_task", 99], [TASK, queuedAt]]);
    await model.followSession(new AbortController().signal);
    expect(reads).toEqual([]);

    // The tries were committed: the session's event says so, and the panel shows them.
    served = h.wal.length;
    events = sessionEvents([[TASK, served]]);
    await model.followSession(new AbortController().signal);
    await model.catchUp();
    expect(reads[0]).toBe(queuedAt);
    expect(deliveryPanelRows(model.state, null).map((r) => [r.webhookId, r.state])).toEqual([["wh_ops", "failed"], ["wh_all", "delivered"]]);
  });
});
