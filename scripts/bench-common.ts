/** @module Helpers shared by the benchmark scripts (bench, bench-http, bench-sse, bench-bullmq, bench-socket) and dev-server. */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

// ---- numbers and statistics ------------------------------------------------------------------------

/** `n` rounded to `digits` decimals. */
export function round(n: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** Latency percentiles, mean and maximum of a set of samples, in ms. */
export interface LatencyStats {
  count: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  mean_ms: number;
  max_ms: number;
}

/** Nearest-rank percentiles, mean and maximum of `samples` (ms), rounded to µs; NaN when there are none. */
export function stats(samples: number[]): LatencyStats {
  if (samples.length === 0) return { count: 0, p50_ms: NaN, p90_ms: NaN, p99_ms: NaN, mean_ms: NaN, max_ms: NaN };
  const sorted = Float64Array.from(samples).sort();
  const pick = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
  const sum = samples.reduce((a, b) => a + b, 0);
  return { count: samples.length, p50_ms: round(pick(50)), p90_ms: round(pick(90)), p99_ms: round(pick(99)), mean_ms: round(sum / samples.length), max_ms: round(sorted[sorted.length - 1]!) };
}

// ---- report formatting -----------------------------------------------------------------------------

/** `n` with `digits` decimals, "-" for undefined or NaN. */
export function fmt(n: number | undefined, digits = 1): string {
  return n === undefined || Number.isNaN(n) ? "-" : n.toFixed(digits);
}

/** A plain-text table: first column left-aligned, the others right-aligned, a dashed line under the headers. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(headers), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

// ---- the machine and the source --------------------------------------------------------------------

/** The machine's CPU time so far, all cores, in ms: idle and total. */
export function machineCpu(): { idle: number; total: number } {
  return os.cpus().reduce((a, c) => ({ idle: a.idle + c.times.idle, total: a.total + c.times.user + c.times.nice + c.times.sys + c.times.idle + c.times.irq }), { idle: 0, total: 0 });
}

/** Share of this machine's CPU time that was idle over `ms` (all cores): tells whether something else is running. */
export async function cpuIdleShare(ms = 1_000): Promise<number> {
  const snap = machineCpu;
  const a = snap();
  await sleep(ms);
  const b = snap();
  return b.total > a.total ? round((b.idle - a.idle) / (b.total - a.total), 3) : NaN;
}

/** The `machine` record of a results file: CPUs, node, platform, memory, and the load averages at start and end. */
export function machineInfo(loadStart: number[], loadEnd: number[]) {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    cpu_model: cpus[0]?.model ?? "unknown",
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    total_mem_mb: Math.round(os.totalmem() / 2 ** 20),
    loadavg_start: loadStart.map((n) => round(n, 2)),
    loadavg_end: loadEnd.map((n) => round(n, 2)),
  };
}

/** The checked-out commit and the files changed in the work tree (read-only git calls), for the record. */
export function sourceState(): { commit: string | null; changed_files: string[] } {
  try {
    const commit = execFileSync("git", ["rev-parse", "HEAD"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    const changed = execFileSync("git", ["status", "--porcelain"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] })
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => l.slice(3));
    return { commit, changed_files: changed };
  } catch {
    return { commit: null, changed_files: [] };
  }
}

// ---- processes, ports, files -----------------------------------------------------------------------

/** Waits `ms` milliseconds. */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** The last lines of a file, or "" when it cannot be read. */
export function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, "utf8").split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

/** The benchmarks only ever talk to this machine: throws unless `url` is a loopback address. */
export function assertLoopback(url: string): void {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
  if (!(host === "localhost" || host === "::1" || /^127(\.\d{1,3}){3}$/.test(host))) {
    throw new Error(`--url must be a loopback address (127.0.0.0/8, localhost, ::1), not ${host}`);
  }
}

/** On the first SIGINT or SIGTERM: says so on stderr, runs `stop` (e.g. stops the dev server), exits with 130. */
export function stopOnSignal(stop: () => Promise<void>): void {
  const onSignal = (signal: NodeJS.Signals) => {
    console.error(`\n${signal}: stopping`);
    void stop().finally(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
}

// ---- command line ----------------------------------------------------------------------------------

/**
 * Walks the options in `argv`: `-h`/`--help` prints `usage` and exits; any other option goes to `on` with
 * `value()` (the next word; throws when there is none), which returns false for an option it does not know.
 */
export function eachArg(argv: string[], usage: string, on: (arg: string, value: () => string) => boolean): void {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${arg} needs a value\n${usage}`);
      return v;
    };
    if (arg === "-h" || arg === "--help") {
      console.log(usage);
      process.exit(0);
    }
    if (!on(arg, value)) throw new Error(`unknown option ${arg}\n${usage}`);
  }
}

/** True when the module at `moduleUrl` (its import.meta.url) is the script node was started with, not an import. */
export function isMain(moduleUrl: string): boolean {
  return process.argv[1] !== undefined && moduleUrl === pathToFileURL(path.resolve(process.argv[1])).href;
}

/** Prints a fatal error (its message; the stack with BENCH_DEBUG set) and exits with 1. */
export function exitWithError(e: unknown): never {
  console.error(e instanceof Error ? (process.env.BENCH_DEBUG ? (e.stack ?? e.message) : e.message) : e);
  process.exit(1);
}

// ---- task bodies -----------------------------------------------------------------------------------

/** `count` independent steps s00000, s00001, … as the step scenarios create them. */
export function stepsOf(count: number): { step_id: string; title: string; summary: string; depends_on_step_ids: string[] }[] {
  return Array.from({ length: count }, (_, i) => ({ step_id: `s${String(i).padStart(5, "0")}`, title: `Step ${i}`, summary: "Independent bench step", depends_on_step_ids: [] }));
}

let clockTicks: number | null = null;
function ticksPerSecond(): number {
  if (clockTicks === null) {
    try {
      clockTicks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** CPU time (user + sys, ms) of the live processes of one process group, from /proc; null off Linux. */
export function groupCpuMs(pgid: number | null): { ms: number; processes: number } | null {
  if (pgid === null) return null;
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return null;
  }
  let ticks = 0;
  let processes = 0;
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      // Fields after "(comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(f[2]) !== pgid) continue;
      ticks += Number(f[11]) + Number(f[12]);
      processes++;
    } catch {
      // gone meanwhile
    }
  }
  return { ms: (ticks * 1000) / ticksPerSecond(), processes };
}
