/**
 * Seed 003 "Task Tools": the rules of agent.task_update. Every rejected command is checked to write nothing.
 */
import { describe, expect, it } from "vitest";
import { replay } from "../../../src/core/index.js";
import { observer, orchestrator, step, stranger, T0 } from "../harness.js";
import { types, payload, iso, systemCaller, rejectsAs, typesOf, st, base, byType } from "./support.js";

describe("Task Tools", () => {
  describe("agent.task_update", () => {
    it("only the orchestrator may use it", () => {
      const h = base();
      const w = h.claimWith("a");
      const cmd = { type: "update_task", ops: [{ op: "update_task", title: "T" }] };
      rejectsAs(h, cmd, w, "tool_not_available");
      rejectsAs(h, cmd, observer, "tool_not_available");
      rejectsAs(h, cmd, systemCaller, "tool_not_available");
      rejectsAs(h, cmd, stranger, "permission_denied");
      expect(typesOf(h, cmd)).toEqual(["task_updated"]);
    });

    it("changes task and step content, dependencies, required and worker_pool_id", () => {
      const h = base();
      typesOf(h, {
        type: "update_task",
        ops: [
          { op: "update_task", title: "T2", summary: "S2" },
          { op: "update_step", step_id: "c", fields: { title: "C2", summary: "CS2", depends_on_step_ids: ["d"], required: false, worker_pool_id: "gpu" } },
        ],
      });
      expect(h.state.task).toMatchObject({ title: "T2", summary: "S2" });
      expect(st(h, "c")).toMatchObject({ title: "C2", summary: "CS2", depends_on_step_ids: ["d"], required: false, worker_pool_id: "gpu", status: "pending" });
    });

    it("several changes go in one submission: steps added, dependencies changed and steps cancelled together", () => {
      const h = base();
      const d = h.ok({
        type: "update_task",
        ops: [
          { op: "add_step", step: step("x") },
          { op: "add_step", step: step("y", ["x"]) },
          { op: "add_dependency", step_id: "c", depends_on_step_id: "a" },
          { op: "remove_dependency", step_id: "b", depends_on_step_id: "a" },
          { op: "cancel_step", step_id: "d", reason: "not needed" },
          { op: "cancel_step", step_id: "y" },
        ],
      });
      expect(h.types(d)).toEqual(["task_updated", "task_step_cancelled", "task_step_cancelled", "task_step_ready", "task_step_pending", "task_step_ready"]);
      expect(d.events.slice(1).map((e) => e.step_id)).toEqual(["d", "y", "b", "c", "x"]);
      expect([h.status("b"), h.status("c"), h.status("d"), h.status("x"), h.status("y")]).toEqual(["ready", "pending", "cancelled", "ready", "cancelled"]);
      expect(replay(h.wal)).toEqual(h.state);
    });

    it("takes structured patch ops, never a whole-DAG replacement", () => {
      const h = base();
      rejectsAs(h, { type: "update_task", steps: [step("a")] }, orchestrator, "validation_error");
      rejectsAs(h, { type: "update_task", ops: [], steps: [step("a")] }, orchestrator, "validation_error");
      rejectsAs(h, { type: "update_task", ops: [] }, orchestrator, "validation_error");
      rejectsAs(h, { type: "update_task", ops: [{ op: "replace_dag", steps: [step("a")] }] }, orchestrator, "validation_error");
      rejectsAs(h, { type: "update_task", ops: [{ op: "reorder", step_id: "a" }] }, orchestrator, "validation_error");
    });

    it("update_task changes the task title and summary", () => {
      const h = base();
      const d = h.ok({ type: "update_task", ops: [{ op: "update_task", title: "New" }, { op: "update_task", summary: "Sum" }] });
      expect(h.types(d)).toEqual(["task_updated"]);
      expect(h.state.task).toMatchObject({ title: "New", summary: "Sum" });
      rejectsAs(h, { type: "update_task", ops: [{ op: "update_task" }] }, orchestrator, "validation_error");
      rejectsAs(h, { type: "update_task", ops: [{ op: "update_task", title: "" }] }, orchestrator, "validation_error");
      rejectsAs(h, { type: "update_task", ops: [{ op: "update_task", title: "x", status: "completed" }] }, orchestrator, "validation_error");
    });

    it("add_step takes a whole step (step_id, title, summary, depends_on_step_ids), required defaults true, worker_pool_id optional", () => {
      const h = base();
      for (const field of ["step_id", "title", "summary", "depends_on_step_ids"]) {
        const s: Record<string, unknown> = step("x");
        delete s[field];
        rejectsAs(h, { type: "update_task", ops: [{ op: "add_step", step: s }] }, orchestrator, "validation_error");
      }
      const d = h.ok({
        type: "update_task",
        ops: [
          { op: "add_step", step: step("x"), reason: "new work" },
          { op: "add_step", step: step("y", ["a"], { required: false, worker_pool_id: "gpu" }) },
        ],
      });
      expect(h.types(d)).toEqual(["task_updated", "task_step_ready"]);
      expect(d.events[1]!.step_id).toBe("x");
      expect(st(h, "x")).toMatchObject({ required: true, worker_pool_id: "default", status: "ready" });
      expect(st(h, "y")).toMatchObject({ required: false, worker_pool_id: "gpu", status: "pending", depends_on_step_ids: ["a"] });
      rejectsAs(h, { type: "update_task", ops: [{ op: "add_step", step: step("a") }] }, orchestrator, "duplicate_step");
      rejectsAs(h, { type: "update_task", ops: [{ op: "add_step", step: step("z", ["nope"]) }] }, orchestrator, "unknown_dependency");
    });

    it("update_step changes only title, summary, depends_on_step_ids, required and worker_pool_id", () => {
      const h = base();
      h.ok({ type: "update_task", ops: [{ op: "update_step", step_id: "b", fields: { title: "B2", summary: "S", depends_on_step_ids: ["c", "d"], required: false, worker_pool_id: "io" } }] });
      expect(st(h, "b")).toMatchObject({ title: "B2", summary: "S", depends_on_step_ids: ["c", "d"], required: false, worker_pool_id: "io", status: "pending" });
      for (const fields of [{ status: "ready" }, { result_summary: "x" }, { artifact_ids: [] }, { claimed_by_run_id: "r" }, { lease_expires_at: iso(T0) }, {}]) {
        rejectsAs(h, { type: "update_task", ops: [{ op: "update_step", step_id: "b", fields }] }, orchestrator, "validation_error");
      }
      rejectsAs(h, { type: "update_task", ops: [{ op: "update_step", step_id: "nope", fields: { title: "x" } }] }, orchestrator, "not_found");
    });

    it("delete_step removes a step; a step others depend on is step_has_dependents", () => {
      const h = base();
      const e = rejectsAs(h, { type: "update_task", ops: [{ op: "delete_step", step_id: "a" }] }, orchestrator, "step_has_dependents");
      expect(e.details).toMatchObject({ step_id: "a", dependents: ["b"] });
      expect(h.types(h.ok({ type: "update_task", ops: [{ op: "delete_step", step_id: "d", reason: "dup" }] }))).toEqual(["task_updated"]);
      expect(h.state.steps.has("d")).toBe(false);
      rejectsAs(h, { type: "update_task", ops: [{ op: "delete_step", step_id: "d" }] }, orchestrator, "not_found");
    });

    it("add_dependency adds one edge; a ready step whose new dependency is not completed goes back to pending", () => {
      const h = base();
      const d = h.ok({ type: "update_task", ops: [{ op: "add_dependency", step_id: "d", depends_on_step_id: "c" }] });
      expect(h.types(d)).toEqual(["task_updated", "task_step_pending"]);
      expect(st(h, "d")).toMatchObject({ depends_on_step_ids: ["c"], status: "pending" });
      rejectsAs(h, { type: "update_task", ops: [{ op: "add_dependency", step_id: "c", depends_on_step_id: "d" }] }, orchestrator, "dependency_cycle");
      rejectsAs(h, { type: "update_task", ops: [{ op: "add_dependency", step_id: "c", depends_on_step_id: "nope" }] }, orchestrator, "unknown_dependency");
      rejectsAs(h, { type: "update_task", ops: [{ op: "add_dependency", step_id: "c" }] }, orchestrator, "validation_error");
    });

    it("remove_dependency removes one edge; a pending step whose dependencies are then completed becomes ready", () => {
      const h = base();
      const d = h.ok({ type: "update_task", ops: [{ op: "remove_dependency", step_id: "b", depends_on_step_id: "a" }] });
      expect(h.types(d)).toEqual(["task_updated", "task_step_ready"]);
      expect(st(h, "b")).toMatchObject({ depends_on_step_ids: [], status: "ready" });
      rejectsAs(h, { type: "update_task", ops: [{ op: "remove_dependency", step_id: "b", depends_on_step_id: "a" }] }, orchestrator, "validation_error");
    });

    it("cancel_step cancels a pending or ready step with its reason (task_step_cancelled)", () => {
      const h = base();
      const d = h.ok({ type: "update_task", ops: [{ op: "cancel_step", step_id: "b", reason: "drop" }, { op: "cancel_step", step_id: "c" }] });
      expect(h.types(d)).toEqual(["task_updated", "task_step_cancelled", "task_step_cancelled"]);
      expect(d.events[1]!.payload).toEqual({ reason: "drop", attempt_id: null, run_id: null });
      expect(d.events[2]!.payload).toEqual({ reason: null, attempt_id: null, run_id: null });
      expect(st(h, "b")).toMatchObject({ status: "cancelled", status_reason: "drop" });
      h.claimWith("d");
      rejectsAs(h, { type: "update_task", ops: [{ op: "cancel_step", step_id: "d" }] }, orchestrator, "invalid_transition");
      rejectsAs(h, { type: "update_task", ops: [{ op: "cancel_step", step_id: "b" }] }, orchestrator, "invalid_transition");
    });

    it("reopen_step returns a failed or blocked step to pending with its reason (task_step_reopened), then readiness", () => {
      const h = base();
      const w1 = h.claimWith("c");
      h.ok({ type: "update_step", step_id: "c", status: "failed" }, w1);
      const w2 = h.claimWith("d");
      h.ok({ type: "update_step", step_id: "d", status: "blocked" }, w2);
      const d = h.ok({ type: "update_task", ops: [{ op: "reopen_step", step_id: "c", reason: "retry" }, { op: "reopen_step", step_id: "d" }] });
      expect(h.types(d)).toEqual(["task_updated", "task_step_reopened", "task_step_reopened", "task_step_ready", "task_step_ready"]);
      expect(d.events[1]!.payload).toEqual({ reason: "retry" });
      expect([h.status("c"), h.status("d")]).toEqual(["ready", "ready"]);
      rejectsAs(h, { type: "update_task", ops: [{ op: "reopen_step", step_id: "a" }] }, orchestrator, "invalid_transition");
      rejectsAs(h, { type: "update_task", ops: [{ op: "reopen_step", step_id: "b" }] }, orchestrator, "invalid_transition");
    });

    it("applies ops to a scratch DAG in the given order and never reorders them", () => {
      const h = base();
      // Adding x before depending on it works; the other way round does not.
      rejectsAs(
        h,
        { type: "update_task", ops: [{ op: "add_dependency", step_id: "c", depends_on_step_id: "x" }, { op: "add_step", step: step("x") }] },
        orchestrator,
        "unknown_dependency",
      );
      h.ok({ type: "update_task", ops: [{ op: "add_step", step: step("x") }, { op: "add_dependency", step_id: "c", depends_on_step_id: "x" }] });
      expect(st(h, "c").depends_on_step_ids).toEqual(["x"]);
      // Delete then re-add the same id works; re-add then delete is a duplicate.
      rejectsAs(h, { type: "update_task", ops: [{ op: "add_step", step: step("d", [], { title: "D2" }) }, { op: "delete_step", step_id: "d" }] }, orchestrator, "duplicate_step");
      h.ok({ type: "update_task", ops: [{ op: "delete_step", step_id: "d" }, { op: "add_step", step: step("d", [], { title: "D2" }) }] });
      expect(st(h, "d").title).toBe("D2");
      // The same two ops in either order give different results: cancel then reopen is refused (cancelled is terminal).
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "failed" }, w);
      rejectsAs(h, { type: "update_task", ops: [{ op: "reopen_step", step_id: "a" }, { op: "reopen_step", step_id: "a" }] }, orchestrator, "invalid_transition");
      const d = h.ok({ type: "update_task", ops: [{ op: "reopen_step", step_id: "a" }, { op: "cancel_step", step_id: "a" }] });
      expect(h.types(d)).toEqual(["task_updated", "task_step_reopened", "task_step_cancelled"]);
      expect(h.status("a")).toBe("cancelled");
      expect(replay(h.wal)).toEqual(h.state);
    });

    it("validates the final DAG as a whole, after every op is applied", () => {
      const h = base();
      // A cycle that a later op removes is fine.
      h.ok({
        type: "update_task",
        ops: [
          { op: "add_dependency", step_id: "a", depends_on_step_id: "b" },
          { op: "remove_dependency", step_id: "b", depends_on_step_id: "a" },
        ],
      });
      expect(st(h, "a").depends_on_step_ids).toEqual(["b"]);
      expect([h.status("a"), h.status("b")]).toEqual(["pending", "ready"]);
      // A step may name a dependency added later in the same patch.
      h.ok({ type: "update_task", ops: [{ op: "add_step", step: step("x", ["y"]) }, { op: "add_step", step: step("y") }] });
      expect([h.status("x"), h.status("y")]).toEqual(["pending", "ready"]);
      // A cycle only the final DAG has is refused.
      rejectsAs(
        h,
        { type: "update_task", ops: [{ op: "add_step", step: step("p", ["q"]) }, { op: "add_step", step: step("q", ["p"]) }] },
        orchestrator,
        "dependency_cycle",
      );
      // A dependency deleted by a later op is caught on the final DAG.
      rejectsAs(
        h,
        { type: "update_task", ops: [{ op: "add_step", step: step("z") }, { op: "update_step", step_id: "c", fields: { depends_on_step_ids: ["z"] } }, { op: "update_step", step_id: "c", fields: { depends_on_step_ids: ["zz"] } }] },
        orchestrator,
        "unknown_dependency",
      );
    });

    it("is atomic: one failing op writes nothing and leaves the DAG as it was", () => {
      const h = base();
      const w = h.claimWith("c");
      h.ok({ type: "update_step", step_id: "c", status: "completed" }, w);
      const before = replay(h.wal);
      const e = rejectsAs(
        h,
        {
          type: "update_task",
          ops: [
            { op: "update_task", title: "Changed" },
            { op: "add_step", step: step("e", ["a"]) },
            { op: "cancel_step", step_id: "d" },
            { op: "remove_dependency", step_id: "b", depends_on_step_id: "a" },
            { op: "delete_step", step_id: "c" }, // completed: cannot be deleted
          ],
        },
        orchestrator,
        "invalid_transition",
      );
      expect(e.details).toMatchObject({ op_index: 4 });
      expect(h.state).toEqual(before);
      expect(h.state.task!.title).toBe("Plan");
      expect(h.state.steps.has("e")).toBe(false);
      expect([h.status("b"), h.status("d")]).toEqual(["pending", "ready"]);
    });

    it("each successful update writes exactly one task_updated whose payload holds the patch list", () => {
      const h = base();
      const ops = [
        { op: "update_task", title: "T2" },
        { op: "add_step", step: { ...step("x"), required: false, worker_pool_id: "default" } },
        { op: "update_step", step_id: "b", fields: { summary: "new" } },
        { op: "add_dependency", step_id: "x", depends_on_step_id: "a" },
        { op: "remove_dependency", step_id: "x", depends_on_step_id: "a" },
        { op: "cancel_step", step_id: "d", reason: "no" },
        { op: "delete_step", step_id: "d" },
      ];
      const d = h.ok({ type: "update_task", ops });
      expect(byType(d.events, "task_updated")).toHaveLength(1);
      expect(d.events[0]!.event_type).toBe("task_updated");
      expect(d.events[0]!.payload).toEqual({ ops, updated_after_dispatch: [] });
      // The cancel of a step deleted later in the same patch is moot.
      expect(h.types(d)).toEqual(["task_updated", "task_step_ready"]);
      expect(replay(h.wal)).toEqual(h.state);
      // Later ops on the same step never rewrite an earlier op as recorded.
      const ops2 = [
        { op: "update_step", step_id: "b", fields: { depends_on_step_ids: ["c"] } },
        { op: "add_dependency", step_id: "b", depends_on_step_id: "x" },
        { op: "add_step", step: { ...step("y"), required: true, worker_pool_id: "default" } },
        { op: "add_dependency", step_id: "y", depends_on_step_id: "b" },
      ];
      const d2 = h.ok({ type: "update_task", ops: ops2 });
      expect(d2.events[0]!.payload).toEqual({ ops: ops2, updated_after_dispatch: [] });
      expect(st(h, "b").depends_on_step_ids).toEqual(["c", "x"]);
      expect(st(h, "y").depends_on_step_ids).toEqual(["b"]);
      expect(replay(h.wal)).toEqual(h.state);
    });
  });
});
