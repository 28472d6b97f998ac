/** @module Task tools (docs/model.md "Tools"): agent.task_complete, agent.task_fail and agent.task_cancel. */
import { describe, expect, it } from "vitest";
import { BASE, type MakeDriver, step, type TaskRuntimeDriver } from "../drivers/driver.js";
import { accepted, created, done, holder, rejected, typesAfter, worker } from "../drivers/expect.js";

/** Registers the rules of agent.task_complete, agent.task_fail and agent.task_cancel against the drivers `makeDriver` makes. */
export function registerCloseTask(makeDriver: MakeDriver): void {
  describe("agent.task_complete / agent.task_fail / agent.task_cancel", () => {
    /** Claims and completes `id` with a fresh worker whose run stays active. */
    const complete = async (d: TaskRuntimeDriver, id: string) => {
      const w = await holder(d, id);
      accepted(await d.updateStep(w, id, { status: "completed", result_summary: `${id} done` }));
    };

    it("task_complete requires every required step completed", async () => {
      const d = await created(await makeDriver(), BASE());
      for (const id of ["a", "b", "c"]) await complete(d, id);
      const details = await rejected(d, () => d.task("complete"), "task_not_completeable");
      expect(details).toMatchObject({ required_not_completed: ["d"] });
      await complete(d, "d");
      const n = (await d.walTypes()).length;
      accepted(await d.task("complete"));
      expect(await typesAfter(d, n)).toContain("task_completed");
    });

    it("task_complete refuses while any step is claimed or running, optional ones included", async () => {
      const d = await created(await makeDriver(), [step("a"), step("o", [], { required: false })]);
      await complete(d, "a");
      const w = await holder(d, "o");
      const details = await rejected(d, () => d.task("complete"), "task_not_completeable");
      expect(details).toMatchObject({ held_step_ids: ["o"] });
      accepted(await d.updateStep(w, "o", { status: "running" }));
      await rejected(d, () => d.task("complete"), "task_not_completeable");
      accepted(await d.updateStep(w, "o", { status: "failed" }));
      // The two runs (a's and o's) are still active: each ends, then the task completes.
      const n = (await d.walTypes()).length;
      accepted(await d.task("complete"));
      expect(await typesAfter(d, n)).toEqual(["worker_run_ended", "worker_run_ended", "task_completed"]);
      expect((await d.view()).steps.o!.status).toBe("failed");
    });

    it("task_complete cancels pending and ready optional steps, one task_step_cancelled each", async () => {
      const d = await created(await makeDriver(), [step("a"), step("o1", [], { required: false }), step("o2", ["o1"], { required: false }), step("o3", [], { required: false })]);
      await complete(d, "a");
      const w = await holder(d, "o3");
      accepted(await d.updateStep(w, "o3", { status: "blocked" }));
      const n = (await d.walEvents()).length;
      accepted(await d.task("complete"));
      expect((await d.walEvents()).slice(n).map((e) => [e.event_type, e.step_id])).toEqual([
        ["task_step_cancelled", "o1"],
        ["task_step_cancelled", "o2"],
        ["worker_run_ended", null],
        ["worker_run_ended", null],
        ["task_completed", null],
      ]);
      const v = await d.view();
      expect(["a", "o1", "o2", "o3"].map((id) => v.steps[id]!.status)).toEqual(["completed", "cancelled", "cancelled", "blocked"]);
    });

    it.each(["fail", "cancel"] as const)("task_%s keeps completed, failed and cancelled steps as they are", async (action) => {
      const d = await created(await makeDriver(), BASE());
      await complete(d, "a");
      const w = await holder(d, "c");
      accepted(await d.updateStep(w, "c", { status: "failed", reason: "own" }));
      accepted(await d.patchTask([{ op: "cancel_step", step_id: "d", reason: "skip" }]));
      const n = (await d.walEvents()).length;
      accepted(await d.task(action));
      expect((await d.walEvents()).slice(n).filter((e) => e.step_id !== null).map((e) => e.step_id)).toEqual(["b"]);
      const v = await d.view();
      expect(v.steps.a).toMatchObject({ status: "completed", result_summary: "a done" });
      expect(v.steps.c).toMatchObject({ status: "failed", status_reason: "own" });
      expect(v.steps.d).toMatchObject({ status: "cancelled", status_reason: "skip" });
    });
  });
}
