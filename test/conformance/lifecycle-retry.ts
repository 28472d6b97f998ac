/**
 * @module Retry policies: a worker's failure waits for its retry and is reopened by the runtime, a
 * step that loses every worker stops at retry_exhausted, the orchestrator's own fail and non-retryable reasons
 * are final, the task's default applies, and without a policy a failure is final and a lapsed lease makes the step ready at once.
 */
import { describe, expect, it } from "vitest";
import { type MakeDriver, step, type TaskRuntimeDriver } from "./drivers/driver.js";
import { accepted, created, holder, rejected, typesAfter, worker } from "./drivers/expect.js";

/** The lease of the rules that let it lapse: the shortest the schemas allow, so HTTP runs wait little. */
const LEASE_MS = 1_000;

/** A retry policy; `interval` is the wait before every retry. */
const policy = (max_attempts: number, interval: number, extra: Record<string, unknown> = {}) => ({ max_attempts, initial_interval_ms: interval, backoff_coefficient: 1, max_interval_ms: interval, ...extra });

/** A wait no rule's run comes near: the step is still waiting for its retry whenever the rule looks. */
const LONG_WAIT_MS = 60_000;

/** A wait short enough for HTTP runs to sleep through. */
const SHORT_WAIT_MS = 100;

/** The step's events of the WAL written after the first `n` events. */
async function stepTypesAfter(d: TaskRuntimeDriver, n: number, id: string): Promise<string[]> {
  return (await d.walEvents()).slice(n).filter((e) => e.step_id === id).map((e) => e.event_type);
}

/** Registers the retry-policy rules against the drivers `makeDriver` makes. */
export function runLifecycleRetry(makeDriver: MakeDriver): void {
  describe("Retry policies", () => {
    it("a worker's failure under a retry policy waits until retry_at (initial_interval_ms after it ended), and cannot be claimed meanwhile", async () => {
      const d = await created(await makeDriver(), [step("a", [], { retry_policy: policy(3, LONG_WAIT_MS) }), step("b", ["a"])]);
      const w = await holder(d, "a");
      accepted(await d.updateStep(w, "a", { status: "failed", reason: "flaky upstream" }));
      const v = await d.view();
      expect(v.steps.a).toMatchObject({ status: "failed", normalized_status: "retrying", status_reason: "flaky upstream" });
      expect(Date.parse(v.steps.a!.retry_at!)).toBe(Date.parse(v.attempts[0]!.ended_at!) + LONG_WAIT_MS);
      expect(v.attempts.map((a) => a.status)).toEqual(["failed"]);
      const next = await worker(d);
      await rejected(d, () => d.claim(next, "a"), "invalid_transition");
      expect(accepted(await d.claimNext(next))).toMatchObject({ step_id: null });
    });

    it("once retry_at passes the runtime reopens the failed step and it is ready and claimable again", async () => {
      const d = await created(await makeDriver(), [step("a", [], { retry_policy: policy(3, SHORT_WAIT_MS) })]);
      const w = await holder(d, "a");
      accepted(await d.updateStep(w, "a", { status: "failed", reason: "flaky upstream" }));
      const n = (await d.walEvents()).length;
      await d.elapse(SHORT_WAIT_MS + 100);
      expect(await stepTypesAfter(d, n, "a")).toEqual(["task_step_reopened", "task_step_ready"]);
      expect((await d.view()).steps.a).toMatchObject({ status: "ready", retry_at: null });
      const again = await holder(d, "a");
      accepted(await d.updateStep(again, "a", { status: "completed", result_summary: "a done" }));
      const v = await d.view();
      expect(v.steps.a!.status).toBe("completed");
      expect(v.attempts.map((a) => a.status)).toEqual(["failed", "completed"]);
    });

    it("a step that loses every worker stops at failed with retry_exhausted once max_attempts are used", async () => {
      const d = await created(await makeDriver(), [step("a", [], { retry_policy: policy(2, 0) })], { step_lease_timeout_ms: LEASE_MS });
      await holder(d, "a");
      await d.elapse(LEASE_MS + 200);
      // Lost, retried without backoff: ready again.
      expect((await d.view()).steps.a).toMatchObject({ status: "ready", retry_at: null, claimed_by_run_id: null });
      await holder(d, "a");
      await d.elapse(LEASE_MS + 200);
      const v = await d.view();
      expect(v.steps.a).toMatchObject({ status: "failed", normalized_status: "failed", status_reason: "retry_exhausted", retry_at: null });
      expect(v.attempts.map((a) => a.status)).toEqual(["lost", "lost"]);
      const next = await worker(d);
      await rejected(d, () => d.claim(next, "a"), "invalid_transition");
    });

    it("the orchestrator's fail of a held step is final under a retry policy", async () => {
      const d = await created(await makeDriver(), [step("a", [], { retry_policy: policy(5, 0) })]);
      await holder(d, "a");
      accepted(await d.updateStep("orchestrator", "a", { status: "failed", reason: "wrong approach" }));
      const n = (await d.walTypes()).length;
      await d.elapse(SHORT_WAIT_MS);
      expect(await typesAfter(d, n)).toEqual([]);
      expect((await d.view()).steps.a).toMatchObject({ status: "failed", status_reason: "wrong approach", retry_at: null });
    });

    it("a failure whose reason is in non_retryable_reasons is final", async () => {
      const d = await created(await makeDriver(), [step("a", [], { retry_policy: policy(5, 0, { non_retryable_reasons: ["bad_input"] }) })]);
      const w = await holder(d, "a");
      accepted(await d.updateStep(w, "a", { status: "failed", reason: "bad_input" }));
      const n = (await d.walTypes()).length;
      await d.elapse(SHORT_WAIT_MS);
      expect(await typesAfter(d, n)).toEqual([]);
      expect((await d.view()).steps.a).toMatchObject({ status: "failed", status_reason: "bad_input", retry_at: null });
    });

    it("the task's default_retry_policy applies to a step without its own, and a step's own policy wins", async () => {
      const d = await created(await makeDriver(), [step("a"), step("c", [], { retry_policy: policy(2, 2 * LONG_WAIT_MS) })], { default_retry_policy: policy(2, LONG_WAIT_MS) });
      for (const id of ["a", "c"]) {
        const w = await holder(d, id);
        accepted(await d.updateStep(w, id, { status: "failed", reason: "flaky" }));
      }
      const v = await d.view();
      const waited = (id: string) => Date.parse(v.steps[id]!.retry_at!) - Date.parse(v.attempts.find((a) => a.step_id === id)!.ended_at!);
      expect(waited("a")).toBe(LONG_WAIT_MS);
      expect(waited("c")).toBe(2 * LONG_WAIT_MS);
    });

    it("without a policy the plain rules hold: a worker's failure stays failed, and a lapsed lease makes the step ready at once", async () => {
      const d = await created(await makeDriver(), [step("a"), step("c")], { step_lease_timeout_ms: LEASE_MS });
      const w = await holder(d, "a");
      accepted(await d.updateStep(w, "a", { status: "failed", reason: "flaky" }));
      await holder(d, "c");
      const n = (await d.walTypes()).length;
      await d.elapse(LEASE_MS + 200);
      expect(await typesAfter(d, n)).toEqual(["task_step_lease_expired", "task_step_ready"]);
      const v = await d.view();
      expect(v.steps.a).toMatchObject({ status: "failed", retry_at: null });
      expect(v.steps.c).toMatchObject({ status: "ready", retry_at: null });
      expect(v.attempts.map((a) => a.status)).toEqual(["failed", "lost"]);
    });
  });
}
