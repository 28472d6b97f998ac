/** @module Starts and stops `redis-server` (Debian's package) on 127.0.0.1 and a free port, in its own temp dir, AOF on, RDB snapshots off. Nothing but loopback is ever contacted. */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import { freePort, sleep, tail } from "../../dev-server.js";
import { deadlineAfter } from "./waits.js";

/** A redis-server started here. */
export interface RedisServer { host: "127.0.0.1"; port: number; dir: string; logFile: string; binary: string; version: string; config: Record<string, string>; child: ChildProcess | null }

/** The redis-server binary on PATH (or in the usual system directories); throws with the command that installs it. */
function redisBinary(): string {
  const dirs = [...(process.env.PATH ?? "").split(path.delimiter), "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"];
  const found = dirs.filter((d) => d !== "").map((d) => path.join(d, "redis-server")).find((f) => existsSync(f));
  if (found === undefined) throw new Error("redis-server is not installed. On Debian/Ubuntu install it with:\n  sudo apt-get update && sudo apt-get install -y redis-server");
  return found;
}

/** An ioredis client of `server` (connect it yourself). */
export function newClient(server: RedisServer): Redis {
  return new Redis({ host: server.host, port: server.port, lazyConnect: true, maxRetriesPerRequest: null, enableReadyCheck: true });
}

/** When Redis fsyncs its append-only file: once a second (Redis's default) or before answering each write. */
export type Appendfsync = "everysec" | "always";

/** Starts redis-server on 127.0.0.1 and a free port in a fresh temp dir, AOF on (fsync every second, Redis's default, unless `appendfsync` says otherwise), RDB snapshots off. */
export async function startRedis(opts: { appendfsync?: Appendfsync } = {}): Promise<RedisServer> {
  const binary = redisBinary();
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), "bench-bullmq-redis-"));
  const logFile = path.join(dir, "redis.log");
  const args = ["--bind", "127.0.0.1", "--port", String(port), "--protected-mode", "yes", "--dir", dir, "--logfile", logFile, "--daemonize", "no"];
  args.push("--appendonly", "yes", "--appendfsync", opts.appendfsync ?? "everysec", "--save", "", "--maxmemory-policy", "noeviction");
  const child = spawn(binary, args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  let exited: number | null | undefined;
  child.on("exit", (code) => (exited = code));
  const server: RedisServer = { host: "127.0.0.1", port, dir, logFile, binary, version: "unknown", config: {}, child };
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
  if (child !== null && alive(child)) child.kill("SIGKILL");
  rmSync(server.dir, { recursive: true, force: true });
}
