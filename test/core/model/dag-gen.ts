/** @module Random acyclic step DAGs for the model tests: small ones from fast-check (they shrink), big ones from a seed. */
import fc from "fast-check";
import type { RetryPolicy } from "../../../src/core/index.js";

/** A step as `create_task` takes it. */
export interface StepIn {
  step_id: string;
  title: string;
  summary: string;
  depends_on_step_ids: string[];
  required?: boolean;
  worker_pool_id?: string;
  retry_policy?: RetryPolicy;
  delegate?: Record<string, unknown>;
}

/** The worker pools the model uses ("default" is the core's default). */
export const POOLS = ["default", "gpu"] as const;

/**
 * Retry policies the model gives steps and tasks: an immediate retry, a short backoff with a cap, a long one whose
 * non-retryable reason is the one the model's failures give ("because"), and a single attempt (exhausted at once).
 */
export const POLICIES: readonly RetryPolicy[] = [
  { max_attempts: 2, initial_interval_ms: 0, backoff_coefficient: 1, max_interval_ms: 0 },
  { max_attempts: 3, initial_interval_ms: 1_000, backoff_coefficient: 2, max_interval_ms: 3_000 },
  { max_attempts: 3, initial_interval_ms: 5_000, backoff_coefficient: 3, max_interval_ms: 60_000, non_retryable_reasons: ["because"] },
  { max_attempts: 1, initial_interval_ms: 1_000, backoff_coefficient: 1, max_interval_ms: 1_000 },
];

/**
 * Delegates the model gives steps: a child task, an A2A peer with the default timeout, and a peer with a short one
 * (so deadlines pass within a sequence).
 */
export const DELEGATES: readonly Record<string, unknown>[] = [
  { kind: "task", task: { title: "Child", steps: [{ step_id: "c1", title: "C1", summary: "", depends_on_step_ids: [] }] } },
  { kind: "a2a", agent_card_url: "https://peer.example/.well-known/agent-card.json" },
  { kind: "a2a", agent_card_url: "https://peer.example/.well-known/agent-card.json", message: "Do it", timeout_ms: 5_000 },
];

/** The shapes a seeded DAG can take. */
export const SHAPES = ["random", "wide", "layered", "chain"] as const;
/** A seeded DAG shape. */
export type Shape = (typeof SHAPES)[number];

/** A small deterministic PRNG (mulberry32): the same seed gives the same DAG. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function makeStep(i: number, deps: number[], gpu: boolean, optional: boolean, policy?: RetryPolicy, delegate?: Record<string, unknown>): StepIn {
  const step: StepIn = { step_id: `s${i}`, title: `Step ${i}`, summary: `Do step ${i}`, depends_on_step_ids: deps.map((d) => `s${d}`) };
  if (policy !== undefined) step.retry_policy = policy;
  if (delegate !== undefined) step.delegate = delegate;
  if (gpu) step.worker_pool_id = "gpu";
  else if (i % 7 === 3) step.worker_pool_id = "default"; // sometimes explicit, sometimes defaulted
  if (optional) step.required = false;
  else if (i % 5 === 1) step.required = true;
  return step;
}

/** One small DAG step: dependencies are picked among the steps before it, so the DAG is acyclic by construction. */
const stepSpecArb = fc.record({
  deps: fc.array(fc.nat(), { maxLength: 3 }),
  gpu: fc.nat(9).map((n) => n < 2),
  optional: fc.nat(9).map((n) => n < 2),
  /** About a third of the steps carry a retry policy of their own. */
  policy: fc.nat(11).map((n) => (n < POLICIES.length ? POLICIES[n] : undefined)),
  /** About one step in six is delegated. */
  delegate: fc.nat(17).map((n) => (n < DELEGATES.length ? DELEGATES[n] : undefined)),
});

/** Small DAGs (0..maxSteps steps) that shrink towards fewer steps and fewer edges; listed forwards or backwards. */
export function smallDagArb(maxSteps: number): fc.Arbitrary<StepIn[]> {
  return fc.record({ specs: fc.array(stepSpecArb, { maxLength: maxSteps }), reversed: fc.boolean() }).map(({ specs, reversed }) => {
    // Duplicate dependency ids are kept on purpose: create_task de-duplicates them.
    const steps = specs.map((s, i) => makeStep(i, i === 0 ? [] : s.deps.map((d) => d % i), s.gpu, s.optional, s.policy, s.delegate));
    return reversed ? steps.reverse() : steps;
  });
}

/** A DAG of `n` steps of the given shape, fully determined by `seed`. */
export function seededDag(n: number, shape: Shape, seed: number): StepIn[] {
  const rnd = prng(seed);
  const int = (k: number) => Math.floor(rnd() * k);
  const steps: StepIn[] = [];
  const width = Math.max(2, Math.round(Math.sqrt(n)));
  const roots = Math.max(1, n - Math.max(1, Math.floor(n / 20)));
  for (let i = 0; i < n; i++) {
    const deps: number[] = [];
    switch (shape) {
      case "random": {
        const k = i === 0 ? 0 : int(4);
        // Mostly near neighbours (long chains), sometimes anywhere earlier (long edges).
        for (let j = 0; j < k; j++) deps.push(rnd() < 0.7 ? i - 1 - int(Math.min(i, 8)) : int(i));
        break;
      }
      case "wide":
        // Many independent roots, then a few fan-ins over random roots, the last over many.
        if (i >= roots) {
          const k = i === n - 1 ? Math.min(roots, 200) : 1 + int(8);
          for (let j = 0; j < k; j++) deps.push(int(roots));
        }
        break;
      case "layered":
        if (i >= width) {
          const layerStart = Math.floor(i / width) * width - width;
          const k = 1 + int(3);
          for (let j = 0; j < k; j++) deps.push(layerStart + int(width));
        }
        break;
      case "chain":
        if (i > 0) deps.push(i - 1);
        break;
    }
    // The policy and the delegate come from the index, not the PRNG, so a seed still gives the DAG it always gave.
    steps.push(makeStep(i, [...new Set(deps)], rnd() < 0.2, rnd() < 0.15, i % 9 === 4 ? POLICIES[i % POLICIES.length] : undefined, i % 29 === 6 ? DELEGATES[i % DELEGATES.length] : undefined));
  }
  return steps;
}

/** Medium seeded DAGs: a few dozen to `maxSteps` steps of every shape. */
export function seededDagArb(minSteps: number, maxSteps: number): fc.Arbitrary<StepIn[]> {
  return fc
    .record({ n: fc.integer({ min: minSteps, max: maxSteps }), shape: fc.constantFrom(...SHAPES), seed: fc.integer() })
    .map(({ n, shape, seed }) => seededDag(n, shape, seed));
}
