/** @module BullMQ's job scenarios, in the shapes of the service's step scenarios: the PING floor, N jobs pre-added then drained by W workers, the idle round trip. */
// A job is a step: BullMQ's `moveToCompleted` completes a job and fetches the next in one round trip, as `status {completed, claim_next: true}` does.
import { performance } from "node:perf_hooks";
import { type FlowProducer, type Job, Queue, Worker } from "bullmq";
import type { Redis } from "ioredis";
import { sleep } from "../../dev-server.js";
import { errorCount, mergeRuns, round, stats } from "../harness/meter.js";
import { newClient, type RedisServer } from "../harness/redis-server.js";
import { errorText } from "../harness/report.js";
import { deadlineAfter, latch, within } from "../harness/waits.js";
import type { BullmqPlan, WorkerModel } from "./bullmq.js";
import { closedLoop } from "./floor.js";

/** Every completed job is kept (like our WAL keeps every attempt), so Redis can count them afterwards. */
const REMOVE_ON_COMPLETE = false;

/** `concurrency` loops send PING back to back on one connection (ioredis pipelines them) for `durationMs`. */
export async function pingFloor(server: RedisServer, concurrency: number, durationMs: number, maxOps: number) {
  const client = newClient(server);
  client.on("error", () => {});
  await client.connect().catch((e: unknown) => {
    client.disconnect();
    throw e;
  });
  const ping = async () => {
    const s = performance.now();
    await client.ping();
    return { status: 200, body: null, ms: performance.now() - s };
  };
  const { requests, errors, seconds, rps, latency } = await closedLoop("PING", concurrency, durationMs, maxOps, ping);
  client.disconnect();
  return { op: "PING" as const, concurrency, requests, errors, seconds, rps, latency };
}

/** What every scenario of a run shares. */
export interface Ctx {
  server: RedisServer;
  plan: BullmqPlan;
  /** A fresh prefix per scenario keeps runs apart; the db is flushed between scenarios too. */
  nextPrefix: () => string;
  admin: Redis;
  /** Registers a BullMQ object so that an aborted run still closes it (else ioredis reconnects forever). */
  track: <T extends Queue | Worker | FlowProducer>(o: T) => T;
}

/** Closes every tracked BullMQ object (workers forced), bounded in time; closing twice is harmless. */
export async function closeAll(objects: Set<Queue | Worker | FlowProducer>, timeoutMs: number): Promise<void> {
  await within(Promise.allSettled([...objects].map((o) => (o instanceof Worker ? o.close(true) : o.close()))), timeoutMs);
  objects.clear();
}

/** CPU time redis-server has used so far (user + sys, all threads), in ms. */
export async function redisCpuMs(admin: Redis): Promise<number> {
  const info = await admin.info("cpu");
  const get = (k: string) => Number(new RegExp(`^${k}:([0-9.]+)`, "m").exec(info)?.[1] ?? 0);
  return (get("used_cpu_user") + get("used_cpu_sys")) * 1000;
}

/** The connection options of `ctx`'s server for BullMQ, with the scenario's prefix. */
export const connection = (ctx: Ctx, prefix: string) => ({ connection: { host: ctx.server.host, port: ctx.server.port }, prefix });

/** A tracked Queue of the scenario (`prefix`), completed jobs kept. */
export const newQueue = (ctx: Ctx, name: string, prefix: string): Queue => ctx.track(new Queue(name, { ...connection(ctx, prefix), defaultJobOptions: { removeOnComplete: REMOVE_ON_COMPLETE } }));

/**
 * A tracked Worker whose processor does no work but stamps when it was handed each job (`takenAt`, keyed by job id);
 * `completed` hears each completion with that stamp; failures and errors are counted in `errors`.
 */
export function newWorker(ctx: Ctx, name: string, prefix: string, concurrency: number, autorun: boolean, errors: ReturnType<typeof errorCount>, completed: (job: Job, now: number, takenAt: number | undefined) => void): Worker {
  const takenAt = new Map<string, number>();
  const processor = async (job: Job) => {
    takenAt.set(job.id ?? "", performance.now());
    return "done";
  };
  const w = ctx.track(new Worker(name, processor, { ...connection(ctx, prefix), concurrency, autorun }));
  w.on("completed", (job: Job) => completed(job, performance.now(), takenAt.get(job.id ?? "")));
  w.on("failed", (_job, err) => errors.note(`job failed: ${err.message}`));
  w.on("error", (err) => errors.note(`worker error: ${err.message}`));
  return w;
}

/** How W workers are laid out on Q queues; with W < Q, lane l drains queues l, l+W, … one after another. */
export function layout(model: WorkerModel, workers: number, queues: number): { perQueue: number[][]; lanes: number[][] } {
  const perQueue: number[][] = [];
  if (workers < queues) {
    for (let q = 0; q < queues; q++) perQueue.push([1]);
    const lanes = Array.from({ length: workers }, (_, l) => Array.from({ length: queues }, (_, q) => q).filter((q) => q % workers === l));
    return { perQueue, lanes };
  }
  for (let q = 0; q < queues; q++) {
    const share = Math.floor(workers / queues) + (q < workers % queues ? 1 : 0);
    perQueue.push(model === "concurrency" ? [share] : Array.from({ length: share }, () => 1));
  }
  return { perQueue, lanes: Array.from({ length: queues }, (_, q) => [q]) };
}

function describeLayout(perQueue: number[][], lanes: number[][]): string {
  const shapes = [...new Set(perQueue.map((ws) => (ws.every((c) => c === ws[0]) ? `${ws.length}×${ws[0]}` : ws.join("+"))))];
  const sequential = lanes.some((l) => l.length > 1) ? `, ${lanes.length} lane(s) draining queues in turn` : "";
  return `${shapes.join("/")} per queue${sequential}`;
}

/** The data of job `i`: what a step carries. */
export const stepData = (i: number) => ({ step_id: `s${String(i).padStart(5, "0")}`, title: `Step ${i}`, summary: "Independent bench step" });

/** One step scenario, or its repeats pooled (`repeats`: each run's figures). */
export type JobsResult = Awaited<ReturnType<typeof stepScenario>> & { repeats?: { jobs_per_s: number; seconds: number; p50_ms: number; p99_ms: number }[] };

/**
 * N = max(stepsPerWorker × W, minSteps) jobs pre-added on `queues` queues, then W workers (laid out by `model`) drain
 * them. take_to_ack = processor handed the job → `completed` event (completion acknowledged, the next job fetched in
 * the same call); add_to_completed = job added → completed (with the backlog pre-added, mostly queue wait);
 * verified_completed_in_redis = Redis's own count; cpu_ms_per_job = redis-server (INFO cpu) and this process over the window.
 */
export async function stepScenario(ctx: Ctx, model: WorkerModel, workers: number, queues: number) {
  const { plan } = ctx;
  const perQueueJobs = Math.ceil(Math.max(plan.stepsPerWorker * workers, plan.minSteps) / queues);
  const prefix = ctx.nextPrefix();
  const queueObjs = Array.from({ length: queues }, (_, q) => newQueue(ctx, `steps-${q}`, prefix));
  await Promise.all(queueObjs.map((q) => q.waitUntilReady()));
  const samples = { take_to_ack: [] as number[], add_to_completed: [] as number[] };
  const completedIds = new Set<string>();
  const doneByQueue = new Array<number>(queues).fill(0);
  const queueDone = Array.from({ length: queues }, () => latch());
  let duplicates = 0;
  let failed = 0;
  let lastDoneAt = 0;
  const errors = errorCount();
  const { perQueue, lanes } = layout(model, workers, queues);
  const workerObjs = perQueue.map((concs, q) =>
    concs.map((concurrency) =>
      newWorker(ctx, `steps-${q}`, prefix, concurrency, false, errors, (job, now, t) => {
        const k = `${q}#${job.id}`;
        if (t !== undefined) samples.take_to_ack.push(now - t);
        samples.add_to_completed.push(Date.now() - job.timestamp);
        if (completedIds.has(k)) duplicates++;
        completedIds.add(k);
        lastDoneAt = now;
        if (++doneByQueue[q]! >= perQueueJobs) queueDone[q]!.open();
      }).on("failed", () => failed++),
    ),
  );
  await Promise.all(workerObjs.flat().map((w) => w.waitUntilReady()));
  // The backlog is added once the workers are connected (not yet running), so add→completed holds no set-up time.
  const addMs: number[] = [];
  for (const [q, queue] of queueObjs.entries()) {
    const t = performance.now();
    await queue.addBulk(Array.from({ length: perQueueJobs }, (_, i) => ({ name: "step", data: stepData(q * perQueueJobs + i) })));
    addMs.push(round(performance.now() - t, 1));
  }
  const redisCpu0 = await redisCpuMs(ctx.admin);
  const nodeCpu0 = process.cpuUsage();
  const t0 = performance.now();
  const deadline = deadlineAfter(plan.scenarioTimeoutMs);
  let timedOut = false;
  const runs: Promise<void>[] = [];
  const drain = async (lane: number[]) => {
    for (const q of lane) {
      for (const w of workerObjs[q]!) runs.push(w.run().catch((e: unknown) => errors.note(`run: ${errorText(e)}`)));
      if ((await Promise.race([queueDone[q]!.promise, deadline.promise])) === "timeout") return void (timedOut = true);
    }
  };
  await Promise.all(lanes.map(drain));
  deadline.cancel();
  const seconds = ((lastDoneAt || performance.now()) - t0) / 1000;
  const nodeCpu = process.cpuUsage(nodeCpu0);
  const redisCpu = (await redisCpuMs(ctx.admin)) - redisCpu0;
  // Not measured: stop the workers, then ask Redis for its own count.
  await Promise.all(workerObjs.flat().map((w) => w.close()));
  await Promise.all(runs);
  let verified = 0;
  for (const queue of queueObjs) verified += (await queue.getJobCounts("completed")).completed ?? 0;
  await Promise.all(queueObjs.map((q) => q.close()));
  await ctx.admin.flushall();
  const completed = completedIds.size + duplicates;
  return {
    model, workers, queues, layout: describeLayout(perQueue, lanes), jobs_planned: perQueueJobs * queues, jobs_completed: completed, seconds: round(seconds, 6), jobs_per_s: round(completed / seconds, 1),
    take_to_ack: stats(samples.take_to_ack), add_to_completed: stats(samples.add_to_completed), add_bulk_ms: addMs, ...errors.fields(), failed_jobs: failed, duplicate_completions: duplicates, verified_completed_in_redis: verified,
    cpu_ms_per_job: { redis: round(redisCpu / Math.max(1, completed), 4), node: round((nodeCpu.user + nodeCpu.system) / 1000 / Math.max(1, completed), 4) },
    timed_out: timedOut, samples,
  };
}

/** Repeats of one scenario as one result: jobs and time summed, latencies pooled, CPU per job weighted by jobs. */
export function mergeJobs(parts: JobsResult[]): JobsResult {
  const m = mergeRuns(parts, ["workers", "queues"]);
  const cpu = (k: "redis" | "node") => round(parts.reduce((a, p) => a + p.cpu_ms_per_job[k] * p.jobs_completed, 0) / Math.max(1, m.jobs_completed), 4);
  const repeats = parts.map((p) => ({ jobs_per_s: p.jobs_per_s, seconds: p.seconds, p50_ms: p.take_to_ack.p50_ms, p99_ms: p.take_to_ack.p99_ms }));
  return { ...m, seconds: round(m.seconds, 6), jobs_per_s: round(m.jobs_completed / m.seconds, 1), cpu_ms_per_job: { redis: cpu("redis"), node: cpu("node") }, repeats };
}

/** add → completed of one job at a time to an idle worker (blocked waiting before each: the wake-up path, no backlog); add_call = queue.add alone. */
export async function idleRoundTrip(ctx: Ctx) {
  const prefix = ctx.nextPrefix();
  const queue = newQueue(ctx, "idle", prefix);
  await queue.waitUntilReady();
  const waiting = new Map<number, () => void>();
  const worker = ctx.track(new Worker("idle", async () => "done", { ...connection(ctx, prefix), concurrency: 1, autorun: false }));
  worker.on("completed", (job: Job) => waiting.get((job.data as { seq: number }).seq)?.());
  await worker.waitUntilReady();
  const run = worker.run().catch(() => {});
  await sleep(50);
  const e2e: number[] = [];
  const addCall: number[] = [];
  let timedOut = false;
  const until = performance.now() + ctx.plan.scenarioTimeoutMs;
  for (let seq = 0; seq < ctx.plan.idleSamples && performance.now() < until; seq++) {
    const done = latch();
    waiting.set(seq, done.open);
    const t = performance.now();
    await queue.add("step", { seq, ...stepData(seq) });
    addCall.push(performance.now() - t);
    const outcome = await within(done.promise, 10_000);
    waiting.delete(seq);
    if ((timedOut = outcome === "timeout")) break;
    e2e.push(performance.now() - t);
    await sleep(2); // let the worker go back to its blocking wait
  }
  await worker.close();
  await run;
  await queue.close();
  await ctx.admin.flushall();
  return { samples: e2e.length, add_to_completed: stats(e2e), add_call: stats(addCall), timed_out: timedOut };
}
