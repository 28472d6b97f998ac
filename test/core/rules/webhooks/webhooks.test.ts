/**
 * @module Webhook deliveries in the core (docs/design.md "Delivery"): which runtime events a commit owes which
 * subscription (deliveriesOwed), the queue, each try's outcome (delivered on 2xx, failed on 410, a final refusal or
 * the last try, else owed again after a growing wait), a retry of a failed one, a subscription's deliveries one at
 * a time in WAL order (pendingDeliveriesOf), the read model's per-subscription state, and that replay and snapshots
 * rebuild all of it. Only the runtime issues these commands.
 */
import { describe, expect, it } from "vitest";
import { deliveriesOwed, deliveryDueAt, type DeliveryFilter, pendingDeliveriesOf, restoreSnapshot, takeSnapshot, taskView, webhookDeliveryState, webhookRetryDelay } from "../../../../src/core/index.js";
import { Harness, observer, orchestrator, step, T0, TASK } from "../../harness.js";
import { consistent, rejectsAs, systemCaller } from "../support.js";

const EPOCH = new Date(0).toISOString();
const ALL: DeliveryFilter = { webhook_id: "wh_all", events: ["task.created", "action.required", "task.completed", "task.failed"], task_id: null, created_at: EPOCH };
const DONE: DeliveryFilter = { webhook_id: "wh_done", events: ["task.completed"], task_id: null, created_at: EPOCH };

/** A two-step task, with what its creation owes `filters` queued as the shell queues it. */
function setup(filters: DeliveryFilter[] = [ALL, DONE]): Harness {
  const h = new Harness();
  h.create([step("a"), step("b")]);
  queue(h, h.wal, filters);
  return h;
}

/** Queues what `events` owe `filters`, as the shell does in the same commit; returns how many. */
function queue(h: Harness, events: Harness["wal"], filters: DeliveryFilter[]): number {
  const owed = deliveriesOwed(events, filters);
  if (owed.length > 0) h.ok({ type: "queue_webhook_deliveries", deliveries: owed }, systemCaller);
  return owed.length;
}

const tries = (h: Harness, list: Record<string, unknown>[], max = 3) => h.ok({ type: "record_webhook_tries", tries: list, max_tries: max, retry_base_ms: 1_000 }, systemCaller);
/** Both steps completed, then the task. */
function finish(h: Harness): void {
  h.complete("a");
  h.complete("b");
  if (h.state.task!.status !== "completed") h.ok({ type: "complete_task" });
}
/** Every pending delivery id, subscription by subscription, each in WAL order. */
/** Each subscription's next delivery (the first of its pending ones) and when it is due. */
const heads = (h: Harness) => [...h.state.index.pendingByWebhook.keys()].map((id) => pendingDeliveriesOf(h.state, id).next().value!).map((delivery) => ({ delivery, due_at: deliveryDueAt(delivery) }));
const pending = (h: Harness) => [...h.state.index.pendingByWebhook.values()].flatMap((set) => [...set]);

describe("deliveriesOwed: which events a commit owes which subscription", () => {
  it("Should owe each runtime event to every subscription whose filter names its type, in WAL order, with one id per event and subscription", () => {
    const h = new Harness();
    h.create([step("a")]);
    const owed = deliveriesOwed(h.wal, [ALL, DONE]);
    expect(owed.map((d) => [d.webhook_id, d.event_type])).toEqual([["wh_all", "task.created"]]);
    expect(owed[0]!.delivery_id).toBe(`dlv_${h.wal[0]!.event_id}_wh_all`);
    expect(owed[0]!.wal_seq).toBe(1);
  });

  it("Should leave out another task's events for a task's own subscription, and events before a subscription was created", () => {
    const h = new Harness();
    h.create([step("a")]);
    expect(deliveriesOwed(h.wal, [{ ...ALL, task_id: "other_task" }])).toEqual([]);
    expect(deliveriesOwed(h.wal, [{ ...ALL, task_id: TASK }])).toHaveLength(1);
    expect(deliveriesOwed(h.wal, [{ ...ALL, created_at: new Date(T0 + 1).toISOString() }])).toEqual([]);
    expect(deliveriesOwed(h.wal, [])).toEqual([]);
  });
});

describe("the queue and the tries", () => {
  it("Should queue a delivery once: the same id queued again writes nothing", () => {
    const h = setup();
    expect(pending(h)).toHaveLength(1);
    const before = h.wal.length;
    h.ok({ type: "queue_webhook_deliveries", deliveries: deliveriesOwed(h.wal.slice(0, 1), [ALL]) }, systemCaller);
    expect(h.wal.length).toBe(before);
    consistent(h);
  });

  it("Should record a 2xx as delivered, take the delivery out of what is owed and out of memory, and count it", () => {
    const h = setup();
    const [id] = pending(h);
    const d = tries(h, [{ delivery_id: id, status_code: 204, error: null }]).events[0]!;
    expect(d.payload).toMatchObject({ tries: [{ delivery_id: id, status: "delivered", attempts: 1, status_code: 204, next_attempt_at: null }] });
    // Delivered, it leaves memory: its subscription's count keeps it.
    expect(h.state.webhookDeliveries.has(id!)).toBe(false);
    expect(h.state.webhookTotals.get("wh_all")).toEqual({ delivered: 1, last_status_code: 204 });
    expect(pending(h)).toEqual([]);
    consistent(h);
  });

  it("Should owe a failed try again after a wait that grows with each try, and fail it on the last of max_tries", () => {
    const h = setup();
    const [id] = pending(h);
    tries(h, [{ delivery_id: id, status_code: 500, error: "HTTP 500" }]);
    let d = h.state.webhookDeliveries.get(id!)!;
    expect([d.status, d.attempts, d.next_attempt_at]).toEqual(["pending", 1, new Date(T0 + 1_000).toISOString()]);
    tries(h, [{ delivery_id: id, status_code: null, error: "timed out" }]);
    d = h.state.webhookDeliveries.get(id!)!;
    expect([d.status, d.attempts, d.next_attempt_at, d.last_status_code]).toEqual(["pending", 2, new Date(T0 + 4_000).toISOString(), null]);
    tries(h, [{ delivery_id: id, status_code: 503, error: "HTTP 503" }]);
    d = h.state.webhookDeliveries.get(id!)!;
    expect([d.status, d.attempts, d.last_status_code, d.last_error, d.next_attempt_at]).toEqual(["failed", 3, 503, "HTTP 503", null]);
    expect(webhookRetryDelay(1, 1_000)).toBe(1_000);
    expect(webhookRetryDelay(20, 1_000)).toBe(60 * 60_000);
    consistent(h);
  });

  it("Should fail at once on 410 Gone and on a final refusal, whatever tries are left", () => {
    const h = setup();
    finish(h);
    queue(h, h.wal.slice(1), [ALL, DONE]);
    const ids = pending(h);
    expect(ids.length).toBeGreaterThanOrEqual(3);
    tries(h, [{ delivery_id: ids[0], status_code: 410, error: "HTTP 410" }, { delivery_id: ids[1], status_code: null, error: "subscription removed", final: true }], 8);
    expect(h.state.webhookDeliveries.get(ids[0]!)!.status).toBe("failed");
    expect(h.state.webhookDeliveries.get(ids[1]!)!.status).toBe("failed");
    consistent(h);
  });

  it("Should ignore an outcome of a delivery no longer pending, and of one it never queued", () => {
    const h = setup();
    const [id] = pending(h);
    tries(h, [{ delivery_id: id, status_code: 200, error: null }]);
    const before = h.wal.length;
    h.ok({ type: "record_webhook_tries", tries: [{ delivery_id: id, status_code: 500, error: "late" }, { delivery_id: "dlv_nope", status_code: 200, error: null }], max_tries: 3, retry_base_ms: 1_000 }, systemCaller);
    expect(h.wal.length).toBe(before);
    expect(h.state.webhookTotals.get("wh_all")!.delivered).toBe(1);
  });

  it("Should owe a failed delivery again on retry, its tries counted afresh; not_found and invalid_transition otherwise", () => {
    const h = setup();
    const [id] = pending(h);
    tries(h, [{ delivery_id: id, status_code: 410, error: "gone" }]);
    h.ok({ type: "retry_webhook_delivery", delivery_id: id }, systemCaller);
    const d = h.state.webhookDeliveries.get(id!)!;
    expect([d.status, d.attempts, d.next_attempt_at]).toEqual(["pending", 0, new Date(T0).toISOString()]);
    rejectsAs(h, { type: "retry_webhook_delivery", delivery_id: id }, systemCaller, "invalid_transition");
    rejectsAs(h, { type: "retry_webhook_delivery", delivery_id: "dlv_nope" }, systemCaller, "not_found");
    consistent(h);
  });

  it("Should refuse every webhook command from every token role with tool_not_available", () => {
    const h = setup();
    const [id] = pending(h);
    for (const actor of [orchestrator, observer]) {
      rejectsAs(h, { type: "queue_webhook_deliveries", deliveries: deliveriesOwed(h.wal.slice(0, 1), [DONE, { ...ALL, webhook_id: "wh_x" }]) }, actor, "tool_not_available");
      rejectsAs(h, { type: "record_webhook_tries", tries: [{ delivery_id: id, status_code: 200, error: null }], max_tries: 3, retry_base_ms: 1_000 }, actor, "tool_not_available");
      rejectsAs(h, { type: "retry_webhook_delivery", delivery_id: id }, actor, "tool_not_available");
    }
  });

  it("Should leave the task's status and updated_at alone: delivering is not something happening to the task", () => {
    const h = setup();
    const task = structuredClone(h.state.task);
    const [id] = pending(h);
    h.now += 5_000;
    tries(h, [{ delivery_id: id, status_code: 200, error: null }]);
    expect(h.state.task).toEqual(task);
  });
});

describe("each subscription's next delivery, and the read model", () => {
  it("Should offer each subscription's oldest pending delivery only, so a receiver sees a task's events in WAL order", () => {
    const h = setup([ALL]);
    finish(h);
    queue(h, h.wal.slice(1), [ALL]);
    const all = pending(h).map((id) => h.state.webhookDeliveries.get(id)!);
    expect(all.map((d) => d.event_type)).toEqual(["task.created", "task.completed"]);
    expect(heads(h).map((x) => x.delivery.delivery_id)).toEqual([all[0]!.delivery_id]);
    tries(h, [{ delivery_id: all[0]!.delivery_id, status_code: 500, error: "x" }]);
    expect(heads(h).map((x) => [x.delivery.delivery_id, x.due_at])).toEqual([[all[0]!.delivery_id, T0 + 1_000]]);
    tries(h, [{ delivery_id: all[0]!.delivery_id, status_code: 200, error: null }]);
    expect(heads(h).map((x) => x.delivery.delivery_id)).toEqual([all[1]!.delivery_id]);
  });

  it("Should show each subscription's state in the task view: failed when any failed, else pending when any is owed, else delivered", () => {
    const h = setup([ALL, DONE]);
    finish(h);
    queue(h, h.wal.slice(1), [ALL, DONE]);
    const doneId = pending(h).find((id) => id.endsWith("_wh_done"))!;
    tries(h, [{ delivery_id: doneId, status_code: 200, error: null }]);
    const first = pending(h)[0]!;
    tries(h, [{ delivery_id: first, status_code: 410, error: "gone" }]);
    expect(webhookDeliveryState(h.state)).toEqual([
      { webhook_id: "wh_all", state: "failed", pending: 1, delivered: 0, failed: 1, last_status_code: 410 },
      { webhook_id: "wh_done", state: "delivered", pending: 0, delivered: 1, failed: 0, last_status_code: 200 },
    ]);
    expect(taskView(h.state).task.webhook_delivery_state).toEqual(webhookDeliveryState(h.state));
  });

  it("Should restore deliveries and their pending order from a snapshot exactly as replay rebuilds them", () => {
    const h = setup([ALL, DONE]);
    finish(h);
    queue(h, h.wal.slice(1), [ALL, DONE]);
    const first = pending(h)[0]!;
    tries(h, [{ delivery_id: first, status_code: 410, error: "gone" }]);
    h.ok({ type: "retry_webhook_delivery", delivery_id: first }, systemCaller);
    const restored = restoreSnapshot(JSON.parse(JSON.stringify(takeSnapshot(h.state))));
    expect(restored).toEqual(h.state);
    expect([...restored.index.pendingByWebhook].map(([id, set]) => [id, [...set]])).toEqual([...h.state.index.pendingByWebhook].map(([id, set]) => [id, [...set]]));
    consistent(h);
  });
});
