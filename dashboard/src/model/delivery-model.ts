/**
 * @module The task view's Delivery panel: each webhook subscription's deliveries of this task (the task read
 * model's `webhook_delivery_state`, computed by the core's own `webhookDeliveryState` from the WAL the page holds,
 * so it follows the replay slider), with the subscription's URL when the viewer may read the session's
 * subscriptions. Also when the session's stream should make the task view read its WAL again: a delivery's try
 * is a WAL event but no runtime event, so the task's own stream never reports it, while the session's does.
 */
import type { Webhook } from "../../../src/client/index.js";
import { type DagState, webhookDeliveryState, type WebhookDeliveryState } from "../../../src/core/browser.js";

/** Only the orchestrator reads the session's subscriptions and their deliveries, and retries one (the routes' roles). */
export function canReadWebhooks(role: string): boolean {
  return role === "orchestrator";
}

/** One subscription's line in the Delivery panel. */
export interface DeliveryPanelRow {
  readonly webhookId: string;
  /** The subscription's URL; null when the viewer cannot read the subscriptions, or it is gone. */
  readonly url: string | null;
  /** The subscription's own status (a 410 disables it); null when unknown. */
  readonly subscription: Webhook["status"] | null;
  readonly state: WebhookDeliveryState["state"];
  readonly pending: number;
  readonly delivered: number;
  readonly failed: number;
  /** The last try's HTTP status, or what stands in for it. */
  readonly lastStatus: string;
}

/** The panel's lines for a task's state: one per subscription owed any of its events, in the order first owed. */
export function deliveryPanelRows(state: DagState, webhooks: readonly Webhook[] | null): DeliveryPanelRow[] {
  const byId = new Map((webhooks ?? []).map((w) => [w.webhook_id, w]));
  return webhookDeliveryState(state).map((s) => {
    const webhook = byId.get(s.webhook_id);
    return {
      webhookId: s.webhook_id,
      url: webhook?.url ?? null,
      subscription: webhook?.status ?? null,
      state: s.state,
      pending: s.pending,
      delivered: s.delivered,
      failed: s.failed,
      lastStatus: lastStatusLabel(s.last_status_code),
    };
  });
}

/** `HTTP 500`, or no HTTP status: nothing tried yet, or no answer came back (a timeout, a refused host). */
export function lastStatusLabel(code: number | null): string {
  return code === null ? "no HTTP status" : `HTTP ${code}`;
}

/** The counts of one line: `2 delivered · 0 pending · 1 failed`. */
export function deliveryCounts(row: Pick<DeliveryPanelRow, "pending" | "delivered" | "failed">): string {
  return `${row.delivered} delivered · ${row.pending} pending · ${row.failed} failed`;
}

/** What a session stream event says of a task: its id and the wal_seq its index entry is at. */
export interface TaskNudge {
  readonly taskId: string;
  readonly payload: { readonly task: { readonly wal_seq: number } };
}

/** True when a session event says this task's WAL went past what the view holds (a delivery's try, say). */
export function walMovedOn(event: TaskNudge, taskId: string, heldWalSeq: number): boolean {
  return event.taskId === taskId && event.payload.task.wal_seq > heldWalSeq;
}

/** The status badge colour that fits a delivery state (the text names the state itself). */
export function deliveryBadge(state: WebhookDeliveryState["state"]): string {
  return state === "delivered" ? "completed" : state === "failed" ? "failed" : "queued";
}
