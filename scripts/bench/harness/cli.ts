/** @module The benchmarks' one command-line parser and entry point: options as a table of handlers, errors printed, exit codes. */
import { defaultAdminToken } from "../../dev-server.js";

/** An option's handler: no parameter for a flag, one for an option that takes the next word. */
export type OptionHandler = (() => void) | ((value: string) => void);

/** Applies `argv` to `handlers` (keyed by option name); `-h`/`--help` prints `usage` and exits; an unknown option throws. */
export function parseCli(usage: string, handlers: Record<string, OptionHandler>, argv = process.argv.slice(2)): void {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "-h" || arg === "--help") {
      console.log(usage);
      process.exit(0);
    }
    const on = handlers[arg];
    if (on === undefined) throw new Error(`unknown option ${arg}\n${usage}`);
    if (on.length === 0) (on as () => void)();
    else {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${arg} needs a value\n${usage}`);
      on(v);
    }
  }
}

/** A whole number from `min` to `max`, or a thrown error naming the option. */
export function int(v: string, name: string, max: number, min = 1): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} takes a whole number from ${min} to ${max}, not ${v}`);
  return n;
}

/** A comma-separated list of whole numbers from 1 to `max`. */
export const ints = (v: string, name: string, max: number): number[] => v.split(",").map((s) => int(s.trim(), name, max));

/** One of `allowed`, or a thrown error naming the option. */
export function oneOf<T extends string>(v: string, name: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(v)) throw new Error(`${name} takes ${allowed.join(", ")}, not ${v}`);
  return v as T;
}

/** The benchmarks only ever talk to this machine: throws unless `url` is a loopback address. */
export function loopback(url: string): string {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
  if (!(host === "localhost" || host === "::1" || /^127(\.\d{1,3}){3}$/.test(host))) throw new Error(`--url must be a loopback address (127.0.0.0/8, localhost, ::1), not ${host}`);
  return url.replace(/\/+$/, "");
}

/** Options of a benchmark against the service: an already running server or one started here. */
export interface ServerOptions { url: string | null; adminToken: string; serverLogLevel: string }

/** The server options' defaults and their handlers (`--url`, `--admin-token`, `--server-log-level`). */
export function serverOptions<T extends ServerOptions>(o: T): Record<string, OptionHandler> {
  o.url ??= null;
  o.adminToken ??= defaultAdminToken();
  o.serverLogLevel ??= "warn";
  return { "--url": (v: string) => (o.url = loopback(v)), "--admin-token": (v: string) => (o.adminToken = v), "--server-log-level": (v: string) => (o.serverLogLevel = v) };
}

/** Runs a benchmark's `main`: a fatal error prints its message (the stack with BENCH_DEBUG) and exits 1; `exit` leaves at once when done (BullMQ may keep sockets). */
export function run(main: () => Promise<void>, exit = false): void {
  main().then(
    () => {
      if (exit) process.exit(process.exitCode ?? 0);
    },
    (e: unknown) => {
      console.error(e instanceof Error ? (process.env.BENCH_DEBUG ? (e.stack ?? e.message) : e.message) : e);
      process.exit(1);
    },
  );
}
