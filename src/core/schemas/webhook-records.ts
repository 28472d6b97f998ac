/**
 * @module Webhook deliveries as the task's WAL records them (docs/design.md "Delivery"): one event owed to one
 * subscription, queued in the commit of the event it carries, then each try's outcome, until delivered or failed.
 * What a subscription is (its URL, its secret) is the session's; the WAL names it by id only.
 */
import { z } from "zod";
import { TextSchema, TimestampSchema } from "./record-basics.js";

/** A delivery's id: also its Standard Webhooks `webhook-id`, the same on every try. */
export const DeliveryIdSchema = z.string().min(1).max(200);
/** A subscription's id (a webhook's `wh_…`, or an A2A push config's id). */
export const WebhookIdSchema = z.string().min(1).max(128);

/** One event owed to one subscription, as queued. */
export const QueuedDeliverySchema = z.strictObject({
  delivery_id: DeliveryIdSchema,
  webhook_id: WebhookIdSchema,
  /** The runtime event's id and type, and where it is in the WAL (its WAL event's wal_seq and its place among that event's runtime events). */
  event_id: z.string().min(1).max(200),
  event_type: z.string().min(1).max(64),
  wal_seq: z.number().int().positive(),
  index: z.number().int().min(0),
});

/** What one try of a delivery came to, as the outbox saw it. */
export const DeliveryTrySchema = z.strictObject({
  delivery_id: DeliveryIdSchema,
  /** The receiver's HTTP status; null when none came back (a timeout, a refused host, a network error). */
  status_code: z.number().int().min(100).max(599).nullable(),
  error: TextSchema.nullable(),
  /** No further try can help (the subscription is gone or disabled): failed now, whatever the tries left. */
  final: z.boolean().optional(),
});

/** A delivery's state: pending until a try is answered 2xx (delivered) or the tries run out (failed). */
export const WebhookDeliveryStatusSchema = z.enum(["pending", "delivered", "failed"]);

/** A delivery as the task holds it. */
export const WebhookDeliveryRecordSchema = QueuedDeliverySchema.extend({
  status: WebhookDeliveryStatusSchema,
  attempts: z.number().int().min(0),
  last_status_code: z.number().int().nullable(),
  last_error: TextSchema.nullable(),
  /** When the next try is due; null once delivered or failed. */
  next_attempt_at: TimestampSchema.nullable(),
  updated_at: TimestampSchema,
});
