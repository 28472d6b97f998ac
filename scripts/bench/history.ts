/**
 * @module `npm run bench:history`: one task with a long `task.progress` history (1,000,000 WAL events; `--quick`
 * 100,000) on one `wrangler dev`: steady complete + claim_next steps at the start and after every quarter of the
 * history, the first GET after a restart on the same storage (against a task of 10 events), and the whole WAL
 * exported in one streamed request (`?limit=all`) with workerd's peak RSS meanwhile. Writes bench/history-results.json.
 */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { defaultAdminToken, startDevServer, stopDevServer, stopOnSignal } from "../dev-server.js";
import { parseCli, run, wholeOption } from "./harness/cli.js";
import { idleBefore, round, runHeader, sourceState } from "./harness/meter.js";
import { writeResults } from "./harness/report.js";
import { runHistory } from "./scenarios/history.js";
import type { ServerSlot } from "./scenarios/recovery.js";

run(async () => {
  const usage = "usage: npm run bench:history -- [--quick] [--events 1000000] [--steps 300]";
  const cli = parseCli(usage, { quick: false, events: null as string | null, steps: null as string | null });
  const plan = { events: wholeOption(cli.events, "events", cli.quick ? 100_000 : 1_000_000), steps: wholeOption(cli.steps, "steps", cli.quick ? 200 : 300), perBatch: 256 };
  if (os.platform() !== "linux") throw new Error("bench:history samples /proc: Linux only");
  const loadStart = os.loadavg();
  const source = sourceState();
  const idle = await idleBefore();
  const t0 = performance.now();
  console.log(`bench:history: a task of ${plan.events} WAL events (${plan.perBatch} progress commands a batch), ${plan.steps} steps timed per checkpoint`);
  const slot: ServerSlot = { server: await startDevServer({ workDir: "bench/tmp" }), reloads: 0 };
  stopOnSignal(async () => {
    if (slot.server !== null) await stopDevServer(slot.server);
  });
  let history: Awaited<ReturnType<typeof runHistory>>;
  try {
    history = await runHistory(slot, defaultAdminToken(), plan);
  } finally {
    if (slot.server !== null) await stopDevServer(slot.server);
  }
  const results = {
    ...runHeader(cli.quick, loadStart, idle, source),
    plan,
    definitions: {
      checkpoints: "complete + claim_next of one worker, one call after another, at 0, 1/4, 1/2, 3/4 and all of the history",
      steps_per_s_last_to_first: "steps/s with the whole history ÷ steps/s at the start (1 = flat)",
      first_get_after_restart_ms: "the first GET .../tasks/{tid} after the dev server restarted on the same storage (object start + snapshot + WAL after it + view), the control first",
      export: "GET .../wal?limit=all read to the end by Node's fetch; workerd_rss_mib: VmRSS of the server's workerd processes, sampled every 10 ms",
    },
    history,
  };
  writeResults("bench/history-results.json", results, round((performance.now() - t0) / 1000, 1));
});
