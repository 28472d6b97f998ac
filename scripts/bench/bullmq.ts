/** @module `npm run bench:bullmq`: the peer alone (see scenarios/bullmq.ts for what it runs); writes bench/bullmq-results.json. */
import { parseCli, run } from "./harness/cli.js";
import { printTables, writeResults } from "./harness/report.js";
import { bullmqTables, problems, runBullmqBench } from "./scenarios/bullmq.js";

run(async () => {
  const opts = parseCli("usage: npm run bench:bullmq -- [--quick]", { quick: false });
  const results = await runBullmqBench(opts.quick);
  printTables(bullmqTables(results));
  const bad = problems(results);
  if (bad.length > 0) console.log(`\nwarning: ${bad.length} scenario(s) had errors, time-outs, duplicates or counts that differ from the plan: ${bad.join("; ")}`);
  writeResults("bench/bullmq-results.json", results, results.wall_seconds);
  if (bad.length > 0) process.exitCode = 1;
}, true);
