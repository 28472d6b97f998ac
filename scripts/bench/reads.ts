/** @module `npm run bench:reads`: the dev server's memory while many observers read one large task at once, for this checkout and, interleaved round by round, for another (`--baseline <rev or checkout>`, the code before a change); writes bench/reads-results.json. */
import os from "node:os";
import { stopDevServer, stopOnSignal } from "../dev-server.js";
import { parseCli, run } from "./harness/cli.js";
import { machineInfo } from "./harness/meter.js";
import { fmt, table, writeResults } from "./harness/report.js";
import { current, type ReadLoad, readsRun } from "./scenarios/reads.js";
import { baselineTree, treeState } from "./harness/baseline.js";

run(async () => {
  const usage = "usage: npm run bench:reads -- [--steps 10000] [--readers 32] [--rounds 3] [--baseline <rev or checkout>]";
  const cli = parseCli(usage, { steps: 10_000, readers: 32, rounds: 3, baseline: null as string | null });
  const opts = { ...cli, scenarios: ["get", "whole"] as ReadLoad[], baseline: cli.baseline === null ? null : baselineTree(cli.baseline).dir, out: "bench/reads-results.json" };
  stopOnSignal(async () => {
    if (current.server !== null) await stopDevServer(current.server);
  });
  if (os.platform() !== "linux") throw new Error("bench:reads samples /proc: Linux only");
  const here = process.cwd();
  const trees = opts.baseline === null ? [here] : [opts.baseline, here];
  const labels = new Map(trees.map((t) => [t, `${t === here ? "this" : "baseline"} ${treeState(t)}`]));
  const loadStart = os.loadavg();
  console.log(`bench:reads: ${opts.steps} steps, ${opts.readers} concurrent readers, ${opts.rounds} round(s) of ${opts.scenarios.join(", ")} for ${[...labels.values()].join(" and ")}`);
  const runs: Awaited<ReturnType<typeof readsRun>>[] = [];
  for (let r = 1; r <= opts.rounds; r++) {
    for (const scenario of opts.scenarios) {
      for (const tree of trees) {
        const x = await readsRun(tree, scenario, opts);
        runs.push(x);
        console.log(`  round ${r} ${scenario.padEnd(5)} ${labels.get(tree)!.padEnd(28)} RSS ${fmt(x.rss_before_mib)} → peak ${fmt(x.rss_peak_mib)} → ${fmt(x.rss_after_mib)} MiB; ${fmt(x.answer_bytes_per_reader / 1024, 0)} KiB a reader in ${x.requests} requests (${x.rate_limited} × 429), ${x.load_s} s, steps a reader ${x.steps_per_reader.join("/")}`);
      }
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
  const rows = opts.scenarios.flatMap((scenario) =>
    trees.map((tree) => {
      const mine = runs.filter((x) => x.tree === tree && x.scenario === scenario);
      const m = (f: (x: (typeof runs)[number]) => number) => median(mine.map(f));
      return [`${scenario} ${labels.get(tree)}`, fmt(m((x) => x.rss_before_mib)), `${fmt(m((x) => x.rss_peak_mib))} (${mine.map((x) => fmt(x.rss_peak_mib, 0)).join("/")})`, fmt(m((x) => x.rss_after_mib)), fmt(m((x) => x.answer_bytes_per_reader) / 1024, 0), fmt(m((x) => x.requests), 0), fmt(m((x) => x.rate_limited), 0), fmt(m((x) => x.load_s), 2)];
    }),
  );
  console.log(`\nmedians of ${opts.rounds} round(s) (peaks of each round in brackets):`);
  console.log(table(["load", "RSS before MiB", "RSS peak MiB", "RSS after MiB", "KiB a reader", "requests", "429s", "load s"], rows));
  writeResults(opts.out, { options: opts, machine: machineInfo(loadStart), trees: Object.fromEntries(labels), runs, at: new Date().toISOString() });
});
