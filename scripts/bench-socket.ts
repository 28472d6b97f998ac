/**
 * @module `npm run bench:socket`: the command socket alone, long enough to see its steady state, with the
 * SDK's frames per tick compared in interleaved rounds (the same minutes of the same machine for each).
 *
 * Usage:
 *   npm run bench:socket                                  # starts its own dev server; 32 workers, one task
 *   npm run bench:socket -- --frames 1,2,3 --rounds 5     # frames per tick to compare, rounds of each
 *   npm run bench:socket -- --workers 8 --steps 2400 --url http://127.0.0.1:8787
 *
 * A round: per frames-per-tick value, bench.ts's socket scenario on one fresh task of `--steps` independent
 * steps and `--workers` pooled runs (WorkerClients of one socket-carrying RuntimeClient, ws). Steps/s = steps
 * / time from the first claim to the last answer; CPU ms per step of this process and of the dev server's
 * process group over that window (the server's only when this script started it). Prints a table; writes
 * nothing.
 */
import WebSocket from "ws";
import { RuntimeClient, type WebSocketConstructor } from "../src/client/index.js";
import { assertLoopback, eachArg, exitWithError, fmt, groupCpuMs, isMain, round, table } from "./bench-common.js";
import { sdkCarrier } from "./bench.js";
import { Client, FULL as HTTP_FULL, stepScenario } from "./bench-http.js";
import { benchServer, type DevServer, defaultAdminToken, stopDevServer } from "./dev-server.js";

interface Options {
  url: string | null;
  workers: number;
  steps: number;
  frames: number[];
  rounds: number;
}

const USAGE = "usage: npm run bench:socket -- [--workers 32] [--steps 4800] [--frames 1,3] [--rounds 5] [--url http://127.0.0.1:8787]";

function parseOptions(argv: string[]): Options {
  const opts: Options = { url: null, workers: 32, steps: 4_800, frames: [1, 3], rounds: 5 };
  const positive = (name: string, v: string, max: number) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`${name} takes a whole number from 1 to ${max}, not ${v}\n${USAGE}`);
    return n;
  };
  eachArg(argv, USAGE, (arg, value) => {
    if (arg === "--url") opts.url = value();
    else if (arg === "--workers") opts.workers = positive(arg, value(), 256);
    else if (arg === "--steps") opts.steps = positive(arg, value(), 10_000);
    else if (arg === "--rounds") opts.rounds = positive(arg, value(), 50);
    else if (arg === "--frames") opts.frames = value().split(",").map((v) => positive(arg, v.trim(), 16));
    else return false;
    return true;
  });
  if (opts.url !== null) assertLoopback(opts.url);
  return opts;
}

interface Run {
  framesPerTick: number;
  steps: number;
  seconds: number;
  clientMs: number;
  serverMs: number | null;
}

/** One task to the end over the socket with `framesPerTick` (bench.ts's socket scenario, one task). */
async function runOnce(client: Client, opts: Options, framesPerTick: number, server: DevServer | null): Promise<Run> {
  const family = new RuntimeClient({ baseUrl: client.base, socket: { WebSocket: WebSocket as unknown as WebSocketConstructor, framesPerTick } });
  let self0 = process.cpuUsage();
  let server0: number | null = null;
  const run: Run = { framesPerTick, steps: 0, seconds: 0, clientMs: 0, serverMs: null };
  const serverMs = () => groupCpuMs(server?.child?.pid ?? null)?.ms ?? null;
  const res = await stepScenario(
    client,
    defaultAdminToken(),
    opts.workers,
    1,
    { ...HTTP_FULL, stepsPerWorker: 0, minSteps: opts.steps },
    sdkCarrier(family, "s", {
      start: () => {
        server0 = serverMs();
        self0 = process.cpuUsage();
      },
      stop: () => {
        const self = process.cpuUsage(self0);
        const server1 = serverMs();
        run.clientMs = (self.user + self.system) / 1000;
        run.serverMs = server0 === null || server1 === null ? null : server1 - server0;
      },
    }),
  );
  family.close();
  if (res.errors > 0 || res.steps_completed !== opts.steps) throw new Error(`completed ${res.steps_completed} of ${opts.steps} steps${res.first_error === undefined ? "" : `: ${res.first_error}`}`);
  return { ...run, steps: res.steps_completed, seconds: res.seconds };
}

async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2));
  const { base, server } = await benchServer(opts.url, "warn");
  try {
    const client = new Client(base);
    console.log(`bench:socket — ${opts.workers} workers, one task of ${opts.steps} steps, frames per tick ${opts.frames.join(" vs ")}, ${opts.rounds} interleaved rounds (+1 warm-up)`);
    const runs: Run[] = [];
    for (let round = 0; round <= opts.rounds; round++) {
      for (const frames of round % 2 === 0 ? opts.frames : [...opts.frames].reverse()) {
        const r = await runOnce(client, opts, frames, server);
        if (round === 0) continue;
        runs.push(r);
        console.log(`  round ${round}  frames/tick ${frames}: ${fmt(r.steps / r.seconds, 0)} steps/s`);
      }
    }
    const rows = opts.frames.map((frames) => {
      const mine = runs.filter((r) => r.framesPerTick === frames);
      const steps = mine.reduce((a, r) => a + r.steps, 0);
      const seconds = mine.reduce((a, r) => a + r.seconds, 0);
      const serverMs = mine.every((r) => r.serverMs !== null) ? mine.reduce((a, r) => a + r.serverMs!, 0) : null;
      const perRound = mine.map((r) => r.steps / r.seconds).sort((a, b) => a - b);
      return [String(frames), fmt(steps / seconds, 0), `${fmt(perRound[0], 0)}–${fmt(perRound.at(-1), 0)}`, fmt(round(mine.reduce((a, r) => a + r.clientMs, 0) / steps, 3), 3), serverMs === null ? "-" : fmt(round(serverMs / steps, 3), 3)];
    });
    console.log(`\n${table(["frames/tick", "steps/s (pooled)", "per round", "client CPU ms/step", "server CPU ms/step"], rows)}`);
  } finally {
    if (server !== null) await stopDevServer(server);
  }
}

if (isMain(import.meta.url)) main().catch(exitWithError);
