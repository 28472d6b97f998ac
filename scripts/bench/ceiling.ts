/**
 * @module `npm run bench:ceiling`: how far one task over the command socket could go on this machine with what a
 * local `wrangler dev` adds and a deployed Worker does not pay taken away, against BullMQ in the same rounds. Two
 * dev servers: one as every other benchmark runs it (storage on this machine's disk, reached through wrangler's
 * proxy), and one with its storage on tmpfs (a commit's fsync costs next to nothing) reached at its own workerd
 * (no proxy: harness/inner-workerd.ts). bench:storage's socket rounds, 32 SDK workers and a lone one, then BullMQ
 * on a redis-server with `appendfsync everysec` and one with `always`. Writes bench/ceiling-results.json.
 */
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { defaultAdminToken, type DevServer, startDevServer, stopDevServer, stopOnSignal } from "../dev-server.js";
import { parseCli, run, wholeOption } from "./harness/cli.js";
import { Client } from "./harness/http-client.js";
import { innerWorkerdUrl } from "./harness/inner-workerd.js";
import { idleBefore, round, runHeader, sourceState } from "./harness/meter.js";
import { fmt, printTables, writeResults } from "./harness/report.js";
import { openPeer, PLANS as PEER_PLANS } from "./scenarios/bullmq.js";
import { PLANS as STEP_PLANS } from "./scenarios/steps.js";
import { ceilingRatios, type PeerSlot, pool, socketRounds, type Target } from "./scenarios/storage.js";

/** Where tmpfs is mounted on a Debian machine. */
const TMPFS = "/dev/shm";

run(async () => {
  const cli = parseCli("usage: npm run bench:ceiling -- [--quick] [--rounds 3]", { quick: false, rounds: null as string | null });
  if (!existsSync(TMPFS)) throw new Error(`${TMPFS} (tmpfs) is not here: the ceiling server keeps its storage there`);
  const rounds = wholeOption(cli.rounds, "rounds", cli.quick ? 1 : 3);
  const plan = { rounds, concurrencies: [32, 1], stepsPerWorker: cli.quick ? 40 : 150, minSteps: cli.quick ? 300 : 1_000, frames: [1, 3], http: STEP_PLANS[cli.quick ? "quick" : "full"] };
  const loadStart = os.loadavg();
  const idle = await idleBefore();
  const wall0 = performance.now();
  const servers: DevServer[] = [];
  const peers: PeerSlot[] = [];
  stopOnSignal(async () => {
    for (const s of servers) await stopDevServer(s);
  });
  try {
    const disk = await startDevServer();
    servers.push(disk);
    const tmpfs = await startDevServer({ persistDir: path.join(TMPFS, `agent-task-runtime-ceiling-${disk.base.split(":").at(-1)}-${Date.now()}`) });
    servers.push(tmpfs);
    const direct = await innerWorkerdUrl(tmpfs.child!.pid!, tmpfs.base);
    console.log(`as benchmarked: ${disk.base} (disk, through the proxy); ceiling: ${direct} (tmpfs, its own workerd; proxy at ${tmpfs.base})`);
    const targets: Target[] = [
      { name: "this", client: new Client(disk.base), pgid: disk.child!.pid! },
      { name: "ceiling", client: new Client(direct), pgid: tmpfs.child!.pid! },
    ];
    for (const appendfsync of ["everysec", "always"] as const) peers.push({ appendfsync, peer: await openPeer(PEER_PLANS[cli.quick ? "quick" : "full"], console.log, appendfsync) });
    const runs = await socketRounds(targets, peers, plan, defaultAdminToken(), console.log);
    const pooled = pool(runs);
    const ratios = ceilingRatios(pooled);
    printTables([
      { title: `pooled over ${rounds} round(s)`, headers: ["workers", "series", "steps or jobs/s", "per round", "server CPU ms/step", "problems"], rows: pooled.map((p) => [String(p.workers), p.series, fmt(p.per_s, 0), p.per_round.map((x) => fmt(x, 0)).join(" "), fmt(p.server_cpu_ms_per_step ?? NaN, 3), String(p.problems)]) },
      { title: "the socket's best ÷ BullMQ's best worker model (this: as every benchmark runs it; ceiling: tmpfs, no proxy)", headers: ["workers", "ours", "BullMQ AOF", "ratio"], rows: ratios.map((r) => [String(r.workers), r.target, r.appendfsync, fmt(r.ratio ?? NaN, 2)]) },
    ]);
    const problems = pooled.filter((p) => p.problems > 0);
    writeResults("bench/ceiling-results.json", { ...runHeader(cli.quick, loadStart, idle, sourceState()), plan, servers: { this: disk.base, ceiling: direct }, ratios, pooled }, round((performance.now() - wall0) / 1000, 1));
    if (problems.length > 0) {
      for (const p of problems) console.error(`${p.series} at ${p.workers} worker(s): ${p.problems} run(s) with errors, time-outs or a count that differs from the plan`);
      process.exitCode = 1;
    }
  } finally {
    for (const { peer } of peers) await peer.close();
    for (const s of servers) await stopDevServer(s);
  }
});
