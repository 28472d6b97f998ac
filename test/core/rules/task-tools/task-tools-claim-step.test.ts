/**
 * Task tools (docs/model.md "Tools"): the rules of agent.task_claim_step. Every rejected command is checked to write nothing.
 */
import { describe, expect, it } from "vitest";
import { observer, orchestrator, T0 } from "../../harness.js";
import { types, payload, LEASE_MS, iso, systemCaller, rejectsAs, st, base, byType } from "../support.js";

describe("Task Tools", () => {
  describe("agent.task_claim_step", () => {
    it.each([
      ["the orchestrator", orchestrator],
      ["an observer", observer],
      ["a system caller", systemCaller],
    ])("is for worker runs: %s gets tool_not_available", (_n, actor) => {
      const h = base();
      rejectsAs(h, { type: "claim_step", step_id: "a" }, actor, "tool_not_available");
      rejectsAs(h, { type: "claim_next" }, actor, "tool_not_available");
    });

    it("a worker run claims only within the task its dispatch named", () => {
      const h = base();
      const w = h.dispatch();
      rejectsAs(h, { type: "claim_step", step_id: "a" }, { ...w, task_id: "task_other" }, "permission_denied");
      rejectsAs(h, { type: "claim_next" }, { ...w, task_id: "task_other" }, "permission_denied");
      rejectsAs(h, { type: "claim_step", step_id: "a" }, { ...w, agent_id: "impostor" }, "permission_denied");
    });

    it("a claim is atomic: of two runs claiming one step only one wins", () => {
      const h = base();
      const w1 = h.dispatch();
      const w2 = h.dispatch();
      // Both decide against the same state; the first to commit wins and the second sees the lease.
      h.ok({ type: "claim_step", step_id: "a" }, w1);
      const e = rejectsAs(h, { type: "claim_step", step_id: "a" }, w2, "step_already_claimed");
      expect(e.details).toMatchObject({ step_id: "a", lease_expires_at: iso(T0 + LEASE_MS) });
      expect(byType(h.wal, "task_step_claimed")).toHaveLength(1);
      expect(st(h, "a").claimed_by_run_id).toBe(w1.run_id);
    });

    it("a claim sets claimed_by_agent_id, claimed_by_run_id, lease_expires_at and status claimed, and writes task_step_claimed", () => {
      const h = base();
      h.now = T0 + 1234;
      const w = h.dispatch({ agent_id: "alice" });
      const d = h.ok({ type: "claim_step", step_id: "c" }, w);
      expect(h.types(d)).toEqual(["task_step_claimed"]);
      expect(d.events[0]).toMatchObject({ step_id: "c", payload: { run_id: w.run_id, agent_id: "alice", lease_expires_at: iso(T0 + 1234 + LEASE_MS), attempt_ordinal: 1 } });
      expect(d.value).toMatchObject({ kind: "claimed", step_id: "c" });
      expect(st(h, "c")).toMatchObject({ status: "claimed", claimed_by_agent_id: "alice", claimed_by_run_id: w.run_id, lease_expires_at: iso(T0 + 1234 + LEASE_MS) });
    });
  });
});
