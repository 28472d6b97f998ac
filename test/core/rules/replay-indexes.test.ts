/**
 * Replaying the WAL of scenarios that touch every rule area of the task model rebuilds the live DAG, and the indexes match a rebuild.
 */
import { describe, expect, it } from "vitest";
import { rebuildIndex, replay } from "../../../src/core/index.js";
import { Harness, step } from "../harness.js";
import { upd, setStep, optional, done, put } from "./support.js";

describe("replay and indexes", () => {
  const scenarios: Record<string, (h: Harness) => void> = {
    "complete with optional steps": (h) => {
      h.create([step("a"), step("b", ["a"]), optional("o"), optional("o2", ["o"])]);
      done(h, "a");
      done(h, "b");
      h.ok({ type: "complete_task" });
    },
    "block, reopen, edit and fail": (h) => {
      h.create([step("gate"), step("a"), step("b", ["a"]), step("c", ["a", "b"])]);
      const w = put(h, "a", "running")!;
      h.ok({ type: "block_task" });
      h.ok(upd({ op: "update_step", step_id: "a", fields: { title: "A!", depends_on_step_ids: ["gate"] } }));
      h.ok(setStep("a", "completed", { result_summary: "ok" }), w);
      h.ok({ type: "reopen_task" });
      put(h, "b", "blocked");
      h.ok(upd({ op: "reopen_step", step_id: "b" }, { op: "add_step", step: step("d", ["b"], { worker_pool_id: "gpu" }) }));
      h.claimWith("b");
      h.ok({ type: "fail_task" });
    },
    "delete, cancel, replace, lease expiry and cancel": (h) => {
      h.create([step("a"), step("b", ["a"]), step("c", ["b"]), step("x")]);
      h.ok(upd({ op: "cancel_step", step_id: "x" }, { op: "delete_step", step_id: "x" }));
      put(h, "a", "cancelled");
      h.ok(upd({ op: "add_step", step: step("a2") }, { op: "update_step", step_id: "b", fields: { depends_on_step_ids: ["a2"] } }, { op: "delete_step", step_id: "a" }));
      h.claimWith("a2");
      h.now += 61_000;
      h.ok({ type: "reconcile_leases" });
      done(h, "a2");
      const w = h.claimWith("b");
      h.ok(upd({ op: "add_step", step: step("e") }, { op: "add_dependency", step_id: "b", depends_on_step_id: "e" }));
      h.ok({ type: "cancel_run", run_id: w.run_id });
      h.ok({ type: "cancel_task" });
    },
  };

  it.each(Object.keys(scenarios))("replay(WAL) rebuilds the live DAG and the indexes match a rebuild (%s)", (name) => {
    const h = new Harness();
    scenarios[name]!(h);
    expect(replay(h.wal)).toEqual(h.state);
    expect(rebuildIndex(h.state)).toEqual(h.state.index);
    for (let i = 1; i <= h.wal.length; i++) {
      const partial = replay(h.wal.slice(0, i));
      expect(rebuildIndex(partial)).toEqual(partial.index);
    }
  });
});
