/**
 * @module `npm run bench:profile-step`: V8 CPU profiles of the unbatched step (claim-next, then status completed with
 * `claim_next`, over HTTP) taken through the inspector port `wrangler dev` opens (Chrome DevTools Protocol
 * `Profiler.start`/`stop` on every isolate it lists), only over the scenarios' measured windows; self time is mapped
 * back to our source files through the bundle's source map and summed by file, by function and by slice of the
 * per-call path (scripts/bench/profile-slices.ts); writes bench/profile-step-results.json (and the raw .cpuprofile
 * files under bench/tmp, which Chrome DevTools opens; `--resummarize` slices those again without a run).
 */
// Node 20 has WebSocket behind --experimental-websocket: the npm script passes it, so no websocket dependency.
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { defaultAdminToken, startDevServer, stopDevServer, stopOnSignal } from "../dev-server.js";
import { parseCli, run } from "./harness/cli.js";
import { Client } from "./harness/http-client.js";
import { round, sourceState } from "./harness/meter.js";
import { fmt, printTables, writeResults } from "./harness/report.js";
import { type CpuProfile, summarize } from "./profile-slices.js";
import { requestCarrier, stepScenario, type StepCarrier } from "./scenarios/steps.js";

/** One inspector session: CDP calls by id over a websocket. */
class Inspector {
  private next = 1;
  private readonly pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  private constructor(private readonly ws: WebSocket, readonly title: string) {
    ws.addEventListener("message", (ev) => {
      const msg = JSON.parse(String(ev.data)) as { id?: number; result?: unknown; error?: { message: string } };
      const p = msg.id === undefined ? undefined : this.pending.get(msg.id);
      if (p === undefined) return;
      this.pending.delete(msg.id!);
      if (msg.error) p.reject(new Error(msg.error.message));
      else p.resolve(msg.result);
    });
  }

  static open(url: string, title: string): Promise<Inspector> {
    const G = globalThis as { WebSocket?: typeof WebSocket };
    if (G.WebSocket === undefined) throw new Error("no WebSocket in this Node: run it with node --experimental-websocket (npm run bench:profile-step does)");
    // Node's (undici's) WebSocket takes headers as an extension; wrangler's inspector proxy asks for a local Origin.
    const ws = new (G.WebSocket as unknown as new (url: string, init: object) => WebSocket)(url, { headers: { Origin: "http://localhost" } });
    return new Promise((resolve, reject) => {
      ws.addEventListener("open", () => resolve(new Inspector(ws, title)));
      ws.addEventListener("error", () => reject(new Error(`cannot open the inspector at ${url}`)));
    });
  }

  send<T = any>(method: string, params: object = {}): Promise<T> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  close(): void {
    this.ws.close();
  }
}

/** The source map of the bundle `wrangler dev` serves (index.js.map in a dev- folder under .wrangler/tmp, removed when it stops), or null. */
function bundleSourceMap(): object | null {
  const dir = ".wrangler/tmp";
  if (!existsSync(dir)) return null;
  const maps = readdirSync(dir).filter((d) => d.startsWith("dev-")).map((d) => `${dir}/${d}/index.js.map`).filter((f) => existsSync(f));
  const newest = maps.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
  return newest === undefined ? null : (JSON.parse(readFileSync(newest, "utf8")) as object);
}

/** The isolates wrangler's inspector proxy lists (`/json`), each with its websocket address. */
async function inspectorTargets(port: number): Promise<{ title: string; url: string }[]> {
  const res = await fetch(`http://127.0.0.1:${port}/json`);
  const list = (await res.json()) as { title?: string; id?: string; webSocketDebuggerUrl?: string }[];
  return list.filter((t) => typeof t.webSocketDebuggerUrl === "string").map((t) => ({ title: t.title ?? t.id ?? "?", url: t.webSocketDebuggerUrl! }));
}

/** Where the raw profiles, the bundle's source map and the run's figures are kept (Chrome DevTools opens the .cpuprofile files). */
const SAVED = "bench/tmp";

type RunInfo = { steps: number; workers: number; measured_seconds: number } & Record<string, unknown>;

/** Slices `profiles`, prints the tables and writes bench/profile-step-results.json. */
function report(run: RunInfo, profiles: CpuProfile[], sourceMap: object, wallSeconds?: number): void {
  const summary = summarize(profiles, run.steps, sourceMap);
  printTables([
    { title: `slices of the per-call path: ${run.steps} steps, ${run.workers} workers, ${fmt(run.measured_seconds, 1)} s profiled; busy ${fmt(summary.busy_ms)} ms of ${fmt(summary.total_ms)} ms sampled (${fmt(summary.busy_us_per_step, 1)} µs a step)`, headers: ["slice", "% of busy", "µs/step"], rows: summary.slices.map((s) => [s.slice, fmt(s.share * 100, 1), fmt(s.us_per_step, 1)]) },
    { title: "top functions by self time (our source, and everything else by name)", headers: ["function", "where", "% of busy", "µs/step"], rows: summary.functions.slice(0, 40).map((f) => [f.function, f.where, fmt(f.share * 100, 1), fmt(f.us_per_step, 1)]) },
  ]);
  writeResults("bench/profile-step-results.json", { ...run, ...summary }, wallSeconds);
}

run(async () => {
  const opts = parseCli("usage: npm run bench:profile-step -- [--workers 8] [--seconds 20] [--sampling-us 200] [--resummarize]", { workers: 8, seconds: 20, samplingUs: 200, resummarize: false });
  if (opts.resummarize) {
    // The last run's saved profiles sliced again (after a change to the slices), without a server.
    const { run, sourceMap } = JSON.parse(readFileSync(`${SAVED}/profile-step-run.json`, "utf8")) as { run: RunInfo; sourceMap: object };
    const files = readdirSync(SAVED).filter((f) => /^profile-step-\d+\.cpuprofile$/.test(f));
    return report(run, files.map((f) => JSON.parse(readFileSync(`${SAVED}/${f}`, "utf8")) as CpuProfile), sourceMap);
  }
  const adminToken = defaultAdminToken();
  console.log("starting node scripts/dev.mjs on a free port …");
  const server = await startDevServer();
  stopOnSignal(() => stopDevServer(server));
  const inspectors: Inspector[] = [];
  try {
    console.log(`server up at ${server.base} after ${(server.startupMs / 1000).toFixed(1)} s, inspector port ${server.inspectorPort}`);
    const client = new Client(server.base);
    const plan = { floorMs: 0, warmupMs: 0, maxRequestsPerLevel: 0, stepsPerWorker: 250, minSteps: 0, scenarioTimeoutMs: 120_000, multiTasks: 1, repeats: 1 };
    // Warm the isolate, the objects and the connection pool (the profile skips it).
    await stepScenario(client, adminToken, opts.workers, 1, { ...plan, stepsPerWorker: 20 });
    const targets = await inspectorTargets(server.inspectorPort!);
    const sourceMap = bundleSourceMap();
    if (sourceMap === null) throw new Error("no source map of the bundle under .wrangler/tmp: the profile cannot be mapped to our files");
    console.log(`inspector targets: ${targets.map((t) => t.title).join(", ") || "none"}`);
    for (const t of targets) inspectors.push(await Inspector.open(t.url, t.title));
    for (const i of inspectors) {
      await i.send("Profiler.enable");
      await i.send("Profiler.setSamplingInterval", { interval: opts.samplingUs });
    }
    // Profiles only over each scenario's measured window (not its set-up, finish or verification).
    const profiles: { title: string; profile: CpuProfile }[] = [];
    let stopping: Promise<void> = Promise.resolve();
    const base = requestCarrier(client);
    const carrier: StepCarrier = {
      ...base,
      label: "profile-",
      start: () => {
        for (const i of inspectors) void i.send("Profiler.start");
      },
      stop: () => {
        stopping = Promise.all(inspectors.map(async (i) => profiles.push({ title: i.title, profile: (await i.send<{ profile: CpuProfile }>("Profiler.stop")).profile }))).then(() => undefined);
      },
    };
    let steps = 0;
    let seconds = 0;
    let errors = 0;
    const wall0 = performance.now();
    while (seconds < opts.seconds) {
      const r = await stepScenario(client, adminToken, opts.workers, 1, plan, carrier);
      await stopping;
      steps += r.steps_completed;
      seconds += r.seconds;
      errors += r.errors;
      console.log(`  ${r.steps_completed} steps in ${fmt(r.seconds, 2)} s = ${fmt(r.steps_per_s)} steps/s, p50 ${fmt(r.step_call.p50_ms, 2)} ms${r.errors > 0 ? `, errors ${r.errors}: ${r.first_error}` : ""}`);
    }
    const run = {
      generated_at: new Date().toISOString(), source: sourceState(), workers: opts.workers, sampling_us: opts.samplingUs, steps, measured_seconds: round(seconds),
      steps_per_s: round(steps / seconds, 1), errors, targets: targets.map((t) => t.title),
    };
    mkdirSync(SAVED, { recursive: true });
    writeFileSync(`${SAVED}/profile-step-run.json`, JSON.stringify({ run, sourceMap }));
    profiles.forEach((p, n) => writeFileSync(`${SAVED}/profile-step-${n}.cpuprofile`, JSON.stringify(p.profile)));
    report(run, profiles.map((p) => p.profile), sourceMap, round((performance.now() - wall0) / 1000, 1));
    if (errors > 0) process.exitCode = 1;
  } finally {
    for (const i of inspectors) i.close();
    await stopDevServer(server);
  }
}, true);
