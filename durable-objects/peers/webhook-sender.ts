/**
 * @module The outbound POST of webhook deliveries (docs/api.md "Delivery and notifications"): a message signed as
 * Standard Webhooks sign it (the `standardwebhooks` library: webhook-id, webhook-timestamp, webhook-signature),
 * sent only to a host the outbound rules allow (peer-targets.ts), following no redirect (a 3xx is the answer), within
 * a timeout, and reading at most a capped part of the answer, which is discarded. Runs inside workerd (a task
 * object's alarm): no Node APIs. Never throws: every failure is an outcome without a status.
 */
import { Webhook } from "standardwebhooks";
import type { DeliveryTarget } from "../session/session-rpc.js";
import { targetRefusal } from "./peer-targets.js";

/** Where and how webhooks are delivered (OUTBOUND_ALLOWLIST, WEBHOOK_TIMEOUT_MS, WEBHOOK_MAX_RESPONSE_BYTES, WEBHOOK_MAX_TRIES). */
export interface WebhookLimits {
  /** As PeerLimits' allowlist: `host`, `host:port`, `loopback` or `*` (never the runtime's own network through `*`). */
  readonly allowlist: readonly string[];
  /** One POST, the answer's body included, is aborted after this long. */
  readonly timeoutMs: number;
  /** Bytes of the answer read (and dropped) before the rest is cancelled. */
  readonly maxResponseBytes: number;
  /** Tries of one delivery before it is recorded failed. */
  readonly maxTries: number;
  /** The wait before a delivery's second try; each later wait is 4 times the one before, up to an hour. */
  readonly retryBaseMs: number;
}

/** What one POST came to: the receiver's HTTP status, or null and why none came back. */
export interface OutboundOutcome {
  readonly status: number | null;
  readonly error: string | null;
}

/** One event as a webhook message: its id (webhook-id, the same on every try), its type, its time and the event. */
export interface WebhookMessage {
  readonly delivery_id: string;
  readonly type: string;
  readonly timestamp: Date;
  readonly data: unknown;
}

/** The User-Agent of every outbound webhook POST. */
export const WEBHOOK_USER_AGENT = "agent-task-runtime-webhooks/1";
/** Characters of a URL or an error quoted in an outcome's error. */
const EXCERPT = 200;

/**
 * POSTs `body` to `url` with `headers`: refused (no request) when the outbound rules refuse the host; a redirect is
 * an outcome with its 3xx status, never followed; the answer's first maxResponseBytes are read and the rest
 * cancelled; the call, its body included, ends after timeoutMs. Never throws.
 */
export async function postOutbound(limits: Pick<WebhookLimits, "allowlist" | "timeoutMs" | "maxResponseBytes">, url: string, headers: Record<string, string>, body: string): Promise<OutboundOutcome> {
  const refused = targetRefusal(url, limits.allowlist);
  if (refused !== null) return { status: null, error: refused };
  // A timer cleared when the call ends, not AbortSignal.timeout: its timer would stay armed for the whole timeout
  // after a quick answer, and an object sending hundreds a second would hold thousands (workerd caps them at 10,000).
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), limits.timeoutMs);
  const signal = timeout.signal;
  try {
    let response: Response;
    try {
      response = await fetch(url, { method: "POST", headers, body, redirect: "manual", signal });
    } catch (e) {
      const why = signal.aborted ? `did not answer within ${limits.timeoutMs} ms` : `could not be reached: ${messageOf(e)}`;
      return { status: null, error: `${url.slice(0, EXCERPT)} ${why}` };
    }
    await discardBody(response, limits.maxResponseBytes, signal);
    return { status: response.status, error: null };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Sends one event to one subscription as a Standard Webhooks message: the body `{type, timestamp, data}` (timestamp
 * ISO 8601), webhook-id the delivery's id, webhook-timestamp the message's time in seconds, webhook-signature by the
 * target's `whsec_` secret. A target without a secret is sent the same message unsigned, with its
 * X-A2A-Notification-Token and Authorization when it has them (the task object sends an A2A push config the A2A
 * request a2a-push.ts builds instead). Never throws.
 */
export async function sendWebhook(limits: Pick<WebhookLimits, "allowlist" | "timeoutMs" | "maxResponseBytes">, target: DeliveryTarget, message: WebhookMessage): Promise<OutboundOutcome> {
  const body = JSON.stringify({ type: message.type, timestamp: message.timestamp.toISOString(), data: message.data });
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "user-agent": WEBHOOK_USER_AGENT,
    "webhook-id": message.delivery_id,
    "webhook-timestamp": String(Math.floor(message.timestamp.getTime() / 1000)),
  };
  if (target.secret !== null) {
    try {
      headers["webhook-signature"] = new Webhook(target.secret).sign(message.delivery_id, message.timestamp, body);
    } catch (e) {
      return { status: null, error: `the subscription's secret cannot sign: ${messageOf(e)}` };
    }
  }
  if (target.token !== null) headers["x-a2a-notification-token"] = target.token;
  if (target.authorization !== null) headers.authorization = target.authorization;
  return postOutbound(limits, target.url, headers, body);
}

/** Reads and drops at most `max` bytes of the answer, then cancels the rest; stops when `signal` aborts. */
async function discardBody(response: Response, max: number, signal: AbortSignal): Promise<void> {
  if (response.body === null) return;
  const reader = response.body.getReader();
  let onAbort: () => void = () => undefined;
  const aborted = new Promise<"aborted">((resolve) => {
    onAbort = () => resolve("aborted");
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  let read = 0;
  try {
    while (read < max) {
      const chunk = await Promise.race([reader.read(), aborted]);
      if (chunk === "aborted" || chunk.done) break;
      read += chunk.value.byteLength;
    }
  } catch {
    // A body that breaks off is as good as read: the status is what the delivery records.
  } finally {
    signal.removeEventListener("abort", onAbort);
    await reader.cancel().catch(() => undefined);
  }
}

function messageOf(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).slice(0, EXCERPT);
}
