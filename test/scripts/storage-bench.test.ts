/** @module bench:storage's figures from its rounds: the better series on each side, each round's ratio, the goals, and after ÷ before against a baseline. */
import { describe, expect, it } from "vitest";
import type { Measured } from "../../scripts/bench/scenarios/group-commit.js";
import { baselineComparison, type Pooled, type RoundRun, storageFigures } from "../../scripts/bench/scenarios/storage.js";

/** A run of one series in one round; ours carry their server CPU per step. */
const runOf = (round: number, workers: number, series: string, per_s: number, serverMs = 0.2): RoundRun => ({
  round, workers, series, per_s, problem: false, ...(series.startsWith("bullmq") ? {} : { ours: { cpu_per_step: { client_ms: 0.1, server_ms: serverMs, other_share: null } } as Measured }),
});

/** The runs of one series pooled by hand (the rounds of equal length: the mean rate). */
function pooledOf(runs: RoundRun[]): Pooled[] {
  const keys = [...new Set(runs.map((r) => `${r.workers}|${r.series}`))];
  return keys.map((key) => {
    const mine = runs.filter((r) => `${r.workers}|${r.series}` === key);
    const per = mine.map((r) => r.per_s);
    const server = mine[0]!.ours === undefined ? 0.15 : mine.reduce((a, r) => a + r.ours!.cpu_per_step.server_ms!, 0) / mine.length;
    return { workers: mine[0]!.workers, series: mine[0]!.series, per_s: per.reduce((a, b) => a + b, 0) / per.length, per_round: per, server_cpu_ms_per_step: server, client_cpu_ms_per_step: 0.1, problems: 0, result: {} as Measured };
  });
}

describe("storageFigures", () => {
  const runs = [
    runOf(1, 32, "this f1", 3_000, 0.05), runOf(1, 32, "this f3", 3_300, 0.07), runOf(1, 32, "bullmq-everysec concurrency", 3_000), runOf(1, 32, "bullmq-everysec workers", 2_000), runOf(1, 32, "bullmq-always concurrency", 1_000), runOf(1, 32, "bullmq-always workers", 1_500),
    runOf(2, 32, "this f1", 3_000, 0.05), runOf(2, 32, "this f3", 2_700, 0.07), runOf(2, 32, "bullmq-everysec concurrency", 2_000), runOf(2, 32, "bullmq-everysec workers", 2_000), runOf(2, 32, "bullmq-always concurrency", 1_000), runOf(2, 32, "bullmq-always workers", 1_500),
    runOf(1, 1, "this f1", 300), runOf(1, 1, "bullmq-always concurrency", 400),
    runOf(2, 1, "this f1", 500), runOf(2, 1, "bullmq-always concurrency", 400),
  ];
  const figures = storageFigures({ runs, pooled: pooledOf(runs), floor: null, recovery: null });

  it("Should divide the better of our frames per tick by the better of BullMQ's worker models, pooled, with each round's best against each round's best", () => {
    // Pooled: ours f1 3,000 vs f3 3,000 (equal: the first found stays), BullMQ everysec concurrency 2,500 vs workers 2,000.
    expect(figures[0]).toMatchObject({ value: 1.2, per_round: [1.1, 1.5], goal: { op: "≥", value: 1 }, met: true });
    // BullMQ always: workers 1,500 beats concurrency 1,000.
    expect(figures[1]).toMatchObject({ value: 2, per_round: [2.2, 2], met: true });
  });

  it("Should take the task object's CPU per step from our chosen series and hold it to 0.06 ms", () => {
    expect(figures[2]).toMatchObject({ unit: "ms", value: 0.05, per_round: [0.05, 0.05], goal: { op: "≤", value: 0.06 }, met: true });
  });

  it("Should compare a lone worker with BullMQ's fsync-always peer and miss the goal below 1", () => {
    expect(figures[3]).toMatchObject({ value: 1, per_round: [0.75, 1.25], met: true });
    const slower = runs.map((r) => (r.workers === 1 && r.series === "this f1" ? { ...r, per_s: r.per_s - 100 } : r));
    expect(storageFigures({ runs: slower, pooled: pooledOf(slower), floor: null, recovery: null })[3]).toMatchObject({ value: 0.75, met: false });
  });

  it("Should leave out the recovery and floor figures when those parts did not run, and the socket figures when no round ran", () => {
    expect(figures).toHaveLength(4);
    expect(storageFigures({ runs: [], pooled: [], floor: null, recovery: null })).toEqual([]);
  });
});

describe("baselineComparison", () => {
  it("Should give after ÷ before of steps/s (pooled and per round) and of server CPU per step, per concurrency and frames per tick", () => {
    const runs = [runOf(1, 32, "this f1", 2_000, 0.1), runOf(1, 32, "baseline f1", 1_000, 0.2), runOf(2, 32, "this f1", 3_000, 0.1), runOf(2, 32, "baseline f1", 2_000, 0.2), runOf(1, 32, "bullmq-always concurrency", 900)];
    expect(baselineComparison(pooledOf(runs), runs)).toEqual([
      { workers: 32, frames_per_tick: 1, after_steps_per_s: 2_500, before_steps_per_s: 1_500, steps_per_s_ratio: 1.667, steps_per_s_ratio_per_round: [2, 1.5], after_server_cpu_ms_per_step: 0.1, before_server_cpu_ms_per_step: 0.2, server_cpu_ratio: 0.5 },
    ]);
  });

  it("Should compare nothing without a baseline", () => {
    const runs = [runOf(1, 32, "this f1", 2_000)];
    expect(baselineComparison(pooledOf(runs), runs)).toEqual([]);
  });
});
