/** @module `npm run bench`: every section in one command and one process, so every ratio it reports is measured in the same run on the same machine; writes bench/results.json. */
// One `wrangler dev` (restarted on the same storage for recovery), then, once it is stopped, `redis-server` for BullMQ; what each section
// measures and how is in docs/benchmarks.md. CPU of other processes is recorded: on a 2-core machine it skews every figure.
import os from "node:os";
import { performance } from "node:perf_hooks";
import { defaultAdminToken, reloadCount, startDevServer, stopDevServer, stopOnSignal } from "../dev-server.js";
import { parseCli, run } from "./harness/cli.js";
import { Client } from "./harness/http-client.js";
import { type CpuUse, cpuSnap, cpuUse, groupCpuMs, idleBefore, machineInfo, procStat, round, sourceState, sumCpu } from "./harness/meter.js";
import { errorText, fmt, printTables, writeResults } from "./harness/report.js";
import { computeRatios, driftAlarms, printDriftAlarms, goalsOf, printGoals, type Sections, tablesOf, warningsOf } from "./results.js";
import { runBullmqBench } from "./scenarios/bullmq.js";
import { growthScenario } from "./scenarios/growth.js";
import { runRecovery, type ServerSlot } from "./scenarios/recovery.js";
import { runSteps } from "./scenarios/steps-section.js";
import { PLANS as HTTP } from "./scenarios/steps.js";

/**
 * Sizes of one run (kept in the results as `plan`). `http`: the step scenarios' plan, in full with 5 repeats instead of
 * 3, as this machine's figures drift from one run to the next. Group-commit runs take 150 steps per worker (40
 * quick): they run 5–20× faster than unbatched steps, so the unbatched count would time tens of milliseconds of
 * ramp-up. Growth measures the first steps of each DAG size; recovery builds its WALs with 256 progress commands a
 * batch request (the route's maximum) and restarts the server on the same storage (cold samples are single shots).
 */
const FULL = {
  http: { ...HTTP.full, repeats: 5 }, groupCommitStepsPerWorker: 150, concurrencies: [1, 8, 32], growthSizes: [10, 1_000, 10_000], growthMeasuredSteps: 200, growthViewGets: 3,
  recoveryEvents: [10_000, 50_000], recoveryBatch: 256, recoveryWarmGets: 5, recoveryRestarts: 3,
};
const QUICK: typeof FULL = { ...FULL, http: HTTP.quick, groupCommitStepsPerWorker: 40, growthMeasuredSteps: 100, growthViewGets: 1, recoveryWarmGets: 3, recoveryRestarts: 1 };

run(async () => {
  const { quick } = parseCli("usage: npm run bench -- [--quick]", { quick: false });
  const plan = quick ? QUICK : FULL;
  const adminToken = defaultAdminToken();
  const wallStart = performance.now();
  const loadStart = os.loadavg();
  const source = sourceState();
  console.log(`bench (${quick ? "quick" : "full"}): steps, growth, recovery, bullmq`);
  const stat0 = procStat();
  const idle = await idleBefore();
  const slot: ServerSlot = { server: null, reloads: 0 };
  stopOnSignal(async () => {
    const s = slot.server;
    slot.server = null;
    if (s !== null) await stopDevServer(s);
  });
  const sectionErrors: Record<string, string> = {};
  const sections: Sections = { steps: null, growth: null, recovery: null, bullmq: null };
  let growthCpu: CpuUse | null = null;
  let serverInfo: { url: string; startup_ms: number; log: string | null; processes: number | null } | null = null;
  /** Runs one section; a failure is recorded and the run goes on. */
  const section = async (name: keyof Sections, title: string, body: () => Promise<void>) => {
    console.log(`\n[${name}] ${title}`);
    try {
      await body();
    } catch (e) {
      sectionErrors[name] = errorText(e);
      console.log(`  ${name} failed: ${sectionErrors[name]}`);
    }
  };
  try {
    console.log("starting wrangler dev (node scripts/dev.mjs) on a free port …");
    const server = (slot.server = await startDevServer());
    const pgid = server.child?.pid ?? null;
    serverInfo = { url: server.base, startup_ms: server.startupMs, log: server.logFile, processes: groupCpuMs(pgid)?.processes ?? null };
    console.log(`server up at ${server.base} after ${(server.startupMs / 1000).toFixed(1)} s (${serverInfo.processes ?? "?"} processes in its group; log ${server.logFile})`);
    const client = new Client(server.base);
    await section("steps", "floor, unbatched, batch requests and the command socket at the same concurrency", async () => {
      sections.steps = await runSteps(client, adminToken, plan, pgid);
    });
    await section("growth", "one worker, unbatched, per-step cost vs DAG size", async () => {
      const c0 = cpuSnap(pgid);
      sections.growth = [];
      for (const size of plan.growthSizes) {
        const g = await growthScenario(client, adminToken, size, plan.growthMeasuredSteps, plan.http.scenarioTimeoutMs, plan.growthViewGets);
        sections.growth.push(g);
        console.log(
          `  ${String(size).padStart(6)} steps: ${g.steps_measured} steps (${g.tasks} task(s)) ${fmt(g.steps_per_s)} steps/s  step p50 ${fmt(g.step_call.p50_ms, 2)} ms p99 ${fmt(g.step_call.p99_ms, 2)} ms  create ${fmt(g.create_task_ms.p50_ms, 1)} ms (${(g.create_body_bytes / 1024).toFixed(0)} KiB)  view GET ${fmt(g.view_get.p50_ms, 1)} ms (${(g.view_bytes / 1024).toFixed(0)} KiB)${g.errors > 0 ? `  errors ${g.errors}: ${g.first_error}` : ""}`,
        );
      }
      growthCpu = cpuUse(c0, cpuSnap(pgid));
    });
    await section("recovery", "WAL replay after a restart of the dev server on the same storage", async () => {
      sections.recovery = await runRecovery(slot, adminToken, plan);
    });
  } finally {
    if (slot.server !== null) {
      slot.reloads += reloadCount(slot.server);
      await stopDevServer(slot.server);
      slot.server = null;
    }
  }
  await section("bullmq", "the peer: BullMQ on a local redis-server (the dev server is stopped)", async () => {
    sections.bullmq = await runBullmqBench(quick, (line) => console.log(`  ${line.replace(/^\s+/, "")}`), plan.concurrencies);
  });

  const { steps, bullmq } = sections;
  const loadEnd = os.loadavg();
  const stat1 = procStat();
  const stealShare = stat0 === null || stat1 === null || stat1.total <= stat0.total ? null : round((stat1.steal - stat0.steal) / (stat1.total - stat0.total), 3);
  const ratios = steps === null ? [] : computeRatios(steps, bullmq, plan.concurrencies, plan.http.multiTasks);
  const goals = goalsOf(ratios, plan.concurrencies, plan.http.multiTasks);
  const ourCpu = [steps?.cpu, growthCpu].filter((c): c is CpuUse => c !== undefined && c !== null);
  const ours = ourCpu.length > 0 ? sumCpu(ourCpu) : null;
  const machine = machineInfo(loadStart, loadEnd);
  const results = {
    generated_at: new Date().toISOString(),
    mode: quick ? "quick" : "full",
    machine: {
      ...machine,
      cpu_idle_before: idle,
      // Share of the machine's CPU other processes used: during our steps+growth sections, and during BullMQ's run.
      other_processes_cpu_share: { ours: ours?.other_share ?? null, bullmq: bullmq?.machine.foreign_cpu_share ?? null },
      // Share of the CPU time the hypervisor gave to other guests over the whole run (/proc/stat steal).
      steal_share: stealShare,
    },
    source,
    server: serverInfo === null ? null : { ...serverInfo, reloads_during_run: slot.reloads },
    plan,
    section_errors: sectionErrors,
    ratios,
    goals,
    steps,
    growth: sections.growth === null ? null : { results: sections.growth, cpu: growthCpu },
    recovery: sections.recovery,
    bullmq,
    wall_seconds: round((performance.now() - wallStart) / 1000, 1),
  };

  const pct = (x: number | null | undefined, digits = 0) => (x == null ? "?" : `${(x * 100).toFixed(digits)}%`);
  const machineLine = `${machine.cpus} CPUs (${machine.cpu_model}), node ${process.version}, load ${loadStart.map((n) => n.toFixed(2)).join(" ")} → ${loadEnd.map((n) => n.toFixed(2)).join(" ")}, CPU idle before ${pct(idle)}, other processes' CPU share: ours ${pct(ours?.other_share)}, BullMQ ${pct(bullmq?.machine.foreign_cpu_share)}, steal ${pct(stealShare, 1)}`;
  console.log(`\n==== bench (${results.mode}) — ${machineLine}`);
  printTables(tablesOf(sections, ratios));
  if (ratios.length > 0) printGoals(goals, Math.max(...plan.concurrencies));
  const warnings = warningsOf(sections, sectionErrors, slot.reloads);
  if (warnings.length > 0) console.log(`\nwarnings:\n${warnings.map((w) => `  ${w}`).join("\n")}`);
  // The drift alarm: an unbatched step above the goal fails the run, loudly, after the results are written.
  const drift = driftAlarms(goals.unbatched_cost_within_goal);
  writeResults("bench/results.json", { ...results, warnings, drift_alarms: drift }, results.wall_seconds);
  printDriftAlarms(drift);
  if (warnings.length > 0 || drift.length > 0) process.exitCode = 1;
}, true);
