/**
 * @module `npm run bench:profile-step`: V8 CPU profiles of the unbatched step (claim-next, then status completed with
 * `claim_next`, over HTTP) taken through the inspector port `wrangler dev` opens (Chrome DevTools Protocol
 * `Profiler.start`/`stop` on every isolate it lists), only over the scenarios' measured windows; self time is mapped
 * back to our source files through the bundle's source map and summed by file, by function and by slice of the
 * per-call path (scripts/bench/profile-slices.ts); writes bench/profile-step-results.json (and the raw .cpuprofile
 * files under bench/tmp, which Chrome DevTools opens; `--resummarize` slices those again without a run). With `--mcp`
 * the calls profiled are MCP `tools/call`s of `agent.task_progress` (the 2026-07-28 client's request, sent with
 * fetch, one worker run and claimed step per client), and the figures go to bench/profile-mcp-results.json; with
 * `--mcp-read` they are `agent.task_get`s of a 4-step task by observers (bench:mcp's read), to
 * bench/profile-mcp-read-results.json. Raw MCP profiles: bench/tmp/profile-mcp-N.cpuprofile. With `--socket` the steps
 * are bench:socket's: `--workers` (32 there) SDK workers on one task of `--socket-steps` steps over its command socket,
 * `--frames` frames a tick; figures to bench/profile-socket-results.json, raw profiles bench/tmp/profile-socket-N.cpuprofile.
 */
// Node 20 has WebSocket behind --experimental-websocket: the npm script passes it, so no websocket dependency.
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { defaultAdminToken, startDevServer, stopDevServer, stopOnSignal } from "../dev-server.js";
import { parseCli, run } from "./harness/cli.js";
import { Client, stepsOf } from "./harness/http-client.js";
import { round, sourceState } from "./harness/meter.js";
import { fmt, printTables, writeResults } from "./harness/report.js";
import { type CpuProfile, summarize } from "./profile-slices.js";
import { PLANS, requestCarrier, stepScenario, type StepCarrier } from "./scenarios/steps.js";
import NodeWebSocket from "ws";
import { RuntimeClient, type WebSocketConstructor } from "../../src/client/index.js";
import { sdkCarrier } from "./scenarios/group-commit.js";

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

/**
 * Keeps a mode's raw profiles as bench/tmp/profile-`name`-N.cpuprofile and, with `run`, its figures and the bundle's
 * source map as profile-`name`-run.json (what `--resummarize` reads for the step mode).
 */
function keepProfiles(name: string, profiles: readonly CpuProfile[], saved?: { run: RunInfo; sourceMap: object }): void {
  mkdirSync(SAVED, { recursive: true });
  if (saved !== undefined) writeFileSync(`${SAVED}/profile-${name}-run.json`, JSON.stringify(saved));
  profiles.forEach((p, n) => writeFileSync(`${SAVED}/profile-${name}-${n}.cpuprofile`, JSON.stringify(p)));
}

/** Where a function's self time is counted by package: a library (node_modules/<name>), native code, or our top folder. */
function packageOf(where: string): string {
  const lib = /^node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(where);
  if (lib !== null) return lib[1]!;
  return where === "(native)" ? "(native: workerd, V8, SQLite, GC)" : where.split("/").slice(0, where.startsWith("durable-objects/") || where.startsWith("routes/") ? 2 : 1).join("/");
}

/** Slices `profiles`, prints the tables and writes bench/profile-step-results.json (bench/profile-mcp-results.json with --mcp). */
function report(run: RunInfo, profiles: CpuProfile[], sourceMap: object, wallSeconds?: number, file = "bench/profile-step-results.json"): void {
  const summary = summarize(profiles, run.steps, sourceMap);
  const byPackage = new Map<string, number>();
  for (const f of summary.functions) byPackage.set(packageOf(f.where), (byPackage.get(packageOf(f.where)) ?? 0) + f.share);
  const packages = [...byPackage.entries()].sort((a, b) => b[1] - a[1]).map(([name, share]) => ({ package: name, share: round(share, 4) }));
  printTables([
    { title: `slices of the per-call path: ${run.steps} steps, ${run.workers} workers, ${fmt(run.measured_seconds, 1)} s profiled; busy ${fmt(summary.busy_ms)} ms of ${fmt(summary.total_ms)} ms sampled (${fmt(summary.busy_us_per_step, 1)} µs a step)`, headers: ["slice", "% of busy", "µs/step"], rows: summary.slices.map((s) => [s.slice, fmt(s.share * 100, 1), fmt(s.us_per_step, 1)]) },
    { title: "top functions by self time (our source, and everything else by name)", headers: ["function", "where", "% of busy", "µs/step"], rows: summary.functions.slice(0, 40).map((f) => [f.function, f.where, fmt(f.share * 100, 1), fmt(f.us_per_step, 1)]) },
    { title: "self time by package (a library, native code, or our folder)", headers: ["package", "% of busy"], rows: packages.slice(0, 25).map((p) => [p.package, fmt(p.share * 100, 1)]) },
  ]);
  writeResults(file, { ...run, ...summary, packages }, wallSeconds);
}

run(async () => {
  const opts = parseCli("usage: npm run bench:profile-step -- [--workers 8] [--seconds 20] [--sampling-us 200] [--resummarize] [--mcp] [--mcp-read] [--socket] [--socket-steps 4800] [--frames 1]", { workers: 8, seconds: 20, samplingUs: 200, resummarize: false, mcp: false, mcpRead: false, socket: false, socketSteps: 4_800, frames: 1 });
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
    if (opts.mcp || opts.mcpRead) return await profileMcp(client, server.base, adminToken, inspectors, targets, sourceMap, opts);
    if (opts.socket) return await profileSocket(client, adminToken, inspectors, targets, sourceMap, opts);
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
    keepProfiles("step", profiles.map((p) => p.profile), { run, sourceMap });
    report(run, profiles.map((p) => p.profile), sourceMap, round((performance.now() - wall0) / 1000, 1));
    if (errors > 0) process.exitCode = 1;
  } finally {
    for (const i of inspectors) i.close();
    await stopDevServer(server);
  }
}, true);

/**
 * --mcp: `workers` clients, each a worker run holding its own step, calling `agent.task_progress` through /mcp as
 * the 2026-07-28 client sends it, back to back for `seconds`; profiled over that window only.
 */
async function profileMcp(client: Client, base: string, adminToken: string, inspectors: Inspector[], targets: { title: string }[], sourceMap: object, opts: { workers: number; seconds: number; samplingUs: number; mcpRead: boolean }): Promise<void> {
  const session = await client.session(adminToken);
  const task = (await client.task(session, "mcp-profile", { title: "MCP profile", steps: stepsOf(opts.mcpRead ? 4 : opts.workers) })).path;
  const taskId = task.split("/").at(-1)!;
  const runs: { token: string; tool: { name: string; arguments: Record<string, unknown> } }[] = [];
  for (let i = 0; i < opts.workers; i++) {
    if (opts.mcpRead) {
      const token: string = (await client.must(201, "POST", `/v1/sessions/${session.sid}/tokens`, adminToken, { role: "observer", agent_id: `reader-${i}` })).body.token;
      runs.push({ token, tool: { name: "agent.task_get", arguments: { task_id: taskId } } });
      continue;
    }
    const stepId = stepsOf(opts.workers)[i]!.step_id;
    const token: string = (await client.must(201, "POST", `${task}/workers`, session.orch, { agent_id: `mcp-${i}` })).body.token;
    await client.must(200, "POST", `${task}/steps/${stepId}/claim`, token, {});
    runs.push({ token, tool: { name: "agent.task_progress", arguments: { step_id: stepId, phase: "profile", summary: "call" } } });
  }
  let id = 0;
  let errors = 0;
  const meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": { name: "profile-mcp", version: "1.0.0" }, "io.modelcontextprotocol/clientCapabilities": {} };
  const call = async (r: (typeof runs)[number]) => {
    const res = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: { accept: "application/json, text/event-stream", authorization: `Bearer ${r.token}`, "content-type": "application/json", "mcp-method": "tools/call", "mcp-name": r.tool.name, "mcp-protocol-version": "2026-07-28" },
      body: JSON.stringify({ jsonrpc: "2.0", id: id++, method: "tools/call", params: { ...r.tool, _meta: meta } }),
    });
    const text = await res.text();
    if (res.status !== 200 || (JSON.parse(text) as { result?: { isError?: boolean } }).result?.isError === true) errors++;
  };
  const loop = async (ms: number) => {
    let calls = 0;
    const end = performance.now() + ms;
    await Promise.all(runs.map(async (r) => {
      while (performance.now() < end) {
        await call(r);
        calls++;
      }
    }));
    return calls;
  };
  await loop(3_000);
  for (const i of inspectors) await i.send("Profiler.start");
  const t0 = performance.now();
  const calls = await loop(opts.seconds * 1000);
  const seconds = (performance.now() - t0) / 1000;
  const profiles = await Promise.all(inspectors.map(async (i) => (await i.send<{ profile: CpuProfile }>("Profiler.stop")).profile));
  console.log(`  ${calls} MCP calls in ${fmt(seconds, 2)} s = ${fmt(calls / seconds)} calls/s${errors > 0 ? `, errors ${errors}` : ""}`);
  keepProfiles("mcp", profiles);
  const run = { generated_at: new Date().toISOString(), source: sourceState(), mode: `mcp ${runs[0]!.tool.name}`, workers: opts.workers, sampling_us: opts.samplingUs, steps: calls, measured_seconds: round(seconds), calls_per_s: round(calls / seconds, 1), errors, targets: targets.map((t) => t.title) };
  report(run, profiles, sourceMap, undefined, opts.mcpRead ? "bench/profile-mcp-read-results.json" : "bench/profile-mcp-results.json");
  if (errors > 0) process.exitCode = 1;
}

/** --socket: bench:socket's scenario (SDK workers on one task over its command socket), profiled over its measured window only. */
async function profileSocket(client: Client, adminToken: string, inspectors: Inspector[], targets: { title: string }[], sourceMap: object, opts: { workers: number; samplingUs: number; socketSteps: number; frames: number }): Promise<void> {
  const family = new RuntimeClient({ baseUrl: client.base, socket: { WebSocket: NodeWebSocket as unknown as WebSocketConstructor, framesPerTick: opts.frames } });
  let stopped: Promise<CpuProfile[]> = Promise.resolve([]);
  const window = {
    start: () => {
      for (const i of inspectors) void i.send("Profiler.start");
    },
    stop: () => {
      stopped = Promise.all(inspectors.map(async (i) => (await i.send<{ profile: CpuProfile }>("Profiler.stop")).profile));
    },
  };
  try {
    // Warm the socket path first (not profiled), then the measured task.
    await stepScenario(client, adminToken, opts.workers, 1, { ...PLANS.full, stepsPerWorker: 0, minSteps: 640 }, sdkCarrier(family, "warm-s"));
    const r = await stepScenario(client, adminToken, opts.workers, 1, { ...PLANS.full, stepsPerWorker: 0, minSteps: opts.socketSteps }, sdkCarrier(family, "profile-s", window));
    const profiles = await stopped;
    console.log(`  ${r.steps_completed} steps in ${fmt(r.seconds, 2)} s = ${fmt(r.steps_per_s)} steps/s${r.errors > 0 ? `, errors ${r.errors}: ${r.first_error}` : ""}`);
    const run = { generated_at: new Date().toISOString(), source: sourceState(), mode: `socket, ${opts.frames} frame(s) a tick`, workers: opts.workers, sampling_us: opts.samplingUs, steps: r.steps_completed, measured_seconds: round(r.seconds), steps_per_s: round(r.steps_per_s, 1), errors: r.errors, targets: targets.map((t) => t.title) };
    keepProfiles("socket", profiles, { run, sourceMap });
    report(run, profiles, sourceMap, undefined, "bench/profile-socket-results.json");
    if (r.errors > 0) process.exitCode = 1;
  } finally {
    family.close();
  }
}
