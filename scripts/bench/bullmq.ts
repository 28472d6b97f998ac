/** @module `npm run bench:bullmq`: the peer alone, BullMQ on a local redis-server started here (AOF on, appendfsync everysec by default): the PING floor, N = max(40 × W, 320) jobs drained by W workers on 1 and 8 queues (pooled over at least 3 runs and 2 s), the idle round trip, and flows; writes bench/bullmq-results.json. */
import { int, ints, oneOf, parseCli, run } from "./harness/cli.js";
import { writeResults } from "./harness/report.js";
import { type BullmqBenchOptions, DEFAULT_OPTIONS, formatBullmqReport, problems, runBullmqBench } from "./scenarios/bullmq.js";

const USAGE = `usage: npm run bench:bullmq -- [--quick] [--out bench/bullmq-results.json] [--concurrency 1,8,32]
                                [--model concurrency|workers|both] [--appendfsync everysec|always|no]
                                [--remove-on-complete false|true|<count>]`;

run(async () => {
  const opts: BullmqBenchOptions = { ...DEFAULT_OPTIONS };
  let out = "bench/bullmq-results.json";
  parseCli(USAGE, {
    "--quick": () => (opts.quick = true),
    "--out": (v: string) => (out = v),
    "--concurrency": (v: string) => (opts.concurrencies = ints(v, "--concurrency", 256)),
    "--model": (v: string) => (opts.models = v === "both" ? ["concurrency", "workers"] : [oneOf(v, "--model", ["concurrency", "workers", "both"] as const) as "concurrency" | "workers"]),
    "--appendfsync": (v: string) => (opts.appendfsync = oneOf(v, "--appendfsync", ["everysec", "always", "no"] as const)),
    "--remove-on-complete": (v: string) => (opts.removeOnComplete = v === "true" || v === "false" ? v === "true" : int(v, "--remove-on-complete", Number.MAX_SAFE_INTEGER, 0)),
  });
  const results = await runBullmqBench(opts);
  console.log(`\n${formatBullmqReport(results)}`);
  const bad = problems(results);
  if (bad.length > 0) console.log(`\nwarning: ${bad.length} scenario(s) had errors, time-outs, duplicates or counts that differ from the plan: ${bad.join("; ")}`);
  writeResults(out, results, results.wall_seconds);
  if (bad.length > 0) process.exitCode = 1;
}, true);
