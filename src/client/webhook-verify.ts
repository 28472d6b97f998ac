/**
 * @module A webhook receiver's one call (docs/api.md "Delivery and notifications"): `verifyWebhook(secret, body,
 * headers)` checks a message's Standard Webhooks signature and timestamp with the `standardwebhooks` library and
 * answers the message `{type, timestamp, data}`, or throws. The SDK's second entry, `agent-task-runtime/client/webhooks`
 * (about 5 KB gzipped, the library's), kept apart from the API client so that a bundle that only calls the API does
 * not carry it. Fetch-era types only, so it runs in Node, browsers and Workers alike.
 */
import { Webhook, WebhookVerificationError } from "standardwebhooks";
import type { RuntimeEvent } from "../core/browser.js";

export { WebhookVerificationError };

/** What the runtime POSTs to a webhook: the runtime event's type, its time (ISO 8601), and the event. */
export interface WebhookMessage<T = RuntimeEvent> {
  readonly type: string;
  readonly timestamp: string;
  readonly data: T;
}

/** A message's headers: a fetch `Headers`, or a plain record as Node's `req.headers` (lists joined by a space). */
export type WebhookHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

/**
 * Verifies a webhook message with its subscription's `whsec_` secret: the body exactly as received (the raw text
 * or bytes, not a re-serialised object) and its headers (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature`). Answers the parsed message; throws WebhookVerificationError for a missing or wrong
 * signature, a timestamp more than five minutes off, or a body that is not a runtime message.
 */
export function verifyWebhook<T = RuntimeEvent>(secret: string, body: string | Uint8Array, headers: WebhookHeaders): WebhookMessage<T> {
  const message = new Webhook(secret).verify(body, plainHeaders(headers));
  if (typeof message !== "object" || message === null) throw new WebhookVerificationError("the body is not a runtime webhook message");
  const { type, timestamp } = message as Partial<WebhookMessage<T>>;
  if (typeof type !== "string" || typeof timestamp !== "string" || !("data" in message)) throw new WebhookVerificationError("the body is not a runtime webhook message");
  return message as WebhookMessage<T>;
}

function plainHeaders(headers: WebhookHeaders): Record<string, string> {
  const plain: Record<string, string> = {};
  if (typeof (headers as Headers).forEach === "function" && typeof (headers as Headers).get === "function") {
    (headers as Headers).forEach((value, name) => (plain[name.toLowerCase()] = value));
    return plain;
  }
  for (const [name, value] of Object.entries(headers as Record<string, string | readonly string[] | undefined>)) {
    if (value !== undefined) plain[name.toLowerCase()] = typeof value === "string" ? value : value.join(" ");
  }
  return plain;
}
