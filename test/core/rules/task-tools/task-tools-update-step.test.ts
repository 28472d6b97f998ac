/**
 * Task tools (docs/model.md "Tools"): the rules of agent.task_update_step. Every rejected command is checked to write nothing.
 */
import { describe, expect, it } from "vitest";
import { nextDeadline } from "../../../../src/core/index.js";
import { Harness, orchestrator, step, T0 } from "../../harness.js";
import { types, payload, LEASE_MS, iso, rejectsAs, typesOf, st, runOf, attemptsOf, base, byType } from "../support.js";

describe("Task Tools", () => {
  describe("agent.task_update_step", () => {
    it("a worker may update only the step its own run holds", () => {
      const h = base();
      const w1 = h.claimWith("a");
      const w2 = h.claimWith("c");
      rejectsAs(h, { type: "update_step", step_id: "c", status: "running" }, w1, "permission_denied");
      rejectsAs(h, { type: "update_step", step_id: "a", status: "completed" }, w2, "permission_denied");
      rejectsAs(h, { type: "update_step", step_id: "a", status: "completed" }, { ...w1, run_id: w2.run_id }, "permission_denied");
      expect(typesOf(h, { type: "update_step", step_id: "a", status: "running" }, w1)).toEqual(["task_step_started"]);
    });

    it.each(["complete_task", "fail_task", "cancel_task"])("after %s every step update is task_terminal and writes nothing", (close) => {
      const h = new Harness();
      h.create([step("a"), step("b", [], { required: false })]);
      h.complete("a");
      const w = h.dispatch();
      const wLate = { ...w };
      h.ok({ type: close });
      for (const status of ["running", "completed", "failed", "blocked", "cancelled"]) {
        rejectsAs(h, { type: "update_step", step_id: "a", status }, orchestrator, "task_terminal");
        rejectsAs(h, { type: "update_step", step_id: "b", status }, orchestrator, "task_terminal");
        // Completing the task ends its runs (a spent token); a forced stop asks them to cancel (told so).
        rejectsAs(h, { type: "update_step", step_id: "b", status }, wLate, close === "complete_task" ? "unauthorized" : "task_terminal");
      }
      rejectsAs(h, { type: "update_task", ops: [{ op: "update_task", title: "x" }] }, orchestrator, "task_terminal");
    });

    it("only the orchestrator unblocks a step, back to pending (task_step_reopened), then readiness", () => {
      const h = new Harness();
      h.create([step("r"), step("a", ["r"])]);
      h.complete("r");
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "blocked" }, w);
      rejectsAs(h, { type: "update_step", step_id: "a", status: "running" }, orchestrator, "invalid_transition");
      const d = h.ok({ type: "update_task", ops: [{ op: "reopen_step", step_id: "a", reason: "creds added" }] });
      expect(h.types(d)).toEqual(["task_updated", "task_step_reopened", "task_step_ready"]);
      expect(h.wal.at(-2)).toMatchObject({ event_type: "task_step_reopened", step_id: "a", payload: { reason: "creds added" } });
      expect(h.status("a")).toBe("ready");
    });

    it("non-terminal updates renew the lease to now + step_lease_timeout_ms", () => {
      const h = base();
      const w = h.claimWith("a");
      expect(st(h, "a").lease_expires_at).toBe(iso(T0 + LEASE_MS));
      h.now = T0 + 10_000;
      const d1 = h.ok({ type: "update_step", step_id: "a", status: "claimed" }, w);
      expect(d1.events[0]!.payload).toMatchObject({ lease_expires_at: iso(T0 + 10_000 + LEASE_MS) });
      expect(st(h, "a").lease_expires_at).toBe(iso(T0 + 10_000 + LEASE_MS));
      h.now = T0 + 30_000;
      h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      expect(st(h, "a").lease_expires_at).toBe(iso(T0 + 30_000 + LEASE_MS));
      h.now = T0 + 50_000;
      h.ok({ type: "update_step", step_id: "a", status: "running", result_summary: "progress" }, w);
      expect(st(h, "a").lease_expires_at).toBe(iso(T0 + 50_000 + LEASE_MS));
      expect(nextDeadline(h.state)).toBe(T0 + 50_000 + LEASE_MS);
    });

    it.each([
      ["blocked", "blocked"],
      ["completed", "completed"],
      ["failed", "failed"],
      ["cancelled", "cancelled"],
    ])("writing %s ends the lease and the claim", (to, attempt) => {
      const h = base();
      const w = h.claimWith("c");
      h.ok({ type: "update_step", step_id: "c", status: "running" }, w);
      h.ok({ type: "update_step", step_id: "c", status: to }, w);
      expect(st(h, "c")).toMatchObject({ status: to, claimed_by_agent_id: null, claimed_by_run_id: null, lease_expires_at: null, current_attempt_id: null });
      expect(runOf(h, w).current_step_id).toBeNull();
      expect(attemptsOf(h, "c")[0]!.status).toBe(attempt);
      expect(nextDeadline(h.state)).toBeNull();
      h.now = T0 + 10 * LEASE_MS;
      expect(h.ok({ type: "reconcile_leases" }).events).toEqual([]);
    });

    it("claimed → running writes task_step_started, and only that transition does", () => {
      const h = base();
      const w = h.claimWith("a");
      const d = h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      expect(h.types(d)).toEqual(["task_step_started"]);
      expect(d.events[0]).toMatchObject({ step_id: "a", payload: { lease_expires_at: iso(T0 + LEASE_MS) } });
      expect(typesOf(h, { type: "update_step", step_id: "a", status: "running" }, w)).toEqual(["task_step_updated"]);
      rejectsAs(h, { type: "update_step", step_id: "a", status: "claimed" }, w, "invalid_transition");
      expect(byType(h.wal, "task_step_started")).toHaveLength(1);
    });

    it("non-terminal updates write task_step_updated", () => {
      const h = base();
      const w = h.claimWith("a");
      const d1 = h.ok({ type: "update_step", step_id: "a", status: "claimed", result_summary: "looking" }, w);
      expect(h.types(d1)).toEqual(["task_step_updated"]);
      h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      const d2 = h.ok({ type: "update_step", step_id: "a", status: "running", artifact_ids: ["log_1"] }, w);
      expect(h.types(d2)).toEqual(["task_step_updated"]);
      expect(d2.events[0]!.payload).toEqual({ lease_expires_at: iso(T0 + LEASE_MS), result_summary: null, artifact_ids: ["log_1"] });
      expect(st(h, "a")).toMatchObject({ status: "running", result_summary: "looking", artifact_ids: ["log_1"] });
    });

    it("a change to blocked writes task_step_blocked", () => {
      const h = base();
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      const attemptId = st(h, "a").current_attempt_id;
      const d = h.ok({ type: "update_step", step_id: "a", status: "blocked", reason: "why", result_summary: "half" }, w);
      expect(h.types(d)).toEqual(["task_step_blocked"]);
      expect(d.events[0]!.payload).toEqual({ reason: "why", result_summary: "half", artifact_ids: null, attempt_id: attemptId, run_id: w.run_id });
    });
  });
});
