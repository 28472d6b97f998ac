/**
 * @module HTTP benchmark of the running service: the floor (an empty Worker → Durable Object round trip,
 * `GET /health/object`) against the per-step cost of the worker loop (complete a step and claim the next
 * one in the same call), at the same client concurrency, on one task and on 8 tasks in parallel.
 *
 * Usage:
 *   npm run bench:http                      # starts `node scripts/dev.mjs` on a free port, full run
 *   npm run bench:http -- --quick           # short run (smoke check of the benchmark itself)
 *   npm run bench:http -- --url http://127.0.0.1:8787   # use an already running server (loopback only)
 * Options:
 *   --out <file>           results JSON (default bench/http-results.json)
 *   --admin-token <token>  admin token (default $ADMIN_TOKEN, else ADMIN_TOKEN from .dev.vars, else dev-admin-token)
 *   --server-log-level <l> wrangler --log-level of the server this script starts (default warn: wrangler's
 *                          per-request log lines, on under `npm start`, cost about 1 ms a request; `info` keeps them)
 *   --concurrency <list>   comma-separated client concurrencies (default 1,8,32)
 *
 * Method: closed loops over Node's global fetch (undici, keep-alive by default). The floor runs each
 * concurrency for a fixed time; the step scenarios run a fixed amount of work: a task of N independent
 * steps, W pooled worker runs (max_steps = steps of the task), each doing claim-next once and then
 * `POST .../steps/{step}/status {status: "completed", claim_next: true}` until `next.no_step_claimed`.
 * Per-step cost = elapsed / steps completed; floor cost = elapsed / requests; ratio = step cost / floor cost.
 * Every loop is bounded in count and in time; a request times out after 30 s.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { assertLoopback, eachArg, exitWithError, fmt, isMain, type LatencyStats, machineInfo, round, sourceState, stats, stepsOf, table } from "./bench-common.js";
import { benchServer, type DevServer, defaultAdminToken, stopDevServer } from "./dev-server.js";

// ---- options -------------------------------------------------------------------------------------

interface Options {
  url: string | null;
  quick: boolean;
  out: string;
  adminToken: string;
  serverLogLevel: string;
  concurrencies: number[];
}

const USAGE = `usage: npm run bench:http -- [--quick] [--url http://127.0.0.1:<port>] [--out bench/http-results.json]
                              [--admin-token <token>] [--server-log-level <level>] [--concurrency 1,8,32]`;

function parseArgs(argv: string[]): Options {
  const opts: Options = { url: null, quick: false, out: "bench/http-results.json", adminToken: defaultAdminToken(), serverLogLevel: "warn", concurrencies: [1, 8, 32] };
  eachArg(argv, USAGE, (arg, value) => {
    switch (arg) {
      case "--url":
        opts.url = value().replace(/\/+$/, "");
        break;
      case "--quick":
        opts.quick = true;
        break;
      case "--out":
        opts.out = value();
        break;
      case "--admin-token":
        opts.adminToken = value();
        break;
      case "--server-log-level":
        opts.serverLogLevel = value();
        break;
      case "--concurrency":
        opts.concurrencies = value().split(",").map((s) => Number(s.trim()));
        if (opts.concurrencies.some((n) => !Number.isInteger(n) || n < 1 || n > 256)) throw new Error("--concurrency takes integers 1..256");
        break;
      default:
        return false;
    }
    return true;
  });
  if (opts.url !== null) assertLoopback(opts.url);
  return opts;
}

/** Sizes of one run. Full mode stays well under ~5 minutes on a 2-core machine. */
export interface Plan {
  floorMs: number;
  warmupMs: number;
  maxRequestsPerLevel: number;
  stepsPerWorker: number;
  minSteps: number;
  scenarioTimeoutMs: number;
  multiTasks: number;
  /** Each step scenario runs this many times (fresh session each); the results are pooled. */
  repeats: number;
}

export const FULL: Plan = { floorMs: 5_000, warmupMs: 1_000, maxRequestsPerLevel: 500_000, stepsPerWorker: 40, minSteps: 320, scenarioTimeoutMs: 120_000, multiTasks: 8, repeats: 3 };
export const QUICK: Plan = { floorMs: 1_500, warmupMs: 300, maxRequestsPerLevel: 100_000, stepsPerWorker: 10, minSteps: 80, scenarioTimeoutMs: 60_000, multiTasks: 8, repeats: 1 };

// ---- HTTP ----------------------------------------------------------------------------------------

const REQUEST_TIMEOUT_MS = 30_000;

export interface Answer {
  status: number;
  body: any;
  ms: number;
}

export class Client {
  constructor(readonly base: string) {}

  /** One JSON call; `ms` is the time from sending to the whole body read. */
  async call(method: string, path: string, token?: string, body?: unknown, parse = true): Promise<Answer> {
    const headers: Record<string, string> = {};
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    let payload: string | undefined;
    if (body !== undefined) {
      headers["content-type"] = "application/json";
      payload = JSON.stringify(body);
    }
    const t0 = performance.now();
    const res = await fetch(this.base + path, { method, headers, body: payload, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    const text = await res.text();
    const ms = performance.now() - t0;
    let parsed: unknown = text;
    if (parse && text !== "") {
      try {
        parsed = JSON.parse(text);
      } catch {
        // keep the text
      }
    }
    return { status: res.status, body: parsed, ms };
  }

  /** A call that must answer `expected`; throws with the answer otherwise. */
  async must(expected: number, method: string, path: string, token?: string, body?: unknown): Promise<Answer> {
    const a = await this.call(method, path, token, body);
    if (a.status !== expected) throw new Error(`${method} ${path} answered ${a.status} (wanted ${expected}): ${JSON.stringify(a.body).slice(0, 400)}`);
    return a;
  }

  /** Completed steps of a task as the server records them, every page of GET .../tasks/{tid} read. */
  async completedOnServer(taskPath: string, token: string): Promise<number> {
    let completed = 0;
    let cursor: string | null = null;
    do {
      const page: Answer = await this.must(200, "GET", cursor === null ? taskPath : `${taskPath}?cursor=${encodeURIComponent(cursor)}`, token);
      completed += (page.body.steps as { status: string }[]).filter((s) => s.status === "completed").length;
      cursor = (page.body.page?.next_cursor as string | null | undefined) ?? null;
    } while (cursor !== null);
    return completed;
  }
}

// ---- closed-loop load for the floor and the reference routes ------------------------------------

export interface LoadResult {
  route: string;
  concurrency: number;
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  latency: LatencyStats;
  first_error?: string;
  /** Throughput of each half when the result merges the measurement before and after the step scenarios. */
  halves_rps?: number[];
  /** Raw latencies, kept only in memory (dropped from the JSON). */
  samples?: number[];
}

/** `concurrency` loops call `op` back to back for `durationMs` (and at most `maxOps` calls in all). */
export async function closedLoop(route: string, concurrency: number, durationMs: number, maxOps: number, op: () => Promise<Answer>): Promise<LoadResult> {
  const latencies: number[] = [];
  let started = 0;
  let errors = 0;
  let firstError: string | undefined;
  const t0 = performance.now();
  const end = t0 + durationMs;
  const loop = async () => {
    while (performance.now() < end && started < maxOps && errors < 100) {
      started++;
      try {
        const a = await op();
        if (a.status !== 200) {
          errors++;
          firstError ??= `HTTP ${a.status}: ${String(typeof a.body === "string" ? a.body : JSON.stringify(a.body)).slice(0, 200)}`;
        } else latencies.push(a.ms);
      } catch (e) {
        errors++;
        firstError ??= e instanceof Error ? e.message : String(e);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const seconds = (performance.now() - t0) / 1000;
  return {
    route,
    concurrency,
    requests: latencies.length,
    errors,
    seconds: round(seconds),
    rps: round(latencies.length / seconds, 1),
    latency: stats(latencies),
    ...(firstError === undefined ? {} : { first_error: firstError }),
    samples: latencies,
  };
}

/** Two measurements of one route and concurrency as one: requests and time summed, latencies pooled. */
export function mergeLoads(parts: LoadResult[]): LoadResult {
  const first = parts[0]!;
  const requests = parts.reduce((a, p) => a + p.requests, 0);
  const seconds = parts.reduce((a, p) => a + p.seconds, 0);
  const samples = parts.flatMap((p) => p.samples ?? []);
  const errors = parts.reduce((a, p) => a + p.errors, 0);
  const firstError = parts.find((p) => p.first_error !== undefined)?.first_error;
  return {
    route: first.route,
    concurrency: first.concurrency,
    requests,
    errors,
    seconds: round(seconds),
    rps: round(requests / seconds, 1),
    latency: stats(samples),
    halves_rps: parts.map((p) => p.rps),
    ...(firstError === undefined ? {} : { first_error: firstError }),
  };
}

/** Counts "Reloading local server" lines in the dev server's log (wrangler rebuilds when a source file changes). */
class ReloadWatch {
  constructor(private readonly file: string | null) {}
  count(): number {
    if (this.file === null) return 0;
    try {
      return (readFileSync(this.file, "utf8").match(/Reloading local server/g) ?? []).length;
    } catch {
      return 0;
    }
  }
}

// ---- the step scenario -----------------------------------------------------------------------------

export interface StepResult {
  tasks: number;
  workers: number;
  runs: number;
  steps_planned: number;
  steps_completed: number;
  seconds: number;
  steps_per_s: number;
  /** Latency of the per-step call: status completed + claim_next. */
  step_call: LatencyStats;
  /** The first claim-next of each run. */
  claim_next: LatencyStats;
  dispatch: LatencyStats;
  finish: LatencyStats;
  create_task_ms: number[];
  errors: number;
  first_error?: string;
  duplicate_completions: number;
  no_step_reasons: Record<string, number>;
  verified_completed_on_server: number;
  timed_out: boolean;
  server_reloaded?: boolean;
  /** Per repeat, when several are pooled into this result. */
  repeats?: { steps_per_s: number; seconds: number; p50_ms: number; p99_ms: number; server_reloaded: boolean }[];
  /** Raw latencies, kept only in memory (dropped from the JSON). */
  samples?: { step: number[]; claim: number[]; dispatch: number[]; finish: number[] };
}

/** A dispatched worker run of a scenario. */
export interface ScenarioRun {
  readonly taskPath: string;
  readonly token: string;
  readonly runId: string;
  readonly agentId: string;
}

/** Where a call left a run: the step it holds now, or none and why; and how long the call took. */
export interface StepCall {
  readonly ms: number;
  readonly stepId: string | null;
  readonly reason?: unknown;
}

/** One run's calls. Each throws on an answer it does not expect (the run stops, the error is counted). */
export interface RunDriver {
  claimNext(): Promise<StepCall>;
  /** Completes `stepId` with `claim_next: true`. */
  completeAndClaim(stepId: string): Promise<StepCall>;
}

/** How a scenario's worker runs call the service; `start`/`stop` bracket the measured window. */
export interface StepCarrier {
  /** Names the scenario's tasks and runs: `bench-<label>t0`, `bench-<label>w0`. */
  readonly label: string;
  drive(run: ScenarioRun, maxSteps: number): RunDriver;
  start?(): void;
  stop?(): void;
}

/** The raw client, one request per call: the unbatched worker loop. */
export function requestCarrier(client: Client): StepCarrier {
  const answered = (what: string, a: Answer, next: unknown): StepCall => {
    if (a.status !== 200) throw new Error(`${what} ${a.status}: ${JSON.stringify(a.body).slice(0, 200)}`);
    return { ms: a.ms, ...claimedStep(next) };
  };
  return {
    label: "",
    drive: (run) => ({
      claimNext: async () => {
        const a = await client.call("POST", `${run.taskPath}/steps/claim-next`, run.token, {});
        return answered("claim-next", a, a.body);
      },
      completeAndClaim: async (stepId) => {
        const a = await client.call("POST", `${run.taskPath}/steps/${stepId}/status`, run.token, { status: "completed", result_summary: "done", claim_next: true });
        return answered("status", a, a.body?.next);
      },
    }),
  };
}

/** The step a claim answer (or a completion's `next`) holds, or none and why; throws on anything else. */
export function claimedStep(answer: any): { stepId: string | null; reason?: unknown } {
  if (typeof answer?.step?.step_id === "string") return { stepId: answer.step.step_id };
  if (answer?.no_step_claimed === true) return { stepId: null, reason: answer.reason };
  throw new Error(`unexpected next: ${JSON.stringify(answer).slice(0, 200)}`);
}

/**
 * One task (or several) of independent steps, `workers` concurrent loops, each claiming and completing
 * with `claim_next` through `carrier` (by default one raw request per call). With fewer workers than tasks,
 * each loop works through its runs one after the other, so the concurrency stays `workers`. Set-up, the
 * runs' finish and the server-side verification go through the raw client, outside the measured window.
 */
export async function stepScenario(client: Client, adminToken: string, workers: number, tasks: number, plan: Plan, carrier: StepCarrier = requestCarrier(client)): Promise<StepResult> {
  const perTask = Math.ceil(Math.max(plan.stepsPerWorker * workers, plan.minSteps) / tasks);
  const planned = perTask * tasks;
  const session = await client.must(201, "POST", "/v1/sessions", adminToken, {});
  const sid: string = session.body.session_id;
  const orch: string = session.body.orchestrator.token;
  const createMs: number[] = [];
  const taskPaths: string[] = [];
  for (let t = 0; t < tasks; t++) {
    const tid = `bench-${carrier.label}t${t}`;
    const created = await client.must(201, "POST", `/v1/sessions/${sid}/tasks`, orch, { task_id: tid, wal_name: tid, title: `Bench task ${t}`, summary: "HTTP benchmark", steps: stepsOf(perTask) });
    createMs.push(round(created.ms));
    taskPaths.push(`/v1/sessions/${sid}/tasks/${tid}`);
  }
  const runCount = Math.max(workers, tasks);
  const runs: { run: ScenarioRun; driver: RunDriver }[] = [];
  const dispatchMs: number[] = [];
  for (let r = 0; r < runCount; r++) {
    const taskPath = taskPaths[r % tasks]!;
    const d = await client.must(201, "POST", `${taskPath}/workers`, orch, { agent_id: `bench-${carrier.label}w${r}`, max_steps: perTask });
    dispatchMs.push(d.ms);
    const run: ScenarioRun = { taskPath, token: d.body.token, runId: d.body.run_id, agentId: d.body.agent_id };
    runs.push({ run, driver: carrier.drive(run, perTask) });
  }

  const stepLatencies: number[] = [];
  const claimLatencies: number[] = [];
  const completed = new Set<string>();
  const reasons: Record<string, number> = {};
  let duplicates = 0;
  let errors = 0;
  let firstError: string | undefined;
  let timedOut = false;
  const noteError = (msg: string) => {
    errors++;
    firstError ??= msg;
  };
  const noteReason = (reason: unknown) => {
    const k = String(reason ?? "no_step_claimed");
    reasons[k] = (reasons[k] ?? 0) + 1;
  };
  carrier.start?.();
  const t0 = performance.now();
  const deadline = t0 + plan.scenarioTimeoutMs;
  let lastStepAt = t0;

  const workRun = async ({ run, driver }: (typeof runs)[number]) => {
    const claim = await driver.claimNext();
    claimLatencies.push(claim.ms);
    let current = claim.stepId;
    if (current === null) noteReason(claim.reason);
    let calls = 0;
    while (current !== null) {
      if (performance.now() > deadline) {
        timedOut = true;
        return;
      }
      if (++calls > perTask + 1) return noteError("a run completed more steps than its task has");
      const a = await driver.completeAndClaim(current);
      stepLatencies.push(a.ms);
      lastStepAt = performance.now();
      const key = `${run.taskPath}#${current}`;
      if (completed.has(key)) duplicates++;
      completed.add(key);
      current = a.stepId;
      if (current === null) noteReason(a.reason);
    }
  };
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      for (let r = w; r < runs.length; r += workers) {
        try {
          await workRun(runs[r]!);
        } catch (e) {
          noteError(e instanceof Error ? e.message : String(e)); // e.g. the 30 s request time-out
        }
      }
    }),
  );
  carrier.stop?.();
  const seconds = (lastStepAt - t0) / 1000;

  // Not part of the measured window: end the runs, then check the server's own count of completed steps.
  const finishMs: number[] = [];
  for (const { run } of runs) {
    const f = await client.call("POST", `${run.taskPath}/runs/${run.runId}/finish`, run.token, { outcome: "finished" });
    if (f.status === 200) finishMs.push(f.ms);
    else noteError(`finish ${f.status}: ${JSON.stringify(f.body).slice(0, 200)}`);
  }
  let verified = 0;
  for (const taskPath of taskPaths) verified += await client.completedOnServer(taskPath, orch);
  return {
    tasks,
    workers,
    runs: runs.length,
    steps_planned: planned,
    steps_completed: stepLatencies.length,
    seconds: round(seconds),
    steps_per_s: round(stepLatencies.length / seconds, 1),
    step_call: stats(stepLatencies),
    claim_next: stats(claimLatencies),
    dispatch: stats(dispatchMs),
    finish: stats(finishMs),
    create_task_ms: createMs,
    errors,
    ...(firstError === undefined ? {} : { first_error: firstError }),
    duplicate_completions: duplicates,
    no_step_reasons: reasons,
    verified_completed_on_server: verified,
    timed_out: timedOut,
    samples: { step: stepLatencies, claim: claimLatencies, dispatch: dispatchMs, finish: finishMs },
  };
}

/** Repeats of one scenario as one result: steps and time summed, latencies pooled. */
export function mergeSteps(parts: StepResult[]): StepResult {
  const first = parts[0]!;
  if (parts.length === 1) return first;
  const sum = (f: (p: StepResult) => number) => parts.reduce((a, p) => a + f(p), 0);
  const pool = (k: "step" | "claim" | "dispatch" | "finish") => parts.flatMap((p) => p.samples?.[k] ?? []);
  const reasons: Record<string, number> = {};
  for (const p of parts) for (const [k, v] of Object.entries(p.no_step_reasons)) reasons[k] = (reasons[k] ?? 0) + v;
  const firstError = parts.find((p) => p.first_error !== undefined)?.first_error;
  const completed = sum((p) => p.steps_completed);
  const seconds = sum((p) => p.seconds);
  return {
    tasks: first.tasks,
    workers: first.workers,
    runs: sum((p) => p.runs),
    steps_planned: sum((p) => p.steps_planned),
    steps_completed: completed,
    seconds: round(seconds),
    steps_per_s: round(completed / seconds, 1),
    step_call: stats(pool("step")),
    claim_next: stats(pool("claim")),
    dispatch: stats(pool("dispatch")),
    finish: stats(pool("finish")),
    create_task_ms: parts.flatMap((p) => p.create_task_ms),
    errors: sum((p) => p.errors),
    ...(firstError === undefined ? {} : { first_error: firstError }),
    duplicate_completions: sum((p) => p.duplicate_completions),
    no_step_reasons: reasons,
    verified_completed_on_server: sum((p) => p.verified_completed_on_server),
    timed_out: parts.some((p) => p.timed_out),
    server_reloaded: parts.some((p) => p.server_reloaded === true),
    repeats: parts.map((p) => ({ steps_per_s: p.steps_per_s, seconds: p.seconds, p50_ms: p.step_call.p50_ms, p99_ms: p.step_call.p99_ms, server_reloaded: p.server_reloaded === true })),
  };
}

// ---- the server ---------------------------------------------------------------------------------------

// Started and stopped by scripts/dev-server.ts (shared with bench:sse and the live-client test).

// ---- main ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const plan = opts.quick ? QUICK : FULL;
  const loadStart = os.loadavg();
  const source = sourceState();
  const wallStart = performance.now();
  let server: DevServer | null = null;
  try {
    const reached = await benchServer(opts.url, opts.serverLogLevel);
    server = reached.server;
    const base = reached.base;
    const client = new Client(base);

    // A small task whose ready-steps query is the "authenticated read through the task object" reference.
    const probe = await client.must(201, "POST", "/v1/sessions", opts.adminToken, {});
    const probeTask = `/v1/sessions/${probe.body.session_id}/tasks/probe`;
    await client.must(201, "POST", `/v1/sessions/${probe.body.session_id}/tasks`, probe.body.orchestrator.token, { task_id: "probe", wal_name: "probe", title: "Probe", summary: "", steps: stepsOf(10) });
    const probeWorker = await client.must(201, "POST", `${probeTask}/workers`, probe.body.orchestrator.token, { agent_id: "probe-reader" });
    const probeToken: string = probeWorker.body.token;

    const routes: { name: string; op: () => Promise<Answer> }[] = [
      { name: "GET /health/object", op: () => client.call("GET", "/health/object", undefined, undefined, false) },
      { name: "GET /health", op: () => client.call("GET", "/health", undefined, undefined, false) },
      { name: "GET .../steps?limit=1 (worker)", op: () => client.call("GET", `${probeTask}/steps?limit=1`, probeToken, undefined, false) },
    ];
    // Warm every route (and the isolate, the objects, the connection pool) before measuring.
    const maxC = Math.max(...opts.concurrencies);
    for (const r of routes) await closedLoop(r.name, maxC, plan.warmupMs, plan.maxRequestsPerLevel, r.op);
    await stepScenario(client, opts.adminToken, Math.min(4, maxC), 1, { ...plan, stepsPerWorker: 5, minSteps: 20 });

    const floor: LoadResult[] = [];
    const reference: LoadResult[] = [];
    const steps: StepResult[] = [];
    const reloads = new ReloadWatch(server?.logFile ?? null);
    // Interleaved per concurrency, so the floor and the step runs it is compared with see the same machine
    // load: half the floor time before the step scenarios, half after, summed. A scenario during which the
    // dev server reloaded (someone edited the source) is run once more.
    for (const c of opts.concurrencies) {
      const halves: LoadResult[][] = [[], []];
      const measureRoutes = async (half: 0 | 1) => {
        for (const r of routes) {
          const res = await closedLoop(r.name, c, plan.floorMs / 2, plan.maxRequestsPerLevel / 2, r.op);
          halves[half]!.push(res);
          console.log(`  ${r.name.padEnd(32)} c=${String(c).padStart(2)}  ${fmt(res.rps).padStart(8)} req/s  p50 ${fmt(res.latency.p50_ms, 2)} ms  p99 ${fmt(res.latency.p99_ms, 2)} ms${res.errors > 0 ? `  errors ${res.errors}: ${res.first_error}` : ""}`);
        }
      };
      await measureRoutes(0);
      const byTasks = new Map<number, StepResult[]>([[1, []], [plan.multiTasks, []]]);
      for (let repeat = 0; repeat < plan.repeats; repeat++) {
        for (const [tasks, list] of byTasks) {
          let res: StepResult | null = null;
          for (let attempt = 0; attempt < 2; attempt++) {
            const mark = reloads.count();
            res = await stepScenario(client, opts.adminToken, c, tasks, plan);
            res.server_reloaded = reloads.count() > mark;
            console.log(
              `  steps: ${String(tasks).padStart(1)} task(s), ${String(c).padStart(2)} workers  ${res.steps_completed}/${res.steps_planned} steps in ${fmt(res.seconds, 2)} s = ${fmt(res.steps_per_s)} steps/s  p50 ${fmt(res.step_call.p50_ms, 2)} ms  p99 ${fmt(res.step_call.p99_ms, 2)} ms${res.errors > 0 ? `  errors ${res.errors}: ${res.first_error}` : ""}${res.timed_out ? "  TIMED OUT" : ""}${res.server_reloaded ? "  (server reloaded during the run)" : ""}`,
            );
            if (!res.server_reloaded) break;
          }
          list.push(res!);
        }
      }
      for (const list of byTasks.values()) steps.push(mergeSteps(list));
      await measureRoutes(1);
      for (const r of routes) {
        const parts = [halves[0]!, halves[1]!].map((h) => h.find((x) => x.route === r.name)!);
        (r.name === "GET /health/object" ? floor : reference).push(mergeLoads(parts));
      }
    }

    const ratios = opts.concurrencies.map((c) => {
      const f = floor.find((x) => x.concurrency === c)!;
      const one = steps.find((s) => s.workers === c && s.tasks === 1)!;
      const multi = steps.find((s) => s.workers === c && s.tasks === plan.multiTasks)!;
      const ratio = (s: StepResult) => round(f.rps / s.steps_per_s, 2);
      return {
        concurrency: c,
        floor_rps: f.rps,
        floor_cost_ms: round(1000 / f.rps),
        one_task: { steps_per_s: one.steps_per_s, step_cost_ms: round(1000 / one.steps_per_s), cost_ratio: ratio(one), p50_ratio: round(one.step_call.p50_ms / f.latency.p50_ms, 2) },
        multi_task: { tasks: plan.multiTasks, steps_per_s: multi.steps_per_s, step_cost_ms: round(1000 / multi.steps_per_s), cost_ratio: ratio(multi), p50_ratio: round(multi.step_call.p50_ms / f.latency.p50_ms, 2) },
      };
    });

    const serverLog = server?.logFile ? { file: server.logFile, reloads: reloads.count() } : null;
    const cpus = os.cpus();
    const results = {
      generated_at: new Date().toISOString(),
      mode: opts.quick ? "quick" : "full",
      machine: machineInfo(loadStart, os.loadavg()),
      source,
      server: { url: base, started_by_script: server !== null, startup_ms: server?.startupMs ?? null, log_level: opts.serverLogLevel, log: serverLog },
      plan,
      concurrencies: opts.concurrencies,
      floor: floor.map(({ samples: _, ...r }) => r),
      reference: reference.map(({ samples: _, ...r }) => r),
      steps: steps.map(({ samples: _, ...r }) => r),
      ratios,
      wall_seconds: round((performance.now() - wallStart) / 1000, 1),
    };

    console.log(`\nHTTP benchmark (${results.mode}) — ${cpus.length} CPUs, node ${process.version}, load ${loadStart.map((n) => n.toFixed(2)).join(" ")} → ${results.machine.loadavg_end.join(" ")}`);
    console.log("cost = 1/throughput; ratio = per-step cost / floor cost at the same client concurrency\n");
    console.log(
      table(
        ["conc", "floor req/s", "floor p50/p99 ms", "1 task steps/s", "p50/p99 ms", "ratio", `${plan.multiTasks} tasks steps/s`, "p50/p99 ms", "ratio"],
        ratios.map((r) => {
          const f = floor.find((x) => x.concurrency === r.concurrency)!;
          const one = steps.find((s) => s.workers === r.concurrency && s.tasks === 1)!;
          const multi = steps.find((s) => s.workers === r.concurrency && s.tasks === plan.multiTasks)!;
          return [
            String(r.concurrency),
            fmt(f.rps),
            `${fmt(f.latency.p50_ms, 2)}/${fmt(f.latency.p99_ms, 2)}`,
            fmt(one.steps_per_s),
            `${fmt(one.step_call.p50_ms, 2)}/${fmt(one.step_call.p99_ms, 2)}`,
            `${fmt(r.one_task.cost_ratio, 2)}x`,
            fmt(multi.steps_per_s),
            `${fmt(multi.step_call.p50_ms, 2)}/${fmt(multi.step_call.p99_ms, 2)}`,
            `${fmt(r.multi_task.cost_ratio, 2)}x`,
          ];
        }),
      ),
    );
    console.log("\nreference routes (same method):");
    console.log(
      table(
        ["route", "conc", "req/s", "p50 ms", "p99 ms", "errors"],
        [...floor, ...reference]
          .sort((a, b) => a.route.localeCompare(b.route) || a.concurrency - b.concurrency)
          .map((r) => [r.route, String(r.concurrency), fmt(r.rps), fmt(r.latency.p50_ms, 2), fmt(r.latency.p99_ms, 2), String(r.errors)]),
      ),
    );
    console.log("\nstep scenarios (setup and other calls, not in the measured window):");
    console.log(
      table(
        ["tasks", "workers", "steps", "seconds", "steps/s per repeat", "claim-next p50", "dispatch p50", "finish p50", "create task ms", "errors", "dups", "server completed"],
        steps.map((s) => [
          String(s.tasks),
          String(s.workers),
          `${s.steps_completed}/${s.steps_planned}`,
          fmt(s.seconds, 2),
          (s.repeats ?? [s]).map((r) => fmt(r.steps_per_s, 0)).join(" "),
          fmt(s.claim_next.p50_ms, 2),
          fmt(s.dispatch.p50_ms, 2),
          fmt(s.finish.p50_ms, 2),
          s.create_task_ms.length === 1 ? fmt(s.create_task_ms[0], 1) : `${fmt(Math.min(...s.create_task_ms), 1)}..${fmt(Math.max(...s.create_task_ms), 1)}`,
          String(s.errors),
          String(s.duplicate_completions),
          String(s.verified_completed_on_server),
        ]),
      ),
    );
    if (serverLog !== null && serverLog.reloads > 0) console.log(`\nnote: the dev server reloaded ${serverLog.reloads} time(s) (source edited during the run); step scenarios hit by a reload were rerun once (server_reloaded in the JSON)`);
    const bad = steps.filter((s) => s.errors > 0 || s.timed_out || s.duplicate_completions > 0 || s.verified_completed_on_server !== s.steps_planned);
    if (bad.length > 0) console.log(`\nwarning: ${bad.length} step scenario(s) had errors, time-outs, duplicates or a server count that differs from the plan`);

    mkdirSync(path.dirname(opts.out), { recursive: true });
    writeFileSync(opts.out, `${JSON.stringify(results, null, 2)}\n`);
    console.log(`\nwrote ${opts.out} (${results.wall_seconds} s)`);
    if (bad.length > 0) process.exitCode = 1;
  } finally {
    if (server !== null) {
      await stopDevServer(server);
    }
  }
}

// Runs when executed (npm run bench:http); importing the module (e.g. to reuse stepScenario) runs nothing.
if (isMain(import.meta.url)) main().catch(exitWithError);
