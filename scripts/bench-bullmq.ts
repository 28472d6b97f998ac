/**
 * @module The baseline users would pick instead of this service: BullMQ on a local Redis, measured in the
 * shapes of scripts/bench-http.ts. A job is a step: added up front, taken by a worker, completed (BullMQ's
 * `moveToCompleted` script completes the job and fetches the next one in the same round trip, as our
 * `status {completed, claim_next: true}` call does).
 *
 * Usage:
 *   npm run bench:bullmq                    # full run (about 45 s on an idle 2-core machine)
 *   npm run bench:bullmq -- --quick         # short run, about 5 s (smoke check of the benchmark itself)
 *   npx tsx scripts/bench-bullmq.ts [options]
 * Options:
 *   --out <file>                 results JSON (default bench/bullmq-results.json)
 *   --concurrency <list>         comma-separated worker counts (default 1,8,32)
 *   --model <m>                  concurrency | workers | both (default both): how W workers are made, see below
 *   --appendfsync <p>            everysec (default) | always | no: Redis AOF fsync policy
 *   --remove-on-complete <v>     false (default: keep every completed job, like our WAL keeps every attempt)
 *                                | true | <count>: BullMQ's removeOnComplete for every job
 *
 * What it starts: `redis-server` (Debian's package; installed with apt-get when missing and running as root)
 * on 127.0.0.1 and a free port, in its own temp dir, AOF on (`appendfsync everysec` by default), RDB
 * snapshots off, stopped at the end, on errors and on Ctrl-C. Nothing but loopback is ever contacted.
 *
 * What it measures (every loop bounded in count and time):
 *   - floor: Redis PING round trips at the same client concurrency (the analogue of GET /health/object);
 *   - steps: N = max(40 × W, 320) jobs pre-added, then W workers started; jobs/s = completed / (last
 *     completion − start), pooled over repeats (full: at least 3 runs and 2 s measured, at most 40 runs,
 *     since one run of 320 jobs lasts only tens of ms); per-job latency = the processor being handed the job → the `completed` event
 *     (the completion acknowledged by Redis; it carries the next job); add→completed (mostly backlog wait);
 *     on 1 queue and on 8 queues (workers split across them; with fewer workers than queues each worker
 *     drains its queues one after the other, like bench-http's runs);
 *   - idle: one idle worker, one job added at a time, add → completed (the wake-up path, no backlog);
 *   - flows (FlowProducer, fan-in): 1 parent + 100 children at 8 workers, time to the parent's completion;
 *     320 flows of 1 + 4 pre-added, flows/s at 8 workers. Children and parent share one queue and its workers.
 * Worker models: `concurrency` = one Worker per queue with `concurrency: W` (what the BullMQ docs recommend
 * for I/O-bound processors, and what a user writes); `workers` = W Worker instances of concurrency 1 (each
 * with its own connections: the closest analogue of W separate worker agents).
 *
 * Other load skews every figure (the machine has 2 cores): the results record the CPU idle share before the
 * run and the share of CPU time other processes used during it (`machine.foreign_cpu_share`), and warn.
 *
 * Exported for a unified bench in the same process: `runBullmqBench(options)` (starts and stops its own Redis,
 * returns the results, writes nothing; on SIGINT/SIGTERM it kills Redis and exits only when no other handler
 * listens), `formatBullmqReport`, `problems`, `writeBullmqResults`, `FULL`, `QUICK`.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { connect } from "node:net";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { FlowProducer, type Job, Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { cpuIdleShare, eachArg, exitWithError, fmt, freePort, isMain, type LatencyStats, machineCpu, machineInfo, round, sleep, stats, table, tail } from "./bench-common.js";

// ---- plan and options ----------------------------------------------------------------------------

/** Sizes of one run. */
export interface BullmqPlan {
  /** Jobs per run = max(stepsPerWorker × workers, minSteps), like bench-http's steps per task. */
  stepsPerWorker: number;
  minSteps: number;
  /**
   * Each step scenario runs at least `repeats` times (fresh queues each), and more (up to `maxRepeats`) until
   * the pooled measured time reaches `minMeasuredSeconds`: BullMQ drains 320 jobs in well under 0.1 s, too
   * short a window for one run. The results are pooled.
   */
  repeats: number;
  maxRepeats: number;
  minMeasuredSeconds: number;
  multiQueues: number;
  scenarioTimeoutMs: number;
  floorMs: number;
  maxFloorOps: number;
  idleSamples: number;
  flowWorkers: number;
  bigFlowChildren: number;
  bigFlowRepeats: number;
  smallFlowChildren: number;
  smallFlows: number;
}

export const FULL: BullmqPlan = {
  stepsPerWorker: 40,
  minSteps: 320,
  repeats: 3,
  maxRepeats: 40,
  minMeasuredSeconds: 2,
  multiQueues: 8,
  scenarioTimeoutMs: 60_000,
  floorMs: 2_000,
  maxFloorOps: 500_000,
  idleSamples: 200,
  flowWorkers: 8,
  bigFlowChildren: 100,
  bigFlowRepeats: 5,
  smallFlowChildren: 4,
  smallFlows: 320,
};
export const QUICK: BullmqPlan = {
  stepsPerWorker: 10,
  minSteps: 80,
  repeats: 1,
  maxRepeats: 1,
  minMeasuredSeconds: 0,
  multiQueues: 8,
  scenarioTimeoutMs: 30_000,
  floorMs: 500,
  maxFloorOps: 100_000,
  idleSamples: 30,
  flowWorkers: 8,
  bigFlowChildren: 100,
  bigFlowRepeats: 2,
  smallFlowChildren: 4,
  smallFlows: 80,
};

export type WorkerModel = "concurrency" | "workers";
export type AppendFsync = "everysec" | "always" | "no";
export type RemoveOnComplete = boolean | number;

export interface BullmqBenchOptions {
  quick: boolean;
  /** Overrides of the plan chosen by `quick`. */
  plan?: Partial<BullmqPlan>;
  concurrencies: number[];
  models: WorkerModel[];
  appendfsync: AppendFsync;
  removeOnComplete: RemoveOnComplete;
  /** Progress lines (default console.log); pass () => {} for silence. */
  log: (line: string) => void;
}

export const DEFAULT_OPTIONS: BullmqBenchOptions = {
  quick: false,
  concurrencies: [1, 8, 32],
  models: ["concurrency", "workers"],
  appendfsync: "everysec",
  removeOnComplete: false,
  log: (line) => console.log(line),
};

const USAGE = `usage: npm run bench:bullmq -- [--quick] [--out bench/bullmq-results.json] [--concurrency 1,8,32]
                                [--model concurrency|workers|both] [--appendfsync everysec|always|no]
                                [--remove-on-complete false|true|<count>]`;

function parseArgs(argv: string[]): { opts: BullmqBenchOptions; out: string } {
  const opts: BullmqBenchOptions = { ...DEFAULT_OPTIONS };
  let out = "bench/bullmq-results.json";
  eachArg(argv, USAGE, (arg, value) => {
    switch (arg) {
      case "--quick":
        opts.quick = true;
        break;
      case "--out":
        out = value();
        break;
      case "--concurrency":
        opts.concurrencies = value().split(",").map((s) => Number(s.trim()));
        if (opts.concurrencies.some((n) => !Number.isInteger(n) || n < 1 || n > 256)) throw new Error("--concurrency takes integers 1..256");
        break;
      case "--model": {
        const m = value();
        if (m === "both") opts.models = ["concurrency", "workers"];
        else if (m === "concurrency" || m === "workers") opts.models = [m];
        else throw new Error(`--model takes concurrency, workers or both\n${USAGE}`);
        break;
      }
      case "--appendfsync": {
        const p = value();
        if (p !== "everysec" && p !== "always" && p !== "no") throw new Error(`--appendfsync takes everysec, always or no\n${USAGE}`);
        opts.appendfsync = p;
        break;
      }
      case "--remove-on-complete": {
        const v = value();
        if (v === "true" || v === "false") opts.removeOnComplete = v === "true";
        else if (/^\d+$/.test(v)) opts.removeOnComplete = Number(v);
        else throw new Error(`--remove-on-complete takes true, false or a count\n${USAGE}`);
        break;
      }
      default:
        return false;
    }
    return true;
  });
  return { opts, out };
}

// ---- small helpers ---------------------------------------------------------------------------------

/** Resolves after `ms` unless cancelled; never keeps the process alive on its own. */
function deadlineAfter(ms: number): { promise: Promise<"timeout">; cancel: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), Math.max(0, ms));
    timer.unref();
  });
  return { promise, cancel: () => clearTimeout(timer) };
}

/** A promise resolved from outside. */
function latch(): { promise: Promise<"done">; open: () => void } {
  let open: () => void = () => {};
  const promise = new Promise<"done">((resolve) => (open = () => resolve("done")));
  return { promise, open };
}

function packageVersion(name: string): string {
  try {
    const req = createRequire(import.meta.url);
    return (req(`${name}/package.json`) as { version: string }).version;
  } catch {
    return "unknown";
  }
}

// ---- redis-server --------------------------------------------------------------------------------

export interface RedisServer {
  host: "127.0.0.1";
  port: number;
  dir: string;
  logFile: string;
  binary: string;
  version: string;
  config: Record<string, string>;
  child: ChildProcess | null;
  installedByScript: boolean;
}

function findBinary(name: string): string | null {
  const dirs = [...(process.env.PATH ?? "").split(path.delimiter), "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"];
  for (const dir of dirs) {
    if (dir === "") continue;
    const candidate = path.join(dir, name);
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

/** Finds redis-server; installs Debian's package when missing and running as root, else throws with the command to run. */
export function ensureRedisServer(log: (line: string) => void): { binary: string; installed: boolean } {
  const found = findBinary("redis-server");
  if (found !== null) return { binary: found, installed: false };
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (!isRoot || findBinary("apt-get") === null) {
    throw new Error(
      "redis-server is not installed. On Debian/Ubuntu install it with:\n  sudo apt-get update && sudo apt-get install -y redis-server\n" +
        "(this script installs it by itself only when it runs as root on a machine with apt-get)",
    );
  }
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  log("redis-server is not installed; running as root, so installing Debian's package:");
  log("  $ apt-get update");
  execFileSync("apt-get", ["update"], { stdio: ["ignore", "inherit", "inherit"], env });
  log("  $ apt-get install -y redis-server");
  execFileSync("apt-get", ["install", "-y", "redis-server"], { stdio: ["ignore", "inherit", "inherit"], env });
  const binary = findBinary("redis-server");
  if (binary === null) throw new Error("apt-get install -y redis-server finished but no redis-server binary was found");
  log(`installed ${binary}`);
  return { binary, installed: true };
}

/** True when something accepts TCP connections on 127.0.0.1:port (used only to tell about a system Redis). */
function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(500, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

function newClient(server: RedisServer): Redis {
  return new Redis({ host: server.host, port: server.port, lazyConnect: true, maxRetriesPerRequest: null, enableReadyCheck: true });
}

/** Starts redis-server on 127.0.0.1 and a free port in a fresh temp dir, AOF on, RDB snapshots off. */
export async function startRedis(appendfsync: AppendFsync, log: (line: string) => void): Promise<RedisServer> {
  const { binary, installed } = ensureRedisServer(log);
  if (installed && !existsSync("/usr/sbin/policy-rc.d") && (await portOpen(6379))) {
    log("note: the package's own redis-server service answers on 127.0.0.1:6379 (Debian starts it on install); this benchmark does not use it (`service redis-server stop` stops it)");
  }
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), "bench-bullmq-redis-"));
  const logFile = path.join(dir, "redis.log");
  const args = [
    "--bind", "127.0.0.1",
    "--port", String(port),
    "--protected-mode", "yes",
    "--dir", dir,
    "--logfile", logFile,
    "--daemonize", "no",
    "--appendonly", "yes",
    "--appendfsync", appendfsync,
    "--save", "",
    "--maxmemory-policy", "noeviction",
  ];
  const child = spawn(binary, args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  let exited: number | null | undefined;
  child.on("exit", (code) => (exited = code));
  const server: RedisServer = { host: "127.0.0.1", port, dir, logFile, binary, version: "unknown", config: {}, child, installedByScript: installed };
  const until = Date.now() + 20_000;
  while (Date.now() < until) {
    if (exited !== undefined) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`redis-server exited (${exited}) before answering PING:\n${stderr}${tail(logFile, 20)}`);
    }
    const client = new Redis({ host: "127.0.0.1", port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1_000 });
    client.on("error", () => {});
    try {
      await client.connect();
      if ((await client.ping()) === "PONG") {
        const info = await client.info("server");
        server.version = /redis_version:([^\r\n]+)/.exec(info)?.[1] ?? "unknown";
        for (const key of ["appendonly", "appendfsync", "save", "maxmemory-policy", "bind", "port"]) {
          const pair = (await client.config("GET", key)) as string[];
          server.config[key] = pair[1] ?? "";
        }
        client.disconnect();
        return server;
      }
    } catch {
      // not up yet
    }
    client.disconnect();
    await sleep(100);
  }
  await stopRedis(server);
  throw new Error(`redis-server did not answer PING within 20 s:\n${tail(logFile, 20)}`);
}

function alive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Stops the redis-server this script started (SIGTERM, SIGKILL after 5 s) and removes its temp dir. */
export async function stopRedis(server: RedisServer): Promise<void> {
  const child = server.child;
  server.child = null;
  if (child !== null && alive(child)) {
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    child.kill("SIGTERM");
    const t = deadlineAfter(5_000);
    if ((await Promise.race([exited, t.promise])) === "timeout") {
      child.kill("SIGKILL");
      await Promise.race([exited, sleep(2_000)]);
    }
    t.cancel();
  }
  rmSync(server.dir, { recursive: true, force: true });
}

/** Synchronous last resort (process exit, signals): kill the child and remove the dir. */
function killRedisNow(server: RedisServer): void {
  const child = server.child;
  server.child = null;
  if (child !== null && alive(child)) {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
  try {
    rmSync(server.dir, { recursive: true, force: true });
  } catch {
    // best effort
  }
}

// ---- the floor: PING -------------------------------------------------------------------------------

export interface FloorResult {
  op: "PING";
  concurrency: number;
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  latency: LatencyStats;
}

/** `concurrency` loops send PING back to back on one connection (ioredis pipelines them) for `durationMs`. */
async function pingFloor(server: RedisServer, concurrency: number, durationMs: number, maxOps: number): Promise<FloorResult> {
  const client = newClient(server);
  client.on("error", () => {});
  try {
    await client.connect();
  } catch (e) {
    client.disconnect();
    throw e;
  }
  const latencies: number[] = [];
  let started = 0;
  let errors = 0;
  const t0 = performance.now();
  const end = t0 + durationMs;
  const loop = async () => {
    while (performance.now() < end && started < maxOps && errors < 100) {
      started++;
      const s = performance.now();
      try {
        await client.ping();
        latencies.push(performance.now() - s);
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const seconds = (performance.now() - t0) / 1000;
  client.disconnect();
  return { op: "PING", concurrency, requests: latencies.length, errors, seconds: round(seconds), rps: round(latencies.length / seconds, 1), latency: stats(latencies) };
}

// ---- the step scenario ------------------------------------------------------------------------------

export interface StepScenarioResult {
  model: WorkerModel;
  workers: number;
  queues: number;
  /** Worker instances and the concurrency of each, per queue (e.g. "1×8" or "8×1"). */
  layout: string;
  jobs_planned: number;
  jobs_completed: number;
  seconds: number;
  jobs_per_s: number;
  /** Processor handed the job → `completed` event (completion acknowledged, next job fetched in the same call). */
  take_to_ack: LatencyStats;
  /** Job added (job.timestamp) → completed event; with the backlog pre-added this is mostly queue wait. */
  add_to_completed: LatencyStats;
  add_bulk_ms: number[];
  errors: number;
  first_error?: string;
  failed_jobs: number;
  duplicate_completions: number;
  /** Completed jobs Redis reports after the run (null with removeOnComplete). */
  verified_completed_in_redis: number | null;
  /** CPU time per completed job over the measured window: redis-server (INFO cpu) and this Node process. */
  cpu_ms_per_job: { redis: number; node: number };
  timed_out: boolean;
  repeats?: { jobs_per_s: number; seconds: number; p50_ms: number; p99_ms: number }[];
  samples?: { take: number[]; e2e: number[] };
}

interface Ctx {
  server: RedisServer;
  plan: BullmqPlan;
  removeOnComplete: RemoveOnComplete;
  /** A fresh prefix per scenario keeps runs apart; the db is flushed between scenarios too. */
  nextPrefix: () => string;
  admin: Redis;
  /** Registers a BullMQ object so that an aborted run still closes it (else ioredis reconnects forever). */
  track: <T extends Queue | Worker | FlowProducer>(o: T) => T;
}

/** Closes every tracked BullMQ object (workers forced), bounded in time; closing twice is harmless. */
async function closeAll(objects: Set<Queue | Worker | FlowProducer>, timeoutMs: number): Promise<void> {
  const all = Promise.allSettled([...objects].map((o) => (o instanceof Worker ? o.close(true) : o.close())));
  const d = deadlineAfter(timeoutMs);
  await Promise.race([all, d.promise]);
  d.cancel();
  objects.clear();
}

/** CPU time redis-server has used so far (user + sys, all threads), in ms. */
async function redisCpuMs(admin: Redis): Promise<number> {
  const info = await admin.info("cpu");
  const get = (k: string) => Number(new RegExp(`^${k}:([0-9.]+)`, "m").exec(info)?.[1] ?? 0);
  return (get("used_cpu_user") + get("used_cpu_sys")) * 1000;
}

function connection(server: RedisServer) {
  return { host: server.host, port: server.port };
}

/** How W workers are laid out on Q queues; with W < Q, lane l drains queues l, l+W, … one after another. */
function layout(model: WorkerModel, workers: number, queues: number): { perQueue: number[][]; lanes: number[][] } {
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

function stepData(i: number) {
  return { step_id: `s${String(i).padStart(5, "0")}`, title: `Step ${i}`, summary: "Independent bench step" };
}

export async function stepScenario(ctx: Ctx, model: WorkerModel, workers: number, queues: number): Promise<StepScenarioResult> {
  const { plan } = ctx;
  const perQueueJobs = Math.ceil(Math.max(plan.stepsPerWorker * workers, plan.minSteps) / queues);
  const planned = perQueueJobs * queues;
  const prefix = ctx.nextPrefix();
  const conn = connection(ctx.server);
  const queueObjs = Array.from({ length: queues }, (_, q) => ctx.track(new Queue(`steps-${q}`, { connection: conn, prefix, defaultJobOptions: { removeOnComplete: ctx.removeOnComplete } })));
  await Promise.all(queueObjs.map((q) => q.waitUntilReady()));

  const takeLat: number[] = [];
  const e2eLat: number[] = [];
  const takenAt = new Map<string, number>();
  const completedIds = new Set<string>();
  const doneByQueue = new Array<number>(queues).fill(0);
  const queueDone = Array.from({ length: queues }, () => latch());
  let duplicates = 0;
  let failed = 0;
  let errors = 0;
  let firstError: string | undefined;
  let lastDoneAt = 0;
  const noteError = (msg: string) => {
    errors++;
    firstError ??= msg;
  };

  const { perQueue, lanes } = layout(model, workers, queues);
  const workerObjs: Worker[][] = perQueue.map((concs, q) =>
    concs.map((concurrency) => {
      const key = (job: Job) => `${q}#${job.id}`;
      const w = ctx.track(
        new Worker(
          `steps-${q}`,
          async (job: Job) => {
            takenAt.set(key(job), performance.now());
            return "done";
          },
          { connection: conn, prefix, concurrency, autorun: false },
        ),
      );
      w.on("completed", (job: Job) => {
        const now = performance.now();
        const k = key(job);
        const t = takenAt.get(k);
        if (t !== undefined) takeLat.push(now - t);
        e2eLat.push(Date.now() - job.timestamp);
        if (completedIds.has(k)) duplicates++;
        completedIds.add(k);
        lastDoneAt = now;
        if (++doneByQueue[q]! >= perQueueJobs) queueDone[q]!.open();
      });
      w.on("failed", (_job, err) => {
        failed++;
        noteError(`job failed: ${err.message}`);
      });
      w.on("error", (err) => noteError(`worker error: ${err.message}`));
      return w;
    }),
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
  await Promise.all(
    lanes.map(async (lane) => {
      for (const q of lane) {
        for (const w of workerObjs[q]!) runs.push(w.run().catch((e: unknown) => noteError(`run: ${e instanceof Error ? e.message : String(e)}`)));
        if ((await Promise.race([queueDone[q]!.promise, deadline.promise])) === "timeout") {
          timedOut = true;
          return;
        }
      }
    }),
  );
  deadline.cancel();
  const seconds = ((lastDoneAt || performance.now()) - t0) / 1000;
  const nodeCpu = process.cpuUsage(nodeCpu0);
  const redisCpu = (await redisCpuMs(ctx.admin)) - redisCpu0;

  // Not measured: stop the workers, then ask Redis for its own count.
  await Promise.all(workerObjs.flat().map((w) => w.close()));
  await Promise.all(runs);
  let verified: number | null = null;
  if (ctx.removeOnComplete === false) {
    verified = 0;
    for (const queue of queueObjs) verified += (await queue.getJobCounts("completed")).completed ?? 0;
  }
  await Promise.all(queueObjs.map((q) => q.close()));
  await ctx.admin.flushall();
  const completed = completedIds.size + duplicates;
  return {
    model,
    workers,
    queues,
    layout: describeLayout(perQueue, lanes),
    jobs_planned: planned,
    jobs_completed: completed,
    seconds: round(seconds, 6),
    jobs_per_s: round(completed / seconds, 1),
    take_to_ack: stats(takeLat),
    add_to_completed: stats(e2eLat),
    add_bulk_ms: addMs,
    errors,
    ...(firstError === undefined ? {} : { first_error: firstError }),
    failed_jobs: failed,
    duplicate_completions: duplicates,
    verified_completed_in_redis: verified,
    cpu_ms_per_job: { redis: round(redisCpu / Math.max(1, completed), 4), node: round((nodeCpu.user + nodeCpu.system) / 1000 / Math.max(1, completed), 4) },
    timed_out: timedOut,
    samples: { take: takeLat, e2e: e2eLat },
  };
}

/** Repeats of one scenario as one result: jobs and time summed, latencies pooled. */
function mergeSteps(parts: StepScenarioResult[]): StepScenarioResult {
  const first = parts[0]!;
  const sum = (f: (p: StepScenarioResult) => number) => parts.reduce((a, p) => a + f(p), 0);
  const completed = sum((p) => p.jobs_completed);
  const seconds = sum((p) => p.seconds);
  const firstError = parts.find((p) => p.first_error !== undefined)?.first_error;
  const verified = parts.every((p) => p.verified_completed_in_redis !== null) ? sum((p) => p.verified_completed_in_redis ?? 0) : null;
  return {
    model: first.model,
    workers: first.workers,
    queues: first.queues,
    layout: first.layout,
    jobs_planned: sum((p) => p.jobs_planned),
    jobs_completed: completed,
    seconds: round(seconds, 6),
    jobs_per_s: round(completed / seconds, 1),
    take_to_ack: stats(parts.flatMap((p) => p.samples?.take ?? [])),
    add_to_completed: stats(parts.flatMap((p) => p.samples?.e2e ?? [])),
    add_bulk_ms: parts.flatMap((p) => p.add_bulk_ms),
    errors: sum((p) => p.errors),
    ...(firstError === undefined ? {} : { first_error: firstError }),
    failed_jobs: sum((p) => p.failed_jobs),
    duplicate_completions: sum((p) => p.duplicate_completions),
    verified_completed_in_redis: verified,
    cpu_ms_per_job: {
      redis: round(sum((p) => p.cpu_ms_per_job.redis * p.jobs_completed) / Math.max(1, completed), 4),
      node: round(sum((p) => p.cpu_ms_per_job.node * p.jobs_completed) / Math.max(1, completed), 4),
    },
    timed_out: parts.some((p) => p.timed_out),
    repeats: parts.map((p) => ({ jobs_per_s: p.jobs_per_s, seconds: p.seconds, p50_ms: p.take_to_ack.p50_ms, p99_ms: p.take_to_ack.p99_ms })),
  };
}

// ---- idle round trip ---------------------------------------------------------------------------------

export interface IdleResult {
  samples: number;
  /** queue.add called → completed event, one job at a time, the worker idle (blocked waiting) before each. */
  add_to_completed: LatencyStats;
  /** queue.add round trip alone. */
  add_call: LatencyStats;
  timed_out: boolean;
}

async function idleRoundTrip(ctx: Ctx): Promise<IdleResult> {
  const prefix = ctx.nextPrefix();
  const conn = connection(ctx.server);
  const queue = ctx.track(new Queue("idle", { connection: conn, prefix, defaultJobOptions: { removeOnComplete: ctx.removeOnComplete } }));
  await queue.waitUntilReady();
  const waiting = new Map<number, () => void>();
  const worker = ctx.track(new Worker("idle", async () => "done", { connection: conn, prefix, concurrency: 1, autorun: false }));
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
    const d = deadlineAfter(10_000);
    const outcome = await Promise.race([done.promise, d.promise]);
    d.cancel();
    waiting.delete(seq);
    if (outcome === "timeout") {
      timedOut = true;
      break;
    }
    e2e.push(performance.now() - t);
    await sleep(2); // let the worker go back to its blocking wait
  }
  await worker.close();
  await run;
  await queue.close();
  await ctx.admin.flushall();
  return { samples: e2e.length, add_to_completed: stats(e2e), add_call: stats(addCall), timed_out: timedOut };
}

// ---- flows (fan-in) ------------------------------------------------------------------------------------

export interface BigFlowResult {
  workers: number;
  children: number;
  /** Per repeat: FlowProducer.add round trip, add start → parent completed, last child completed → parent completed. */
  runs: { add_ms: number; total_ms: number; fan_in_ms: number; children_completed: number }[];
  total: LatencyStats;
  add: LatencyStats;
  fan_in: LatencyStats;
  /** Per-job processor → completed event, children and parents pooled. */
  take_to_ack: LatencyStats;
  timed_out: boolean;
  errors: number;
  first_error?: string;
}

export interface SmallFlowsResult {
  workers: number;
  flows: number;
  children_per_flow: number;
  add_bulk_ms: number;
  flows_completed: number;
  jobs_completed: number;
  seconds: number;
  flows_per_s: number;
  jobs_per_s: number;
  take_to_ack_children: LatencyStats;
  take_to_ack_parents: LatencyStats;
  timed_out: boolean;
  errors: number;
  first_error?: string;
}

interface FlowWorkers {
  workers: Worker[];
  takeLat: number[];
  parentTake: number[];
  childTake: number[];
  childrenDone: Map<number, { count: number; lastAt: number }>;
  parentDone: Map<number, number>;
  onParent: (flow: number) => void;
  errors: () => { errors: number; first_error?: string };
}

/** Workers of one queue that holds both the children and the parents of the flows. */
function flowWorkers(ctx: Ctx, model: WorkerModel, workers: number, queueName: string, prefix: string, autorun: boolean): FlowWorkers {
  const conn = connection(ctx.server);
  const takenAt = new Map<string, number>();
  const fw: FlowWorkers = {
    workers: [],
    takeLat: [],
    parentTake: [],
    childTake: [],
    childrenDone: new Map(),
    parentDone: new Map(),
    onParent: () => {},
    errors: () => ({ errors }),
  };
  let errors = 0;
  let firstError: string | undefined;
  fw.errors = () => ({ errors, ...(firstError === undefined ? {} : { first_error: firstError }) });
  const note = (msg: string) => {
    errors++;
    firstError ??= msg;
  };
  const concs = model === "concurrency" ? [workers] : Array.from({ length: workers }, () => 1);
  for (const concurrency of concs) {
    const w = ctx.track(
      new Worker(
        queueName,
        async (job: Job) => {
          takenAt.set(job.id ?? "", performance.now());
          return "done";
        },
        { connection: conn, prefix, concurrency, autorun },
      ),
    );
    w.on("completed", (job: Job) => {
      const now = performance.now();
      const t = takenAt.get(job.id ?? "");
      const flow = (job.data as { flow: number }).flow;
      if (t !== undefined) {
        fw.takeLat.push(now - t);
        (job.name === "parent" ? fw.parentTake : fw.childTake).push(now - t);
      }
      if (job.name === "parent") {
        fw.parentDone.set(flow, now);
        fw.onParent(flow);
      } else {
        const c = fw.childrenDone.get(flow) ?? { count: 0, lastAt: 0 };
        c.count++;
        c.lastAt = now;
        fw.childrenDone.set(flow, c);
      }
    });
    w.on("failed", (_job, err) => note(`job failed: ${err.message}`));
    w.on("error", (err) => note(`worker error: ${err.message}`));
    fw.workers.push(w);
  }
  return fw;
}

function flowOf(queueName: string, flow: number, children: number, removeOnComplete: RemoveOnComplete) {
  return {
    name: "parent",
    queueName,
    data: { flow, title: `Fan-in ${flow}`, summary: "Parent of the flow" },
    opts: { removeOnComplete },
    children: Array.from({ length: children }, (_, i) => ({ name: "child", queueName, data: { flow, ...stepData(i) }, opts: { removeOnComplete } })),
  };
}

async function bigFlows(ctx: Ctx, model: WorkerModel): Promise<BigFlowResult> {
  const { plan } = ctx;
  const prefix = ctx.nextPrefix();
  const queueName = "flow-big";
  const producer = ctx.track(new FlowProducer({ connection: connection(ctx.server), prefix }));
  await producer.waitUntilReady();
  const fw = flowWorkers(ctx, model, plan.flowWorkers, queueName, prefix, true);
  await Promise.all(fw.workers.map((w) => w.waitUntilReady()));
  await sleep(50);
  const runs: BigFlowResult["runs"] = [];
  let timedOut = false;
  // Flow 0 is a small warm-up (scripts loaded, connections and JIT warm); flows 1..R are measured.
  for (let flow = 0; flow <= plan.bigFlowRepeats; flow++) {
    const children = flow === 0 ? 4 : plan.bigFlowChildren;
    const done = latch();
    fw.onParent = (f) => {
      if (f === flow) done.open();
    };
    const t = performance.now();
    await producer.add(flowOf(queueName, flow, children, ctx.removeOnComplete));
    const added = performance.now();
    const d = deadlineAfter(ctx.plan.scenarioTimeoutMs);
    const outcome = await Promise.race([done.promise, d.promise]);
    d.cancel();
    if (outcome === "timeout") {
      timedOut = true;
      break;
    }
    const end = fw.parentDone.get(flow)!;
    const c = fw.childrenDone.get(flow);
    if (flow > 0) runs.push({ add_ms: round(added - t), total_ms: round(end - t), fan_in_ms: round(end - (c?.lastAt ?? end)), children_completed: c?.count ?? 0 });
    await sleep(20);
  }
  await Promise.all(fw.workers.map((w) => w.close()));
  await producer.close();
  await ctx.admin.flushall();
  return {
    workers: plan.flowWorkers,
    children: plan.bigFlowChildren,
    runs,
    total: stats(runs.map((r) => r.total_ms)),
    add: stats(runs.map((r) => r.add_ms)),
    fan_in: stats(runs.map((r) => r.fan_in_ms)),
    take_to_ack: stats(fw.takeLat),
    timed_out: timedOut,
    ...fw.errors(),
  };
}

async function smallFlows(ctx: Ctx, model: WorkerModel): Promise<SmallFlowsResult> {
  const { plan } = ctx;
  const prefix = ctx.nextPrefix();
  const queueName = "flow-small";
  const producer = ctx.track(new FlowProducer({ connection: connection(ctx.server), prefix }));
  await producer.waitUntilReady();
  const t = performance.now();
  // Added in chunks of 100 flows (one MULTI each), like a user adding a batch.
  for (let start = 0; start < plan.smallFlows; start += 100) {
    const count = Math.min(100, plan.smallFlows - start);
    await producer.addBulk(Array.from({ length: count }, (_, i) => flowOf(queueName, start + i, plan.smallFlowChildren, ctx.removeOnComplete)));
  }
  const addMs = performance.now() - t;
  const fw = flowWorkers(ctx, model, plan.flowWorkers, queueName, prefix, false);
  await Promise.all(fw.workers.map((w) => w.waitUntilReady()));
  const all = latch();
  let lastParentAt = 0;
  fw.onParent = () => {
    lastParentAt = performance.now();
    if (fw.parentDone.size >= plan.smallFlows) all.open();
  };
  const t0 = performance.now();
  const runs = fw.workers.map((w) => w.run().catch(() => {}));
  const d = deadlineAfter(plan.scenarioTimeoutMs);
  const timedOut = (await Promise.race([all.promise, d.promise])) === "timeout";
  d.cancel();
  const seconds = ((lastParentAt || performance.now()) - t0) / 1000;
  await Promise.all(fw.workers.map((w) => w.close()));
  await Promise.all(runs);
  await producer.close();
  await ctx.admin.flushall();
  const jobs = fw.takeLat.length;
  return {
    workers: plan.flowWorkers,
    flows: plan.smallFlows,
    children_per_flow: plan.smallFlowChildren,
    add_bulk_ms: round(addMs, 1),
    flows_completed: fw.parentDone.size,
    jobs_completed: jobs,
    seconds: round(seconds),
    flows_per_s: round(fw.parentDone.size / seconds, 1),
    jobs_per_s: round(jobs / seconds, 1),
    take_to_ack_children: stats(fw.childTake),
    take_to_ack_parents: stats(fw.parentTake),
    timed_out: timedOut,
    ...fw.errors(),
  };
}

// ---- the whole run -----------------------------------------------------------------------------------

export interface BullmqResults {
  generated_at: string;
  mode: "quick" | "full";
  machine: {
    cpus: number;
    cpu_model: string;
    node: string;
    platform: string;
    total_mem_mb: number;
    loadavg_start: number[];
    loadavg_end: number[];
    cpu_idle_before: number;
    /** Share of the machine's CPU time used by other processes (not this one, not its redis-server) during the run. */
    foreign_cpu_share: number;
  };
  software: { bullmq: string; ioredis: string; redis: string; redis_binary: string; redis_installed_by_script: boolean };
  redis: { host: string; port: number; config: Record<string, string> };
  settings: { models: WorkerModel[]; remove_on_complete: RemoveOnComplete; appendfsync: AppendFsync; job_processor: string };
  plan: BullmqPlan;
  concurrencies: number[];
  floor: FloorResult[];
  steps: StepScenarioResult[];
  /** As in bench-http: cost = 1 / throughput; cost_ratio = per-job cost / PING cost at the same concurrency. */
  ratios: { model: WorkerModel; workers: number; queues: number; floor_rps: number; jobs_per_s: number; job_cost_ms: number; cost_ratio: number; p50_ratio: number }[];
  idle: IdleResult;
  flows: { model: WorkerModel; big: BigFlowResult; small: SmallFlowsResult }[];
  wall_seconds: number;
}

/**
 * Starts Redis, runs every scenario, stops Redis (also on errors; on SIGINT/SIGTERM it kills Redis and, when
 * no other handler is listening, exits with 130). Returns the results; writes nothing.
 */
export async function runBullmqBench(options: Partial<BullmqBenchOptions> = {}): Promise<BullmqResults> {
  const opts: BullmqBenchOptions = { ...DEFAULT_OPTIONS, ...options };
  const plan: BullmqPlan = { ...(opts.quick ? QUICK : FULL), ...opts.plan };
  const log = opts.log;
  // Checked before anything starts: a BullMQ constructor that throws leaves its connection unreachable.
  for (const [k, v] of Object.entries(plan)) if (!Number.isFinite(v) || v < 0) throw new Error(`plan.${k} must be a number >= 0`);
  for (const k of ["stepsPerWorker", "minSteps", "repeats", "maxRepeats", "multiQueues", "flowWorkers", "bigFlowChildren", "smallFlowChildren", "smallFlows", "idleSamples"] as const) {
    if (!Number.isInteger(plan[k]) || plan[k] < 1) throw new Error(`plan.${k} must be an integer >= 1`);
  }
  if (opts.concurrencies.length === 0 || opts.concurrencies.some((n) => !Number.isInteger(n) || n < 1)) throw new Error("concurrencies must be integers >= 1");
  if (opts.models.length === 0) throw new Error("models must name at least one worker model");
  const tracked = new Set<Queue | Worker | FlowProducer>();
  const loadStart = os.loadavg();
  const wallStart = performance.now();
  // Other load on the machine skews every figure below: measured for 1 s before anything starts, kept in the results.
  const idleBefore = await cpuIdleShare(1_000);
  if (idleBefore < 0.8) log(`warning: only ${(idleBefore * 100).toFixed(0)}% of the CPU was idle before the run: something else is running, figures will be low`);

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
    server = await startRedis(opts.appendfsync, log);
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

    const flows: BullmqResults["flows"] = [];
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
      machine: {
        ...machineInfo(loadStart, os.loadavg()),
        cpu_idle_before: idleBefore,
        foreign_cpu_share: foreignShare,
      },
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

// ---- report ----------------------------------------------------------------------------------------------

/** The printed report of one run. */
export function formatBullmqReport(r: BullmqResults): string {
  const out: string[] = [];
  out.push(
    `BullMQ ${r.software.bullmq} on Redis ${r.software.redis} (${r.mode}) — ${r.machine.cpus} CPUs, node ${r.machine.node}, AOF appendfsync ${r.settings.appendfsync}, removeOnComplete ${String(r.settings.remove_on_complete)}, load ${r.machine.loadavg_start.join(" ")} → ${r.machine.loadavg_end.join(" ")}, CPU idle before ${(r.machine.cpu_idle_before * 100).toFixed(0)}%, other processes' CPU share during the run ${(r.machine.foreign_cpu_share * 100).toFixed(0)}%`,
  );
  out.push("take→ack = processor handed the job → completion acknowledged by Redis (the next job comes back in the same call)\n");
  const multi = r.plan.multiQueues;
  for (const model of r.settings.models) {
    out.push(`worker model: ${model === "concurrency" ? "one Worker per queue, concurrency = workers" : "N Worker instances, concurrency 1 each"}`);
    out.push(
      table(
        ["workers", "PING req/s", "PING p50/p99 ms", "1 queue jobs/s", "take→ack p50/p99 ms", "add→done p50/p99 ms", `${multi} queues jobs/s`, "take→ack p50/p99 ms", "add→done p50/p99 ms"],
        r.concurrencies.map((c) => {
          const f = r.floor.find((x) => x.concurrency === c);
          // A layout both models share was run once, under "concurrency".
          const find = (q: number) => r.steps.find((s) => s.workers === c && s.queues === q && s.model === model) ?? r.steps.find((s) => s.workers === c && s.queues === q);
          const one = find(1);
          const many = find(multi);
          return [
            String(c),
            fmt(f?.rps, 0),
            `${fmt(f?.latency.p50_ms, 3)}/${fmt(f?.latency.p99_ms, 3)}`,
            fmt(one?.jobs_per_s, 0),
            `${fmt(one?.take_to_ack.p50_ms, 2)}/${fmt(one?.take_to_ack.p99_ms, 2)}`,
            `${fmt(one?.add_to_completed.p50_ms, 0)}/${fmt(one?.add_to_completed.p99_ms, 0)}`,
            fmt(many?.jobs_per_s, 0),
            `${fmt(many?.take_to_ack.p50_ms, 2)}/${fmt(many?.take_to_ack.p99_ms, 2)}`,
            `${fmt(many?.add_to_completed.p50_ms, 0)}/${fmt(many?.add_to_completed.p99_ms, 0)}`,
          ];
        }),
      ),
    );
    out.push("");
  }
  out.push("step scenarios (details):");
  out.push(
    table(
      ["model", "workers", "queues", "layout", "jobs", "runs", "seconds", "jobs/s (min..max run)", "CPU ms/job redis+node", "addBulk ms", "errors", "dups", "failed", "in redis"],
      r.steps.map((s) => [
        s.model,
        String(s.workers),
        String(s.queues),
        s.layout,
        `${s.jobs_completed}/${s.jobs_planned}`,
        String((s.repeats ?? [s]).length),
        fmt(s.seconds, 2),
        `${fmt(s.jobs_per_s, 0)} (${fmt(Math.min(...(s.repeats ?? [s]).map((x) => x.jobs_per_s)), 0)}..${fmt(Math.max(...(s.repeats ?? [s]).map((x) => x.jobs_per_s)), 0)})`,
        `${fmt(s.cpu_ms_per_job.redis, 3)}+${fmt(s.cpu_ms_per_job.node, 3)}`,
        s.add_bulk_ms.length === 1 ? fmt(s.add_bulk_ms[0], 1) : `${fmt(Math.min(...s.add_bulk_ms), 1)}..${fmt(Math.max(...s.add_bulk_ms), 1)}`,
        String(s.errors),
        String(s.duplicate_completions),
        String(s.failed_jobs),
        s.verified_completed_in_redis === null ? "-" : String(s.verified_completed_in_redis),
      ]),
    ),
  );
  out.push(`\nidle round trip (1 worker waiting, one job at a time, ${r.idle.samples} jobs): add→completed p50 ${fmt(r.idle.add_to_completed.p50_ms, 2)} ms, p99 ${fmt(r.idle.add_to_completed.p99_ms, 2)} ms; queue.add alone p50 ${fmt(r.idle.add_call.p50_ms, 2)} ms`);
  out.push("\nflows (FlowProducer; children and parent on one queue, the same workers):");
  out.push(
    table(
      ["model", "workers", "1+100: total p50/max ms", "add p50 ms", "last child→parent ms", `${r.plan.smallFlows}×(1+${r.plan.smallFlowChildren}): flows/s`, "jobs/s", "seconds", "take→ack child/parent p50 ms", "errors"],
      r.flows.map((f) => [
        f.model,
        String(f.big.workers),
        `${fmt(f.big.total.p50_ms, 1)}/${fmt(f.big.total.max_ms, 1)}`,
        fmt(f.big.add.p50_ms, 1),
        fmt(f.big.fan_in.p50_ms, 2),
        fmt(f.small.flows_per_s, 0),
        fmt(f.small.jobs_per_s, 0),
        fmt(f.small.seconds, 2),
        `${fmt(f.small.take_to_ack_children.p50_ms, 2)}/${fmt(f.small.take_to_ack_parents.p50_ms, 2)}`,
        String(f.big.errors + f.small.errors) + (f.big.timed_out || f.small.timed_out ? " TIMED OUT" : ""),
      ]),
    ),
  );
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

export function writeBullmqResults(results: BullmqResults, file: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
}

// ---- main ------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const { opts, out } = parseArgs(process.argv.slice(2));
  const results = await runBullmqBench(opts);
  console.log(`\n${formatBullmqReport(results)}`);
  const bad = problems(results);
  if (bad.length > 0) console.log(`\nwarning: ${bad.length} scenario(s) had errors, time-outs, duplicates or counts that differ from the plan: ${bad.join("; ")}`);
  writeBullmqResults(results, out);
  console.log(`\nwrote ${out} (${results.wall_seconds} s)`);
  if (bad.length > 0) process.exitCode = 1;
}

// Runs when executed; importing the module (e.g. from a unified bench) runs nothing.
if (isMain(import.meta.url)) {
  // BullMQ/ioredis may leave sockets or timers behind after close(); the results are written, so leave.
  main().then(() => process.exit(process.exitCode ?? 0), exitWithError);
}
