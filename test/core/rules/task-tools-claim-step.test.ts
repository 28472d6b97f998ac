/**
 * Seed 003 "Task Tools": the rules of agent.task_claim_step. Every rejected command is checked to write nothing.
 */
import { describe, expect, it } from "vitest";
import { replay } from "../../../src/core/index.js";
import { Harness, observer, orchestrator, step, T0 } from "../harness.js";
import { types, payload, LEASE_MS, iso, systemCaller, rejectsAs, typesOf, q, ids, st, runOf, attemptsOf, base, byType } from "./support.js";

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

    it("one claim per run: a run holding a step gets step_already_claimed_by_run on a second claim", () => {
      const h = base();
      const w = h.claimWith("a");
      const e = rejectsAs(h, { type: "claim_step", step_id: "c" }, w, "step_already_claimed_by_run");
      expect(e.details).toMatchObject({ step_id: "a" });
      rejectsAs(h, { type: "claim_next" }, w, "step_already_claimed_by_run");
      h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      rejectsAs(h, { type: "claim_step", step_id: "d" }, w, "step_already_claimed_by_run");
    });

    it("a single-step run that has finished its claim gets step_already_claimed_by_run again", () => {
      const h = base();
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "completed" }, w);
      rejectsAs(h, { type: "claim_step", step_id: "c" }, w, "step_already_claimed_by_run");
    });

    it("claims only ready, visible, dependency-complete, lease-free steps", () => {
      const h = new Harness();
      h.create([step("a"), step("b", ["a"]), step("g", [], { worker_pool_id: "gpu" }), step("c"), step("k")]);
      h.claimWith("c");
      h.complete("k");
      const w = h.dispatch();
      rejectsAs(h, { type: "claim_step", step_id: "b" }, w, "invalid_transition"); // dependency not completed
      rejectsAs(h, { type: "claim_step", step_id: "g" }, w, "permission_denied"); // other pool
      rejectsAs(h, { type: "claim_step", step_id: "c" }, w, "step_already_claimed"); // live lease
      rejectsAs(h, { type: "claim_step", step_id: "k" }, w, "invalid_transition"); // completed
      rejectsAs(h, { type: "claim_step", step_id: "nope" }, w, "not_found");
      expect(typesOf(h, { type: "claim_step", step_id: "a" }, w)).toEqual(["task_step_claimed"]);
    });

    it("with allowed_step_ids a run claims only steps inside them", () => {
      const h = base();
      const w = h.dispatch({ allowed_step_ids: ["c"] });
      rejectsAs(h, { type: "claim_step", step_id: "a" }, w, "permission_denied");
      rejectsAs(h, { type: "claim_step", step_id: "d" }, w, "permission_denied");
      expect(typesOf(h, { type: "claim_step", step_id: "c" }, w)).toEqual(["task_step_claimed"]);
    });

    it("an allowed step that is not ready yet cannot be claimed, which is no dispatch validation error", () => {
      const h = base();
      const w = h.dispatch({ allowed_step_ids: ["b"] });
      rejectsAs(h, { type: "claim_step", step_id: "b" }, w, "invalid_transition");
      expect(runOf(h, w).status).toBe("active");
      h.complete("a");
      expect(typesOf(h, { type: "claim_step", step_id: "b" }, w)).toEqual(["task_step_claimed"]);
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

    it("losing a claim race is normal: the loser's run is not failed and it claims another step", () => {
      const h = base();
      h.claimWith("a");
      const w = h.dispatch();
      rejectsAs(h, { type: "claim_step", step_id: "a" }, w, "step_already_claimed");
      expect(runOf(h, w)).toMatchObject({ status: "active", claims_used: 0 });
      expect(ids(q(h, w))).toEqual(["c", "d"]);
      expect(typesOf(h, { type: "claim_step", step_id: "c" }, w)).toEqual(["task_step_claimed"]);
    });

    it("no claimable step: no_step_claimed is a normal success without events", () => {
      const h = new Harness();
      h.create([step("a"), step("b", ["a"])]);
      h.claimWith("a");
      const w = h.dispatch();
      const before = h.wal.length;
      const d = h.run({ type: "claim_next" }, w);
      expect(d).toEqual({ ok: true, events: [], value: { kind: "no_step_claimed", reason: "no_ready_step" } });
      expect(h.wal.length).toBe(before);
      expect(runOf(h, w).status).toBe("active");
    });

    it("step_already_claimed and no_step_claimed write nothing to the WAL", () => {
      const h = base();
      h.claimWith("a");
      const w = h.dispatch({ allowed_step_ids: ["a", "b"] });
      rejectsAs(h, { type: "claim_step", step_id: "a" }, w, "step_already_claimed");
      const before = h.wal.length;
      expect(h.ok({ type: "claim_next" }, w).events).toEqual([]);
      expect(h.wal.length).toBe(before);
      expect(replay(h.wal)).toEqual(h.state);
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

    it("a claim does not start the step: only update_step(status=running) does", () => {
      const h = base();
      const w = h.claimWith("a");
      expect(h.status("a")).toBe("claimed");
      expect(h.wal.some((e) => e.event_type === "task_step_started")).toBe(false);
      expect(typesOf(h, { type: "update_step", step_id: "a", status: "running" }, w)).toEqual(["task_step_started"]);
      expect(h.status("a")).toBe("running");
    });

    it.each([
      ["blocked", ["task_step_blocked"]],
      ["completed", ["task_step_completed", "task_step_ready"]],
      ["failed", ["task_step_failed"]],
      ["cancelled", ["task_step_cancelled"]],
    ])("a worker may skip running: claimed goes straight to %s", (to, types) => {
      const h = base();
      const w = h.claimWith("a");
      expect(typesOf(h, { type: "update_step", step_id: "a", status: to }, w)).toEqual(types);
      expect(h.status("a")).toBe(to);
      expect(h.wal.some((e) => e.event_type === "task_step_started")).toBe(false);
    });

    it("a blocked task takes no claim: task_not_dispatchable", () => {
      const h = base();
      const w = h.dispatch();
      h.ok({ type: "block_task" });
      rejectsAs(h, { type: "claim_step", step_id: "a" }, w, "task_not_dispatchable");
      rejectsAs(h, { type: "claim_next" }, w, "task_not_dispatchable");
      rejectsAs(h, { type: "dispatch_worker" }, orchestrator, "task_not_dispatchable");
    });

    describe("pooled runs (dispatch_worker max_steps > 1)", () => {
      it("claim again once the current step is terminal, one at a time", () => {
        const h = base();
        const w = h.dispatch({ max_steps: 3 });
        h.ok({ type: "claim_step", step_id: "a" }, w);
        h.ok({ type: "update_step", step_id: "a", status: "completed" }, w);
        expect(h.ok({ type: "claim_next" }, w).value).toMatchObject({ kind: "claimed", step_id: "b" });
        h.ok({ type: "update_step", step_id: "b", status: "failed" }, w);
        expect(typesOf(h, { type: "claim_step", step_id: "d" }, w)).toEqual(["task_step_claimed"]);
        expect(runOf(h, w)).toMatchObject({ claims_used: 3, current_step_id: "d" });
        expect(attemptsOf(h, "b")[0]!.run_id).toBe(w.run_id);
      });

      it("a second claim while holding a step is step_already_claimed_by_run", () => {
        const h = base();
        const w = h.dispatch({ max_steps: 5 });
        h.ok({ type: "claim_step", step_id: "a" }, w);
        rejectsAs(h, { type: "claim_step", step_id: "c" }, w, "step_already_claimed_by_run");
        rejectsAs(h, { type: "claim_next" }, w, "step_already_claimed_by_run");
        h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
        rejectsAs(h, { type: "claim_step", step_id: "c" }, w, "step_already_claimed_by_run");
      });

      it("a spent budget: claim_step is step_already_claimed_by_run, claim_next is no_step_claimed", () => {
        const h = base();
        const w = h.dispatch({ max_steps: 2 });
        h.ok({ type: "claim_step", step_id: "a" }, w);
        h.ok({ type: "update_step", step_id: "a", status: "completed" }, w);
        h.ok({ type: "claim_step", step_id: "c" }, w);
        h.ok({ type: "update_step", step_id: "c", status: "blocked" }, w);
        const e = rejectsAs(h, { type: "claim_step", step_id: "d" }, w, "step_already_claimed_by_run");
        expect(e.details).toMatchObject({ max_steps: 2 });
        const before = h.wal.length;
        expect(h.run({ type: "claim_next" }, w)).toEqual({ ok: true, events: [], value: { kind: "no_step_claimed", reason: "run_budget_spent" } });
        expect(h.wal.length).toBe(before);
      });
    });
  });
});
