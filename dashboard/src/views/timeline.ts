/** @module The WAL timeline under the DAG: the task's events, filters, the replay slider and the WAL export. */
import { html } from "htm/preact";
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import type { TaskModel } from "../model/task-model.js";
import {
  clockOf,
  eventTypesOf,
  exportWalText,
  perFrame,
  positionOf,
  stepIdsOf,
  TASK_LEVEL,
  TIMELINE_PAGE,
  type TimelineFilter,
  type TimelineOrder,
  timelinePage,
  type WalExportPage,
  walFileName,
  windowShowing,
} from "../model/timeline-model.js";

/** What the task view gives the timeline: the model, the wal_seq shown (null: live), and how to move it. */
export interface TimelineProps {
  readonly model: TaskModel;
  readonly seekSeq: number | null;
  readonly onSeek: (walSeq: number | null) => void;
  /** Reads one page of the WAL export after `afterSeq` (the SDK's walExport: the token stays in the Authorization header). */
  readonly readWalPage: (afterSeq: number) => Promise<WalExportPage>;
}

/** Saves `text` as a file through a Blob URL (nothing with the token is ever put in a URL). */
function download(text: string, name: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: "application/jsonl" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.style.display = "none";
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function Timeline({ model, seekSeq, onSeek, readWalPage }: TimelineProps) {
  const [version, setVersion] = useState(model.version);
  useEffect(() => model.onChange(() => setVersion(model.version)), [model]);

  const [filter, setFilter] = useState<TimelineFilter>({ type: null, step: null });
  const [order, setOrder] = useState<TimelineOrder>("newest");
  const [view, setView] = useState({ start: 0, count: TIMELINE_PAGE });
  const [exporting, setExporting] = useState<"idle" | "busy" | "failed">("idle");
  const listRef = useRef<HTMLOListElement>(null);

  // The slider moves at once; the DAG is rebuilt at most once per frame, with the latest value.
  const [dragSeq, setDragSeq] = useState<number | null>(null);
  const seek = useMemo(() => perFrame<number | null>((n) => onSeek(n), (cb) => requestAnimationFrame(cb)), [onSeek]);
  useEffect(() => () => seek.cancel(), [seek]);
  // Once the seek asked for is the one shown, the slider follows seekSeq again.
  useEffect(() => setDragSeq((d) => (d === seekSeq ? null : d)), [seekSeq]);

  const events = model.events;
  const lastSeq = model.walSeq;
  const types = useMemo(() => eventTypesOf(events), [version, events]);
  const steps = useMemo(() => stepIdsOf(events), [version, events]);
  const page = useMemo(() => timelinePage(events, filter, order, view.count, view.start), [version, events, filter, order, view]);

  // Seeking to an event outside the rows shown moves the window to it, so the shown wal_seq is always highlighted.
  useEffect(() => {
    if (seekSeq === null) return;
    const position = positionOf(events, filter, order, seekSeq);
    if (position < 0) return;
    const next = windowShowing(position, view);
    if (next !== view) setView(next);
  }, [seekSeq, filter, order]);

  useLayoutEffect(() => {
    if (seekSeq === null) return;
    const list = listRef.current;
    const row = list?.querySelector<HTMLElement>(`li[data-wal-seq="${seekSeq}"]`);
    if (list === null || list === undefined || row === null || row === undefined) return;
    // Scroll only the list (never the page), and only when the row is out of its view.
    const top = row.offsetTop - list.offsetTop;
    if (top < list.scrollTop) list.scrollTop = top;
    else if (top + row.offsetHeight > list.scrollTop + list.clientHeight) list.scrollTop = top + row.offsetHeight - list.clientHeight;
  }, [seekSeq, page]);

  const changeFilter = (next: TimelineFilter) => {
    setFilter(next);
    setView({ start: 0, count: TIMELINE_PAGE });
  };
  const sliderValue = dragSeq ?? seekSeq ?? lastSeq;
  const onSlider = (e: Event) => {
    const n = Number((e.currentTarget as HTMLInputElement).value);
    setDragSeq(n);
    seek.push(n);
  };
  const goLive = () => {
    seek.cancel();
    setDragSeq(null);
    onSeek(null);
  };
  const exportWal = async () => {
    setExporting("busy");
    try {
      const text = await exportWalText(readWalPage);
      download(text, walFileName(model.taskId));
      setExporting("idle");
    } catch {
      setExporting("failed");
    }
  };
  const onRowKey = (e: KeyboardEvent, walSeq: number) => {
    if (e.key !== "Enter" && e.key !== " ") return;
    e.preventDefault();
    onSeek(walSeq);
  };

  return html`
    <section aria-label="WAL timeline" class="timeline">
      <h2 class="timeline-title">WAL timeline</h2>
      <div class="timeline-replay">
        <label class="timeline-slider">
          <span>Replay</span>
          <input
            type="range"
            min="1"
            max=${Math.max(1, lastSeq)}
            step="1"
            value=${Math.max(1, sliderValue)}
            disabled=${lastSeq === 0}
            aria-label="Replay to wal_seq"
            aria-valuetext=${`wal_seq ${sliderValue} of ${lastSeq}`}
            onInput=${onSlider}
          />
        </label>
        <span class="timeline-at" aria-live="polite">${seekSeq === null && dragSeq === null ? `live · wal_seq ${lastSeq}` : `replay · wal_seq ${sliderValue} of ${lastSeq}`}</span>
        <button type="button" onClick=${goLive} aria-pressed=${seekSeq === null ? "true" : "false"}>Live</button>
        <button type="button" onClick=${exportWal} disabled=${exporting === "busy" || lastSeq === 0}>Export WAL</button>
        ${exporting === "failed" ? html`<span role="alert" class="timeline-error">The export failed.</span>` : null}
      </div>
      <div class="timeline-filters">
        <label>
          <span>Event type</span>
          <select aria-label="Event type" onChange=${(e: Event) => changeFilter({ ...filter, type: (e.currentTarget as HTMLSelectElement).value || null })}>
            <option value="" selected=${filter.type === null}>All types</option>
            ${types.map((t) => html`<option value=${t} selected=${filter.type === t}>${t}</option>`)}
          </select>
        </label>
        <label>
          <span>Step</span>
          <select aria-label="Step" onChange=${(e: Event) => {
            const v = (e.currentTarget as HTMLSelectElement).value;
            changeFilter({ ...filter, step: v === "*" ? null : v });
          }}>
            <option value="*" selected=${filter.step === null}>All steps</option>
            <option value=${TASK_LEVEL} selected=${filter.step === TASK_LEVEL}>Task-level (no step)</option>
            ${steps.map((s) => html`<option value=${s} selected=${filter.step === s}>${s}</option>`)}
          </select>
        </label>
        <button type="button" onClick=${() => {
          setOrder(order === "newest" ? "oldest" : "newest");
          setView({ start: 0, count: TIMELINE_PAGE });
        }}>${order === "newest" ? "Newest first" : "Oldest first"}</button>
        <span class="timeline-count">${page.matched === events.length ? `${events.length} events` : `${page.matched} of ${events.length} events`}</span>
      </div>
      ${page.before > 0
        ? html`<button type="button" class="timeline-more" onClick=${() => setView({ start: Math.max(0, view.start - TIMELINE_PAGE), count: view.count + Math.min(TIMELINE_PAGE, view.start) })}>
            Show ${Math.min(TIMELINE_PAGE, page.before)} ${order === "newest" ? "newer" : "older"} (${page.before} above)
          </button>`
        : null}
      <ol class="timeline-list" ref=${listRef}>
        ${page.rows.map((row) => {
          const current = seekSeq === row.walSeq;
          return html`<li
            key=${row.walSeq}
            data-wal-seq=${row.walSeq}
            data-event-type=${row.type}
            class=${current ? "current" : undefined}
            aria-current=${current ? "step" : undefined}
            tabindex="0"
            title=${`Replay to wal_seq ${row.walSeq}`}
            onClick=${() => onSeek(row.walSeq)}
            onKeyDown=${(e: KeyboardEvent) => onRowKey(e, row.walSeq)}
          >
            <span class="tl-seq">${current ? "▶ " : ""}#${row.walSeq}</span>
            <time class="tl-time" datetime=${row.time} title=${row.time}>${clockOf(row.time)}</time>
            <span class="tl-type">${row.type}</span>
            <span class="tl-step">${row.stepId ?? "task"}</span>
            <span class="tl-actor">${row.actor}</span>
            <span class="tl-summary">${row.summary}</span>
          </li>`;
        })}
      </ol>
      ${page.rows.length === 0 ? html`<p class="timeline-empty">${events.length === 0 ? "No WAL events yet." : "No event matches these filters."}</p>` : null}
      ${page.remaining > 0
        ? html`<button type="button" class="timeline-more" onClick=${() => setView({ start: view.start, count: view.count + TIMELINE_PAGE })}>
            Show ${Math.min(TIMELINE_PAGE, page.remaining)} more (${page.remaining} ${order === "newest" ? "older" : "newer"})
          </button>`
        : null}
    </section>
  `;
}
