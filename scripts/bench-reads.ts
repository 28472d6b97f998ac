/**
 * @module `npm run bench:reads`: the dev server's memory while many observers read one large task at once, for
 * this checkout and, interleaved round by round, for another (the code before a change).
 *
 * Usage:
 *   npm run bench:reads                                      # this checkout: 10,000 steps, 32 readers, 3 rounds
 *   npm run bench:reads -- --baseline /tmp/base-checkout     # the same runs of another checkout, interleaved
 *   npm run bench:reads -- --steps 10000 --readers 32 --rounds 3 --scenarios get,whole --out bench/reads-results.json
 *
 * One run is one fresh `wrangler dev` (a fresh workerd, so every run's RSS starts from the same place), one
 * session, one task of `--steps` independent steps (one create request), and one load:
 *   get    `--readers` concurrent GET .../tasks/{tid} with no query (what an existing client sends), each
 *          retried after Retry-After on a 429 until it has its answer;
 *   whole  the same readers each reading the whole task: following `page.next_cursor` (`?cursor=`) until there
 *          is none (a single GET on a server that answers the whole DAG at once).
 * workerd's RSS (VmRSS in /proc/<pid>/status, every workerd of the server's process group) is sampled every
 * 10 ms: before (median of the second before the load), peak during it, and 2 s after it. Linux only.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { eachArg, exitWithError, fmt, isMain, machineInfo, round, sleep, stats, stepsOf, stopOnSignal, table } from "./bench-common.js";
import { defaultAdminToken, type DevServer, startDevServer, stopDevServer } from "./dev-server.js";

type Scenario = "get" | "whole";

interface Options {
  steps: number;
  readers: number;
  rounds: number;
  scenarios: Scenario[];
  baseline: string | null;
  out: string;
}

const USAGE = "usage: npm run bench:reads -- [--steps 10000] [--readers 32] [--rounds 3] [--scenarios get,whole] [--baseline <other checkout>] [--out bench/reads-results.json]";

function parseOptions(argv: string[]): Options {
  const opts: Options = { steps: 10_000, readers: 32, rounds: 3, scenarios: ["get", "whole"], baseline: null, out: "bench/reads-results.json" };
  const positive = (name: string, v: string, max: number) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`${name} takes a whole number from 1 to ${max}, not ${v}\n${USAGE}`);
    return n;
  };
  eachArg(argv, USAGE, (arg, value) => {
    if (arg === "--steps") opts.steps = positive(arg, value(), 10_000);
    else if (arg === "--readers") opts.readers = positive(arg, value(), 256);
    else if (arg === "--rounds") opts.rounds = positive(arg, value(), 20);
    else if (arg === "--baseline") opts.baseline = path.resolve(value());
    else if (arg === "--out") opts.out = value();
    else if (arg === "--scenarios") {
      opts.scenarios = value()
        .split(",")
        .map((s) => s.trim())
        .map((s) => {
          if (s !== "get" && s !== "whole") throw new Error(`unknown scenario ${s}\n${USAGE}`);
          return s;
        });
    } else return false;
    return true;
  });
  return opts;
}

// ---- workerd's memory ------------------------------------------------------------------------------

/** The pids of the workerd processes in one process group (the dev server's). */
function workerdPids(pgid: number): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) === pgid && comm.startsWith("workerd")) pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** VmRSS of these processes together, in MiB (a process that is gone counts 0). */
function rssMiB(pids: readonly number[]): number {
  let kb = 0;
  for (const pid of pids) {
    try {
      const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      if (match !== null) kb += Number(match[1]);
    } catch {
      // gone
    }
  }
  return kb / 1024;
}

/** Samples RSS every 10 ms until stopped. */
class RssSampler {
  readonly samples: { at: number; mib: number }[] = [];
  private timer: ReturnType<typeof setInterval> | null = null;
  constructor(private readonly pids: readonly number[]) {}
  start(): void {
    this.timer = setInterval(() => this.samples.push({ at: performance.now(), mib: rssMiB(this.pids) }), 10);
  }
  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
  }
  /** Samples taken in [from, to). */
  between(from: number, to: number): number[] {
    return this.samples.filter((s) => s.at >= from && s.at < to).map((s) => s.mib);
  }
}

// ---- the load --------------------------------------------------------------------------------------

/** What one reader did. */
interface ReaderResult {
  ms: number;
  bytes: number;
  requests: number;
  limited: number;
  steps: number;
  runs: number;
}

/** One observer: GET the task (retrying 429s after Retry-After); with `whole`, follow page.next_cursor to the end. */
async function readTask(url: string, token: string, whole: boolean): Promise<ReaderResult> {
  const t0 = performance.now();
  const result: ReaderResult = { ms: 0, bytes: 0, requests: 0, limited: 0, steps: 0, runs: 0 };
  let cursor: string | null = null;
  for (;;) {
    result.requests += 1;
    const res = await fetch(cursor === null ? url : `${url}?cursor=${encodeURIComponent(cursor)}`, { headers: { authorization: `Bearer ${token}` } });
    const buf = await res.arrayBuffer();
    if (res.status === 429) {
      result.limited += 1;
      const after = Number(res.headers.get("retry-after") ?? "1");
      // A quarter more at random, as the SDK waits: readers refused together do not come back together.
      await sleep((Number.isFinite(after) ? after : 1) * 1000 * (1 + Math.random() / 4));
      continue;
    }
    if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}: ${new TextDecoder().decode(buf).slice(0, 300)}`);
    result.bytes += buf.byteLength;
    const body = JSON.parse(new TextDecoder().decode(buf)) as { steps: unknown[]; runs: unknown[]; page?: { next_cursor: string | null } };
    result.steps += body.steps.length;
    result.runs += body.runs.length;
    cursor = whole ? (body.page?.next_cursor ?? null) : null;
    if (cursor === null) break;
  }
  result.ms = performance.now() - t0;
  return result;
}

async function must(res: Response, status: number, what: string): Promise<any> {
  const text = await res.text();
  if (res.status !== status) throw new Error(`${what} answered ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/** The server of the run in progress, stopped on Ctrl-C. */
let current: DevServer | null = null;

/** One run: a fresh server in `tree`, one task, one load; the RSS before, during and after it. */
async function run(tree: string, scenario: Scenario, opts: Options) {
  const server: DevServer = await startDevServer({ cwd: tree, logLevel: "warn" });
  current = server;
  try {
    const pids = workerdPids(server.child!.pid!);
    if (pids.length === 0) throw new Error(`no workerd process in the dev server's process group (log: ${server.logFile})`);
    const admin = defaultAdminToken();
    const json = { "content-type": "application/json" };
    const session = await must(await fetch(`${server.base}/v1/sessions`, { method: "POST", headers: { ...json, authorization: `Bearer ${admin}` }, body: "{}" }), 201, "create session");
    const orch: string = session.orchestrator.token;
    const tid = "reads";
    const create = JSON.stringify({ task_id: tid, wal_name: tid, title: "Read benchmark", summary: "", steps: stepsOf(opts.steps) });
    await must(await fetch(`${server.base}/v1/sessions/${session.session_id}/tasks`, { method: "POST", headers: { ...json, authorization: `Bearer ${orch}` }, body: create }), 201, "create task");
    const url = `${server.base}/v1/sessions/${session.session_id}/tasks/${tid}`;
    // One read to load the object (replay) before the baseline, so the load measures reads only.
    await readTask(url, session.observer.token, false);
    await sleep(1_500);

    const sampler = new RssSampler(pids);
    sampler.start();
    await sleep(1_000);
    const loadStart = performance.now();
    const readers = await Promise.all(Array.from({ length: opts.readers }, () => readTask(url, session.observer.token, scenario === "whole")));
    const loadEnd = performance.now();
    await sleep(2_000);
    sampler.stop();
    const before = sampler.between(loadStart - 1_000, loadStart);
    const during = sampler.between(loadStart, loadEnd + 20);
    const after = sampler.samples.at(-1)?.mib ?? NaN;
    const median = [...before].sort((a, b) => a - b)[Math.floor(before.length / 2)] ?? NaN;
    return {
      tree,
      scenario,
      rss_before_mib: round(median, 1),
      rss_peak_mib: round(Math.max(...during, ...before), 1),
      rss_after_mib: round(after, 1),
      load_s: round((loadEnd - loadStart) / 1000, 2),
      answer_bytes_per_reader: round(readers.reduce((a, r) => a + r.bytes, 0) / readers.length, 0),
      requests: readers.reduce((a, r) => a + r.requests, 0),
      rate_limited: readers.reduce((a, r) => a + r.limited, 0),
      steps_per_reader: [...new Set(readers.map((r) => r.steps))],
      reader_ms: stats(readers.map((r) => r.ms)),
    };
  } finally {
    current = null;
    await stopDevServer(server);
  }
}

/** The commit of a checkout and whether its tree differs from it. */
function treeState(tree: string): string {
  try {
    const commit = execFileSync("git", ["-C", tree, "rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["-C", tree, "status", "--porcelain", "--untracked-files=no"], { encoding: "utf8" }).trim() !== "";
    return `${commit}${dirty ? "+changes" : ""}`;
  } catch {
    return "?";
  }
}

async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2));
  stopOnSignal(async () => {
    if (current !== null) await stopDevServer(current);
  });
  if (os.platform() !== "linux") throw new Error("bench:reads samples /proc: Linux only");
  const here = process.cwd();
  const trees = opts.baseline === null ? [here] : [opts.baseline, here];
  const labels = new Map(trees.map((t) => [t, `${t === here ? "this" : "baseline"} ${treeState(t)}`]));
  const loadStart = os.loadavg();
  console.log(`bench:reads: ${opts.steps} steps, ${opts.readers} concurrent readers, ${opts.rounds} round(s) of ${opts.scenarios.join(", ")} for ${[...labels.values()].join(" and ")}`);
  const runs: Awaited<ReturnType<typeof run>>[] = [];
  for (let r = 1; r <= opts.rounds; r++) {
    for (const scenario of opts.scenarios) {
      for (const tree of trees) {
        const result = await run(tree, scenario, opts);
        runs.push(result);
        console.log(
          `  round ${r} ${scenario.padEnd(5)} ${labels.get(tree)!.padEnd(28)} RSS ${fmt(result.rss_before_mib)} → peak ${fmt(result.rss_peak_mib)} → ${fmt(result.rss_after_mib)} MiB; ${fmt(result.answer_bytes_per_reader / 1024, 0)} KiB a reader in ${result.requests} requests (${result.rate_limited} × 429), ${result.load_s} s, steps a reader ${result.steps_per_reader.join("/")}`,
        );
      }
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
  const rows: string[][] = [];
  for (const scenario of opts.scenarios) {
    for (const tree of trees) {
      const mine = runs.filter((x) => x.tree === tree && x.scenario === scenario);
      rows.push([
        `${scenario} ${labels.get(tree)}`,
        fmt(median(mine.map((x) => x.rss_before_mib))),
        `${fmt(median(mine.map((x) => x.rss_peak_mib)))} (${mine.map((x) => fmt(x.rss_peak_mib, 0)).join("/")})`,
        fmt(median(mine.map((x) => x.rss_after_mib))),
        fmt(median(mine.map((x) => x.answer_bytes_per_reader)) / 1024, 0),
        fmt(median(mine.map((x) => x.requests)), 0),
        fmt(median(mine.map((x) => x.rate_limited)), 0),
        fmt(median(mine.map((x) => x.load_s)), 2),
      ]);
    }
  }
  console.log(`\nmedians of ${opts.rounds} round(s) (peaks of each round in brackets):`);
  console.log(table(["load", "RSS before MiB", "RSS peak MiB", "RSS after MiB", "KiB a reader", "requests", "429s", "load s"], rows));
  const record = { options: opts, machine: machineInfo(loadStart, os.loadavg()), trees: Object.fromEntries(labels), runs, at: new Date().toISOString() };
  writeFileSync(opts.out, `${JSON.stringify(record, null, 2)}\n`);
  console.log(`\nwrote ${opts.out}`);
}

if (isMain(import.meta.url)) main().catch(exitWithError);
