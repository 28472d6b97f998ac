/**
 * @module `apply`'s handlers of the webhook delivery events: a delivery queued, each try's outcome, a retry asked
 * for. They change the deliveries alone, never the task's status or `updated_at`: delivering what happened is
 * not something happening to the task.
 */
import type { WalEventOf } from "../events/events.js";
import type { WebhookDeliveryRecord } from "../model/records.js";
import { addPendingDelivery, type DagState, removePendingDelivery } from "../model/state.js";

type WebhookEventType = "webhook_deliveries_queued" | "webhook_deliveries_tried" | "webhook_delivery_retried";

function deliveryOf(state: DagState, walSeq: number, id: string): WebhookDeliveryRecord {
  const d = state.webhookDeliveries.get(id);
  if (d === undefined) throw new Error(`WAL event ${walSeq} names unknown webhook delivery ${id}`);
  return d;
}

/** The handlers of the webhook delivery events (apply.ts spreads them into its table). */
export const webhookHandlers: { [K in WebhookEventType]: (s: DagState, e: WalEventOf<K>) => void } = {
  webhook_deliveries_queued(s, e) {
    for (const q of e.payload.deliveries) {
      s.webhookDeliveries.set(q.delivery_id, {
        ...q,
        status: "pending",
        attempts: 0,
        last_status_code: null,
        last_error: null,
        next_attempt_at: e.created_at,
        updated_at: e.created_at,
      });
      addPendingDelivery(s.index, s.webhookDeliveries.get(q.delivery_id)!);
    }
  },
  webhook_deliveries_tried(s, e) {
    for (const t of e.payload.tries) {
      const d = deliveryOf(s, e.wal_seq, t.delivery_id);
      const totals = s.webhookTotals.get(d.webhook_id) ?? { delivered: 0, last_status_code: null };
      totals.last_status_code = t.status_code;
      s.webhookTotals.set(d.webhook_id, totals);
      if (t.status === "delivered") {
        totals.delivered += 1;
        s.webhookDeliveries.delete(d.delivery_id);
        removePendingDelivery(s.index, d);
        continue;
      }
      d.status = t.status;
      d.attempts = t.attempts;
      d.last_status_code = t.status_code;
      d.last_error = t.error;
      d.next_attempt_at = t.next_attempt_at;
      d.updated_at = e.created_at;
      if (t.status !== "pending") removePendingDelivery(s.index, d);
    }
  },
  webhook_delivery_retried(s, e) {
    const d = deliveryOf(s, e.wal_seq, e.payload.delivery_id);
    d.status = "pending";
    d.attempts = 0;
    d.next_attempt_at = e.created_at;
    d.updated_at = e.created_at;
    addPendingDelivery(s.index, d, s.webhookDeliveries);
  },
};
