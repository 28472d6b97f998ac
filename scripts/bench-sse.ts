/**
 * @module SSE benchmark: S subscribers on one task's event stream while W workers drive its steps, against
 * the same step load with no subscriber, in one run on one server.
 *
 * Usage:
 *   npm run bench:sse                        # starts `node scripts/dev.mjs` on a free port; 200 subscribers, 1,000 steps
 *   npm run bench:sse -- --quick             # 20 subscribers, 200 steps (smoke check of the benchmark itself)
 *   npm run bench:sse -- --url http://127.0.0.1:8787   # an already running server (loopback only)
 * Options: --subscribers N (200), --steps N (1000), --workers N (8), --out <file> (bench/sse-results.json),
 *          --admin-token <token>, --server-log-level <level> (warn)
 *
 * Method. Each scenario: a fresh session and a task of N independent steps; W pooled worker runs doing
 * claim-next once, then `POST .../status {status: completed, claim_next: true}` until nothing is left (each
 * step: claimed, then completed — two transitions, one call); then the runs finish and the task completes,
 * which ends every stream with `end`. Scenarios: 0 subscribers, S subscribers, 0 subscribers again (the two
 * zero runs bracket the loaded one, so drift of the machine shows). With subscribers, all of them are
 * connected and caught up on the history before the first step, so every measured frame is a live one.
 *
 * Subscribers are plain fetch streams parsed here (an EventSource per subscriber costs the client more CPU
 * than the server). A stream that ends without `end` (closed as too slow, or at SSE_MAX_STREAM_MS) resumes
 * with Last-Event-ID and is counted as a reconnect. Each subscriber checks its ids strictly increase, and at
 * the end that it received exactly the runtime events of the WAL.
 *
 * Delivery lag = receipt time (client Date.now()) − the event's `timestamp` (the commit's `now`, taken by the
 * object when the command started). Caveats: both clocks are this machine's wall clock, millisecond
 * resolution; workerd's Date.now() does not advance while a request computes, so the lag includes the
 * command's own decide+commit time; client and server share the same CPUs, so with many subscribers the
 * client's own parsing competes with the server (the figures are an upper bound of the server's share).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { projectWal, sequencePosition, WalEventSchema } from "../src/core/index.js";
import { assertLoopback, eachArg, exitWithError, groupCpuMs, isMain, round, stats } from "./bench-common.js";
import { Client } from "./bench-http.js";
import { benchServer, type DevServer, defaultAdminToken, stopDevServer } from "./dev-server.js";

interface Options {
  url: string | null;
  quick: boolean;
  subscribers: number;
  steps: number;
  workers: number;
  out: string;
  adminToken: string;
  serverLogLevel: string;
}

const USAGE = `usage: npm run bench:sse -- [--quick] [--url http://127.0.0.1:<port>] [--subscribers 200] [--steps 1000]
                             [--workers 8] [--out bench/sse-results.json] [--admin-token <t>] [--server-log-level warn]`;

function parseArgs(argv: string[]): Options {
  const opts: Options = { url: null, quick: false, subscribers: 200, steps: 1_000, workers: 8, out: "bench/sse-results.json", adminToken: defaultAdminToken(), serverLogLevel: "warn" };
  const int = (v: string, name: string, max: number) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`${name} takes an integer 1..${max}`);
    return n;
  };
  eachArg(argv, USAGE, (arg, value) => {
    switch (arg) {
      case "--url":
        opts.url = value().replace(/\/+$/, "");
        break;
      case "--quick":
        opts.quick = true;
        opts.subscribers = 20;
        opts.steps = 200;
        break;
      case "--subscribers":
        opts.subscribers = int(value(), arg, 1_000);
        break;
      case "--steps":
        opts.steps = int(value(), arg, 10_000);
        break;
      case "--workers":
        opts.workers = int(value(), arg, 64);
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
      default:
        return false;
    }
    return true;
  });
  if (opts.url !== null) assertLoopback(opts.url);
  return opts;
}

// ---- one subscriber --------------------------------------------------------------------------------

/** A fetch-based SSE reader that resumes with Last-Event-ID until it sees `end`. */
class Subscriber {
  frames = 0;
  liveFrames = 0;
  reconnects = 0;
  outOfOrder = 0;
  lastId: string | null = null;
  lastOrder = -1;
  ended = false;
  error: string | null = null;
  /** Frames with wal_seq above this are live: their lag is measured. */
  liveAfterSeq = Number.POSITIVE_INFINITY;
  /** Receipt time of the `end` frame (performance.now()). */
  endedAt = 0;
  private controller: AbortController | null = null;

  constructor(
    private readonly url: string,
    private readonly token: string,
    private readonly lags: number[],
  ) {}

  /** Reads until `end`, resuming after a stream that ends without it; bounded by `deadline` (performance.now()). */
  async run(deadline: number): Promise<void> {
    while (!this.ended && performance.now() < deadline) {
      this.controller = new AbortController();
      const timer = setTimeout(() => this.controller?.abort(), Math.max(0, deadline - performance.now()));
      try {
        const headers: Record<string, string> = { authorization: `Bearer ${this.token}` };
        if (this.lastId !== null) headers["last-event-id"] = this.lastId;
        const res = await fetch(this.url, { headers, signal: this.controller.signal });
        if (res.status !== 200 || res.body === null) throw new Error(`HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`);
        await this.consume(res.body);
      } catch (e) {
        if (this.ended) break;
        // undici's "fetch failed" says why only in its cause (a reset, a timeout, a refused connection).
        const cause = e instanceof Error && e.cause instanceof Error ? `: ${(e.cause as Error & { code?: string }).code ?? ""} ${e.cause.message}` : "";
        this.error ??= `${e instanceof Error ? e.message : String(e)}${cause}`;
      } finally {
        clearTimeout(timer);
      }
      if (!this.ended) this.reconnects += 1;
    }
  }

  /** Stops reading. */
  stop(): void {
    this.controller?.abort();
  }

  private async consume(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of body) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (block.startsWith(":")) continue; // heartbeat
        this.frame(block);
        if (this.ended) return;
      }
    }
  }

  private frame(block: string): void {
    const now = Date.now();
    if (block.startsWith("event: end\n")) {
      this.ended = true;
      this.endedAt = performance.now();
      this.controller?.abort();
      return;
    }
    const idEnd = block.indexOf("\n");
    const id = block.slice(4, idEnd); // "id: "
    const order = Number(id); // the event's sequence
    if (order <= this.lastOrder) this.outOfOrder += 1;
    this.lastOrder = order;
    this.lastId = id;
    this.frames += 1;
    if (sequencePosition(order).walSeq > this.liveAfterSeq) {
      this.liveFrames += 1;
      // `"timestamp":"…"` of the runtime event, without parsing the whole JSON.
      const at = block.indexOf('"timestamp":"');
      if (at >= 0) this.lags.push(now - Date.parse(block.slice(at + 13, block.indexOf('"', at + 13))));
    }
  }
}

// ---- one scenario ------------------------------------------------------------------------------------

interface ScenarioResult {
  subscribers: number;
  steps: number;
  workers: number;
  steps_completed: number;
  seconds: number;
  steps_per_s: number;
  step_call: ReturnType<typeof stats>;
  subscribe_and_catch_up_s?: number;
  history_frames_per_subscriber?: number;
  runtime_events_in_wal?: number;
  frames_delivered_live?: number;
  delivery_seconds?: number;
  events_per_s_delivered?: number;
  lag_ms?: ReturnType<typeof stats>;
  reconnects?: number;
  out_of_order?: number;
  subscribers_with_exact_sequence?: number;
  subscriber_errors?: string[];
  /** CPU seconds used during the step load (and the delivery that follows it): this client, the server. */
  cpu_s?: { client: number; server: number | null };
  errors: number;
  first_error?: string;
}

/** CPU seconds of the server's process group so far (bench-common's groupCpuMs), or null. */
function groupCpuSeconds(pgid: number | undefined): number | null {
  const ms = groupCpuMs(pgid ?? null)?.ms;
  return ms === undefined ? null : ms / 1000;
}

/** The server's process group, when this script started it (for the CPU split). */
let serverGroup: number | undefined;

async function scenario(client: Client, opts: Options, subscribers: number): Promise<ScenarioResult> {
  const session = await client.must(201, "POST", "/v1/sessions", opts.adminToken, {});
  const sid: string = session.body.session_id;
  const orch: string = session.body.orchestrator.token;
  const observer: string = session.body.observer.token;
  const tid = `sse-bench-${subscribers}`;
  const taskPath = `/v1/sessions/${sid}/tasks/${tid}`;
  const steps = Array.from({ length: opts.steps }, (_, i) => ({ step_id: `s${String(i).padStart(5, "0")}`, title: `Step ${i}`, summary: "SSE bench step", depends_on_step_ids: [] }));
  await client.must(201, "POST", `/v1/sessions/${sid}/tasks`, orch, { task_id: tid, wal_name: tid, title: "SSE bench", summary: "", steps });
  const runs: { token: string; runId: string }[] = [];
  for (let w = 0; w < opts.workers; w++) {
    const d = await client.must(201, "POST", `${taskPath}/workers`, orch, { agent_id: `sse-w${w}`, max_steps: opts.steps });
    runs.push({ token: d.body.token, runId: d.body.run_id });
  }
  const history = await walOf(client, taskPath, orch);
  const startSeq = history[history.length - 1]!.wal_seq;

  // Subscribers: connected and caught up on the history before the first step.
  const lags: number[] = [];
  const subs = Array.from({ length: subscribers }, () => new Subscriber(`${client.base}${taskPath}/events`, observer, lags));
  for (const s of subs) s.liveAfterSeq = startSeq;
  const deadline = performance.now() + 300_000;
  const tSub = performance.now();
  const reading = subs.map((s) => s.run(deadline));
  const historyFrames = projectWal(history).length;
  while (subs.some((s) => s.frames < historyFrames && s.error === null)) {
    if (performance.now() - tSub > 120_000) {
      const behind = subs.filter((s) => s.frames < historyFrames && s.error === null);
      throw new Error(`${behind.length} of ${subscribers} subscribers did not catch up on the ${historyFrames} history frames within 120 s (frames received: ${behind.slice(0, 10).map((s) => s.frames).join(", ")})`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  const caughtUpS = (performance.now() - tSub) / 1000;

  // The step load.
  const stepMs: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const note = (m: string) => {
    errors += 1;
    firstError ??= m;
  };
  const cpuClient0 = process.cpuUsage();
  const cpuServer0 = groupCpuSeconds(serverGroup);
  const t0 = performance.now();
  await Promise.all(
    runs.map(async (run) => {
      const claim = await client.call("POST", `${taskPath}/steps/claim-next`, run.token, {});
      if (claim.status !== 200) return note(`claim-next ${claim.status}`);
      let current: string | null = claim.body.step?.step_id ?? null;
      for (let calls = 0; current !== null && calls <= opts.steps; calls++) {
        const a = await client.call("POST", `${taskPath}/steps/${current}/status`, run.token, { status: "completed", result_summary: "done", claim_next: true });
        if (a.status !== 200) return note(`status ${a.status}: ${JSON.stringify(a.body).slice(0, 200)}`);
        stepMs.push(a.ms);
        current = a.body.next?.step?.step_id ?? null;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  for (const run of runs) await client.call("POST", `${taskPath}/runs/${run.runId}/finish`, run.token, { outcome: "finished" });
  await client.must(200, "POST", `${taskPath}/complete`, orch, {});

  const cpuSplit = () => {
    const c = process.cpuUsage(cpuClient0);
    const server = groupCpuSeconds(serverGroup);
    return { client: round((c.user + c.system) / 1e6, 2), server: server === null || cpuServer0 === null ? null : round(server - cpuServer0, 2) };
  };
  const base: ScenarioResult = {
    subscribers,
    steps: opts.steps,
    workers: opts.workers,
    steps_completed: stepMs.length,
    seconds: round(seconds),
    steps_per_s: round(stepMs.length / seconds, 1),
    step_call: stats(stepMs),
    errors,
    ...(firstError === undefined ? {} : { first_error: firstError }),
  };
  if (subscribers === 0) return { ...base, cpu_s: cpuSplit() };

  const endWait = performance.now() + 120_000;
  while (subs.some((s) => !s.ended && s.error === null) && performance.now() < endWait) await new Promise((r) => setTimeout(r, 50));
  const cpu = cpuSplit();
  for (const s of subs) s.stop();
  await Promise.allSettled(reading);
  const total = projectWal(await walOf(client, taskPath, orch)).length;
  const lastEnd = Math.max(...subs.map((s) => s.endedAt));
  const live = subs.reduce((a, s) => a + s.liveFrames, 0);
  const deliverySeconds = (lastEnd - t0) / 1000;
  const subscriberErrors = [...new Set(subs.map((s) => s.error).filter((e): e is string => e !== null))];
  return {
    ...base,
    cpu_s: cpu,
    subscribe_and_catch_up_s: round(caughtUpS, 2),
    history_frames_per_subscriber: historyFrames,
    runtime_events_in_wal: total,
    frames_delivered_live: live,
    delivery_seconds: round(deliverySeconds),
    events_per_s_delivered: round(live / deliverySeconds, 0),
    lag_ms: stats(lags),
    reconnects: subs.reduce((a, s) => a + s.reconnects, 0),
    out_of_order: subs.reduce((a, s) => a + s.outOfOrder, 0),
    subscribers_with_exact_sequence: subs.filter((s) => s.ended && s.frames === total && s.outOfOrder === 0).length,
    ...(subscriberErrors.length === 0 ? {} : { subscriber_errors: subscriberErrors.slice(0, 5) }),
  };
}

async function walOf(client: Client, taskPath: string, token: string) {
  const res = await client.call("GET", `${taskPath}/wal?limit=10000`, token, undefined, false);
  if (res.status !== 200) throw new Error(`GET wal answered ${res.status}`);
  return String(res.body)
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => WalEventSchema.parse(JSON.parse(l)));
}

// ---- main ------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const loadStart = os.loadavg();
  const wallStart = performance.now();
  let server: DevServer | null = null;
  try {
    // More subscribers on one task than SSE_MAX_SUBSCRIBERS (64) allows by default: a server started here takes them all.
    const reached = await benchServer(opts.url, opts.serverLogLevel, { SSE_MAX_SUBSCRIBERS: String(Math.max(64, opts.subscribers)) });
    server = reached.server;
    serverGroup = server?.child?.pid;
    const client = new Client(reached.base);
    // Warm the isolate, the objects and the connection pool.
    await scenario(client, { ...opts, steps: Math.max(200, Math.floor(opts.steps / 2)) }, Math.min(5, opts.subscribers));

    const results: ScenarioResult[] = [];
    for (const subscribers of [0, opts.subscribers, 0]) {
      const r = await scenario(client, opts, subscribers);
      results.push(r);
      const sse =
        r.subscribers === 0
          ? ""
          : `  | lag p50 ${r.lag_ms!.p50_ms} ms p99 ${r.lag_ms!.p99_ms} ms, ${r.events_per_s_delivered} events/s delivered, ${r.subscribers_with_exact_sequence}/${r.subscribers} exact, ${r.reconnects} reconnects`;
      const cpu = r.cpu_s === undefined ? "" : `, cpu s client ${r.cpu_s.client} server ${r.cpu_s.server ?? "-"}`;
      console.log(`  ${String(subscribers).padStart(4)} subscribers: ${r.steps_completed} steps in ${r.seconds} s = ${r.steps_per_s} steps/s (call p50 ${r.step_call.p50_ms} ms, p99 ${r.step_call.p99_ms} ms${cpu})${sse}${r.errors > 0 ? `  errors ${r.errors}: ${r.first_error}` : ""}`);
    }
    const cpus = os.cpus();
    const out = {
      generated_at: new Date().toISOString(),
      mode: opts.quick ? "quick" : "full",
      machine: { cpus: cpus.length, cpu_model: cpus[0]?.model ?? "unknown", node: process.version, platform: `${os.platform()} ${os.release()} ${os.arch()}`, loadavg_start: loadStart.map((n) => round(n, 2)), loadavg_end: os.loadavg().map((n) => round(n, 2)) },
      server: { url: server?.base ?? opts.url, started_by_script: server !== null, log_level: opts.serverLogLevel },
      options: { subscribers: opts.subscribers, steps: opts.steps, workers: opts.workers },
      scenarios: results,
      wall_seconds: round((performance.now() - wallStart) / 1000, 1),
    };
    mkdirSync(path.dirname(opts.out), { recursive: true });
    writeFileSync(opts.out, `${JSON.stringify(out, null, 2)}\n`);
    const loaded = results[1]!;
    const zero = [results[0]!, results[2]!];
    console.log(`\nSSE benchmark (${out.mode}) — ${cpus.length} CPUs, node ${process.version}; ${opts.steps} steps, ${opts.workers} workers`);
    console.log(`  steps/s: ${zero[0]!.steps_per_s} (0 subscribers) → ${loaded.steps_per_s} (${loaded.subscribers}) → ${zero[1]!.steps_per_s} (0 again)`);
    console.log(`  delivery lag commit→receipt: p50 ${loaded.lag_ms!.p50_ms} ms, p90 ${loaded.lag_ms!.p90_ms} ms, p99 ${loaded.lag_ms!.p99_ms} ms, max ${loaded.lag_ms!.max_ms} ms over ${loaded.lag_ms!.count} frames`);
    console.log(`  delivered: ${loaded.frames_delivered_live} live frames in ${loaded.delivery_seconds} s = ${loaded.events_per_s_delivered} events/s; catch-up of ${loaded.subscribers} × ${loaded.history_frames_per_subscriber} history frames took ${loaded.subscribe_and_catch_up_s} s`);
    console.log(`  exactly-once: ${loaded.subscribers_with_exact_sequence}/${loaded.subscribers} subscribers got all ${loaded.runtime_events_in_wal} runtime events in order; ${loaded.reconnects} reconnects`);
    console.log(`\nwrote ${opts.out} (${out.wall_seconds} s)`);
    const bad = results.some((r) => r.errors > 0) || loaded.subscribers_with_exact_sequence !== loaded.subscribers;
    if (bad) process.exitCode = 1;
  } finally {
    if (server !== null) await stopDevServer(server);
  }
}

if (isMain(import.meta.url)) main().catch(exitWithError);
