/** @module What the benchmarks measure besides time: latency statistics, the machine, the source, and CPU used by this process, a server's process group and everything else. */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import { performance } from "node:perf_hooks";
import { sleep } from "../../dev-server.js";

/** `n` rounded to `digits` decimals. */
export function round(n: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** Latency percentiles, mean and maximum of a set of samples, in ms. */
export interface LatencyStats { count: number; p50_ms: number; p90_ms: number; p99_ms: number; mean_ms: number; max_ms: number }

/** Nearest-rank percentiles, mean and maximum of `samples` (ms), rounded to µs; NaN when there are none. */
export function stats(samples: number[]): LatencyStats {
  if (samples.length === 0) return { count: 0, p50_ms: NaN, p90_ms: NaN, p99_ms: NaN, mean_ms: NaN, max_ms: NaN };
  const sorted = Float64Array.from(samples).sort();
  const pick = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
  const sum = samples.reduce((a, b) => a + b, 0);
  return { count: samples.length, p50_ms: round(pick(50)), p90_ms: round(pick(90)), p99_ms: round(pick(99)), mean_ms: round(sum / samples.length), max_ms: round(sorted[sorted.length - 1]!) };
}

/** The machine's CPU time so far, all cores, in ms: idle and total. */
export function machineCpu(): { idle: number; total: number } {
  return os.cpus().reduce((a, c) => ({ idle: a.idle + c.times.idle, total: a.total + c.times.user + c.times.nice + c.times.sys + c.times.idle + c.times.irq }), { idle: 0, total: 0 });
}

/** Measures for 1 s the share of the machine's CPU time that was idle (all cores) and warns (through `log`) when something else is running. */
export async function idleBefore(log: (line: string) => void = console.log): Promise<number> {
  const a = machineCpu();
  await sleep(1_000);
  const b = machineCpu();
  const idle = b.total > a.total ? round((b.idle - a.idle) / (b.total - a.total), 3) : NaN;
  if (idle < 0.8) log(`warning: only ${(idle * 100).toFixed(0)}% of the CPU was idle before the run: something else is running, figures will be low`);
  return idle;
}

/** The `machine` record of a results file: CPUs, node, platform, memory, and the load averages at start and end. */
export function machineInfo(loadStart: number[], loadEnd = os.loadavg()) {
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

/** The commit checked out in `cwd` and the files changed in its work tree (read-only git calls), for the record. */
export function sourceState(cwd = "."): { commit: string | null; changed_files: string[] } {
  try {
    const git = (...args: string[]) => execFileSync("git", ["-C", cwd, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
    const changed = git("status", "--porcelain").split("\n").filter((l) => l.trim() !== "").map((l) => l.slice(3));
    return { commit: git("rev-parse", "HEAD").trim(), changed_files: changed };
  } catch {
    return { commit: null, changed_files: [] };
  }
}

let clockTicks: number | null = null;
function ticksPerSecond(): number {
  try {
    clockTicks ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim()) || 100;
  } catch {
    clockTicks = 100;
  }
  return clockTicks;
}

/** The live processes of one process group, from /proc: pid, command name, and the fields after it; null off Linux. */
export function groupProcesses(pgid: number): { pid: number; comm: string; fields: string[] }[] | null {
  let names: string[];
  try {
    names = readdirSync("/proc").filter((n) => /^\d+$/.test(n));
  } catch {
    return null;
  }
  const out: { pid: number; comm: string; fields: string[] }[] = [];
  for (const name of names) {
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      // Fields after "(comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) === pgid) out.push({ pid: Number(name), comm: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")), fields });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** CPU time (user + sys, ms) of the live processes of one process group, from /proc; null off Linux. */
export function groupCpuMs(pgid: number | null | undefined): { ms: number; processes: number } | null {
  const ps = pgid == null ? null : groupProcesses(pgid);
  return ps === null ? null : { ms: (ps.reduce((a, p) => a + Number(p.fields[11]) + Number(p.fields[12]), 0) * 1000) / ticksPerSecond(), processes: ps.length };
}

/** All-CPU counters of /proc/stat (ticks): total and steal (time the hypervisor gave to other guests); null off Linux. */
export function procStat(): { total: number; steal: number } | null {
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

/** A point in time of the CPU counters: the machine's, this process's, the server group's. */
export interface CpuSnap { at: number; machine: { idle: number; total: number }; self: NodeJS.CpuUsage; server: number | null }

/**
 * CPU used over a window, ms: client = this Node process (the benchmark's clients); server = the dev server's
 * process group (npx, wrangler, workerd; null when it cannot be read); other = the machine's busy time not
 * accounted for by the two, and other_share its share of the machine's CPU time.
 */
export type CpuUse = ReturnType<typeof usage>;

/** The CPU counters now, the server's being the process group `pgid` (null: not measured) or, given, `serverMs`. */
export function cpuSnap(pgid: number | null | undefined, serverMs?: number): CpuSnap {
  return { at: performance.now(), machine: machineCpu(), self: process.cpuUsage(), server: serverMs ?? groupCpuMs(pgid)?.ms ?? null };
}

/** The CPU used between two snapshots. */
export function cpuUse(a: CpuSnap, b: CpuSnap): CpuUse {
  const self = process.cpuUsage(a.self);
  const clientMs = (self.user + self.system) / 1000;
  const serverMs = a.server === null || b.server === null ? null : Math.max(0, b.server - a.server);
  const total = b.machine.total - a.machine.total;
  const busy = total - (b.machine.idle - a.machine.idle);
  const other = serverMs === null ? null : Math.max(0, busy - clientMs - serverMs);
  return usage((b.at - a.at) / 1000, clientMs, serverMs, other, busy, total);
}

function usage(seconds: number, client: number, server: number | null, other: number | null, busy: number, total: number) {
  const r1 = (n: number | null) => (n === null ? null : round(n, 1));
  return { seconds: round(seconds), client_ms: round(client, 1), server_ms: r1(server), other_ms: r1(other), machine_busy_ms: round(busy, 1), machine_total_ms: round(total, 1), other_share: other === null || total <= 0 ? null : round(other / total, 3) };
}

/** Several windows' CPU use as one. */
export function sumCpu(parts: CpuUse[]): CpuUse {
  const s = (f: (c: CpuUse) => number | null) => (parts.some((p) => f(p) === null) ? null : parts.reduce((a, p) => a + f(p)!, 0));
  return usage(s((c) => c.seconds)!, s((c) => c.client_ms)!, s((c) => c.server_ms), s((c) => c.other_ms), s((c) => c.machine_busy_ms)!, s((c) => c.machine_total_ms)!);
}

/** CPU ms per completed step of the client and of the server over a scenario. */
export function perStep(cpu: CpuUse, steps: number): { client_ms: number; server_ms: number | null; other_share: number | null } {
  const n = Math.max(1, steps);
  return { client_ms: round(cpu.client_ms / n, 3), server_ms: cpu.server_ms === null ? null : round(cpu.server_ms / n, 3), other_share: cpu.other_share };
}

/** Counts a scenario's errors and keeps the first; `fields()` is their part of a result (`first_error` only when there was one). */
export function errorCount() {
  let errors = 0;
  let first: string | undefined;
  return {
    note: (msg: string): void => {
      errors++;
      first ??= msg;
    },
    get count(): number {
      return errors;
    },
    fields: (): { errors: number; first_error?: string } => ({ errors, ...(first === undefined ? {} : { first_error: first }) }),
  };
}

/**
 * Repeats (or halves) of one measurement as one result, field by field: `keep` and words from the first part that
 * has them (so `first_error` is the first error); numbers summed; booleans or-ed; arrays joined; latency statistics
 * recomputed from the pooled `samples` of the same name; records of counts added up. Rates are the caller's to
 * recompute from the sums.
 */
export function mergeRuns<T extends { samples?: Record<string, number[]> }>(parts: T[], keep: readonly string[] = []): T {
  const rows = parts as unknown as Record<string, unknown>[];
  const pool = (k: string) => parts.flatMap((p) => p.samples?.[k] ?? []);
  const out: Record<string, unknown> = {};
  for (const k of new Set(rows.flatMap((r) => Object.keys(r)))) {
    const all = rows.map((r) => r[k]).filter((v) => v !== undefined);
    const v = all[0];
    if (k === "samples") out[k] = Object.fromEntries(Object.keys(v as object).map((s) => [s, pool(s)]));
    else if (keep.includes(k) || typeof v === "string" || v === null) out[k] = v;
    else if (typeof v === "number") out[k] = (all as number[]).reduce((a, b) => a + b, 0);
    else if (typeof v === "boolean") out[k] = all.some(Boolean);
    else if (Array.isArray(v)) out[k] = all.flat();
    else if (parts[0]!.samples?.[k] !== undefined) out[k] = stats(pool(k));
    else {
      const counts: Record<string, number> = {};
      for (const r of all as Record<string, number>[]) for (const [c, n] of Object.entries(r)) counts[c] = (counts[c] ?? 0) + n;
      out[k] = counts;
    }
  }
  return out as T;
}

/** What every results file of a single-purpose benchmark starts with: when, which mode, the machine, the checkout. */
export function runHeader(quick: boolean, loadStart: number[], idle: number, source: ReturnType<typeof sourceState>) {
  const { total_mem_mb: _, ...machine } = machineInfo(loadStart);
  return { generated_at: new Date().toISOString(), mode: quick ? "quick" : "full", machine: { ...machine, idle_before: idle }, source };
}

/** The pids of the workerd processes in one process group (the dev server's); none off Linux. */
export function workerdPids(pgid: number): number[] {
  return (groupProcesses(pgid) ?? []).filter((p) => p.comm.startsWith("workerd")).map((p) => p.pid);
}

/** VmRSS of these processes together, in MiB (a process that is gone counts 0). */
export function rssMiB(pids: readonly number[]): number {
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
