/** @module Statuses (docs/model.md "Statuses"): task and step status transitions as the task tools accept or refuse them. */
import { describe, expect, it } from "vitest";
import { DIAMOND, type MakeDriver, step, type StepInput, type TaskAction } from "./drivers/driver.js";

const optional = (id: string, deps: string[] = []): StepInput => step(id, deps, { required: false });
import { accepted, created, done, holder, put, rejected, typesAfter, worker } from "./drivers/expect.js";

/** Registers the "Status" rules against the drivers `makeDriver` makes. */
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
      // A forced stop asks the run to cancel and waits for it while the task is already terminal.
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

    it("a task can be completed only once every required step is completed", async () => {
      const d = await created(await makeDriver(), [step("a"), step("b"), step("c")]);
      await done(d, "a");
      const details = await rejected(d, () => d.task("complete"), "task_not_completeable");
      expect(details).toMatchObject({ required_not_completed: ["b", "c"] });
      await done(d, "b");
      accepted(await d.patchTask([{ op: "cancel_step", step_id: "c" }]));
      await rejected(d, () => d.task("complete"), "task_not_completeable");
      // A cancelled required step is not completed; removing it from the DAG makes the task completeable.
      accepted(await d.patchTask([{ op: "delete_step", step_id: "c" }]));
      const n = (await d.walTypes()).length;
      accepted(await d.task("complete"));
      expect(await typesAfter(d, n)).toEqual(["task_completed"]);
      expect((await d.view()).task.status).toBe("completed");
    });

    it("an unfinished required=false step does not block agent.task_complete", async () => {
      const d = await created(await makeDriver(), [step("a"), optional("o"), optional("p", ["o"])]);
      await done(d, "a");
      accepted(await d.task("complete"));
      expect((await d.view()).task.status).toBe("completed");
      expect((await d.walTypes()).at(-1)).toBe("task_completed");
    });

    it("required=false does not change dependency semantics: only completed satisfies a dependency", async () => {
      const d = await created(await makeDriver(), [optional("o"), step("d", ["o"]), optional("od", ["o"])]);
      const statuses = async () => {
        const v = await d.view();
        return [v.steps.d!.status, v.steps.od!.status];
      };
      expect(await statuses()).toEqual(["pending", "pending"]);
      const w = await holder(d, "o");
      expect((await statuses())[0]).toBe("pending");
      accepted(await d.updateStep(w, "o", { status: "failed" }));
      expect(await statuses()).toEqual(["pending", "pending"]);
      accepted(await d.patchTask([{ op: "reopen_step", step_id: "o" }]));
      const w2 = await holder(d, "o");
      const n = (await d.walEvents()).length;
      accepted(await d.updateStep(w2, "o", { status: "completed" }));
      const events = (await d.walEvents()).slice(n);
      expect(events.map((e) => e.event_type)).toEqual(["task_step_completed", "task_step_ready", "task_step_ready"]);
      expect(events.map((e) => e.step_id)).toEqual(["o", "d", "od"]);
    });

    it.each(["claimed", "running"])("an optional step that is %s still blocks agent.task_complete", async (status) => {
      const d = await created(await makeDriver(), [step("a"), optional("o")]);
      await done(d, "a");
      const w = (await put(d, "o", status))!;
      const details = await rejected(d, () => d.task("complete"), "task_not_completeable");
      expect(details).toMatchObject({ required_not_completed: [], held_step_ids: ["o"] });
      accepted(await d.updateStep(w, "o", { status: "completed" }));
      accepted(await d.task("complete"));
      expect((await d.view()).task.status).toBe("completed");
    });

    it("optional steps still pending or ready are cancelled automatically when agent.task_complete succeeds", async () => {
      const d = await created(await makeDriver(), [step("a"), optional("o1"), optional("o2", ["o1"]), optional("ob"), optional("of"), optional("oc")]);
      await done(d, "a");
      const wb = (await put(d, "ob", "blocked"))!;
      accepted(await d.finishRun(wb, wb.run_id, "finished"));
      const wf = (await put(d, "of", "failed"))!;
      accepted(await d.finishRun(wf, wf.run_id, "finished"));
      await done(d, "oc");
      accepted(await d.task("complete"));
      const v = await d.view();
      expect(Object.fromEntries(Object.entries(v.steps).map(([id, s]) => [id, s.status]))).toEqual({
        a: "completed",
        o1: "cancelled",
        o2: "cancelled",
        ob: "blocked",
        of: "failed",
        oc: "completed",
      });
    });

    it("a required step that depends on an optional step waits until the optional step is completed", async () => {
      const d = await created(await makeDriver(), [optional("o"), step("r", ["o"])]);
      expect((await d.view()).steps.r!.status).toBe("pending");
      await rejected(d, () => d.task("complete"), "task_not_completeable");
      const idle = await worker(d);
      await rejected(d, () => d.claim(idle, "r"), "invalid_transition");
      const w = await holder(d, "o");
      const n = (await d.walTypes()).length;
      accepted(await d.updateStep(w, "o", { status: "completed" }));
      expect(await typesAfter(d, n)).toEqual(["task_step_completed", "task_step_ready"]);
      expect((await d.view()).steps.r!.status).toBe("ready");
      // Cancelling the optional step instead leaves the required step pending for good.
      const g = await created(await makeDriver(), [optional("o"), step("r", ["o"])]);
      accepted(await g.patchTask([{ op: "cancel_step", step_id: "o" }]));
      expect((await g.view()).steps.r!.status).toBe("pending");
      await rejected(g, () => g.task("complete"), "task_not_completeable");
    });

    it("task status blocked is set only explicitly by the orchestrator", async () => {
      const d = await created(await makeDriver(), [step("a")]);
      const w = await worker(d);
      await rejected(d, () => d.task("block", {}, w), "tool_not_available");
      await rejected(d, () => d.task("block", {}, "observer"), "tool_not_available");
      const n = (await d.walTypes()).length;
      accepted(await d.task("block", { reason: "waiting for user" }));
      expect(await typesAfter(d, n)).toEqual(["task_blocked"]);
      expect((await d.view()).task).toMatchObject({ status: "blocked", status_reason: "waiting for user" });
      await rejected(d, () => d.task("block"), "invalid_transition");
    });

    it("the core never sets the task blocked by itself", async () => {
      const d = await created(await makeDriver(), [step("a"), step("b"), step("c", ["a"])]);
      for (const id of ["a", "b"]) {
        const w = await holder(d, id);
        accepted(await d.updateStep(w, id, { status: "blocked", reason: "stuck" }));
        accepted(await d.finishRun(w, w.run_id, "finished"));
      }
      expect((await d.view()).task.status).toBe("running");
      expect(await d.walTypes()).not.toContain("task_blocked");
    });

    it("a worker run already running may still finish and write back its step result while the task is blocked", async () => {
      const d = await created(await makeDriver(), [step("a"), step("b", ["a"])]);
      const w = (await put(d, "a", "running"))!;
      accepted(await d.task("block"));
      let n = (await d.walTypes()).length;
      accepted(await d.updateStep(w, "a", { status: "completed", result_summary: "done while blocked", artifact_ids: ["r1"] }));
      expect(await typesAfter(d, n)).toEqual(["task_step_completed", "task_step_ready"]);
      n = (await d.walTypes()).length;
      accepted(await d.finishRun(w, w.run_id, "finished", { ok: true }));
      expect(await typesAfter(d, n)).toEqual(["worker_run_ended"]);
      const v = await d.view();
      expect(v.steps.a).toMatchObject({ status: "completed", result_summary: "done while blocked", artifact_ids: ["r1"] });
      expect(v.runs[w.run_id]).toMatchObject({ status: "finished", result: { ok: true } });
    });

    it.each([
      ["completed", "task_step_completed"],
      ["failed", "task_step_failed"],
      ["blocked", "task_step_blocked"],
      ["cancelled", "task_step_cancelled"],
    ])("a worker writing its step %s in a blocked task does not unblock the task", async (status, event) => {
      const d = await created(await makeDriver(), [step("a"), step("b")]);
      const w = (await put(d, "a", "claimed"))!;
      accepted(await d.task("block"));
      const n = (await d.walTypes()).length;
      accepted(await d.updateStep(w, "a", { status }));
      expect(await typesAfter(d, n)).toEqual([event]);
      const v = await d.view();
      expect(v.steps.a!.status).toBe(status);
      expect(v.task.status).toBe("blocked");
    });

    it("the orchestrator cannot dispatch workers for a blocked task", async () => {
      const d = await created(await makeDriver(), [step("a")]);
      const idle = await worker(d);
      accepted(await d.task("block"));
      await rejected(d, () => d.dispatch(), "task_not_dispatchable");
      // Nor may an already dispatched idle run pick up new work.
      await rejected(d, () => d.claim(idle, "a"), "task_not_dispatchable");
      await rejected(d, () => d.claimNext(idle), "task_not_dispatchable");
    });

    it("the task must go back to pending through task_reopened before workers can be dispatched again", async () => {
      const d = await created(await makeDriver(), [step("a")]);
      accepted(await d.task("block"));
      await rejected(d, () => d.dispatch(), "task_not_dispatchable");
      let n = (await d.walTypes()).length;
      accepted(await d.task("reopen"));
      expect((await typesAfter(d, n))[0]).toBe("task_reopened");
      const w = await worker(d);
      n = (await d.walTypes()).length;
      accepted(await d.claim(w, "a"));
      expect(await typesAfter(d, n)).toEqual(["task_step_claimed"]);
    });

    it("a blocked task can be restored by the orchestrator only", async () => {
      const d = await created(await makeDriver(), [step("a")]);
      const w = await worker(d);
      accepted(await d.task("block"));
      await rejected(d, () => d.task("reopen", {}, w), "tool_not_available");
      await rejected(d, () => d.task("reopen", {}, "observer"), "tool_not_available");
      accepted(await d.task("reopen"));
      expect((await d.view()).task.status).toBe("running");
      await rejected(d, () => d.task("reopen"), "invalid_transition");
    });

    it("restoring a blocked task sets it back to pending and writes task_reopened", async () => {
      const d = await created(await makeDriver(), [step("a")]);
      const w = await holder(d, "a");
      accepted(await d.updateStep(w, "a", { status: "blocked" }));
      accepted(await d.task("block"));
      const n = (await d.walTypes()).length;
      accepted(await d.task("reopen", { reason: "user answered" }));
      expect(await typesAfter(d, n)).toEqual(["task_reopened"]);
      expect((await d.view()).task).toMatchObject({ status: "pending", status_reason: "user answered" });
    });

    it("after a task is reopened the core re-runs step readiness and the task running transition", async () => {
      const d = await created(await makeDriver(), [step("a"), step("b", ["a"])]);
      accepted(await d.task("block"));
      let n = (await d.walTypes()).length;
      accepted(await d.task("reopen"));
      expect(await typesAfter(d, n)).toEqual(["task_reopened", "task_running"]);
      expect((await d.view()).task.status).toBe("running");
      // A claimed step alone is enough to move the reopened task to running.
      await holder(d, "a");
      accepted(await d.task("block"));
      n = (await d.walTypes()).length;
      accepted(await d.task("reopen"));
      expect(await typesAfter(d, n)).toEqual(["task_reopened", "task_running"]);
      // A step reopened later becomes ready and moves a pending task to running.
      const g = await created(await makeDriver(), [step("a")]);
      const w = await holder(g, "a");
      accepted(await g.updateStep(w, "a", { status: "failed" }));
      accepted(await g.task("block"));
      n = (await g.walTypes()).length;
      accepted(await g.task("reopen"));
      expect(await typesAfter(g, n)).toEqual(["task_reopened"]);
      n = (await g.walTypes()).length;
      accepted(await g.patchTask([{ op: "reopen_step", step_id: "a" }]));
      expect(await typesAfter(g, n)).toEqual(["task_updated", "task_step_reopened", "task_step_ready", "task_running"]);
    });

    it("task_reopened only restores the task's eligibility for scheduling; it never dispatches a worker", async () => {
      const d = await created(await makeDriver(), [step("a"), step("b")]);
      accepted(await d.task("block"));
      const n = (await d.walTypes()).length;
      accepted(await d.task("reopen"));
      const written = await typesAfter(d, n);
      expect(written).not.toContain("worker_dispatched");
      expect(written).not.toContain("task_step_claimed");
      const v = await d.view();
      expect(Object.keys(v.runs)).toHaveLength(0);
      expect(v.steps.a!.status).toBe("ready");
      expect(v.steps.b!.status).toBe("ready");
    });

    it("task status completed is set only explicitly by the orchestrator through agent.task_complete", async () => {
      const d = await created(await makeDriver(), [step("a")]);
      await done(d, "a");
      const w = await worker(d);
      await rejected(d, () => d.task("complete", {}, w), "tool_not_available");
      await rejected(d, () => d.task("complete", {}, "observer"), "tool_not_available");
      const n = (await d.walTypes()).length;
      accepted(await d.task("complete", { reason: "all good" }));
      expect(await typesAfter(d, n)).toEqual(["worker_run_ended", "task_completed"]);
      expect((await d.view()).task).toMatchObject({ status: "completed", status_reason: "all good" });
    });

    it("the core never sets the task completed by itself", async () => {
      const d = await created(await makeDriver(), [step("a"), step("b", ["a"])]);
      await done(d, "a");
      await done(d, "b");
      expect((await d.view()).task.status).toBe("running");
      expect(await d.walTypes()).not.toContain("task_completed");
    });
  });
}
