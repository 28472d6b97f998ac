/** @module bench:session's goals from one run's figures (sessionGoals), and its in-flight pool. */
import { describe, expect, it } from "vitest";
import { pool, sessionGoals, type SideResults, type SizeFigures } from "../../scripts/bench/scenarios/session.js";

const size = (tasks: number, snapshotMs: number, snapshotKiB: number): SizeFigures => ({ tasks, seeded: 0, snapshot_p50_ms: snapshotMs, snapshot_bytes: snapshotKiB * 1024, list_p50_ms: 5, graph_p50_ms: 5 });

const side = (sizes: SizeFigures[], at16: number, requestsPerS: number | null, newObjectsPerS: number | null = null): SideResults => ({
  sizes, creates: [{ in_flight: 1, per_s: 20 }, { in_flight: 16, per_s: at16 }], new_objects: newObjectsPerS === null ? null : { per_s: newObjectsPerS }, active: { active_tasks: 1_000, session_requests_per_s: requestsPerS },
});

describe("sessionGoals", () => {
  it("Should hold the largest size's snapshot to 1.5× the 1,000-task one and 64 KiB, creates to 3× the baseline's, pushes to one per task per interval", () => {
    const now = side([size(100, 2, 10), size(1_000, 4, 20), size(100_000, 5, 30)], 300, 900, 330);
    const goals = sessionGoals(now, side([size(1_000, 40, 340)], 90, null), 1);
    expect(goals.map((g) => [g.value, g.met])).toEqual([[1.25, true], [30, true], [3.333, true], [900, true], [0.909, true]]);
    expect(goals[0]!.name).toBe("snapshot p50 at 100000 ÷ at 1000 tasks");
  });

  it("Should fail the goals a run misses, and leave unmeasured ones open (no baseline, no counter, one size)", () => {
    const missed = sessionGoals(side([size(1_000, 40, 340), size(10_000, 400, 3_400)], 200, 1_500, 400), side([], 90, null), 1);
    expect(missed.map((g) => g.met)).toEqual([false, false, false, false, false]);
    const open = sessionGoals(side([size(1_000, 4, 20)], 300, null), null, 2);
    expect(open.map((g) => g.met)).toEqual([null, true, null, null, null]);
    expect(open[3]!.target).toBe(500);
  });
});

describe("pool", () => {
  it("Should run every index once with at most the given number in flight", async () => {
    const seen: number[] = [];
    let inFlight = 0;
    let most = 0;
    await pool(25, 4, async (i) => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((r) => setTimeout(r, 1));
      seen.push(i);
      inFlight--;
    });
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: 25 }, (_, i) => i));
    expect(most).toBe(4);
  });
});
