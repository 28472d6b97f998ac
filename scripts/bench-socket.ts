/**
 * @module `npm run bench:socket`: the command socket alone, long enough to see its steady state, with the
 * SDK's frames per tick compared in interleaved rounds (the same minutes of the same machine for each).
 *
 * Usage:
 *   npm run bench:socket                                  # starts its own dev server; 32 workers, one task
 *   npm run bench:socket -- --frames 1,2,3 --rounds 5     # frames per tick to compare, rounds of each
 *   npm run bench:socket -- --workers 8 --steps 2400 --url http://127.0.0.1:8787
 *
 * A round: per frames-per-tick value, a fresh task of `--steps` independent steps and `--workers` pooled
 * runs, each a `WorkerClient` of one socket-carrying `RuntimeClient` (ws, as `npm run bench`), looping
 * `updateStep(…, {status: "completed", claim_next: true})` until nothing is left. Steps/s = steps / time
 * from the first claim to the last answer; CPU ms per step of this process and of the dev server's process
 * group (only when this script started the server). Prints a table; writes nothing.
 */
import { performance } from "node:perf_hooks";
import WebSocket from "ws";
import { RuntimeClient, type WebSocketConstructor } from "../src/client/index.js";
import { eachArg, exitWithError, fmt, groupCpuMs, isMain, round, stepsOf, table } from "./bench-common.js";
import { type DevServer, defaultAdminToken, startDevServer, stopDevServer } from "./dev-server.js";

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
  return opts;
}

interface Run {
  framesPerTick: number;
  steps: number;
  seconds: number;
  clientMs: number;
  serverMs: number | null;
}

/** One task to the end over the socket with `framesPerTick`. */
async function runOnce(base: string, admin: RuntimeClient, opts: Options, framesPerTick: number, server: DevServer | null): Promise<Run> {
  const session = await admin.createSession({});
  const orch = admin.withToken(session.orchestrator.token);
  const taskId = `socket-${framesPerTick}-${Date.now().toString(36)}`;
  await orch.createTask(session.session_id, { task_id: taskId, wal_name: taskId, title: "Socket bench", summary: "", steps: stepsOf(opts.steps) });
  const task = { sessionId: session.session_id, taskId };
  const family = new RuntimeClient({ baseUrl: base, socket: { WebSocket: WebSocket as unknown as WebSocketConstructor, framesPerTick } });
  const workers = [];
  for (let i = 0; i < opts.workers; i++) {
    const run = await orch.dispatchWorker(task, { agent_id: `bench-w${i}`, max_steps: opts.steps });
    workers.push(family.worker(task, { token: run.token, runId: run.runId, agentId: run.agentId ?? `bench-w${i}` }));
  }
  const server0 = groupCpuMs(server?.child?.pid ?? null)?.ms ?? null;
  const self0 = process.cpuUsage();
  const t0 = performance.now();
  let steps = 0;
  await Promise.all(
    workers.map(async (w) => {
      const claim = await w.claimNext();
      let current = claim.no_step_claimed === true ? null : claim.step.step_id;
      while (current !== null) {
        const answer = await w.updateStep(current, { status: "completed", result_summary: "done", claim_next: true });
        steps++;
        const next = answer.next;
        current = next !== undefined && "step" in next && next.step !== undefined ? next.step.step_id : null;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const self = process.cpuUsage(self0);
  const server1 = groupCpuMs(server?.child?.pid ?? null)?.ms ?? null;
  family.close();
  if (steps !== opts.steps) throw new Error(`completed ${steps} of ${opts.steps} steps`);
  return { framesPerTick, steps, seconds, clientMs: (self.user + self.system) / 1000, serverMs: server0 === null || server1 === null ? null : server1 - server0 };
}

async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2));
  const server = opts.url === null ? await startDevServer({ logLevel: "warn" }) : null;
  const base = opts.url ?? server!.base;
  try {
    const admin = new RuntimeClient({ baseUrl: base, token: defaultAdminToken(), batching: false });
    console.log(`bench:socket — ${opts.workers} workers, one task of ${opts.steps} steps, frames per tick ${opts.frames.join(" vs ")}, ${opts.rounds} interleaved rounds (+1 warm-up)`);
    const runs: Run[] = [];
    for (let round = 0; round <= opts.rounds; round++) {
      for (const frames of round % 2 === 0 ? opts.frames : [...opts.frames].reverse()) {
        const r = await runOnce(base, admin, opts, frames, server);
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
