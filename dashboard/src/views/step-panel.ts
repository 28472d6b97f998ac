/** @module The step panel: everything known of the selected step at the wal_seq shown (see model/step-details.ts). */
import { html } from "htm/preact";
import { useEffect, useRef } from "preact/hooks";
import type { DagState } from "../../../src/core/browser.js";
import { taskHref } from "../route.js";
import { stepDetails } from "../model/step-details.js";
import { STATUS_GLYPH } from "./dag-view.js";

export interface StepPanelProps {
  readonly state: DagState;
  readonly stepId: string;
  readonly onClose: () => void;
}

export function StepPanel({ state, stepId, onClose }: StepPanelProps) {
  const d = stepDetails(state, stepId);
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), [stepId]);
  const close = html`<button type="button" class="close" onClick=${onClose} aria-label="Close step panel">×</button>`;
  if (d === null) {
    return html`<aside class="step-panel" aria-label=${`Step ${stepId}`}>${close}<h2 ref=${heading} tabindex="-1">${stepId}</h2><p>This step does not exist at the wal_seq shown.</p></aside>`;
  }
  return html`
    <aside class="step-panel" aria-label=${`Step ${stepId}`}>
      ${close}
      <h2 ref=${heading} tabindex="-1">${d.title}</h2>
      <p class="step-id"><code>${d.stepId}</code></p>
      <dl class="facts">
        <dt>Status</dt><dd><span class=${`pill st-${d.status}`} data-panel-status=${d.status}>${STATUS_GLYPH[d.status]} ${d.status.replace(/_/g, " ")}</span> <span class="muted">native: ${d.nativeStatus}</span>${d.statusReason === null ? null : html` · ${d.statusReason}`}</dd>
        <dt>Required</dt><dd>${d.required ? "required" : "optional"}</dd>
        <dt>Pool</dt><dd><code>${d.pool}</code></dd>
        <dt>Depends on</dt><dd>${d.dependsOn.length === 0 ? "nothing" : d.dependsOn.map((id, i) => html`${i > 0 ? ", " : ""}<code>${id}</code>`)}</dd>
        ${d.claimedBy === null ? null : html`<dt>Held by</dt><dd><code>${d.claimedBy.agentId}</code>${d.claimedBy.runId === null ? null : html` run <code>${d.claimedBy.runId}</code>`}${d.claimedBy.leaseExpiresAt === null ? null : html` · lease until ${time(d.claimedBy.leaseExpiresAt)}`}</dd>`}
        ${d.resultSummary === null ? null : html`<dt>Result</dt><dd>${d.resultSummary}</dd>`}
        <dt>Artifacts</dt><dd>${d.artifacts.length === 0 ? "none" : html`<ul class="plain">${d.artifacts.map((a) => html`<li><code>${a}</code></li>`)}</ul>`}</dd>
      </dl>
      ${d.summary === "" ? null : html`<p class="summary">${d.summary}</p>`}
      ${d.updatedAfterDispatch || d.changedSinceDispatch.length > 0
        ? html`<section aria-label="Updated after dispatch" class="changed">
            <h3>Updated after dispatch</h3>
            ${d.changedSinceDispatch.length === 0
              ? html`<p>The step was changed while a run held it.</p>`
              : html`<table><thead><tr><th scope="col">Field</th><th scope="col">At dispatch</th><th scope="col">Now</th></tr></thead><tbody>
                  ${d.changedSinceDispatch.map((c) => html`<tr data-changed-field=${c.field}><th scope="row">${c.field}</th><td>${c.atDispatch}</td><td>${c.now}</td></tr>`)}
                </tbody></table>`}
          </section>`
        : null}
      ${d.openActions.length === 0
        ? null
        : html`<section aria-label="Step actions"><h3>Open actions</h3><ul class="plain">
            ${d.openActions.map((a) => html`<li data-panel-action-id=${a.actionId}><strong>${a.kind === "approval" ? "Approval" : "Input"}</strong>: ${a.prompt} <span class="muted">(expires ${time(a.expiresAt)}; answer it in the <a href="#/">session inbox</a>)</span></li>`)}
          </ul></section>`}
      ${d.retry === null
        ? null
        : html`<section aria-label="Retry"><h3>Retry</h3><p>${d.retry.attempts}${d.retry.maxAttempts === null ? "" : ` of ${d.retry.maxAttempts}`} attempts under the policy${d.retry.retryAt === null ? "" : html` · next try at ${time(d.retry.retryAt)}`}</p></section>`}
      ${d.delegation === null
        ? null
        : html`<section aria-label="Delegation"><h3>Delegated: ${d.delegation.kind === "task" ? "child task" : "A2A peer"}</h3><dl class="facts">
            ${d.delegation.childTaskId === null ? null : html`<dt>Child task</dt><dd><a href=${taskHref(d.delegation.childTaskId)}>${d.delegation.childTaskId}</a></dd>`}
            ${d.delegation.agentCardRef === null ? null : html`<dt>Agent Card</dt><dd><code>${d.delegation.agentCardRef}</code></dd>`}
            ${d.delegation.remoteTaskId === null ? null : html`<dt>Remote task</dt><dd><code>${d.delegation.remoteTaskId}</code>${d.delegation.remoteContextId === null ? null : html` · context <code>${d.delegation.remoteContextId}</code>`}</dd>`}
            ${d.delegation.remoteStatus === null ? null : html`<dt>Remote status</dt><dd>${d.delegation.remoteStatus}</dd>`}
            <dt>Delegation</dt><dd>${d.delegation.status ?? "not started"}${d.delegation.outcome === null ? "" : ` (${d.delegation.outcome})`}</dd>
            ${d.delegation.remoteArtifactRefs.length === 0 ? null : html`<dt>Remote artifacts</dt><dd>${d.delegation.remoteArtifactRefs.join(", ")}</dd>`}
          </dl></section>`}
      <section aria-label="Attempts">
        <h3>Attempts (${d.attempts.length})</h3>
        ${d.attempts.length === 0
          ? html`<p class="muted">No attempt yet.</p>`
          : html`<ol class="attempts">
              ${d.attempts.map((a) => html`<li data-attempt-id=${a.attemptId} data-ended=${a.ended ?? "active"} class=${a.current ? "current" : ""}>
                <div><strong>#${a.ordinal}</strong> <span class=${`pill st-${a.normalized}`}>${STATUS_GLYPH[a.normalized]} ${a.ended ?? "active"}</span>${a.current ? html` <span class="muted">current</span>` : null}</div>
                <div class="muted">run <code>${a.runId}</code> · agent <code>${a.agentId}</code></div>
                <div class="muted">${time(a.startedAt)} → ${a.endedAt === null ? "…" : time(a.endedAt)}</div>
                ${a.resultSummary === null ? null : html`<div>${a.resultSummary}</div>`}
                ${a.lastError === null ? null : html`<div class="error">${a.lastError}</div>`}
              </li>`)}
            </ol>`}
      </section>
    </aside>
  `;
}

function time(iso: string): string {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? iso : new Date(t).toLocaleString();
}
