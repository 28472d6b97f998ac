/**
 * @module The task view: the task's DAG, live from its event stream and rebuilt by the core from its WAL (or, with
 * the replay slider, as it was at an earlier wal_seq), the selected step's panel, its webhook deliveries, and the
 * WAL timeline.
 */
import { html } from "htm/preact";
import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import { type DagState, normalizedTaskStatus } from "../../../src/core/browser.js";
import { TaskModel } from "../model/task-model.js";
import { DagView } from "./dag-view.js";
import { DeliveryPanel, useWebhooks } from "./deliveries.js";
import { StepPanel } from "./step-panel.js";
import { Timeline } from "./timeline.js";
import type { ViewProps } from "./view-props.js";

/** Re-renders on the model's changes, at most once per animation frame (a burst of WAL events paints once). */
function useModelVersion(model: TaskModel): number {
  // A counter of paints, not the model's version: a new model's version may equal the last one's.
  const [paints, setPaints] = useState(0);
  useEffect(() => {
    let frame: number | null = null;
    const off = model.onChange(() => {
      if (frame !== null) return;
      frame = requestAnimationFrame(() => {
        frame = null;
        setPaints((n) => n + 1);
      });
    });
    return () => {
      off();
      if (frame !== null) cancelAnimationFrame(frame);
    };
  }, [model]);
  return paints;
}

/** Most WAL events one export request asks for (the server's page limit). */
const WAL_EXPORT_PAGE = 10_000;

export function TaskView({ viewer, client, taskId }: ViewProps & { taskId: string }) {
  const model = useMemo(() => new TaskModel(client, viewer.sessionId, taskId), [taskId]);
  // The WAL export, page by page, for the timeline's download (the token stays in the Authorization header).
  const readWalPage = useCallback((afterSeq: number) => client.walExport({ sessionId: viewer.sessionId, taskId }, { after_seq: afterSeq, limit: WAL_EXPORT_PAGE }), [taskId]);
  const version = useModelVersion(model);
  useEffect(() => {
    const abort = new AbortController();
    void model.follow(abort.signal);
    // A worker's token reads nothing session-wide; the other roles hear of webhook tries from the session.
    if (viewer.taskId === null) void model.followSession(abort.signal);
    return () => abort.abort();
  }, [model]);
  const webhooks = useWebhooks({ viewer, client });
  // null: live; a number: the DAG replayed up to that wal_seq.
  const [seekSeq, setSeekSeq] = useState<number | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  useEffect(() => {
    setSeekSeq(null);
    setSelected(null);
  }, [model]);
  // A replayed state depends only on the seq (earlier events never change); at or past the end it is the live one.
  const replayed = useMemo(() => (seekSeq === null || seekSeq >= model.walSeq ? null : model.stateAt(seekSeq)), [model, seekSeq, seekSeq !== null && seekSeq >= model.walSeq]);
  const state: DagState = replayed ?? model.state;
  const shownSeq = replayed === null ? model.walSeq : seekSeq!;

  useEffect(() => {
    if (selected === null) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape") return;
      const node = document.querySelector<SVGGElement>(`g[data-step-id="${CSS.escape(selected)}"]`);
      setSelected(null);
      node?.focus();
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, [selected]);
  const onSelect = useCallback((id: string) => setSelected((s) => (s === id ? null : id)), []);

  if (state.task === null && seekSeq === null) return html`<p role="status">${model.error ?? "Loading…"}</p>`;
  const task = state.task;
  return html`
    <section class="task-view" aria-labelledby="task-title" data-version=${version}>
      <header class="task-head">
        <h1 id="task-title">${task?.title ?? taskId}</h1>
        <p class="task-meta">
          ${task === null ? null : html`<span class=${`pill st-${normalizedTaskStatus(state)}`} data-task-status=${normalizedTaskStatus(state)}>${normalizedTaskStatus(state).replace(/_/g, " ")}</span>`}
          <span>wal_seq <strong data-shown-wal-seq>${shownSeq}</strong>${replayed === null ? html` <span class="live-tag">live</span>` : html` <span class="replay-tag">replay of ${model.walSeq}</span>`}</span>
          <span class="muted">${state.steps.size} steps</span>
          ${model.error === null ? null : html`<span class="error" role="alert">${model.error}</span>`}
        </p>
      </header>
      <div class=${`task-body${selected === null ? "" : " with-panel"}`}>
        <${DagView} key=${model.taskId} state=${state} selected=${selected} onSelect=${onSelect} />
        ${selected === null ? null : html`<${StepPanel} state=${state} stepId=${selected} onClose=${() => setSelected(null)} />`}
      </div>
      <${DeliveryPanel} state=${state} webhooks=${webhooks.webhooks} error=${webhooks.error} />
      <${Timeline} model=${model} seekSeq=${seekSeq} onSeek=${setSeekSeq} readWalPage=${readWalPage} />
    </section>
  `;
}
