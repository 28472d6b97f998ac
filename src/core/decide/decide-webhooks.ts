/**
 * @module Webhook deliveries (queue_webhook_deliveries / record_webhook_tries / retry_webhook_delivery, all the
 * runtime's own): which events are owed to which subscription is fixed in the commit of the events themselves;
 * each try's outcome is decided here — delivered on a 2xx, failed on a 410 Gone, a final refusal or the last of
 * `max_tries`, else owed again after a backoff — so the outbox only sends and reports.
 */
import { runtimeError } from "../model/errors.js";
import type { CommandOf } from "../model/commands.js";
import type { DagState } from "../model/state.js";
import { type DecideContext, type Decision, Emitter, isoTimestamp, systemActor } from "./context.js";
import { accept, acceptNothing, refuse } from "./decision.js";

/** The wait before a delivery's second try, multiplied by WEBHOOK_BACKOFF_FACTOR for each try after, up to WEBHOOK_BACKOFF_MAX_MS. */
export const WEBHOOK_BACKOFF_FACTOR = 4;
export const WEBHOOK_BACKOFF_MAX_MS = 60 * 60_000;

/** How long after its `attempts`-th failed try a delivery is tried again. Pure. */
export function webhookRetryDelay(attempts: number, baseMs: number): number {
  return Math.min(baseMs * WEBHOOK_BACKOFF_FACTOR ** Math.max(0, attempts - 1), WEBHOOK_BACKOFF_MAX_MS);
}

/** Events of a commit owed to subscriptions: queued once each (a delivery id already known is left alone). */
export function decideQueueWebhookDeliveries(state: DagState, cmd: CommandOf<"queue_webhook_deliveries">, ctx: DecideContext): Decision {
  const task = state.task!;
  const fresh = cmd.deliveries.filter((d, i) => !state.webhookDeliveries.has(d.delivery_id) && cmd.deliveries.findIndex((o) => o.delivery_id === d.delivery_id) === i);
  const ahead = fresh.find((d) => d.wal_seq > state.last_wal_seq);
  if (ahead !== undefined) return refuse(runtimeError("validation_error", `delivery ${ahead.delivery_id} names wal_seq ${ahead.wal_seq}, past the WAL's ${state.last_wal_seq}`));
  if (fresh.length === 0) return acceptNothing();
  const em = new Emitter(state, ctx, systemActor(task.session_id));
  em.emit("webhook_deliveries_queued", null, { deliveries: fresh });
  return accept(em);
}

/** What tries came to: each pending delivery tried once more; an outcome of a delivery no longer pending (or held) changes nothing. */
export function decideRecordWebhookTries(state: DagState, cmd: CommandOf<"record_webhook_tries">, ctx: DecideContext): Decision {
  const task = state.task!;
  const seen = new Set<string>();
  const tries = [];
  for (const t of cmd.tries) {
    const d = state.webhookDeliveries.get(t.delivery_id);
    if (d === undefined || d.status !== "pending" || seen.has(t.delivery_id)) continue;
    seen.add(t.delivery_id);
    const attempts = d.attempts + 1;
    const ok = t.status_code !== null && t.status_code >= 200 && t.status_code < 300;
    const failed = !ok && (t.final === true || t.status_code === 410 || attempts >= cmd.max_tries);
    const status = ok ? "delivered" : failed ? "failed" : "pending";
    const next = status === "pending" ? isoTimestamp(ctx.now + webhookRetryDelay(attempts, cmd.retry_base_ms)) : null;
    tries.push({ delivery_id: d.delivery_id, webhook_id: d.webhook_id, event_id: d.event_id, event_type: d.event_type, status, attempts, status_code: t.status_code, error: ok ? null : (t.error ?? null), next_attempt_at: next } as const);
  }
  if (tries.length === 0) return acceptNothing();
  const em = new Emitter(state, ctx, systemActor(task.session_id));
  em.emit("webhook_deliveries_tried", null, { tries });
  return accept(em);
}

/** A failed delivery is owed again from now, its tries counted afresh. */
export function decideRetryWebhookDelivery(state: DagState, cmd: CommandOf<"retry_webhook_delivery">, ctx: DecideContext): Decision {
  const d = state.webhookDeliveries.get(cmd.delivery_id);
  // A delivered delivery is no longer held (its subscription's count is): there is nothing to retry either way.
  if (d === undefined) return refuse(runtimeError("not_found", `the task has no webhook delivery ${cmd.delivery_id} that could be retried`, { delivery_id: cmd.delivery_id }));
  if (d.status !== "failed") return refuse(runtimeError("invalid_transition", `delivery ${cmd.delivery_id} is ${d.status}: only a failed delivery is retried`, { delivery_id: cmd.delivery_id, status: d.status }));
  const em = new Emitter(state, ctx, systemActor(state.task!.session_id));
  em.emit("webhook_delivery_retried", null, { delivery_id: d.delivery_id, webhook_id: d.webhook_id, event_id: d.event_id, event_type: d.event_type });
  return accept(em);
}
