/** @module `npm run bench:sse`: S subscribers on one task's event stream while W workers drive its steps, against the same step load with no subscriber, in one run on one server: 0, S, then 0 subscribers again (the zero runs bracket the loaded one, so drift of the machine shows); writes bench/sse-results.json. */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { defaultAdminToken, withBenchServer } from "../dev-server.js";
import { parseCli, run } from "./harness/cli.js";
import { Client } from "./harness/http-client.js";
import { machineInfo, round } from "./harness/meter.js";
import { writeResults } from "./harness/report.js";
import { type ScenarioResult, scenario } from "./scenarios/sse.js";

run(async () => {
  const { quick, url } = parseCli("usage: npm run bench:sse -- [--quick] [--url http://127.0.0.1:<port>]", { quick: false, url: null as string | null });
  const options = { subscribers: quick ? 20 : 200, steps: quick ? 200 : 1_000, workers: 8 };
  const loadStart = os.loadavg();
  const wallStart = performance.now();
  // More subscribers on one task than SSE_MAX_SUBSCRIBERS (64) allows by default: a server started here takes them all.
  await withBenchServer(url, { SSE_MAX_SUBSCRIBERS: String(Math.max(64, options.subscribers)) }, async (base, server) => {
    const client = new Client(base);
    const config = { steps: options.steps, workers: options.workers, adminToken: defaultAdminToken(), serverGroup: server?.child?.pid };
    // Warm the isolate, the objects and the connection pool.
    await scenario(client, { ...config, steps: Math.max(200, Math.floor(options.steps / 2)) }, Math.min(5, options.subscribers));
    const results: ScenarioResult[] = [];
    for (const subscribers of [0, options.subscribers, 0]) {
      const r = await scenario(client, config, subscribers);
      results.push(r);
      const sse = r.subscribers === 0 ? "" : `  | lag p50 ${r.lag_ms!.p50_ms} ms p99 ${r.lag_ms!.p99_ms} ms, ${r.events_per_s_delivered} events/s delivered, ${r.subscribers_with_exact_sequence}/${r.subscribers} exact, ${r.reconnects} reconnects`;
      console.log(`  ${String(subscribers).padStart(4)} subscribers: ${r.steps_completed} steps in ${r.seconds} s = ${r.steps_per_s} steps/s (call p50 ${r.step_call.p50_ms} ms, p99 ${r.step_call.p99_ms} ms, cpu s client ${r.cpu_s?.client} server ${r.cpu_s?.server ?? "-"})${sse}${r.errors > 0 ? `  errors ${r.errors}: ${r.first_error}` : ""}`);
    }
    const { total_mem_mb: _, ...machine } = machineInfo(loadStart);
    const mode = quick ? "quick" : "full";
    const wall = round((performance.now() - wallStart) / 1000, 1);
    const out = { generated_at: new Date().toISOString(), mode, machine, server: { url: base, started_by_script: server !== null, log_level: "warn" }, options, scenarios: results, wall_seconds: wall };
    const [zero, loaded, again] = [results[0]!, results[1]!, results[2]!];
    console.log(`\nSSE benchmark (${mode}) — ${machine.cpus} CPUs, node ${process.version}; ${options.steps} steps, ${options.workers} workers`);
    console.log(`  steps/s: ${zero.steps_per_s} (0 subscribers) → ${loaded.steps_per_s} (${loaded.subscribers}) → ${again.steps_per_s} (0 again)`);
    console.log(`  delivery lag commit→receipt: p50 ${loaded.lag_ms!.p50_ms} ms, p90 ${loaded.lag_ms!.p90_ms} ms, p99 ${loaded.lag_ms!.p99_ms} ms, max ${loaded.lag_ms!.max_ms} ms over ${loaded.lag_ms!.count} frames`);
    console.log(`  delivered: ${loaded.frames_delivered_live} live frames in ${loaded.delivery_seconds} s = ${loaded.events_per_s_delivered} events/s; catch-up of ${loaded.subscribers} × ${loaded.history_frames_per_subscriber} history frames took ${loaded.subscribe_and_catch_up_s} s`);
    console.log(`  exactly-once: ${loaded.subscribers_with_exact_sequence}/${loaded.subscribers} subscribers got all ${loaded.runtime_events_in_wal} runtime events in order; ${loaded.reconnects} reconnects`);
    writeResults("bench/sse-results.json", out, wall);
    if (results.some((r) => r.errors > 0) || loaded.subscribers_with_exact_sequence !== loaded.subscribers) process.exitCode = 1;
  });
});
