/** @module `npm run bench:sse`: S subscribers on one task's event stream while W workers drive its steps, against the same step load with no subscriber, in one run on one server: 0, S, then 0 subscribers again (the zero runs bracket the loaded one, so drift of the machine shows); writes bench/sse-results.json. */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { benchServer, stopDevServer } from "../dev-server.js";
import { int, parseCli, run, type ServerOptions, serverOptions } from "./harness/cli.js";
import { Client } from "./harness/http-client.js";
import { machineInfo, round } from "./harness/meter.js";
import { writeResults } from "./harness/report.js";
import { type ScenarioResult, scenario } from "./scenarios/sse.js";

const USAGE = `usage: npm run bench:sse -- [--quick] [--url http://127.0.0.1:<port>] [--subscribers 200] [--steps 1000]
                             [--workers 8] [--out bench/sse-results.json] [--admin-token <t>] [--server-log-level warn]`;

run(async () => {
  const opts = { quick: false, subscribers: 200, steps: 1_000, workers: 8, out: "bench/sse-results.json" } as ServerOptions & { quick: boolean; subscribers: number; steps: number; workers: number; out: string };
  parseCli(USAGE, {
    ...serverOptions(opts),
    "--quick": () => Object.assign(opts, { quick: true, subscribers: 20, steps: 200 }),
    "--subscribers": (v: string) => (opts.subscribers = int(v, "--subscribers", 1_000)),
    "--steps": (v: string) => (opts.steps = int(v, "--steps", 10_000)),
    "--workers": (v: string) => (opts.workers = int(v, "--workers", 64)),
    "--out": (v: string) => (opts.out = v),
  });
  const loadStart = os.loadavg();
  const wallStart = performance.now();
  // More subscribers on one task than SSE_MAX_SUBSCRIBERS (64) allows by default: a server started here takes them all.
  const { base, server } = await benchServer(opts.url, opts.serverLogLevel, { SSE_MAX_SUBSCRIBERS: String(Math.max(64, opts.subscribers)) });
  try {
    const client = new Client(base);
    const config = { steps: opts.steps, workers: opts.workers, adminToken: opts.adminToken, serverGroup: server?.child?.pid };
    // Warm the isolate, the objects and the connection pool.
    await scenario(client, { ...config, steps: Math.max(200, Math.floor(opts.steps / 2)) }, Math.min(5, opts.subscribers));
    const results: ScenarioResult[] = [];
    for (const subscribers of [0, opts.subscribers, 0]) {
      const r = await scenario(client, config, subscribers);
      results.push(r);
      const sse = r.subscribers === 0 ? "" : `  | lag p50 ${r.lag_ms!.p50_ms} ms p99 ${r.lag_ms!.p99_ms} ms, ${r.events_per_s_delivered} events/s delivered, ${r.subscribers_with_exact_sequence}/${r.subscribers} exact, ${r.reconnects} reconnects`;
      const cpu = r.cpu_s === undefined ? "" : `, cpu s client ${r.cpu_s.client} server ${r.cpu_s.server ?? "-"}`;
      console.log(`  ${String(subscribers).padStart(4)} subscribers: ${r.steps_completed} steps in ${r.seconds} s = ${r.steps_per_s} steps/s (call p50 ${r.step_call.p50_ms} ms, p99 ${r.step_call.p99_ms} ms${cpu})${sse}${r.errors > 0 ? `  errors ${r.errors}: ${r.first_error}` : ""}`);
    }
    const { total_mem_mb: _, ...machine } = machineInfo(loadStart);
    const out = {
      generated_at: new Date().toISOString(),
      mode: opts.quick ? "quick" : "full",
      machine,
      server: { url: server?.base ?? opts.url, started_by_script: server !== null, log_level: opts.serverLogLevel },
      options: { subscribers: opts.subscribers, steps: opts.steps, workers: opts.workers },
      scenarios: results,
      wall_seconds: round((performance.now() - wallStart) / 1000, 1),
    };
    const [zero, loaded, again] = [results[0]!, results[1]!, results[2]!];
    console.log(`\nSSE benchmark (${out.mode}) — ${machine.cpus} CPUs, node ${process.version}; ${opts.steps} steps, ${opts.workers} workers`);
    console.log(`  steps/s: ${zero.steps_per_s} (0 subscribers) → ${loaded.steps_per_s} (${loaded.subscribers}) → ${again.steps_per_s} (0 again)`);
    console.log(`  delivery lag commit→receipt: p50 ${loaded.lag_ms!.p50_ms} ms, p90 ${loaded.lag_ms!.p90_ms} ms, p99 ${loaded.lag_ms!.p99_ms} ms, max ${loaded.lag_ms!.max_ms} ms over ${loaded.lag_ms!.count} frames`);
    console.log(`  delivered: ${loaded.frames_delivered_live} live frames in ${loaded.delivery_seconds} s = ${loaded.events_per_s_delivered} events/s; catch-up of ${loaded.subscribers} × ${loaded.history_frames_per_subscriber} history frames took ${loaded.subscribe_and_catch_up_s} s`);
    console.log(`  exactly-once: ${loaded.subscribers_with_exact_sequence}/${loaded.subscribers} subscribers got all ${loaded.runtime_events_in_wal} runtime events in order; ${loaded.reconnects} reconnects`);
    writeResults(opts.out, out, out.wall_seconds);
    if (results.some((r) => r.errors > 0) || loaded.subscribers_with_exact_sequence !== loaded.subscribers) process.exitCode = 1;
  } finally {
    if (server !== null) await stopDevServer(server);
  }
});
