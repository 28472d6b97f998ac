/** Where the task view draws each step: dagre left to right for small DAGs, columns by depth for big ones. */
import { describe, expect, it } from "vitest";
import {
  COMPACT_MIN_STEPS,
  DAGRE_MAX_STEPS,
  edgePath,
  fitView,
  layoutByRanks,
  layoutDag,
  ranksOf,
  type ShapeNode,
  shapeKey,
  visibleEdges,
  visibleNodes,
  zoomAt,
} from "../../dashboard/src/model/dag-layout.js";
import { Harness, step } from "../core/harness.js";
import { setStep } from "../core/rules/support.js";

const node = (id: string, deps: string[] = []): ShapeNode => ({ step_id: id, depends_on_step_ids: deps });
/** a → b, a → c, b + c → d: a diamond. */
const diamond = [node("a"), node("b", ["a"]), node("c", ["a"]), node("d", ["b", "c"])];

/** n steps in layers of `width`, each depending on one or two steps of the layer before. */
function layered(n: number, width: number): ShapeNode[] {
  return Array.from({ length: n }, (_, i) => node(`s${i}`, i < width ? [] : [`s${i - width}`, ...(i % 3 === 0 ? [`s${i - width - (i % width === 0 ? 0 : 1)}`] : [])]));
}

describe("the DAG layout", () => {
  it("Should lay a small DAG out left to right with dagre, dependencies before the steps that wait for them", () => {
    const l = layoutDag(diamond);
    expect(l.mode).toBe("dagre");
    const [a, b, c, d] = ["a", "b", "c", "d"].map((id) => l.nodes.get(id)!);
    expect(a!.x).toBeLessThan(b!.x);
    expect(b!.x).toBe(c!.x);
    expect(b!.y).not.toBe(c!.y);
    expect(c!.x).toBeLessThan(d!.x);
    expect(l.edges.map((e) => `${e.from}>${e.to}`).sort()).toEqual(["a>b", "a>c", "b>d", "c>d"]);
    for (const e of l.edges) expect(e.points.length).toBeGreaterThanOrEqual(2);
    expect(l.width).toBeGreaterThanOrEqual(d!.x + d!.width / 2);
    expect(l.order.map((n) => n.id)).toEqual(["a", "b", "c", "d"]);
  });

  it("Should keep the shape key when only statuses change, and change it when a step or dependency is added", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"]), step("c")]);
    const key = shapeKey(h.state.steps.values());
    h.complete("a");
    h.ok(setStep("c", "running"), h.claimWith("c"));
    expect(h.state.steps.get("a")!.status).toBe("completed");
    expect(shapeKey(h.state.steps.values())).toBe(key);
    h.ok({ type: "update_task", ops: [{ op: "add_step", step: step("d", ["b"]) }] });
    const grown = shapeKey(h.state.steps.values());
    expect(grown).not.toBe(key);
    h.ok({ type: "update_task", ops: [{ op: "add_dependency", step_id: "d", depends_on_step_id: "c" }] });
    expect(shapeKey(h.state.steps.values())).not.toBe(grown);
  });

  it("Should rank each step by its longest dependency path, ignoring unknown dependencies and surviving a cycle", () => {
    expect(Object.fromEntries(ranksOf([node("a"), node("b", ["a"]), node("c", ["a", "b"]), node("d", ["ghost"])]))).toEqual({ a: 0, b: 1, c: 2, d: 0 });
    const loop = ranksOf([node("a"), node("x", ["y"]), node("y", ["x"])]);
    expect(loop.get("a")).toBe(0);
    expect(loop.get("x")).toBe(1);
    expect(loop.get("y")).toBe(1);
  });

  it("Should use columns by depth above dagre's size and small unlabelled nodes for a very big DAG", () => {
    expect(layoutDag(layered(DAGRE_MAX_STEPS + 1, 10)).mode).toBe("ranks");
    expect(layoutDag(layered(COMPACT_MIN_STEPS, 20)).mode).toBe("compact");
  });

  it("Should place all 5,000 steps of a big DAG in columns by rank, each column's steps apart", () => {
    const steps = layered(5_000, 25);
    const l = layoutDag(steps);
    expect(l.mode).toBe("compact");
    expect(l.nodes.size).toBe(5_000);
    const ranks = ranksOf(steps);
    const byColumn = new Map<number, number[]>();
    for (const n of l.order) {
      expect(Number.isFinite(n.x) && Number.isFinite(n.y)).toBe(true);
      expect(n.rank).toBe(ranks.get(n.id));
      const ys = byColumn.get(n.x) ?? [];
      ys.push(n.y);
      byColumn.set(n.x, ys);
    }
    // One x per rank, increasing with it.
    expect(byColumn.size).toBe(200);
    for (const n of l.order) for (const dep of steps[n.index]!.depends_on_step_ids) expect(l.nodes.get(dep)!.x).toBeLessThan(n.x);
    for (const ys of byColumn.values()) expect(new Set(ys).size).toBe(ys.length);
    expect(l.edges.length).toBe(steps.reduce((s, n) => s + new Set(n.depends_on_step_ids).size, 0));
  });

  it("Should order a column by where its dependencies are, so a chain stays on one row", () => {
    // Two independent chains: p0 → p1 and q0 → q1, created interleaved so creation order alone would cross them.
    const l = layoutByRanks([node("q0"), node("p0"), node("p1", ["p0"]), node("q1", ["q0"])]);
    expect(l.nodes.get("p1")!.y).toBe(l.nodes.get("p0")!.y);
    expect(l.nodes.get("q1")!.y).toBe(l.nodes.get("q0")!.y);
  });

  it("Should fit the layout in the viewport, and zoom around a point that stays put", () => {
    const l = layoutByRanks(layered(1_000, 10));
    const view = fitView(l, 800, 600);
    expect(l.width * view.k).toBeLessThanOrEqual(800 + 1e-6);
    expect(l.height * view.k).toBeLessThanOrEqual(600 + 1e-6);
    expect(fitView({ width: 100, height: 50 }, 800, 600).k).toBe(1);
    const zoomed = zoomAt(view, 2, 300, 200);
    expect(zoomed.k).toBeCloseTo(view.k * 2);
    // The layout point under (300, 200) is still under it.
    const before = { x: (300 - view.x) / view.k, y: (200 - view.y) / view.k };
    expect(before.x * zoomed.k + zoomed.x).toBeCloseTo(300);
    expect(before.y * zoomed.k + zoomed.y).toBeCloseTo(200);
  });

  it("Should draw only the nodes and edges that meet the viewport", () => {
    const l = layoutByRanks(layered(10_000, 50), undefined, "compact");
    const all = visibleNodes(l, fitView(l, 800, 600), 800, 600);
    expect(all.length).toBe(10_000);
    const close = { x: 0, y: 0, k: 2 };
    const some = visibleNodes(l, close, 800, 600, 0);
    expect(some.length).toBeGreaterThan(0);
    expect(some.length).toBeLessThan(200);
    for (const n of some) {
      expect(n.x * 2 + n.width).toBeGreaterThanOrEqual(0);
      expect((n.x - n.width / 2) * 2).toBeLessThanOrEqual(800);
      expect((n.y - n.height / 2) * 2).toBeLessThanOrEqual(600);
    }
    const edges = visibleEdges(l, close, 800, 600, 0);
    expect(edges.length).toBeGreaterThan(0);
    expect(edges.length).toBeLessThan(l.edges.length);
  });

  it("Should write an edge's points as an SVG path", () => {
    expect(edgePath([{ x: 1, y: 2 }, { x: 3.14159, y: 4 }])).toBe("M1,2 L3.1,4");
  });
});
