/** @module DAG constraints (docs/model.md "The DAG"): the constraints agent.task_create and agent.task_update enforce. */
import { describe, expect, it } from "vitest";
import { DIAMOND, type MakeDriver, type StepInput, step, type TaskStateView } from "./drivers/driver.js";
import { accepted, created, rejected } from "./drivers/expect.js";

/** Registers the "DAG Model" rules against the drivers `makeDriver` makes. */
export function runDagModel(makeDriver: MakeDriver): void {
  describe("DAG Model", () => {
    it.each([
      ["the DAG has a cycle", [step("a", ["c"]), step("b", ["a"]), step("c", ["b"])], "dependency_cycle"],
      ["a step depends on itself", [step("a", ["a"])], "dependency_cycle"],
      ["a dependency names no step", [step("a"), step("b", ["zz"])], "unknown_dependency"],
      ["a step id repeats", [step("a"), step("a")], "duplicate_step"],
    ] as [string, StepInput[], string][])("agent.task_create rejects a DAG where %s, writes nothing and leaves the task id free", async (_name, steps, code) => {
      const d = await makeDriver();
      const a = await d.createTask(steps);
      expect(a.ok ? "accepted" : a.code).toBe(code);
      accepted(await d.createTask([step("a"), step("b", ["a"])]));
      expect(await d.walTypes()).toEqual(["task_created", "task_step_ready", "task_running"]);
    });

    it.each([
      ["an added dependency closes a cycle", [{ op: "add_dependency", step_id: "a", depends_on_step_id: "e" }], "dependency_cycle"],
      ["an added dependency names no step", [{ op: "add_dependency", step_id: "b", depends_on_step_id: "zz" }], "unknown_dependency"],
      ["an added step depends on no step", [{ op: "add_step", step: step("f", ["zz"]) }], "unknown_dependency"],
      ["an added step id exists", [{ op: "add_step", step: step("a") }], "duplicate_step"],
      ["a deleted step has dependents", [{ op: "delete_step", step_id: "a" }], "step_has_dependents"],
      ["a ready step is reopened", [{ op: "reopen_step", step_id: "a" }], "invalid_transition"],
      ["an op names no step", [{ op: "update_step", step_id: "zz", fields: { title: "x" } }], "not_found"],
      ["remove_dependency names no dependency", [{ op: "remove_dependency", step_id: "d", depends_on_step_id: "a" }], "validation_error"],
      ["update_task changes nothing", [{ op: "update_task" }], "validation_error"],
    ] as [string, Record<string, unknown>[], string][])("agent.task_update rejects a patch where %s and writes nothing", async (_name, ops, code) => {
      const d = await created(await makeDriver(), DIAMOND());
      await rejected(d, () => d.patchTask(ops), code);
    });

    it("agent.task_update is atomic: a later op failing rejects the whole patch and names the op", async () => {
      const d = await created(await makeDriver(), DIAMOND());
      const details = await rejected(d, () => d.patchTask([{ op: "add_step", step: step("f") }, { op: "update_task", title: "T2" }, { op: "delete_step", step_id: "a" }]), "step_has_dependents");
      expect(details.op_index).toBe(2);
    });

    it.each([
      ["update_task", [], [{ op: "update_task", title: "Renamed", summary: "new" }], (v: TaskStateView) => expect(v.task).toMatchObject({ title: "Renamed", summary: "new" })],
      [
        "add_step",
        [],
        [{ op: "add_step", step: step("f", ["a"], { required: false, worker_pool_id: "gpu" }) }],
        (v: TaskStateView) => expect(v.steps.f).toMatchObject({ status: "pending", required: false, worker_pool_id: "gpu", depends_on_step_ids: ["a"] }),
      ],
      ["add_step without dependencies", [], [{ op: "add_step", step: step("f") }], (v: TaskStateView) => expect(v.steps.f!.status).toBe("ready")],
      [
        "update_step",
        [],
        [{ op: "update_step", step_id: "b", fields: { title: "B2", depends_on_step_ids: [] } }],
        (v: TaskStateView) => expect(v.steps.b).toMatchObject({ title: "B2", depends_on_step_ids: [], status: "ready" }),
      ],
      ["delete_step", [], [{ op: "delete_step", step_id: "d" }], (v: TaskStateView) => expect(v.steps.d).toBeUndefined()],
      ["add_dependency", [], [{ op: "add_dependency", step_id: "d", depends_on_step_id: "a" }], (v: TaskStateView) => expect(v.steps.d).toMatchObject({ status: "pending", depends_on_step_ids: ["a"] })],
      ["remove_dependency", [], [{ op: "remove_dependency", step_id: "b", depends_on_step_id: "a" }], (v: TaskStateView) => expect(v.steps.b).toMatchObject({ status: "ready", depends_on_step_ids: [] })],
      ["cancel_step", [], [{ op: "cancel_step", step_id: "d", reason: "not needed" }], (v: TaskStateView) => expect(v.steps.d).toMatchObject({ status: "cancelled", status_reason: "not needed" })],
      ["reopen_step", ["d"], [{ op: "reopen_step", step_id: "d", reason: "retry" }], (v: TaskStateView) => expect(v.steps.d).toMatchObject({ status: "ready" })],
      [
        "several ops at once",
        [],
        [
          { op: "add_step", step: step("f") },
          { op: "add_step", step: step("g", ["f"]) },
          { op: "add_dependency", step_id: "e", depends_on_step_id: "g" },
          { op: "cancel_step", step_id: "d" },
        ],
        (v: TaskStateView) => {
          expect(v.steps.e!.depends_on_step_ids).toEqual(["b", "c", "g"]);
          expect(v.steps.g!.status).toBe("pending");
          expect(v.steps.d!.status).toBe("cancelled");
        },
      ],
    ] as [string, string[], Record<string, unknown>[], (v: TaskStateView) => void][])("agent.task_update applies %s and records it as task_updated", async (_name, failFirst, ops, check) => {
      const d = await created(await makeDriver(), DIAMOND());
      for (const id of failFirst) accepted(await d.updateStep("orchestrator", id, { status: "failed", reason: "broken" }));
      const before = (await d.walTypes()).length;
      accepted(await d.patchTask(ops));
      const written = (await d.walTypes()).slice(before);
      expect(written.length).toBeGreaterThanOrEqual(1);
      expect(written[0]).toBe("task_updated");
      check(await d.view());
    });
  });
}
