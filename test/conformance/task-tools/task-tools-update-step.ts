/** @module Task tools (docs/model.md "Tools"): agent.task_update_step: execution status and results. */
import { describe, expect, it } from "vitest";
import { BASE, type MakeDriver, step } from "../drivers/driver.js";
import { accepted, created, holder, rejected, typesAfter, worker } from "../drivers/expect.js";

/** Registers the rules of agent.task_update_step against the drivers `makeDriver` makes. */
export function registerUpdateStep(makeDriver: MakeDriver): void {
  describe("agent.task_update_step", () => {
    it.each([
      ["title", { title: "x" }],
      ["summary", { summary: "x" }],
      ["depends_on_step_ids", { depends_on_step_ids: [] }],
      ["worker_pool_id", { worker_pool_id: "gpu" }],
      ["required", { required: false }],
    ])("changes execution status and results only: %s is a validation_error for every agent", async (_n, field) => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "a");
      await rejected(d, () => d.updateStep(w, "a", { status: "running", ...field }), "validation_error");
      await rejected(d, () => d.updateStep("orchestrator", "a", { status: "running", ...field }), "validation_error");
      await rejected(d, () => d.updateStep("orchestrator", "d", { status: "blocked", ...field }), "validation_error");
    });

    it("the orchestrator may update the execution status and results of any step", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "a");
      const by = async (stepId: string, body: Record<string, unknown>) => {
        const n = (await d.walTypes()).length;
        accepted(await d.updateStep("orchestrator", stepId, body));
        return typesAfter(d, n);
      };
      expect(await by("a", { status: "running" })).toEqual(["task_step_started"]);
      expect(await by("a", { status: "completed", result_summary: "by orch" })).toEqual(["task_step_completed", "task_step_ready"]);
      const v = await d.view();
      expect(v.steps.a).toMatchObject({ status: "completed", result_summary: "by orch", claimed_by_run_id: null });
      expect(v.runs[w.run_id]!.current_step_id).toBeNull();
      expect(await by("c", { status: "blocked", reason: "wait" })).toEqual(["task_step_blocked"]);
      expect(await by("d", { status: "failed", result_summary: "skip" })).toEqual(["task_step_failed"]);
      expect(await by("b", { status: "cancelled" })).toEqual(["task_step_cancelled"]);
    });

    it("a completed step's results cannot be changed by any task tool", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "a");
      accepted(await d.updateStep(w, "a", { status: "completed", result_summary: "final", artifact_ids: ["x"] }));
      for (const status of ["running", "completed", "failed", "blocked", "cancelled", "claimed"]) {
        await rejected(d, () => d.updateStep("orchestrator", "a", { status, result_summary: "rewrite" }), "invalid_transition");
        await rejected(d, () => d.updateStep(w, "a", { status, result_summary: "rewrite" }), "permission_denied");
      }
      await rejected(d, () => d.patchTask([{ op: "update_step", step_id: "a", fields: { result_summary: "rewrite" } }]), "validation_error");
      await rejected(d, () => d.patchTask([{ op: "delete_step", step_id: "a" }]), "invalid_transition");
      await rejected(d, () => d.patchTask([{ op: "remove_dependency", step_id: "b", depends_on_step_id: "a" }, { op: "delete_step", step_id: "a" }]), "invalid_transition");
      await rejected(d, () => d.patchTask([{ op: "reopen_step", step_id: "a" }]), "invalid_transition");
      await rejected(d, () => d.patchTask([{ op: "cancel_step", step_id: "a" }]), "invalid_transition");
      expect((await d.view()).steps.a).toMatchObject({ status: "completed", result_summary: "final", artifact_ids: ["x"] });
    });

    it.each([
      ["block", "blocked", { reason: "need creds", result_summary: "stuck" }],
      ["fail", "failed", { reason: "tests red" }],
    ])("a worker may %s its claimed step but cannot bring it back", async (_verb, status, extra) => {
      const d = await created(await makeDriver(), BASE());
      const w = await worker(d, { max_steps: 2 });
      accepted(await d.claim(w, "a"));
      accepted(await d.updateStep(w, "a", { status, ...extra }));
      expect((await d.view()).steps.a).toMatchObject({ status, status_reason: extra.reason, ...("result_summary" in extra ? { result_summary: extra.result_summary } : {}) });
      await rejected(d, () => d.updateStep(w, "a", { status: "pending" }), "invalid_transition");
      await rejected(d, () => d.updateStep(w, "a", { status: "ready" }), "invalid_transition");
      await rejected(d, () => d.updateStep(w, "a", { status: "running" }), "permission_denied");
      await rejected(d, () => d.claim(w, "a"), "invalid_transition");
      await rejected(d, () => d.patchTask([{ op: "reopen_step", step_id: "a" }], w), "tool_not_available");
      expect((await d.view()).steps.a!.status).toBe(status);
    });

    it("only the orchestrator recovers a failed step, back to pending (task_step_reopened), then readiness", async () => {
      const d = await created(await makeDriver(), [step("r"), step("a", ["r"]), step("b", ["a"])]);
      const wr = await holder(d, "r");
      accepted(await d.updateStep(wr, "r", { status: "completed", result_summary: "r done" }));
      const w = await holder(d, "a");
      accepted(await d.updateStep(w, "a", { status: "failed" }));
      await rejected(d, () => d.updateStep("orchestrator", "a", { status: "running" }), "invalid_transition");
      await rejected(d, () => d.updateStep("orchestrator", "a", { status: "completed" }), "invalid_transition");
      const n = (await d.walTypes()).length;
      accepted(await d.patchTask([{ op: "reopen_step", step_id: "a" }]));
      expect(await typesAfter(d, n)).toEqual(["task_updated", "task_step_reopened", "task_step_ready"]);
      const v = await d.view();
      expect([v.steps.a!.status, v.steps.b!.status]).toEqual(["ready", "pending"]);
    });

    it.each([
      ["completed", ["task_step_completed", "task_step_ready"]],
      ["failed", ["task_step_failed"]],
      ["cancelled", ["task_step_cancelled"]],
    ])("a change from running to %s writes its own terminal event", async (to, types) => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "a");
      accepted(await d.updateStep(w, "a", { status: "running" }));
      const n = (await d.walTypes()).length;
      accepted(await d.updateStep(w, "a", { status: to, reason: "r" }));
      expect(await typesAfter(d, n)).toEqual(types);
      expect((await d.view()).steps.a!.status).toBe(to);
    });

    it("task_step_updated never stands for a start, a block or a terminal change", async () => {
      const seen: Record<string, string[]> = {};
      for (const from of ["claimed", "running"] as const) {
        for (const to of ["claimed", "running", "blocked", "completed", "failed", "cancelled"] as const) {
          const d = await created(await makeDriver(), [step("a")]);
          const w = await holder(d, "a");
          if (from === "running") accepted(await d.updateStep(w, "a", { status: "running" }));
          const n = (await d.walTypes()).length;
          const a = await d.updateStep(w, "a", { status: to });
          seen[`${from}->${to}`] = a.ok ? await typesAfter(d, n) : [a.code];
        }
      }
      expect(seen).toEqual({
        "claimed->claimed": ["task_step_updated"],
        "claimed->running": ["task_step_started"],
        "claimed->blocked": ["task_step_blocked"],
        "claimed->completed": ["task_step_completed"],
        "claimed->failed": ["task_step_failed"],
        "claimed->cancelled": ["task_step_cancelled"],
        "running->claimed": ["invalid_transition"],
        "running->running": ["task_step_updated"],
        "running->blocked": ["task_step_blocked"],
        "running->completed": ["task_step_completed"],
        "running->failed": ["task_step_failed"],
        "running->cancelled": ["task_step_cancelled"],
      });
    });
  });
}
