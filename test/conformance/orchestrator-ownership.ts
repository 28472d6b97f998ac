/** @module Who owns what (docs/model.md "Roles"): the orchestrator owns the DAG; a worker runs the steps it claims. */
import { describe, expect, it } from "vitest";
import { BASE, type MakeDriver, step } from "./drivers/driver.js";
import { accepted, created, holder, rejected, typesAfter, worker } from "./drivers/expect.js";

/** Registers the "Orchestrator Ownership" rules against the drivers `makeDriver` makes. */
export function runOrchestratorOwnership(makeDriver: MakeDriver): void {
  describe("Orchestrator Ownership", () => {
    it("the orchestrator maintains blocked state and worker_pool_id; ready is maintained by the core", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "c");
      // Nobody writes ready or pending by hand.
      await rejected(d, () => d.updateStep("orchestrator", "b", { status: "ready" }), "invalid_transition");
      await rejected(d, () => d.updateStep(w, "c", { status: "ready" }), "invalid_transition");
      await rejected(d, () => d.updateStep(w, "c", { status: "pending" }), "invalid_transition");
      // The orchestrator sets blocked and the pool.
      let n = (await d.walTypes()).length;
      accepted(await d.updateStep("orchestrator", "d", { status: "blocked", reason: "needs input" }));
      expect(await typesAfter(d, n)).toEqual(["task_step_blocked"]);
      expect((await d.view()).steps.d!.status).toBe("blocked");
      accepted(await d.patchTask([{ op: "update_step", step_id: "b", fields: { worker_pool_id: "gpu" } }]));
      expect((await d.view()).steps.b!.worker_pool_id).toBe("gpu");
      // Completing a makes b ready in the same decision, without anyone asking.
      const wa = await holder(d, "a");
      n = (await d.walTypes()).length;
      accepted(await d.updateStep(wa, "a", { status: "completed" }));
      expect(await typesAfter(d, n)).toEqual(["task_step_completed", "task_step_ready"]);
      expect((await d.view()).steps.b!.status).toBe("ready");
    });

    it.each([
      ["title", { title: "Hijack" }],
      ["summary", { summary: "Hijack" }],
      ["depends_on_step_ids", { depends_on_step_ids: [] }],
      ["worker_pool_id", { worker_pool_id: "gpu" }],
      ["required", { required: false }],
    ])("a worker cannot change task content (step %s through update_step)", async (_n, field) => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "a");
      await rejected(d, () => d.updateStep(w, "a", { status: "running", ...field }), "validation_error");
      await rejected(d, () => d.patchTask([{ op: "update_step", step_id: "a", fields: field }], w), "tool_not_available");
      expect((await d.view()).steps.a).toMatchObject({ title: "Step a", summary: "Do a", depends_on_step_ids: [], worker_pool_id: "default", required: true, status: "claimed" });
    });

    it("a worker can read the task's steps it can see", async () => {
      const d = await created(await makeDriver(), [step("a"), step("b", ["a"]), step("g", [], { worker_pool_id: "gpu" })]);
      const w = await worker(d);
      expect(accepted(await d.querySteps(w)).step_ids).toEqual(["a"]);
      expect(accepted(await d.querySteps(w, { statuses: ["pending", "ready"] })).step_ids).toEqual(["a", "b"]);
      const g = await worker(d, { worker_pool_id: "gpu" });
      expect(accepted(await d.querySteps(g)).step_ids).toEqual(["g"]);
    });

    it("a worker can claim a step it may execute", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await worker(d);
      const n = (await d.walTypes()).length;
      accepted(await d.claim(w, "c"));
      expect(await typesAfter(d, n)).toEqual(["task_step_claimed"]);
      expect((await d.view()).steps.c).toMatchObject({ status: "claimed", claimed_by_agent_id: w.agent_id, claimed_by_run_id: w.run_id });
    });

    it.each([
      ["claimed", "claimed", ["task_step_updated"]],
      ["running", "running", ["task_step_started"]],
      ["blocked", "blocked", ["task_step_blocked"]],
      ["completed", "completed", ["task_step_completed", "task_step_ready"]],
      ["failed", "failed", ["task_step_failed"]],
    ])("a worker can set its own claimed step's execution status to %s", async (to, status, types) => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "a");
      const n = (await d.walTypes()).length;
      accepted(await d.updateStep(w, "a", { status: to }));
      expect(await typesAfter(d, n)).toEqual(types);
      expect((await d.view()).steps.a!.status).toBe(status);
    });

    it("a worker can write result_summary and artifact_ids on its claimed step", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "a");
      accepted(await d.updateStep(w, "a", { status: "running", result_summary: "half", artifact_ids: ["art_1"] }));
      expect((await d.view()).steps.a).toMatchObject({ result_summary: "half", artifact_ids: ["art_1"] });
      accepted(await d.updateStep(w, "a", { status: "completed", result_summary: "done", artifact_ids: ["art_1", "art_2"] }));
      const v = await d.view();
      expect(v.steps.a).toMatchObject({ status: "completed", result_summary: "done", artifact_ids: ["art_1", "art_2"] });
      expect(v.attempts.filter((x) => x.step_id === "a")[0]!.result_summary).toBe("done");
    });

    it("a worker cannot change other steps", async () => {
      const d = await created(await makeDriver(), BASE());
      const w1 = await holder(d, "a");
      const w2 = await holder(d, "c");
      await rejected(d, () => d.updateStep(w1, "c", { status: "completed" }), "permission_denied"); // held by another run
      await rejected(d, () => d.updateStep(w1, "d", { status: "running" }), "permission_denied"); // ready, held by nobody
      await rejected(d, () => d.updateStep(w1, "b", { status: "failed" }), "permission_denied"); // pending
      await rejected(d, () => d.progress(w1, "c", { summary: "mine now" }), "permission_denied");
      expect((await d.view()).steps.c).toMatchObject({ status: "claimed", claimed_by_run_id: w2.run_id });
    });

    it.each([
      ["add_step", { op: "add_step", step: step("x") }],
      ["delete_step", { op: "delete_step", step_id: "d" }],
      ["add_dependency", { op: "add_dependency", step_id: "d", depends_on_step_id: "c" }],
      ["remove_dependency", { op: "remove_dependency", step_id: "b", depends_on_step_id: "a" }],
      ["update_step depends_on_step_ids", { op: "update_step", step_id: "b", fields: { depends_on_step_ids: [] } }],
      ["cancel_step", { op: "cancel_step", step_id: "d" }],
    ])("a worker cannot change the DAG topology (%s)", async (_n, op) => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "a");
      await rejected(d, () => d.patchTask([op], w), "tool_not_available");
      const v = await d.view();
      expect(Object.keys(v.steps)).toEqual(["a", "b", "c", "d"]);
      expect(v.steps.b!.depends_on_step_ids).toEqual(["a"]);
    });
  });
}
