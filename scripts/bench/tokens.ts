/**
 * @module `npm run bench:tokens -- --baseline <rev or checkout>`: what checking every token against its session's
 * revocations costs on the hot path. Two `wrangler dev` servers side by side, this checkout and the baseline (a
 * checkout without revocation checks, or a commit checked out into a temporary work tree), each measured in turns
 * within one run: the
 * floor (`GET /health/object`), a worker's authenticated read through its task object (`GET .../steps?limit=1`),
 * and the unbatched step (status completed + claim_next) with 8 workers on one task. Each figure is taken as a
 * ratio to its own server's floor, so the two servers' shares of the machine cancel out; the answer is the ratio
 * of those ratios (this checkout ÷ baseline). Writes bench/tokens-results.json.
 */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { defaultAdminToken, type DevServer, startDevServer, stopDevServer, stopOnSignal } from "../dev-server.js";
import { baselineTree } from "./harness/baseline.js";
import { parseCli, run } from "./harness/cli.js";
import { Client, stepsOf } from "./harness/http-client.js";
import { machineInfo, round, sourceState } from "./harness/meter.js";
import { median } from "./harness/rounds.js";
import { fmt, printTables, writeResults } from "./harness/report.js";
import { closedLoop, type LoadResult } from "./scenarios/floor.js";
import { PLANS, stepScenario } from "./scenarios/steps.js";

const CONCURRENCY = 8;

interface Side {
  readonly name: string;
  readonly server: DevServer;
  readonly client: Client;
  readonly read: () => Promise<{ status: number; body: unknown; ms: number }>;
  floor: LoadResult[];
  reads: LoadResult[];
  steps: number[];
}

async function side(name: string, server: DevServer, adminToken: string): Promise<Side> {
  const client = new Client(server.base);
  const s = await client.session(adminToken);
  const task = (await client.task(s, "probe", { title: "Probe", steps: stepsOf(10) })).path;
  const token: string = (await client.must(201, "POST", `${task}/workers`, s.orch, { agent_id: "probe-reader" })).body.token;
  return { name, server, client, read: () => client.call("GET", `${task}/steps?limit=1`, token, undefined, false), floor: [], reads: [], steps: [] };
}

run(async () => {
  const opts = parseCli("usage: npm run bench:tokens -- --baseline <git rev or checkout dir> [--quick]", { quick: false, baseline: null as string | null });
  const rev = opts.baseline;
  if (rev === null) throw new Error("--baseline is required: a commit or a checkout to compare against (e.g. the commit before revocation checks)");
  const plan = PLANS[opts.quick ? "quick" : "full"];
  const adminToken = defaultAdminToken();
  const loadStart = os.loadavg();
  const wallStart = performance.now();
  const tree = baselineTree(rev);
  const servers: DevServer[] = [];
  stopOnSignal(async () => {
    for (const s of servers) await stopDevServer(s);
    tree.remove();
  });
  try {
    servers.push(await startDevServer({ cwd: tree.dir }));
    servers.push(await startDevServer({}));
    const sides = [await side(`baseline ${rev}`, servers[0]!, adminToken), await side("this checkout", servers[1]!, adminToken)];
    for (const s of sides) {
      await closedLoop("warm", CONCURRENCY, plan.warmupMs, plan.maxRequestsPerLevel, s.read);
      await stepScenario(s.client, adminToken, 4, 1, { ...plan, stepsPerWorker: 5, minSteps: 20 });
    }
    const rounds = Math.max(plan.repeats, 2) * 4;
    for (let round = 0; round < rounds; round++) {
      // Alternate which server goes first, so neither always runs on a fresher machine.
      for (const s of round % 2 === 0 ? sides : [...sides].reverse()) {
        const floor = await closedLoop("GET /health/object", CONCURRENCY, plan.floorMs / 2, plan.maxRequestsPerLevel, () => s.client.call("GET", "/health/object", undefined, undefined, false));
        const read = await closedLoop("worker read", CONCURRENCY, plan.floorMs / 2, plan.maxRequestsPerLevel, s.read);
        const steps = await stepScenario(s.client, adminToken, CONCURRENCY, 1, plan);
        s.floor.push(floor);
        s.reads.push(read);
        s.steps.push(steps.steps_per_s);
        console.log(`  ${s.name.padEnd(26)} floor ${fmt(floor.rps).padStart(7)} req/s  read ${fmt(read.rps).padStart(7)} req/s  steps ${fmt(steps.steps_per_s).padStart(7)}/s`);
      }
    }
    const sum = (xs: LoadResult[]) => xs.reduce((n, x) => n + x.requests, 0) / xs.reduce((n, x) => n + x.seconds, 0);
    // Per round, each figure against that round's floor; the median of the rounds resists a round a neighbour slowed.
    const perRound = (s: Side, rps: (i: number) => number) => median(s.floor.map((f, i) => f.rps / rps(i)));
    const figures = sides.map((s) => {
      const floorRps = sum(s.floor);
      const readRps = sum(s.reads);
      const stepsPerS = s.steps.reduce((a, b) => a + b, 0) / s.steps.length;
      return {
        side: s.name, floor_rps: round(floorRps, 1), read_rps: round(readRps, 1), steps_per_s: round(stepsPerS, 1),
        read_cost_ratio: round(floorRps / readRps, 3), step_cost_ratio: round(floorRps / stepsPerS, 3),
        read_cost_ratio_median: round(perRound(s, (i) => s.reads[i]!.rps), 3), step_cost_ratio_median: round(perRound(s, (i) => s.steps[i]!), 3),
      };
    });
    const [base, now] = figures as [(typeof figures)[0], (typeof figures)[0]];
    const comparison = {
      read_cost: round(now.read_cost_ratio / base.read_cost_ratio, 3), step_cost: round(now.step_cost_ratio / base.step_cost_ratio, 3),
      read_cost_median: round(now.read_cost_ratio_median / base.read_cost_ratio_median, 3), step_cost_median: round(now.step_cost_ratio_median / base.step_cost_ratio_median, 3),
    };
    printTables([
      {
        title: `Hot path with and without revocation checks (${rounds} interleaved rounds, ${CONCURRENCY} clients)`,
        headers: ["server", "floor req/s", "worker read req/s", "steps/s", "read cost ÷ floor", "step cost ÷ floor", "median of rounds: read", "median of rounds: step"],
        rows: figures.map((f) => [f.side, fmt(f.floor_rps), fmt(f.read_rps), fmt(f.steps_per_s), fmt(f.read_cost_ratio, 3), fmt(f.step_cost_ratio, 3), fmt(f.read_cost_ratio_median, 3), fmt(f.step_cost_ratio_median, 3)]),
      },
      {
        title: "This checkout ÷ baseline (1.00 = the same cost)",
        headers: ["worker read (pooled)", "unbatched step (pooled)", "worker read (median of rounds)", "unbatched step (median of rounds)"],
        rows: [[fmt(comparison.read_cost, 3), fmt(comparison.step_cost, 3), fmt(comparison.read_cost_median, 3), fmt(comparison.step_cost_median, 3)]],
      },
    ]);
    writeResults("bench/tokens-results.json", { baseline_rev: rev, source: sourceState(), machine: machineInfo(loadStart), concurrency: CONCURRENCY, rounds, figures, comparison }, (performance.now() - wallStart) / 1000);
  } finally {
    for (const s of servers) await stopDevServer(s);
    tree.remove();
  }
});
