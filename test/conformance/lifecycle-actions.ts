/**
 * @module Human actions: who may ask and who may answer, what an answer must fit, one answer only,
 * and how an open action holds its step's lease (suspended while open, restarted on resolution), expires at
 * expires_at, and is withdrawn when its claim ends.
 */
import { describe, expect, it } from "vitest";
import { type Answer, type Caller, type MakeDriver, step, type StepInput, type TaskRuntimeDriver, type WorkerRun } from "./drivers/driver.js";
import { accepted, created, holder, rejected, typesAfter } from "./drivers/expect.js";

/** The lease of the rules that let it lapse: the shortest the schemas allow, so HTTP runs wait little. */
const LEASE_MS = 1_000;

/** An approval request. */
const approval = (extra: Record<string, unknown> = {}) => ({ kind: "approval", prompt: "May I publish?", ...extra });

/** An input request whose answer needs a `region` of eu or us. */
const regionInput = (extra: Record<string, unknown> = {}) => ({
  kind: "input",
  prompt: "Which region?",
  input_schema: { type: "object", properties: { region: { type: "string", enum: ["eu", "us"] } }, required: ["region"] },
  ...extra,
});

/** Step a, and b after it. */
const STEPS = (): StepInput[] => [step("a"), step("b", ["a"])];

/** A task of STEPS whose step a is held by a worker run. */
async function held(makeDriver: MakeDriver, extra: Record<string, unknown> = {}): Promise<{ d: TaskRuntimeDriver; w: WorkerRun }> {
  const d = await created(await makeDriver(), STEPS(), extra);
  return { d, w: await holder(d, "a") };
}

/** Registers the human-action rules against the drivers `makeDriver` makes. */
export function runLifecycleActions(makeDriver: MakeDriver): void {
  describe("Human actions", () => {
    it("a worker opens an action on the step it holds; a second open action on that step is refused with invalid_transition, writing nothing", async () => {
      const { d, w } = await held(makeDriver);
      const n = (await d.walTypes()).length;
      const opened = accepted(await d.requestAction(w, "a", approval()));
      expect(opened.status).toBe("open");
      expect(await typesAfter(d, n)).toEqual(["action_requested"]);
      expect(await d.action(opened.action_id)).toMatchObject({ step_id: "a", kind: "approval", status: "open", decision: null, resolved_by_role: null, expires_at: opened.expires_at });
      expect((await d.view()).steps.a).toMatchObject({ status: "claimed", normalized_status: "waiting_permission" });
      await rejected(d, () => d.requestAction(w, "a", regionInput()), "invalid_transition");
      await rejected(d, () => d.requestAction("orchestrator", "a", approval()), "invalid_transition");
    });

    it("a worker cannot ask on a step it does not hold (permission_denied) nor for the task (tool_not_available); the observer and an approver cannot ask at all", async () => {
      const { d, w } = await held(makeDriver);
      await rejected(d, () => d.requestAction(w, "b", approval()), "permission_denied");
      await rejected(d, () => d.requestAction(w, null, approval()), "tool_not_available");
      for (const by of ["observer", "approver"] as const) {
        await rejected(d, () => d.requestAction(by, "a", approval()), "tool_not_available");
        await rejected(d, () => d.requestAction(by, null, approval()), "tool_not_available");
      }
    });

    it("the observer or a worker answering gets tool_not_available, writing nothing, and the action stays open", async () => {
      const { d, w } = await held(makeDriver);
      const { action_id } = accepted(await d.requestAction(w, "a", approval()));
      const others: Caller[] = ["observer", w];
      for (const by of others) await rejected(d, () => d.respondAction(by, action_id, { decision: "approved" }), "tool_not_available");
      expect((await d.action(action_id)).status).toBe("open");
    });

    it.each(["approver", "orchestrator"] as const)("the %s answers: the action is resolved with its decision and role; a second answer is action_resolved, writing nothing", async (by) => {
      const { d, w } = await held(makeDriver);
      const { action_id } = accepted(await d.requestAction(w, "a", approval()));
      const n = (await d.walTypes()).length;
      accepted(await d.respondAction(by, action_id, { decision: "rejected", comment: "not yet" }));
      expect(await typesAfter(d, n)).toEqual(["action_resolved"]);
      expect(await d.action(action_id)).toMatchObject({ status: "resolved", decision: "rejected", resolved_by_role: by });
      // No longer waiting for a person: the step shows its own status again (claimed: preparing).
      expect((await d.view()).steps.a).toMatchObject({ status: "claimed", normalized_status: "preparing" });
      const other = by === "approver" ? "orchestrator" : "approver";
      await rejected(d, () => d.respondAction(other, action_id, { decision: "approved" }), "action_resolved");
      expect((await d.action(action_id)).decision).toBe("rejected");
    });

    it("an input that does not match the action's input_schema, or a decision that does not fit its kind, is validation_error, writing nothing; a fitting input is kept", async () => {
      const { d, w } = await held(makeDriver);
      const { action_id } = accepted(await d.requestAction(w, "a", regionInput()));
      expect((await d.view()).steps.a!.normalized_status).toBe("waiting_input");
      await rejected(d, () => d.respondAction("approver", action_id, { decision: "submitted", input: { region: "mars" } }), "validation_error");
      await rejected(d, () => d.respondAction("approver", action_id, { decision: "submitted", input: {} }), "validation_error");
      await rejected(d, () => d.respondAction("approver", action_id, { decision: "submitted" }), "validation_error");
      await rejected(d, () => d.respondAction("approver", action_id, { decision: "approved" }), "validation_error");
      accepted(await d.respondAction("approver", action_id, { decision: "submitted", input: { region: "eu" } }));
      expect(await d.action(action_id)).toMatchObject({ status: "resolved", decision: "submitted", input: { region: "eu" } });
    });

    it("a step's lease does not expire while its action is open, and restarts from the resolution", async () => {
      const { d, w } = await held(makeDriver, { step_lease_timeout_ms: LEASE_MS });
      const { action_id } = accepted(await d.requestAction(w, "a", approval({ timeout_ms: 60_000 })));
      const asked = (await d.walTypes()).length;
      await d.elapse(LEASE_MS + 200);
      expect(await typesAfter(d, asked)).toEqual([]);
      expect((await d.view()).steps.a).toMatchObject({ status: "claimed", claimed_by_run_id: w.run_id });

      accepted(await d.respondAction("approver", action_id, { decision: "approved" }));
      const { resolved_at } = await d.action(action_id);
      const lease = (await d.view()).steps.a!.lease_expires_at;
      expect(Date.parse(lease!)).toBe(Date.parse(resolved_at!) + LEASE_MS);
      // Restarted, the lease lapses like any other.
      const resolved = (await d.walTypes()).length;
      await d.elapse(LEASE_MS + 200);
      expect(await typesAfter(d, resolved)).toEqual(["task_step_lease_expired", "task_step_ready"]);
      expect((await d.view()).steps.a).toMatchObject({ status: "ready", claimed_by_run_id: null });
    });

    it("an open action expires at expires_at, resolved by the runtime as expired; a late answer is action_resolved, writing nothing", async () => {
      const { d, w } = await held(makeDriver);
      const opened = accepted(await d.requestAction(w, "a", approval({ timeout_ms: 1_000 })));
      const n = (await d.walTypes()).length;
      await d.elapse(1_200);
      expect(await typesAfter(d, n)).toEqual(["action_resolved"]);
      const expired = await d.action(opened.action_id);
      expect(expired).toMatchObject({ status: "resolved", decision: "expired", resolved_by_role: "system" });
      expect(Date.parse(expired.resolved_at!)).toBeGreaterThanOrEqual(Date.parse(opened.expires_at));
      expect((await d.view()).steps.a).toMatchObject({ status: "claimed", claimed_by_run_id: w.run_id });
      await rejected(d, () => d.respondAction("approver", opened.action_id, { decision: "approved" }), "action_resolved");
    });

    it("completing the step withdraws its open action in the same write", async () => {
      const { d, w } = await held(makeDriver);
      const { action_id } = accepted(await d.requestAction(w, "a", approval()));
      const n = (await d.walTypes()).length;
      accepted(await d.updateStep(w, "a", { status: "completed", result_summary: "a done" }));
      const written = await typesAfter(d, n);
      expect(written).toContain("task_step_completed");
      expect(written.at(-1)).toBe("action_resolved");
      expect(await d.action(action_id)).toMatchObject({ status: "resolved", decision: "withdrawn", resolved_by_role: "system" });
      expect((await d.view()).steps.b!.status).toBe("ready");
    });

    it.each<[string, (d: TaskRuntimeDriver) => Promise<Answer>]>([
      ["update_task", (d) => d.patchTask([{ op: "update_task", title: "x" }], "approver")],
      ["complete_task", (d) => d.task("complete", {}, "approver")],
      ["cancel_task", (d) => d.task("cancel", {}, "approver")],
      ["dispatch_worker", (d) => d.dispatch({}, "approver")],
      ["claim_step", (d) => d.claim("approver", "c")],
      ["claim_next", (d) => d.claimNext("approver")],
      ["update_step", (d) => d.updateStep("approver", "a", { status: "completed" })],
      ["append_progress", (d) => d.progress("approver", "a", { summary: "x" })],
    ])("an approver answers actions and writes nothing else: %s is tool_not_available", async (_n, write) => {
      const d = await created(await makeDriver(), [...STEPS(), step("c")]);
      await holder(d, "a");
      await rejected(d, () => write(d), "tool_not_available");
    });

    it("a task-level action by the orchestrator stays open when a step's claim ends and is withdrawn when the task ends", async () => {
      const { d, w } = await held(makeDriver);
      const { action_id } = accepted(await d.requestAction("orchestrator", null, approval()));
      expect(await d.action(action_id)).toMatchObject({ step_id: null, status: "open" });
      expect((await d.view()).task).toMatchObject({ status: "running", normalized_status: "waiting_permission" });
      accepted(await d.updateStep(w, "a", { status: "completed" }));
      expect((await d.action(action_id)).status).toBe("open");
      expect((await d.view()).task.normalized_status).toBe("waiting_permission");
      accepted(await d.task("cancel"));
      expect(await d.action(action_id)).toMatchObject({ status: "resolved", decision: "withdrawn" });
    });
  });
}
