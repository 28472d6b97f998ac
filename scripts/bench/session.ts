/**
 * @module `npm run bench:session [-- --quick] [--baseline <rev or checkout>]`: a session that holds many tasks. For
 * this checkout and, in the same run, a baseline (a commit checked out into a temporary work tree, or a checkout),
 * each on its own `wrangler dev` with BENCH_SEED=1: one session grown to 1,000, 10,000 and 100,000 tasks (created
 * through the API up to 10,000, timed; the rest seeded as index rows through the test-only bench routes, which a
 * baseline without them cannot do), the snapshot's p50 and body and the list and graph pages' p50 at each size;
 * creates/s at 1, 16 and 64 in flight; and with 1,000 tasks each completing steps, the session object's requests/s
 * (its index-push counter) and the server's CPU (the process group of wrangler and workerd: an approximation of the
 * object's). Prints tables and the goals; writes bench/session-results.json.
 */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { defaultAdminToken, type DevServer, startDevServer, stopDevServer, stopOnSignal } from "../dev-server.js";
import { baselineTree } from "./harness/baseline.js";
import { parseCli, run } from "./harness/cli.js";
import { Client } from "./harness/http-client.js";
import { machineInfo, sourceState } from "./harness/meter.js";
import { fmt, printTables, writeResults } from "./harness/report.js";
import { activeProgress, createRate, newObjectRate, retried, SESSION_PLANS, sessionGoals, sessionSizes, type SideResults } from "./scenarios/session.js";

run(async () => {
  const usage = "usage: npm run bench:session -- [--quick] [--baseline <git rev or checkout dir>] [--interval-ms 1000]";
  const opts = parseCli(usage, { quick: false, baseline: null as string | null, intervalMs: 1_000 });
  const plan = SESSION_PLANS[opts.quick ? "quick" : "full"];
  const adminToken = defaultAdminToken();
  const loadStart = os.loadavg();
  const wallStart = performance.now();
  const tree = opts.baseline === null ? null : baselineTree(opts.baseline);
  const servers: DevServer[] = [];
  stopOnSignal(async () => {
    for (const s of servers) await stopDevServer(s);
    tree?.remove();
  });
  const sides: { name: string; dir: string | undefined }[] = [{ name: "this checkout", dir: undefined }];
  if (tree !== null) sides.unshift({ name: `baseline ${opts.baseline}`, dir: tree.dir });
  type Created = Awaited<ReturnType<typeof createRate>>;
  type Active = Awaited<ReturnType<typeof activeProgress>> & { error?: string };
  const results: (SideResults & { side: string; build_through_api: { creates: number; seconds: number; per_s: number } | null; stopped_at: string | null; creates: Created[]; active: Active })[] = [];
  try {
    console.log(`bench:session (${opts.quick ? "quick" : "full"}): sizes ${plan.sizes.join(", ")} (API creates up to ${plan.createUpTo}, the rest seeded through the test-only bench routes)`);
    // Both servers stay up; each phase runs on one at a time, and the creates alternate level by level, so a busier
    // minute of the machine does not fall on one side's creates only.
    const clients: Client[] = [];
    for (const side of sides) {
      const server = await startDevServer({ vars: { BENCH_SEED: "1" }, ...(side.dir === undefined ? {} : { cwd: side.dir }) });
      servers.push(server);
      clients.push(new Client(server.base));
    }
    const grown = [];
    for (const [i, side] of sides.entries()) {
      console.log(`  ${side.name} (${servers[i]!.base}):`);
      const g = await sessionSizes(clients[i]!, adminToken, plan, (l) => console.log(l));
      if (g.stopped_at !== null) console.log(`    stopped at ${g.stopped_at}`);
      grown.push(g);
    }
    const creates: Created[][] = sides.map(() => []);
    const newObjects: (Awaited<ReturnType<typeof newObjectRate>>)[] = sides.map(() => null);
    for (const [level, [inFlight, count]] of Object.entries(plan.creates).map(([k, v]) => [Number(k), v] as const).entries()) {
      for (const i of level % 2 === 0 ? sides.keys() : [...sides.keys()].reverse()) {
        const c = await createRate(clients[i]!, adminToken, inFlight, count);
        creates[i]!.push(c);
        console.log(`  ${sides[i]!.name}: ${c.per_s} creates/s at ${inFlight} in flight`);
        // Right after the creates at 16, on the same server: the floor of making as many new task objects.
        if (inFlight === 16) {
          newObjects[i] = await newObjectRate(clients[i]!, adminToken, 16, count, `n${i}`);
          if (newObjects[i] !== null) console.log(`  ${sides[i]!.name}: ${newObjects[i]!.per_s} new task objects touched/s at 16 in flight`);
        }
      }
    }
    for (const [i, side] of sides.entries()) {
      // A server that fails this phase (an older one's requests were seen to hang here) is recorded, not the end of the run.
      const active: Active = await activeProgress(clients[i]!, adminToken, plan, servers[i]!).catch((e: unknown) => ({
        active_tasks: plan.activeTasks, in_flight: plan.activeInFlight, seconds: NaN, task_writes_per_s: NaN, session_requests: null, session_requests_per_s: null, server_cpu_share: null,
        error: e instanceof Error ? e.message.slice(0, 400) : String(e),
      }));
      console.log(`  ${side.name}: ${active.active_tasks} active tasks: ${active.task_writes_per_s} task writes/s, session requests/s ${fmt(active.session_requests_per_s)}, server CPU ${fmt(active.server_cpu_share, 2)} cores${active.error === undefined ? "" : `; failed: ${active.error}`}`);
      results.push({ side: side.name, ...grown[i]!, creates: creates[i]!, new_objects: newObjects[i]!, active });
    }
    const now = results.at(-1)!;
    const base = results.length > 1 ? results[0]! : null;
    const goals = sessionGoals(now, base, opts.intervalMs / 1000);
    printTables([
      {
        title: "Reads of one session by its size (p50 of sequential calls; seeded = index rows added through the test-only bench route)",
        headers: ["server", "tasks", "seeded", "snapshot ms", "snapshot KiB", "list (limit 50) ms", "graph (limit 100) ms", "failed (see the results file)"],
        rows: results.flatMap((r) => r.sizes.map((s) => [r.side, String(s.tasks), String(s.seeded), fmt(s.snapshot_p50_ms, 2), fmt(s.snapshot_bytes / 1024, 1), fmt(s.list_p50_ms, 2), fmt(s.graph_p50_ms, 2), Object.keys(s.errors ?? {}).join(", ")])),
      },
      {
        title: "Building the session through the API (one-step tasks, 16 in flight; past these, seeded)",
        headers: ["server", "tasks created", "seconds", "creates/s"],
        rows: results.map((r) => [r.side, String(r.build_through_api?.creates ?? 0), fmt(r.build_through_api?.seconds), fmt(r.build_through_api?.per_s)]),
      },
      {
        title: "Task creates/s (small tasks, each level in a fresh session)",
        headers: ["server", ...Object.keys(plan.creates).map((k) => `${k} in flight`), "new task objects touched/s, 16 in flight (the floor)"],
        rows: results.map((r) => [r.side, ...r.creates.map((c) => fmt(c.per_s)), fmt(r.new_objects?.per_s)]),
      },
      {
        title: `${plan.activeTasks} active tasks completing steps, ${plan.activeInFlight} calls in flight (CPU: the server's process group, an approximation of the session object's)`,
        headers: ["server", "task writes/s", "session requests/s", "requests per task per s", "server CPU (cores)", "failed"],
        rows: results.map((r) => [r.side, fmt(r.active.task_writes_per_s), fmt(r.active.session_requests_per_s), fmt(r.active.session_requests_per_s === null ? null : r.active.session_requests_per_s / r.active.active_tasks, 3), fmt(r.active.server_cpu_share, 2), r.active.error === undefined ? "" : r.active.error.slice(0, 60)]),
      },
      {
        title: "Goals (this checkout; creates against the baseline)",
        headers: ["goal", "value", "target", "met"],
        rows: goals.map((g) => [g.name, fmt(g.value, 3), `${g.op} ${g.target}`, g.met === null ? "-" : g.met ? "yes" : "no"]),
      },
    ]);
    writeResults("bench/session-results.json", { plan: { ...plan, quick: opts.quick, interval_ms: opts.intervalMs }, baseline_rev: opts.baseline, source: sourceState(), machine: machineInfo(loadStart), results, goals, creates_sent_again_after_503: retried.creates }, Math.round((performance.now() - wallStart) / 1000));
  } finally {
    for (const s of servers) await stopDevServer(s);
    tree?.remove();
  }
});
