/** @module Permissions (docs/model.md "Roles"): which caller may use which task tool, and on which steps. */
import { describe, expect, it } from "vitest";
import { BASE, type Caller, type MakeDriver, type TaskRuntimeDriver } from "./drivers/driver.js";
import { accepted, created, holder, rejected } from "./drivers/expect.js";

/** The orchestrator-only tools, as calls by `by`. */
const ORCHESTRATOR_TOOLS: [string, (d: TaskRuntimeDriver, by: Caller) => Promise<unknown>][] = [
  ["create_task", (d, by) => d.createTask([], { task_id: "t2", wal_name: "w2", title: "T" }, by)],
  ["update_task", (d, by) => d.patchTask([{ op: "update_task", title: "x" }], by)],
  ["complete_task", (d, by) => d.task("complete", {}, by)],
  ["fail_task", (d, by) => d.task("fail", {}, by)],
  ["cancel_task", (d, by) => d.task("cancel", {}, by)],
  ["block_task", (d, by) => d.task("block", {}, by)],
  ["reopen_task", (d, by) => d.task("reopen", {}, by)],
  ["dispatch_worker", (d, by) => d.dispatch({}, by)],
  ["cancel_run", (d, by) => d.cancelRun("run_x", undefined, by)],
];

/** Registers the "Permission" rules against the drivers `makeDriver` makes. */
export function runPermission(makeDriver: MakeDriver): void {
  describe("Permission", () => {
    it.each(ORCHESTRATOR_TOOLS)("a worker calling %s, outside its tool set, gets tool_not_available", async (_n, call) => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "a");
      await rejected(d, () => call(d, w) as never, "tool_not_available");
    });

    it.each([
      ["update_step", (d: TaskRuntimeDriver) => d.updateStep("observer", "a", { status: "running" })],
      ["claim_step", (d: TaskRuntimeDriver) => d.claim("observer", "a")],
      ["claim_next", (d: TaskRuntimeDriver) => d.claimNext("observer")],
      ["append_progress", (d: TaskRuntimeDriver) => d.progress("observer", "a", { summary: "x" })],
      ["update_task", (d: TaskRuntimeDriver) => d.patchTask([{ op: "update_task", title: "x" }], "observer")],
      ["complete_task", (d: TaskRuntimeDriver) => d.task("complete", {}, "observer")],
      ["dispatch_worker", (d: TaskRuntimeDriver) => d.dispatch({}, "observer")],
      ["finish_run", (d: TaskRuntimeDriver) => d.finishRun("observer", "run_x", "finished")],
    ])("an observer gets no task write tool: %s is tool_not_available", async (_n, call) => {
      const d = await created(await makeDriver(), BASE());
      await rejected(d, () => call(d) as never, "tool_not_available");
    });

    it("a worker reaching beyond its own step and run gets permission_denied", async () => {
      const d = await created(await makeDriver(), BASE());
      const w1 = await holder(d, "a");
      const w2 = await holder(d, "c");
      await rejected(d, () => d.updateStep(w1, "c", { status: "completed", result_summary: "stolen" }), "permission_denied");
      await rejected(d, () => d.progress(w1, "c", { summary: "x" }), "permission_denied");
      await rejected(d, () => d.finishRun(w1, w2.run_id, "cancelled"), "permission_denied");
      expect((await d.view()).steps.c).toMatchObject({ status: "claimed", claimed_by_run_id: w2.run_id, result_summary: null });
    });

    it("the orchestrator's task writes still go through state, DAG and WAL checks", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "a");
      await rejected(d, () => d.patchTask([{ op: "add_dependency", step_id: "a", depends_on_step_id: "b" }]), "dependency_cycle");
      await rejected(d, () => d.patchTask([{ op: "delete_step", step_id: "a" }]), "invalid_transition");
      await rejected(d, () => d.patchTask([{ op: "cancel_step", step_id: "a" }]), "invalid_transition");
      await rejected(d, () => d.updateStep("orchestrator", "a", { status: "cancelled" }), "invalid_transition");
      await rejected(d, () => d.updateStep("orchestrator", "b", { status: "completed" }), "invalid_transition");
      await rejected(d, () => d.task("complete"), "task_not_completeable");
      await rejected(d, () => d.createTask([], { title: "P" }), "task_id_conflict");
      accepted(await d.task("fail"));
      await rejected(d, () => d.patchTask([{ op: "update_task", title: "x" }]), "task_terminal");
      await rejected(d, () => d.updateStep("orchestrator", "a", { status: "completed" }), "task_terminal");
      expect((await d.view()).runs[w.run_id]!.status).toBe("cancelling");
    });
  });
}
