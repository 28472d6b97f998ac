/** @module Task tools (docs/model.md "Tools"): agent.task_claim_step and claim-next: what a run may claim, and when. */
import { describe, expect, it } from "vitest";
import { BASE, DIAMOND, type MakeDriver, step } from "../drivers/driver.js";
import { accepted, created, holder, rejected, typesAfter, worker } from "../drivers/expect.js";

/** Registers the rules of agent.task_claim_step and claim-next against the drivers `makeDriver` makes. */
export function registerClaimStep(makeDriver: MakeDriver): void {
  describe("agent.task_claim_step and claim-next", () => {
    it("a claim holds the ready step for the run with a lease and an active attempt", async () => {
      const d = await created(await makeDriver(), DIAMOND());
      const w = await worker(d, { agent_id: "w1" });
      const n = (await d.walTypes()).length;
      const c = accepted(await d.claim(w, "a"));
      expect(c).toEqual({ step_id: "a", attempt_id: expect.any(String) });
      expect(await typesAfter(d, n)).toEqual(["task_step_claimed"]);
      const v = await d.view();
      expect(v.steps.a).toMatchObject({ status: "claimed", claimed_by_run_id: w.run_id, lease_expires_at: expect.any(String) });
      expect(v.attempts).toEqual([expect.objectContaining({ step_id: "a", run_id: w.run_id, status: "active" })]);
    });

    it("claim-next claims the first ready step in creation order within the run's scope", async () => {
      const d = await created(await makeDriver(), DIAMOND());
      const w = await worker(d);
      expect(accepted(await d.claimNext(w)).step_id).toBe("a");
      expect((await d.view()).steps.a).toMatchObject({ status: "claimed", claimed_by_run_id: w.run_id });
      const second = await worker(d, { allowed_step_ids: ["a", "d"] });
      expect(accepted(await d.claimNext(second)).step_id).toBe("d");
    });

    it.each([
      ["no ready step is in scope", { allowed_step_ids: ["b", "c"] }, false, "no_ready_step"],
      ["no ready step is in the run's pool", { worker_pool_id: "gpu" }, false, "no_ready_step"],
      ["the run has used its claims", {}, true, "run_budget_spent"],
    ])("claim-next answers no step claimed and writes nothing when %s", async (_name, opts, useBudget, reason) => {
      const d = await created(await makeDriver(), DIAMOND());
      const w = await worker(d, opts);
      if (useBudget) {
        accepted(await d.claimNext(w));
        accepted(await d.updateStep(w, "a", { status: "completed" }));
      }
      const wal = await d.walTypes();
      expect(accepted(await d.claimNext(w))).toEqual({ step_id: null, reason });
      expect(await d.walTypes()).toEqual(wal);
    });

    it.each([
      ["the run already holds a step", "hold", "step_already_claimed_by_run"],
      ["the task is blocked", "block", "task_not_dispatchable"],
    ])("claim-next is refused when %s", async (_name, setup, code) => {
      const d = await created(await makeDriver(), DIAMOND());
      const w = await worker(d);
      if (setup === "hold") accepted(await d.claimNext(w));
      else accepted(await d.task("block"));
      await rejected(d, () => d.claimNext(w), code);
    });

    it.each([
      ["another run holds the step", "other-holds", "a", "step_already_claimed"],
      ["this run already holds a step", "self-holds", "d", "step_already_claimed_by_run"],
      ["this run has used its claims", "self-done", "d", "step_already_claimed_by_run"],
      ["the step is pending", "", "b", "invalid_transition"],
      ["the step is completed", "orch-completes-a", "a", "invalid_transition"],
      ["the step does not exist", "", "zz", "not_found"],
      ["the task is blocked", "block", "a", "task_not_dispatchable"],
      ["the task is cancelled", "cancel", "a", "task_terminal"],
    ])("a claim is refused when %s", async (_name, setup, stepId, code) => {
      const d = await created(await makeDriver(), DIAMOND());
      const w = await worker(d);
      if (setup === "other-holds") await holder(d, "a");
      else if (setup === "self-holds") accepted(await d.claim(w, "a"));
      else if (setup === "self-done") {
        accepted(await d.claim(w, "a"));
        accepted(await d.updateStep(w, "a", { status: "completed" }));
      } else if (setup === "orch-completes-a") accepted(await d.updateStep("orchestrator", "a", { status: "completed" }));
      else if (setup === "block" || setup === "cancel") accepted(await d.task(setup));
      await rejected(d, () => d.claim(w, stepId), code);
    });

    it("one claim per run: a run holding a step gets step_already_claimed_by_run on a second claim", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "a");
      const details = await rejected(d, () => d.claim(w, "c"), "step_already_claimed_by_run");
      expect(details).toMatchObject({ step_id: "a" });
      await rejected(d, () => d.claimNext(w), "step_already_claimed_by_run");
      accepted(await d.updateStep(w, "a", { status: "running" }));
      await rejected(d, () => d.claim(w, "d"), "step_already_claimed_by_run");
    });

    it("a single-step run that has finished its claim gets step_already_claimed_by_run again", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "a");
      accepted(await d.updateStep(w, "a", { status: "completed" }));
      await rejected(d, () => d.claim(w, "c"), "step_already_claimed_by_run");
    });

    it("claims only ready, visible, dependency-complete, lease-free steps", async () => {
      const d = await created(await makeDriver(), [step("a"), step("b", ["a"]), step("g", [], { worker_pool_id: "gpu" }), step("c"), step("k")]);
      await holder(d, "c");
      const wk = await holder(d, "k");
      accepted(await d.updateStep(wk, "k", { status: "completed", result_summary: "k done" }));
      const w = await worker(d);
      await rejected(d, () => d.claim(w, "b"), "invalid_transition"); // dependency not completed
      await rejected(d, () => d.claim(w, "g"), "permission_denied"); // other pool
      await rejected(d, () => d.claim(w, "c"), "step_already_claimed"); // live lease
      await rejected(d, () => d.claim(w, "k"), "invalid_transition"); // completed
      await rejected(d, () => d.claim(w, "nope"), "not_found");
      const n = (await d.walTypes()).length;
      accepted(await d.claim(w, "a"));
      expect(await typesAfter(d, n)).toEqual(["task_step_claimed"]);
    });

    it("with allowed_step_ids a run claims only steps inside them", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await worker(d, { allowed_step_ids: ["c"] });
      await rejected(d, () => d.claim(w, "a"), "permission_denied");
      await rejected(d, () => d.claim(w, "d"), "permission_denied");
      const n = (await d.walTypes()).length;
      accepted(await d.claim(w, "c"));
      expect(await typesAfter(d, n)).toEqual(["task_step_claimed"]);
    });

    it("an allowed step that is not ready yet cannot be claimed, which is no dispatch validation error", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await worker(d, { allowed_step_ids: ["b"] });
      await rejected(d, () => d.claim(w, "b"), "invalid_transition");
      expect((await d.view()).runs[w.run_id]!.status).toBe("active");
      const wa = await holder(d, "a");
      accepted(await d.updateStep(wa, "a", { status: "completed", result_summary: "a done" }));
      const n = (await d.walTypes()).length;
      accepted(await d.claim(w, "b"));
      expect(await typesAfter(d, n)).toEqual(["task_step_claimed"]);
    });

    it("losing a claim race is normal: the loser's run is not failed and it claims another step", async () => {
      const d = await created(await makeDriver(), BASE());
      await holder(d, "a");
      const w = await worker(d);
      await rejected(d, () => d.claim(w, "a"), "step_already_claimed");
      expect((await d.view()).runs[w.run_id]).toMatchObject({ status: "active", claims_used: 0 });
      expect(accepted(await d.querySteps(w)).step_ids).toEqual(["c", "d"]);
      const n = (await d.walTypes()).length;
      accepted(await d.claim(w, "c"));
      expect(await typesAfter(d, n)).toEqual(["task_step_claimed"]);
    });

    it("no claimable step: no_step_claimed is a normal success without events", async () => {
      const d = await created(await makeDriver(), [step("a"), step("b", ["a"])]);
      await holder(d, "a");
      const w = await worker(d);
      const wal = await d.walTypes();
      expect(accepted(await d.claimNext(w))).toEqual({ step_id: null, reason: "no_ready_step" });
      expect(await d.walTypes()).toEqual(wal);
      expect((await d.view()).runs[w.run_id]!.status).toBe("active");
    });

    it("step_already_claimed and no_step_claimed write nothing to the WAL", async () => {
      const d = await created(await makeDriver(), BASE());
      await holder(d, "a");
      const w = await worker(d, { allowed_step_ids: ["a", "b"] });
      await rejected(d, () => d.claim(w, "a"), "step_already_claimed");
      const wal = await d.walTypes();
      expect(accepted(await d.claimNext(w)).step_id).toBeNull();
      expect(await d.walTypes()).toEqual(wal);
    });

    it("a claim does not start the step: only update_step(status=running) does", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "a");
      expect((await d.view()).steps.a!.status).toBe("claimed");
      expect(await d.walTypes()).not.toContain("task_step_started");
      const n = (await d.walTypes()).length;
      accepted(await d.updateStep(w, "a", { status: "running" }));
      expect(await typesAfter(d, n)).toEqual(["task_step_started"]);
      expect((await d.view()).steps.a!.status).toBe("running");
    });

    it.each([
      ["blocked", ["task_step_blocked"]],
      ["completed", ["task_step_completed", "task_step_ready"]],
      ["failed", ["task_step_failed"]],
      ["cancelled", ["task_step_cancelled"]],
    ])("a worker may skip running: claimed goes straight to %s", async (to, types) => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "a");
      const n = (await d.walTypes()).length;
      accepted(await d.updateStep(w, "a", { status: to }));
      expect(await typesAfter(d, n)).toEqual(types);
      expect((await d.view()).steps.a!.status).toBe(to);
      expect(await d.walTypes()).not.toContain("task_step_started");
    });

    it("a blocked task takes no claim: task_not_dispatchable", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await worker(d);
      accepted(await d.task("block"));
      await rejected(d, () => d.claim(w, "a"), "task_not_dispatchable");
      await rejected(d, () => d.claimNext(w), "task_not_dispatchable");
      await rejected(d, () => d.dispatch(), "task_not_dispatchable");
    });

    describe("pooled runs (dispatch_worker max_steps > 1)", () => {
      it("claim again once the current step is terminal, one at a time", async () => {
        const d = await created(await makeDriver(), BASE());
        const w = await worker(d, { max_steps: 3 });
        accepted(await d.claim(w, "a"));
        accepted(await d.updateStep(w, "a", { status: "completed" }));
        expect(accepted(await d.claimNext(w)).step_id).toBe("b");
        accepted(await d.updateStep(w, "b", { status: "failed" }));
        const n = (await d.walTypes()).length;
        accepted(await d.claim(w, "d"));
        expect(await typesAfter(d, n)).toEqual(["task_step_claimed"]);
        const v = await d.view();
        expect(v.runs[w.run_id]).toMatchObject({ claims_used: 3, current_step_id: "d" });
        expect(v.attempts.find((x) => x.step_id === "b")!.run_id).toBe(w.run_id);
      });

      it("a second claim while holding a step is step_already_claimed_by_run", async () => {
        const d = await created(await makeDriver(), BASE());
        const w = await worker(d, { max_steps: 5 });
        accepted(await d.claim(w, "a"));
        await rejected(d, () => d.claim(w, "c"), "step_already_claimed_by_run");
        await rejected(d, () => d.claimNext(w), "step_already_claimed_by_run");
        accepted(await d.updateStep(w, "a", { status: "running" }));
        await rejected(d, () => d.claim(w, "c"), "step_already_claimed_by_run");
      });

      it("a spent budget: claim_step is step_already_claimed_by_run, claim_next is no_step_claimed", async () => {
        const d = await created(await makeDriver(), BASE());
        const w = await worker(d, { max_steps: 2 });
        accepted(await d.claim(w, "a"));
        accepted(await d.updateStep(w, "a", { status: "completed" }));
        accepted(await d.claim(w, "c"));
        accepted(await d.updateStep(w, "c", { status: "blocked" }));
        const details = await rejected(d, () => d.claim(w, "d"), "step_already_claimed_by_run");
        expect(details).toMatchObject({ max_steps: 2 });
        const wal = await d.walTypes();
        expect(accepted(await d.claimNext(w))).toEqual({ step_id: null, reason: "run_budget_spent" });
        expect(await d.walTypes()).toEqual(wal);
      });
    });
  });
}
