/**
 * @module A task object's webhook outbox (docs/design.md "Delivery"): the deliveries its WAL owes (queued in the
 * commit of the events they carry), sent from the alarm, each subscription's one at a time in WAL order, every
 * try's outcome committed as the runtime's `record_webhook_tries` — the core decides delivered, failed or owed
 * again after a backoff. A crash before a send, during one or before its outcome was committed loses nothing: the
 * delivery is still pending in the WAL and is sent again, with the same `webhook-id` (its delivery id), so a
 * receiver that got it already can tell. Outcomes arriving together are committed together.
 */
import { type DagState, deliveryFacts, deliveryHeads, projectEvent, type RuntimeEvent, type WalEvent, type WebhookDeliveryRecord } from "../../src/core/index.js";
import { reportIncident } from "../shared/incident.js";
import type { WebhookDelivery } from "../../src/contract/index.js";
import type { DeliveryTarget } from "../session/session-rpc.js";
import type { DeliveryTargets } from "./delivery-targets.js";

/** What one send came to: the receiver's status, or none (a timeout, a refused host, a network error) and why. */
export interface SendOutcome {
  readonly status: number | null;
  readonly error: string | null;
}

/** The calls the outbox makes; the task object binds them to the network and the session. */
export interface WebhookPorts {
  /** Sends one delivery of `event` to `target` (signed for a webhook, as an A2A push for a push config). */
  send(target: DeliveryTarget, delivery: WebhookDeliveryRecord, event: RuntimeEvent, state: DagState): Promise<SendOutcome>;
  /** The receiver answered 410 Gone: the session disables the subscription. */
  disable(webhookId: string, reason: string): Promise<void>;
}

/** The configured tries and backoff (WEBHOOK_MAX_TRIES, WEBHOOK_RETRY_BASE_MS), passed into each report so replay never reads them. */
export interface DeliveryPolicy {
  readonly maxTries: number;
  readonly retryBaseMs: number;
  /** How long after a send starts the alarm comes by in case the object died during it (longer than a send may take). */
  readonly sendGuardMs: number;
}

/** A delivery as the session's replica and the routes show it. */
export function deliveryRow(taskId: string, d: WebhookDeliveryRecord): WebhookDelivery {
  return {
    delivery_id: d.delivery_id,
    webhook_id: d.webhook_id,
    event_type: d.event_type,
    event_id: d.event_id,
    task_id: taskId,
    status: d.status,
    attempts: d.attempts,
    last_status_code: d.last_status_code,
    last_error: d.last_error,
    next_attempt_at: d.next_attempt_at,
    updated_at: d.updated_at,
  };
}

/**
 * The deliveries the WAL changed after `afterSeq` (what the session's replica lacks), as rows: read from the WAL's
 * delivery facts, since a delivered delivery is no longer held in memory. Nothing is read for a task that never
 * owed one.
 */
export function deliveriesChangedAfter(state: DagState, afterSeq: number, readAfter: (afterSeq: number) => WalEvent[]): WebhookDelivery[] {
  const task = state.task;
  if (task === null || (state.webhookDeliveries.size === 0 && state.webhookTotals.size === 0) || afterSeq >= state.last_wal_seq) return [];
  return deliveryFacts(readAfter(afterSeq)).map((fact) => ({ ...fact, task_id: task.task_id }));
}

/** WAL events whose runtime events the outbox keeps for the next sends. */
const PROJECTED_KEPT = 64;

/** One try's outcome as reported to the core. */
type TryReport = { delivery_id: string; status_code: number | null; error: string | null; final?: true };

/** The webhook deliveries of one task object. */
export class WebhookOutbox {
  /**
   * Deliveries being sent, by subscription (one at a time each), with when the alarm comes by anyway: should the
   * object die during the send, nothing else would wake it to send again.
   */
  private readonly inFlight = new Map<string, { send: Promise<void>; guardAt: number }>();
  /** Outcomes not yet committed, and the commit that will take them. */
  private reports: TryReport[] = [];
  private reporting: Promise<void> | null = null;
  /** The runtime events of recently sent WAL events, by wal_seq (oldest first). */
  private readonly projected = new Map<number, RuntimeEvent[]>();
  /** When the earliest delivery is due, for the object's alarm; null when nothing is owed. */
  dueAt: number | null = null;

  constructor(
    private readonly state: () => DagState,
    private readonly targets: DeliveryTargets,
    /** The WAL event at a wal_seq, read back from storage. */
    private readonly walEvent: (walSeq: number) => WalEvent | undefined,
    public ports: WebhookPorts,
    private readonly policy: DeliveryPolicy,
    private readonly commit: (command: Record<string, unknown>) => Promise<boolean>,
    private readonly armAlarm: () => Promise<void>,
  ) {}

  /**
   * Recomputes `dueAt`. A subscription with a send under way is due only at its guard time (its outcome will be
   * committed and re-arm the alarm; the guard covers a crash during the send).
   */
  refresh(): void {
    let next: number | null = null;
    for (const { delivery, due_at } of deliveryHeads(this.state())) {
      const at = this.inFlight.get(delivery.webhook_id)?.guardAt ?? due_at;
      if (next === null || at < next) next = at;
    }
    this.dueAt = next === null ? null : Math.max(next, Date.now());
  }

  /** Starts every due delivery whose subscription has none under way; resolves when those started now settled and were reported. */
  async flush(now: number): Promise<void> {
    if (this.state().index.pendingDeliveries.size === 0) return;
    const task = this.state().task!;
    if (!this.targets.known) await this.targets.ready(task.session_id, task.task_id);
    const started: Promise<void>[] = [];
    for (const { delivery, due_at } of deliveryHeads(this.state())) {
      const sending = this.inFlight.get(delivery.webhook_id);
      // Still under way past its guard (it cannot be, a send times out first): the guard moves on, not a second send.
      if (sending !== undefined && sending.guardAt <= now) sending.guardAt = now + this.policy.sendGuardMs;
      if (due_at > now || sending !== undefined) continue;
      const send = this.sendOne(delivery)
        .then((report) => this.report(report))
        .catch((e) => void reportIncident(e, "task object: webhook delivery"))
        .finally(async () => {
          this.inFlight.delete(delivery.webhook_id);
          this.refresh();
          try {
            await this.armAlarm();
          } catch (e) {
            reportIncident(e, "task object: setting the alarm after a webhook delivery");
          }
          // The subscription's next delivery may be due at once (its head was just delivered).
          if (this.dueAt !== null && this.dueAt <= Date.now()) void this.flush(Date.now());
        });
      this.inFlight.set(delivery.webhook_id, { send, guardAt: now + this.policy.sendGuardMs });
      started.push(send);
    }
    this.refresh();
    await Promise.all(started);
  }

  /** Sends one delivery; what came of it, as reported to the core. */
  private async sendOne(delivery: WebhookDeliveryRecord): Promise<TryReport> {
    let target = this.targets.target(delivery.webhook_id);
    if (target === undefined) {
      await this.targets.refresh();
      target = this.targets.target(delivery.webhook_id);
    }
    if (target === undefined) return { delivery_id: delivery.delivery_id, status_code: null, error: "the subscription was removed or disabled", final: true };
    const event = this.runtimeEvents(delivery.wal_seq)?.[delivery.index];
    if (event === undefined) return { delivery_id: delivery.delivery_id, status_code: null, error: `the WAL holds no event ${delivery.event_id}`, final: true };
    const sent = await this.ports.send(target, delivery, event, this.state());
    if (sent.status === 410) {
      try {
        await this.ports.disable(target.webhook_id, `the receiver answered 410 Gone to delivery ${delivery.delivery_id}`);
        await this.targets.refresh(true);
      } catch (e) {
        reportIncident(e, "task object: disabling a gone webhook");
      }
    }
    return { delivery_id: delivery.delivery_id, status_code: sent.status, error: sent.error };
  }

  /**
   * The runtime events of the WAL event at `walSeq`, read back once for all the subscriptions it is owed to (the
   * last few kept: a commit's deliveries to many subscriptions go out together).
   */
  private runtimeEvents(walSeq: number): RuntimeEvent[] | undefined {
    const kept = this.projected.get(walSeq);
    if (kept !== undefined) return kept;
    const walEvent = this.walEvent(walSeq);
    if (walEvent === undefined) return undefined;
    const events = projectEvent(walEvent);
    this.projected.set(walSeq, events);
    if (this.projected.size > PROJECTED_KEPT) this.projected.delete(this.projected.keys().next().value!);
    return events;
  }

  /** Commits an outcome, with every other that arrives before the commit starts. */
  private report(report: TryReport): Promise<void> {
    this.reports.push(report);
    if (this.reporting !== null) return this.reporting;
    this.reporting = Promise.resolve().then(async () => {
      const tries = this.reports;
      this.reports = [];
      this.reporting = null;
      const committed = await this.commit({ type: "record_webhook_tries", tries, max_tries: this.policy.maxTries, retry_base_ms: this.policy.retryBaseMs });
      // Not committed (the object broke): the deliveries stay pending in the WAL and are sent again.
      if (!committed) reportIncident(new Error(`${tries.length} webhook outcomes were not recorded; they will be sent again`), "task object: webhook outcomes");
    });
    return this.reporting;
  }
}
