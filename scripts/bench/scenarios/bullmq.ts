/** @module The peer users would pick instead of this service: BullMQ on a local Redis, every scenario in one run (Redis started and stopped here), its results and its tables. */
// Worker models: `concurrency` = one Worker per queue of concurrency W (what the BullMQ docs recommend for I/O-bound processors); `workers` = W Worker
// instances of concurrency 1 (each with its own connections: the closest analogue of W worker agents).
import { createRequire } from "node:module";
import os from "node:os";
import { performance } from "node:perf_hooks";
import type { FlowProducer, Queue, Worker } from "bullmq";
import type { Redis } from "ioredis";
import { tail } from "../../dev-server.js";
import { cpuSnap, cpuUse, idleBefore, machineInfo, round } from "../harness/meter.js";
import { type Appendfsync, killRedisNow, newClient, type RedisServer, startRedis, stopRedis } from "../harness/redis-server.js";
import { fmt, pct, span, type Table } from "../harness/report.js";
import { bigFlows, smallFlows } from "./bullmq-flows.js";
import { closeAll, type Ctx, idleRoundTrip, type JobsResult, layout, mergeJobs, pingFloor, redisCpuMs, stepScenario } from "./bullmq-jobs.js";

/**
 * Sizes of one run. Jobs per run = max(stepsPerWorker × workers, minSteps), like the service's steps per task.
 * Each step scenario runs at least `repeats` times (fresh queues each), and more (up to `maxRepeats`) until the
 * pooled measured time reaches `minMeasuredSeconds`: BullMQ drains 320 jobs in well under 0.1 s, too short a
 * window for one run. The results are pooled.
 */
export type BullmqPlan = Record<"stepsPerWorker" | "minSteps" | "repeats" | "maxRepeats" | "minMeasuredSeconds" | "multiQueues" | "scenarioTimeoutMs" | "floorMs" | "maxFloorOps" | "idleSamples" | "flowWorkers" | "bigFlowChildren" | "bigFlowRepeats" | "smallFlowChildren" | "smallFlows", number>;

/** The full plan (about 45 s on an idle 2-core machine) and the quick one (about 5 s, a smoke check of the benchmark itself). */
export const PLANS: Record<"full" | "quick", BullmqPlan> = {
  full: { stepsPerWorker: 40, minSteps: 320, repeats: 3, maxRepeats: 40, minMeasuredSeconds: 2, multiQueues: 8, scenarioTimeoutMs: 60_000, floorMs: 2_000, maxFloorOps: 500_000, idleSamples: 200, flowWorkers: 8, bigFlowChildren: 100, bigFlowRepeats: 5, smallFlowChildren: 4, smallFlows: 320 },
  quick: { stepsPerWorker: 10, minSteps: 80, repeats: 1, maxRepeats: 1, minMeasuredSeconds: 0, multiQueues: 8, scenarioTimeoutMs: 30_000, floorMs: 500, maxFloorOps: 100_000, idleSamples: 30, flowWorkers: 8, bigFlowChildren: 100, bigFlowRepeats: 2, smallFlowChildren: 4, smallFlows: 80 },
};

/** How W workers are made: one Worker of concurrency W per queue, or W Workers of concurrency 1. */
export type WorkerModel = "concurrency" | "workers";
const MODELS: WorkerModel[] = ["concurrency", "workers"];

function packageVersion(name: string): string {
  try {
    return (createRequire(import.meta.url)(`${name}/package.json`) as { version: string }).version;
  } catch {
    return "unknown";
  }
}

/** bench/bullmq-results.json, and the bullmq section of bench/results.json. */
export type BullmqResults = Awaited<ReturnType<typeof runBullmqBench>>;

/** A BullMQ peer ready for scenarios: its own redis-server, the admin connection and the scenarios' context. */
export interface Peer {
  redis: RedisServer;
  ctx: Ctx;
  /** `p`, failing at once if Redis dies meanwhile. */
  guard: <T>(p: Promise<T>) => Promise<T>;
  /** Closes every BullMQ object of the peer, stops Redis and removes the peer's exit and signal handlers. */
  close: () => Promise<void>;
}

/**
 * Starts a redis-server (AOF on, `appendfsync`) and connects to it. Until `close`, the process's exit kills that
 * Redis, and so does SIGINT/SIGTERM (when no other handler is listening, it then exits with 130).
 */
export async function openPeer(plan: BullmqPlan, log: (line: string) => void = console.log, appendfsync: Appendfsync = "everysec"): Promise<Peer> {
  const tracked = new Set<Queue | Worker | FlowProducer>();
  let server: RedisServer | null = null;
  let admin: Redis | null = null;
  const onExit = () => server !== null && killRedisNow(server);
  const onSignal = (signal: NodeJS.Signals) => {
    log(`\n${signal}: stopping redis-server`);
    onExit();
    // Only this handler listening: behave like the default (exit); otherwise the caller's handler decides.
    if (process.listenerCount(signal) <= 1) process.exit(130);
  };
  process.on("exit", onExit);
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const close = async () => {
    await closeAll(tracked, 10_000);
    admin?.disconnect();
    if (server !== null) await stopRedis(server);
    server = null;
    process.off("exit", onExit);
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  };
  try {
    log(`starting redis-server on 127.0.0.1 (AOF on, appendfsync ${appendfsync}) …`);
    const redis = (server = await startRedis({ appendfsync }));
    log(`redis ${redis.version} up at 127.0.0.1:${redis.port} (dir ${redis.dir}); bullmq ${packageVersion("bullmq")}, ioredis ${packageVersion("ioredis")}`);
    // If Redis dies under the run, every scenario below stops waiting and the run fails at once.
    const child = redis.child!;
    const redisDied = new Promise<never>((_, reject) => child.once("exit", (code, signal) => server?.child === child && reject(new Error(`redis-server exited during the run (${code ?? signal}):\n${tail(redis.logFile, 20)}`))));
    redisDied.catch(() => {});
    const guard = <T>(p: Promise<T>): Promise<T> => Promise.race([p, redisDied]);
    admin = newClient(redis);
    admin.on("error", () => {});
    await admin.connect();
    let prefixSeq = 0;
    // Errors while Redis is healthy show up as failed or missing jobs; an unheard 'error' event would throw.
    const track = <T extends Queue | Worker | FlowProducer>(o: T): T => {
      (o as unknown as NodeJS.EventEmitter).on("error", () => {});
      tracked.add(o);
      return o;
    };
    return { redis, ctx: { server: redis, plan, nextPrefix: () => `bench${prefixSeq++}`, admin, track }, guard, close };
  } catch (e) {
    await close();
    throw e;
  }
}

/** Warm-up of a peer, not measured: scripts loaded into Redis, connections, JIT. */
export async function warmPeer({ ctx, guard }: Peer): Promise<void> {
  await guard(stepScenario(ctx, "concurrency", 4, 1));
  await guard(stepScenario({ ...ctx, plan: { ...ctx.plan, minSteps: 40, stepsPerWorker: 5 } }, "workers", 8, ctx.plan.multiQueues));
}

/**
 * Starts Redis (AOF on, appendfsync everysec), runs every scenario at 1, 8, 32 workers (or `concurrencies`), both
 * worker models, stops Redis (also on errors; on SIGINT/SIGTERM it kills Redis and, when no other handler is
 * listening, exits with 130). Returns the results; writes nothing.
 */
export async function runBullmqBench(quick: boolean, log: (line: string) => void = console.log, concurrencies = [1, 8, 32]) {
  const plan = PLANS[quick ? "quick" : "full"];
  const loadStart = os.loadavg();
  const wallStart = performance.now();
  // Other load on the machine skews every figure below: measured for 1 s before anything starts, kept in the results.
  const idleShare = await idleBefore(log);
  const peer = await openPeer(plan, log);
  try {
    const { redis, ctx, guard } = peer;
    const admin = ctx.admin;
    // Redis's CPU stands for the server's: other processes' share = the machine's busy time less this process and Redis.
    const cpu0 = cpuSnap(null, await redisCpuMs(admin));
    await warmPeer(peer);
    const floor: Awaited<ReturnType<typeof pingFloor>>[] = [];
    const steps: JobsResult[] = [];
    for (const c of concurrencies) {
      const f = await guard(pingFloor(redis, c, plan.floorMs, plan.maxFloorOps));
      floor.push(f);
      log(`  PING floor            c=${String(c).padStart(2)}  ${f.rps.toFixed(0).padStart(7)} req/s  p50 ${f.latency.p50_ms.toFixed(3)} ms  p99 ${f.latency.p99_ms.toFixed(3)} ms`);
      for (const model of MODELS) {
        for (const queues of [1, plan.multiQueues]) {
          // Where both models lay the workers out the same way (W <= queues: Workers of concurrency 1), run it once.
          if (model === "workers" && JSON.stringify(layout("workers", c, queues)) === JSON.stringify(layout("concurrency", c, queues))) continue;
          const parts: JobsResult[] = [];
          for (let r = 0; r < plan.maxRepeats && (r < plan.repeats || parts.reduce((a, p) => a + p.seconds, 0) < plan.minMeasuredSeconds); r++) parts.push(await guard(stepScenario(ctx, model, c, queues)));
          const res = mergeJobs(parts);
          steps.push(res);
          log(`  steps: ${model.padEnd(11)} ${queues} queue(s) ${String(c).padStart(2)} workers  ${res.jobs_completed}/${res.jobs_planned} jobs (${parts.length} run(s)) in ${res.seconds.toFixed(2)} s = ${res.jobs_per_s.toFixed(0)} jobs/s  take→ack p50/p99 ${pct(res.take_to_ack)} ms${res.errors > 0 ? `  errors ${res.errors}: ${res.first_error}` : ""}${res.timed_out ? "  TIMED OUT" : ""}`);
        }
      }
    }
    const idle = await guard(idleRoundTrip(ctx));
    log(`  idle add→completed (1 worker, one job at a time): p50/p99 ${pct(idle.add_to_completed)} ms (${idle.samples} jobs)`);
    const flows: { model: WorkerModel; big: Awaited<ReturnType<typeof bigFlows>>; small: Awaited<ReturnType<typeof smallFlows>> }[] = [];
    for (const model of MODELS) {
      const big = await guard(bigFlows(ctx, model));
      log(`  flow 1+${big.children} at ${big.workers} workers (${model}): total p50 ${fmt(big.total.p50_ms)} ms (add ${fmt(big.add.p50_ms)} ms, last child→parent done ${fmt(big.fan_in.p50_ms, 2)} ms)${big.timed_out ? "  TIMED OUT" : ""}`);
      const small = await guard(smallFlows(ctx, model));
      log(`  ${small.flows} flows of 1+${small.children_per_flow} at ${small.workers} workers (${model}): ${fmt(small.flows_per_s, 0)} flows/s (${fmt(small.jobs_per_s, 0)} jobs/s)${small.timed_out ? "  TIMED OUT" : ""}`);
      flows.push({ model, big, small });
    }
    const foreignShare = cpuUse(cpu0, cpuSnap(null, await redisCpuMs(admin))).other_share ?? NaN;
    if (foreignShare > 0.1) log(`warning: other processes used ${(foreignShare * 100).toFixed(0)}% of the machine's CPU during the run: figures are skewed low`);
    return {
      generated_at: new Date().toISOString(),
      mode: quick ? "quick" : "full",
      // foreign_cpu_share: of the machine's CPU time, what processes other than this one and its redis-server used.
      machine: { ...machineInfo(loadStart, os.loadavg()), cpu_idle_before: idleShare, foreign_cpu_share: foreignShare },
      software: { bullmq: packageVersion("bullmq"), ioredis: packageVersion("ioredis"), redis: redis.version, redis_binary: redis.binary, redis_installed_by_script: false },
      redis: { host: redis.host, port: redis.port, config: redis.config },
      settings: { models: MODELS, remove_on_complete: false, appendfsync: "everysec", job_processor: "async () => 'done' (no work)" },
      plan,
      concurrencies,
      floor,
      steps,
      ratios: steps.map((s) => {
        const f = floor.find((x) => x.concurrency === s.workers)!;
        return { model: s.model, workers: s.workers, queues: s.queues, floor_rps: f.rps, jobs_per_s: s.jobs_per_s, job_cost_ms: round(1000 / s.jobs_per_s), cost_ratio: round(f.rps / s.jobs_per_s, 2), p50_ratio: round(s.take_to_ack.p50_ms / f.latency.p50_ms, 2) };
      }),
      idle,
      flows,
      wall_seconds: round((performance.now() - wallStart) / 1000, 1),
    };
  } finally {
    await peer.close();
  }
}

/** The tables of one run: the step scenarios with their PING floor, and the flows. */
export function bullmqTables(b: BullmqResults): Table[] {
  const runs = (s: BullmqResults["steps"][number]) => (s.repeats ?? [s]).map((x) => x.jobs_per_s);
  return [
    {
      title: `BullMQ ${b.software.bullmq} on Redis ${b.software.redis} (AOF appendfsync ${b.settings.appendfsync}, removeOnComplete ${String(b.settings.remove_on_complete)}; take→ack = processor handed the job → completion acknowledged, the next job coming back in the same call)`,
      headers: ["model", "workers", "queues", "layout", "jobs", "jobs/s (min..max run)", "take→ack p50/p99 ms", "add→done p50/p99 ms", "CPU ms/job redis+node", "PING req/s", "errors", "dups", "failed", "in redis"],
      rows: b.steps.map((x) => [x.model, String(x.workers), String(x.queues), x.layout, `${x.jobs_completed}/${x.jobs_planned}`, `${fmt(x.jobs_per_s, 0)} (${span(runs(x), 0)})`, pct(x.take_to_ack), pct(x.add_to_completed, 0), `${fmt(x.cpu_ms_per_job.redis, 3)}+${fmt(x.cpu_ms_per_job.node, 3)}`, fmt(b.floor.find((f) => f.concurrency === x.workers)?.rps, 0), String(x.errors), String(x.duplicate_completions), String(x.failed_jobs), String(x.verified_completed_in_redis)]),
    },
    {
      title: `BullMQ flows (FlowProducer, fan-in; children and parent on one queue); idle add→completed p50/p99 ${pct(b.idle.add_to_completed)} ms`,
      headers: ["model", "workers", "1+100: total p50/max ms", "last child→parent p50 ms", `${b.plan.smallFlows}×(1+${b.plan.smallFlowChildren}): flows/s`, "jobs/s", "errors"],
      rows: b.flows.map((f) => [f.model, String(f.big.workers), pct(f.big.total, 1, "max_ms"), fmt(f.big.fan_in.p50_ms, 2), fmt(f.small.flows_per_s, 0), fmt(f.small.jobs_per_s, 0), String(f.big.errors + f.small.errors) + (f.big.timed_out || f.small.timed_out ? " TIMED OUT" : "")]),
    },
  ];
}

/** A step scenario with errors, a time-out, duplicates, failed jobs or a Redis count that differs from the plan. */
export const jobsProblem = (s: JobsResult): boolean => s.errors > 0 || s.timed_out || s.duplicate_completions > 0 || s.failed_jobs > 0 || s.jobs_completed !== s.jobs_planned || s.verified_completed_in_redis !== s.jobs_planned;

/** Scenarios with errors, time-outs, duplicates, failed jobs or a Redis count that differs from the plan. */
export function problems(r: BullmqResults): string[] {
  const bad = r.steps.filter(jobsProblem).map((s) => `steps ${s.model} ${s.workers} workers ${s.queues} queue(s)`);
  if (r.idle.timed_out) bad.push("idle round trip timed out");
  for (const f of r.flows) {
    if (f.big.timed_out || f.big.errors > 0 || f.big.runs.some((x) => x.children_completed !== f.big.children)) bad.push(`big flow (${f.model})`);
    if (f.small.timed_out || f.small.errors > 0 || f.small.flows_completed !== f.small.flows) bad.push(`small flows (${f.model})`);
  }
  return bad;
}
