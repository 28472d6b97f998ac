/** @module `npm run bench:core`: the core's hot-path cost, measured, not asserted. */
// Prints decide+apply µs/op of claim and complete on a 10-step and a 10,000-step wide DAG (many ready roots plus a fan-in) and their ratio (goal < 1.5:
// the ready index keeps whole-DAG scans off the hot path), and replay throughput of a 50,000-event WAL (goal > 500,000 events/s).
import v8 from "node:v8";
import vm from "node:vm";
import { type Actor, apply, type DagState, DEFAULT_LIMITS, decide, emptyState, replay, type WalEvent, WalEventSchema } from "../../src/core/index.js";

/**
 * A full GC before each timed batch, so the garbage of the untimed setup (a fresh 10,000-step DAG per round)
 * is not collected inside the timed ops. Exposed at run time, as `npm run bench:core` passes no node flags.
 */
v8.setFlagsFromString("--expose-gc");
const collect = vm.runInNewContext("gc") as () => void;

const SESSION = "sess_bench";
const TASK = "task_bench";
const T0 = Date.parse("2026-01-01T00:00:00.000Z");
const orchestrator: Actor = { role: "orchestrator", session_id: SESSION, agent_id: "orch", run_id: "orch_run" };

/** A DAG, its WAL and a counter clock, driven through decide + apply exactly as the service does. */
class Bench {
  state: DagState = emptyState();
  readonly wal: WalEvent[] = [];
  now = T0;
  private ids = 0;

  /** decide + apply; throws on a refusal (the bench only drives valid commands). */
  run(command: Record<string, unknown>, actor: Actor = orchestrator) {
    const d = decide(this.state, command, { actor, now: this.now, newId: () => `id${++this.ids}`, limits: DEFAULT_LIMITS });
    if (!d.ok) throw new Error(`${String(command.type)} refused: ${d.error.code} ${d.error.message}`);
    for (const e of d.events) {
      this.wal.push(e);
      apply(this.state, e);
    }
    return d;
  }

  /** Dispatches a run and returns its worker actor. */
  dispatch(opts: Record<string, unknown> = {}): Actor {
    const d = this.run({ type: "dispatch_worker", ...opts });
    if (d.value.kind !== "dispatched") throw new Error("no run");
    return { role: "worker", session_id: SESSION, task_id: TASK, agent_id: d.value.agent_id, run_id: d.value.run_id };
  }
}

/** A wide DAG: n-1 independent roots (all ready at once) and one fan-in step over every root. */
function wideDag(n: number) {
  const roots = Array.from({ length: n - 1 }, (_, i) => ({ step_id: `r${i}`, title: `Root ${i}`, summary: "", depends_on_step_ids: [] as string[] }));
  return [...roots, { step_id: "fan_in", title: "Fan in", summary: "", depends_on_step_ids: roots.map((r) => r.step_id) }];
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The timed operations and their labels in the printed table. */
const LABELS = {
  claimNext: "claim_next (head of ready queue)   ",
  claimNear: "claim_step (2nd in ready queue)    ",
  claimMiddle: "claim_step (middle of ready queue) ",
  complete: "complete (update_step completed)   ",
} as const;
type Op = keyof typeof LABELS;
const OPS = Object.keys(LABELS) as Op[];

/** Per-op durations in µs, by operation. */
type Samples = Record<Op, number[]>;

/** Times one decide + apply. */
function timed(samples: number[], f: () => void): void {
  const t = performance.now();
  f();
  samples.push((performance.now() - t) * 1000);
}

/**
 * One round: `ops` claims of each kind and their completes on fresh DAGs of `n` steps, each op timed alone as
 * decide + apply (building DAGs and dispatching runs is outside the clock). claim_next takes the head of the
 * ready queue; claim_step names the second ready step, then steps from the middle of the queue; complete is
 * the holder's update_step completed, which re-checks the fan-in's readiness every time.
 */
function round(n: number, ops: number): Samples {
  const samples: Samples = { claimNext: [], claimNear: [], claimMiddle: [], complete: [] };
  // Everything untimed first: the DAGs (as many as `ops` claims of each kind need) and their runs.
  const perDag = Math.min(ops, Math.floor((n - 1) / 3));
  const sets = Array.from({ length: Math.ceil(ops / perDag) }, (_, i) => {
    const b = new Bench();
    b.run({ type: "create_task", task_id: TASK, wal_name: "bench", title: "Bench", steps: wideDag(n) });
    const batch = Math.min(perDag, ops - i * perDag);
    return { b, batch, workers: Array.from({ length: 3 * batch }, () => b.dispatch()), held: [] as [Actor, string][] };
  });
  collect();
  for (const { b, batch, workers, held } of sets) {
    for (let i = 0; i < batch; i++) {
      const w = workers[i]!;
      timed(samples.claimNext, () => {
        const d = b.run({ type: "claim_next" }, w);
        if (d.value.kind === "claimed") held.push([w, d.value.step_id]);
      });
    }
  }
  // claim_step of the second ready step: a worker picking from the first page of its query.
  for (const { b, batch, workers, held } of sets) {
    for (let i = 0; i < batch; i++) {
      const w = workers[batch + i]!;
      // The second entry, read through the iterator: copying a 10,000-entry queue per op would put GC in the timings.
      const walk = b.state.index.ready.get("default")![Symbol.iterator]();
      walk.next();
      const target = walk.next().value as string;
      timed(samples.claimNear, () => b.run({ type: "claim_step", step_id: target }, w));
      held.push([w, target]);
    }
  }
  // claim_step from the middle of the ready queue: the worst place to take a step out of it.
  for (const { b, batch, workers, held } of sets) {
    const queue = b.state.index.ready.get("default")?.ids() ?? [];
    const targets = Array.from({ length: batch }, (_, i) => queue[Math.floor(queue.length / 2) + i - Math.floor(batch / 2)]!);
    for (let i = 0; i < batch; i++) {
      const w = workers[2 * batch + i]!;
      timed(samples.claimMiddle, () => b.run({ type: "claim_step", step_id: targets[i]! }, w));
      held.push([w, targets[i]!]);
    }
  }
  for (const { b, held } of sets) {
    for (const [w, stepId] of held) timed(samples.complete, () => b.run({ type: "update_step", step_id: stepId, status: "completed", result_summary: "done" }, w));
  }
  return samples;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Per op: the median over rounds of each round's mean µs/op, and the median single op over all rounds. */
function measureOps(n: number, ops: number, rounds: number): Record<Op, { mean: number; p50: number }> {
  round(n, Math.min(ops, 200)); // warm-up
  const all = Array.from({ length: rounds }, () => round(n, ops));
  const out = {} as Record<Op, { mean: number; p50: number }>;
  for (const op of OPS) out[op] = { mean: median(all.map((r) => mean(r[op]))), p50: median(all.flatMap((r) => r[op])) };
  return out;
}

/** A realistic WAL of exactly `size` events: a layered 10,000-step DAG worked through by pooled runs. */
function buildWal(size: number): WalEvent[] {
  const b = new Bench();
  const width = 100;
  const steps = Array.from({ length: 10_000 }, (_, i) => ({
    step_id: `s${i}`,
    title: `Step ${i}`,
    summary: `Do step ${i}`,
    depends_on_step_ids: i < width ? [] : [`s${i - width}`, `s${(i - width) - ((i - width) % width) + ((i * 7) % width)}`],
  }));
  b.run({ type: "create_task", task_id: TASK, wal_name: "bench", title: "Bench", steps });
  const workers = Array.from({ length: 8 }, () => b.dispatch({ max_steps: 10_000 }));
  for (let i = 0; b.wal.length < size; i++) {
    const w = workers[i % workers.length]!;
    b.now += 10;
    const d = b.run({ type: "claim_next" }, w);
    if (d.value.kind !== "claimed") throw new Error("the bench DAG ran dry");
    const stepId = d.value.step_id;
    b.run({ type: "update_step", step_id: stepId, status: "running" }, w);
    b.run({ type: "append_progress", phase: "work", summary: "halfway", counters: { done: 1 } }, w);
    b.run({ type: "update_step", step_id: stepId, status: "completed", result_summary: "done", artifact_ids: [`a_${stepId}`] }, w);
  }
  return b.wal.slice(0, size);
}

function measureReplay(wal: WalEvent[], rounds: number): { replay: number; parseAndReplay: number } {
  const lines = wal.map((e) => JSON.stringify(e));
  replay(wal);
  const replayRates: number[] = [];
  const parseRates: number[] = [];
  for (let r = 0; r < rounds; r++) {
    collect();
    let t = performance.now();
    replay(wal);
    replayRates.push(wal.length / ((performance.now() - t) / 1000));
    collect();
    t = performance.now();
    replay(lines.map((line) => WalEventSchema.parse(JSON.parse(line))));
    parseRates.push(wal.length / ((performance.now() - t) / 1000));
  }
  return { replay: median(replayRates), parseAndReplay: median(parseRates) };
}

const fmt = (x: number, digits = 2) => x.toFixed(digits).padStart(8);
const goal = (ok: boolean) => (ok ? "meets goal" : "MISSES goal");

/** Runs the benchmark and prints the figures. */
function main(): void {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 9);
  const ops = Number(process.env.BENCH_OPS ?? 1_000);
  console.log(`core bench: node ${process.version}; decide + apply per op; ${ops} ops of each kind per round; median of ${rounds} rounds`);
  const small = measureOps(10, ops, rounds);
  const large = measureOps(10_000, ops, rounds);
  console.log("\nµs/op (round mean, median of rounds)   10 steps   10,000 steps     ratio   | single-op p50: 10 / 10,000 / ratio");
  for (const op of OPS) {
    const ratio = large[op].mean / small[op].mean;
    const p50Ratio = large[op].p50 / small[op].p50;
    console.log(`${LABELS[op]}    ${fmt(small[op].mean)}    ${fmt(large[op].mean)}   ${fmt(ratio)} ${ratio < 1.5 ? "ok  " : "MISS"} | ${fmt(small[op].p50)} / ${fmt(large[op].p50)} / ${fmt(p50Ratio)}`);
  }
  console.log("(goal: ratio < 1.5)");
  const wal = buildWal(50_000);
  const rates = measureReplay(wal, rounds);
  console.log(`\nreplay of a ${wal.length.toLocaleString("en")}-event WAL (10,000-step DAG):  ${fmt(rates.replay, 0)} events/s  ${goal(rates.replay > 500_000)} (> 500,000)`);
  console.log(`JSON.parse + WalEventSchema + replay, same WAL:    ${fmt(rates.parseAndReplay, 0)} events/s  (for reference)`);
}

main();
