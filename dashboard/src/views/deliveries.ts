/**
 * @module Webhook deliveries in the dashboard: the task view's Delivery panel (each subscription's deliveries of
 * the task, at the wal_seq drawn) and the session view's Failed deliveries, per subscription, with a Retry per
 * row. Only the orchestrator reads the subscriptions (their URLs) and their delivery lists; every role sees the
 * task's panel, by subscription id.
 */
import { html } from "htm/preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import type { Webhook } from "../../../src/client/index.js";
import type { DagState } from "../../../src/core/browser.js";
import { canReadWebhooks, deliveryBadge, deliveryCounts, deliveryPanelRows } from "../model/delivery-model.js";
import { errorText, type FailedRow, FailedDeliveries, FAILED_PAGE, rowFacts, type WebhookGroup } from "../model/failed-deliveries.js";
import { ago, Coalescer, plural } from "../model/session-model.js";
import { taskHref } from "../route.js";
import type { ViewProps } from "./view-props.js";

/** The session's subscriptions, read once for the viewer who may (null otherwise, or until read). */
export function useWebhooks({ viewer, client }: ViewProps): { webhooks: Webhook[] | null; error: string | null } {
  const [read, setRead] = useState<{ webhooks: Webhook[] | null; error: string | null }>({ webhooks: null, error: null });
  useEffect(() => {
    if (!canReadWebhooks(viewer.role)) return;
    let live = true;
    client.listWebhooks(viewer.sessionId).then(
      (list) => live && setRead({ webhooks: list.webhooks, error: null }),
      (e: unknown) => live && setRead({ webhooks: null, error: errorText(e) }),
    );
    return () => {
      live = false;
    };
  }, [viewer.sessionId]);
  return read;
}

/** The task view's panel: a line per subscription owed any of the task's events, or a quiet line when none is. */
export function DeliveryPanel({ state, webhooks, error }: { state: DagState; webhooks: Webhook[] | null; error: string | null }) {
  const rows = deliveryPanelRows(state, webhooks);
  return html`<section class="deliveries" aria-labelledby="delivery-title">
    <h2 id="delivery-title">Delivery</h2>
    ${error === null ? null : html`<p class="form-error" role="alert">Could not read the webhooks: ${error}</p>`}
    ${rows.length === 0
      ? html`<p class="muted" data-no-deliveries>No webhook deliveries.</p>`
      : html`<table class="task-table delivery-table">
          <thead><tr><th scope="col">Subscription</th><th scope="col">State</th><th scope="col">Deliveries</th><th scope="col">Last status</th></tr></thead>
          <tbody>
            ${rows.map(
              (r) => html`<tr key=${r.webhookId} data-webhook-id=${r.webhookId} data-delivery-state=${r.state}>
                <td data-label="Subscription"><code>${r.webhookId}</code>${r.url === null ? null : html`<div class="url">${r.url}</div>`}${r.subscription === "disabled" ? html` <span class="muted small">disabled</span>` : null}</td>
                <td data-label="State"><span class="badge" data-status=${deliveryBadge(r.state)}>${r.state}</span></td>
                <td data-label="Deliveries" data-counts>${deliveryCounts(r)}</td>
                <td data-label="Last status" data-last-status>${r.lastStatus}</td>
              </tr>`,
            )}
          </tbody>
        </table>`}
  </section>`;
}

/** The session view's Failed deliveries; shown to the orchestrator, once the session has a subscription. */
export function FailedDeliveriesPanel(props: ViewProps & { pulse: number }) {
  if (!canReadWebhooks(props.viewer.role)) return null;
  return html`<${FailedDeliveryList} ...${props} />`;
}

function FailedDeliveryList({ viewer, client, pulse }: ViewProps & { pulse: number }) {
  const model = useMemo(() => new FailedDeliveries(client, viewer.sessionId), [viewer.sessionId]);
  const reader = useMemo(() => new Coalescer(() => model.read()), [model]);
  const [, setPaints] = useState(0);
  useEffect(() => model.onChange(() => setPaints((n) => n + 1)), [model]);
  useEffect(() => reader.trigger(), [reader, pulse]);
  if (model.error === null && (model.webhooks === null || model.webhooks.length === 0)) return null;
  const groups = model.groups().filter((g) => g.rows.length > 0);
  const failed = model.failedCount();
  const now = Date.now();
  const retry = (webhookId: string, deliveryId: string) => void model.retry(webhookId, deliveryId).then(() => reader.trigger());
  return html`<section class="deliveries" aria-label="Failed deliveries">
    <h2>Failed deliveries <span class="count-pill" data-failed-count>${model.webhooks === null ? "…" : failed}</span></h2>
    ${model.error === null ? null : html`<p class="form-error" role="alert">Could not read the webhook deliveries: ${model.error}</p>`}
    ${model.webhooks === null
      ? null
      : groups.length === 0
        ? html`<p class="muted">No failed deliveries to the session's ${plural(model.webhooks.length, "webhook")}.</p>`
        : groups.map((g) => html`<${DeliveryGroup} key=${g.webhook.webhook_id} group=${g} now=${now} onRetry=${retry} />`)}
  </section>`;
}

function DeliveryGroup({ group, now, onRetry }: { group: WebhookGroup; now: number; onRetry: (webhookId: string, deliveryId: string) => void }) {
  const { webhook } = group;
  return html`<div class="delivery-group" data-webhook-id=${webhook.webhook_id}>
    <h3><code>${webhook.webhook_id}</code> <span class="url">${webhook.url}</span>
      ${webhook.status === "disabled" ? html` <span class="badge" data-status="cancelled" title=${webhook.disabled_reason ?? ""}>disabled</span>` : null}</h3>
    <table class="task-table delivery-table">
      <thead><tr><th scope="col">Event</th><th scope="col">Task</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Updated</th><th scope="col">Status</th></tr></thead>
      <tbody>${group.rows.map((r) => html`<${DeliveryRow} key=${r.delivery.delivery_id} row=${r} now=${now} onRetry=${onRetry} />`)}</tbody>
    </table>
    ${group.more ? html`<p class="muted small">The newest ${FAILED_PAGE} failed deliveries; the API pages through the rest.</p>` : null}
  </div>`;
}

function DeliveryRow({ row, now, onRetry }: { row: FailedRow; now: number; onRetry: (webhookId: string, deliveryId: string) => void }) {
  const d = row.delivery;
  const facts = rowFacts(row);
  const label = row.phase === "retrying" ? "retrying…" : row.phase;
  return html`<tr data-delivery-id=${d.delivery_id} data-phase=${row.phase}>
    <td data-label="Event"><code>${d.event_type}</code></td>
    <td data-label="Task"><a href=${taskHref(d.task_id)}>${d.task_id}</a></td>
    <td data-label="Attempts" data-attempts>${facts.attempts}</td>
    <td data-label="Last answer">${facts.lastAnswer}${facts.lastError === null ? null : html`<div class="muted small">${facts.lastError}</div>`}</td>
    <td data-label="Updated"><time datetime=${d.updated_at} title=${d.updated_at}>${ago(d.updated_at, now)}</time></td>
    <td data-label="Status">
      <span class="badge" data-status=${deliveryBadge(row.phase === "retrying" ? "pending" : row.phase)}>${label}</span>
      ${row.phase === "failed"
        ? html` <button type="button" class="retry" aria-label=${`Retry ${d.event_type} for ${d.task_id}`} onClick=${() => onRetry(d.webhook_id, d.delivery_id)}>Retry</button>`
        : null}
      ${row.error === null ? null : html`<p class="form-error" role="alert">Retry refused: ${row.error}</p>`}
    </td>
  </tr>`;
}
