/** @module Task tools (docs/model.md "Tools"): a worker run's end and its fallback for the step it still holds. */
import { describe, expect, it } from "vitest";
import { BASE, DIAMOND, type MakeDriver } from "../drivers/driver.js";
import { accepted, created, holder, rejected, typesAfter, worker } from "../drivers/expect.js";

/** Registers the rules of a worker run's end and its fallback for the step it still holds against the drivers `makeDriver` makes. */
export function registerRunEnd(makeDriver: MakeDriver): void {
  describe("a worker run's end", () => {
    it.each([
      ["finished", "finished", "worker_finished_without_terminal_step_status", "failed"],
      ["cancelled", "cancelled", "worker_cancelled", "cancelled"],
      ["timeout", "timed_out", "worker_timeout", "timed_out"],
    ])("a run ending with outcome %s fails the step it still holds with the fallback reason", async (outcome, runStatus, reason, attemptStatus) => {
      const d = await created(await makeDriver(), DIAMOND());
      const w = await holder(d, "a");
      const n = (await d.walTypes()).length;
      accepted(await d.finishRun(w, w.run_id, outcome, { note: "bye" }));
      expect(await typesAfter(d, n)).toEqual(["task_step_failed", "worker_run_ended"]);
      const v = await d.view();
      expect(v.steps.a).toMatchObject({ status: "failed", status_reason: reason, result_summary: reason, claimed_by_run_id: null });
      expect(v.attempts).toEqual([expect.objectContaining({ step_id: "a", status: attemptStatus, last_error: reason })]);
      expect(v.runs[w.run_id]).toMatchObject({ status: runStatus, status_reason: reason, result: { note: "bye" }, current_step_id: null });
    });

    it("a run that holds nothing ends without touching a step", async () => {
      const d = await created(await makeDriver(), DIAMOND());
      const w = await worker(d);
      const before = await d.view();
      const n = (await d.walTypes()).length;
      accepted(await d.finishRun("orchestrator", w.run_id, "finished"));
      expect(await typesAfter(d, n)).toEqual(["worker_run_ended"]);
      const after = await d.view();
      expect(after.steps).toEqual(before.steps);
      expect(after.runs[w.run_id]!.status).toBe("finished");
    });

    it("a run that has ended cannot be finished or cancelled again", async () => {
      const d = await created(await makeDriver(), DIAMOND());
      const w = await worker(d);
      accepted(await d.finishRun(w, w.run_id, "finished"));
      await rejected(d, () => d.finishRun("orchestrator", w.run_id, "finished"), "invalid_transition");
      await rejected(d, () => d.cancelRun(w.run_id), "invalid_transition");
    });

    it("the orchestrator cancelling a run fails its held step with worker_cancelled", async () => {
      const d = await created(await makeDriver(), DIAMOND());
      const w = await holder(d, "a");
      accepted(await d.cancelRun(w.run_id, "too slow"));
      const v = await d.view();
      expect(v.steps.a).toMatchObject({ status: "failed", status_reason: "worker_cancelled" });
      expect(v.runs[w.run_id]).toMatchObject({ status: "cancelled", status_reason: "too slow" });
      expect(v.attempts[0]!.status).toBe("cancelled");
    });

    it.each(["finish", "cancel"])("%s of an unknown run is refused with not_found", async (what) => {
      const d = await created(await makeDriver(), DIAMOND());
      await rejected(d, () => (what === "finish" ? d.finishRun("orchestrator", "run_nope", "finished") : d.cancelRun("run_nope")), "not_found");
    });

    it("a run that finishes cleanly, holding no step, ends finished with reason finished and fails nothing", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "a");
      accepted(await d.updateStep(w, "a", { status: "completed" }));
      const n = (await d.walTypes()).length;
      accepted(await d.finishRun(w, w.run_id, "finished", { note: "ok" }));
      expect(await typesAfter(d, n)).toEqual(["worker_run_ended"]);
      const v = await d.view();
      expect(v.runs[w.run_id]).toMatchObject({ status: "finished", status_reason: "finished", result: { note: "ok" } });
      expect(v.steps.a!.status).toBe("completed");
    });

    it("a run ending normally while its step is running fails it with worker_finished_without_terminal_step_status", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "a");
      accepted(await d.updateStep(w, "a", { status: "running", result_summary: "halfway" }));
      const n = (await d.walTypes()).length;
      accepted(await d.finishRun(w, w.run_id, "finished", { text: "I stopped" }));
      expect(await typesAfter(d, n)).toEqual(["task_step_failed", "worker_run_ended"]);
      const v = await d.view();
      expect(v.steps.a).toMatchObject({ status: "failed", result_summary: "worker_finished_without_terminal_step_status" });
      expect(v.runs[w.run_id]!.result).toEqual({ text: "I stopped" });
    });

    it("a step the run already took to completed, failed, blocked or cancelled is left alone", async () => {
      for (const to of ["completed", "failed", "blocked", "cancelled"]) {
        const d = await created(await makeDriver(), BASE());
        const w = await holder(d, "a");
        accepted(await d.updateStep(w, "a", { status: to, result_summary: "mine" }));
        const n = (await d.walTypes()).length;
        accepted(await d.finishRun(w, w.run_id, "finished"));
        expect(await typesAfter(d, n)).toEqual(["worker_run_ended"]);
        expect((await d.view()).steps.a).toMatchObject({ status: to });
      }
    });
  });
}
