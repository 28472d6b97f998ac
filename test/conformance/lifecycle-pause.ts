/**
 * @module Pause and resume: a paused task dispatches and claims nothing, its held steps go on under
 * leases that still run, it cannot be blocked, and resuming returns it to pending, from which ready steps and task_running are promoted as after any reopen.
 */
import { describe, expect, it } from "vitest";
import { BASE, type Caller, type MakeDriver } from "./drivers/driver.js";
import { accepted, created, holder, rejected, typesAfter, worker } from "./drivers/expect.js";

/** The lease of the rules that let it lapse: the shortest the schemas allow, so HTTP runs wait little. */
const LEASE_MS = 1_000;

/** Registers the pause and resume rules against the drivers `makeDriver` makes. */
export function runLifecyclePause(makeDriver: MakeDriver): void {
  describe("Pause and resume", () => {
    it("a paused task refuses dispatch and claims with task_not_dispatchable, writing nothing", async () => {
      const d = await created(await makeDriver(), BASE());
      const idle = await worker(d);
      const n = (await d.walTypes()).length;
      accepted(await d.task("pause", { reason: "budget review" }));
      expect(await typesAfter(d, n)).toEqual(["task_paused"]);
      expect((await d.view()).task).toMatchObject({ status: "paused", normalized_status: "paused", status_reason: "budget review" });
      await rejected(d, () => d.dispatch(), "task_not_dispatchable");
      await rejected(d, () => d.claim(idle, "a"), "task_not_dispatchable");
      await rejected(d, () => d.claimNext(idle), "task_not_dispatchable");
    });

    it("a step held before the pause still progresses and completes, its dependants become ready, and the task stays paused", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "a");
      accepted(await d.task("pause"));
      accepted(await d.updateStep(w, "a", { status: "running" }));
      accepted(await d.progress(w, "a", { summary: "half way" }));
      accepted(await d.updateStep(w, "a", { status: "completed", result_summary: "a done" }));
      const v = await d.view();
      expect(v.steps.a).toMatchObject({ status: "completed", result_summary: "a done" });
      expect(v.steps.b!.status).toBe("ready");
      expect(v.task.status).toBe("paused");
    });

    it("a held step's lease still runs while paused: it lapses and the step is ready, the task still paused", async () => {
      const d = await created(await makeDriver(), BASE(), { step_lease_timeout_ms: LEASE_MS });
      await holder(d, "a");
      accepted(await d.task("pause"));
      const n = (await d.walTypes()).length;
      await d.elapse(LEASE_MS + 200);
      expect(await typesAfter(d, n)).toEqual(["task_step_lease_expired", "task_step_ready"]);
      const v = await d.view();
      expect(v.steps.a).toMatchObject({ status: "ready", claimed_by_run_id: null });
      expect(v.task.status).toBe("paused");
    });

    it("resume returns the task to the ready and running promotion: running with ready steps, and claims are taken again", async () => {
      const d = await created(await makeDriver(), BASE());
      const idle = await worker(d);
      accepted(await d.task("pause"));
      const n = (await d.walTypes()).length;
      accepted(await d.task("resume", { reason: "approved" }));
      expect(await typesAfter(d, n)).toEqual(["task_resumed", "task_running"]);
      expect((await d.view()).task).toMatchObject({ status: "running", normalized_status: "running" });
      expect(accepted(await d.claim(idle, "a")).step_id).toBe("a");
      expect((await d.view()).steps.a).toMatchObject({ status: "claimed", claimed_by_run_id: idle.run_id });
    });

    it("resume of a task with nothing ready or held leaves it pending", async () => {
      const d = await created(await makeDriver(), []);
      accepted(await d.task("pause"));
      accepted(await d.task("resume"));
      expect((await d.view()).task).toMatchObject({ status: "pending", status_reason: null });
    });

    it("a paused task cannot be blocked or paused again, and a task that is not paused cannot be resumed: invalid_transition, writing nothing", async () => {
      const d = await created(await makeDriver(), BASE());
      await rejected(d, () => d.task("resume"), "invalid_transition");
      accepted(await d.task("pause"));
      await rejected(d, () => d.task("block"), "invalid_transition");
      await rejected(d, () => d.task("pause"), "invalid_transition");
      expect((await d.view()).task.status).toBe("paused");
    });

    it("a terminal task cannot be paused or resumed: task_terminal, writing nothing", async () => {
      const d = await created(await makeDriver(), BASE());
      accepted(await d.task("pause"));
      accepted(await d.task("cancel"));
      await rejected(d, () => d.task("resume"), "task_terminal");
      await rejected(d, () => d.task("pause"), "task_terminal");
    });

    it("only the orchestrator pauses and resumes: a worker, the observer and an approver get tool_not_available, writing nothing", async () => {
      const d = await created(await makeDriver(), BASE());
      const w = await holder(d, "a");
      const others: Caller[] = [w, "observer", "approver"];
      for (const by of others) await rejected(d, () => d.task("pause", {}, by), "tool_not_available");
      accepted(await d.task("pause"));
      for (const by of others) await rejected(d, () => d.task("resume", {}, by), "tool_not_available");
    });
  });
}
