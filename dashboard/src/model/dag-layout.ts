/**
 * @module Where the task view draws each step: pure geometry from the DAG's shape (steps and their dependencies),
 * never from statuses, so a status change reuses the layout it already has (cached by `shapeKey`).
 *
 * Three levels of detail, by size: dagre's layered layout (rankdir LR) for a DAG small enough that dagre answers
 * quickly; above that, columns by rank (longest dependency path), one ordering sweep by the predecessors' places,
 * labelled nodes; above `COMPACT_MIN_STEPS`, the same columns with small unlabelled nodes. Dagre's cost grows
 * much faster than the DAG (seconds for 1,000 steps with long edges), the rank layout is linear.
 */
import { Graph, layout as dagreLayout } from "@dagrejs/dagre";

/** The part of a step the layout reads. */
export interface ShapeNode {
  readonly step_id: string;
  readonly depends_on_step_ids: readonly string[];
}

export interface Point {
  readonly x: number;
  readonly y: number;
}

/** A placed step: (x, y) is its centre. */
export interface PlacedNode {
  readonly id: string;
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
  /** Its longest dependency path (0: depends on nothing known). */
  readonly rank: number;
  /** Creation order among the steps laid out. */
  readonly index: number;
}

/** A dependency drawn from `from` (the dependency) to `to` (the step that waits for it). */
export interface PlacedEdge {
  readonly from: string;
  readonly to: string;
  readonly points: readonly Point[];
}

/** How the DAG is drawn: `dagre` and `ranks` with labels, `compact` as small unlabelled rects. */
export type LayoutMode = "dagre" | "ranks" | "compact";

export interface DagLayout {
  readonly mode: LayoutMode;
  readonly key: string;
  readonly nodes: ReadonlyMap<string, PlacedNode>;
  /** Nodes in creation order (the order of focus). */
  readonly order: readonly PlacedNode[];
  readonly edges: readonly PlacedEdge[];
  readonly width: number;
  readonly height: number;
}

/** At most this many steps go through dagre. */
export const DAGRE_MAX_STEPS = 300;
/** From this many steps on, nodes are small unlabelled rects. */
export const COMPACT_MIN_STEPS = 2_000;

export const NODE_WIDTH = 180;
export const NODE_HEIGHT = 52;
const GAP_X = 70;
const GAP_Y = 18;
export const COMPACT_WIDTH = 28;
export const COMPACT_HEIGHT = 10;
const COMPACT_GAP_X = 22;
const COMPACT_GAP_Y = 4;
const MARGIN = 20;

/**
 * A key that changes exactly when the DAG's shape does: a step or a dependency added or removed (creation order
 * included, since it orders the layout). Statuses, titles and everything else leave it as it is.
 */
export function shapeKey(steps: Iterable<ShapeNode>): string {
  const parts: string[] = [];
  for (const s of steps) parts.push(s.depends_on_step_ids.length === 0 ? s.step_id : `${s.step_id}<${s.depends_on_step_ids.join(",")}`);
  return parts.join("|");
}

/**
 * Each step's rank: the length of its longest path of dependencies (Kahn's order, O(steps + edges)). Unknown
 * dependencies are ignored; a step on a cycle (the runtime refuses them, but a view must not hang) goes one
 * column after the last.
 */
export function ranksOf(steps: readonly ShapeNode[]): Map<string, number> {
  const ids = new Set(steps.map((s) => s.step_id));
  const indegree = new Map<string, number>();
  const dependants = new Map<string, string[]>();
  for (const s of steps) {
    let n = 0;
    for (const dep of new Set(s.depends_on_step_ids)) {
      if (!ids.has(dep) || dep === s.step_id) continue;
      n += 1;
      const list = dependants.get(dep);
      if (list === undefined) dependants.set(dep, [s.step_id]);
      else list.push(s.step_id);
    }
    indegree.set(s.step_id, n);
  }
  const rank = new Map<string, number>();
  const queue: string[] = [];
  for (const s of steps) if (indegree.get(s.step_id) === 0) {
    queue.push(s.step_id);
    rank.set(s.step_id, 0);
  }
  let max = 0;
  for (let head = 0; head < queue.length; head++) {
    const id = queue[head]!;
    const r = rank.get(id)!;
    for (const next of dependants.get(id) ?? []) {
      if ((rank.get(next) ?? -1) < r + 1) rank.set(next, r + 1);
      max = Math.max(max, r + 1);
      const n = indegree.get(next)! - 1;
      indegree.set(next, n);
      if (n === 0) queue.push(next);
    }
  }
  for (const s of steps) if (indegree.get(s.step_id)! > 0) rank.set(s.step_id, max + 1);
  return rank;
}

/** Lays the DAG out left to right at the level of detail its size calls for. */
export function layoutDag(steps: readonly ShapeNode[], key: string = shapeKey(steps)): DagLayout {
  if (steps.length <= DAGRE_MAX_STEPS) return layoutWithDagre(steps, key);
  return layoutByRanks(steps, key, steps.length >= COMPACT_MIN_STEPS ? "compact" : "ranks");
}

/** Dagre's layered layout, rankdir LR; edges follow dagre's routed points. */
export function layoutWithDagre(steps: readonly ShapeNode[], key: string = shapeKey(steps)): DagLayout {
  const g = new Graph();
  g.setGraph({ rankdir: "LR", nodesep: GAP_Y, ranksep: GAP_X, marginx: MARGIN, marginy: MARGIN });
  g.setDefaultEdgeLabel(() => ({}));
  const ids = new Set<string>();
  for (const s of steps) {
    g.setNode(s.step_id, { width: NODE_WIDTH, height: NODE_HEIGHT });
    ids.add(s.step_id);
  }
  for (const s of steps) for (const dep of s.depends_on_step_ids) if (ids.has(dep) && dep !== s.step_id) g.setEdge(dep, s.step_id);
  dagreLayout(g);
  const rank = ranksOf(steps);
  const order: PlacedNode[] = steps.map((s, index) => {
    const n = g.node(s.step_id) as { x: number; y: number };
    return { id: s.step_id, x: n.x, y: n.y, width: NODE_WIDTH, height: NODE_HEIGHT, rank: rank.get(s.step_id) ?? 0, index };
  });
  const edges: PlacedEdge[] = g.edges().map((e) => ({ from: e.v, to: e.w, points: ((g.edge(e) as { points?: Point[] }).points ?? []).map((p) => ({ x: p.x, y: p.y })) }));
  const label = g.graph() as { width?: number; height?: number };
  return finish("dagre", key, order, edges, label.width, label.height);
}

/**
 * Columns by rank; within a column, steps sorted by the mean place of their dependencies in the columns before
 * (one sweep, ties in creation order), which keeps most edges short without dagre's crossing minimisation.
 */
export function layoutByRanks(steps: readonly ShapeNode[], key: string = shapeKey(steps), mode: "ranks" | "compact" = "ranks"): DagLayout {
  const [w, h, gx, gy] = mode === "compact" ? [COMPACT_WIDTH, COMPACT_HEIGHT, COMPACT_GAP_X, COMPACT_GAP_Y] : [NODE_WIDTH, NODE_HEIGHT, GAP_X, GAP_Y];
  const rank = ranksOf(steps);
  const columns: number[][] = [];
  steps.forEach((s, i) => {
    const r = rank.get(s.step_id)!;
    (columns[r] ??= []).push(i);
  });
  const place = new Map<string, number>();
  const indexOf = new Map(steps.map((s, i) => [s.step_id, i]));
  for (const column of columns) {
    if (column === undefined) continue;
    const weight = new Map<number, number>();
    for (const i of column) {
      let sum = 0;
      let n = 0;
      for (const dep of steps[i]!.depends_on_step_ids) {
        const p = place.get(dep);
        if (p !== undefined) {
          sum += p;
          n += 1;
        }
      }
      weight.set(i, n === 0 ? Number.POSITIVE_INFINITY : sum / n);
    }
    column.sort((a, b) => {
      const d = weight.get(a)! - weight.get(b)!;
      return Number.isNaN(d) || d === 0 ? a - b : d;
    });
    column.forEach((i, p) => place.set(steps[i]!.step_id, p));
  }
  const tallest = columns.reduce((m, c) => Math.max(m, c?.length ?? 0), 1);
  const order: PlacedNode[] = new Array(steps.length);
  columns.forEach((column, r) => {
    if (column === undefined) return;
    // Shorter columns are centred on the tallest one.
    const offset = ((tallest - column.length) * (h + gy)) / 2;
    column.forEach((i, p) => {
      order[i] = { id: steps[i]!.step_id, x: MARGIN + r * (w + gx) + w / 2, y: MARGIN + offset + p * (h + gy) + h / 2, width: w, height: h, rank: r, index: i };
    });
  });
  const edges: PlacedEdge[] = [];
  for (const s of steps) {
    const to = order[indexOf.get(s.step_id)!]!;
    for (const dep of new Set(s.depends_on_step_ids)) {
      const fi = indexOf.get(dep);
      if (fi === undefined || dep === s.step_id) continue;
      const from = order[fi]!;
      edges.push({ from: dep, to: s.step_id, points: [{ x: from.x + from.width / 2, y: from.y }, { x: to.x - to.width / 2, y: to.y }] });
    }
  }
  return finish(mode, key, order, edges);
}

function finish(mode: LayoutMode, key: string, order: PlacedNode[], edges: PlacedEdge[], width?: number, height?: number): DagLayout {
  let right = 0;
  let bottom = 0;
  for (const n of order) {
    right = Math.max(right, n.x + n.width / 2);
    bottom = Math.max(bottom, n.y + n.height / 2);
  }
  return {
    mode,
    key,
    nodes: new Map(order.map((n) => [n.id, n])),
    order,
    edges,
    width: Math.max(width ?? 0, right + MARGIN),
    height: Math.max(height ?? 0, bottom + MARGIN),
  };
}

/** A pan and zoom: a layout point p is drawn at (p.x * k + x, p.y * k + y). */
export interface View {
  readonly x: number;
  readonly y: number;
  readonly k: number;
}

export const MIN_ZOOM = 0.01;
export const MAX_ZOOM = 4;

/** The view that shows the whole layout in a `width` × `height` viewport (never zoomed in past 1). */
export function fitView(layout: Pick<DagLayout, "width" | "height">, width: number, height: number): View {
  const k = clamp(Math.min(width / Math.max(1, layout.width), height / Math.max(1, layout.height), 1), MIN_ZOOM, MAX_ZOOM);
  return { k, x: (width - layout.width * k) / 2, y: (height - layout.height * k) / 2 };
}

/** Zooms by `factor` keeping the viewport point (px, py) where it is. */
export function zoomAt(view: View, factor: number, px: number, py: number): View {
  const k = clamp(view.k * factor, MIN_ZOOM, MAX_ZOOM);
  const f = k / view.k;
  return { k, x: px - (px - view.x) * f, y: py - (py - view.y) * f };
}

/** The layout's rectangle a viewport shows, grown by `margin` viewport pixels on each side. */
export function visibleRect(view: View, width: number, height: number, margin = 0): { x0: number; y0: number; x1: number; y1: number } {
  return { x0: (-margin - view.x) / view.k, y0: (-margin - view.y) / view.k, x1: (width + margin - view.x) / view.k, y1: (height + margin - view.y) / view.k };
}

/** The nodes that meet the viewport (in creation order): only these are drawn in a big DAG. */
export function visibleNodes(layout: DagLayout, view: View, width: number, height: number, margin = 50): PlacedNode[] {
  const r = visibleRect(view, width, height, margin);
  return layout.order.filter((n) => n.x + n.width / 2 >= r.x0 && n.x - n.width / 2 <= r.x1 && n.y + n.height / 2 >= r.y0 && n.y - n.height / 2 <= r.y1);
}

/** The edges whose bounding box meets the viewport. */
export function visibleEdges(layout: DagLayout, view: View, width: number, height: number, margin = 50): PlacedEdge[] {
  const r = visibleRect(view, width, height, margin);
  return layout.edges.filter((e) => {
    let x0 = Infinity;
    let y0 = Infinity;
    let x1 = -Infinity;
    let y1 = -Infinity;
    for (const p of e.points) {
      x0 = Math.min(x0, p.x);
      y0 = Math.min(y0, p.y);
      x1 = Math.max(x1, p.x);
      y1 = Math.max(y1, p.y);
    }
    return x1 >= r.x0 && x0 <= r.x1 && y1 >= r.y0 && y0 <= r.y1;
  });
}

/** An SVG path through an edge's points. */
export function edgePath(points: readonly Point[]): string {
  return points.map((p, i) => `${i === 0 ? "M" : "L"}${round(p.x)},${round(p.y)}`).join(" ");
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}

function clamp(n: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, n));
}
