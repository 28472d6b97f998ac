/**
 * Task tools (docs/model.md "Tools"): the rules of agent.task_query_steps. Every rejected command is checked to write nothing.
 */
import { describe, expect, it } from "vitest";
import { orchestrator, stranger, T0 } from "../../harness.js";
import { payload, LEASE_MS, rejectsAs, typesOf, q, ids, qErr, runOf, base, byType } from "../support.js";

describe("Task Tools", () => {
  describe("agent.task_query_steps", () => {
    it("a worker run queries only the task its dispatch named", () => {
      const h = base();
      const w = h.dispatch();
      expect(qErr(h, { ...w, task_id: "task_other" })).toBe("permission_denied");
      expect(qErr(h, { ...w, session_id: "sess_other" })).toBe("permission_denied");
      expect(qErr(h, stranger)).toBe("permission_denied");
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
