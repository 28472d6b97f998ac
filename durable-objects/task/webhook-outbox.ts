/**
 * @module A task object's webhook outbox (docs/design.md "Delivery"): the deliveries its WAL owes (queued in the
 * commit of the events they carry), sent from the alarm, each subscription's one at a time in WAL order, every
 * try's outcome committed as the runtime's `record_webhook_tries` — the core decides delivered, failed or owed
 * again after a backoff. A crash before a send, during one or before its outcome was committed loses nothing: the
 * delivery is still pending in the WAL and is sent again, with the same `webhook-id` (its delivery id), so a
 * receiver that got it already can tell. Outcomes arriving together are committed together.
 */
import { type DagState, deliveryDueAt, deliveryFacts, pendingDeliveriesOf, projectEvent, type RuntimeEvent, type WalEvent, type WebhookDeliveryRecord } from "../../src/core/index.js";
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
/** Outcomes are committed this long after the first of them arrived, or at once when this many wait. */
const REPORT_BATCH_MS = 5;
const REPORT_BATCH_MAX = 500;

/** One try's outcome as reported to the core. */
type TryReport = { delivery_id: string; status_code: number | null; error: string | null; final?: true };

/** The webhook deliveries of one task object. */
export class WebhookOutbox {
  /**
   * Subscriptions whose send loop runs (one each), with when the alarm comes by anyway: should the object die
   * during a send, nothing else would wake it to send again.
   */
  private readonly sending = new Map<string, { guardAt: number }>();
  /**
   * Deliveries sent whose outcome is not committed yet, and whether the next may go: a subscription's next delivery
   * goes after a delivered one at once, but never past one that failed (it waits for its retry, in order).
   */
  private readonly unrecorded = new Map<string, boolean>();
  /** Outcomes not yet committed, and the timer that commits them. */
  private reports: TryReport[] = [];
  private reportTimer: ReturnType<typeof setTimeout> | null = null;
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

  /** The delivery `webhookId` is sent next: its first pending one not sent already, unless one sent failed (null: none now). */
  private next(webhookId: string): WebhookDeliveryRecord | null {
    for (const d of pendingDeliveriesOf(this.state(), webhookId)) {
      const sent = this.unrecorded.get(d.delivery_id);
      if (sent === undefined) return d;
      if (!sent) return null;
    }
    return null;
  }

  /**
   * Recomputes `dueAt`. A subscription whose loop runs is due only at its guard time (its outcomes will be
   * committed and re-arm the alarm; the guard covers a crash during a send).
   */
  refresh(): void {
    let next: number | null = null;
    for (const webhookId of this.state().index.pendingByWebhook.keys()) {
      const guard = this.sending.get(webhookId)?.guardAt;
      const head = guard === undefined ? this.next(webhookId) : null;
      const at = guard ?? (head === null ? null : deliveryDueAt(head));
      if (at !== null && (next === null || at < next)) next = at;
    }
    this.dueAt = next === null ? null : Math.max(next, Date.now());
  }

  /** Starts the send loop of every subscription with a delivery due and none running; resolves when those ended and were reported. */
  async flush(now: number): Promise<void> {
    const state = this.state();
    if (state.index.pendingByWebhook.size === 0) return;
    const task = state.task!;
    if (!this.targets.known) await this.targets.ready(task.session_id, task.task_id);
    const started: Promise<void>[] = [];
    for (const webhookId of this.state().index.pendingByWebhook.keys()) {
      const sending = this.sending.get(webhookId);
      // Still under way past its guard (it cannot be, a send times out first): the guard moves on, not a second loop.
      if (sending !== undefined) {
        if (sending.guardAt <= now) sending.guardAt = now + this.policy.sendGuardMs;
        continue;
      }
      const head = this.next(webhookId);
      if (head === null || deliveryDueAt(head) > now) continue;
      const guard = { guardAt: now + this.policy.sendGuardMs };
      this.sending.set(webhookId, guard);
      started.push(
        this.sendLoop(webhookId, guard)
          .catch((e) => void reportIncident(e, "task object: webhook delivery"))
          .finally(async () => {
            this.sending.delete(webhookId);
            this.refresh();
            try {
              await this.armAlarm();
            } catch (e) {
              reportIncident(e, "task object: setting the alarm after webhook deliveries");
            }
          }),
      );
    }
    this.refresh();
    await Promise.all(started);
    await this.drain();
  }

  /**
   * Sends `webhookId` its due deliveries one after another, in WAL order, while they are delivered; stops at one
   * that is not (its retry is decided when its outcome is committed) or at one not due yet.
   */
  private async sendLoop(webhookId: string, guard: { guardAt: number }): Promise<void> {
    for (;;) {
      const delivery = this.next(webhookId);
      if (delivery === null || deliveryDueAt(delivery) > Date.now()) return;
      guard.guardAt = Date.now() + this.policy.sendGuardMs;
      const report = await this.sendOne(delivery);
      // A final refusal (the subscription is gone) fails it whatever comes next: the next ones go on, to fail too.
      const goOn = report.final === true || (report.status_code !== null && report.status_code >= 200 && report.status_code < 300);
      this.unrecorded.set(delivery.delivery_id, goOn);
      this.report(report);
      if (!goOn) return;
    }
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
    let sent: SendOutcome;
    try {
      sent = await this.ports.send(target, delivery, event, this.state());
    } catch (e) {
      // A send that throws (it should return an outcome) is a failed try like any other: recorded, backed off.
      sent = { status: null, error: `the send failed: ${e instanceof Error ? e.message : String(e)}`.slice(0, 500) };
    }
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
   * Queues an outcome for the next commit: outcomes of deliveries sent close together (a commit's events to many
   * subscriptions, a subscription's run of them) are committed together, REPORT_BATCH_MS after the first.
   */
  private report(report: TryReport): void {
    this.reports.push(report);
    if (this.reports.length >= REPORT_BATCH_MAX) void this.drain();
    else this.reportTimer ??= setTimeout(() => void this.drain(), REPORT_BATCH_MS);
  }

  /** Commits the outcomes queued; the subscriptions they held up go on. */
  private async drain(): Promise<void> {
    if (this.reportTimer !== null) clearTimeout(this.reportTimer);
    this.reportTimer = null;
    if (this.reports.length === 0) return;
    const tries = this.reports;
    this.reports = [];
    const committed = await this.commit({ type: "record_webhook_tries", tries, max_tries: this.policy.maxTries, retry_base_ms: this.policy.retryBaseMs });
    // Not committed (the object broke): the deliveries stay pending in the WAL and are sent again.
    if (!committed) reportIncident(new Error(`${tries.length} webhook outcomes were not recorded; they will be sent again`), "task object: webhook outcomes");
    for (const t of tries) this.unrecorded.delete(t.delivery_id);
    this.refresh();
    if (this.dueAt !== null && this.dueAt <= Date.now()) void this.flush(Date.now());
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
}
