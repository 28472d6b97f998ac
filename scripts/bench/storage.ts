/**
 * @module `npm run bench:storage`: the storage table in one run of one process, each figure with its goal. The
 * command socket (32 workers and a lone worker, one task) against BullMQ on two redis-servers, AOF fsync every
 * second and before each answer, interleaved round by round (with `--baseline`, another checkout's dev server in the
 * same rounds); the unbatched step against the floor (as `npm run bench`); the first GET after a restart (as
 * `npm run bench:recovery`). Writes bench/storage-results.json.
 */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { defaultAdminToken, type DevServer, reloadCount, stopDevServer, stopOnSignal, withBenchServer } from "../dev-server.js";
import { parseCli, run, wholeOption } from "./harness/cli.js";
import { Client } from "./harness/http-client.js";
import { idleBefore, round, runHeader, sourceState } from "./harness/meter.js";
import { errorText, printTables, writeResults } from "./harness/report.js";
import { openPeer, PLANS as PEER_PLANS } from "./scenarios/bullmq.js";
import { runRecovery, type ServerSlot } from "./scenarios/recovery.js";
import { baselineTree, startBaselineServer, treeState } from "./harness/baseline.js";
import { runSteps } from "./scenarios/steps-section.js";
import { PLANS as STEP_PLANS, stepProblem } from "./scenarios/steps.js";
import { baselineComparison, type PeerSlot, pool, type RoundRun, socketRounds, type StorageParts, storageFigures, storageTables, type Target } from "./scenarios/storage.js";

run(async () => {
  const usage = [
    "usage: npm run bench:storage -- [--quick] [--rounds 3] [--restarts 3] [--url http://127.0.0.1:<port>] [--baseline <rev or checkout>]",
    "  --quick: 1 round, fewer steps, 1 restart; --url: a server already running here (no recovery part: it restarts its own server);",
    "  --baseline: also a dev server of that revision or checkout, its socket figures in the same rounds (after ÷ before)",
  ].join("\n");
  const cli = parseCli(usage, { quick: false, rounds: null as string | null, restarts: null as string | null, url: null as string | null, baseline: null as string | null });
  const quick = cli.quick;
  const rounds = wholeOption(cli.rounds, "rounds", quick ? 1 : 3);
  const http = { ...STEP_PLANS[quick ? "quick" : "full"], repeats: rounds };
  // 150 steps a worker at 32 workers (as bench's group-commit runs); a lone worker's run at least 1,000 steps, so it lasts seconds.
  const plan = {
    rounds, concurrencies: [32, 1], stepsPerWorker: quick ? 40 : 150, minSteps: quick ? 300 : 1_000, frames: [1, 3], http, floorConcurrencies: [1, 8, 32],
    recovery: { recoveryEvents: [1_000, 50_000], recoveryBatch: 256, recoveryWarmGets: quick ? 3 : 5, recoveryRestarts: wholeOption(cli.restarts, "restarts", quick ? 1 : 3) },
  };
  const baselineDir = cli.baseline === null ? null : baselineTree(cli.baseline).dir;
  const adminToken = defaultAdminToken();
  const loadStart = os.loadavg();
  const source = sourceState();
  const wallStart = performance.now();
  const idle = await idleBefore();
  const log = (line: string) => console.log(line);

  const slot: ServerSlot = { server: null, reloads: 0 };
  let before: DevServer | null = null;
  stopOnSignal(async () => {
    for (const s of [slot.server, before]) if (s !== null) await stopDevServer(s);
  });
  const errors: Record<string, string> = {};
  /** One part of the run; a failure is recorded and the run goes on. */
  const part = async (name: string, body: () => Promise<void>) => {
    try {
      await body();
    } catch (e) {
      errors[name] = errorText(e);
      console.log(`  ${name} failed: ${errors[name]}`);
    }
  };
  let runs: RoundRun[] = [];
  let floor: StorageParts["floor"] = null;
  let recovery: StorageParts["recovery"] = null;
  const servers: Record<string, unknown> = {};
  // With --url, withBenchServer checks it (loopback, /health); else it starts this checkout's server, which the recovery
  // part replaces in `slot` on each restart: the last one is stopped here.
  await withBenchServer(cli.url, {}, async (base, server) => {
    slot.server = server;
    try {
      servers.this = { url: base, tree: treeState("."), started_by_script: server !== null, startup_ms: server?.startupMs ?? null, log: server?.logFile ?? null };
      const targets: Target[] = [{ name: "this", client: new Client(base), pgid: server?.child?.pid ?? null }];
      if (baselineDir !== null) {
        before = await startBaselineServer(baselineDir);
        servers.baseline = { url: before.base, dir: baselineDir, tree: treeState(baselineDir), startup_ms: before.startupMs, log: before.logFile };
        targets.push({ name: "baseline", client: new Client(before.base), pgid: before.child?.pid ?? null });
      }
      await part("socket rounds", async () => {
        const peers: PeerSlot[] = [];
        try {
          for (const appendfsync of ["everysec", "always"] as const) peers.push({ appendfsync, peer: await openPeer(PEER_PLANS[quick ? "quick" : "full"], log, appendfsync) });
          console.log(`\n[socket] ${plan.concurrencies.join(" and ")} worker(s) on one task: ours (${targets.map((t) => `${t.name} ${t.client.base}`).join(", ")}; frames per tick ${plan.frames.join(", ")}), BullMQ AOF everysec, BullMQ AOF always; ${rounds} round(s) after a warm-up`);
          runs = await socketRounds(targets, peers, plan, adminToken, log);
        } finally {
          for (const { peer } of peers) await peer.close();
        }
      });
      if (before !== null) {
        await stopDevServer(before);
        before = null;
      }
      await part("floor", async () => {
        console.log(`\n[floor] GET /health/object interleaved with the unbatched step scenario at ${plan.floorConcurrencies.join(", ")} workers (one task and ${http.multiTasks}), ${http.repeats} repeat(s)`);
        const s = await runSteps(targets[0]!.client, adminToken, { http, groupCommitStepsPerWorker: plan.stepsPerWorker, concurrencies: plan.floorConcurrencies, carriers: ["unbatched"], anatomy: false }, targets[0]!.pgid);
        floor = { floor: s.floor, unbatched: s.unbatched };
      });
      if (server === null) console.log("\n[recovery] skipped: --url is a server this script cannot restart");
      else {
        await part("recovery", async () => {
          console.log(`\n[recovery] WALs of ${plan.recovery.recoveryEvents.join(" and ")} events, the dev server restarted ${plan.recovery.recoveryRestarts} time(s) on the same storage`);
          recovery = await runRecovery(slot, adminToken, plan.recovery);
        });
      }
    } finally {
      if (before !== null) await stopDevServer(before);
      before = null;
      if (slot.server !== null) {
        slot.reloads += reloadCount(slot.server);
        if (slot.server !== server) await stopDevServer(slot.server);
      }
      slot.server = null;
    }
  });

  const pooled = pool(runs);
  const figures = storageFigures({ runs, pooled, floor, recovery });
  const comparison = baselineComparison(pooled, runs);
  printTables(storageTables(figures, pooled, comparison, rounds));
  const warnings = [
    ...Object.entries(errors).map(([name, e]) => `${name} failed: ${e}`),
    ...pooled.filter((p) => p.problems > 0).map((p) => `${p.series} at ${p.workers} worker(s): ${p.problems} run(s) with errors, time-outs, duplicates or a count that differs from the plan`),
    ...((floor as StorageParts["floor"])?.unbatched.filter(stepProblem).map((u) => `unbatched at ${u.workers} worker(s), ${u.tasks} task(s): errors, time-outs, duplicates or a server count that differs from the plan`) ?? []),
    ...(slot.reloads > 0 ? [`the dev server reloaded ${slot.reloads} time(s) during the run (source edited under it)`] : []),
  ];
  if (warnings.length > 0) console.log(`\nwarnings:\n${warnings.map((w) => `  ${w}`).join("\n")}`);
  const wall = round((performance.now() - wallStart) / 1000, 1);
  writeResults(
    "bench/storage-results.json",
    {
      ...runHeader(quick, loadStart, idle, source),
      plan: { ...plan, http: { ...http }, baseline: baselineDir },
      definitions: {
        socket: "steps/s of one fresh task completed with claim_next by W SDK workers over the command socket (ws), fN = N frames per tick; best = the better of f1 and f3 (pooled)",
        bullmq: "jobs/s of one fresh queue of pre-added jobs drained by W workers: one Worker of concurrency W or W Workers of concurrency 1 (best = the better, pooled); redis-server with AOF appendfsync everysec or always",
        cpu: "CPU ms per step: the dev server's process group (npx, wrangler, workerd) over the measured window ÷ steps; BullMQ: redis-server (INFO cpu) ÷ jobs",
        recovery: "first GET after a restart (p50 over the restarts) of the larger WAL ÷ the same for the 1,000-event WAL",
        floor: "GET /health/object req/s ÷ unbatched steps/s at the same concurrency, interleaved (as npm run bench)",
      },
      servers,
      figures,
      baseline_comparison: comparison,
      series: pooled,
      runs: runs.map(({ ours: _, peer: __, ...r }) => r),
      floor,
      recovery,
      warnings,
      wall_seconds: wall,
    },
    wall,
  );
  if (warnings.length > 0) process.exitCode = 1;
}, true);
