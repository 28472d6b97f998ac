/**
 * Seed 003 "Task Tools": the rules of agent.task_query_steps. Every rejected command is checked to write nothing.
 */
import { describe, expect, it } from "vitest";
import { Harness, orchestrator, step, stranger, T0 } from "../harness.js";
import { payload, LEASE_MS, rejectsAs, typesOf, q, ids, qErr, runOf, base, byType } from "./support.js";

describe("Task Tools", () => {
  describe("agent.task_query_steps", () => {
    it("the orchestrator can query any step of an active task", () => {
      const h = new Harness();
      h.create([step("a"), step("b", ["a"]), step("g", [], { worker_pool_id: "gpu" })]);
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      expect(ids(q(h, orchestrator))).toEqual(["a", "b", "g"]);
      expect(q(h, orchestrator).steps.map((s) => s.status)).toEqual(["running", "pending", "ready"]);
    });

    it("a terminal task answers queries read-only and takes no further step update", () => {
      const h = base();
      const w = h.claimWith("a");
      h.ok({ type: "fail_task", reason: "stop" });
      expect(ids(q(h, orchestrator, { include_terminal_steps: true }))).toEqual(["a", "b", "c", "d"]);
      expect(ids(q(h, orchestrator))).toEqual([]);
      expect(ids(q(h, w, { include_terminal_steps: true, statuses: ["failed"] }))).toEqual(["a", "b", "c", "d"]);
      rejectsAs(h, { type: "update_step", step_id: "a", status: "completed" }, w, "task_terminal");
      rejectsAs(h, { type: "update_step", step_id: "c", status: "completed" }, orchestrator, "task_terminal");
      rejectsAs(h, { type: "claim_step", step_id: "c" }, w, "task_terminal");
      rejectsAs(h, { type: "claim_next" }, w, "task_terminal");
      rejectsAs(h, { type: "append_progress", step_id: "a", summary: "late" }, w, "task_terminal");
    });

    it("a worker can query the steps visible to it", () => {
      const h = base();
      const w = h.dispatch();
      const p = q(h, w);
      expect(ids(p)).toEqual(["a", "c", "d"]);
      expect(p.steps.every((s) => s.status === "ready")).toBe(true);
    });

    it("a worker run queries only the task its dispatch named", () => {
      const h = base();
      const w = h.dispatch();
      expect(qErr(h, { ...w, task_id: "task_other" })).toBe("permission_denied");
      expect(qErr(h, { ...w, session_id: "sess_other" })).toBe("permission_denied");
      expect(qErr(h, stranger)).toBe("permission_denied");
    });

    it("filters by several statuses at once", () => {
      const h = base();
      const w = h.claimWith("c");
      h.ok({ type: "update_step", step_id: "c", status: "running" }, w);
      expect(ids(q(h, orchestrator, { statuses: ["pending", "running"] }))).toEqual(["b", "c"]);
      expect(ids(q(h, orchestrator, { statuses: ["ready"] }))).toEqual(["a", "d"]);
      expect(ids(q(h, orchestrator, { statuses: ["claimed", "blocked"] }))).toEqual([]);
    });

    it("filters by worker_pool_id", () => {
      const h = new Harness();
      h.create([step("a"), step("g1", [], { worker_pool_id: "gpu" }), step("b", ["a"]), step("g2", ["a"], { worker_pool_id: "gpu" })]);
      expect(ids(q(h, orchestrator, { worker_pool_id: "gpu" }))).toEqual(["g1", "g2"]);
      expect(ids(q(h, orchestrator, { worker_pool_id: "gpu", statuses: ["ready"] }))).toEqual(["g1"]);
      expect(ids(q(h, orchestrator, { worker_pool_id: "default" }))).toEqual(["a", "b"]);
      // A worker cannot widen its pool by asking for another one.
      const w = h.dispatch();
      expect(ids(q(h, w, { worker_pool_id: "gpu" }))).toEqual([]);
    });

    it("filters by claimed_by_agent_id", () => {
      const h = base();
      const w1 = h.claimWith("a", { agent_id: "alice" });
      h.claimWith("c", { agent_id: "bob" });
      expect(ids(q(h, orchestrator, { claimed_by_agent_id: "alice" }))).toEqual(["a"]);
      expect(ids(q(h, orchestrator, { claimed_by_agent_id: "bob" }))).toEqual(["c"]);
      expect(ids(q(h, w1, { claimed_by_agent_id: "alice", statuses: ["claimed"] }))).toEqual(["a"]);
    });

    it("leaves out completed, failed and cancelled steps by default", () => {
      const h = new Harness();
      h.create([step("a"), step("b"), step("c"), step("d")]);
      h.complete("a");
      const w = h.claimWith("b");
      h.ok({ type: "update_step", step_id: "b", status: "failed" }, w);
      h.ok({ type: "update_task", ops: [{ op: "cancel_step", step_id: "c" }] });
      expect(ids(q(h, orchestrator))).toEqual(["d"]);
      expect(q(h, orchestrator).total).toBe(1);
    });

    it("returns terminal steps only with include_terminal_steps=true", () => {
      const h = new Harness();
      h.create([step("a"), step("b"), step("c"), step("d")]);
      h.complete("a");
      const w = h.claimWith("b");
      h.ok({ type: "update_step", step_id: "b", status: "failed" }, w);
      h.ok({ type: "update_task", ops: [{ op: "cancel_step", step_id: "c" }] });
      expect(ids(q(h, orchestrator, { include_terminal_steps: true }))).toEqual(["a", "b", "c", "d"]);
      expect(ids(q(h, orchestrator, { include_terminal_steps: true, statuses: ["completed", "cancelled"] }))).toEqual(["a", "c"]);
      expect(qErr(h, orchestrator, { statuses: ["completed"] })).toBe("validation_error");
      expect(ids(q(h, orchestrator, { include_terminal_steps: false }))).toEqual(["d"]);
    });

    it("pages with limit and offset, limit 50 by default", () => {
      const h = new Harness();
      h.create(Array.from({ length: 60 }, (_, i) => step(`s${String(i).padStart(2, "0")}`)));
      const first = q(h, orchestrator);
      expect(first).toMatchObject({ total: 60, limit: 50, offset: 0, next_offset: 50 });
      expect(first.steps).toHaveLength(50);
      expect(first.steps[0]!.step_id).toBe("s00");
      const rest = q(h, orchestrator, { offset: 50 });
      expect(rest).toMatchObject({ total: 60, limit: 50, offset: 50, next_offset: null });
      expect(ids(rest)).toEqual(Array.from({ length: 10 }, (_, i) => `s${50 + i}`));
      expect(ids(q(h, orchestrator, { limit: 3, offset: 7 }))).toEqual(["s07", "s08", "s09"]);
      expect(q(h, orchestrator, { limit: 3, offset: 7 }).next_offset).toBe(10);
    });

    it("orders by created_at ascending, never by status", () => {
      const h = new Harness();
      h.create([step("z"), step("m", ["z"]), step("a")]);
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      h.ok({ type: "update_task", ops: [{ op: "add_step", step: step("b") }] });
      expect(ids(q(h, orchestrator))).toEqual(["z", "m", "a", "b"]);
      // A deleted and re-added step is created again, so it moves to the end.
      h.ok({ type: "update_task", ops: [{ op: "delete_step", step_id: "m" }, { op: "add_step", step: step("m") }] });
      expect(ids(q(h, orchestrator))).toEqual(["z", "a", "b", "m"]);
      expect(ids(q(h, orchestrator, { statuses: ["ready"] }))).toEqual(["z", "b", "m"]);
    });

    it("a worker's ready query lists only its pool's ready steps, with completed dependencies and no live lease", () => {
      const h = new Harness();
      h.create([step("a"), step("b", ["a"]), step("c"), step("g", [], { worker_pool_id: "gpu" }), step("e")]);
      const other = h.claimWith("c");
      const w = h.dispatch();
      expect(ids(q(h, w))).toEqual(["a", "e"]); // not b (dependency), c (leased), g (other pool)
      // Only ready steps, even when more are asked for by pool.
      expect(ids(q(h, w, { worker_pool_id: "default" }))).toEqual(["a", "e"]);
      h.ok({ type: "update_step", step_id: "c", status: "running" }, other);
      expect(ids(q(h, w))).toEqual(["a", "e"]);
    });

    it("a worker's ready query returns 5 candidates by default", () => {
      const h = new Harness();
      h.create(Array.from({ length: 8 }, (_, i) => step(`s${i}`)));
      const w = h.dispatch();
      const p = q(h, w);
      expect(p).toMatchObject({ limit: 5, total: 8, next_offset: 5 });
      expect(ids(p)).toEqual(["s0", "s1", "s2", "s3", "s4"]);
      expect(ids(q(h, w, { limit: 10 }))).toHaveLength(8);
      expect(q(h, orchestrator).limit).toBe(50);
    });

    it("allowed_step_ids narrows what a worker run may query", () => {
      const h = base();
      const w = h.dispatch({ allowed_step_ids: ["d", "b"] });
      expect(ids(q(h, w))).toEqual(["d"]);
      expect(ids(q(h, w, { statuses: ["pending", "ready"] }))).toEqual(["b", "d"]);
    });

    it("allowed_step_ids is a hard scope: a step outside it can be neither queried nor claimed", () => {
      const h = base();
      const w = h.dispatch({ allowed_step_ids: ["d"] });
      expect(ids(q(h, w, { statuses: ["ready"] }))).toEqual(["d"]);
      rejectsAs(h, { type: "claim_step", step_id: "a" }, w, "permission_denied");
      expect(h.ok({ type: "claim_next" }, w).value).toMatchObject({ kind: "claimed", step_id: "d" });
    });

    it("omitted allowed_step_ids means no limit by step id", () => {
      const h = base();
      const w = h.dispatch();
      expect(runOf(h, w).allowed_step_ids).toBeNull();
      expect(ids(q(h, w))).toEqual(["a", "c", "d"]);
    });

    it("an empty allowed_step_ids is a validation_error", () => {
      const h = base();
      const e = rejectsAs(h, { type: "dispatch_worker", allowed_step_ids: [] }, orchestrator, "validation_error");
      expect(e.message).toContain("allowed_step_ids");
      expect(h.state.runs.size).toBe(0);
    });

    it("duplicate ids in allowed_step_ids are removed", () => {
      const h = base();
      const w = h.dispatch({ allowed_step_ids: ["c", "a", "c", "a"] });
      expect(runOf(h, w).allowed_step_ids).toEqual(["c", "a"]);
      expect(byType(h.wal, "worker_dispatched").at(-1)!.payload).toMatchObject({ allowed_step_ids: ["c", "a"] });
      expect(ids(q(h, w))).toEqual(["a", "c"]);
    });

    it("allowed_step_ids may name steps that are not ready: a ready query returns only the ready ones", () => {
      const h = base();
      const w = h.dispatch({ allowed_step_ids: ["b", "c"] }); // b is pending: dispatch is still fine
      expect(ids(q(h, w))).toEqual(["c"]);
    });

    it("no ready step within allowed_step_ids: claim-next answers no_step_claimed and writes nothing", () => {
      const h = base();
      const w = h.dispatch({ allowed_step_ids: ["b"] });
      expect(ids(q(h, w))).toEqual([]);
      const before = h.wal.length;
      const d = h.ok({ type: "claim_next" }, w);
      expect(d.events).toEqual([]);
      expect(d.value).toEqual({ kind: "no_step_claimed", reason: "no_ready_step" });
      expect(h.wal.length).toBe(before);
      expect(runOf(h, w)).toMatchObject({ status: "active", claims_used: 0, current_step_id: null });
    });

    it("expired leases are reconciled before a query, so an expired step is a candidate again", () => {
      const h = base();
      h.claimWith("a");
      const w = h.dispatch();
      expect(ids(q(h, w))).toEqual(["c", "d"]);
      h.now = T0 + LEASE_MS;
      expect(typesOf(h, { type: "reconcile_leases" }, w)).toEqual(["task_step_lease_expired", "task_step_ready"]);
      expect(ids(q(h, w))).toEqual(["a", "c", "d"]);
    });
  });
});
