/**
 * @module The session view's Failed deliveries: per webhook subscription its failed deliveries (the newest
 * FAILED_PAGE), each with a Retry that asks the runtime to send it again. A retried row stays where it is, shown
 * pending from the retry's answer, until a read that reflects the retry says what became of it: failed again (a
 * plain failed row once more), still pending, or delivered — known without a route of its own, since a delivery
 * is pending, delivered or failed and a read that finds it in neither complete list of failed and pending
 * deliveries leaves only delivered. The session's replica of the deliveries lags the retry by the task's push,
 * so a row older than the retry's answer says nothing of it.
 */
import { isRuntimeApiError, type Webhook, type WebhookDelivery, type WebhookDeliveryPage, type WebhookDeliveryStatus } from "../../../src/client/index.js";
import { lastStatusLabel } from "./delivery-model.js";

/** Failed deliveries read per subscription; the panel says when there are more. */
export const FAILED_PAGE = 50;
/** Pending deliveries read for a subscription with a retry whose outcome is not known yet. */
export const PENDING_PAGE = 100;
/** Subscriptions whose deliveries are read at once. */
const READ_CONCURRENCY = 4;

/** The SDK calls the panel makes (RuntimeClient's, and a test's fake). */
export interface DeliveryApi {
  listWebhooks(sessionId: string): Promise<{ webhooks: Webhook[] }>;
  listWebhookDeliveries(sessionId: string, webhookId: string, query: { status?: WebhookDeliveryStatus; limit?: number }): Promise<WebhookDeliveryPage>;
  retryWebhookDelivery(sessionId: string, webhookId: string, deliveryId: string): Promise<{ delivery: WebhookDelivery }>;
}

/** Where a row is: failed (Retry offered), retrying (asked, no answer yet), or what became of its retry. */
export type RowPhase = "failed" | "retrying" | "pending" | "delivered";

export interface FailedRow {
  readonly delivery: WebhookDelivery;
  readonly phase: RowPhase;
  /** Why the last Retry of this row was refused; null when it was not. */
  readonly error: string | null;
}

/** One subscription and its rows (none when nothing of it failed). */
export interface WebhookGroup {
  readonly webhook: Webhook;
  readonly rows: FailedRow[];
  /** True when it has more failed deliveries than the panel read. */
  readonly more: boolean;
}

/** A row's Retry as the panel remembers it. */
interface Retry {
  phase: Exclude<RowPhase, "failed"> | "refused";
  /** The delivery as last known: the retry's answer, then what reads say of it. */
  delivery: WebhookDelivery;
  /** The answer's updated_at: a row of a read older than this predates the retry. */
  since: string | null;
  error: string | null;
}

/** What a row says of its tries. */
export interface RowFacts {
  readonly attempts: string;
  readonly lastAnswer: string;
  readonly lastError: string | null;
}

/**
 * A row's attempts and last answer: the delivery's own, but for one known delivered only by being in neither list
 * (its tries since the retry are not read): a 2xx, that many tries unknown.
 */
export function rowFacts(row: FailedRow): RowFacts {
  const d = row.delivery;
  if (row.phase === "delivered") return { attempts: "—", lastAnswer: "HTTP 2xx", lastError: null };
  return { attempts: String(d.attempts), lastAnswer: lastStatusLabel(d.last_status_code), lastError: d.last_error };
}

/** The text an error shows: the API's message (its code is in the envelope's, e.g. permission_denied). */
export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Display order: what was shown stays in place while it is still failed or retried (`keep`); a delivery not shown
 * before goes first (the list is newest first).
 */
export function stableOrder(shown: readonly string[], failed: readonly string[], keep: ReadonlySet<string>): string[] {
  const before = new Set(shown);
  const now = new Set(failed);
  return [...failed.filter((id) => !before.has(id)), ...shown.filter((id) => now.has(id) || keep.has(id))];
}

/** What one read of a subscription brought. */
interface SubscriptionRead {
  readonly failed: WebhookDeliveryPage;
  /** Read only while a retry of it is pending. */
  readonly pending: WebhookDeliveryPage | null;
}

/** The failed deliveries of a session's subscriptions, read on demand, with the retries asked from this page. */
export class FailedDeliveries {
  /** The session's subscriptions, oldest first; null before the first read. */
  webhooks: Webhook[] | null = null;
  /** Why the last read failed; null after one that did not. */
  error: string | null = null;
  private readonly failed = new Map<string, { deliveries: Map<string, WebhookDelivery>; more: boolean }>();
  private readonly shown = new Map<string, string[]>();
  private readonly retries = new Map<string, Retry>();
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly api: DeliveryApi,
    private readonly sessionId: string,
  ) {}

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Reads the subscriptions and their failed deliveries (and pending ones where a retry waits for its outcome). */
  async read(): Promise<void> {
    try {
      const { webhooks } = await this.api.listWebhooks(this.sessionId);
      const waiting = new Set([...this.retries.values()].filter((r) => r.phase === "pending").map((r) => r.delivery.webhook_id));
      const reads = await inBatches(webhooks, READ_CONCURRENCY, (w) => this.readSubscription(w.webhook_id, waiting.has(w.webhook_id)));
      const live = new Set<string>();
      webhooks.forEach((w, i) => {
        const read = reads[i];
        if (read === null) return;
        live.add(w.webhook_id);
        this.take(w.webhook_id, read!);
      });
      this.webhooks = webhooks.filter((w) => live.has(w.webhook_id));
      for (const id of [...this.failed.keys()]) if (!live.has(id)) this.forgetSubscription(id);
      this.error = null;
    } catch (e) {
      this.error = errorText(e);
    }
    this.changed();
  }

  /** Asks for a failed delivery to be sent again; the row shows the answer (pending) or why it was refused. */
  async retry(webhookId: string, deliveryId: string): Promise<void> {
    const delivery = this.retries.get(deliveryId)?.delivery ?? this.failed.get(webhookId)?.deliveries.get(deliveryId);
    if (delivery === undefined) return;
    this.retries.set(deliveryId, { phase: "retrying", delivery, since: null, error: null });
    this.changed();
    try {
      const answer = await this.api.retryWebhookDelivery(this.sessionId, webhookId, deliveryId);
      this.retries.set(deliveryId, { phase: "pending", delivery: answer.delivery, since: answer.delivery.updated_at, error: null });
    } catch (e) {
      this.retries.set(deliveryId, { phase: "refused", delivery, since: null, error: errorText(e) });
    }
    this.changed();
  }

  /** Each subscription with its rows, in the session's order. */
  groups(): WebhookGroup[] {
    return (this.webhooks ?? []).map((webhook) => {
      const failed = this.failed.get(webhook.webhook_id);
      const rows: FailedRow[] = [];
      for (const id of this.shown.get(webhook.webhook_id) ?? []) {
        const retry = this.retries.get(id);
        const read = failed?.deliveries.get(id);
        if (retry === undefined || retry.phase === "refused") {
          if (read !== undefined) rows.push({ delivery: read, phase: "failed", error: retry?.error ?? null });
        } else {
          rows.push({ delivery: retry.phase === "retrying" ? (read ?? retry.delivery) : retry.delivery, phase: retry.phase, error: null });
        }
      }
      return { webhook, rows, more: failed?.more ?? false };
    });
  }

  /** Failed rows across the subscriptions (what a Retry is offered for). */
  failedCount(): number {
    return this.groups().reduce((n, g) => n + g.rows.filter((r) => r.phase === "failed").length, 0);
  }

  /** A subscription's pages; null when it was deleted meanwhile (its deliveries went with it). */
  private async readSubscription(webhookId: string, withPending: boolean): Promise<SubscriptionRead | null> {
    try {
      const failed = await this.api.listWebhookDeliveries(this.sessionId, webhookId, { status: "failed", limit: FAILED_PAGE });
      const pending = withPending ? await this.api.listWebhookDeliveries(this.sessionId, webhookId, { status: "pending", limit: PENDING_PAGE }) : null;
      return { failed, pending };
    } catch (e) {
      if (isRuntimeApiError(e, "not_found")) return null;
      throw e;
    }
  }

  /** Takes one subscription's read: its failed rows, what became of its retries, and the display order. */
  private take(webhookId: string, read: SubscriptionRead): void {
    const failed = new Map(read.failed.deliveries.map((d) => [d.delivery_id, d]));
    const pending = new Map((read.pending?.deliveries ?? []).map((d) => [d.delivery_id, d]));
    const complete = read.failed.next_cursor === null && read.pending !== null && read.pending.next_cursor === null;
    for (const [id, retry] of this.retries) {
      if (retry.delivery.webhook_id !== webhookId) continue;
      if (retry.phase === "pending") this.settle(id, retry, failed.get(id), pending.get(id), complete);
      // A refused retry's note goes with its row once the row is no longer failed (someone else retried it).
      else if (retry.phase === "refused" && !failed.has(id)) this.retries.delete(id);
    }
    const keep = new Set([...this.retries].filter(([, r]) => r.delivery.webhook_id === webhookId && r.phase !== "refused").map(([id]) => id));
    this.shown.set(webhookId, stableOrder(this.shown.get(webhookId) ?? [], [...failed.keys()], keep));
    this.failed.set(webhookId, { deliveries: failed, more: read.failed.next_cursor !== null });
  }

  /** What a read says of a pending retry: failed again, still pending, delivered, or nothing yet (the replica lags). */
  private settle(id: string, retry: Retry, failed: WebhookDelivery | undefined, pending: WebhookDelivery | undefined, complete: boolean): void {
    const since = Date.parse(retry.since!);
    const fresh = (d: WebhookDelivery | undefined) => d !== undefined && Date.parse(d.updated_at) >= since;
    if (fresh(failed)) this.retries.delete(id);
    else if (fresh(pending)) retry.delivery = pending!;
    else if (failed === undefined && pending === undefined && complete) {
      retry.phase = "delivered";
      retry.delivery = { ...retry.delivery, status: "delivered", last_error: null, next_attempt_at: null };
    }
  }

  private forgetSubscription(webhookId: string): void {
    this.failed.delete(webhookId);
    this.shown.delete(webhookId);
    for (const [id, r] of this.retries) if (r.delivery.webhook_id === webhookId) this.retries.delete(id);
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }
}

/** `work` over `items`, at most `width` at once; results in the items' order. */
async function inBatches<T, R>(items: readonly T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += width) out.push(...(await Promise.all(items.slice(i, i + width).map(work))));
  return out;
}
