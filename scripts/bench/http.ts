/** @module `npm run bench:http`: the floor (`GET /health/object`, an empty Worker → Durable Object round trip) and two reference routes interleaved with the unbatched step scenario at the same client concurrency, on one task and on 8; per-step cost = elapsed / steps completed, ratio = step cost / floor cost; writes bench/http-results.json. */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { defaultAdminToken, reloadCount, withBenchServer } from "../dev-server.js";
import { parseCli, run } from "./harness/cli.js";
import { Client, stepsOf } from "./harness/http-client.js";
import { machineInfo, round, sourceState } from "./harness/meter.js";
import { fmt, pct, printTables, span, writeResults } from "./harness/report.js";
import { closedLoop, interleaved, type LoadResult, type Route } from "./scenarios/floor.js";
import { driftAlarms, printDriftAlarms } from "./results.js";
import { mergeSteps, PLANS, type StepResult, stepProblem, stepScenario } from "./scenarios/steps.js";

run(async () => {
  const opts = parseCli("usage: npm run bench:http -- [--quick] [--url http://127.0.0.1:<port>]", { quick: false, url: null as string | null });
  const plan = PLANS[opts.quick ? "quick" : "full"];
  const concurrencies = [1, 8, 32];
  const adminToken = defaultAdminToken();
  const loadStart = os.loadavg();
  const source = sourceState();
  const wallStart = performance.now();
  await withBenchServer(opts.url, {}, async (base, server) => {
    const client = new Client(base);
    // A small task whose ready-steps query is the "authenticated read through the task object" reference.
    const probe = await client.session(adminToken);
    const probeTask = (await client.task(probe, "probe", { title: "Probe", steps: stepsOf(10) })).path;
    const probeToken: string = (await client.must(201, "POST", `${probeTask}/workers`, probe.orch, { agent_id: "probe-reader" })).body.token;
    const routes: Route[] = [
      { name: "GET /health/object", op: () => client.call("GET", "/health/object", undefined, undefined, false) },
      { name: "GET /health", op: () => client.call("GET", "/health", undefined, undefined, false) },
      { name: "GET .../steps?limit=1 (worker)", op: () => client.call("GET", `${probeTask}/steps?limit=1`, probeToken, undefined, false) },
    ];
    // Warm every route (and the isolate, the objects, the connection pool) before measuring.
    for (const r of routes) await closedLoop(r.name, 32, plan.warmupMs, plan.maxRequestsPerLevel, r.op);
    await stepScenario(client, adminToken, 4, 1, { ...plan, stepsPerWorker: 5, minSteps: 20 });
    const floor: LoadResult[] = [];
    const reference: LoadResult[] = [];
    const steps: StepResult[] = [];
    for (const c of concurrencies) {
      // A scenario during which the dev server reloaded (someone edited the source) is run once more.
      const unbatched = async (tasks: number) => {
        let res: StepResult | null = null;
        for (let attempt = 0; attempt < 2 && (res === null || res.server_reloaded); attempt++) {
          const mark = reloadCount(server);
          res = await stepScenario(client, adminToken, c, tasks, plan);
          res.server_reloaded = reloadCount(server) > mark;
          console.log(`  steps: ${tasks} task(s), ${String(c).padStart(2)} workers  ${res.steps_completed}/${res.steps_planned} steps in ${fmt(res.seconds, 2)} s = ${fmt(res.steps_per_s)} steps/s  p50/p99 ${pct(res.step_call)} ms${res.errors > 0 ? `  errors ${res.errors}: ${res.first_error}` : ""}${res.timed_out ? "  TIMED OUT" : ""}${res.server_reloaded ? "  (server reloaded during the run)" : ""}`);
        }
        return res!;
      };
      const { loads, runs } = await interleaved(c, routes, plan, { unbatched });
      steps.push(mergeSteps(runs.get("unbatched1")!), mergeSteps(runs.get(`unbatched${plan.multiTasks}`)!));
      for (const l of loads) (l.route === "GET /health/object" ? floor : reference).push(l);
    }
    const find = (c: number, tasks: number) => steps.find((s) => s.workers === c && s.tasks === tasks)!;
    const ratios = concurrencies.map((c) => {
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
      server: { url: base, started_by_script: server !== null, startup_ms: server?.startupMs ?? null, log_level: "warn", log: server?.logFile ? { file: server.logFile, reloads } : null },
      plan,
      concurrencies,
      floor,
      reference,
      steps,
      ratios,
      wall_seconds: round((performance.now() - wallStart) / 1000, 1),
    };
    console.log(`\nHTTP benchmark (${results.mode}) — ${results.machine.cpus} CPUs, node ${process.version}, load ${results.machine.loadavg_start.join(" ")} → ${results.machine.loadavg_end.join(" ")}`);
    const loads = [...floor, ...reference].sort((a, b) => a.route.localeCompare(b.route) || a.concurrency - b.concurrency);
    printTables([
      {
        title: "cost = 1/throughput; ratio = per-step cost / floor cost at the same client concurrency",
        headers: ["conc", "floor req/s", "floor p50/p99 ms", "1 task steps/s", "p50/p99 ms", "ratio", `${plan.multiTasks} tasks steps/s`, "p50/p99 ms", "ratio"],
        rows: ratios.map((r) => {
          const [f, one, multi] = [floor.find((x) => x.concurrency === r.concurrency)!, find(r.concurrency, 1), find(r.concurrency, plan.multiTasks)];
          return [String(r.concurrency), fmt(f.rps), pct(f.latency), fmt(one.steps_per_s), pct(one.step_call), `${fmt(r.one_task.cost_ratio, 2)}x`, fmt(multi.steps_per_s), pct(multi.step_call), `${fmt(r.multi_task.cost_ratio, 2)}x`];
        }),
      },
      { title: "reference routes (same method)", headers: ["route", "conc", "req/s", "p50/p99 ms", "errors"], rows: loads.map((r) => [r.route, String(r.concurrency), fmt(r.rps), pct(r.latency), String(r.errors)]) },
      {
        title: "step scenarios (setup and other calls, not in the measured window)",
        headers: ["tasks", "workers", "steps", "seconds", "steps/s per repeat", "claim-next p50", "dispatch p50", "finish p50", "create task ms", "errors", "dups", "server completed"],
        rows: steps.map((s) => [String(s.tasks), String(s.workers), `${s.steps_completed}/${s.steps_planned}`, fmt(s.seconds, 2), (s.repeats ?? [s]).map((r) => fmt(r.steps_per_s, 0)).join(" "), fmt(s.claim_next.p50_ms, 2), fmt(s.dispatch.p50_ms, 2), fmt(s.finish.p50_ms, 2), span(s.create_task_ms), String(s.errors), String(s.duplicate_completions), String(s.verified_completed_on_server)]),
      },
    ]);
    if (reloads > 0) console.log(`\nnote: the dev server reloaded ${reloads} time(s) (source edited during the run); step scenarios hit by a reload were rerun once (server_reloaded in the JSON)`);
    const bad = steps.filter(stepProblem);
    if (bad.length > 0) console.log(`\nwarning: ${bad.length} step scenario(s) had errors, time-outs, duplicates or a server count that differs from the plan`);
    // The same drift alarm as npm run bench: an unbatched step above the goal fails the run.
    const drift = driftAlarms(ratios.flatMap((r) => [{ workers: r.concurrency, tasks: 1, cost_vs_floor: r.one_task.cost_ratio }, { workers: r.concurrency, tasks: plan.multiTasks, cost_vs_floor: r.multi_task.cost_ratio }]));
    writeResults("bench/http-results.json", { ...results, drift_alarms: drift }, results.wall_seconds);
    printDriftAlarms(drift);
    if (bad.length > 0 || drift.length > 0) process.exitCode = 1;
  });
});
