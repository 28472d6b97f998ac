/** @module `npm run bench:socket`: the command socket alone, long enough to see its steady state, with the SDK's frames per tick compared in interleaved rounds (the same minutes of the same machine for each). */
// A round: per frames-per-tick value (1 and 3), the socket step scenario of 32 workers on one fresh task of `--steps` steps; steps/s and CPU ms per
// step of this process and of the dev server's process group. Prints; writes nothing.
import WebSocket from "ws";
import { RuntimeClient, type WebSocketConstructor } from "../../src/client/index.js";
import { defaultAdminToken, withBenchServer } from "../dev-server.js";
import { parseCli, run } from "./harness/cli.js";
import { Client } from "./harness/http-client.js";
import { groupCpuMs, round } from "./harness/meter.js";
import { fmt, table } from "./harness/report.js";
import { sdkCarrier } from "./scenarios/group-commit.js";
import { PLANS, stepScenario } from "./scenarios/steps.js";

run(async () => {
  const opts = { ...parseCli("usage: npm run bench:socket -- [--steps 4800] [--rounds 5] [--url http://127.0.0.1:8787]", { steps: 4_800, rounds: 5, url: null as string | null }), workers: 32, frames: [1, 3] };
  await withBenchServer(opts.url, {}, async (base, server) => {
    const serverMs = () => groupCpuMs(server?.child?.pid)?.ms ?? null;
    /** One task to the end over the socket with `framesPerTick`. */
    const runOnce = async (client: Client, framesPerTick: number) => {
      const family = new RuntimeClient({ baseUrl: client.base, socket: { WebSocket: WebSocket as unknown as WebSocketConstructor, framesPerTick } });
      let self0 = process.cpuUsage();
      let server0: number | null = null;
      const r = { framesPerTick, steps: 0, seconds: 0, clientMs: 0, serverMs: null as number | null };
      const window = {
        start: () => {
          server0 = serverMs();
          self0 = process.cpuUsage();
        },
        stop: () => {
          const self = process.cpuUsage(self0);
          const server1 = serverMs();
          r.clientMs = (self.user + self.system) / 1000;
          r.serverMs = server0 === null || server1 === null ? null : server1 - server0;
        },
      };
      const res = await stepScenario(client, defaultAdminToken(), opts.workers, 1, { ...PLANS.full, stepsPerWorker: 0, minSteps: opts.steps }, sdkCarrier(family, "s", window));
      family.close();
      if (res.errors > 0 || res.steps_completed !== opts.steps) throw new Error(`completed ${res.steps_completed} of ${opts.steps} steps${res.first_error === undefined ? "" : `: ${res.first_error}`}`);
      return { ...r, steps: res.steps_completed, seconds: res.seconds };
    };
    const client = new Client(base);
    console.log(`bench:socket — ${opts.workers} workers, one task of ${opts.steps} steps, frames per tick ${opts.frames.join(" vs ")}, ${opts.rounds} interleaved rounds (+1 warm-up)`);
    const runs: Awaited<ReturnType<typeof runOnce>>[] = [];
    for (let rnd = 0; rnd <= opts.rounds; rnd++) {
      for (const frames of rnd % 2 === 0 ? opts.frames : [...opts.frames].reverse()) {
        const r = await runOnce(client, frames);
        if (rnd === 0) continue;
        runs.push(r);
        console.log(`  round ${rnd}  frames/tick ${frames}: ${fmt(r.steps / r.seconds, 0)} steps/s`);
      }
    }
    const rows = opts.frames.map((frames) => {
      const mine = runs.filter((r) => r.framesPerTick === frames);
      const sum = (f: (r: (typeof mine)[number]) => number) => mine.reduce((a, r) => a + f(r), 0);
      const steps = sum((r) => r.steps);
      const perRound = mine.map((r) => r.steps / r.seconds).sort((a, b) => a - b);
      const server = mine.every((r) => r.serverMs !== null) ? fmt(round(sum((r) => r.serverMs!) / steps, 3), 3) : "-";
      return [String(frames), fmt(steps / sum((r) => r.seconds), 0), `${fmt(perRound[0], 0)}–${fmt(perRound.at(-1), 0)}`, fmt(round(sum((r) => r.clientMs) / steps, 3), 3), server];
    });
    console.log(`\n${table(["frames/tick", "steps/s (pooled)", "per round", "client CPU ms/step", "server CPU ms/step"], rows)}`);
  });
});
