/** @module The floor and the reference routes (closed loops of one request at a fixed concurrency for a fixed time), and the interleaving that compares step scenarios with them. */
import { performance } from "node:perf_hooks";
import type { Answer } from "../harness/http-client.js";
import { errorCount, type LatencyStats, mergeRuns, round, stats } from "../harness/meter.js";
import { errorText, fmt } from "../harness/report.js";

/** One route at one concurrency; `halves_rps` when it merges the halves before and after the step scenarios; `samples` stay in memory. */
export interface LoadResult { route: string; concurrency: number; requests: number; errors: number; seconds: number; rps: number; latency: LatencyStats; first_error?: string; halves_rps?: number[]; samples?: { latency: number[] } }

/** `concurrency` loops call `op` back to back for `durationMs` (and at most `maxOps` calls in all). */
export async function closedLoop(route: string, concurrency: number, durationMs: number, maxOps: number, op: () => Promise<Answer>): Promise<LoadResult> {
  const latencies: number[] = [];
  let started = 0;
  const errors = errorCount();
  const t0 = performance.now();
  const end = t0 + durationMs;
  const loop = async () => {
    while (performance.now() < end && started < maxOps && errors.count < 100) {
      started++;
      try {
        const a = await op();
        if (a.status === 200) latencies.push(a.ms);
        else errors.note(`HTTP ${a.status}: ${String(typeof a.body === "string" ? a.body : JSON.stringify(a.body)).slice(0, 200)}`);
      } catch (e) {
        errors.note(errorText(e));
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const seconds = (performance.now() - t0) / 1000;
  return { route, concurrency, requests: latencies.length, ...errors.fields(), seconds: round(seconds), rps: round(latencies.length / seconds, 1), latency: stats(latencies), samples: { latency: latencies } };
}

/** A route: its name and one call. */
export interface Route { name: string; op: () => Promise<Answer> }

/** What the interleaving needs of a plan. */
export type InterleavePlan = Record<"floorMs" | "maxRequestsPerLevel" | "repeats" | "multiTasks", number>;

/**
 * At concurrency `c`: each route for half its time, then `repeats` rounds of every scenario on one task and on
 * `multiTasks` (their order rotated between repeats, so none always runs on a fresher machine), then the routes'
 * other half; so each comparison sees the same machine load. Returns each route's halves merged (requests and time
 * summed, latencies pooled) and each scenario's runs by `${name}${tasks}`, to pool.
 */
export async function interleaved<R>(c: number, routes: Route[], plan: InterleavePlan, scenarios: Record<string, (tasks: number) => Promise<R>>): Promise<{ loads: LoadResult[]; runs: Map<string, R[]> }> {
  const halves = new Map<string, LoadResult[]>(routes.map((r) => [r.name, []]));
  const measureRoutes = async () => {
    for (const r of routes) {
      const res = await closedLoop(r.name, c, plan.floorMs / 2, plan.maxRequestsPerLevel / 2, r.op);
      halves.get(r.name)!.push(res);
      console.log(`  ${r.name.padEnd(30)} c=${String(c).padStart(2)}  ${fmt(res.rps).padStart(8)} req/s  p50 ${fmt(res.latency.p50_ms, 2)} ms  p99 ${fmt(res.latency.p99_ms, 2)} ms${res.errors > 0 ? `  errors ${res.errors}: ${res.first_error}` : ""}`);
    }
  };
  await measureRoutes();
  const names = Object.keys(scenarios);
  const runs = new Map<string, R[]>();
  for (let repeat = 0; repeat < plan.repeats; repeat++) {
    for (const tasks of [1, plan.multiTasks]) {
      for (let k = 0; k < names.length; k++) {
        const name = names[(k + repeat) % names.length]!;
        const r = await scenarios[name]!(tasks);
        runs.set(`${name}${tasks}`, [...(runs.get(`${name}${tasks}`) ?? []), r]);
      }
    }
  }
  await measureRoutes();
  const loads = [...halves.values()].map((parts) => {
    const { samples: _, ...m } = mergeRuns(parts, ["concurrency"]);
    return { ...m, seconds: round(m.seconds), rps: round(m.requests / m.seconds, 1), halves_rps: parts.map((p) => p.rps) };
  });
  return { loads, runs };
}
