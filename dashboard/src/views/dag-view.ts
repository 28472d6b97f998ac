/**
 * @module The task's DAG as SVG: nodes coloured by normalized status (with a glyph and the status in words, so
 * colour is never the only cue), the native status in each node's <title>, optional steps dashed, delegated steps
 * badged, dependencies as arrows. Pan (drag), zoom (wheel, +/−), fit. The layout is cached by the DAG's shape,
 * so a status change only repaints; a big DAG draws only what meets the viewport.
 */
import { html } from "htm/preact";
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { clipText, type DagState, type NormalizedStatus, normalizedStepStatus, type Step } from "../../../src/core/browser.js";
import { type DagLayout, DAGRE_MAX_STEPS, edgePath, fitView, layoutDag, type PlacedNode, shapeKey, type View, visibleEdges, visibleNodes, zoomAt } from "../model/dag-layout.js";
import { delegateBadge } from "../model/step-details.js";

/** A glyph per normalized status: the shape cue that goes with the colour. */
export const STATUS_GLYPH: Record<NormalizedStatus, string> = {
  queued: "○",
  preparing: "◔",
  running: "▶",
  waiting_input: "✎",
  waiting_permission: "?",
  blocked: "■",
  paused: "Ⅱ",
  retrying: "↻",
  cancelling: "⊘",
  cancelled: "⊘",
  timed_out: "⌛",
  failed: "✕",
  lost: "!",
  completed: "✓",
  archived: "▤",
  stale: "~",
  unknown: "·",
};

/** Above this many drawn nodes edges are left out while zoomed far out (they would be a grey blur anyway). */
const MAX_DRAWN_EDGES = 4_000;
/** Below this zoom, labelled nodes lose their text (too small to read). */
const TEXT_MIN_ZOOM = 0.45;
/** From this zoom on, compact nodes show their status glyph and the start of their title. */
const COMPACT_TEXT_MIN_ZOOM = 2.5;

export interface DagViewProps {
  readonly state: DagState;
  readonly selected: string | null;
  readonly onSelect: (stepId: string) => void;
}

/**
 * The layout for the state's shape, recomputed only when the shape key changes. The key itself is read again only
 * when the WAL moved (a pan or a zoom re-renders without reading the steps).
 */
function useLayout(state: DagState): DagLayout {
  const cache = useRef<DagLayout | null>(null);
  const [steps, key] = useMemo(() => {
    const all = [...state.steps.values()];
    return [all, shapeKey(all)] as const;
  }, [state, state.last_wal_seq, state.steps.size]);
  if (cache.current === null || cache.current.key !== key) cache.current = layoutDag(steps, key);
  return cache.current;
}

/** The viewport's size, kept up to date. */
function useSize(ref: { current: Element | null }): { width: number; height: number } {
  const [size, setSize] = useState({ width: 800, height: 480 });
  useLayoutEffect(() => {
    const el = ref.current;
    if (el === null) return;
    const measure = () => {
      const r = el.getBoundingClientRect();
      if (r.width > 0 && r.height > 0) setSize((s) => (s.width === r.width && s.height === r.height ? s : { width: r.width, height: r.height }));
    };
    measure();
    if (typeof ResizeObserver === "undefined") return;
    const observer = new ResizeObserver(measure);
    observer.observe(el);
    return () => observer.disconnect();
  }, []);
  return size;
}

export function DagView({ state, selected, onSelect }: DagViewProps) {
  const layout = useLayout(state);
  const box = useRef<HTMLDivElement>(null);
  const { width, height } = useSize(box);
  // Fitted to the viewport until the viewer pans or zooms (then their view is kept; "Fit" returns to fitting).
  const [view, setView] = useState<View | null>(null);
  const current = view ?? fitView(layout, width, height);

  const svg = useRef<SVGSVGElement>(null);
  const viewRef = useRef(current);
  viewRef.current = current;
  // Wheel zoom needs a non-passive listener to keep the page from scrolling.
  useEffect(() => {
    const el = svg.current;
    if (el === null) return;
    const onWheel = (e: WheelEvent) => {
      e.preventDefault();
      const r = el.getBoundingClientRect();
      setView(zoomAt(viewRef.current, Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top));
    };
    el.addEventListener("wheel", onWheel, { passive: false });
    return () => el.removeEventListener("wheel", onWheel);
  }, []);
  const drag = useRef<{ x: number; y: number; view: View; moved: boolean } | null>(null);
  const onPointerDown = useCallback((e: PointerEvent) => {
    if (e.button !== 0) return;
    drag.current = { x: e.clientX, y: e.clientY, view: viewRef.current, moved: false };
  }, []);
  const onPointerMove = useCallback((e: PointerEvent) => {
    const d = drag.current;
    if (d === null) return;
    const dx = e.clientX - d.x;
    const dy = e.clientY - d.y;
    if (!d.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
    if (!d.moved) (e.currentTarget as Element).setPointerCapture?.(e.pointerId);
    d.moved = true;
    setView({ ...d.view, x: d.view.x + dx, y: d.view.y + dy });
  }, []);
  const onPointerUp = useCallback(() => {
    // A drag that moved is not a click on the node under it.
    const moved = drag.current?.moved ?? false;
    drag.current = null;
    if (moved) suppressClick.current = true;
  }, []);
  const suppressClick = useRef(false);
  const select = useCallback((id: string) => {
    if (suppressClick.current) {
      suppressClick.current = false;
      return;
    }
    onSelect(id);
  }, [onSelect]);

  const zoomBy = (f: number) => setView(zoomAt(current, f, width / 2, height / 2));
  // A small DAG is drawn whole (every node stays in the document and in the focus order); a big one by viewport.
  const virtual = layout.order.length > DAGRE_MAX_STEPS;
  const nodes = virtual ? visibleNodes(layout, current, width, height) : layout.order;
  const edges = virtual ? (nodes.length > MAX_DRAWN_EDGES ? [] : visibleEdges(layout, current, width, height)) : layout.edges;
  const labelled = layout.mode !== "compact" && current.k >= TEXT_MIN_ZOOM;
  // Small overview nodes get a short label once zoomed in far enough to read it.
  const tagged = layout.mode === "compact" && current.k >= COMPACT_TEXT_MIN_ZOOM;

  return html`
    <div class="dag">
      <div class="dag-tools" role="toolbar" aria-label="DAG view">
        <button type="button" onClick=${() => zoomBy(1.25)} aria-label="Zoom in">+</button>
        <button type="button" onClick=${() => zoomBy(0.8)} aria-label="Zoom out">−</button>
        <button type="button" onClick=${() => setView(null)}>Fit</button>
        <span class="dag-size">${layout.order.length} steps${layout.mode === "dagre" ? "" : ` · ${layout.mode === "compact" ? "overview" : "columns by depth"}${virtual ? `, ${nodes.length} drawn` : ""}`}</span>
      </div>
      <div class="dag-box" ref=${box}>
        <svg ref=${svg} role="group" aria-label="Task DAG" width="100%" height="100%" class=${`dag-svg mode-${layout.mode}`}
          onPointerDown=${onPointerDown} onPointerMove=${onPointerMove} onPointerUp=${onPointerUp} onPointerCancel=${onPointerUp}>
          <defs>
            <marker id="dag-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
              <path d="M0,0 L10,5 L0,10 z" class="dag-arrowhead" />
            </marker>
          </defs>
          <g transform=${`translate(${current.x},${current.y}) scale(${current.k})`}>
            <g class="dag-edges">
              ${edges.map((e) => html`<path key=${`${e.from}>${e.to}`} d=${edgePath(e.points)} marker-end=${layout.mode === "compact" ? undefined : "url(#dag-arrow)"} />`)}
            </g>
            <g class="dag-nodes">
              ${nodes.map((n) => html`<${DagNode} key=${n.id} node=${n} step=${state.steps.get(n.id)!} state=${state} labelled=${labelled} tagged=${tagged} selected=${selected === n.id} onSelect=${select} />`)}
            </g>
          </g>
        </svg>
      </div>
    </div>
  `;
}

interface DagNodeProps {
  readonly node: PlacedNode;
  readonly step: Step;
  readonly state: DagState;
  readonly labelled: boolean;
  readonly tagged: boolean;
  readonly selected: boolean;
  readonly onSelect: (id: string) => void;
}

function DagNode({ node, step, state, labelled, tagged, selected, onSelect }: DagNodeProps) {
  const status = normalizedStepStatus(state, step);
  const badge = delegateBadge(step);
  const x = node.x - node.width / 2;
  const y = node.y - node.height / 2;
  const onKey = (e: KeyboardEvent) => {
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      onSelect(step.step_id);
      return;
    }
    // Arrows move through the nodes in creation order (the document order of the drawn nodes).
    const move = e.key === "ArrowRight" || e.key === "ArrowDown" ? 1 : e.key === "ArrowLeft" || e.key === "ArrowUp" ? -1 : 0;
    if (move === 0) return;
    const self = e.currentTarget as SVGGElement;
    const next = (move === 1 ? self.nextElementSibling : self.previousElementSibling) as SVGGElement | null;
    if (next === null) return;
    e.preventDefault();
    next.focus();
  };
  const describe = `${step.title}: ${status.replace(/_/g, " ")} (native ${step.status})${step.required ? "" : ", optional"}${badge === null ? "" : `, ${badge}`}`;
  return html`
    <g data-step-id=${step.step_id} data-status=${status} data-native-status=${step.status} tabindex="0" role="button" aria-label=${describe}
      aria-pressed=${selected ? "true" : "false"}
      class=${`dag-node st-${status}${step.required ? "" : " optional"}${selected ? " selected" : ""}`}
      onClick=${() => onSelect(step.step_id)} onKeyDown=${onKey}>
      <title>${`${step.title}\nstatus: ${status}\nnative status: ${step.status}${step.required ? "" : "\noptional"}${badge === null ? "" : `\ndelegated: ${badge}`}`}</title>
      <rect x=${x} y=${y} width=${node.width} height=${node.height} rx=${labelled ? 6 : 2} />
      ${labelled
        ? html`
            <text x=${x + 10} y=${y + 20} class="dag-title">${clipText(step.title, badge === null ? 22 : 14)}</text>
            <text x=${x + 10} y=${y + 40} class="dag-status"><tspan class="glyph">${STATUS_GLYPH[status]}</tspan> ${status.replace(/_/g, " ")}${step.required ? "" : " · optional"}</text>
            ${badge === null ? null : html`<g class="dag-badge"><rect x=${x + node.width - 72} y=${y + 6} width="64" height="16" rx="8" /><text x=${x + node.width - 40} y=${y + 18} text-anchor="middle">${badge}</text></g>`}
          `
        : tagged
          ? html`<text x=${x + 1.5} y=${y + node.height - 3} class="dag-tag">${STATUS_GLYPH[status]} ${clipText(step.title, 9)}</text>`
          : null}
    </g>
  `;
}

