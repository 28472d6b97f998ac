/** @module DAG shape checks: unknown dependencies and cycles (every create and every update is cycle-checked). */
import { type RuntimeError, runtimeError } from "./errors.js";

/** The part of a step the shape checks read. */
export interface DagNode {
  readonly step_id: string;
  readonly depends_on_step_ids: readonly string[];
}

/** unknown_dependency when a step names a step that does not exist. */
export function findUnknownDependency(nodes: ReadonlyMap<string, DagNode>, check: Iterable<DagNode> = nodes.values()): RuntimeError | null {
  for (const node of check) {
    for (const dep of node.depends_on_step_ids) {
      if (!nodes.has(dep)) {
        return runtimeError("unknown_dependency", `step ${node.step_id} depends on unknown step ${dep}`, { step_id: node.step_id, depends_on_step_id: dep });
      }
    }
  }
  return null;
}

/** dependency_cycle when the dependencies loop (Kahn's algorithm, O(steps + edges)); names the steps on cycles. */
export function findCycle(nodes: ReadonlyMap<string, DagNode>): RuntimeError | null {
  const indegree = new Map<string, number>();
  const dependants = new Map<string, string[]>();
  for (const node of nodes.values()) {
    indegree.set(node.step_id, indegree.get(node.step_id) ?? 0);
    for (const dep of new Set(node.depends_on_step_ids)) {
      indegree.set(node.step_id, (indegree.get(node.step_id) ?? 0) + 1);
      const list = dependants.get(dep);
      if (list === undefined) dependants.set(dep, [node.step_id]);
      else list.push(node.step_id);
    }
  }
  const queue: string[] = [];
  for (const [id, n] of indegree) if (n === 0) queue.push(id);
  let seen = 0;
  while (queue.length > 0) {
    const id = queue.pop()!;
    seen += 1;
    for (const next of dependants.get(id) ?? []) {
      const n = indegree.get(next)! - 1;
      indegree.set(next, n);
      if (n === 0) queue.push(next);
    }
  }
  if (seen === nodes.size) return null;
  const onCycle = [...indegree].filter(([, n]) => n > 0).map(([id]) => id).slice(0, 20);
  return runtimeError("dependency_cycle", `the dependencies form a cycle (steps on or behind it: ${onCycle.join(", ")})`, { step_ids: onCycle });
}

/** The part of a step the delegate check reads: a child task's steps, which may delegate in turn. */
interface DelegatingNode extends DagNode {
  readonly delegate?: { readonly kind: string; readonly task?: { readonly steps: readonly DelegatingNode[] } } | null | undefined;
}

/**
 * A delegated step's child task is checked as a create would check it (duplicate steps, unknown dependencies,
 * cycles), at every depth, when the parent's step is written: a child that could never be created is refused now,
 * not when its step becomes ready. The error names the step whose delegate is wrong.
 */
export function findDelegateError(step: DelegatingNode, path: string = step.step_id): RuntimeError | null {
  const child = step.delegate?.kind === "task" ? step.delegate.task : undefined;
  if (child === undefined) return null;
  const nodes = new Map<string, DelegatingNode>();
  for (const node of child.steps) {
    if (nodes.has(node.step_id)) return runtimeError("duplicate_step", `the child task of step ${path} has step ${node.step_id} twice`, { step_id: path, child_step_id: node.step_id });
    nodes.set(node.step_id, node);
  }
  const shape = findUnknownDependency(nodes) ?? findCycle(nodes);
  if (shape !== null) return runtimeError(shape.code, `the child task of step ${path}: ${shape.message}`, { step_id: path, ...shape.details });
  for (const node of child.steps) {
    const inner = findDelegateError(node, `${path}/${node.step_id}`);
    if (inner !== null) return inner;
  }
  return null;
}
