/** @module `npm run bench:http`: the floor (`GET /health/object`, an empty Worker → Durable Object round trip) and two reference routes interleaved with the unbatched step scenario at the same client concurrency, on one task and on 8; per-step cost = elapsed / steps completed, ratio = step cost / floor cost; with `--baseline <rev or checkout>`, that code's dev server in the same rounds, before and after side by side; writes bench/http-results.json. */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { defaultAdminToken, type DevServer, reloadCount, stopDevServer, withBenchServer } from "../dev-server.js";
import { parseCli, run } from "./harness/cli.js";
import { Client, stepsOf } from "./harness/http-client.js";
import { machineInfo, round, sourceState } from "./harness/meter.js";
import { fmt, pct, printTables, span, writeResults } from "./harness/report.js";
import { closedLoop, interleaved, type LoadResult, type Route } from "./scenarios/floor.js";
import { driftAlarms, printDriftAlarms } from "./results.js";
import { mergeSteps, PLANS, type StepResult, stepProblem, stepScenario } from "./scenarios/steps.js";
import { baselineTree, startBaselineServer, treeState } from "./harness/baseline.js";

/** One server measured: its client, its reference routes, and what the rounds found. */
interface Target {
  readonly label: "after" | "before";
  readonly client: Client;
  readonly server: DevServer | null;
  readonly tree: string;
  readonly routes: Route[];
  readonly floor: LoadResult[];
  /** The write floor (POST /_bench/floor/write: the probe plus one durable SQLite write), when the server has the bench routes. */
  readonly writeFloor: LoadResult[];
  readonly reference: LoadResult[];
  readonly steps: StepResult[];
}

/** A server's probe task (its ready-steps query is the "authenticated read through the task object" reference) and its warm-up. */
async function prepareTarget(label: Target["label"], base: string, server: DevServer | null, tree: string, adminToken: string, plan: (typeof PLANS)["full"]): Promise<Target> {
  const client = new Client(base);
  const probe = await client.session(adminToken);
  const probeTask = (await client.task(probe, "probe", { title: "Probe", steps: stepsOf(10) })).path;
  const probeToken: string = (await client.must(201, "POST", `${probeTask}/workers`, probe.orch, { agent_id: "probe-reader" })).body.token;
  const routes: Route[] = [
    { name: "GET /health/object", op: () => client.call("GET", "/health/object", undefined, undefined, false) },
    { name: "GET /health", op: () => client.call("GET", "/health", undefined, undefined, false) },
    { name: "GET .../steps?limit=1 (worker)", op: () => client.call("GET", `${probeTask}/steps?limit=1`, probeToken, undefined, false) },
  ];
  // The write floor needs the bench routes (BENCH_SEED, set on the servers started here): without them it is left out.
  const writeFloor = await client.call("POST", WRITE_FLOOR_PATH, adminToken, undefined, false);
  if (writeFloor.status === 200) routes.push({ name: WRITE_FLOOR, op: () => client.call("POST", WRITE_FLOOR_PATH, adminToken, undefined, false) });
  else console.log(`  (${label}: no write floor: POST ${WRITE_FLOOR_PATH} answered ${writeFloor.status})`);
  // Warm every route (and the isolate, the objects, the connection pool) before measuring.
  for (const r of routes) await closedLoop(r.name, 32, plan.warmupMs, plan.maxRequestsPerLevel, r.op);
  await stepScenario(client, adminToken, 4, 1, { ...plan, stepsPerWorker: 5, minSteps: 20 });
  return { label, client, server, tree, routes, floor: [], writeFloor: [], reference: [], steps: [] };
}

const WRITE_FLOOR_PATH = "/_bench/floor/write";
const WRITE_FLOOR = `POST ${WRITE_FLOOR_PATH} (write floor)`;

/** The per-concurrency cost ratios of one target: floor req/s ÷ steps/s (and the write floor's, when measured), and the p50s' ratio. */
function ratiosOf(t: Target, concurrencies: number[], multiTasks: number) {
  const find = (c: number, tasks: number) => t.steps.find((s) => s.workers === c && s.tasks === tasks)!;
  return concurrencies.map((c) => {
    const f = t.floor.find((x) => x.concurrency === c)!;
    const w = t.writeFloor.find((x) => x.concurrency === c);
    const of = (s: StepResult) => ({
      steps_per_s: s.steps_per_s,
      step_cost_ms: round(1000 / s.steps_per_s),
      cost_ratio: round(f.rps / s.steps_per_s, 2),
      p50_ratio: round(s.step_call.p50_ms / f.latency.p50_ms, 2),
      cost_vs_write_floor: w === undefined ? null : round(w.rps / s.steps_per_s, 2),
    });
    return { concurrency: c, floor_rps: f.rps, floor_cost_ms: round(1000 / f.rps), write_floor_rps: w?.rps ?? null, one_task: of(find(c, 1)), multi_task: { tasks: multiTasks, ...of(find(c, multiTasks)) } };
  });
}

/** Before and after side by side, by concurrency and task count. */
function comparison(after: ReturnType<typeof ratiosOf>, before: ReturnType<typeof ratiosOf>) {
  return after.flatMap((a) => {
    const b = before.find((x) => x.concurrency === a.concurrency)!;
    return (["one_task", "multi_task"] as const).map((k) => ({
      concurrency: a.concurrency,
      tasks: k === "one_task" ? 1 : a.multi_task.tasks,
      floor_before: b.floor_rps,
      floor_after: a.floor_rps,
      floor_after_vs_before: round(a.floor_rps / b.floor_rps, 2),
      steps_before: b[k].steps_per_s,
      steps_after: a[k].steps_per_s,
      steps_after_vs_before: round(a[k].steps_per_s / b[k].steps_per_s, 2),
      ratio_before: b[k].cost_ratio,
      ratio_after: a[k].cost_ratio,
      write_floor_before: b.write_floor_rps,
      write_floor_after: a.write_floor_rps,
      write_ratio_before: b[k].cost_vs_write_floor,
      write_ratio_after: a[k].cost_vs_write_floor,
    }));
  });
}

run(async () => {
  const usage = [
    "usage: npm run bench:http -- [--quick] [--url http://127.0.0.1:<port>] [--baseline <rev or checkout>]",
    "  --baseline: also a dev server of that revision or checkout, measured in the same rounds (its block and this one's alternate at each concurrency)",
  ].join("\n");
  const opts = parseCli(usage, { quick: false, url: null as string | null, baseline: null as string | null });
  const plan = PLANS[opts.quick ? "quick" : "full"];
  const concurrencies = [1, 8, 32];
  const adminToken = defaultAdminToken();
  const loadStart = os.loadavg();
  const source = sourceState();
  const wallStart = performance.now();
  const baselineDir = opts.baseline === null ? null : baselineTree(opts.baseline).dir;
  // BENCH_SEED: the bench routes, for the write floor.
  await withBenchServer(opts.url, { BENCH_SEED: "1" }, async (base, server) => {
    let before: DevServer | null = null;
    try {
      const targets = [await prepareTarget("after", base, server, treeState(process.cwd()), adminToken, plan)];
      if (baselineDir !== null) {
        before = await startBaselineServer(baselineDir, { BENCH_SEED: "1" });
        targets.push(await prepareTarget("before", before.base, before, treeState(baselineDir), adminToken, plan));
      }
      for (const [i, c] of concurrencies.entries()) {
        // Each server's block in turn, the order reversed at every concurrency, so neither always runs on a fresher machine.
        for (const t of i % 2 === 0 ? targets : [...targets].reverse()) {
          if (targets.length > 1) console.log(`  [${t.label}]`);
          // A scenario during which the dev server reloaded (someone edited the source) is run once more.
          const unbatched = async (tasks: number) => {
            let res: StepResult | null = null;
            for (let attempt = 0; attempt < 2 && (res === null || res.server_reloaded); attempt++) {
              const mark = reloadCount(t.server);
              res = await stepScenario(t.client, adminToken, c, tasks, plan);
              res.server_reloaded = reloadCount(t.server) > mark;
              console.log(`  steps: ${tasks} task(s), ${String(c).padStart(2)} workers  ${res.steps_completed}/${res.steps_planned} steps in ${fmt(res.seconds, 2)} s = ${fmt(res.steps_per_s)} steps/s  p50/p99 ${pct(res.step_call)} ms${res.errors > 0 ? `  errors ${res.errors}: ${res.first_error}` : ""}${res.timed_out ? "  TIMED OUT" : ""}${res.server_reloaded ? "  (server reloaded during the run)" : ""}`);
            }
            return res!;
          };
          const { loads, runs } = await interleaved(c, t.routes, plan, { unbatched });
          t.steps.push(mergeSteps(runs.get("unbatched1")!), mergeSteps(runs.get(`unbatched${plan.multiTasks}`)!));
          for (const l of loads) (l.route === "GET /health/object" ? t.floor : l.route === WRITE_FLOOR ? t.writeFloor : t.reference).push(l);
        }
      }
      const [after, baseline] = targets as [Target, Target | undefined];
      const { floor, reference, steps } = after;
      const find = (c: number, tasks: number) => steps.find((s) => s.workers === c && s.tasks === tasks)!;
      const ratios = ratiosOf(after, concurrencies, plan.multiTasks);
      const beforeRatios = baseline === undefined ? null : ratiosOf(baseline, concurrencies, plan.multiTasks);
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
        write_floor: after.writeFloor,
        reference,
        steps,
        ratios,
        baseline:
          baseline === undefined
            ? null
            : { dir: baselineDir, tree: baseline.tree, this_tree: after.tree, floor: baseline.floor, reference: baseline.reference, steps: baseline.steps, ratios: beforeRatios, after_vs_before: comparison(ratios, beforeRatios!) },
        wall_seconds: round((performance.now() - wallStart) / 1000, 1),
      };
      console.log(`\nHTTP benchmark (${results.mode}) — ${results.machine.cpus} CPUs, node ${process.version}, load ${results.machine.loadavg_start.join(" ")} → ${results.machine.loadavg_end.join(" ")}`);
      const loads = [...floor, ...reference].sort((a, b) => a.route.localeCompare(b.route) || a.concurrency - b.concurrency);
      printTables([
        {
          title: "cost = 1/throughput; ratio = per-step cost / floor cost at the same client concurrency",
          headers: ["conc", "floor req/s", "floor p50/p99 ms", "1 task steps/s", "p50/p99 ms", "ratio", `${plan.multiTasks} tasks steps/s`, "p50/p99 ms", "ratio", "write floor req/s", "÷ write floor: 1 task", `${plan.multiTasks} tasks`],
          rows: ratios.map((r) => {
            const [f, one, multi] = [floor.find((x) => x.concurrency === r.concurrency)!, find(r.concurrency, 1), find(r.concurrency, plan.multiTasks)];
            const w = (x: number | null) => (x === null ? "-" : `${fmt(x, 2)}x`);
            return [String(r.concurrency), fmt(f.rps), pct(f.latency), fmt(one.steps_per_s), pct(one.step_call), `${fmt(r.one_task.cost_ratio, 2)}x`, fmt(multi.steps_per_s), pct(multi.step_call), `${fmt(r.multi_task.cost_ratio, 2)}x`, r.write_floor_rps === null ? "-" : fmt(r.write_floor_rps), w(r.one_task.cost_vs_write_floor), w(r.multi_task.cost_vs_write_floor)];
          }),
        },
        { title: "reference routes (same method)", headers: ["route", "conc", "req/s", "p50/p99 ms", "errors"], rows: loads.map((r) => [r.route, String(r.concurrency), fmt(r.rps), pct(r.latency), String(r.errors)]) },
        {
          title: "step scenarios (setup and other calls, not in the measured window)",
          headers: ["tasks", "workers", "steps", "seconds", "steps/s per repeat", "claim-next p50", "dispatch p50", "finish p50", "create task ms", "errors", "dups", "server completed"],
          rows: steps.map((s) => [String(s.tasks), String(s.workers), `${s.steps_completed}/${s.steps_planned}`, fmt(s.seconds, 2), (s.repeats ?? [s]).map((r) => fmt(r.steps_per_s, 0)).join(" "), fmt(s.claim_next.p50_ms, 2), fmt(s.dispatch.p50_ms, 2), fmt(s.finish.p50_ms, 2), span(s.create_task_ms), String(s.errors), String(s.duplicate_completions), String(s.verified_completed_on_server)]),
        },
      ]);
      if (baseline !== undefined) {
        printTables([
          {
            title: `before (${baseline.tree}) and after (${after.tree}), the same rounds: steps/s and floor req/s after ÷ before; cost ratio = floor req/s ÷ steps/s`,
            headers: ["conc", "tasks", "floor before", "floor after", "÷", "steps/s before", "steps/s after", "÷", "ratio before", "ratio after", "write floor before", "after", "÷ write floor before", "after"],
            rows: comparison(ratios, beforeRatios!).map((r) => [
              String(r.concurrency), String(r.tasks), fmt(r.floor_before), fmt(r.floor_after), `${fmt(r.floor_after_vs_before, 2)}x`, fmt(r.steps_before), fmt(r.steps_after), `${fmt(r.steps_after_vs_before, 2)}x`,
              `${fmt(r.ratio_before, 2)}x`, `${fmt(r.ratio_after, 2)}x`, r.write_floor_before === null ? "-" : fmt(r.write_floor_before), r.write_floor_after === null ? "-" : fmt(r.write_floor_after),
              r.write_ratio_before === null ? "-" : `${fmt(r.write_ratio_before, 2)}x`, r.write_ratio_after === null ? "-" : `${fmt(r.write_ratio_after, 2)}x`,
            ]),
          },
        ]);
      }
      if (reloads > 0) console.log(`\nnote: the dev server reloaded ${reloads} time(s) (source edited during the run); step scenarios hit by a reload were rerun once (server_reloaded in the JSON)`);
      const bad = steps.filter(stepProblem);
      if (bad.length > 0) console.log(`\nwarning: ${bad.length} step scenario(s) had errors, time-outs, duplicates or a server count that differs from the plan`);
      // The same drift alarm as npm run bench: an unbatched step above the goal fails the run.
      const drift = driftAlarms(ratios.flatMap((r) => [{ workers: r.concurrency, tasks: 1, cost_vs_floor: r.one_task.cost_ratio }, { workers: r.concurrency, tasks: plan.multiTasks, cost_vs_floor: r.multi_task.cost_ratio }]));
      writeResults("bench/http-results.json", { ...results, drift_alarms: drift }, results.wall_seconds);
      printDriftAlarms(drift);
      if (bad.length > 0 || drift.length > 0) process.exitCode = 1;
    } finally {
      if (before !== null) await stopDevServer(before);
    }
  });
});
