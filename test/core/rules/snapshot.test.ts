/** Snapshots of a task's state (src/core/apply/snapshot.ts): what they hold, when the next one is due, and what they refuse. */
import { describe, expect, it } from "vitest";
import { replay, restoreSnapshot, SNAPSHOT_FORMAT, snapshotInterval, takeSnapshot } from "../../../src/core/index.js";
import { Harness, step } from "../harness.js";

function busy(): Harness {
  const h = new Harness();
  h.create([step("a"), step("b", ["a"]), step("c"), step("d", ["c"])]);
  const w = h.dispatch({ max_steps: 2 });
  h.ok({ type: "claim_step", step_id: "c" }, w);
  h.ok({ type: "update_step", step_id: "c", status: "completed" }, w);
  h.ok({ type: "claim_next" }, w);
  return h;
}

describe("task snapshots", () => {
  it("Should restore, through JSON, the state a snapshot was taken of, and go on replaying from it as the whole WAL does", () => {
    const h = busy();
    const cut = Math.floor(h.wal.length / 2);
    const saved = JSON.parse(JSON.stringify(takeSnapshot(replay(h.wal.slice(0, cut)))));
    expect(saved.last_wal_seq).toBe(cut);
    expect(replay(h.wal.slice(cut), restoreSnapshot(saved))).toEqual(h.state);
    expect(restoreSnapshot(JSON.parse(JSON.stringify(takeSnapshot(h.state))))).toEqual(h.state);
  });

  it("Should refuse a snapshot of another format", () => {
    const saved = { ...takeSnapshot(busy().state), format: SNAPSHOT_FORMAT + 1 };
    expect(() => restoreSnapshot(saved as never)).toThrow(/format/);
  });

  it("Should be due every `every` events, or every record-count events once the DAG holds more records than that", () => {
    const h = busy();
    expect(snapshotInterval(h.state, 1_000)).toBe(1_000);
    // 4 steps, 2 attempts, 1 run.
    expect(snapshotInterval(h.state, 3)).toBe(7);
  });
});
