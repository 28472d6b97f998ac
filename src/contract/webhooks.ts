/**
 * @module Webhook subscriptions and their deliveries on the wire (docs/api.md "Delivery and notifications"): the body
 * of POST /v1/sessions/{sid}/webhooks (zod, for the route, the catalog and the SDK's input type), the subscription and
 * delivery rows every webhook route answers, and the target a task object delivers to.
 */
import { z } from "zod";
import { RUNTIME_EVENT_TYPES } from "../core/index.js";
import { intParam } from "./requests.js";

/** Webhooks one session may hold. */
export const MAX_WEBHOOKS_PER_SESSION = 100;
/** A2A push notification configs one task may hold (they go with the task when retention removes it). */
export const MAX_PUSH_CONFIGS_PER_TASK = 10;
/** The longest subscription URL accepted. */
export const MAX_WEBHOOK_URL_LENGTH = 2_048;
/** The default number of tries of one delivery before it is recorded failed (WEBHOOK_MAX_TRIES). */
export const DEFAULT_WEBHOOK_MAX_TRIES = 8;
/** The most deliveries one page of GET …/webhooks/{webhook_id}/deliveries lists. */
export const MAX_DELIVERY_PAGE_LIMIT = 500;

/** POST /v1/sessions/{sid}/webhooks. */
export const CreateWebhookBody = z.strictObject({
  url: z.string().min(1).max(MAX_WEBHOOK_URL_LENGTH),
  /** The runtime event types delivered (at least one). */
  events: z.array(z.enum(RUNTIME_EVENT_TYPES)).min(1).max(RUNTIME_EVENT_TYPES.length),
  description: z.string().max(500).optional(),
});
export type CreateWebhookInput = z.input<typeof CreateWebhookBody>;

/** What a delivery's last try came to. */
export type WebhookDeliveryStatus = "pending" | "delivered" | "failed";
export const WEBHOOK_DELIVERY_STATUSES = ["pending", "delivered", "failed"] as const;
/** A delivery page's size when the query names none. */
export const DEFAULT_DELIVERY_PAGE_LIMIT = 50;

/** GET …/webhooks/{webhook_id}/deliveries query: one status, a page size, and the cursor of the page before. */
export const WebhookDeliveryQueryParams = z.strictObject({
  status: z.enum(WEBHOOK_DELIVERY_STATUSES).optional(),
  limit: intParam(1, MAX_DELIVERY_PAGE_LIMIT).describe(`Most deliveries to answer: 1–${MAX_DELIVERY_PAGE_LIMIT} (default ${DEFAULT_DELIVERY_PAGE_LIMIT})`).optional(),
  after: z.string().min(1).max(512).describe("The next_cursor of the page before").optional(),
  access_token: z.string().optional(),
});

/** A subscription as reads show it: never its secret. */
export interface Webhook {
  readonly webhook_id: string;
  /** `webhook` (POST …/webhooks) or `a2a_push` (an A2A push notification config of one task). */
  readonly kind: "webhook" | "a2a_push";
  readonly url: string;
  readonly events: string[];
  readonly description: string | null;
  /** The task an A2A push config belongs to; null for a session-wide webhook. */
  readonly task_id: string | null;
  /** active, or disabled (the receiver answered 410 Gone). */
  readonly status: "active" | "disabled";
  readonly disabled_reason: string | null;
  readonly created_at: string;
}

/** The answer of POST …/webhooks: the secret is shown here once and never again. */
export interface CreatedWebhook {
  readonly webhook_id: string;
  /** `whsec_` and base64 of 32 random bytes: the Standard Webhooks signing key. */
  readonly secret: string;
  readonly webhook: Webhook;
}

/** One event owed to one subscription, as the session lists it. */
export interface WebhookDelivery {
  readonly delivery_id: string;
  readonly webhook_id: string;
  readonly event_type: string;
  readonly event_id: string;
  readonly task_id: string;
  readonly status: WebhookDeliveryStatus;
  readonly attempts: number;
  /** The HTTP status of the last try; null before the first or when none came back (a timeout, a refused host). */
  readonly last_status_code: number | null;
  readonly last_error: string | null;
  /** When the next try is due; null once delivered or failed. */
  readonly next_attempt_at: string | null;
  readonly updated_at: string;
}

/** A page of GET …/webhooks/{webhook_id}/deliveries, newest first. */
export interface WebhookDeliveryPage {
  readonly deliveries: WebhookDelivery[];
  /** Pass as `after` for the next page; null on the last. */
  readonly next_cursor: string | null;
}

/** A subscription's deliveries of one task, as the task read model's `webhook_delivery_state` shows them. */
export interface TaskWebhookDeliveryState {
  readonly webhook_id: string;
  /** failed when any delivery failed, else pending when any is owed, else delivered. */
  readonly state: WebhookDeliveryStatus;
  readonly pending: number;
  readonly delivered: number;
  readonly failed: number;
  readonly last_status_code: number | null;
}
