/** @module The floor and the reference routes: closed loops of one request at a fixed concurrency for a fixed time. */
import { performance } from "node:perf_hooks";
import type { Answer } from "../harness/http-client.js";
import { errorCount, firstErrorOf, type LatencyStats, round, stats } from "../harness/meter.js";
import { errorText, fmt } from "../harness/report.js";

/** One route at one concurrency. */
export interface LoadResult {
  route: string;
  concurrency: number;
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  latency: LatencyStats;
  first_error?: string;
  /** Throughput of each half when the result merges the measurement before and after the step scenarios. */
  halves_rps?: number[];
  /** Raw latencies, kept only in memory (dropped from the JSON). */
  samples?: number[];
}

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
  return { route, concurrency, requests: latencies.length, ...errors.fields(), seconds: round(seconds), rps: round(latencies.length / seconds, 1), latency: stats(latencies), samples: latencies };
}

/** Two measurements of one route and concurrency as one: requests and time summed, latencies pooled. */
export function mergeLoads(parts: LoadResult[]): LoadResult {
  const requests = parts.reduce((a, p) => a + p.requests, 0);
  const seconds = parts.reduce((a, p) => a + p.seconds, 0);
  const errors = parts.reduce((a, p) => a + p.errors, 0);
  const latency = stats(parts.flatMap((p) => p.samples ?? []));
  return { route: parts[0]!.route, concurrency: parts[0]!.concurrency, requests, errors, seconds: round(seconds), rps: round(requests / seconds, 1), latency, halves_rps: parts.map((p) => p.rps), ...firstErrorOf(parts) };
}

/** The progress line of one floor or reference measurement. */
export function loadLine(label: string, r: LoadResult): string {
  return `  ${label} c=${String(r.concurrency).padStart(2)}  ${fmt(r.rps).padStart(8)} req/s  p50 ${fmt(r.latency.p50_ms, 2)} ms  p99 ${fmt(r.latency.p99_ms, 2)} ms${r.errors > 0 ? `  errors ${r.errors}: ${r.first_error}` : ""}`;
}
