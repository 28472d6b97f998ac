/** @module Seed 003 "Task Tools": claim, claim-next, query, progress and a worker run's end, as the tools answer them. */
import { describe, expect, it } from "vitest";
import { type Caller, DIAMOND, type MakeDriver, POOLS, step, type StepFilter, type StepInput, type TaskRuntimeDriver } from "./driver.js";

/** Roots a, c and d; b after a. */
const BASE = (): StepInput[] => [step("a"), step("b", ["a"]), step("c"), step("d")];
import { accepted, created, holder, rejected, typesAfter, worker } from "./expect.js";

/** Registers the "Task Tools" rules against the drivers `makeDriver` makes. */
export function runTaskTools(makeDriver: MakeDriver): void {
  describe("Task Tools", () => {
    describe("agent.dispatch_worker", () => {
      it("a dispatch is refused when allowed_step_ids names a step the DAG does not have", async () => {
        const d = await created(await makeDriver(), DIAMOND());
        await rejected(d, () => d.dispatch({ allowed_step_ids: ["a", "zz"] }), "validation_error");
      });
    });

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

    describe("agent.task_query_steps", () => {
      /** The ids of a query's page. */
      const ids = async (d: TaskRuntimeDriver, by: Caller, filter: StepFilter = {}) => accepted(await d.querySteps(by, filter)).step_ids;

      it("the orchestrator can query any step of an active task", async () => {
        const d = await created(await makeDriver(), [step("a"), step("b", ["a"]), step("g", [], { worker_pool_id: "gpu" })]);
        const w = await holder(d, "a");
        accepted(await d.updateStep(w, "a", { status: "running" }));
        const page = accepted(await d.querySteps("orchestrator"));
        expect(page.step_ids).toEqual(["a", "b", "g"]);
        expect(page.statuses).toEqual(["running", "pending", "ready"]);
      });

      it("a terminal task answers queries read-only and takes no further step update", async () => {
        const d = await created(await makeDriver(), BASE());
        const w = await holder(d, "a");
        accepted(await d.task("fail", { reason: "stop" }));
        expect(await ids(d, "orchestrator", { include_terminal_steps: true })).toEqual(["a", "b", "c", "d"]);
        expect(await ids(d, "orchestrator")).toEqual([]);
        expect(await ids(d, w, { include_terminal_steps: true, statuses: ["failed"] })).toEqual(["a", "b", "c", "d"]);
        await rejected(d, () => d.updateStep(w, "a", { status: "completed" }), "task_terminal");
        await rejected(d, () => d.updateStep("orchestrator", "c", { status: "completed" }), "task_terminal");
        await rejected(d, () => d.claim(w, "c"), "task_terminal");
        await rejected(d, () => d.claimNext(w), "task_terminal");
        await rejected(d, () => d.progress(w, "a", { summary: "late" }), "task_terminal");
      });

      it("a worker can query the steps visible to it", async () => {
        const d = await created(await makeDriver(), BASE());
        const w = await worker(d);
        const page = accepted(await d.querySteps(w));
        expect(page.step_ids).toEqual(["a", "c", "d"]);
        expect(page.statuses.every((s) => s === "ready")).toBe(true);
      });

      it("filters by several statuses at once", async () => {
        const d = await created(await makeDriver(), BASE());
        const w = await holder(d, "c");
        accepted(await d.updateStep(w, "c", { status: "running" }));
        expect(await ids(d, "orchestrator", { statuses: ["pending", "running"] })).toEqual(["b", "c"]);
        expect(await ids(d, "orchestrator", { statuses: ["ready"] })).toEqual(["a", "d"]);
        expect(await ids(d, "orchestrator", { statuses: ["claimed", "blocked"] })).toEqual([]);
      });

      it("filters by worker_pool_id", async () => {
        const d = await created(await makeDriver(), [step("a"), step("g1", [], { worker_pool_id: "gpu" }), step("b", ["a"]), step("g2", ["a"], { worker_pool_id: "gpu" })]);
        expect(await ids(d, "orchestrator", { worker_pool_id: "gpu" })).toEqual(["g1", "g2"]);
        expect(await ids(d, "orchestrator", { worker_pool_id: "gpu", statuses: ["ready"] })).toEqual(["g1"]);
        expect(await ids(d, "orchestrator", { worker_pool_id: "default" })).toEqual(["a", "b"]);
        // A worker cannot widen its pool by asking for another one.
        const w = await worker(d);
        expect(await ids(d, w, { worker_pool_id: "gpu" })).toEqual([]);
      });

      it("filters by claimed_by_agent_id", async () => {
        const d = await created(await makeDriver(), BASE());
        const w1 = await holder(d, "a", { agent_id: "alice" });
        await holder(d, "c", { agent_id: "bob" });
        expect(await ids(d, "orchestrator", { claimed_by_agent_id: "alice" })).toEqual(["a"]);
        expect(await ids(d, "orchestrator", { claimed_by_agent_id: "bob" })).toEqual(["c"]);
        expect(await ids(d, w1, { claimed_by_agent_id: "alice", statuses: ["claimed"] })).toEqual(["a"]);
      });

      /** a completed, b failed, c cancelled, d ready. */
      const ended = async () => {
        const d = await created(await makeDriver(), [step("a"), step("b"), step("c"), step("d")]);
        const wa = await holder(d, "a");
        accepted(await d.updateStep(wa, "a", { status: "completed", result_summary: "a done" }));
        const w = await holder(d, "b");
        accepted(await d.updateStep(w, "b", { status: "failed" }));
        accepted(await d.patchTask([{ op: "cancel_step", step_id: "c" }]));
        return d;
      };

      it("leaves out completed, failed and cancelled steps by default", async () => {
        const d = await ended();
        const page = accepted(await d.querySteps("orchestrator"));
        expect(page.step_ids).toEqual(["d"]);
        expect(page.total).toBe(1);
      });

      it("returns terminal steps only with include_terminal_steps=true", async () => {
        const d = await ended();
        expect(await ids(d, "orchestrator", { include_terminal_steps: true })).toEqual(["a", "b", "c", "d"]);
        expect(await ids(d, "orchestrator", { include_terminal_steps: true, statuses: ["completed", "cancelled"] })).toEqual(["a", "c"]);
        const refused = await d.querySteps("orchestrator", { statuses: ["completed"] });
        expect(refused.ok ? "accepted" : refused.code).toBe("validation_error");
        expect(await ids(d, "orchestrator", { include_terminal_steps: false })).toEqual(["d"]);
      });

      it("pages with limit and offset, limit 50 by default", async () => {
        const d = await created(await makeDriver(), Array.from({ length: 60 }, (_, i) => step(`s${String(i).padStart(2, "0")}`)));
        const first = accepted(await d.querySteps("orchestrator"));
        expect(first).toMatchObject({ total: 60, limit: 50, offset: 0, next_offset: 50 });
        expect(first.step_ids).toHaveLength(50);
        expect(first.step_ids[0]).toBe("s00");
        const rest = accepted(await d.querySteps("orchestrator", { offset: 50 }));
        expect(rest).toMatchObject({ total: 60, limit: 50, offset: 50, next_offset: null });
        expect(rest.step_ids).toEqual(Array.from({ length: 10 }, (_, i) => `s${50 + i}`));
        const page = accepted(await d.querySteps("orchestrator", { limit: 3, offset: 7 }));
        expect(page.step_ids).toEqual(["s07", "s08", "s09"]);
        expect(page.next_offset).toBe(10);
      });

      it("orders by created_at ascending, never by status", async () => {
        const d = await created(await makeDriver(), [step("z"), step("m", ["z"]), step("a")]);
        const w = await holder(d, "a");
        accepted(await d.updateStep(w, "a", { status: "running" }));
        accepted(await d.patchTask([{ op: "add_step", step: step("b") }]));
        expect(await ids(d, "orchestrator")).toEqual(["z", "m", "a", "b"]);
        // A deleted and re-added step is created again, so it moves to the end.
        accepted(await d.patchTask([{ op: "delete_step", step_id: "m" }, { op: "add_step", step: step("m") }]));
        expect(await ids(d, "orchestrator")).toEqual(["z", "a", "b", "m"]);
        expect(await ids(d, "orchestrator", { statuses: ["ready"] })).toEqual(["z", "b", "m"]);
      });

      it("a worker's ready query lists only its pool's ready steps, with completed dependencies and no live lease", async () => {
        const d = await created(await makeDriver(), [step("a"), step("b", ["a"]), step("c"), step("g", [], { worker_pool_id: "gpu" }), step("e")]);
        const other = await holder(d, "c");
        const w = await worker(d);
        expect(await ids(d, w)).toEqual(["a", "e"]); // not b (dependency), c (leased), g (other pool)
        // Only ready steps, even when more are asked for by pool.
        expect(await ids(d, w, { worker_pool_id: "default" })).toEqual(["a", "e"]);
        accepted(await d.updateStep(other, "c", { status: "running" }));
        expect(await ids(d, w)).toEqual(["a", "e"]);
      });

      it("a worker's ready query returns 5 candidates by default", async () => {
        const d = await created(await makeDriver(), Array.from({ length: 8 }, (_, i) => step(`s${i}`)));
        const w = await worker(d);
        const page = accepted(await d.querySteps(w));
        expect(page).toMatchObject({ limit: 5, total: 8, next_offset: 5 });
        expect(page.step_ids).toEqual(["s0", "s1", "s2", "s3", "s4"]);
        expect(await ids(d, w, { limit: 10 })).toHaveLength(8);
        expect(accepted(await d.querySteps("orchestrator")).limit).toBe(50);
      });

      it("allowed_step_ids narrows what a worker run may query", async () => {
        const d = await created(await makeDriver(), BASE());
        const w = await worker(d, { allowed_step_ids: ["d", "b"] });
        expect(await ids(d, w)).toEqual(["d"]);
        expect(await ids(d, w, { statuses: ["pending", "ready"] })).toEqual(["b", "d"]);
      });

      it("allowed_step_ids is a hard scope: a step outside it can be neither queried nor claimed", async () => {
        const d = await created(await makeDriver(), BASE());
        const w = await worker(d, { allowed_step_ids: ["d"] });
        expect(await ids(d, w, { statuses: ["ready"] })).toEqual(["d"]);
        await rejected(d, () => d.claim(w, "a"), "permission_denied");
        expect(accepted(await d.claimNext(w)).step_id).toBe("d");
      });

      it("allowed_step_ids may name steps that are not ready: a ready query returns only the ready ones", async () => {
        const d = await created(await makeDriver(), BASE());
        const w = await worker(d, { allowed_step_ids: ["b", "c"] }); // b is pending: dispatch is still fine
        expect(await ids(d, w)).toEqual(["c"]);
      });

      it("no ready step within allowed_step_ids: claim-next answers no_step_claimed and writes nothing", async () => {
        const d = await created(await makeDriver(), BASE());
        const w = await worker(d, { allowed_step_ids: ["b"] });
        expect(await ids(d, w)).toEqual([]);
        const wal = await d.walTypes();
        expect(accepted(await d.claimNext(w))).toEqual({ step_id: null, reason: "no_ready_step" });
        expect(await d.walTypes()).toEqual(wal);
        expect((await d.view()).runs[w.run_id]).toMatchObject({ status: "active", claims_used: 0, current_step_id: null });
      });

      it("a worker with no filter sees the ready steps of its pool, five at a time", async () => {
        const d = await created(await makeDriver(), POOLS());
        const w = await worker(d);
        expect(accepted(await d.querySteps(w))).toMatchObject({ step_ids: ["r0", "r1", "r2", "r3", "r4"], total: 7, limit: 5, offset: 0, next_offset: 5 });
        expect(accepted(await d.querySteps(w, { offset: 5 }))).toMatchObject({ step_ids: ["r5", "r6"], total: 7, limit: 5, offset: 5, next_offset: null });
      });

      it("a worker sees only its allowed_step_ids within its pool", async () => {
        const d = await created(await makeDriver(), POOLS());
        const w = await worker(d, { allowed_step_ids: ["r3", "p", "g", "r1"] });
        expect(accepted(await d.querySteps(w)).step_ids).toEqual(["r1", "r3"]);
        const gpu = await worker(d, { worker_pool_id: "gpu" });
        expect(accepted(await d.querySteps(gpu)).step_ids).toEqual(["g"]);
      });

      it.each([
        ["no filter", {}, ["r0", "r2", "r3", "r4", "r5", "r6", "g", "p"]],
        ["status=pending", { statuses: ["pending"] }, ["p"]],
        ["a status list", { statuses: ["pending", "claimed"] }, ["r0", "p"]],
        ["worker_pool_id=gpu", { worker_pool_id: "gpu" }, ["g"]],
        ["claimed_by_agent_id", { claimed_by_agent_id: "w1" }, ["r0"]],
        ["include_terminal_steps=true", { include_terminal_steps: true, statuses: ["completed"] }, ["r1"]],
        ["limit and offset", { limit: 2, offset: 1 }, ["r2", "r3"]],
      ] as [string, StepFilter, string[]][])("the orchestrator's query honours %s", async (_name, filter, ids) => {
        const d = await created(await makeDriver(), POOLS());
        const w = await worker(d, { agent_id: "w1" });
        accepted(await d.claim(w, "r0"));
        accepted(await d.updateStep("orchestrator", "r1", { status: "completed" }));
        expect(accepted(await d.querySteps("orchestrator", filter)).step_ids).toEqual(ids);
      });
    });

    describe("append_task_progress", () => {
      it.each([
        ["the step does not exist", "zz", false, "not_found"],
        ["the task is cancelled", "a", true, "task_terminal"],
      ])("progress is refused when %s", async (_name, stepId, cancel, code) => {
        const d = await created(await makeDriver(), DIAMOND());
        await holder(d, "a");
        if (cancel) accepted(await d.task("cancel"));
        await rejected(d, () => d.progress("orchestrator", stepId, { summary: "x" }), code);
      });
    });

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
    });
  });
}
