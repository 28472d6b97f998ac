/**
 * @module The whole benchmark in one command and one process: our per-step cost over HTTP, unbatched and
 * group-committed (as batch requests and over the command socket), against the floor (an empty Worker →
 * Durable Object round trip) and against the peer (BullMQ on a local Redis), plus how the per-step cost grows with the DAG and how long a task object takes
 * to replay its WAL after a restart. Every ratio it reports is measured in this same run, on this machine.
 *
 * Usage:
 *   npm run bench                 # full run (about 3–4 minutes on an idle 2-core machine)
 *   npm run bench -- --quick      # short run (about 40 seconds)
 * Options:
 *   --out <file>                  results JSON (default bench/results.json)
 *   --only <list>                 comma-separated sections: steps, growth, recovery, bullmq (default all)
 *   --admin-token <token>         admin token (default $ADMIN_TOKEN, else .dev.vars, else dev-admin-token)
 *   --server-log-level <level>    wrangler --log-level of the dev server (default warn)
 *   --markdown                    also print every table as Markdown (for README.md)
 *
 * What it starts: one `wrangler dev` (scripts/dev-server.ts: free loopback port, its own --persist-to dir),
 * restarted once on the same storage for the recovery section; `redis-server` through bench-bullmq's own
 * start (runBullmqBench), after the dev server is stopped. Nothing but loopback is contacted.
 *
 * Sections (every loop bounded in count and time):
 *   steps     at 1, 8, 32 workers, on one task and on 8 tasks in parallel, interleaved per concurrency:
 *             - floor: closed loop on GET /health/object at the same concurrency (half before, half after);
 *             - unbatched: bench-http's stepScenario (raw fetch, one request per call);
 *             - batched: the same workers as WorkerClients of one RuntimeClient with group commit on; step
 *               latency = each worker's `updateStep(..., {status: "completed", claim_next: true})` call;
 *             - socket: the same, the group commits sent as frames over each task's command socket (ws).
 *             Unbatched runs take bench-http's steps per worker; the group-commit runs 150 (40 in quick mode).
 *             Diagnostics: requests and commands per request, HTTP round trip vs call time (time queued in
 *             the client), CPU ms per step of this process (the client) and of the dev server's process group;
 *             and a batch anatomy: batch requests of fixed shapes (32 complete+claim_next with and without
 *             Idempotency-Keys, 32 and 256 progress commands) → the server's fixed cost per request and per command.
 *   growth    one worker, unbatched, on DAGs of 10, 1,000 and 10,000 independent steps (one create request
 *             each): the first 200 steps (20 tasks of 10 for the smallest), and a GET of the view.
 *   recovery  WALs of 10,000 and 50,000 events built through the batch route (one claimed step, 256
 *             progress commands per batch with the worker's token), the dev server stopped and started again
 *             on the same storage (3 times in full mode, once in quick), then after each restart the first GET
 *             of each task (cold: object start + replay + view), the second GET and a few more (warm); a task
 *             of 10 events is the control for the object start without much to replay.
 *   bullmq    runBullmqBench at the same worker counts (both worker models) with its flows.
 *
 * Method notes: throughput = steps completed / (last completion − start); cost = 1 / throughput; cost ratio
 * vs the floor = floor req/s / steps/s at the same concurrency. CPU of other processes (machine busy time
 * minus this process and the dev server's process group) is recorded: on a 2-core machine it skews every figure.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import WebSocket from "ws";
import { type FetchLike, RuntimeApiError, RuntimeClient, type WebSocketConstructor } from "../src/client/index.js";
import { type BullmqResults, problems as bullmqProblems, runBullmqBench } from "./bench-bullmq.js";
import { cpuIdleShare, eachArg, exitWithError, groupCpuMs, isMain, type LatencyStats, machineCpu, machineInfo, round, sleep, sourceState, stats, table } from "./bench-common.js";
import { type Answer, claimedStep, Client, closedLoop, FULL as HTTP_FULL, QUICK as HTTP_QUICK, type LoadResult, mergeLoads, mergeSteps, type Plan, type StepCall, type StepCarrier, type StepResult, stepScenario } from "./bench-http.js";
import { type DevServer, defaultAdminToken, startDevServer, stopDevServer } from "./dev-server.js";

// ---- options and plan ----------------------------------------------------------------------------------

const SECTIONS = ["steps", "growth", "recovery", "bullmq"] as const;
type Section = (typeof SECTIONS)[number];

interface Options {
  quick: boolean;
  out: string;
  only: Set<Section>;
  adminToken: string;
  serverLogLevel: string;
  markdown: boolean;
}

const USAGE = `usage: npm run bench -- [--quick] [--out bench/results.json] [--only steps,growth,recovery,bullmq]
                       [--admin-token <token>] [--server-log-level <level>] [--markdown]`;

function parseArgs(argv: string[]): Options {
  const opts: Options = { quick: false, out: "bench/results.json", only: new Set(SECTIONS), adminToken: defaultAdminToken(), serverLogLevel: "warn", markdown: false };
  eachArg(argv, USAGE, (arg, value) => {
    switch (arg) {
      case "--quick":
        opts.quick = true;
        break;
      case "--out":
        opts.out = value();
        break;
      case "--only": {
        const names = value().split(",").map((s) => s.trim());
        for (const n of names) if (!(SECTIONS as readonly string[]).includes(n)) throw new Error(`--only takes ${SECTIONS.join(", ")}, not ${n}\n${USAGE}`);
        opts.only = new Set(names as Section[]);
        break;
      }
      case "--admin-token":
        opts.adminToken = value();
        break;
      case "--server-log-level":
        opts.serverLogLevel = value();
        break;
      case "--markdown":
        opts.markdown = true;
        break;
      default:
        return false;
    }
    return true;
  });
  return opts;
}

/** Sizes of one run. */
interface BenchPlan {
  /** bench-http's plan: floor time, steps per worker, minimum steps, repeats, tasks of the multi-task case. */
  http: Plan;
  /**
   * Steps per worker in the group-commit scenarios (batch requests and socket). They run 5–20× faster than
   * unbatched steps, so bench-http's count would time tens of milliseconds of ramp-up; BullMQ's figure
   * pools at least 2 s.
   */
  groupCommitStepsPerWorker: number;
  concurrencies: number[];
  growthSizes: number[];
  /** Steps measured per DAG size (tasks of fewer steps are repeated until this many). */
  growthMeasuredSteps: number;
  growthViewGets: number;
  recoveryEvents: number[];
  /** Progress commands per batch request while building the WALs (the route's maximum is 256). */
  recoveryBatch: number;
  recoveryWarmGets: number;
  /** Restarts on the same storage; each measures every task's first GET again (cold samples are single shots). */
  recoveryRestarts: number;
}

const FULL: BenchPlan = {
  // bench-http's full plan with 5 repeats instead of 3: this machine's figures drift from one run to the next.
  http: { ...HTTP_FULL, repeats: 5 },
  groupCommitStepsPerWorker: 150,
  concurrencies: [1, 8, 32],
  growthSizes: [10, 1_000, 10_000],
  growthMeasuredSteps: 200,
  growthViewGets: 3,
  recoveryEvents: [10_000, 50_000],
  recoveryBatch: 256,
  recoveryWarmGets: 5,
  recoveryRestarts: 3,
};
const QUICK: BenchPlan = {
  http: HTTP_QUICK,
  groupCommitStepsPerWorker: 40,
  concurrencies: [1, 8, 32],
  growthSizes: [10, 1_000, 10_000],
  growthMeasuredSteps: 100,
  growthViewGets: 1,
  recoveryEvents: [10_000, 50_000],
  recoveryBatch: 256,
  recoveryWarmGets: 3,
  recoveryRestarts: 1,
};

// ---- small helpers -------------------------------------------------------------------------------------

function fmt(n: number | undefined | null, digits = 1): string {
  return n === undefined || n === null || Number.isNaN(n) || !Number.isFinite(n) ? "-" : n.toFixed(digits);
}

function markdownTable(headers: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(headers), line(headers.map((_, i) => (i === 0 ? "---" : "---:"))), ...rows.map(line)].join("\n");
}

const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** "Reloading local server" lines in a dev server's log: wrangler rebuilds when a source file changes under it. */
function reloadCount(server: DevServer | null): number {
  if (server?.logFile == null) return 0;
  try {
    return (readFileSync(server.logFile, "utf8").match(/Reloading local server/g) ?? []).length;
  } catch {
    return 0;
  }
}

// ---- CPU accounting --------------------------------------------------------------------------------------

/** All-CPU counters of /proc/stat (ticks): total and steal (time the hypervisor gave to other guests); null off Linux. */
function procStat(): { total: number; steal: number } | null {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n").find((l) => l.startsWith("cpu "));
    if (line === undefined) return null;
    // user nice system idle iowait irq softirq steal guest guest_nice (guest time is already in user)
    const f = line.trim().split(/\s+/).slice(1, 9).map(Number);
    return { total: f.reduce((a, b) => a + b, 0), steal: f[7] ?? 0 };
  } catch {
    return null;
  }
}

interface CpuSnap {
  at: number;
  machine: { idle: number; total: number };
  self: NodeJS.CpuUsage;
  server: number | null;
}

/** CPU used over a window: by this process (the client), the dev server's process group, and everything else. */
interface CpuUse {
  seconds: number;
  /** This Node process: the benchmark's clients. */
  client_ms: number;
  /** The dev server's process group (npx, wrangler, workerd); null when it cannot be read. */
  server_ms: number | null;
  /** Busy time of the machine not accounted for by the two above. */
  other_ms: number | null;
  machine_busy_ms: number;
  machine_total_ms: number;
  /** Share of the machine's CPU time that other processes used. */
  other_share: number | null;
}

function cpuSnap(server: DevServer | null): CpuSnap {
  return { at: performance.now(), machine: machineCpu(), self: process.cpuUsage(), server: groupCpuMs(server?.child?.pid ?? null)?.ms ?? null };
}

function cpuUse(a: CpuSnap, b: CpuSnap): CpuUse {
  const self = process.cpuUsage(a.self);
  const clientMs = (self.user + self.system) / 1000;
  const serverMs = a.server === null || b.server === null ? null : Math.max(0, b.server - a.server);
  const total = b.machine.total - a.machine.total;
  const busy = total - (b.machine.idle - a.machine.idle);
  const other = serverMs === null ? null : Math.max(0, busy - clientMs - serverMs);
  return {
    seconds: round((b.at - a.at) / 1000),
    client_ms: round(clientMs, 1),
    server_ms: serverMs === null ? null : round(serverMs, 1),
    other_ms: other === null ? null : round(other, 1),
    machine_busy_ms: round(busy, 1),
    machine_total_ms: round(total, 1),
    other_share: other === null || total <= 0 ? null : round(other / total, 3),
  };
}

function sumCpu(parts: CpuUse[]): CpuUse {
  const s = (f: (c: CpuUse) => number | null) => (parts.some((p) => f(p) === null) ? null : parts.reduce((a, p) => a + f(p)!, 0));
  const total = s((c) => c.machine_total_ms)!;
  const other = s((c) => c.other_ms);
  return {
    seconds: round(s((c) => c.seconds)!),
    client_ms: round(s((c) => c.client_ms)!, 1),
    server_ms: s((c) => c.server_ms) === null ? null : round(s((c) => c.server_ms)!, 1),
    other_ms: other === null ? null : round(other, 1),
    machine_busy_ms: round(s((c) => c.machine_busy_ms)!, 1),
    machine_total_ms: round(total, 1),
    other_share: other === null || total <= 0 ? null : round(other / total, 3),
  };
}

/** CPU ms per completed step of the client and of the server over a scenario. */
function perStep(cpu: CpuUse, steps: number): { client_ms: number; server_ms: number | null; other_share: number | null } {
  const n = Math.max(1, steps);
  return { client_ms: round(cpu.client_ms / n, 3), server_ms: cpu.server_ms === null ? null : round(cpu.server_ms / n, 3), other_share: cpu.other_share };
}

// ---- the batched step scenario ------------------------------------------------------------------------

/** Counts what the group commit actually sends: requests, commands per request, HTTP round trips. */
class FetchMeter {
  active = false;
  requests = 0;
  batchRequests = 0;
  commands = 0;
  commandsPerRequest: number[] = [];
  rttMs: number[] = [];
  batchRttMs: number[] = [];
  statuses: Record<string, number> = {};

  readonly fetch: FetchLike = async (input, init) => {
    const t0 = performance.now();
    const res = await fetch(input, init);
    const buf = await res.arrayBuffer();
    const ms = performance.now() - t0;
    if (this.active) {
      this.requests++;
      this.rttMs.push(ms);
      this.statuses[res.status] = (this.statuses[res.status] ?? 0) + 1;
      let n = 1;
      if (new URL(input).pathname.endsWith("/batch") && typeof init?.body === "string") {
        n = (JSON.parse(init.body) as { commands: unknown[] }).commands.length;
        this.batchRequests++;
        this.batchRttMs.push(ms);
      }
      this.commands += n;
      this.commandsPerRequest.push(n);
    }
    const empty = buf.byteLength === 0 && [204, 205, 304].includes(res.status);
    return new Response(empty ? null : buf, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

/**
 * Counts the command socket's frames like FetchMeter counts requests: commands per frame (from the frame's
 * text, without parsing it) and each frame's round trip, matched by the `id` the frame starts with.
 */
class SocketMeter {
  active = false;
  commandsPerFrame: number[] = [];
  rttMs: number[] = [];

  /** ws's WebSocket, metered (frame ids are per socket, so each socket keeps its own send times). */
  readonly WebSocket: WebSocketConstructor = (() => {
    const meter = this;
    return class MeteredWebSocket extends WebSocket {
      private readonly sentAt = new Map<string, number>();
      constructor(url: string, protocols?: string | string[], options?: WebSocket.ClientOptions) {
        super(url, protocols, options);
        this.addEventListener("message", (event) => {
          const id = frameId(String(event.data));
          const at = id === null ? undefined : this.sentAt.get(id);
          if (at === undefined) return;
          this.sentAt.delete(id!);
          if (meter.active) meter.rttMs.push(performance.now() - at);
        });
      }
      override send(data: string): void {
        if (meter.active) {
          const id = frameId(data);
          if (id !== null) this.sentAt.set(id, performance.now());
          meter.commandsPerFrame.push(data.split('"token":').length - 1);
        }
        super.send(data);
      }
    } as unknown as WebSocketConstructor;
  })();
}

/** The `id` a frame of the client starts with (`{"id":12,...`), or null. */
function frameId(text: string): string | null {
  return /^\{"id":(\d+)/.exec(text)?.[1] ?? null;
}

/** What the group commit did during one batched scenario. */
interface BatchingStats {
  requests: number;
  batch_requests: number;
  single_requests: number;
  commands: number;
  commands_per_request: { mean: number; p50: number; max: number };
  /** Every request: fetch called → body read (network + server). */
  http_rtt: LatencyStats;
  /** Batch requests only. */
  batch_rtt: LatencyStats;
  statuses: Record<string, number>;
  /** Step call p50 − request p50: time a call spends in the client (waiting for the tick, queued, answered). */
  client_share_p50_ms: number;
  samples?: { perRequest: number[]; rtt: number[]; batchRtt: number[] };
}

function batchingStats(perRequest: number[], rtt: number[], batchRtt: number[], statuses: Record<string, number>, stepP50: number): BatchingStats {
  const sorted = [...perRequest].sort((a, b) => a - b);
  const commands = perRequest.reduce((a, b) => a + b, 0);
  const httpRtt = stats(rtt);
  return {
    requests: perRequest.length,
    batch_requests: batchRtt.length,
    single_requests: perRequest.length - batchRtt.length,
    commands,
    commands_per_request: { mean: round(commands / Math.max(1, perRequest.length), 2), p50: sorted[Math.floor(sorted.length / 2)] ?? 0, max: sorted.at(-1) ?? 0 },
    http_rtt: httpRtt,
    batch_rtt: stats(batchRtt),
    statuses,
    client_share_p50_ms: round(stepP50 - httpRtt.p50_ms),
    samples: { perRequest, rtt, batchRtt },
  };
}

/** How a scenario's writes travel: a request each, group commits as batch requests, or as socket frames. */
type Carrier = "unbatched" | "batched" | "socket";

/** A step scenario with its CPU use (and, batched, what the group commit did: requests or frames). */
type Measured = StepResult & { cpu: CpuUse; cpu_per_step: ReturnType<typeof perStep>; batching?: BatchingStats; batched: boolean; carrier: Carrier };

/**
 * The client SDK as a scenario's carrier: each run a WorkerClient of `family` (group commit on: batch
 * requests, or frames over the command socket); a refusal becomes an error naming its code. `window` is told
 * when the measured window opens and closes.
 */
export function sdkCarrier(family: RuntimeClient, label: string, window: { start?(): void; stop?(): void } = {}): StepCarrier {
  const timed = async (call: () => Promise<unknown>, held: (answer: any) => unknown): Promise<StepCall> => {
    const t = performance.now();
    let answer: unknown;
    try {
      answer = await call();
    } catch (e) {
      throw e instanceof RuntimeApiError ? new Error(`${e.code} ${e.status}: ${e.message}`) : e;
    }
    return { ms: performance.now() - t, ...claimedStep(held(answer)) };
  };
  return {
    label,
    ...window,
    drive: (run, maxSteps) => {
      const worker = family.worker(run.taskPath, { token: run.token, runId: run.runId, agentId: run.agentId, maxSteps });
      return {
        claimNext: () => timed(() => worker.claimNext(), (a) => a),
        completeAndClaim: (stepId) => timed(() => worker.updateStep(stepId, { status: "completed", result_summary: "done", claim_next: true }), (a) => a.next),
      };
    },
  };
}

/**
 * bench-http's stepScenario with the workers as WorkerClients of one RuntimeClient (group commit on), metered:
 * requests or socket frames, commands per request, round trips, and CPU of this process and the dev server
 * over the measured window. `carrier` "socket" sends the group commits as frames over each task's command
 * socket (`socket: { WebSocket }`, ws's on Node 20).
 */
async function batchedScenario(client: Client, base: string, adminToken: string, workers: number, tasks: number, plan: Plan, server: DevServer | null, carrier: "batched" | "socket" = "batched"): Promise<Measured> {
  const meter = new FetchMeter();
  const frames = new SocketMeter();
  const family = new RuntimeClient({ baseUrl: base, fetch: meter.fetch, batching: true, ...(carrier === "socket" ? { socket: { WebSocket: frames.WebSocket } } : {}) });
  let cpu0 = cpuSnap(server);
  let cpu = cpuUse(cpu0, cpu0);
  const res = await stepScenario(
    client,
    adminToken,
    workers,
    tasks,
    plan,
    sdkCarrier(family, "b", {
      start: () => {
        cpu0 = cpuSnap(server);
        meter.active = frames.active = true;
      },
      stop: () => {
        meter.active = frames.active = false;
        cpu = cpuUse(cpu0, cpuSnap(server));
      },
    }),
  );
  family.close();
  const p50 = res.step_call.p50_ms;
  return {
    ...res,
    cpu,
    cpu_per_step: perStep(cpu, res.steps_completed),
    batching:
      carrier === "socket"
        ? batchingStats([...frames.commandsPerFrame, ...meter.commandsPerRequest], [...frames.rttMs, ...meter.rttMs], frames.rttMs, meter.statuses, p50)
        : batchingStats(meter.commandsPerRequest, meter.rttMs, meter.batchRttMs, meter.statuses, p50),
    batched: true,
    carrier,
  };
}

async function unbatchedScenario(client: Client, adminToken: string, workers: number, tasks: number, plan: Plan, server: DevServer | null): Promise<Measured> {
  const a = cpuSnap(server);
  const res = await stepScenario(client, adminToken, workers, tasks, plan);
  // The snapshot spans set-up and verification too; the per-step figures below are upper bounds.
  const cpu = cpuUse(a, cpuSnap(server));
  return { ...res, cpu, cpu_per_step: perStep(cpu, res.steps_completed), batched: false, carrier: "unbatched" };
}

/** Repeats of one scenario as one result (bench-http's mergeSteps), CPU summed, batching samples pooled. */
function mergeMeasured(parts: Measured[]): Measured {
  const merged = mergeSteps(parts);
  const cpu = sumCpu(parts.map((p) => p.cpu));
  const out: Measured = { ...merged, cpu, cpu_per_step: perStep(cpu, merged.steps_completed), batched: parts[0]!.batched, carrier: parts[0]!.carrier };
  if (parts[0]!.batching !== undefined) {
    const pool = (k: "perRequest" | "rtt" | "batchRtt") => parts.flatMap((p) => p.batching?.samples?.[k] ?? []);
    const statuses: Record<string, number> = {};
    for (const p of parts) for (const [k, v] of Object.entries(p.batching?.statuses ?? {})) statuses[k] = (statuses[k] ?? 0) + v;
    out.batching = batchingStats(pool("perRequest"), pool("rtt"), pool("batchRtt"), statuses, merged.step_call.p50_ms);
  }
  return out;
}

function strip(m: Measured): Omit<Measured, "samples"> {
  const { samples: _s, ...rest } = m;
  if (rest.batching !== undefined) {
    const { samples: _b, ...b } = rest.batching;
    return { ...rest, batching: b };
  }
  return rest;
}

function stepLine(label: string, r: Measured): string {
  const b = r.batching;
  return (
    `  ${label.padEnd(9)} ${String(r.tasks)} task(s) ${String(r.workers).padStart(2)} workers  ${r.steps_completed}/${r.steps_planned} steps in ${fmt(r.seconds, 2)} s = ${fmt(r.steps_per_s).padStart(7)} steps/s  p50 ${fmt(r.step_call.p50_ms, 2)} ms  p99 ${fmt(r.step_call.p99_ms, 2)} ms` +
    (b === undefined ? "" : r.carrier === "socket" ? `  (${b.batch_requests} frames, ${fmt(b.commands_per_request.mean, 1)} commands/frame, frame p50 ${fmt(b.batch_rtt.p50_ms, 2)} ms)` : `  (${b.requests} requests, ${fmt(b.commands_per_request.mean, 1)} commands/request, request p50 ${fmt(b.http_rtt.p50_ms, 2)} ms)`) +
    `  CPU/step client ${fmt(r.cpu_per_step.client_ms, 2)} server ${fmt(r.cpu_per_step.server_ms, 2)} ms` +
    (r.errors > 0 ? `  errors ${r.errors}: ${r.first_error}` : "") +
    (r.timed_out ? "  TIMED OUT" : "")
  );
}

// ---- section: floor, unbatched and batched steps -----------------------------------------------------

interface StepsSection {
  floor: LoadResult[];
  unbatched: Omit<Measured, "samples">[];
  batched: Omit<Measured, "samples">[];
  /** Batched over the command socket instead of batch requests. */
  socket: Omit<Measured, "samples">[];
  anatomy: BatchAnatomy | null;
  cpu: CpuUse;
}

async function runSteps(client: Client, base: string, opts: Options, plan: BenchPlan, server: DevServer | null): Promise<StepsSection> {
  const http = plan.http;
  const floorOp = (): Promise<Answer> => client.call("GET", "/health/object", undefined, undefined, false);
  const cpu0 = cpuSnap(server);
  // Warm the isolate, the objects, the connection pool and the JIT of both paths before measuring.
  const maxC = Math.max(...plan.concurrencies);
  await closedLoop("GET /health/object", maxC, http.warmupMs, http.maxRequestsPerLevel, floorOp);
  await stepScenario(client, opts.adminToken, Math.min(4, maxC), 1, { ...http, stepsPerWorker: 5, minSteps: 20 });
  await batchedScenario(client, base, opts.adminToken, Math.min(8, maxC), 1, { ...http, stepsPerWorker: 5, minSteps: 40 }, server);
  await batchedScenario(client, base, opts.adminToken, Math.min(8, maxC), 1, { ...http, stepsPerWorker: 5, minSteps: 40 }, server, "socket");

  const floor: LoadResult[] = [];
  const unbatched: Measured[] = [];
  const batched: Measured[] = [];
  const socket: Measured[] = [];
  const carriers: readonly Carrier[] = ["unbatched", "batched", "socket"];
  for (const c of plan.concurrencies) {
    // Interleaved: the floor half before and half after, the step scenarios in turn within each repeat,
    // so each comparison sees the same machine load.
    const halves: LoadResult[] = [];
    const measureFloor = async () => {
      const res = await closedLoop("GET /health/object", c, http.floorMs / 2, http.maxRequestsPerLevel / 2, floorOp);
      halves.push(res);
      console.log(`  floor     GET /health/object c=${String(c).padStart(2)}  ${fmt(res.rps).padStart(8)} req/s  p50 ${fmt(res.latency.p50_ms, 2)} ms  p99 ${fmt(res.latency.p99_ms, 2)} ms${res.errors > 0 ? `  errors ${res.errors}: ${res.first_error}` : ""}`);
    };
    await measureFloor();
    const parts = new Map<string, Measured[]>();
    const push = (k: string, m: Measured) => parts.set(k, [...(parts.get(k) ?? []), m]);
    for (let repeat = 0; repeat < http.repeats; repeat++) {
      for (const tasks of [1, http.multiTasks]) {
        // The order of the carriers rotates between repeats, so none always runs on a fresher machine.
        for (let k = 0; k < carriers.length; k++) {
          const carrier = carriers[(k + repeat) % carriers.length]!;
          const m =
            carrier === "unbatched"
              ? await unbatchedScenario(client, opts.adminToken, c, tasks, http, server)
              : await batchedScenario(client, base, opts.adminToken, c, tasks, { ...http, stepsPerWorker: plan.groupCommitStepsPerWorker }, server, carrier);
          console.log(stepLine(carrier, m));
          push(`${carrier}${tasks}`, m);
        }
      }
    }
    await measureFloor();
    const f = mergeLoads(halves);
    delete f.samples;
    floor.push(f);
    for (const tasks of [1, http.multiTasks]) {
      unbatched.push(mergeMeasured(parts.get(`unbatched${tasks}`)!));
      batched.push(mergeMeasured(parts.get(`batched${tasks}`)!));
      socket.push(mergeMeasured(parts.get(`socket${tasks}`)!));
    }
  }
  const cpu = cpuUse(cpu0, cpuSnap(server));
  let anatomy: BatchAnatomy | null = null;
  try {
    anatomy = await batchAnatomy(client, opts.adminToken, http.repeats > 1 ? 40 : 20);
    const d = anatomy.derived;
    console.log(`  batch anatomy (p50 of one batch request): fixed ≈ ${fmt(d.per_request_ms, 2)} ms per request; per command ≈ ${fmt(d.per_progress_command_ms, 3)} ms (progress), ${fmt(d.per_complete_command_ms, 3)} ms (complete + claim_next), of which Idempotency-Key ≈ ${fmt(d.idempotency_key_ms_per_command, 3)} ms`);
  } catch (e) {
    console.log(`  batch anatomy failed: ${errorText(e)}`);
  }
  return { floor, unbatched: unbatched.map(strip), batched: batched.map(strip), socket: socket.map(strip), anatomy, cpu };
}

// ---- batch anatomy: where the server's time per batch goes ------------------------------------------

/** One shape of batch request, sent `rounds` times back to back (one request in flight). */
interface AnatomyShape {
  commands: number;
  kind: "complete_claim_next" | "progress";
  idempotency_keys: boolean;
  tokens: number;
  request: LatencyStats;
}

interface BatchAnatomy {
  shapes: AnatomyShape[];
  /** From the two progress shapes (same token, 32 and 256 commands): intercept and slope; then per complete command. */
  derived: { per_request_ms: number; per_progress_command_ms: number; per_complete_command_ms: number; per_complete_command_no_key_ms: number; idempotency_key_ms_per_command: number };
}

/**
 * Batch requests of fixed shapes against one task each, interleaved round by round so that they see the same
 * load: 32 complete+claim_next commands of 32 workers with Idempotency-Keys (what the SDK sends) and without,
 * and 32 and 256 progress commands of one worker. The first rounds warm up and are dropped.
 */
async function batchAnatomy(client: Client, adminToken: string, rounds: number): Promise<BatchAnatomy> {
  const warm = 3;
  const session = await client.must(201, "POST", "/v1/sessions", adminToken, {});
  const sid: string = session.body.session_id;
  const orch: string = session.body.orchestrator.token;
  let key = 0;
  const setup = async (tid: string, steps: number, workers: number) => {
    const taskPath = `/v1/sessions/${sid}/tasks/${tid}`;
    await client.must(201, "POST", `/v1/sessions/${sid}/tasks`, orch, { task_id: tid, wal_name: tid, title: tid, summary: "", steps: growthSteps(steps) });
    const ws: { token: string; current: string }[] = [];
    for (let i = 0; i < workers; i++) {
      const d = await client.must(201, "POST", `${taskPath}/workers`, orch, { agent_id: `${tid}-w${i}`, max_steps: Math.max(1, Math.ceil(steps / workers) + 1) });
      const c = await client.must(200, "POST", `${taskPath}/steps/claim-next`, d.body.token, {});
      ws.push({ token: d.body.token, current: c.body.step.step_id });
    }
    return { taskPath, ws };
  };
  const n = 32;
  const shapes: { shape: Omit<AnatomyShape, "request">; target: Awaited<ReturnType<typeof setup>>; samples: number[] }[] = [];
  for (const idem of [true, false]) shapes.push({ shape: { commands: n, kind: "complete_claim_next", idempotency_keys: idem, tokens: n }, target: await setup(`anat-c${idem ? "k" : "n"}`, n * (rounds + 2), n), samples: [] });
  for (const size of [n, 256]) shapes.push({ shape: { commands: size, kind: "progress", idempotency_keys: true, tokens: 1 }, target: await setup(`anat-p${size}`, 1, 1), samples: [] });
  for (let r = 0; r < rounds; r++) {
    for (const s of shapes) {
      const { taskPath, ws } = s.target;
      const commands =
        s.shape.kind === "progress"
          ? Array.from({ length: s.shape.commands }, () => ({ token: ws[0]!.token, method: "POST", path: `${taskPath}/steps/${ws[0]!.current}/progress`, body: { phase: "bench" }, idempotency_key: `a${key++}` }))
          : ws.map((w) => ({ token: w.token, method: "POST", path: `${taskPath}/steps/${w.current}/status`, body: { status: "completed", result_summary: "done", claim_next: true }, ...(s.shape.idempotency_keys ? { idempotency_key: `a${key++}` } : {}) }));
      const a = await client.must(200, "POST", `${taskPath}/batch`, ws[0]!.token, { commands });
      const results = a.body.results as { ok: boolean; body: { next?: { step?: { step_id: string } } } }[];
      const bad = results.find((x) => !x.ok);
      if (bad !== undefined) throw new Error(`a ${s.shape.kind} command was refused: ${JSON.stringify(bad).slice(0, 300)}`);
      if (s.shape.kind === "complete_claim_next") {
        results.forEach((x, i) => {
          const next = x.body.next?.step?.step_id;
          if (next === undefined) throw new Error("a complete + claim_next command claimed nothing");
          ws[i]!.current = next;
        });
      }
      if (r >= warm) s.samples.push(a.ms);
    }
  }
  const out: AnatomyShape[] = shapes.map((s) => ({ ...s.shape, request: stats(s.samples) }));
  const p = (kind: AnatomyShape["kind"], commands: number, idem = true) => out.find((s) => s.kind === kind && s.commands === commands && s.idempotency_keys === idem)!.request.p50_ms;
  const slope = (p("progress", 256) - p("progress", n)) / (256 - n);
  const intercept = p("progress", n) - n * slope;
  const perComplete = (p("complete_claim_next", n, true) - intercept) / n;
  const perCompleteNoKey = (p("complete_claim_next", n, false) - intercept) / n;
  return {
    shapes: out,
    derived: { per_request_ms: round(intercept, 2), per_progress_command_ms: round(slope, 4), per_complete_command_ms: round(perComplete, 4), per_complete_command_no_key_ms: round(perCompleteNoKey, 4), idempotency_key_ms_per_command: round(perComplete - perCompleteNoKey, 4) },
  };
}

// ---- section: growth --------------------------------------------------------------------------------

interface GrowthResult {
  dag_steps: number;
  tasks: number;
  steps_measured: number;
  seconds: number;
  steps_per_s: number;
  /** One worker: the per-step cost is the step call's latency. */
  step_call: LatencyStats;
  claim_next: LatencyStats;
  create_task_ms: LatencyStats;
  create_body_bytes: number;
  /** GET of the task view (orchestrator), warm, after the measured steps. */
  view_get: LatencyStats;
  view_bytes: number;
  errors: number;
  first_error?: string;
  verified_completed_on_server: number;
}

/** Compact steps, so that a 10,000-step DAG stays well under the 1 MiB body limit. */
function growthSteps(count: number): { step_id: string; title: string; summary: string; depends_on_step_ids: string[] }[] {
  return Array.from({ length: count }, (_, i) => ({ step_id: `s${String(i).padStart(5, "0")}`, title: `S${i}`, summary: "", depends_on_step_ids: [] }));
}

async function growthScenario(client: Client, adminToken: string, size: number, measured: number, timeoutMs: number, viewGets: number): Promise<GrowthResult> {
  const session = await client.must(201, "POST", "/v1/sessions", adminToken, {});
  const sid: string = session.body.session_id;
  const orch: string = session.body.orchestrator.token;
  const perTask = Math.min(size, measured);
  const taskCount = Math.ceil(measured / perTask);
  const stepLat: number[] = [];
  const claimLat: number[] = [];
  const createLat: number[] = [];
  let bodyBytes = 0;
  let seconds = 0;
  let errors = 0;
  let firstError: string | undefined;
  const noteError = (msg: string) => {
    errors++;
    firstError ??= msg;
  };
  const deadline = performance.now() + timeoutMs;
  const taskPaths: string[] = [];
  for (let t = 0; t < taskCount && performance.now() < deadline; t++) {
    const tid = `grow-${size}-${t}`;
    const body = { task_id: tid, wal_name: tid, title: `Growth ${size}`, summary: "", steps: growthSteps(size) };
    bodyBytes = JSON.stringify(body).length;
    const created = await client.must(201, "POST", `/v1/sessions/${sid}/tasks`, orch, body);
    createLat.push(created.ms);
    const taskPath = `/v1/sessions/${sid}/tasks/${tid}`;
    taskPaths.push(taskPath);
    const d = await client.must(201, "POST", `${taskPath}/workers`, orch, { agent_id: `grow-w${t}`, max_steps: perTask });
    const token: string = d.body.token;
    const t0 = performance.now();
    const claim = await client.call("POST", `${taskPath}/steps/claim-next`, token, {});
    if (claim.status !== 200 || claim.body.step === undefined) {
      noteError(`claim-next ${claim.status}: ${JSON.stringify(claim.body).slice(0, 200)}`);
      continue;
    }
    claimLat.push(claim.ms);
    let current: string | null = claim.body.step.step_id;
    let done = 0;
    let last = t0;
    while (current !== null && done < perTask && performance.now() < deadline) {
      const a = await client.call("POST", `${taskPath}/steps/${current}/status`, token, { status: "completed", result_summary: "done", claim_next: done + 1 < perTask });
      if (a.status !== 200) {
        noteError(`status ${a.status}: ${JSON.stringify(a.body).slice(0, 200)}`);
        break;
      }
      stepLat.push(a.ms);
      last = performance.now();
      done++;
      current = a.body.next?.step?.step_id ?? null;
    }
    seconds += (last - t0) / 1000;
    const f = await client.call("POST", `${taskPath}/runs/${d.body.run_id}/finish`, token, { outcome: "finished" });
    if (f.status !== 200) noteError(`finish ${f.status}: ${JSON.stringify(f.body).slice(0, 200)}`);
  }
  const viewLat: number[] = [];
  let viewBytes = 0;
  let verified = 0;
  for (const [i, taskPath] of taskPaths.entries()) {
    verified += await client.completedOnServer(taskPath, orch);
    if (i === 0) {
      const view = await client.must(200, "GET", taskPath, orch);
      viewBytes = JSON.stringify(view.body).length;
      for (let g = 0; g < viewGets; g++) viewLat.push((await client.must(200, "GET", taskPath, orch)).ms);
    }
  }
  return {
    dag_steps: size,
    tasks: taskPaths.length,
    steps_measured: stepLat.length,
    seconds: round(seconds),
    steps_per_s: round(stepLat.length / seconds, 1),
    step_call: stats(stepLat),
    claim_next: stats(claimLat),
    create_task_ms: stats(createLat),
    create_body_bytes: bodyBytes,
    view_get: stats(viewLat),
    view_bytes: viewBytes,
    errors,
    ...(firstError === undefined ? {} : { first_error: firstError }),
    verified_completed_on_server: verified,
  };
}

// ---- section: recovery -------------------------------------------------------------------------------

interface BuiltWal {
  label: string;
  events: number;
  task_path: string;
  orch: string;
  wal_seq: number;
  build_seconds: number;
  batches: number;
  events_per_s: number;
  batch_ms: LatencyStats;
}

/** A task whose WAL holds `events` events: one claimed step, then progress commands through the batch route. */
async function buildWal(client: Client, adminToken: string, label: string, events: number, perBatch: number, timeoutMs: number): Promise<BuiltWal> {
  const session = await client.must(201, "POST", "/v1/sessions", adminToken, {});
  const sid: string = session.body.session_id;
  const orch: string = session.body.orchestrator.token;
  const tid = `wal-${label}`;
  const taskPath = `/v1/sessions/${sid}/tasks/${tid}`;
  // A day-long lease: no lease-expiry alarm may wake the object (and replay it) before the measured GET.
  await client.must(201, "POST", `/v1/sessions/${sid}/tasks`, orch, { task_id: tid, wal_name: tid, title: `Recovery ${label}`, summary: "", steps: growthSteps(1), step_lease_timeout_ms: 86_400_000 });
  const d = await client.must(201, "POST", `${taskPath}/workers`, orch, { agent_id: `wal-${label}`, max_steps: 1 });
  const token: string = d.body.token;
  const claim = await client.must(200, "POST", `${taskPath}/steps/claim-next`, token, {});
  const stepId: string = claim.body.step.step_id;
  let seq: number = claim.body.wal_seq;
  const batchMs: number[] = [];
  const t0 = performance.now();
  const deadline = t0 + timeoutMs;
  let n = 0;
  while (seq < events) {
    if (performance.now() > deadline) throw new Error(`building the ${label} WAL took over ${timeoutMs / 1000} s (at ${seq} events)`);
    const count = Math.min(perBatch, events - seq);
    const commands = Array.from({ length: count }, () => ({ token, method: "POST", path: `${taskPath}/steps/${stepId}/progress`, body: { phase: "bench", counters: { n: n++ } } }));
    const a = await client.must(200, "POST", `${taskPath}/batch`, token, { commands });
    batchMs.push(a.ms);
    const results = a.body.results as { ok: boolean; status: number; body: { wal_seq?: number } }[];
    const bad = results.find((r) => !r.ok);
    if (bad !== undefined) throw new Error(`a progress command was refused while building the ${label} WAL: ${JSON.stringify(bad).slice(0, 300)}`);
    const last = results.at(-1)?.body.wal_seq;
    if (typeof last !== "number" || last <= seq) throw new Error(`the batch answered no higher wal_seq (${String(last)} after ${seq})`);
    seq = last;
  }
  const seconds = (performance.now() - t0) / 1000;
  return { label, events, task_path: taskPath, orch, wal_seq: seq, build_seconds: round(seconds, 2), batches: batchMs.length, events_per_s: round((seq - claim.body.wal_seq) / seconds, 0), batch_ms: stats(batchMs) };
}

interface RecoveryResult {
  label: string;
  wal_events: number;
  build: Omit<BuiltWal, "task_path" | "orch" | "label">;
  /** First GET after each restart: object start + WAL replay + the view (p50 over the restarts, and each). */
  cold_get_ms: number;
  cold_get_samples_ms: number[];
  /** The GET right after the first one (the object in memory), p50 over the restarts. */
  second_get_ms: number;
  /** Further warm GETs, pooled over the restarts. */
  warm_gets: LatencyStats;
  /** cold p50 − warm p50 − (control cold p50 − control warm p50): the replay of this WAL alone, approximately. */
  replay_ms_est: number;
  replay_events_per_s_est: number;
  /** The task's last wal_seq as the restarted server reports it (x-last-wal-seq). */
  verified_wal_seq: number | null;
}

interface RecoverySection {
  restarts: { stop_ms: number; start_ms: number }[];
  persist_dir: string | null;
  /** After each restart the Worker is warmed first (these GETs start the isolate and the health object). */
  health_object_after_restart_ms: number[][];
  control: { wal_events: number; cold_get_ms: number; cold_get_samples_ms: number[]; warm_get_ms: number };
  wals: RecoveryResult[];
}

// ---- the report ------------------------------------------------------------------------------------------

interface Ratios {
  workers: number;
  tasks: number;
  floor_rps: number;
  unbatched_steps_per_s: number;
  batched_steps_per_s: number;
  bullmq_jobs_per_s: { concurrency: number | null; workers: number | null; best: number | null };
  /** floor req/s ÷ steps/s: the per-step cost in floor round trips (goal for unbatched: ≤ 2). */
  unbatched_cost_vs_floor: number;
  batched_cost_vs_floor: number;
  /** ours steps/s ÷ BullMQ jobs/s (best of its two worker models at the same workers and queues). */
  unbatched_vs_bullmq: number | null;
  batched_vs_bullmq: number | null;
  /** The same group commits as frames over the command socket. */
  socket_steps_per_s: number;
  socket_cost_vs_floor: number;
  socket_vs_bullmq: number | null;
  socket_vs_batched_throughput: number;
  /** batched steps/s ÷ unbatched steps/s, and the p50 step latencies' ratio. */
  batched_vs_unbatched_throughput: number;
  batched_vs_unbatched_p50: number;
}

function bullmqFor(b: BullmqResults | null, workers: number, queues: number): Ratios["bullmq_jobs_per_s"] {
  if (b === null) return { concurrency: null, workers: null, best: null };
  // A layout both models share was run once, under "concurrency".
  const conc = b.steps.find((s) => s.workers === workers && s.queues === queues && s.model === "concurrency")?.jobs_per_s ?? null;
  const wk = b.steps.find((s) => s.workers === workers && s.queues === queues && s.model === "workers")?.jobs_per_s ?? conc;
  const best = conc === null && wk === null ? null : Math.max(conc ?? 0, wk ?? 0);
  return { concurrency: conc, workers: wk, best };
}

function computeRatios(steps: StepsSection, bullmq: BullmqResults | null, plan: BenchPlan): Ratios[] {
  const out: Ratios[] = [];
  for (const c of plan.concurrencies) {
    const f = steps.floor.find((x) => x.concurrency === c)!;
    for (const tasks of [1, plan.http.multiTasks]) {
      const u = steps.unbatched.find((s) => s.workers === c && s.tasks === tasks)!;
      const b = steps.batched.find((s) => s.workers === c && s.tasks === tasks)!;
      const k = steps.socket.find((s) => s.workers === c && s.tasks === tasks)!;
      const peer = bullmqFor(bullmq, c, tasks);
      out.push({
        workers: c,
        tasks,
        floor_rps: f.rps,
        unbatched_steps_per_s: u.steps_per_s,
        batched_steps_per_s: b.steps_per_s,
        bullmq_jobs_per_s: peer,
        unbatched_cost_vs_floor: round(f.rps / u.steps_per_s, 2),
        batched_cost_vs_floor: round(f.rps / b.steps_per_s, 2),
        unbatched_vs_bullmq: peer.best === null ? null : round(u.steps_per_s / peer.best, 3),
        batched_vs_bullmq: peer.best === null ? null : round(b.steps_per_s / peer.best, 3),
        socket_steps_per_s: k.steps_per_s,
        socket_cost_vs_floor: round(f.rps / k.steps_per_s, 2),
        socket_vs_bullmq: peer.best === null ? null : round(k.steps_per_s / peer.best, 3),
        socket_vs_batched_throughput: round(k.steps_per_s / b.steps_per_s, 2),
        batched_vs_unbatched_throughput: round(b.steps_per_s / u.steps_per_s, 2),
        batched_vs_unbatched_p50: round(b.step_call.p50_ms / u.step_call.p50_ms, 2),
      });
    }
  }
  return out;
}

function mainTable(steps: StepsSection, ratios: Ratios[]): { headers: string[]; rows: string[][] } {
  const headers = ["workers", "tasks", "floor req/s", "floor p50/p99 ms", "unbatched steps/s", "p50/p99 ms", "cost÷floor", "batched steps/s", "p50/p99 ms", "cmds/req", "batched÷unbatched", "socket steps/s", "p50/p99 ms", "cmds/frame", "BullMQ jobs/s (1×W / W×1)", "unbatched÷BullMQ", "batched÷BullMQ", "socket÷BullMQ"];
  const rows = ratios.map((r) => {
    const f = steps.floor.find((x) => x.concurrency === r.workers)!;
    const u = steps.unbatched.find((s) => s.workers === r.workers && s.tasks === r.tasks)!;
    const b = steps.batched.find((s) => s.workers === r.workers && s.tasks === r.tasks)!;
    const k = steps.socket.find((s) => s.workers === r.workers && s.tasks === r.tasks)!;
    return [
      String(r.workers),
      String(r.tasks),
      fmt(f.rps, 0),
      `${fmt(f.latency.p50_ms, 2)}/${fmt(f.latency.p99_ms, 2)}`,
      fmt(u.steps_per_s, 0),
      `${fmt(u.step_call.p50_ms, 2)}/${fmt(u.step_call.p99_ms, 2)}`,
      `${fmt(r.unbatched_cost_vs_floor, 2)}×`,
      fmt(b.steps_per_s, 0),
      `${fmt(b.step_call.p50_ms, 2)}/${fmt(b.step_call.p99_ms, 2)}`,
      fmt(b.batching?.commands_per_request.mean, 1),
      `${fmt(r.batched_vs_unbatched_throughput, 2)}×`,
      fmt(k.steps_per_s, 0),
      `${fmt(k.step_call.p50_ms, 2)}/${fmt(k.step_call.p99_ms, 2)}`,
      fmt(k.batching?.commands_per_request.mean, 1),
      r.bullmq_jobs_per_s.best === null ? "-" : `${fmt(r.bullmq_jobs_per_s.concurrency, 0)} / ${fmt(r.bullmq_jobs_per_s.workers, 0)}`,
      r.unbatched_vs_bullmq === null ? "-" : `${fmt(r.unbatched_vs_bullmq, 3)}×`,
      r.batched_vs_bullmq === null ? "-" : `${fmt(r.batched_vs_bullmq, 2)}×`,
      r.socket_vs_bullmq === null ? "-" : `${fmt(r.socket_vs_bullmq, 2)}×`,
    ];
  });
  return { headers, rows };
}

// ---- main -----------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const plan = opts.quick ? QUICK : FULL;
  const wallStart = performance.now();
  const loadStart = os.loadavg();
  const source = sourceState();
  console.log(`bench (${opts.quick ? "quick" : "full"}): sections ${[...opts.only].join(", ")}`);
  const stat0 = procStat();
  const idleBefore = await cpuIdleShare(1_000);
  if (idleBefore < 0.8) console.log(`warning: only ${(idleBefore * 100).toFixed(0)}% of the CPU was idle before the run: something else is running, figures will be low`);

  let server: DevServer | null = null;
  const onSignal = (signal: NodeJS.Signals) => {
    console.error(`\n${signal}: stopping`);
    const s = server;
    server = null;
    void (s === null ? Promise.resolve() : stopDevServer(s)).finally(() => process.exit(130));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  const sectionErrors: Record<string, string> = {};
  let steps: StepsSection | null = null;
  let growth: GrowthResult[] | null = null;
  let growthCpu: CpuUse | null = null;
  let recovery: RecoverySection | null = null;
  let bullmq: BullmqResults | null = null;
  let serverInfo: { url: string; startup_ms: number; log: string | null; processes: number | null } | null = null;
  /** Reloads of the dev server(s) during the run (a source file edited meanwhile): the figures may be skewed. */
  let reloads = 0;
  try {
    if (opts.only.has("steps") || opts.only.has("growth") || opts.only.has("recovery")) {
      console.log("starting wrangler dev (node scripts/dev.mjs) on a free port …");
      server = await startDevServer({ logLevel: opts.serverLogLevel });
      serverInfo = { url: server.base, startup_ms: server.startupMs, log: server.logFile, processes: groupCpuMs(server.child?.pid ?? null)?.processes ?? null };
      console.log(`server up at ${server.base} after ${(server.startupMs / 1000).toFixed(1)} s (${serverInfo.processes ?? "?"} processes in its group; log ${server.logFile})`);
      const client = new Client(server.base);

      if (opts.only.has("steps")) {
        console.log("\n[steps] floor, unbatched, batch requests and the command socket at the same concurrency");
        try {
          steps = await runSteps(client, server.base, opts, plan, server);
        } catch (e) {
          sectionErrors.steps = errorText(e);
          console.log(`  steps failed: ${sectionErrors.steps}`);
        }
      }

      if (opts.only.has("growth")) {
        console.log("\n[growth] one worker, unbatched, per-step cost vs DAG size");
        try {
          const c0 = cpuSnap(server);
          growth = [];
          for (const size of plan.growthSizes) {
            const g = await growthScenario(client, opts.adminToken, size, plan.growthMeasuredSteps, plan.http.scenarioTimeoutMs, plan.growthViewGets);
            growth.push(g);
            console.log(
              `  ${String(size).padStart(6)} steps: ${g.steps_measured} steps (${g.tasks} task(s)) ${fmt(g.steps_per_s)} steps/s  step p50 ${fmt(g.step_call.p50_ms, 2)} ms p99 ${fmt(g.step_call.p99_ms, 2)} ms  create ${fmt(g.create_task_ms.p50_ms, 1)} ms (${(g.create_body_bytes / 1024).toFixed(0)} KiB)  view GET ${fmt(g.view_get.p50_ms, 1)} ms (${(g.view_bytes / 1024).toFixed(0)} KiB)${g.errors > 0 ? `  errors ${g.errors}: ${g.first_error}` : ""}`,
            );
          }
          growthCpu = cpuUse(c0, cpuSnap(server));
        } catch (e) {
          sectionErrors.growth = errorText(e);
          console.log(`  growth failed: ${sectionErrors.growth}`);
        }
      }

      if (opts.only.has("recovery")) {
        console.log("\n[recovery] WAL replay after a restart of the dev server on the same storage");
        try {
          // The control: a task with a handful of events (object start without much to replay).
          const control = await buildWal(client, opts.adminToken, "control", 10, plan.recoveryBatch, 60_000);
          const built: BuiltWal[] = [];
          for (const events of plan.recoveryEvents) {
            const w = await buildWal(client, opts.adminToken, `e${events}`, events, plan.recoveryBatch, 180_000);
            built.push(w);
            console.log(`  built a ${w.wal_seq}-event WAL in ${fmt(w.build_seconds, 1)} s (${w.batches} batch requests, ${fmt(w.events_per_s, 0)} events/s, batch p50 ${fmt(w.batch_ms.p50_ms, 1)} ms)`);
          }
          const persistDir = server.persistDir;
          const median = (xs: number[]) => stats(xs).p50_ms;
          const restarts: RecoverySection["restarts"] = [];
          const health: number[][] = [];
          const controlCold: number[] = [];
          const controlWarm: number[] = [];
          const samples = built.map(() => ({ cold: [] as number[], second: [] as number[], warm: [] as number[], walSeq: null as number | null }));
          // A task object's push to its session index is due (by its alarm) 200 ms after its last write; an alarm
          // still due at the stop would start the object, and replay its WAL, by itself after the restart, before
          // the GET that is meant to measure that. Let the pushes happen first.
          await sleep(1_000);
          for (let r = 0; r < plan.recoveryRestarts; r++) {
            reloads += reloadCount(server);
            const ts = performance.now();
            await stopDevServer(server, { keepPersistDir: true });
            const stopMs = performance.now() - ts;
            server = null;
            server = await startDevServer({ logLevel: opts.serverLogLevel, ...(persistDir === null ? {} : { persistDir }) });
            restarts.push({ stop_ms: round(stopMs, 0), start_ms: server.startupMs });
            console.log(`  restart ${r + 1}/${plan.recoveryRestarts}: stopped in ${fmt(stopMs, 0)} ms, up again on the same storage (${persistDir}) at ${server.base} after ${(server.startupMs / 1000).toFixed(1)} s`);
            const c2 = new Client(server.base);
            // Start the isolate and the health object first, so the task GETs below hold only the task object's start.
            const h: number[] = [];
            for (let i = 0; i < 3; i++) h.push(round((await c2.must(200, "GET", "/health/object")).ms, 2));
            health.push(h);
            controlCold.push((await c2.must(200, "GET", control.task_path, control.orch)).ms);
            controlWarm.push((await c2.must(200, "GET", control.task_path, control.orch)).ms);
            for (const [i, w] of built.entries()) {
              const sm = samples[i]!;
              sm.cold.push((await c2.must(200, "GET", w.task_path, w.orch)).ms);
              sm.second.push((await c2.must(200, "GET", w.task_path, w.orch)).ms);
              for (let g = 0; g < plan.recoveryWarmGets; g++) sm.warm.push((await c2.must(200, "GET", w.task_path, w.orch)).ms);
              const tail = await fetch(`${server.base}${w.task_path}/wal?after_seq=${Math.max(0, w.wal_seq - 1)}&limit=1`, { headers: { authorization: `Bearer ${w.orch}` }, signal: AbortSignal.timeout(30_000) });
              await tail.arrayBuffer();
              const header = Number(tail.headers.get("x-last-wal-seq"));
              sm.walSeq = tail.status === 200 && Number.isFinite(header) ? header : null;
              console.log(`    ${String(w.wal_seq).padStart(6)}-event WAL: first GET ${fmt(sm.cold.at(-1), 1)} ms, second ${fmt(sm.second.at(-1), 1)} ms, warm p50 ${fmt(median(sm.warm.slice(-plan.recoveryWarmGets)), 1)} ms; last wal_seq ${sm.walSeq ?? "?"} (control: first ${fmt(controlCold.at(-1), 1)} ms, second ${fmt(controlWarm.at(-1), 1)} ms)`);
            }
          }
          const controlExtra = Math.max(0, median(controlCold) - median(controlWarm));
          const wals: RecoveryResult[] = built.map((w, i) => {
            const sm = samples[i]!;
            const warm = stats(sm.warm);
            const replay = Math.max(0, median(sm.cold) - warm.p50_ms - controlExtra);
            return {
              label: w.label,
              wal_events: w.wal_seq,
              build: { events: w.events, wal_seq: w.wal_seq, build_seconds: w.build_seconds, batches: w.batches, events_per_s: w.events_per_s, batch_ms: w.batch_ms },
              cold_get_ms: round(median(sm.cold), 1),
              cold_get_samples_ms: sm.cold.map((x) => round(x, 1)),
              second_get_ms: round(median(sm.second), 2),
              warm_gets: warm,
              replay_ms_est: round(replay, 1),
              replay_events_per_s_est: replay > 0 ? round((w.wal_seq / replay) * 1000, 0) : NaN,
              verified_wal_seq: sm.walSeq,
            };
          });
          recovery = {
            restarts,
            persist_dir: persistDir,
            health_object_after_restart_ms: health,
            control: { wal_events: control.wal_seq, cold_get_ms: round(median(controlCold), 1), cold_get_samples_ms: controlCold.map((x) => round(x, 1)), warm_get_ms: round(median(controlWarm), 2) },
            wals,
          };
        } catch (e) {
          sectionErrors.recovery = errorText(e);
          console.log(`  recovery failed: ${sectionErrors.recovery}`);
        }
      }
    }
  } finally {
    if (server !== null) {
      reloads += reloadCount(server);
      await stopDevServer(server);
      server = null;
    }
  }

  if (opts.only.has("bullmq")) {
    console.log("\n[bullmq] the peer: BullMQ on a local redis-server (the dev server is stopped)");
    try {
      bullmq = await runBullmqBench({ quick: opts.quick, concurrencies: plan.concurrencies, log: (line) => console.log(`  ${line.replace(/^\s+/, "")}`) });
    } catch (e) {
      sectionErrors.bullmq = errorText(e);
      console.log(`  bullmq failed: ${sectionErrors.bullmq}`);
    }
  }
  process.off("SIGINT", onSignal);
  process.off("SIGTERM", onSignal);

  // ---- report ----
  const loadEnd = os.loadavg();
  const stat1 = procStat();
  const stealShare = stat0 === null || stat1 === null || stat1.total <= stat0.total ? null : round((stat1.steal - stat0.steal) / (stat1.total - stat0.total), 3);
  const cpus = os.cpus();
  const ratios = steps === null ? [] : computeRatios(steps, bullmq, plan);
  const at32 = (tasks: number) => ratios.find((r) => r.workers === Math.max(...plan.concurrencies) && r.tasks === tasks);
  const goals = {
    unbatched_cost_within_2x_floor: ratios.map((r) => ({ workers: r.workers, tasks: r.tasks, cost_vs_floor: r.unbatched_cost_vs_floor, met: r.unbatched_cost_vs_floor <= 2 })),
    batched_at_32_at_least_bullmq: [1, plan.http.multiTasks].map((tasks) => {
      const r = at32(tasks);
      // Either carrier of the group commit counts: batch requests or socket frames.
      const best = r === undefined ? null : Math.max(r.batched_steps_per_s, r.socket_steps_per_s);
      const ratio = r === undefined || best === null || r.bullmq_jobs_per_s.best === null ? null : round(best / r.bullmq_jobs_per_s.best, 3);
      return { tasks, batched_steps_per_s: r?.batched_steps_per_s ?? null, socket_steps_per_s: r?.socket_steps_per_s ?? null, bullmq_best_jobs_per_s: r?.bullmq_jobs_per_s.best ?? null, ratio, met: ratio === null ? null : ratio >= 1 };
    }),
  };
  const ourCpu = [steps?.cpu, growthCpu].filter((c): c is CpuUse => c !== undefined && c !== null);
  const ours = ourCpu.length > 0 ? sumCpu(ourCpu) : null;
  const results = {
    generated_at: new Date().toISOString(),
    mode: opts.quick ? "quick" : "full",
    machine: {
      ...machineInfo(loadStart, loadEnd),
      cpu_idle_before: idleBefore,
      /** Share of the machine's CPU other processes used: during our steps+growth sections, and during BullMQ's run. */
      other_processes_cpu_share: { ours: ours?.other_share ?? null, bullmq: bullmq?.machine.foreign_cpu_share ?? null },
      /** Share of the CPU time the hypervisor gave to other guests over the whole run (/proc/stat steal). */
      steal_share: stealShare,
    },
    source,
    server: serverInfo === null ? null : { ...serverInfo, reloads_during_run: reloads },
    plan,
    section_errors: sectionErrors,
    ratios,
    goals,
    steps,
    growth: growth === null ? null : { results: growth, cpu: growthCpu },
    recovery,
    bullmq,
    wall_seconds: round((performance.now() - wallStart) / 1000, 1),
  };

  const machineLine = `${cpus.length} CPUs (${cpus[0]?.model ?? "?"}), node ${process.version}, load ${loadStart.map((n) => n.toFixed(2)).join(" ")} → ${loadEnd.map((n) => n.toFixed(2)).join(" ")}, CPU idle before ${(idleBefore * 100).toFixed(0)}%, other processes' CPU share: ours ${ours?.other_share == null ? "?" : `${(ours.other_share * 100).toFixed(0)}%`}, BullMQ ${bullmq === null ? "?" : `${(bullmq.machine.foreign_cpu_share * 100).toFixed(0)}%`}, steal ${stealShare === null ? "?" : `${(stealShare * 100).toFixed(1)}%`}`;
  console.log(`\n==== bench (${results.mode}) — ${machineLine}`);
  const tables: { title: string; headers: string[]; rows: string[][] }[] = [];
  if (steps !== null) {
    const t = mainTable(steps, ratios);
    tables.push({ title: "per-step cost: complete a step with claim_next (steps/s, call latency); floor = GET /health/object at the same concurrency; BullMQ = jobs/s at the same workers on 1 or 8 queues (one Worker of concurrency W / W Workers)", ...t });
    tables.push({
      title: "where the batched time goes (pooled over repeats; request = one HTTP round trip or socket frame; in client = step call p50 − request p50; CPU ms per step of this process and of the dev server's process group)",
      headers: ["carrier", "workers", "tasks", "requests/frames", "cmds/req mean/max", "request p50 ms", "step call p50 ms", "in client p50 ms", "CPU ms/step client/server", "unbatched CPU ms/step client/server (incl. set-up)", "errors"],
      rows: [...steps.batched, ...steps.socket].map((b) => {
        const u = steps!.unbatched.find((x) => x.workers === b.workers && x.tasks === b.tasks)!;
        return [
          b.carrier,
          String(b.workers),
          String(b.tasks),
          String(b.batching?.requests ?? "-"),
          `${fmt(b.batching?.commands_per_request.mean, 1)}/${b.batching?.commands_per_request.max ?? "-"}`,
          fmt(b.carrier === "socket" ? b.batching?.batch_rtt.p50_ms : b.batching?.http_rtt.p50_ms, 2),
          fmt(b.step_call.p50_ms, 2),
          fmt(b.batching?.client_share_p50_ms, 2),
          `${fmt(b.cpu_per_step.client_ms, 3)}/${fmt(b.cpu_per_step.server_ms, 3)}`,
          `${fmt(u.cpu_per_step.client_ms, 3)}/${fmt(u.cpu_per_step.server_ms, 3)}`,
          String(b.errors + u.errors),
        ];
      }),
    });
  }
  if (steps?.anatomy != null) {
    const a = steps.anatomy;
    const d = a.derived;
    tables.push({
      title: `batch anatomy (one task per shape, one request in flight, p50 after warm-up): fixed ≈ ${fmt(d.per_request_ms, 2)} ms per request; per command ≈ ${fmt(d.per_progress_command_ms, 3)} ms for progress, ≈ ${fmt(d.per_complete_command_ms, 3)} ms for complete + claim_next (${fmt(d.per_complete_command_no_key_ms, 3)} ms without Idempotency-Key)`,
      headers: ["commands", "kind", "Idempotency-Key", "tokens", "request p50/p99 ms", "ms per command"],
      rows: a.shapes.map((x) => [String(x.commands), x.kind, x.idempotency_keys ? "yes" : "no", String(x.tokens), `${fmt(x.request.p50_ms, 2)}/${fmt(x.request.p99_ms, 2)}`, fmt(x.request.p50_ms / x.commands, 3)]),
    });
  }
  if (growth !== null) {
    tables.push({
      title: "growth (one worker, unbatched; per-step cost = step call latency; the first steps of each DAG)",
      headers: ["DAG steps", "steps measured", "steps/s", "step p50/p99 ms", "claim-next p50 ms", "create task ms", "create body KiB", "view GET ms", "view KiB", "errors"],
      rows: growth.map((g) => [String(g.dag_steps), `${g.steps_measured} (${g.tasks} task${g.tasks === 1 ? "" : "s"})`, fmt(g.steps_per_s, 0), `${fmt(g.step_call.p50_ms, 2)}/${fmt(g.step_call.p99_ms, 2)}`, fmt(g.claim_next.p50_ms, 2), fmt(g.create_task_ms.p50_ms, 1), fmt(g.create_body_bytes / 1024, 0), fmt(g.view_get.p50_ms, 1), fmt(g.view_bytes / 1024, 0), String(g.errors)]),
    });
  }
  if (recovery !== null) {
    const rs = recovery.restarts;
    tables.push({
      title: `recovery (${rs.length} restart(s) of the dev server on the same storage: stop ${rs.map((r) => r.stop_ms).join("/")} ms, start ${rs.map((r) => (r.start_ms / 1000).toFixed(1)).join("/")} s; first GET = p50 over the restarts; control task of ${recovery.control.wal_events} events: first GET ${fmt(recovery.control.cold_get_ms, 1)} ms, second ${fmt(recovery.control.warm_get_ms, 1)} ms; replay ≈ first − warm − the control's difference)`,
      headers: ["WAL events", "build s", "batches of 256", "first GET ms (cold)", "each restart ms", "second GET ms", "warm p50 ms", "replay ≈ ms", "≈ events/s", "wal_seq after restart"],
      rows: recovery.wals.map((w) => [String(w.wal_events), fmt(w.build.build_seconds, 1), String(w.build.batches), fmt(w.cold_get_ms, 1), w.cold_get_samples_ms.map((x) => fmt(x, 0)).join("/"), fmt(w.second_get_ms, 1), fmt(w.warm_gets.p50_ms, 1), fmt(w.replay_ms_est, 0), fmt(w.replay_events_per_s_est, 0), String(w.verified_wal_seq ?? "?")]),
    });
  }
  if (bullmq !== null) {
    const b = bullmq;
    tables.push({
      title: `BullMQ ${b.software.bullmq} on Redis ${b.software.redis} (AOF appendfsync ${b.settings.appendfsync}, removeOnComplete ${String(b.settings.remove_on_complete)})`,
      headers: ["model", "workers", "queues", "jobs/s", "take→ack p50/p99 ms", "CPU ms/job redis+node", "PING req/s"],
      rows: b.steps.map((x) => [x.model, String(x.workers), String(x.queues), fmt(x.jobs_per_s, 0), `${fmt(x.take_to_ack.p50_ms, 2)}/${fmt(x.take_to_ack.p99_ms, 2)}`, `${fmt(x.cpu_ms_per_job.redis, 3)}+${fmt(x.cpu_ms_per_job.node, 3)}`, fmt(b.floor.find((f) => f.concurrency === x.workers)?.rps, 0)]),
    });
    tables.push({
      title: "BullMQ flows (FlowProducer, fan-in; children and parent on one queue)",
      headers: ["model", "workers", "1+100: total p50 ms", "last child→parent p50 ms", `${b.plan.smallFlows}×(1+${b.plan.smallFlowChildren}): flows/s`, "jobs/s"],
      rows: b.flows.map((f) => [f.model, String(f.big.workers), fmt(f.big.total.p50_ms, 1), fmt(f.big.fan_in.p50_ms, 2), fmt(f.small.flows_per_s, 0), fmt(f.small.jobs_per_s, 0)]),
    });
  }
  for (const t of tables) console.log(`\n${t.title}:\n${table(t.headers, t.rows)}`);
  if (opts.markdown) {
    console.log("\n---- markdown ----");
    console.log(`\n${machineLine}; ${results.generated_at}`);
    for (const t of tables) console.log(`\n${t.title}:\n\n${markdownTable(t.headers, t.rows)}`);
    console.log("\n---- end markdown ----");
  }
  if (ratios.length > 0) {
    console.log("\nratios (this run):");
    for (const r of ratios) {
      console.log(
        `  ${String(r.workers).padStart(2)} workers, ${r.tasks} task(s): unbatched cost = ${fmt(r.unbatched_cost_vs_floor, 2)}× floor, batched ${fmt(r.batched_cost_vs_floor, 2)}× floor; batched/unbatched ${fmt(r.batched_vs_unbatched_throughput, 2)}× throughput, ${fmt(r.batched_vs_unbatched_p50, 2)}× p50; socket ${fmt(r.socket_cost_vs_floor, 2)}× floor, socket/batched ${fmt(r.socket_vs_batched_throughput, 2)}×; ours/BullMQ unbatched ${fmt(r.unbatched_vs_bullmq, 3)}×, batched ${fmt(r.batched_vs_bullmq, 3)}×, socket ${fmt(r.socket_vs_bullmq, 3)}×`,
      );
    }
    console.log("\ngoals (stated, not asserted):");
    const missed = goals.unbatched_cost_within_2x_floor.filter((g) => !g.met);
    console.log(`  unbatched per-step cost within 2× the floor: ${missed.length === 0 ? "met everywhere" : `missed at ${missed.map((g) => `${g.workers}w/${g.tasks}t (${fmt(g.cost_vs_floor, 2)}×)`).join(", ")}`}`);
    for (const g of goals.batched_at_32_at_least_bullmq) console.log(`  batched steps/s at ${Math.max(...plan.concurrencies)} workers, ${g.tasks} task(s) ≥ BullMQ's best model: ${fmt(g.batched_steps_per_s, 0)} (requests) / ${fmt(g.socket_steps_per_s, 0)} (socket) vs ${fmt(g.bullmq_best_jobs_per_s, 0)} jobs/s → ${g.met === null ? "not measured" : g.met ? "met" : `missed (${fmt(g.ratio, 2)}×)`}`);
  }
  const warnings: string[] = [];
  for (const s of [...(steps?.unbatched ?? []), ...(steps?.batched ?? []), ...(steps?.socket ?? [])]) {
    if (s.errors > 0 || s.timed_out || s.duplicate_completions > 0 || s.verified_completed_on_server !== s.steps_planned) warnings.push(`${s.carrier} ${s.workers} workers ${s.tasks} task(s): errors ${s.errors}, timed out ${s.timed_out}, dups ${s.duplicate_completions}, server completed ${s.verified_completed_on_server}/${s.steps_planned}`);
  }
  for (const g of growth ?? []) if (g.errors > 0) warnings.push(`growth ${g.dag_steps}: ${g.first_error}`);
  for (const w of recovery?.wals ?? []) if (w.verified_wal_seq !== w.wal_events) warnings.push(`recovery ${w.label}: the restarted server reports wal_seq ${w.verified_wal_seq}, built ${w.wal_events}`);
  if (bullmq !== null) warnings.push(...bullmqProblems(bullmq).map((p) => `bullmq ${p}`));
  for (const [k, v] of Object.entries(sectionErrors)) warnings.push(`section ${k} failed: ${v}`);
  if (reloads > 0) warnings.push(`the dev server reloaded ${reloads} time(s) during the run (a source file changed): the figures may be skewed`);
  if (warnings.length > 0) console.log(`\nwarnings:\n${warnings.map((w) => `  ${w}`).join("\n")}`);

  mkdirSync(path.dirname(opts.out), { recursive: true });
  writeFileSync(opts.out, `${JSON.stringify({ ...results, warnings }, null, 2)}\n`);
  console.log(`\nwrote ${opts.out} (${results.wall_seconds} s)`);
  if (warnings.length > 0) process.exitCode = 1;
}

if (isMain(import.meta.url)) {
  // BullMQ/ioredis may leave sockets or timers behind after close(); the results are written, so leave.
  main().then(() => process.exit(process.exitCode ?? 0), exitWithError);
}
