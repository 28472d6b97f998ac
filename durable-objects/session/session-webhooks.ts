/**
 * @module A session's subscriptions (docs/api.md "Delivery and notifications"): its webhooks and its tasks' A2A push
 * configs in one table, `webhooks`, with their signing secrets and credentials, which only deliveryTargets (for the
 * task objects that deliver) ever reads back; and `webhook_deliveries`, the replica of every delivery the task
 * objects push with their index entries, which the delivery list pages through. Tables: session-schema.ts.
 */
import { type CreatedWebhook, MAX_DELIVERY_PAGE_LIMIT, MAX_PUSH_CONFIGS_PER_TASK, MAX_WEBHOOK_URL_LENGTH, MAX_WEBHOOKS_PER_SESSION, type Webhook, type WebhookDelivery, type WebhookDeliveryPage, type WebhookDeliveryStatus } from "../../src/contract/index.js";
import { limitExceeded, runtimeError } from "../../src/core/index.js";
import { targetRefusal } from "../peers/peer-targets.js";
import { err, ok, type RpcResult } from "../shared/rpc-result.js";
import { clientKey, type Idempotency, IDEMPOTENCY_TTL_MS, sameRequest } from "../task/storage/idempotency-store.js";
import type { DeliveryTarget, NewSubscription } from "./session-rpc.js";

type WebhookRow = {
  webhook_id: string;
  kind: "webhook" | "a2a_push";
  url: string;
  events: string;
  description: string | null;
  task_id: string | null;
  secret: string | null;
  token: string | null;
  authorization: string | null;
  status: "active" | "disabled";
  disabled_reason: string | null;
  created_at: string;
};

type DeliveryRow = Omit<WebhookDelivery, "status"> & { status: WebhookDeliveryStatus; seq: number };

/** Bytes of randomness in a signing secret (Standard Webhooks: 24 to 64). */
const SECRET_BYTES = 32;

/** The columns a read answers: never the secret, the token or the Authorization value. */
const LISTED = "webhook_id, kind, url, events, description, task_id, status, disabled_reason, created_at";

/** A new signing secret: `whsec_` and the standard base64 of 32 random bytes, as Standard Webhooks libraries read it. */
export function newWebhookSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(SECRET_BYTES));
  return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}

/** The webhooks and webhook_deliveries tables of one session object. */
export class SessionWebhooks {
  constructor(
    private readonly sql: SqlStorage,
    /** OUTBOUND_ALLOWLIST, as a subscription's URL is checked against it. */
    private readonly allowlist: readonly string[],
    private readonly newId: () => string,
  ) {}

  /**
   * Stores a subscription: a webhook gets a new id and secret; an A2A push config keeps its id and replaces the
   * config of that id (its created_at kept, active again). validation_error for a URL the outbound rules refuse,
   * limit_exceeded past MAX_WEBHOOKS_PER_SESSION webhooks or MAX_PUSH_CONFIGS_PER_TASK push configs of a task; nothing is written then. An A2A push config's answer has no
   * secret (`secret` is "": it is sent with its own token and Authorization, unsigned). A webhook's create
   * retried with its Idempotency-Key and body is answered as the first was (its secret too: the same caller asks
   * again); the key with another body is idempotency_conflict.
   */
  create(subscription: NewSubscription, now: Date, idem: Idempotency | null = null): RpcResult<CreatedWebhook> {
    if (subscription.kind === "webhook" && idem !== null) {
      this.sql.exec("DELETE FROM webhook_create_keys WHERE created_at_ms <= ?", now.getTime() - IDEMPOTENCY_TTL_MS);
      const used = this.sql.exec<{ hash: string; webhook_id: string }>("SELECT hash, webhook_id FROM webhook_create_keys WHERE key = ?", idem.key).toArray()[0];
      if (used !== undefined) return this.replay(used, idem);
    }
    const refused = this.urlRefusal(subscription.url) ?? eventsRefusal(subscription.events);
    if (refused !== null) return err(refused);
    const existing = subscription.kind === "a2a_push" ? this.row(subscription.webhook_id) : undefined;
    if (subscription.kind === "a2a_push" && existing !== undefined && (existing.kind !== "a2a_push" || existing.task_id !== subscription.task_id)) {
      return err(runtimeError("validation_error", `the id ${subscription.webhook_id} names another subscription`, { webhook_id: subscription.webhook_id }));
    }
    if (existing === undefined && subscription.kind === "webhook") {
      const count = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM webhooks WHERE kind = 'webhook'").one().n + 1;
      if (count > MAX_WEBHOOKS_PER_SESSION) {
        return err(limitExceeded(`a session holds at most ${MAX_WEBHOOKS_PER_SESSION} webhooks`, MAX_WEBHOOKS_PER_SESSION, count, "MAX_WEBHOOKS_PER_SESSION"));
      }
    }
    // A task's push configs count against that task alone, so clients that give every task one never run out.
    if (existing === undefined && subscription.kind === "a2a_push") {
      const count = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM webhooks WHERE kind = 'a2a_push' AND task_id = ?", subscription.task_id).one().n + 1;
      if (count > MAX_PUSH_CONFIGS_PER_TASK) {
        return err(limitExceeded(`a task holds at most ${MAX_PUSH_CONFIGS_PER_TASK} A2A push notification configs`, MAX_PUSH_CONFIGS_PER_TASK, count, "MAX_PUSH_CONFIGS_PER_TASK"));
      }
    }
    const events = JSON.stringify([...new Set(subscription.events)]);
    if (subscription.kind === "webhook") {
      const webhookId = `wh_${this.newId().toLowerCase()}`;
      const secret = newWebhookSecret();
      this.sql.exec(
        "INSERT INTO webhooks (webhook_id, kind, url, events, description, task_id, secret, token, authorization, status, disabled_reason, created_at) VALUES (?, 'webhook', ?, ?, ?, NULL, ?, NULL, NULL, 'active', NULL, ?)",
        webhookId, subscription.url, events, subscription.description ?? null, secret, now.toISOString(),
      );
      if (idem !== null) this.sql.exec("INSERT INTO webhook_create_keys (key, hash, webhook_id, created_at_ms) VALUES (?, ?, ?, ?)", idem.key, idem.hash, webhookId, now.getTime());
      return ok({ webhook_id: webhookId, secret, webhook: this.get(webhookId)! });
    }
    this.sql.exec(
      `INSERT INTO webhooks (webhook_id, kind, url, events, description, task_id, secret, token, authorization, status, disabled_reason, created_at) VALUES (?, 'a2a_push', ?, ?, NULL, ?, NULL, ?, ?, 'active', NULL, ?)
       ON CONFLICT (webhook_id) DO UPDATE SET url = excluded.url, events = excluded.events, token = excluded.token, authorization = excluded.authorization, status = 'active', disabled_reason = NULL`,
      subscription.webhook_id, subscription.url, events, subscription.task_id, subscription.token, subscription.authorization, now.toISOString(),
    );
    return ok({ webhook_id: subscription.webhook_id, secret: "", webhook: this.get(subscription.webhook_id)! });
  }

  /** Every subscription, or one task's A2A push configs, oldest first, without secrets. */
  list(taskId?: string): Webhook[] {
    const rows = taskId === undefined
      ? this.sql.exec<WebhookRow>(`SELECT ${LISTED} FROM webhooks ORDER BY created_at, webhook_id`).toArray()
      : this.sql.exec<WebhookRow>(`SELECT ${LISTED} FROM webhooks WHERE task_id = ? ORDER BY created_at, webhook_id`, taskId).toArray();
    return rows.map(listed);
  }

  /** One subscription without its secret, or undefined. */
  get(webhookId: string): Webhook | undefined {
    const row = this.sql.exec<WebhookRow>(`SELECT ${LISTED} FROM webhooks WHERE webhook_id = ?`, webhookId).toArray()[0];
    return row === undefined ? undefined : listed(row);
  }

  /** Removes a subscription and its replica rows; answers the removed one (undefined: none of that id). */
  delete(webhookId: string): Webhook | undefined {
    const removed = this.get(webhookId);
    if (removed === undefined) return undefined;
    this.sql.exec("DELETE FROM webhooks WHERE webhook_id = ?", webhookId);
    this.sql.exec("DELETE FROM webhook_deliveries WHERE webhook_id = ?", webhookId);
    this.sql.exec("DELETE FROM webhook_create_keys WHERE webhook_id = ?", webhookId);
    return removed;
  }

  /** A page of one subscription's deliveries, newest first (the order the session first heard of them). */
  deliveries(webhookId: string, query: { status?: WebhookDeliveryStatus; limit: number; after?: string }): RpcResult<WebhookDeliveryPage> {
    if (this.get(webhookId) === undefined) return err(runtimeError("not_found", `no webhook ${webhookId} in this session`, { webhook_id: webhookId }));
    if (!Number.isInteger(query.limit) || query.limit < 1 || query.limit > MAX_DELIVERY_PAGE_LIMIT) {
      return err(runtimeError("validation_error", `limit must be an integer from 1 to ${MAX_DELIVERY_PAGE_LIMIT}`, { limit: query.limit }));
    }
    let before = Number.MAX_SAFE_INTEGER;
    if (query.after !== undefined) {
      const seq = decodeCursor(query.after, webhookId);
      if (seq === null) return err(runtimeError("validation_error", "after is not a cursor of this webhook's deliveries: start again without one", { after: query.after.slice(0, 100) }));
      before = seq;
    }
    const status = query.status === undefined ? "" : " AND status = ?";
    const args = query.status === undefined ? [webhookId, before, query.limit + 1] : [webhookId, before, query.status, query.limit + 1];
    const rows = this.sql.exec<DeliveryRow>(`SELECT * FROM webhook_deliveries WHERE webhook_id = ? AND seq < ?${status} ORDER BY seq DESC LIMIT ?`, ...args).toArray();
    const page = rows.slice(0, query.limit);
    const last = page[page.length - 1];
    return ok({ deliveries: page.map(delivery), next_cursor: rows.length > query.limit && last !== undefined ? encodeCursor(webhookId, last.seq) : null });
  }

  /** One delivery of one subscription as the replica holds it, or undefined. */
  delivery(webhookId: string, deliveryId: string): WebhookDelivery | undefined {
    const row = this.sql.exec<DeliveryRow>("SELECT * FROM webhook_deliveries WHERE delivery_id = ? AND webhook_id = ?", deliveryId, webhookId).toArray()[0];
    return row === undefined ? undefined : delivery(row);
  }

  /** The active subscriptions a task's events go to (every webhook, and that task's A2A push configs), with their secrets. */
  targets(taskId: string): DeliveryTarget[] {
    return this.sql
      .exec<WebhookRow>("SELECT * FROM webhooks WHERE status = 'active' AND (kind = 'webhook' OR task_id = ?) ORDER BY created_at, webhook_id", taskId)
      .toArray()
      .map((r) => ({ webhook_id: r.webhook_id, kind: r.kind, url: r.url, events: JSON.parse(r.events) as string[], task_id: r.task_id, created_at: r.created_at, secret: r.secret, token: r.token, authorization: r.authorization }));
  }

  /** A receiver answered 410 Gone: the subscription delivers nothing more and is listed disabled, with why. */
  disable(webhookId: string, reason: string): void {
    this.sql.exec("UPDATE webhooks SET status = 'disabled', disabled_reason = ? WHERE webhook_id = ? AND status = 'active'", reason.slice(0, 1_000), webhookId);
  }

  /**
   * Takes the deliveries a task object pushed: each row replaces the replica's unless it is older (an earlier
   * updated_at, or the same with fewer attempts); a row of a subscription deleted meanwhile is dropped.
   */
  upsertDeliveries(deliveries: readonly WebhookDelivery[]): void {
    for (const d of deliveries) {
      this.sql.exec(
        `INSERT INTO webhook_deliveries (delivery_id, webhook_id, task_id, event_type, event_id, status, attempts, last_status_code, last_error, next_attempt_at, updated_at, seq)
         SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM webhook_deliveries) WHERE EXISTS (SELECT 1 FROM webhooks WHERE webhook_id = ?)
         ON CONFLICT (delivery_id) DO UPDATE SET status = excluded.status, attempts = excluded.attempts, last_status_code = excluded.last_status_code,
           last_error = excluded.last_error, next_attempt_at = excluded.next_attempt_at, updated_at = excluded.updated_at
         WHERE excluded.updated_at > webhook_deliveries.updated_at OR (excluded.updated_at = webhook_deliveries.updated_at AND excluded.attempts >= webhook_deliveries.attempts)`,
        d.delivery_id, d.webhook_id, d.task_id, d.event_type, d.event_id, d.status, d.attempts, d.last_status_code, d.last_error, d.next_attempt_at, d.updated_at, d.webhook_id,
      );
    }
  }

  /** Retention removed a task: its deliveries' rows and its A2A push configs go with it. */
  forgetTask(taskId: string): void {
    this.sql.exec("DELETE FROM webhook_deliveries WHERE task_id = ?", taskId);
    this.sql.exec("DELETE FROM webhooks WHERE kind = 'a2a_push' AND task_id = ?", taskId);
  }

  /** The answer of a create retried with its Idempotency-Key. */
  private replay(used: { hash: string; webhook_id: string }, idem: Idempotency): RpcResult<CreatedWebhook> {
    if (!sameRequest(used.hash, idem.hash)) return err(runtimeError("idempotency_conflict", "this Idempotency-Key was used with a different request", { key: clientKey(idem) }));
    const row = this.row(used.webhook_id);
    if (row === undefined || row.secret === null) return err(runtimeError("not_found", `the webhook this Idempotency-Key created, ${used.webhook_id}, was deleted`, { webhook_id: used.webhook_id, key: clientKey(idem) }));
    return ok({ webhook_id: row.webhook_id, secret: row.secret, webhook: listed(row) });
  }

  private row(webhookId: string): WebhookRow | undefined {
    return this.sql.exec<WebhookRow>("SELECT * FROM webhooks WHERE webhook_id = ?", webhookId).toArray()[0];
  }

  private urlRefusal(url: string): ReturnType<typeof runtimeError> | null {
    if (url.length > MAX_WEBHOOK_URL_LENGTH) return runtimeError("validation_error", `the URL is longer than ${MAX_WEBHOOK_URL_LENGTH} characters`, { url: url.slice(0, 200), max: MAX_WEBHOOK_URL_LENGTH });
    const refused = targetRefusal(url, this.allowlist);
    return refused === null ? null : runtimeError("validation_error", `the webhook URL is refused: ${refused}`, { url: url.slice(0, 200), reason: refused });
  }
}

function eventsRefusal(events: readonly string[]): ReturnType<typeof runtimeError> | null {
  if (events.length === 0 || !events.every((e) => typeof e === "string" && e !== "")) return runtimeError("validation_error", "events must name at least one runtime event type", { events });
  return null;
}

function listed(r: WebhookRow): Webhook {
  return { webhook_id: r.webhook_id, kind: r.kind, url: r.url, events: JSON.parse(r.events) as string[], description: r.description, task_id: r.task_id, status: r.status, disabled_reason: r.disabled_reason, created_at: r.created_at };
}

function delivery(r: DeliveryRow): WebhookDelivery {
  return {
    delivery_id: r.delivery_id, webhook_id: r.webhook_id, event_type: r.event_type, event_id: r.event_id, task_id: r.task_id, status: r.status,
    attempts: r.attempts, last_status_code: r.last_status_code, last_error: r.last_error, next_attempt_at: r.next_attempt_at, updated_at: r.updated_at,
  };
}

/** A page's end as an opaque cursor: base64url of `[webhook_id, seq]`, bound to its webhook. */
function encodeCursor(webhookId: string, seq: number): string {
  const bytes = new TextEncoder().encode(JSON.stringify([webhookId, seq]));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The seq a cursor of `webhookId`'s list names, or null when it is not one. */
function decodeCursor(cursor: string, webhookId: string): number | null {
  if (!/^[A-Za-z0-9_-]{1,400}$/.test(cursor)) return null;
  try {
    const binary = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
    const value: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))));
    if (!Array.isArray(value) || value.length !== 2 || value[0] !== webhookId || !Number.isSafeInteger(value[1]) || (value[1] as number) < 1) return null;
    return value[1] as number;
  } catch {
    return null;
  }
}
