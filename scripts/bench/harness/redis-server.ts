/**
 * @module Starts and stops `redis-server` (Debian's package; installed with apt-get when missing and running
 * as root) on 127.0.0.1 and a free port, in its own temp dir, AOF on, RDB snapshots off. Nothing but
 * loopback is ever contacted.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import os from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import { freePort, sleep, tail } from "../../dev-server.js";
import { deadlineAfter } from "./waits.js";

/** Redis's AOF fsync policy. */
export type AppendFsync = "everysec" | "always" | "no";

/** A redis-server started here. */
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

/** An ioredis client of `server` (connect it yourself). */
export function newClient(server: RedisServer): Redis {
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
export function killRedisNow(server: RedisServer): void {
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
