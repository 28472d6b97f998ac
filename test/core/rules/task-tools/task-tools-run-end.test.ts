/**
 * Task tools (docs/model.md "Tools"): the rules of the worker run end fallback. Every rejected command is checked to write nothing.
 */
import { describe, expect, it } from "vitest";
import { nextDeadline, replay } from "../../../../src/core/index.js";
import { T0 } from "../../harness.js";
import { types, payload, LEASE_MS, rejectsAs, st, runOf, attemptsOf, base } from "../support.js";

describe("Task Tools", () => {
  describe("worker run end fallback", () => {
    it.each([
      ["finished", "worker_finished_without_terminal_step_status", "failed", "finished"],
      ["cancelled", "worker_cancelled", "cancelled", "cancelled"],
      ["timeout", "worker_timeout", "timed_out", "timed_out"],
    ])("a run ending (%s) while still holding a claimed step fails it with %s", (outcome, reason, attempt, runStatus) => {
      const h = base();
      const w = h.claimWith("a");
      const d = h.ok({ type: "finish_run", run_id: w.run_id!, outcome }, w);
      expect(h.types(d)).toEqual(["task_step_failed", "worker_run_ended"]);
      expect(d.events[0]).toMatchObject({ step_id: "a", payload: { reason, result_summary: reason } });
      expect(st(h, "a")).toMatchObject({ status: "failed", status_reason: reason, result_summary: reason, claimed_by_run_id: null, lease_expires_at: null });
      expect(attemptsOf(h, "a")[0]!.status).toBe(attempt);
      expect(runOf(h, w).status).toBe(runStatus);
      expect(replay(h.wal)).toEqual(h.state);
    });

    it("a run the user cancels fails its held step with worker_cancelled", () => {
      const h = base();
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      const d = h.ok({ type: "cancel_run", run_id: w.run_id!, reason: "user stop" });
      expect(h.types(d)).toEqual(["task_step_failed", "worker_run_ended"]);
      expect(d.events[0]!.payload).toMatchObject({ reason: "worker_cancelled", result_summary: "worker_cancelled" });
      expect(d.events[1]!.payload).toMatchObject({ run_id: w.run_id, status: "cancelled", reason: "user stop" });
      rejectsAs(h, { type: "cancel_run", run_id: w.run_id! }, w, "tool_not_available");
    });

    it("a run past its deadline times out: its held step fails with worker_timeout", () => {
      const h = base();
      const w = h.claimWith("a", { timeout_ms: 5_000 });
      h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      expect(nextDeadline(h.state)).toBe(T0 + 5_000);
      h.now = T0 + 4_999;
      expect(h.ok({ type: "reconcile_leases" }).events).toEqual([]);
      h.now = T0 + 5_000;
      const d = h.ok({ type: "reconcile_leases" });
      expect(h.types(d)).toEqual(["task_step_failed", "worker_run_ended"]);
      expect(d.events[0]!.payload).toMatchObject({ reason: "worker_timeout", result_summary: "worker_timeout", attempt_status: "timed_out" });
      expect(runOf(h, w).status).toBe("timed_out");
      expect(attemptsOf(h, "a")[0]!.status).toBe("timed_out");
    });

    it("the fallback is written to the WAL as task_step_failed", () => {
      const h = base();
      const w = h.claimWith("a");
      const before = h.wal.length;
      h.ok({ type: "finish_run", run_id: w.run_id!, outcome: "cancelled" }, w);
      expect(h.wal.slice(before).map((e) => e.event_type)).toEqual(["task_step_failed", "worker_run_ended"]);
      const restored = replay(h.wal);
      expect(restored.steps.get("a")!.status).toBe("failed");
      expect(restored).toEqual(h.state);
    });

    it("the fallback touches only the ending run's own claim, never another worker's", () => {
      const h = base();
      const w1 = h.claimWith("a");
      const w2 = h.claimWith("c");
      // w1 loses its lease; w3 claims a again.
      h.now = T0 + LEASE_MS;
      h.ok({ type: "update_step", step_id: "c", status: "running" }, w2);
      h.ok({ type: "reconcile_leases" });
      const w3 = h.claimWith("a");
      const d = h.ok({ type: "finish_run", run_id: w1.run_id!, outcome: "finished" }, w1);
      expect(h.types(d)).toEqual(["worker_run_ended"]);
      expect(st(h, "a")).toMatchObject({ status: "claimed", claimed_by_run_id: w3.run_id });
      expect(st(h, "c")).toMatchObject({ status: "running", claimed_by_run_id: w2.run_id });
      // And an orchestrator cancelling w2 fails c only.
      const d2 = h.ok({ type: "cancel_run", run_id: w2.run_id! });
      expect(d2.events.map((e) => [e.event_type, e.step_id])).toEqual([["task_step_failed", "c"], ["worker_run_ended", null]]);
      expect(h.status("a")).toBe("claimed");
      // w1's own run has ended: its token is spent.
      rejectsAs(h, { type: "finish_run", run_id: w3.run_id!, outcome: "finished" }, w1, "unauthorized");
    });
  });
});
