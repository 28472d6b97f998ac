/**
 * @module The webhook outbox as the WAL defines it: which runtime events of a commit are owed to which
 * subscription (queued in that same commit), which deliveries are due to be tried, and each subscription's
 * delivery state for the task read model. Pure: the shell sends and reports; the subscriptions themselves (URL,
 * secret) are the session's and reach here only as filters.
 */
import { projectEvent } from "../events/runtime-events.js";
import type { WalEvent } from "../events/events.js";
import type { QueuedDelivery, WebhookDeliveryRecord } from "../model/records.js";
import type { DagState } from "../model/state.js";

/** What a subscription takes: the session's subscription as a filter. */
export interface DeliveryFilter {
  readonly webhook_id: string;
  /** Runtime event types it takes. */
  readonly events: readonly string[];
  /** Only this task's events (an A2A push config); null: every task of the session. */
  readonly task_id: string | null;
  /** Events before this moment (ISO) are not its. */
  readonly created_at: string;
}

/** A delivery's id, the same on every try (the Standard Webhooks `webhook-id`): one event, one subscription. */
export function deliveryId(webhookId: string, eventId: string): string {
  return `dlv_${eventId}_${webhookId}`;
}

/** The deliveries a commit's WAL events owe: each runtime event each subscription takes, in WAL order. */
export function deliveriesOwed(events: readonly WalEvent[], filters: readonly DeliveryFilter[]): QueuedDelivery[] {
  if (filters.length === 0 || events.length === 0) return [];
  const since = filters.map((f) => Date.parse(f.created_at));
  const out: QueuedDelivery[] = [];
  for (const e of events) {
    const at = Date.parse(e.created_at);
    const runtime = projectEvent(e);
    for (let index = 0; index < runtime.length; index++) {
      const r = runtime[index]!;
      filters.forEach((f, i) => {
        if (at < since[i]! || (f.task_id !== null && f.task_id !== e.task_id) || !f.events.includes(r.type)) return;
        out.push({ delivery_id: deliveryId(f.webhook_id, r.eventId), webhook_id: f.webhook_id, event_id: r.eventId, event_type: r.type, wal_seq: e.wal_seq, index });
      });
    }
  }
  return out;
}

/**
 * The deliveries owed to `webhookId`, in WAL order: its first is what it is sent next (a subscription's deliveries
 * of one task go one at a time, in the order queued, so its receiver sees the task's events in WAL order).
 */
export function* pendingDeliveriesOf(state: DagState, webhookId: string): Generator<WebhookDeliveryRecord> {
  for (const id of state.index.pendingByWebhook.get(webhookId) ?? []) yield state.webhookDeliveries.get(id)!;
}

/** When a delivery is due (ms since the epoch): its next try's time, or at once. */
export function deliveryDueAt(d: WebhookDeliveryRecord): number {
  return d.next_attempt_at === null ? 0 : Date.parse(d.next_attempt_at);
}

/** One subscription's deliveries of the task (the task read model's `webhook_delivery_state`). */
export interface WebhookDeliveryState {
  readonly webhook_id: string;
  /** failed when any delivery failed, else pending when any is owed, else delivered. */
  readonly state: "pending" | "delivered" | "failed";
  readonly pending: number;
  readonly delivered: number;
  readonly failed: number;
  readonly last_status_code: number | null;
}

/** Each subscription's deliveries of the task: those held (pending, failed), then those with only delivered ones. */
export function webhookDeliveryState(state: DagState): WebhookDeliveryState[] {
  const by = new Map<string, { pending: number; delivered: number; failed: number }>();
  const count = (id: string) => {
    let s = by.get(id);
    if (s === undefined) by.set(id, (s = { pending: 0, delivered: state.webhookTotals.get(id)?.delivered ?? 0, failed: 0 }));
    return s;
  };
  for (const d of state.webhookDeliveries.values()) count(d.webhook_id)[d.status === "failed" ? "failed" : "pending"] += 1;
  for (const id of state.webhookTotals.keys()) count(id);
  return [...by].map(([webhook_id, s]) => ({
    webhook_id,
    state: s.failed > 0 ? "failed" : s.pending > 0 ? "pending" : "delivered",
    pending: s.pending,
    delivered: s.delivered,
    failed: s.failed,
    last_status_code: state.webhookTotals.get(webhook_id)?.last_status_code ?? null,
  }));
}

/** One delivery as a row of the session's delivery list (`task_id` added by the caller). */
export interface DeliveryFact {
  readonly delivery_id: string;
  readonly webhook_id: string;
  readonly event_id: string;
  readonly event_type: string;
  readonly status: "pending" | "delivered" | "failed";
  readonly attempts: number;
  readonly last_status_code: number | null;
  readonly last_error: string | null;
  readonly next_attempt_at: string | null;
  readonly updated_at: string;
}

/** The deliveries these WAL events changed, as they stood after them (one row each, the last change winning). */
export function deliveryFacts(events: readonly WalEvent[]): DeliveryFact[] {
  const rows = new Map<string, DeliveryFact>();
  for (const e of events) {
    if (e.event_type === "webhook_deliveries_queued") {
      for (const q of e.payload.deliveries) {
        rows.set(q.delivery_id, { delivery_id: q.delivery_id, webhook_id: q.webhook_id, event_id: q.event_id, event_type: q.event_type, status: "pending", attempts: 0, last_status_code: null, last_error: null, next_attempt_at: e.created_at, updated_at: e.created_at });
      }
    } else if (e.event_type === "webhook_deliveries_tried") {
      for (const t of e.payload.tries) {
        rows.set(t.delivery_id, { delivery_id: t.delivery_id, webhook_id: t.webhook_id, event_id: t.event_id, event_type: t.event_type, status: t.status, attempts: t.attempts, last_status_code: t.status_code, last_error: t.error, next_attempt_at: t.next_attempt_at, updated_at: e.created_at });
      }
    } else if (e.event_type === "webhook_delivery_retried") {
      const p = e.payload;
      const before = rows.get(p.delivery_id);
      rows.set(p.delivery_id, { delivery_id: p.delivery_id, webhook_id: p.webhook_id, event_id: p.event_id, event_type: p.event_type, status: "pending", attempts: 0, last_status_code: before?.last_status_code ?? null, last_error: before?.last_error ?? null, next_attempt_at: e.created_at, updated_at: e.created_at });
    }
  }
  return [...rows.values()];
}
