/**
 * @module Timed rounds of calls, shared by the scenarios that compare carriers call for call (bench:mcp, bench:a2a):
 * each client's calls back to back, latency with p95, CPU of this process and of the server's process group, and
 * rounds pooled into one figure.
 */
import { performance } from "node:perf_hooks";
import { cpuSnap, cpuUse, type CpuUse, errorCount, groupCpuMs, type LatencyStats, round, stats } from "./meter.js";
import { errorText } from "./report.js";

/** Latency statistics with the 95th percentile added (nearest rank). */
export type Latency = LatencyStats & { p95_ms: number };

/** Latency statistics of `samples` (ms), p95 included. */
export function latencyOf(samples: number[]): Latency {
  const sorted = Float64Array.from(samples).sort();
  const p95 = sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(0.95 * sorted.length) - 1))]!;
  return { ...stats(samples), p95_ms: round(p95) };
}

/** The median of `xs` (NaN when empty). */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** What one timed round measured; `samples` (the latencies) stay in memory for pooling. */
export interface TimedRound {
  calls: number;
  seconds: number;
  calls_per_s: number;
  latency: Latency;
  cpu: CpuUse;
  cpu_ms_per_call: { client: number; server: number | null };
  errors: number;
  first_error?: string;
  samples?: number[];
}

/**
 * Runs `callsPerClient` calls of each client at once, each client's back to back (`call(i, client)`), stopping a
 * client after 20 errors in the round; `serverGroup` is the dev server's process group (its CPU is measured when given).
 */
export async function timeCalls(clients: readonly ((i: number, client: number) => Promise<unknown>)[], callsPerClient: number, serverGroup: number | null | undefined): Promise<TimedRound> {
  const latencies: number[] = [];
  const errors = errorCount();
  // The server's counters read first (a scan of /proc, ≈ 5 ms of this process's CPU), so the scan stays out of the client's share.
  const before = cpuSnap(null, groupCpuMs(serverGroup)?.ms);
  const t0 = performance.now();
  await Promise.all(
    clients.map(async (call, c) => {
      for (let i = 0; i < callsPerClient && errors.count < 20; i++) {
        const start = performance.now();
        try {
          await call(i, c);
          latencies.push(performance.now() - start);
        } catch (e) {
          errors.note(errorText(e));
        }
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpu = cpuUse(before, cpuSnap(serverGroup));
  const n = Math.max(1, latencies.length);
  return {
    calls: latencies.length, seconds: round(seconds), calls_per_s: round(latencies.length / seconds, 1), latency: latencyOf(latencies),
    cpu, cpu_ms_per_call: { client: round(cpu.client_ms / n, 3), server: cpu.server_ms === null ? null : round(cpu.server_ms / n, 3) }, ...errors.fields(), samples: latencies,
  };
}

/** Rounds of one carrier as one: calls and time summed, latencies pooled, CPU summed. */
export function pooledRounds(rounds: readonly TimedRound[]) {
  const sum = (f: (r: TimedRound) => number) => rounds.reduce((a, r) => a + f(r), 0);
  const seconds = sum((r) => r.seconds);
  const calls = sum((r) => r.calls);
  const server = rounds.some((r) => r.cpu.server_ms === null) ? null : sum((r) => r.cpu.server_ms!);
  return {
    rounds: rounds.length, calls, seconds: round(seconds), calls_per_s: round(calls / seconds, 1), latency: latencyOf(rounds.flatMap((r) => r.samples ?? [])),
    cpu_ms_per_call: { client: round(sum((r) => r.cpu.client_ms) / Math.max(1, calls), 3), server: server === null ? null : round(server / Math.max(1, calls), 3) },
    other_share_median: median(rounds.map((r) => r.cpu.other_share ?? NaN).filter(Number.isFinite)),
    errors: sum((r) => r.errors), first_error: rounds.find((r) => r.first_error !== undefined)?.first_error,
  };
}
