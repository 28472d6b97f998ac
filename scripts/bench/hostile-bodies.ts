/**
 * @module `npm run bench:hostile-bodies`: workerd's RSS while 8 clients each stream a 200 MB chunked body at a task's
 * complete route (an observer's token, then an orchestrator's), at /mcp and at /a2a, each on a fresh `wrangler dev`,
 * for this checkout and, target by target, another (`--baseline <rev or checkout>`, the code before a change); prints idle,
 * peak and delta per target and
 * writes bench/hostile-bodies-results.json. The bound it checks: the peak within 64 MiB of idle.
 */
import os from "node:os";
import { stopDevServer, stopOnSignal } from "../dev-server.js";
import { parseCli, run } from "./harness/cli.js";
import { machineInfo } from "./harness/meter.js";
import { fmt, table, writeResults } from "./harness/report.js";
import { current, HOSTILE_TARGETS, hostileBodiesRun } from "./scenarios/hostile-bodies.js";
import { baselineTree, treeState } from "./harness/baseline.js";

/** How far above idle the peak may go. */
const BOUND_MIB = 64;

run(async () => {
  const usage = "usage: npm run bench:hostile-bodies -- [--clients 8] [--mib 200] [--baseline <rev or checkout>]";
  const cli = parseCli(usage, { clients: 8, mib: 200, baseline: null as string | null });
  const opts = { ...cli, baseline: cli.baseline === null ? null : baselineTree(cli.baseline).dir, out: "bench/hostile-bodies-results.json" };
  stopOnSignal(async () => {
    if (current.server !== null) await stopDevServer(current.server);
  });
  if (os.platform() !== "linux") throw new Error("bench:hostile-bodies samples /proc: Linux only");
  const here = process.cwd();
  const trees = opts.baseline === null ? [here] : [here, opts.baseline];
  const labels = new Map(trees.map((t) => [t, `${t === here ? "this" : "baseline"} ${treeState(t)}`]));
  const loadStart = os.loadavg();
  console.log(`bench:hostile-bodies: ${opts.clients} clients × ${opts.mib} MiB chunked bodies per target, for ${[...labels.values()].join(" and ")}`);
  const runs = [];
  for (const target of HOSTILE_TARGETS) {
    for (const tree of trees) {
      const r = await hostileBodiesRun(tree, target, opts);
      runs.push(r);
      console.log(`  ${labels.get(tree)} ${target}: ${r.answers.join("/")}, RSS ${fmt(r.idle_mib)} → peak ${fmt(r.peak_mib)} MiB`);
    }
  }
  const rows = runs.map((r) => [`${labels.get(r.tree)} ${r.target}`, r.answers.join("/"), fmt(r.idle_mib), fmt(r.peak_mib), fmt(r.delta_mib), fmt(r.sent_mib_per_client_max), fmt(r.answer_ms_max, 0), r.delta_mib <= BOUND_MIB ? "yes" : "NO"]);
  console.log(`\n${table(["code and target", "answers", "idle MiB", "peak MiB", "delta MiB", "MiB sent (max)", "answer ms (max)", `≤ ${BOUND_MIB} MiB`], rows)}`);
  writeResults(opts.out, { options: opts, machine: machineInfo(loadStart), trees: Object.fromEntries(labels), bound_mib: BOUND_MIB, runs, at: new Date().toISOString() });
  if (runs.some((r) => r.tree === here && r.delta_mib > BOUND_MIB)) process.exitCode = 1;
});
