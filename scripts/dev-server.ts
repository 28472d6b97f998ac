/** @module Starts and stops `wrangler dev` (through `node scripts/dev.mjs`) on a free loopback port with its own local storage and inspector port, for the benchmarks, the demo and the e2e tests. */
// The server runs in its own process group, so stopping it reaches npx, wrangler and workerd.
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, createReadStream, existsSync, mkdirSync, openSync, readFileSync, rmSync } from "node:fs";
import { createInterface } from "node:readline";
import path from "node:path";
import { createServer } from "node:net";
import { performance } from "node:perf_hooks";

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

/** On the first SIGINT or SIGTERM: says so on stderr, runs `stop` (e.g. stops the dev server), exits with 130. */
export function stopOnSignal(stop: () => Promise<void>): void {
  const onSignal = (signal: NodeJS.Signals) => {
    console.error(`\n${signal}: stopping`);
    void stop().finally(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
}

/** "Reloading local server" lines in a dev server's log: wrangler rebuilds when a source file changes under it. */
export function reloadCount(server: DevServer | null): number {
  try {
    return server?.logFile == null ? 0 : (readFileSync(server.logFile, "utf8").match(/Reloading local server/g) ?? []).length;
  } catch {
    return 0;
  }
}

/**
 * The errors a dev server's log holds, counted by kind: the runtime's incidents (`reportIncident`: where, and the
 * error's first words) and workerd's own error lines, numbers replaced by `#` so that repeats count as one kind. The
 * log is read as a stream: a server in trouble can write gigabytes.
 */
export async function serverErrors(server: DevServer | null): Promise<{ error: string; count: number }[]> {
  const counts = new Map<string, number>();
  if (server?.logFile == null || !existsSync(server.logFile)) return [];
  const lines = createInterface({ input: createReadStream(server.logFile, { encoding: "utf8" }), crlfDelay: Infinity });
  for await (const raw of lines) {
    if (!raw.includes("ERROR")) continue;
    const line = raw.replace(/\u001b\[[0-9;]*m/g, "");
    const incident = /"where":"([^"]*)","error":"((?:[^"\\]|\\.){0,160})/.exec(line);
    const text = incident !== null ? `${incident[1]}: ${incident[2]}` : /\[ERROR\]\s*(.*)$/.exec(line)?.[1];
    if (text === undefined) continue;
    const kind = text.replace(/\d+/g, "#").slice(0, 160);
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  return [...counts].map(([error, count]) => ({ error, count })).sort((a, b) => b.count - a.count);
}

/** A running dev server. */
export interface DevServer { base: string; child: ChildProcess | null; logFile: string | null; persistDir: string | null; startupMs: number; /** wrangler's inspector proxy (Chrome DevTools Protocol), when started here. */ inspectorPort?: number }

/** How to start it. */
export interface DevServerOptions {
  /** wrangler --log-level (warn: its per-request log lines cost about 1 ms a request). */
  logLevel?: string;
  /** Where the storage dir and the log go (default bench/tmp); the storage dir is removed on stop. */
  workDir?: string;
  /**
   * Reuse this storage dir (`--persist-to`) instead of a fresh one, e.g. the dir of a server stopped with
   * `keepPersistDir`: a restart on the same storage (every Durable Object replays its WAL on first use).
   */
  persistDir?: string;
  /** Extra `--var NAME:VALUE` bindings. */
  vars?: Record<string, string>;
  /** Give up after this long without a 200 from /health (default 180 s). */
  startupTimeoutMs?: number;
  /** Serve the checkout in this directory (default: the current one), e.g. an older commit's work tree to compare against. */
  cwd?: string;
}

/** The admin token of a local server: $ADMIN_TOKEN, else ADMIN_TOKEN from .dev.vars (or its example), else dev-admin-token. */
export function defaultAdminToken(): string {
  if (process.env.ADMIN_TOKEN) return process.env.ADMIN_TOKEN;
  for (const file of [".dev.vars", ".dev.vars.example"]) {
    if (!existsSync(file)) continue;
    const match = /^\s*ADMIN_TOKEN\s*=\s*"?([^"\n]+?)"?\s*$/m.exec(readFileSync(file, "utf8"));
    if (match?.[1]) return match[1];
  }
  return "dev-admin-token";
}

/** Starts `node scripts/dev.mjs` on a free port and waits for GET /health to answer 200. */
export async function startDevServer(opts: DevServerOptions = {}): Promise<DevServer> {
  const port = await freePort();
  const inspectorPort = await freePort();
  const workDir = opts.workDir ?? "bench/tmp";
  mkdirSync(workDir, { recursive: true });
  const stamp = `${port}-${Date.now()}`;
  // Own local storage and inspector port: another `npm start` may be running from the same checkout.
  // Absolute: the server may run in another checkout (`cwd`).
  const persistDir = path.resolve(opts.persistDir ?? path.join(workDir, `state-${stamp}`));
  const logFile = path.resolve(workDir, `dev-server-${stamp}.log`);
  const fd = openSync(logFile, "w");
  const args = ["scripts/dev.mjs", "--persist-to", persistDir, "--inspector-port", String(inspectorPort), "--show-interactive-dev-session=false"];
  args.push("--log-level", opts.logLevel ?? "warn");
  // A local server may call out to this machine (A2A peers of delegated steps, webhook receivers), whatever an older
  // .dev.vars says; a caller's own value wins.
  const vars = { OUTBOUND_ALLOWLIST: "loopback", ...opts.vars };
  for (const [name, value] of Object.entries(vars)) args.push("--var", `${name}:${value}`);
  const t0 = performance.now();
  // detached: the server gets its own process group, so stopping it reaches npx, wrangler and workerd.
  const child = spawn(process.execPath, args, { detached: true, stdio: ["ignore", fd, fd], env: { ...process.env, PORT: String(port) }, ...(opts.cwd === undefined ? {} : { cwd: opts.cwd }) });
  closeSync(fd);
  let exited: number | null | undefined;
  child.on("exit", (code) => (exited = code));
  const base = `http://127.0.0.1:${port}`;
  const server: DevServer = { base, child, logFile, persistDir, startupMs: 0, inspectorPort };
  const timeoutMs = opts.startupTimeoutMs ?? 180_000;
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (exited !== undefined) throw new Error(`the dev server exited (${exited}) before answering /health; see ${logFile}:\n${tail(logFile)}`);
    try {
      const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(2_000) });
      await res.text();
      if (res.status === 200) {
        server.startupMs = Math.round(performance.now() - t0);
        return server;
      }
    } catch {
      // not up yet
    }
    await sleep(250);
  }
  await stopDevServer(server, { keepPersistDir: opts.persistDir !== undefined });
  throw new Error(`the dev server did not answer /health within ${timeoutMs / 1000} s; see ${logFile}:\n${tail(logFile)}`);
}

/** Sends `signal` to the process group `pgid` (0: only asks whether it is alive); false when it is gone. */
function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** kill -9 of the whole process group of the server, at once (a crash: nothing is flushed or shut down); its storage is kept. */
export async function killDevServer(server: DevServer): Promise<void> {
  const pid = server.child?.pid;
  if (pid === undefined) return;
  signalGroup(pid, "SIGKILL");
  for (let i = 0; i < 50 && signalGroup(pid, 0); i++) await sleep(100);
}

/** Stops the whole process group of the server: SIGTERM, then SIGKILL after 5 s; removes its storage unless kept (`keepPersistDir`, to start another server on it). */
export async function stopDevServer(server: DevServer, opts: { keepPersistDir?: boolean } = {}): Promise<void> {
  const pid = server.child?.pid;
  if (pid === undefined) return;
  server.child = null;
  signalGroup(pid, "SIGTERM");
  for (let i = 0; i < 50 && signalGroup(pid, 0); i++) await sleep(100);
  if (signalGroup(pid, 0)) {
    signalGroup(pid, "SIGKILL");
    for (let i = 0; i < 20 && signalGroup(pid, 0); i++) await sleep(100);
  }
  if (server.persistDir !== null && opts.keepPersistDir !== true) rmSync(server.persistDir, { recursive: true, force: true });
}

/**
 * Runs `body` against the service a benchmark measures: `url` (loopback only: the benchmarks never talk to another
 * machine; it must answer /health), or, without one, a dev server started here on a free port with these extra vars,
 * stopped when `body` is done (or on Ctrl-C).
 */
export async function withBenchServer<T>(url: string | null, vars: Record<string, string>, body: (base: string, server: DevServer | null) => Promise<T>): Promise<T> {
  if (url !== null) {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
    if (!(host === "localhost" || host === "::1" || /^127(\.\d{1,3}){3}$/.test(host))) throw new Error(`--url must be a loopback address (127.0.0.0/8, localhost, ::1), not ${host}`);
    const base = url.replace(/\/+$/, "");
    const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(5_000) });
    await res.text();
    if (res.status !== 200) throw new Error(`${base}/health answered ${res.status}`);
    return body(base, null);
  }
  console.log("starting node scripts/dev.mjs on a free port …");
  const server = await startDevServer({ vars });
  stopOnSignal(() => stopDevServer(server));
  console.log(`server up at ${server.base} after ${(server.startupMs / 1000).toFixed(1)} s (log: ${server.logFile})`);
  try {
    return await body(server.base, server);
  } finally {
    await stopDevServer(server);
  }
}

/**
 * Runs `body` against `base` when given (any runtime, deployed ones included: the examples talk to them), else
 * against a dev server started here with its storage under `workDir`, stopped when `body` is done or on Ctrl-C.
 */
export async function withServerAt<T>(base: string | null, workDir: string, body: (base: string) => Promise<T>): Promise<T> {
  if (base !== null) return body(base.replace(/\/+$/, ""));
  console.log("starting a local server (wrangler dev)…");
  const server = await startDevServer({ workDir });
  stopOnSignal(() => stopDevServer(server));
  try {
    return await body(server.base);
  } finally {
    await stopDevServer(server);
  }
}
