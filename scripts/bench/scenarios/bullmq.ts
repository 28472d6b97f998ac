/** @module The peer users would pick instead of this service. */
// BullMQ on a local Redis, every scenario in one run (Redis started and stopped here), its results and its report. Worker models: `concurrency` = one
// Worker per queue of concurrency W (what the BullMQ docs recommend for I/O-bound processors); `workers` = W Worker instances of concurrency 1 (each
// with its own connections: the closest analogue of W worker agents).
import { createRequire } from "node:module";
import os from "node:os";
import { performance } from "node:perf_hooks";
import type { FlowProducer, Queue, Worker } from "bullmq";
import type { Redis } from "ioredis";
import { idleBefore, machineCpu, machineInfo, round } from "../harness/meter.js";
import { type AppendFsync, killRedisNow, newClient, type RedisServer, startRedis, stopRedis } from "../harness/redis-server.js";
import { fmt, pct, span, table } from "../harness/report.js";
import { tail } from "../../dev-server.js";
import { type BigFlowResult, bigFlows, type SmallFlowsResult, smallFlows } from "./bullmq-flows.js";
import { closeAll, type Ctx, type FloorResult, type IdleResult, idleRoundTrip, layout, mergeSteps, pingFloor, redisCpuMs, type StepScenarioResult, stepScenario } from "./bullmq-jobs.js";

/**
 * Sizes of one run. Jobs per run = max(stepsPerWorker × workers, minSteps), like the service's steps per task.
 * Each step scenario runs at least `repeats` times (fresh queues each), and more (up to `maxRepeats`) until the
 * pooled measured time reaches `minMeasuredSeconds`: BullMQ drains 320 jobs in well under 0.1 s, too short a
 * window for one run. The results are pooled.
 */
export type BullmqPlan = Record<"stepsPerWorker" | "minSteps" | "repeats" | "maxRepeats" | "minMeasuredSeconds" | "multiQueues" | "scenarioTimeoutMs" | "floorMs" | "maxFloorOps" | "idleSamples" | "flowWorkers" | "bigFlowChildren" | "bigFlowRepeats" | "smallFlowChildren" | "smallFlows", number>;

/** The full plan (about 45 s on an idle 2-core machine) and the quick one (about 5 s, a smoke check of the benchmark itself). */
export const FULL: BullmqPlan = { stepsPerWorker: 40, minSteps: 320, repeats: 3, maxRepeats: 40, minMeasuredSeconds: 2, multiQueues: 8, scenarioTimeoutMs: 60_000, floorMs: 2_000, maxFloorOps: 500_000, idleSamples: 200, flowWorkers: 8, bigFlowChildren: 100, bigFlowRepeats: 5, smallFlowChildren: 4, smallFlows: 320 };
/** The quick plan. */
export const QUICK: BullmqPlan = { stepsPerWorker: 10, minSteps: 80, repeats: 1, maxRepeats: 1, minMeasuredSeconds: 0, multiQueues: 8, scenarioTimeoutMs: 30_000, floorMs: 500, maxFloorOps: 100_000, idleSamples: 30, flowWorkers: 8, bigFlowChildren: 100, bigFlowRepeats: 2, smallFlowChildren: 4, smallFlows: 80 };

/** How W workers are made: one Worker of concurrency W per queue, or W Workers of concurrency 1. */
export type WorkerModel = "concurrency" | "workers";
/** BullMQ's removeOnComplete for every job (false: keep every completed job, like our WAL keeps every attempt). */
export type RemoveOnComplete = boolean | number;

/** What to run. */
export interface BullmqBenchOptions {
  quick: boolean;
  concurrencies: number[];
  models: WorkerModel[];
  appendfsync: AppendFsync;
  removeOnComplete: RemoveOnComplete;
  /** Progress lines (default console.log); pass () => {} for silence. */
  log: (line: string) => void;
}

/** Both models at 1, 8 and 32 workers, AOF fsync every second, completed jobs kept. */
export const DEFAULT_OPTIONS: BullmqBenchOptions = { quick: false, concurrencies: [1, 8, 32], models: ["concurrency", "workers"], appendfsync: "everysec", removeOnComplete: false, log: (line) => console.log(line) };

function packageVersion(name: string): string {
  try {
    const req = createRequire(import.meta.url);
    return (req(`${name}/package.json`) as { version: string }).version;
  } catch {
    return "unknown";
  }
}

/** bench/bullmq-results.json, and the bullmq section of bench/results.json. */
export type BullmqResults = Awaited<ReturnType<typeof runBullmqBench>>;

/**
 * Starts Redis, runs every scenario, stops Redis (also on errors; on SIGINT/SIGTERM it kills Redis and, when
 * no other handler is listening, exits with 130). Returns the results; writes nothing.
 */
export async function runBullmqBench(options: Partial<BullmqBenchOptions> = {}) {
  const opts: BullmqBenchOptions = { ...DEFAULT_OPTIONS, ...options };
  const plan: BullmqPlan = opts.quick ? QUICK : FULL;
  const log = opts.log;
  const tracked = new Set<Queue | Worker | FlowProducer>();
  const loadStart = os.loadavg();
  const wallStart = performance.now();
  // Other load on the machine skews every figure below: measured for 1 s before anything starts, kept in the results.
  const idleShare = await idleBefore(log);

  let server: RedisServer | null = null;
  const onExit = () => {
    if (server !== null) killRedisNow(server);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    log(`\n${signal}: stopping redis-server`);
    onExit();
    // Only this handler listening: behave like the default (exit); otherwise the caller's handler decides.
    if (process.listenerCount(signal) <= 1) process.exit(130);
  };
  process.on("exit", onExit);
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  let admin: Redis | null = null;
  try {
    log(`starting redis-server on 127.0.0.1 (AOF on, appendfsync ${opts.appendfsync}) …`);
    server = await startRedis(opts.appendfsync);
    log(`redis ${server.version} up at 127.0.0.1:${server.port} (dir ${server.dir}); bullmq ${packageVersion("bullmq")}, ioredis ${packageVersion("ioredis")}`);
    // If Redis dies under the run, every scenario below stops waiting and the run fails at once.
    const child = server.child!;
    const logFile = server.logFile;
    const redisDied = new Promise<never>((_, reject) =>
      child.once("exit", (code, signal) => {
        if (server?.child === child) reject(new Error(`redis-server exited during the run (${code ?? signal}):\n${tail(logFile, 20)}`));
      }),
    );
    redisDied.catch(() => {});
    const guard = <T>(p: Promise<T>): Promise<T> => Promise.race([p, redisDied]);
    admin = newClient(server);
    admin.on("error", () => {});
    await admin.connect();
    const machine0 = machineCpu();
    const node0 = process.cpuUsage();
    const redis0 = await redisCpuMs(admin);
    let prefixSeq = 0;
    const ctx: Ctx = {
      server,
      plan,
      removeOnComplete: opts.removeOnComplete,
      nextPrefix: () => `bench${prefixSeq++}`,
      admin,
      track: (o) => {
        // Errors while Redis is healthy show up as failed or missing jobs; an unheard 'error' event would throw.
        (o as unknown as NodeJS.EventEmitter).on("error", () => {});
        tracked.add(o);
        return o;
      },
    };

    // Warm-up: scripts loaded into Redis, connections, JIT.
    await guard(stepScenario(ctx, "concurrency", 4, 1));
    await guard(stepScenario({ ...ctx, plan: { ...plan, minSteps: 40, stepsPerWorker: 5 } }, "workers", 8, plan.multiQueues));

    const floor: FloorResult[] = [];
    const steps: StepScenarioResult[] = [];
    for (const c of opts.concurrencies) {
      const f = await guard(pingFloor(server, c, plan.floorMs, plan.maxFloorOps));
      floor.push(f);
      log(`  PING floor            c=${String(c).padStart(2)}  ${f.rps.toFixed(0).padStart(7)} req/s  p50 ${f.latency.p50_ms.toFixed(3)} ms  p99 ${f.latency.p99_ms.toFixed(3)} ms`);
      for (const model of opts.models) {
        for (const queues of [1, plan.multiQueues]) {
          // Where both models lay the workers out the same way (W <= queues: Workers of concurrency 1), run it once.
          const same = JSON.stringify(layout("workers", c, queues)) === JSON.stringify(layout("concurrency", c, queues));
          if (model === "workers" && same && opts.models.includes("concurrency")) continue;
          const parts: StepScenarioResult[] = [];
          for (let r = 0; r < plan.maxRepeats && (r < plan.repeats || parts.reduce((a, p) => a + p.seconds, 0) < plan.minMeasuredSeconds); r++) {
            parts.push(await guard(stepScenario(ctx, model, c, queues)));
          }
          const res = mergeSteps(parts);
          steps.push(res);
          log(
            `  steps: ${model.padEnd(11)} ${String(queues).padStart(1)} queue(s) ${String(c).padStart(2)} workers  ${res.jobs_completed}/${res.jobs_planned} jobs (${parts.length} run(s)) in ${res.seconds.toFixed(2)} s = ${res.jobs_per_s.toFixed(0)} jobs/s  take→ack p50 ${res.take_to_ack.p50_ms.toFixed(2)} ms p99 ${res.take_to_ack.p99_ms.toFixed(2)} ms${res.errors > 0 ? `  errors ${res.errors}: ${res.first_error}` : ""}${res.timed_out ? "  TIMED OUT" : ""}`,
          );
        }
      }
    }

    const idle = await guard(idleRoundTrip(ctx));
    log(`  idle add→completed (1 worker, one job at a time): p50 ${idle.add_to_completed.p50_ms.toFixed(2)} ms  p99 ${idle.add_to_completed.p99_ms.toFixed(2)} ms (${idle.samples} jobs)`);

    const flows: { model: WorkerModel; big: BigFlowResult; small: SmallFlowsResult }[] = [];
    for (const model of opts.models) {
      const big = await guard(bigFlows(ctx, model));
      log(`  flow 1+${big.children} at ${big.workers} workers (${model}): total p50 ${big.total.p50_ms.toFixed(1)} ms (add ${big.add.p50_ms.toFixed(1)} ms, last child→parent done ${big.fan_in.p50_ms.toFixed(2)} ms)${big.timed_out ? "  TIMED OUT" : ""}`);
      const small = await guard(smallFlows(ctx, model));
      log(`  ${small.flows} flows of 1+${small.children_per_flow} at ${small.workers} workers (${model}): ${small.flows_per_s.toFixed(0)} flows/s (${small.jobs_per_s.toFixed(0)} jobs/s)${small.timed_out ? "  TIMED OUT" : ""}`);
      flows.push({ model, big, small });
    }

    const machine1 = machineCpu();
    const nodeUsed = process.cpuUsage(node0);
    const redisUsed = (await redisCpuMs(admin)) - redis0;
    const busy = machine1.total - machine0.total - (machine1.idle - machine0.idle);
    const foreign = Math.max(0, busy - redisUsed - (nodeUsed.user + nodeUsed.system) / 1000);
    const foreignShare = machine1.total > machine0.total ? round(foreign / (machine1.total - machine0.total), 3) : NaN;
    if (foreignShare > 0.1) log(`warning: other processes used ${(foreignShare * 100).toFixed(0)}% of the machine's CPU during the run: figures are skewed low`);
    return {
      generated_at: new Date().toISOString(),
      mode: opts.quick ? "quick" : "full",
      // foreign_cpu_share: of the machine's CPU time, what processes other than this one and its redis-server used.
      machine: { ...machineInfo(loadStart, os.loadavg()), cpu_idle_before: idleShare, foreign_cpu_share: foreignShare },
      software: { bullmq: packageVersion("bullmq"), ioredis: packageVersion("ioredis"), redis: server.version, redis_binary: server.binary, redis_installed_by_script: server.installedByScript },
      redis: { host: server.host, port: server.port, config: server.config },
      settings: { models: opts.models, remove_on_complete: opts.removeOnComplete, appendfsync: opts.appendfsync, job_processor: "async () => 'done' (no work)" },
      plan,
      concurrencies: opts.concurrencies,
      floor,
      steps: steps.map(({ samples: _, ...s }) => s),
      ratios: steps.map((s) => {
        const f = floor.find((x) => x.concurrency === s.workers)!;
        return { model: s.model, workers: s.workers, queues: s.queues, floor_rps: f.rps, jobs_per_s: s.jobs_per_s, job_cost_ms: round(1000 / s.jobs_per_s), cost_ratio: round(f.rps / s.jobs_per_s, 2), p50_ratio: round(s.take_to_ack.p50_ms / f.latency.p50_ms, 2) };
      }),
      idle,
      flows,
      wall_seconds: round((performance.now() - wallStart) / 1000, 1),
    };
  } finally {
    await closeAll(tracked, 10_000);
    admin?.disconnect();
    if (server !== null) await stopRedis(server);
    server = null;
    process.off("exit", onExit);
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** The printed report of one run. */
export function formatBullmqReport(r: BullmqResults): string {
  const m = r.machine;
  const out = [
    `BullMQ ${r.software.bullmq} on Redis ${r.software.redis} (${r.mode}) — ${m.cpus} CPUs, node ${m.node}, AOF appendfsync ${r.settings.appendfsync}, removeOnComplete ${String(r.settings.remove_on_complete)}, load ${m.loadavg_start.join(" ")} → ${m.loadavg_end.join(" ")}, CPU idle before ${(m.cpu_idle_before * 100).toFixed(0)}%, other processes' CPU share during the run ${(m.foreign_cpu_share * 100).toFixed(0)}%`,
    "take→ack = processor handed the job → completion acknowledged by Redis (the next job comes back in the same call)\n",
  ];
  const multi = r.plan.multiQueues;
  for (const model of r.settings.models) {
    out.push(`worker model: ${model === "concurrency" ? "one Worker per queue, concurrency = workers" : "N Worker instances, concurrency 1 each"}`);
    const rows = r.concurrencies.map((c) => {
      const f = r.floor.find((x) => x.concurrency === c);
      // A layout both models share was run once, under "concurrency".
      const find = (q: number) => r.steps.find((s) => s.workers === c && s.queues === q && s.model === model) ?? r.steps.find((s) => s.workers === c && s.queues === q);
      const cells = (s: StepScenarioResult | undefined) => [fmt(s?.jobs_per_s, 0), pct(s?.take_to_ack), pct(s?.add_to_completed, 0)];
      return [String(c), fmt(f?.rps, 0), pct(f?.latency, 3), ...cells(find(1)), ...cells(find(multi))];
    });
    out.push(table(["workers", "PING req/s", "PING p50/p99 ms", "1 queue jobs/s", "take→ack p50/p99 ms", "add→done p50/p99 ms", `${multi} queues jobs/s`, "take→ack p50/p99 ms", "add→done p50/p99 ms"], rows), "");
  }
  const runs = (s: StepScenarioResult) => (s.repeats ?? [s]).map((x) => x.jobs_per_s);
  const details = r.steps.map((s) => [s.model, String(s.workers), String(s.queues), s.layout, `${s.jobs_completed}/${s.jobs_planned}`, String(runs(s).length), fmt(s.seconds, 2), `${fmt(s.jobs_per_s, 0)} (${span(runs(s), 0)})`, `${fmt(s.cpu_ms_per_job.redis, 3)}+${fmt(s.cpu_ms_per_job.node, 3)}`, span(s.add_bulk_ms), String(s.errors), String(s.duplicate_completions), String(s.failed_jobs), String(s.verified_completed_in_redis ?? "-")]);
  out.push("step scenarios (details):", table(["model", "workers", "queues", "layout", "jobs", "runs", "seconds", "jobs/s (min..max run)", "CPU ms/job redis+node", "addBulk ms", "errors", "dups", "failed", "in redis"], details));
  out.push(`\nidle round trip (1 worker waiting, one job at a time, ${r.idle.samples} jobs): add→completed p50 ${fmt(r.idle.add_to_completed.p50_ms, 2)} ms, p99 ${fmt(r.idle.add_to_completed.p99_ms, 2)} ms; queue.add alone p50 ${fmt(r.idle.add_call.p50_ms, 2)} ms`);
  out.push("\nflows (FlowProducer; children and parent on one queue, the same workers):");
  const flows = r.flows.map(({ model, big, small }) => [model, String(big.workers), pct(big.total, 1, "max_ms"), fmt(big.add.p50_ms, 1), fmt(big.fan_in.p50_ms, 2), fmt(small.flows_per_s, 0), fmt(small.jobs_per_s, 0), fmt(small.seconds, 2), `${fmt(small.take_to_ack_children.p50_ms, 2)}/${fmt(small.take_to_ack_parents.p50_ms, 2)}`, String(big.errors + small.errors) + (big.timed_out || small.timed_out ? " TIMED OUT" : "")]);
  out.push(table(["model", "workers", "1+100: total p50/max ms", "add p50 ms", "last child→parent ms", `${r.plan.smallFlows}×(1+${r.plan.smallFlowChildren}): flows/s`, "jobs/s", "seconds", "take→ack child/parent p50 ms", "errors"], flows));
  return out.join("\n");
}

/** Scenarios with errors, time-outs, duplicates, failed jobs or a Redis count that differs from the plan. */
export function problems(r: BullmqResults): string[] {
  const bad: string[] = [];
  for (const s of r.steps) {
    if (s.errors > 0 || s.timed_out || s.duplicate_completions > 0 || s.failed_jobs > 0 || s.jobs_completed !== s.jobs_planned || (s.verified_completed_in_redis !== null && s.verified_completed_in_redis !== s.jobs_planned)) {
      bad.push(`steps ${s.model} ${s.workers} workers ${s.queues} queue(s)`);
    }
  }
  if (r.idle.timed_out) bad.push("idle round trip timed out");
  for (const f of r.flows) {
    if (f.big.timed_out || f.big.errors > 0 || f.big.runs.some((x) => x.children_completed !== f.big.children)) bad.push(`big flow (${f.model})`);
    if (f.small.timed_out || f.small.errors > 0 || f.small.flows_completed !== f.small.flows) bad.push(`small flows (${f.model})`);
  }
  return bad;
}

