/** @module Seed 003 "Status": task and step status transitions as the task tools accept or refuse them. */
import { describe, expect, it } from "vitest";
import { DIAMOND, type MakeDriver, step, type TaskAction } from "./driver.js";
import { accepted, created, holder, rejected, typesAfter } from "./expect.js";

export function runStatus(makeDriver: MakeDriver): void {
  describe("Status", () => {
    it("agent.task_complete completes the task and cancels the ready optional steps once every required step is completed", async () => {
      const d = await created(await makeDriver(), [step("a"), step("opt", [], { required: false })]);
      accepted(await d.updateStep("orchestrator", "a", { status: "completed" }));
      const n = (await d.walTypes()).length;
      accepted(await d.task("complete", { reason: "done" }));
      expect(await typesAfter(d, n)).toEqual(["task_step_cancelled", "task_completed"]);
      const v = await d.view();
      expect(v.task).toMatchObject({ status: "completed", status_reason: "done", ended_at: expect.any(String) });
      expect(v.steps.opt).toMatchObject({ status: "cancelled", status_reason: "optional_step_cancelled_on_task_complete" });
    });

    it.each([
      ["fail", "failed", "task_failed"],
      ["cancel", "cancelled", "task_cancelled"],
    ] as [TaskAction, string, string][])("agent.task_%s stops every unfinished step and asks every run to cancel", async (action, status, reason) => {
      const d = await created(await makeDriver(), [step("a"), step("b", ["a"]), step("c")]);
      const w = await holder(d, "a");
      accepted(await d.updateStep("orchestrator", "c", { status: "completed" }));
      accepted(await d.task(action, { reason: "stop" }));
      const v = await d.view();
      expect(v.task.status).toBe(status);
      expect(v.steps.a).toMatchObject({ status, status_reason: reason, claimed_by_run_id: null });
      expect(v.steps.b).toMatchObject({ status, status_reason: reason });
      expect(v.steps.c!.status).toBe("completed");
      // 003: the run is asked to cancel and waited for while the task is already terminal.
      expect(v.runs[w.run_id]).toMatchObject({ status: "cancelling", ended_at: null, cancel_request: { reason, requested_by_agent_id: d.orchestratorAgentId } });
      expect(v.attempts[0]).toMatchObject({ step_id: "a", status: "cancelled" });
    });

    it("the orchestrator blocks the task and reopens it, and the task is running again", async () => {
      const d = await created(await makeDriver(), [step("a")]);
      accepted(await d.task("block", { reason: "need input" }));
      expect((await d.view()).task.status).toBe("blocked");
      const n = (await d.walTypes()).length;
      accepted(await d.task("reopen"));
      expect(await typesAfter(d, n)).toEqual(["task_reopened", "task_running"]);
      expect((await d.view()).task.status).toBe("running");
    });

    it.each([
      ["completed while a required step is not completed", [], "complete", "task_not_completeable"],
      ["reopened while not blocked", [], "reopen", "invalid_transition"],
      ["blocked twice", ["block"], "block", "invalid_transition"],
      ["completed after it was cancelled", ["cancel"], "complete", "task_terminal"],
      ["failed after it was cancelled", ["cancel"], "fail", "task_terminal"],
      ["cancelled twice", ["cancel"], "cancel", "task_terminal"],
      ["blocked after it failed", ["fail"], "block", "task_terminal"],
      ["reopened after it failed", ["fail"], "reopen", "task_terminal"],
    ] as [string, TaskAction[], TaskAction, string][])("the task tools refuse a task %s", async (_name, setup, action, code) => {
      const d = await created(await makeDriver(), [step("a")]);
      for (const p of setup) accepted(await d.task(p));
      await rejected(d, () => d.task(action), code);
    });

    it("agent.task_complete is refused with the held steps while a step (optional included) is claimed", async () => {
      const d = await created(await makeDriver(), [step("a", [], { required: false })]);
      await holder(d, "a");
      const details = await rejected(d, () => d.task("complete"), "task_not_completeable");
      expect(details.held_step_ids).toEqual(["a"]);
    });

    it.each([
      ["blocked", "block", "task_not_dispatchable"],
      ["cancelled", "cancel", "task_terminal"],
    ] as [string, TaskAction, string][])("agent.dispatch_worker is refused while the task is %s", async (_name, action, code) => {
      const d = await created(await makeDriver(), DIAMOND());
      accepted(await d.task(action));
      await rejected(d, () => d.dispatch(), code);
    });

    it("agent.task_update is refused with task_terminal once the task is cancelled", async () => {
      const d = await created(await makeDriver(), DIAMOND());
      accepted(await d.task("cancel"));
      await rejected(d, () => d.patchTask([{ op: "update_task", title: "x" }]), "task_terminal");
    });

    it("agent.task_update_step is refused with task_terminal once the task is completed, failed or cancelled", async () => {
      for (const end of ["fail", "cancel"] as const) {
        const d = await created(await makeDriver(), [step("a"), step("b")]);
        accepted(await d.task(end));
        await rejected(d, () => d.updateStep("orchestrator", "a", { status: "completed" }), "task_terminal");
      }
      const d = await created(await makeDriver(), [step("a"), step("b", [], { required: false })]);
      accepted(await d.updateStep("orchestrator", "a", { status: "completed" }));
      accepted(await d.task("complete"));
      await rejected(d, () => d.updateStep("orchestrator", "b", { status: "failed" }), "task_terminal");
    });

    it.each([
      ["completed", "a", "completed"],
      ["failed", "b", "failed"],
      ["blocked", "b", "blocked"],
      ["cancelled", "a", "cancelled"],
    ])("the orchestrator may set an unheld step %s", async (status, stepId, expected) => {
      const d = await created(await makeDriver(), DIAMOND());
      accepted(await d.updateStep("orchestrator", stepId, { status }));
      expect((await d.view()).steps[stepId]!.status).toBe(expected);
    });

    it.each([
      ["the worker sets its step ready", "w", "a", { status: "ready" }, "invalid_transition"],
      ["the worker sets its step pending", "w", "a", { status: "pending" }, "invalid_transition"],
      ["the orchestrator sets a failed step ready", "o-failed", "d", { status: "ready" }, "invalid_transition"],
      ["a running step goes back to claimed", "w-running", "a", { status: "claimed" }, "invalid_transition"],
      ["the orchestrator cancels a held step", "o", "a", { status: "cancelled" }, "invalid_transition"],
      ["the orchestrator completes a pending step", "o", "b", { status: "completed" }, "invalid_transition"],
      ["the orchestrator sets an unheld step running", "o", "d", { status: "running" }, "invalid_transition"],
      ["the step does not exist", "o", "zz", { status: "completed" }, "not_found"],
    ])("agent.task_update_step refuses when %s", async (_name, who, stepId, body, code) => {
      const d = await created(await makeDriver(), DIAMOND());
      const w = await holder(d, "a", { max_steps: 5 });
      if (who === "w-running") accepted(await d.updateStep(w, "a", { status: "running" }));
      if (who === "o-failed") accepted(await d.updateStep("orchestrator", "d", { status: "failed" }));
      await rejected(d, () => d.updateStep(who.startsWith("o") ? "orchestrator" : w, stepId, body), code);
    });

    it.each([
      ["running", {}, "task_step_started"],
      ["completed", { result_summary: "found it", artifact_ids: ["r2://out/a.md"] }, "task_step_completed"],
      ["failed", { reason: "tool crashed" }, "task_step_failed"],
      ["blocked", { reason: "needs a key" }, "task_step_blocked"],
      ["cancelled", { reason: "wrong approach" }, "task_step_cancelled"],
    ])("the holder sets its step %s and the core writes that step's own event", async (status, extra, eventType) => {
      const d = await created(await makeDriver(), DIAMOND());
      const w = await holder(d, "a", { max_steps: 5 });
      const n = (await d.walTypes()).length;
      accepted(await d.updateStep(w, "a", { status, ...extra }));
      expect((await typesAfter(d, n))[0]).toBe(eventType);
      const v = await d.view();
      expect(v.steps.a!.status).toBe(status);
      if (status === "completed") {
        expect(v.steps.a).toMatchObject({ result_summary: "found it", artifact_ids: ["r2://out/a.md"], claimed_by_run_id: null, lease_expires_at: null });
        expect(v.steps.b!.status).toBe("ready");
        expect(v.steps.c!.status).toBe("ready");
        expect(v.attempts[0]).toMatchObject({ status: "completed", result_summary: "found it", ended_at: expect.any(String) });
      }
      if (status === "running") expect(v.steps.a!.claimed_by_run_id).toBe(w.run_id);
    });
  });
}
