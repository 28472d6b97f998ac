/**
 * @module `npm run bench:storage`'s scenarios: the command socket against BullMQ on two Redis durabilities (AOF
 * fsync every second / before each answer), interleaved round by round, with the dev server's CPU per step (and,
 * given, a second checkout's server in the same rounds); then the figures of the storage table, each with its goal.
 */
import type { Client } from "../harness/http-client.js";
import { round } from "../harness/meter.js";
import type { Appendfsync } from "../harness/redis-server.js";
import { fmt, type Table } from "../harness/report.js";
import { jobsProblem, type Peer, warmPeer, type WorkerModel } from "./bullmq.js";
import { type JobsResult, layout, mergeJobs, stepScenario as jobsScenario } from "./bullmq-jobs.js";
import type { LoadResult } from "./floor.js";
import { type Measured, measuredScenario, mergeMeasured, stepLine } from "./group-commit.js";
import type { RecoverySection } from "./recovery.js";
import { type Plan, stepProblem } from "./steps.js";

/** A server of ours the rounds run against: this checkout's, or the baseline checkout's; `pgid` its process group (null: its CPU is not measured). */
export interface Target { name: "this" | "baseline" | "ceiling"; client: Client; pgid: number | null }

/** A BullMQ peer on its redis-server, named by its appendfsync. */
export interface PeerSlot { appendfsync: Appendfsync; peer: Peer }

/**
 * Sizes of the rounds. Each run is one fresh task (or BullMQ queue) of max(stepsPerWorker × W, minSteps) steps (jobs);
 * `frames`: the SDK's frames per tick tried at more than one worker (a lone worker has one command per tick, so it
 * runs the first only); `http`: the step scenario's plan otherwise (its time-out).
 */
export interface RoundsPlan { rounds: number; concurrencies: number[]; stepsPerWorker: number; minSteps: number; frames: number[]; http: Plan }

/** One measured run of a series in a round. */
export interface RoundRun { round: number; workers: number; series: string; per_s: number; problem: boolean; ours?: Measured; peer?: JobsResult }

/** The BullMQ worker models worth running at `workers` on one queue (one when both lay the workers out the same way). */
function modelsAt(workers: number): WorkerModel[] {
  return JSON.stringify(layout("workers", workers, 1)) === JSON.stringify(layout("concurrency", workers, 1)) ? ["concurrency"] : ["concurrency", "workers"];
}

/** The name of one of our series (`this f1`) and of a peer's (`bullmq-always workers`). */
export const oursSeries = (target: Target["name"], framesPerTick: number) => `${target} f${framesPerTick}`;
export const peerSeries = (appendfsync: Appendfsync, model: WorkerModel) => `bullmq-${appendfsync} ${model}`;

/**
 * Warm-up (round 0, not kept: every target's socket path and JIT, every peer's scripts), then `plan.rounds` rounds;
 * in each, at each concurrency: ours (every target and frames per tick, their order reversed every other round),
 * then each peer in turn (both worker models). Every run is on a fresh task or fresh queue.
 */
export async function socketRounds(targets: Target[], peers: PeerSlot[], plan: RoundsPlan, adminToken: string, log: (line: string) => void): Promise<RoundRun[]> {
  const sized = { ...plan.http, stepsPerWorker: plan.stepsPerWorker, minSteps: plan.minSteps };
  for (const t of targets) await measuredScenario(t.client, adminToken, Math.max(...plan.concurrencies), 1, { ...plan.http, stepsPerWorker: 5, minSteps: 160 }, t.pgid, "socket");
  for (const p of peers) await warmPeer(p.peer);
  const runs: RoundRun[] = [];
  for (let r = 1; r <= plan.rounds; r++) {
    const turn = <T>(xs: readonly T[]) => (r % 2 === 1 ? [...xs] : [...xs].reverse());
    for (const c of plan.concurrencies) {
      log(`round ${r}/${plan.rounds}, ${c} worker(s), one task:`);
      for (const t of turn(targets)) {
        for (const f of c === 1 ? plan.frames.slice(0, 1) : turn(plan.frames)) {
          const m = await measuredScenario(t.client, adminToken, c, 1, sized, t.pgid, "socket", f);
          const series = oursSeries(t.name, f);
          log(stepLine(series, m));
          runs.push({ round: r, workers: c, series, per_s: m.steps_per_s, problem: stepProblem(m), ours: m });
        }
      }
      for (const { appendfsync, peer } of peers) {
        for (const model of modelsAt(c)) {
          const j = await peer.guard(jobsScenario({ ...peer.ctx, plan: { ...peer.ctx.plan, stepsPerWorker: plan.stepsPerWorker, minSteps: plan.minSteps } }, model, c, 1));
          const series = peerSeries(appendfsync, model);
          log(`  ${series.padEnd(26)} ${String(c).padStart(2)} workers  ${j.jobs_completed}/${j.jobs_planned} jobs in ${fmt(j.seconds, 2)} s = ${fmt(j.jobs_per_s).padStart(7)} jobs/s  CPU/job redis ${fmt(j.cpu_ms_per_job.redis, 3)} node ${fmt(j.cpu_ms_per_job.node, 3)} ms${j.errors > 0 ? `  errors ${j.errors}: ${j.first_error}` : ""}${j.timed_out ? "  TIMED OUT" : ""}`);
          runs.push({ round: r, workers: c, series, per_s: j.jobs_per_s, problem: jobsProblem(j), peer: j });
        }
      }
    }
  }
  return runs;
}

/** A series pooled over its rounds: steps (jobs) over time summed, each round's rate, CPU ms per step (ours: the dev server's group and this process; BullMQ: redis-server and this process). */
export interface Pooled { workers: number; series: string; per_s: number; per_round: number[]; server_cpu_ms_per_step: number | null; client_cpu_ms_per_step: number; problems: number; result: Measured | JobsResult }

/** Every series of `runs` pooled. */
export function pool(runs: RoundRun[]): Pooled[] {
  const keys = [...new Set(runs.map((r) => `${r.workers}|${r.series}`))];
  return keys.map((key) => {
    const mine = runs.filter((r) => `${r.workers}|${r.series}` === key);
    const [first] = mine as [RoundRun];
    const base = { workers: first.workers, series: first.series, per_round: mine.map((r) => r.per_s), problems: mine.filter((r) => r.problem).length };
    if (first.ours !== undefined) {
      const m = mergeMeasured(mine.map((r) => r.ours!));
      return { ...base, per_s: m.steps_per_s, server_cpu_ms_per_step: m.cpu_per_step.server_ms, client_cpu_ms_per_step: m.cpu_per_step.client_ms, result: m };
    }
    const j = mergeJobs(mine.map((r) => r.peer!));
    return { ...base, per_s: j.jobs_per_s, server_cpu_ms_per_step: j.cpu_ms_per_job.redis, client_cpu_ms_per_step: j.cpu_ms_per_job.node, result: j };
  });
}

/** One target's best series against one BullMQ's best worker model at one concurrency (bench:ceiling). */
export interface CeilingRatio { workers: number; target: Target["name"]; appendfsync: Appendfsync; ours: string | null; peer: string | null; ratio: number | null }

/**
 * For bench:ceiling: at 32 workers and at 1, each of the targets "this" and "ceiling" (its better frames per tick)
 * against each BullMQ (its better worker model), pooled rate over pooled rate; null when a side is missing.
 */
export function ceilingRatios(pooled: Pooled[]): CeilingRatio[] {
  return [32, 1].flatMap((workers) =>
    (["this", "ceiling"] as const).flatMap((target) =>
      (["everysec", "always"] as const).map((appendfsync) => {
        const ours = topSeries(pooled, workers, `${target} `);
        const peer = topSeries(pooled, workers, `bullmq-${appendfsync} `);
        return { workers, target, appendfsync, ours: ours?.series ?? null, peer: peer?.series ?? null, ratio: ours === null || peer === null ? null : round(ours.per_s / peer.per_s, 2) };
      }),
    ),
  );
}

/** A figure of the storage table: its value, each round's (or restart's, or concurrency's) value, its goal, and whether it is met. */
export interface Figure { figure: string; value: number | null; unit: "×" | "ms"; per_round: (number | null)[]; detail: string; goal: { op: "≥" | "≤"; value: number }; met: boolean | null }

function figure(name: string, value: number | null, unit: Figure["unit"], perRound: (number | null)[], detail: string, op: Figure["goal"]["op"], goal: number): Figure {
  const v = value === null || !Number.isFinite(value) ? null : round(value, unit === "ms" ? 3 : 2);
  return { figure: name, value: v, unit, per_round: perRound.map((x) => (x === null || !Number.isFinite(x) ? null : round(x, unit === "ms" ? 3 : 2))), detail, goal: { op, value: goal }, met: v === null ? null : op === "≥" ? v >= goal : v <= goal };
}

/** The best pooled series at `workers` whose name starts with `prefix` (the first found of equal ones), or null. */
function topSeries(pooled: Pooled[], workers: number, prefix: string): Pooled | null {
  return pooled.filter((p) => p.workers === workers && p.series.startsWith(prefix)).reduce<Pooled | null>((a, p) => (a === null || p.per_s > a.per_s ? p : a), null);
}

/** The best pooled series at `workers` whose name starts with `prefix`, and each round's best of the same series. */
function best(pooled: Pooled[], runs: RoundRun[], workers: number, prefix: string): { top: Pooled | null; perRound: number[] } {
  const top = topSeries(pooled, workers, prefix);
  const rounds = [...new Set(runs.map((r) => r.round))];
  const perRound = rounds.map((rnd) => Math.max(...runs.filter((r) => r.round === rnd && r.workers === workers && r.series.startsWith(prefix)).map((r) => r.per_s)));
  return { top, perRound };
}

/** What the storage table is computed from; null where a part did not run. */
export interface StorageParts { runs: RoundRun[]; pooled: Pooled[]; floor: { floor: LoadResult[]; unbatched: Measured[] } | null; recovery: RecoverySection | null }

/** The figures of the storage table, in its order. */
export function storageFigures({ runs, pooled, floor, recovery }: StorageParts): Figure[] {
  const out: Figure[] = [];
  const vs = (workers: number, peer: Appendfsync) => {
    const ours = best(pooled, runs, workers, "this ");
    const them = best(pooled, runs, workers, `bullmq-${peer} `);
    const value = ours.top === null || them.top === null ? null : ours.top.per_s / them.top.per_s;
    const detail = `${fmt(ours.top?.per_s, 0)} (${ours.top?.series ?? "-"}) / ${fmt(them.top?.per_s, 0)} (${them.top?.series.replace(/^bullmq-\w+ /, "") ?? "-"})`;
    return { value, perRound: ours.perRound.map((x, i) => x / them.perRound[i]!), detail };
  };
  if (pooled.length > 0) {
    const top = Math.max(...pooled.map((p) => p.workers));
    const everysec = vs(top, "everysec");
    out.push(figure(`socket steps/s, ${top} workers, 1 task ÷ BullMQ (AOF everysec), best worker model`, everysec.value, "×", everysec.perRound, everysec.detail, "≥", 1.0));
    const always = vs(top, "always");
    out.push(figure("same ÷ BullMQ (AOF always)", always.value, "×", always.perRound, always.detail, "≥", 1.5));
    const ours = best(pooled, runs, top, "this ").top;
    const cpuRounds = runs.filter((r) => r.workers === top && r.series === ours?.series).map((r) => r.ours?.cpu_per_step.server_ms ?? null);
    out.push(figure(`task-object CPU per step at ${top} workers (dev server process group CPU ms / steps, socket)`, ours?.server_cpu_ms_per_step ?? null, "ms", cpuRounds, `${ours?.series ?? "-"}; this process ${fmt(ours?.client_cpu_ms_per_step, 3)} ms`, "≤", 0.06));
    if (pooled.some((p) => p.workers === 1)) {
      const lone = vs(1, "always");
      out.push(figure("lone worker, socket steps/s ÷ BullMQ (AOF always), 1 worker", lone.value, "×", lone.perRound, lone.detail, "≥", 1.0));
    }
  }
  if (recovery !== null) {
    const [small, large] = recovery.wals;
    const value = small !== undefined && large !== undefined ? large.cold_get_ms / small.cold_get_ms : null;
    const perRestart = small === undefined || large === undefined ? [] : large.cold_get_samples_ms.map((x, i) => x / small.cold_get_samples_ms[i]!);
    out.push(figure(`first GET after restart, ${large?.wal_events ?? "?"}-event WAL ÷ same for ${small?.wal_events ?? "?"} events`, value, "×", perRestart, `${fmt(large?.cold_get_ms, 1)} / ${fmt(small?.cold_get_ms, 1)} ms (p50 of ${recovery.restarts.length} restart(s)); control ${fmt(recovery.control.cold_get_ms, 1)} ms`, "≤", 2));
  }
  if (floor !== null) {
    // Per row (workers, tasks): the floor's req/s (its halves pooled) ÷ steps/s, pooled and of each repeat; the figure is the worst row.
    const rows = floor.unbatched.map((u) => {
      const rps = floor.floor.find((f) => f.concurrency === u.workers)!.rps;
      return { u, ratio: rps / u.steps_per_s, perRepeat: (u.repeats ?? [u]).map((x) => rps / x.steps_per_s) };
    });
    const worst = rows.length === 0 ? null : Math.max(...rows.map((r) => r.ratio));
    const perRound = rows.length === 0 ? [] : rows[0]!.perRepeat.map((_, i) => Math.max(...rows.map((r) => r.perRepeat[i] ?? NaN)));
    const detail = rows.map((r) => `${r.u.workers}w/${r.u.tasks}t ${fmt(r.ratio, 2)}`).join(", ");
    out.push(figure("unbatched per-step cost ÷ floor (floor req/s ÷ unbatched steps/s, at 1, 8, 32 workers; the worst row)", worst, "×", perRound, detail, "≤", 1.5));
  }
  return out;
}

/** after ÷ before of steps/s and of server CPU per step, per concurrency and frames per tick, when a baseline ran. */
export function baselineComparison(pooled: Pooled[], runs: RoundRun[]) {
  return pooled
    .filter((p) => p.series.startsWith("this "))
    .flatMap((after) => {
      const before = pooled.find((p) => p.workers === after.workers && p.series === after.series.replace(/^this /, "baseline "));
      if (before === undefined) return [];
      const pairs = [...new Set(runs.map((r) => r.round))].map((rnd) => {
        const at = (series: string) => runs.find((r) => r.round === rnd && r.workers === after.workers && r.series === series)?.per_s ?? NaN;
        return round(at(after.series) / at(before.series), 3);
      });
      const cpu = after.server_cpu_ms_per_step === null || before.server_cpu_ms_per_step === null ? null : round(after.server_cpu_ms_per_step / before.server_cpu_ms_per_step, 3);
      return [{ workers: after.workers, frames_per_tick: Number(after.series.replace(/^this f/, "")), after_steps_per_s: after.per_s, before_steps_per_s: before.per_s, steps_per_s_ratio: round(after.per_s / before.per_s, 3), steps_per_s_ratio_per_round: pairs, after_server_cpu_ms_per_step: after.server_cpu_ms_per_step, before_server_cpu_ms_per_step: before.server_cpu_ms_per_step, server_cpu_ratio: cpu }];
    });
}

/** The tables of a run: the figures with their goals, every series pooled, and (given) after ÷ before. */
export function storageTables(figures: Figure[], pooled: Pooled[], comparison: ReturnType<typeof baselineComparison>, rounds: number): Table[] {
  const value = (f: Figure, x: number | null) => (x === null ? "-" : f.unit === "ms" ? `${fmt(x, 3)} ms` : `${fmt(x, 2)}×`);
  const tables: Table[] = [
    {
      title: `bench:storage — the storage table (${rounds} interleaved round(s); per round: each round's value, each restart's for recovery, each repeat's worst row for the floor)`,
      headers: ["figure", "measured", "per round", "goal", "met", "from"],
      rows: figures.map((f) => [f.figure, value(f, f.value), f.per_round.map((x) => (x === null ? "-" : fmt(x, f.unit === "ms" ? 3 : 2))).join(" "), `${f.goal.op} ${f.unit === "ms" ? `${f.goal.value} ms` : `${f.goal.value}`}`, f.met === null ? "?" : f.met ? "yes" : "NO", f.detail]),
    },
    {
      title: "every series pooled (ours: steps/s of one task over the command socket, fN = frames per tick; BullMQ: jobs/s of one queue; CPU ms per step: dev server group or redis-server / this process)",
      headers: ["series", "workers", "per s (pooled)", "per round", "server CPU ms/step", "client CPU ms/step", "problems"],
      rows: pooled.map((p) => [p.series, String(p.workers), fmt(p.per_s, 0), p.per_round.map((x) => fmt(x, 0)).join(" "), fmt(p.server_cpu_ms_per_step, 3), fmt(p.client_cpu_ms_per_step, 3), String(p.problems)]),
    },
  ];
  if (comparison.length > 0) {
    tables.push({
      title: "this checkout (after) ÷ the baseline checkout (before), the same rounds",
      headers: ["workers", "frames/tick", "after steps/s", "before steps/s", "after÷before", "per round", "after server CPU ms/step", "before", "after÷before"],
      rows: comparison.map((c) => [String(c.workers), String(c.frames_per_tick), fmt(c.after_steps_per_s, 0), fmt(c.before_steps_per_s, 0), `${fmt(c.steps_per_s_ratio, 3)}×`, c.steps_per_s_ratio_per_round.map((x) => fmt(x, 2)).join(" "), fmt(c.after_server_cpu_ms_per_step, 3), fmt(c.before_server_cpu_ms_per_step, 3), c.server_cpu_ratio === null ? "-" : `${fmt(c.server_cpu_ratio, 3)}×`]),
    });
  }
  return tables;
}
