/**
 * @module `npm run bench:recovery`: bench's recovery section alone. WALs of 1,000 and 50,000 events (a task with
 * one claimed step and progress commands through the batch route) on one `wrangler dev`, the server stopped and
 * started again on the same storage, then each task's first GET: the object's start (snapshot + the WAL after it,
 * SNAPSHOT_EVERY_EVENTS) + the view, against a task of 10 events. Writes bench/recovery-results.json.
 */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { defaultAdminToken, startDevServer, stopDevServer } from "../dev-server.js";
import { parseCli, run, wholeOption } from "./harness/cli.js";
import { idleBefore, round, runHeader, sourceState } from "./harness/meter.js";
import { writeResults } from "./harness/report.js";
import { runRecovery, type ServerSlot } from "./scenarios/recovery.js";

run(async () => {
  const usage = "usage: npm run bench:recovery -- [--quick] [--events 50000] [--restarts 3] [--snapshot-every N]\n  --snapshot-every: SNAPSHOT_EVERY_EVENTS of the server that writes the WALs (default: wrangler.toml's)";
  const cli = parseCli(usage, { quick: false, events: null as string | null, restarts: null as string | null, snapshotEvery: null as string | null });
  const big = wholeOption(cli.events, "events", cli.quick ? 10_000 : 50_000);
  const plan = { recoveryEvents: [1_000, big], recoveryBatch: 256, recoveryWarmGets: cli.quick ? 3 : 5, recoveryRestarts: wholeOption(cli.restarts, "restarts", cli.quick ? 1 : 3) };
  const loadStart = os.loadavg();
  const source = sourceState();
  const idle = await idleBefore();
  const t0 = performance.now();
  console.log("starting node scripts/dev.mjs on a free port …");
  const vars: Record<string, string> = cli.snapshotEvery === null ? {} : { SNAPSHOT_EVERY_EVENTS: String(wholeOption(cli.snapshotEvery, "snapshot-every", 5_000)) };
  const slot: ServerSlot = { server: await startDevServer({ workDir: "bench/tmp", vars }), reloads: 0 };
  let recovery: Awaited<ReturnType<typeof runRecovery>>;
  try {
    recovery = await runRecovery(slot, defaultAdminToken(), plan);
  } finally {
    if (slot.server !== null) await stopDevServer(slot.server);
  }
  const [small, large] = recovery.wals;
  const ratio = small !== undefined && large !== undefined ? round(large.cold_get_ms / small.cold_get_ms, 2) : null;
  console.log(`\nfirst GET after a restart: ${small?.wal_events}-event WAL ${small?.cold_get_ms} ms, ${large?.wal_events}-event WAL ${large?.cold_get_ms} ms (ratio ${ratio}); control (10 events) ${recovery.control.cold_get_ms} ms`);
  const results = {
    ...runHeader(cli.quick, loadStart, idle, source),
    plan: { ...plan, snapshot_every_events: cli.snapshotEvery ?? "wrangler.toml" },
    definitions: { ratio: "first GET after a restart of the larger WAL ÷ the same for the 1,000-event WAL (p50 over the restarts)" },
    ratio_large_to_small: ratio,
    recovery,
  };
  writeResults("bench/recovery-results.json", results, round((performance.now() - t0) / 1000, 1));
});
