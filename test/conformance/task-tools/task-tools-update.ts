/** @module Task tools (docs/model.md "Tools"): agent.task_update: structured patch ops on the DAG. */
import { describe, expect, it } from "vitest";
import { BASE, type MakeDriver, step, type TaskRuntimeDriver } from "../drivers/driver.js";
import { accepted, created, holder, rejected } from "../drivers/expect.js";

/** Registers the rules of agent.task_update against the drivers `makeDriver` makes. */
export function registerUpdateTask(makeDriver: MakeDriver): void {
  describe("agent.task_update", () => {
    /** Patches and returns the events written. */
    const patch = async (d: TaskRuntimeDriver, ops: Record<string, unknown>[]) => {
      const n = (await d.walEvents()).length;
      accepted(await d.patchTask(ops));
      return (await d.walEvents()).slice(n);
    };
    const statuses = async (d: TaskRuntimeDriver, ids: string[]) => {
      const v = await d.view();
      return ids.map((id) => v.steps[id]!.status);
    };

    it("changes task and step content, dependencies, required and worker_pool_id", async () => {
      const d = await created(await makeDriver(), BASE());
      await patch(d, [
        { op: "update_task", title: "T2", summary: "S2" },
        { op: "update_step", step_id: "c", fields: { title: "C2", summary: "CS2", depends_on_step_ids: ["d"], required: false, worker_pool_id: "gpu" } },
      ]);
      const v = await d.view();
      expect(v.task).toMatchObject({ title: "T2", summary: "S2" });
      expect(v.steps.c).toMatchObject({ title: "C2", summary: "CS2", depends_on_step_ids: ["d"], required: false, worker_pool_id: "gpu", status: "pending" });
    });

    it("several changes go in one submission: steps added, dependencies changed and steps cancelled together", async () => {
      const d = await created(await makeDriver(), BASE());
      const events = await patch(d, [
        { op: "add_step", step: step("x") },
        { op: "add_step", step: step("y", ["x"]) },
        { op: "add_dependency", step_id: "c", depends_on_step_id: "a" },
        { op: "remove_dependency", step_id: "b", depends_on_step_id: "a" },
        { op: "cancel_step", step_id: "d", reason: "not needed" },
        { op: "cancel_step", step_id: "y" },
      ]);
      expect(events.map((e) => e.event_type)).toEqual(["task_updated", "task_step_cancelled", "task_step_cancelled", "task_step_ready", "task_step_pending", "task_step_ready"]);
      expect(events.slice(1).map((e) => e.step_id)).toEqual(["d", "y", "b", "c", "x"]);
      expect(await statuses(d, ["b", "c", "d", "x", "y"])).toEqual(["ready", "pending", "cancelled", "ready", "cancelled"]);
    });

    it("update_task changes the task title and summary", async () => {
      const d = await created(await makeDriver(), BASE());
      expect((await patch(d, [{ op: "update_task", title: "New" }, { op: "update_task", summary: "Sum" }])).map((e) => e.event_type)).toEqual(["task_updated"]);
      expect((await d.view()).task).toMatchObject({ title: "New", summary: "Sum" });
      await rejected(d, () => d.patchTask([{ op: "update_task" }]), "validation_error");
      await rejected(d, () => d.patchTask([{ op: "update_task", title: "" }]), "validation_error");
      await rejected(d, () => d.patchTask([{ op: "update_task", title: "x", status: "completed" }]), "validation_error");
    });

    it("add_step takes a whole step (step_id, title, summary, depends_on_step_ids), required defaults true, worker_pool_id optional", async () => {
      const d = await created(await makeDriver(), BASE());
      for (const field of ["step_id", "title", "summary", "depends_on_step_ids"]) {
        const s: Record<string, unknown> = step("x");
        delete s[field];
        await rejected(d, () => d.patchTask([{ op: "add_step", step: s }]), "validation_error");
      }
      const events = await patch(d, [
        { op: "add_step", step: step("x"), reason: "new work" },
        { op: "add_step", step: step("y", ["a"], { required: false, worker_pool_id: "gpu" }) },
      ]);
      expect(events.map((e) => e.event_type)).toEqual(["task_updated", "task_step_ready"]);
      expect(events[1]!.step_id).toBe("x");
      const v = await d.view();
      expect(v.steps.x).toMatchObject({ required: true, worker_pool_id: "default", status: "ready" });
      expect(v.steps.y).toMatchObject({ required: false, worker_pool_id: "gpu", status: "pending", depends_on_step_ids: ["a"] });
      await rejected(d, () => d.patchTask([{ op: "add_step", step: step("a") }]), "duplicate_step");
      await rejected(d, () => d.patchTask([{ op: "add_step", step: step("z", ["nope"]) }]), "unknown_dependency");
    });

    it("update_step changes only title, summary, depends_on_step_ids, required and worker_pool_id", async () => {
      const d = await created(await makeDriver(), BASE());
      await patch(d, [{ op: "update_step", step_id: "b", fields: { title: "B2", summary: "S", depends_on_step_ids: ["c", "d"], required: false, worker_pool_id: "io" } }]);
      expect((await d.view()).steps.b).toMatchObject({ title: "B2", summary: "S", depends_on_step_ids: ["c", "d"], required: false, worker_pool_id: "io", status: "pending" });
      for (const fields of [{ status: "ready" }, { result_summary: "x" }, { artifact_ids: [] }, { claimed_by_run_id: "r" }, { lease_expires_at: "2026-01-01T00:00:00.000Z" }, {}]) {
        await rejected(d, () => d.patchTask([{ op: "update_step", step_id: "b", fields }]), "validation_error");
      }
      await rejected(d, () => d.patchTask([{ op: "update_step", step_id: "nope", fields: { title: "x" } }]), "not_found");
    });

    it("delete_step removes a step; a step others depend on is step_has_dependents", async () => {
      const d = await created(await makeDriver(), BASE());
      const details = await rejected(d, () => d.patchTask([{ op: "delete_step", step_id: "a" }]), "step_has_dependents");
      expect(details).toMatchObject({ step_id: "a", dependents: ["b"] });
      expect((await patch(d, [{ op: "delete_step", step_id: "d", reason: "dup" }])).map((e) => e.event_type)).toEqual(["task_updated"]);
      expect((await d.view()).steps.d).toBeUndefined();
      await rejected(d, () => d.patchTask([{ op: "delete_step", step_id: "d" }]), "not_found");
    });

    it("add_dependency adds one edge; a ready step whose new dependency is not completed goes back to pending", async () => {
      const d = await created(await makeDriver(), BASE());
      expect((await patch(d, [{ op: "add_dependency", step_id: "d", depends_on_step_id: "c" }])).map((e) => e.event_type)).toEqual(["task_updated", "task_step_pending"]);
      expect((await d.view()).steps.d).toMatchObject({ depends_on_step_ids: ["c"], status: "pending" });
      await rejected(d, () => d.patchTask([{ op: "add_dependency", step_id: "c", depends_on_step_id: "d" }]), "dependency_cycle");
      await rejected(d, () => d.patchTask([{ op: "add_dependency", step_id: "c", depends_on_step_id: "nope" }]), "unknown_dependency");
      await rejected(d, () => d.patchTask([{ op: "add_dependency", step_id: "c" }]), "validation_error");
    });

    it("remove_dependency removes one edge; a pending step whose dependencies are then completed becomes ready", async () => {
      const d = await created(await makeDriver(), BASE());
      expect((await patch(d, [{ op: "remove_dependency", step_id: "b", depends_on_step_id: "a" }])).map((e) => e.event_type)).toEqual(["task_updated", "task_step_ready"]);
      expect((await d.view()).steps.b).toMatchObject({ depends_on_step_ids: [], status: "ready" });
      await rejected(d, () => d.patchTask([{ op: "remove_dependency", step_id: "b", depends_on_step_id: "a" }]), "validation_error");
    });

    it("applies ops to a scratch DAG in the given order and never reorders them", async () => {
      const d = await created(await makeDriver(), BASE());
      // Adding x before depending on it works; the other way round does not.
      await rejected(d, () => d.patchTask([{ op: "add_dependency", step_id: "c", depends_on_step_id: "x" }, { op: "add_step", step: step("x") }]), "unknown_dependency");
      await patch(d, [{ op: "add_step", step: step("x") }, { op: "add_dependency", step_id: "c", depends_on_step_id: "x" }]);
      expect((await d.view()).steps.c!.depends_on_step_ids).toEqual(["x"]);
      // Delete then re-add the same id works; re-add then delete is a duplicate.
      await rejected(d, () => d.patchTask([{ op: "add_step", step: step("d", [], { title: "D2" }) }, { op: "delete_step", step_id: "d" }]), "duplicate_step");
      await patch(d, [{ op: "delete_step", step_id: "d" }, { op: "add_step", step: step("d", [], { title: "D2" }) }]);
      expect((await d.view()).steps.d!.title).toBe("D2");
      // The same two ops in either order give different results: cancel then reopen is refused (cancelled is terminal).
      const w = await holder(d, "a");
      accepted(await d.updateStep(w, "a", { status: "failed" }));
      await rejected(d, () => d.patchTask([{ op: "reopen_step", step_id: "a" }, { op: "reopen_step", step_id: "a" }]), "invalid_transition");
      const events = await patch(d, [{ op: "reopen_step", step_id: "a" }, { op: "cancel_step", step_id: "a" }]);
      expect(events.map((e) => e.event_type)).toEqual(["task_updated", "task_step_reopened", "task_step_cancelled"]);
      expect((await d.view()).steps.a!.status).toBe("cancelled");
    });

    it("validates the final DAG as a whole, after every op is applied", async () => {
      const d = await created(await makeDriver(), BASE());
      // A cycle that a later op removes is fine.
      await patch(d, [
        { op: "add_dependency", step_id: "a", depends_on_step_id: "b" },
        { op: "remove_dependency", step_id: "b", depends_on_step_id: "a" },
      ]);
      expect((await d.view()).steps.a!.depends_on_step_ids).toEqual(["b"]);
      expect(await statuses(d, ["a", "b"])).toEqual(["pending", "ready"]);
      // A step may name a dependency added later in the same patch.
      await patch(d, [{ op: "add_step", step: step("x", ["y"]) }, { op: "add_step", step: step("y") }]);
      expect(await statuses(d, ["x", "y"])).toEqual(["pending", "ready"]);
      // A cycle only the final DAG has is refused.
      await rejected(d, () => d.patchTask([{ op: "add_step", step: step("p", ["q"]) }, { op: "add_step", step: step("q", ["p"]) }]), "dependency_cycle");
      // A dependency deleted by a later op is caught on the final DAG.
      await rejected(
        d,
        () => d.patchTask([{ op: "add_step", step: step("z") }, { op: "update_step", step_id: "c", fields: { depends_on_step_ids: ["z"] } }, { op: "update_step", step_id: "c", fields: { depends_on_step_ids: ["zz"] } }]),
        "unknown_dependency",
      );
    });

    it("is atomic: one failing op writes nothing and leaves the DAG as it was", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "c");
      accepted(await d.updateStep(w, "c", { status: "completed" }));
      const details = await rejected(
        d,
        () =>
          d.patchTask([
            { op: "update_task", title: "Changed" },
            { op: "add_step", step: step("e", ["a"]) },
            { op: "cancel_step", step_id: "d" },
            { op: "remove_dependency", step_id: "b", depends_on_step_id: "a" },
            { op: "delete_step", step_id: "c" }, // completed: cannot be deleted
          ]),
        "invalid_transition",
      );
      expect(details).toMatchObject({ op_index: 4 });
      const v = await d.view();
      expect(v.task.title).toBe("Plan");
      expect(v.steps.e).toBeUndefined();
      expect([v.steps.b!.status, v.steps.d!.status]).toEqual(["pending", "ready"]);
    });
  });
}
