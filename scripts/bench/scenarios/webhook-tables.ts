/** @module The tables `npm run bench:webhooks` prints: commit → delivery latency of one run, and the write-path cost rounds pooled. */
import { fmt, type Table } from "../harness/report.js";
import type { CostRatio, HookRun, PooledCost, unloadedLatency } from "./webhooks.js";

const l = (x: { p50_ms: number; p95_ms: number; p99_ms: number; max_ms: number }) => [fmt(x.p50_ms, 1), fmt(x.p95_ms, 1), fmt(x.p99_ms, 1), fmt(x.max_ms, 1)];

/** Commit → delivery of one run, from the committing call's answer and its send, and by event type; with nothing queued (`unloaded`) below. */
export function latencyTable(r: HookRun, unloaded: Awaited<ReturnType<typeof unloadedLatency>> | null): Table {
  const d = r.delivery;
  return {
    title: `commit → delivery: ${r.subscriptions} subscriptions, ${r.steps_completed} steps by ${r.workers} workers (${fmt(r.steps_per_s)} steps/s), ${d.received}/${d.expected} deliveries verified, ${d.duplicate_webhook_ids + d.duplicate_events} duplicates, ${d.out_of_order} out of order, ${d.rejected} rejected${d.stalled ? ", STALLED" : ""}; ${fmt(d.deliveries_per_s, 0)} deliveries/s, last ${fmt(d.tail_ms, 0)} ms after the task's complete answer`,
    headers: ["delivery arrived ←", "p50 ms", "p95 ms", "p99 ms", "max ms"],
    rows: [
      ["the committing call's answer read", ...l(d.after_answer_ms)],
      ["the committing call's send", ...l(d.after_send_ms)],
      ...Object.entries(d.after_answer_by_type_ms).map(([t, x]) => [`  ${t} (from the answer)`, ...l(x)]),
      ...(unloaded === null ? [] : [[`nothing queued: 1 subscription, ${unloaded.samples} steps one at a time (from the answer)`, ...l(unloaded.after_answer_ms)], ["  from the send", ...l(unloaded.after_send_ms)]]),
    ],
  };
}

/** Steps/s, step call latency, server CPU and deliveries per subscription count, with the ratio to none. */
export function costTable(pooled: readonly PooledCost[], ratios: readonly CostRatio[], steps: number, workers: number, rounds: number): Table {
  return {
    title: `write-path cost: ${steps} steps, ${workers} workers, ${rounds} interleaved round(s) of each (pooled)`,
    headers: ["subscriptions", "steps/s", "each round", "step p50 ms", "step p99 ms", "server CPU ms/step (window / +deliveries)", "deliveries", "tail ms each", "÷ none (steps/s)", "each round"],
    rows: pooled.map((p) => {
      const r = ratios.find((x) => x.subscriptions === p.subscriptions);
      const ratio = p.subscriptions === 0 ? "1" : r === undefined ? "-" : `${fmt(r.steps_per_s_vs_none, 3)}×`;
      return [String(p.subscriptions), fmt(p.steps_per_s), p.steps_per_s_each.map((x) => fmt(x, 0)).join(" "), fmt(p.step_call.p50_ms, 2), fmt(p.step_call.p99_ms, 2), `${fmt(p.server_cpu_ms_per_step_median.window, 2)} / ${fmt(p.server_cpu_ms_per_step_median.incl_deliveries, 2)}`, `${p.deliveries.received}/${p.deliveries.expected}`, p.tail_ms_each.map((x) => fmt(x, 0)).join(" "), ratio, r === undefined ? "" : r.steps_per_s_vs_none_each_round.map((x) => fmt(x, 2)).join(" ")];
    }),
  };
}
