/** @module `npm run bench:http`: the floor (an empty Worker → Durable Object round trip, `GET /health/object`) and two reference routes against the unbatched step scenario, at the same client concurrency, on one task and on 8; interleaved per concurrency (half the floor time before the step runs, half after); writes bench/http- results.json. */
// Per-step cost = elapsed / steps completed; ratio = step cost / floor cost.
import os from "node:os";
import { performance } from "node:perf_hooks";
import { benchServer, reloadCount, stopDevServer } from "../dev-server.js";
import { ints, parseCli, run, type ServerOptions, serverOptions } from "./harness/cli.js";
import { type Answer, Client, stepsOf } from "./harness/http-client.js";
import { machineInfo, round, sourceState } from "./harness/meter.js";
import { fmt, span, table, writeResults } from "./harness/report.js";
import { closedLoop, type LoadResult, loadLine, mergeLoads } from "./scenarios/floor.js";
import { FULL, mergeSteps, QUICK, type StepResult, stepProblem, stepScenario, withoutSamples } from "./scenarios/steps.js";

const USAGE = `usage: npm run bench:http -- [--quick] [--url http://127.0.0.1:<port>] [--out bench/http-results.json]
                              [--admin-token <token>] [--server-log-level <level>] [--concurrency 1,8,32]`;

run(async () => {
  const opts = { quick: false, out: "bench/http-results.json", concurrencies: [1, 8, 32] } as ServerOptions & { quick: boolean; out: string; concurrencies: number[] };
  parseCli(USAGE, { ...serverOptions(opts), "--quick": () => (opts.quick = true), "--out": (v: string) => (opts.out = v), "--concurrency": (v: string) => (opts.concurrencies = ints(v, "--concurrency", 256)) });
  const plan = opts.quick ? QUICK : FULL;
  const loadStart = os.loadavg();
  const source = sourceState();
  const wallStart = performance.now();
  const { base, server } = await benchServer(opts.url, opts.serverLogLevel);
  try {
    const client = new Client(base);
    // A small task whose ready-steps query is the "authenticated read through the task object" reference.
    const probe = await client.session(opts.adminToken);
    const probeTask = (await client.task(probe, "probe", { title: "Probe", steps: stepsOf(10) })).path;
    const probeToken: string = (await client.must(201, "POST", `${probeTask}/workers`, probe.orch, { agent_id: "probe-reader" })).body.token;
    const routes: { name: string; op: () => Promise<Answer> }[] = [
      { name: "GET /health/object", op: () => client.call("GET", "/health/object", undefined, undefined, false) },
      { name: "GET /health", op: () => client.call("GET", "/health", undefined, undefined, false) },
      { name: "GET .../steps?limit=1 (worker)", op: () => client.call("GET", `${probeTask}/steps?limit=1`, probeToken, undefined, false) },
    ];
    // Warm every route (and the isolate, the objects, the connection pool) before measuring.
    const maxC = Math.max(...opts.concurrencies);
    for (const r of routes) await closedLoop(r.name, maxC, plan.warmupMs, plan.maxRequestsPerLevel, r.op);
    await stepScenario(client, opts.adminToken, Math.min(4, maxC), 1, { ...plan, stepsPerWorker: 5, minSteps: 20 });

    const floor: LoadResult[] = [];
    const reference: LoadResult[] = [];
    const steps: StepResult[] = [];
    // Interleaved per concurrency, so the floor and the step runs it is compared with see the same machine
    // load. A scenario during which the dev server reloaded (someone edited the source) is run once more.
    for (const c of opts.concurrencies) {
      const halves: LoadResult[][] = [[], []];
      const measureRoutes = async (half: 0 | 1) => {
        for (const r of routes) {
          const res = await closedLoop(r.name, c, plan.floorMs / 2, plan.maxRequestsPerLevel / 2, r.op);
          halves[half]!.push(res);
          console.log(loadLine(r.name.padEnd(32), res));
        }
      };
      await measureRoutes(0);
      const byTasks = new Map<number, StepResult[]>([[1, []], [plan.multiTasks, []]]);
      for (let repeat = 0; repeat < plan.repeats; repeat++) {
        for (const [tasks, list] of byTasks) {
          let res: StepResult | null = null;
          for (let attempt = 0; attempt < 2; attempt++) {
            const mark = reloadCount(server);
            res = await stepScenario(client, opts.adminToken, c, tasks, plan);
            res.server_reloaded = reloadCount(server) > mark;
            console.log(
              `  steps: ${tasks} task(s), ${String(c).padStart(2)} workers  ${res.steps_completed}/${res.steps_planned} steps in ${fmt(res.seconds, 2)} s = ${fmt(res.steps_per_s)} steps/s  p50 ${fmt(res.step_call.p50_ms, 2)} ms  p99 ${fmt(res.step_call.p99_ms, 2)} ms${res.errors > 0 ? `  errors ${res.errors}: ${res.first_error}` : ""}${res.timed_out ? "  TIMED OUT" : ""}${res.server_reloaded ? "  (server reloaded during the run)" : ""}`,
            );
            if (!res.server_reloaded) break;
          }
          list.push(res!);
        }
      }
      for (const list of byTasks.values()) steps.push(mergeSteps(list));
      await measureRoutes(1);
      for (const r of routes) (r.name === "GET /health/object" ? floor : reference).push(mergeLoads(halves.map((h) => h.find((x) => x.route === r.name)!)));
    }

    const find = (c: number, tasks: number) => steps.find((s) => s.workers === c && s.tasks === tasks)!;
    const ratios = opts.concurrencies.map((c) => {
      const f = floor.find((x) => x.concurrency === c)!;
      const of = (s: StepResult) => ({ steps_per_s: s.steps_per_s, step_cost_ms: round(1000 / s.steps_per_s), cost_ratio: round(f.rps / s.steps_per_s, 2), p50_ratio: round(s.step_call.p50_ms / f.latency.p50_ms, 2) });
      return { concurrency: c, floor_rps: f.rps, floor_cost_ms: round(1000 / f.rps), one_task: of(find(c, 1)), multi_task: { tasks: plan.multiTasks, ...of(find(c, plan.multiTasks)) } };
    });
    const reloads = reloadCount(server);
    const results = {
      generated_at: new Date().toISOString(),
      mode: opts.quick ? "quick" : "full",
      machine: machineInfo(loadStart),
      source,
      server: { url: base, started_by_script: server !== null, startup_ms: server?.startupMs ?? null, log_level: opts.serverLogLevel, log: server?.logFile ? { file: server.logFile, reloads } : null },
      plan,
      concurrencies: opts.concurrencies,
      floor: floor.map(withoutSamples),
      reference: reference.map(withoutSamples),
      steps: steps.map(withoutSamples),
      ratios,
      wall_seconds: round((performance.now() - wallStart) / 1000, 1),
    };

    console.log(`\nHTTP benchmark (${results.mode}) — ${results.machine.cpus} CPUs, node ${process.version}, load ${results.machine.loadavg_start.join(" ")} → ${results.machine.loadavg_end.join(" ")}`);
    console.log("cost = 1/throughput; ratio = per-step cost / floor cost at the same client concurrency\n");
    const pp = (x: { p50_ms: number; p99_ms: number }) => `${fmt(x.p50_ms, 2)}/${fmt(x.p99_ms, 2)}`;
    console.log(
      table(
        ["conc", "floor req/s", "floor p50/p99 ms", "1 task steps/s", "p50/p99 ms", "ratio", `${plan.multiTasks} tasks steps/s`, "p50/p99 ms", "ratio"],
        ratios.map((r) => {
          const [f, one, multi] = [floor.find((x) => x.concurrency === r.concurrency)!, find(r.concurrency, 1), find(r.concurrency, plan.multiTasks)];
          return [String(r.concurrency), fmt(f.rps), pp(f.latency), fmt(one.steps_per_s), pp(one.step_call), `${fmt(r.one_task.cost_ratio, 2)}x`, fmt(multi.steps_per_s), pp(multi.step_call), `${fmt(r.multi_task.cost_ratio, 2)}x`];
        }),
      ),
    );
    console.log("\nreference routes (same method):");
    const loads = [...floor, ...reference].sort((a, b) => a.route.localeCompare(b.route) || a.concurrency - b.concurrency);
    console.log(table(["route", "conc", "req/s", "p50 ms", "p99 ms", "errors"], loads.map((r) => [r.route, String(r.concurrency), fmt(r.rps), fmt(r.latency.p50_ms, 2), fmt(r.latency.p99_ms, 2), String(r.errors)])));
    console.log("\nstep scenarios (setup and other calls, not in the measured window):");
    const headers = ["tasks", "workers", "steps", "seconds", "steps/s per repeat", "claim-next p50", "dispatch p50", "finish p50", "create task ms", "errors", "dups", "server completed"];
    const row = (s: StepResult) => [String(s.tasks), String(s.workers), `${s.steps_completed}/${s.steps_planned}`, fmt(s.seconds, 2), (s.repeats ?? [s]).map((r) => fmt(r.steps_per_s, 0)).join(" "), fmt(s.claim_next.p50_ms, 2), fmt(s.dispatch.p50_ms, 2), fmt(s.finish.p50_ms, 2), span(s.create_task_ms), String(s.errors), String(s.duplicate_completions), String(s.verified_completed_on_server)];
    console.log(table(headers, steps.map(row)));
    if (reloads > 0) console.log(`\nnote: the dev server reloaded ${reloads} time(s) (source edited during the run); step scenarios hit by a reload were rerun once (server_reloaded in the JSON)`);
    const bad = steps.filter(stepProblem);
    if (bad.length > 0) console.log(`\nwarning: ${bad.length} step scenario(s) had errors, time-outs, duplicates or a server count that differs from the plan`);
    writeResults(opts.out, results, results.wall_seconds);
    if (bad.length > 0) process.exitCode = 1;
  } finally {
    if (server !== null) await stopDevServer(server);
  }
});
