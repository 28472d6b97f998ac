/**
 * Task tools (docs/model.md "Tools"): the rules of agent.task_update. Every rejected command is checked to write nothing.
 */
import { describe, expect, it } from "vitest";
import { replay } from "../../../../src/core/index.js";
import { observer, orchestrator, step, stranger } from "../../harness.js";
import { types, payload, systemCaller, rejectsAs, typesOf, st, base, byType } from "../support.js";

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

    it("takes structured patch ops, never a whole-DAG replacement", () => {
      const h = base();
      rejectsAs(h, { type: "update_task", steps: [step("a")] }, orchestrator, "validation_error");
      rejectsAs(h, { type: "update_task", ops: [], steps: [step("a")] }, orchestrator, "validation_error");
      rejectsAs(h, { type: "update_task", ops: [] }, orchestrator, "validation_error");
      rejectsAs(h, { type: "update_task", ops: [{ op: "replace_dag", steps: [step("a")] }] }, orchestrator, "validation_error");
      rejectsAs(h, { type: "update_task", ops: [{ op: "reorder", step_id: "a" }] }, orchestrator, "validation_error");
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
