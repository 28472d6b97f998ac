/**
 * @module Retry policies (docs/model.md "Retry policies"): which attempt endings are retried, when (backoff, capped), how a retry is
 * reopened by the runtime, when attempts run out (retry_exhausted, lost workers included), and what stays as without a policy.
 */
import { describe, expect, it } from "vitest";
import { type Actor, backoffMs, diagnostics, nextDeadline, normalizedStepStatus, type RetryPolicy } from "../../../src/core/index.js";
import { Harness, step, T0 } from "../harness.js";
import { byType, consistent, iso, LEASE_MS, payload, setStep, st, types, upd } from "./support.js";

/** Three attempts, 1 s then 2 s then 4 s (capped at 3 s). */
const POLICY: RetryPolicy = { max_attempts: 3, initial_interval_ms: 1_000, backoff_coefficient: 2, max_interval_ms: 3_000 };

/** A task with step a (its own policy, when given) and b after a. */
function task(policy: RetryPolicy | null = POLICY, extra: Record<string, unknown> = {}): Harness {
  const h = new Harness();
  h.create([step("a", [], policy === null ? {} : { retry_policy: policy }), step("b", ["a"])], { step_lease_timeout_ms: LEASE_MS, ...extra });
  return h;
}

/** A fresh worker claims a, then fails it with `reason`. */
function failOnce(h: Harness, reason = "flaky"): Actor {
  const w = h.claimWith("a");
  h.ok(setStep("a", "failed", { reason }), w);
  return w;
}

/** Moves the clock to the step's retry_at and reconciles. */
function fireRetry(h: Harness, id = "a"): string[] {
  h.now = Date.parse(st(h, id).retry_at!);
  return types(h.ok({ type: "reconcile_leases" }));
}

describe("without a policy (the plain rules unchanged)", () => {
  it("Should leave a worker's failed step failed", () => {
    const h = task(null);
    const d = h.ok(setStep("a", "failed"), h.claimWith("a"));
    expect(payload(d.events[0]).retry).toBeUndefined();
    expect(st(h, "a")).toMatchObject({ status: "failed", retry_at: null });
    h.now += 10 * LEASE_MS;
    expect(h.ok({ type: "reconcile_leases" }).events).toEqual([]);
  });

  it("Should make a step whose lease expired ready at once", () => {
    const h = task(null);
    h.claimWith("a");
    h.now += LEASE_MS;
    expect(types(h.ok({ type: "reconcile_leases" }))).toEqual(["task_step_lease_expired", "task_step_ready"]);
    expect(st(h, "a")).toMatchObject({ status: "ready", retry_at: null });
  });
});

describe("a retried failure", () => {
  it("Should schedule the retry at now + initial_interval_ms, the step normalized retrying", () => {
    const h = task();
    const w = h.claimWith("a");
    h.now += 500;
    const d = h.ok(setStep("a", "failed", { reason: "flaky" }), w);
    expect(payload(d.events[0]).retry).toEqual({ attempts: 1, max_attempts: 3, retry_at: iso(h.now + 1_000) });
    expect(st(h, "a")).toMatchObject({ status: "failed", retry_at: iso(h.now + 1_000) });
    expect(h.state.index.retrying.has("a")).toBe(true);
    expect(normalizedStepStatus(h.state, st(h, "a"))).toBe("retrying");
    expect(nextDeadline(h.state)).toBe(h.now + 1_000);
    consistent(h);
  });

  it("Should reopen it at retry_at (reason retry_policy, by_retry_policy, on the orchestrator's behalf) and make it ready", () => {
    const h = task();
    failOnce(h);
    h.now = Date.parse(st(h, "a").retry_at!) - 1;
    expect(h.ok({ type: "reconcile_leases" }).events).toEqual([]);
    h.now += 1;
    const d = h.ok({ type: "reconcile_leases" });
    expect(types(d)).toEqual(["task_step_reopened", "task_step_ready"]);
    expect(d.events[0]).toMatchObject({ actor_agent_id: "system", payload: { reason: "retry_policy", by_retry_policy: true, on_behalf_of_agent_id: "orch" } });
    expect(st(h, "a")).toMatchObject({ status: "ready", retry_at: null, retry_attempts: 1 });
    expect(h.state.index.retrying.size).toBe(0);
    consistent(h);
  });

  it("Should grow the wait by backoff_coefficient and cap it at max_interval_ms", () => {
    const h = task({ ...POLICY, max_attempts: 5 });
    const waits: number[] = [];
    for (let i = 0; i < 4; i++) {
      failOnce(h);
      waits.push(Date.parse(st(h, "a").retry_at!) - h.now);
      fireRetry(h);
    }
    expect(waits).toEqual([1_000, 2_000, 3_000, 3_000]);
    expect(backoffMs(POLICY, 3)).toBe(3_000);
  });

  it("Should fail the step with retry_exhausted after max_attempts attempts", () => {
    const h = task();
    failOnce(h);
    fireRetry(h);
    failOnce(h);
    fireRetry(h);
    const w = h.claimWith("a");
    const d = h.ok(setStep("a", "failed", { reason: "flaky" }), w);
    expect(payload(d.events[0]).retry).toEqual({ attempts: 3, max_attempts: 3, retry_at: null });
    expect(st(h, "a")).toMatchObject({ status: "failed", status_reason: "retry_exhausted", retry_at: null, attempt_ids: expect.any(Array) });
    expect(st(h, "a").attempt_ids).toHaveLength(3);
    expect(h.state.index.retrying.size).toBe(0);
    consistent(h);
  });

  it("Should stop a step whose lease expires every time at retry_exhausted after max_attempts claims", () => {
    const h = task();
    for (let i = 1; i <= 3; i++) {
      h.claimWith("a");
      h.now += LEASE_MS;
      const d = h.ok({ type: "reconcile_leases" });
      expect(types(d)).toEqual(["task_step_lease_expired"]);
      if (i < 3) {
        expect(st(h, "a")).toMatchObject({ status: "pending", retry_at: iso(h.now + backoffMs(POLICY, i)) });
        expect(fireRetry(h)).toEqual(["task_step_reopened", "task_step_ready"]);
      }
    }
    expect(st(h, "a")).toMatchObject({ status: "failed", status_reason: "retry_exhausted", retry_at: null });
    expect(st(h, "a").attempt_ids.map((id) => h.state.attempts.get(id)!.status)).toEqual(["lost", "lost", "lost"]);
    consistent(h);
  });

  it("Should reopen a lost attempt's retry without backoff in the same reconcile, leaving nothing due", () => {
    const h = task({ ...POLICY, initial_interval_ms: 0 });
    h.claimWith("a");
    h.now += LEASE_MS;
    expect(types(h.ok({ type: "reconcile_leases" }))).toEqual(["task_step_lease_expired", "task_step_reopened", "task_step_ready"]);
    expect(st(h, "a")).toMatchObject({ status: "ready", retry_at: null, retry_attempts: 1 });
    expect(nextDeadline(h.state)).toBeNull();
    consistent(h);
  });

  it("Should make a failure whose reason is in non_retryable_reasons final at once", () => {
    const h = task({ ...POLICY, non_retryable_reasons: ["bad_input"] });
    const d = h.ok(setStep("a", "failed", { reason: "bad_input" }), h.claimWith("a"));
    expect(payload(d.events[0]).retry).toBeUndefined();
    expect(st(h, "a")).toMatchObject({ status: "failed", status_reason: "bad_input", retry_at: null });
  });

  it("Should make the orchestrator's fail of a held step final", () => {
    const h = task();
    h.claimWith("a");
    const d = h.ok(setStep("a", "failed", { reason: "give up" }));
    expect(payload(d.events[0]).retry).toBeUndefined();
    expect(st(h, "a")).toMatchObject({ status: "failed", retry_at: null });
  });

  it("Should retry the run-end fallback of a run that finished holding its step", () => {
    const h = task();
    const w = h.claimWith("a");
    const d = h.ok({ type: "finish_run", run_id: w.run_id, outcome: "finished" }, w);
    expect(byType(d.events, "task_step_failed")[0]).toMatchObject({ payload: { reason: "worker_finished_without_terminal_step_status", retry: { attempts: 1, retry_at: iso(h.now + 1_000) } } });
    expect(fireRetry(h)).toEqual(["task_step_reopened", "task_step_ready"]);
  });

  it("Should retry a worker_timeout (the run's deadline passed)", () => {
    const h = task();
    h.claimWith("a", { timeout_ms: 5_000 });
    h.now += 5_000;
    const d = h.ok({ type: "reconcile_leases" });
    expect(byType(d.events, "task_step_failed")[0]).toMatchObject({ payload: { reason: "worker_timeout", attempt_status: "timed_out", retry: { attempts: 1, retry_at: iso(h.now + 1_000) } } });
    expect(st(h, "a").retry_at).toBe(iso(h.now + 1_000));
  });

  it("Should not retry an attempt the orchestrator cancelled with its run", () => {
    const h = task();
    const w = h.claimWith("a");
    const d = h.ok({ type: "cancel_run", run_id: w.run_id });
    expect(payload(byType(d.events, "task_step_failed")[0]).retry).toBeUndefined();
    expect(st(h, "a").retry_at).toBeNull();
  });

  it("Should apply the task's default_retry_policy to a step without its own, and the step's own over it", () => {
    const h = task(null, { default_retry_policy: { ...POLICY, initial_interval_ms: 7_000, max_interval_ms: 7_000 } });
    h.ok(upd({ op: "add_step", step: step("c", [], { retry_policy: POLICY }) }));
    failOnce(h);
    expect(st(h, "a").retry_at).toBe(iso(h.now + 7_000));
    const w = h.claimWith("c");
    h.ok(setStep("c", "failed"), w);
    expect(st(h, "c").retry_at).toBe(iso(h.now + 1_000));
  });

  it("Should restart the count when the orchestrator reopens the step", () => {
    const h = task({ ...POLICY, max_attempts: 2 });
    failOnce(h);
    fireRetry(h);
    failOnce(h);
    expect(st(h, "a").status_reason).toBe("retry_exhausted");
    h.ok(upd({ op: "reopen_step", step_id: "a" }));
    expect(st(h, "a")).toMatchObject({ status: "ready", retry_attempts: 0 });
    failOnce(h);
    expect(st(h, "a")).toMatchObject({ status: "failed", retry_at: iso(h.now + 1_000) });
  });

  it("Should let the orchestrator's reopen of a step awaiting a retry supersede the retry", () => {
    const h = task();
    failOnce(h);
    h.ok(upd({ op: "reopen_step", step_id: "a" }));
    expect(st(h, "a")).toMatchObject({ status: "ready", retry_at: null });
    expect(h.state.index.retrying.size).toBe(0);
    consistent(h);
  });

  it("Should not make a step awaiting its retry ready on an unrelated task_update", () => {
    const h = task();
    h.claimWith("a");
    h.now += LEASE_MS;
    h.ok({ type: "reconcile_leases" });
    expect(st(h, "a")).toMatchObject({ status: "pending" });
    h.ok(upd({ op: "add_step", step: step("c") }, { op: "update_task", title: "Again" }, { op: "update_step", step_id: "a", fields: { title: "Retitled" } }));
    expect(st(h, "a")).toMatchObject({ status: "pending", retry_at: expect.any(String) });
    expect(st(h, "c").status).toBe("ready");
    consistent(h);
  });

  it.each(["fail_task", "cancel_task"])("Should clear pending retries when the task stops (%s)", (type) => {
    const h = task();
    const w = failOnce(h);
    // The run ends first, so no cancellation wait is left to set an alarm for.
    h.ok({ type: "finish_run", run_id: w.run_id, outcome: "finished" }, w);
    h.ok({ type });
    expect(st(h, "a").retry_at).toBeNull();
    expect(h.state.index.retrying.size).toBe(0);
    expect(nextDeadline(h.state)).toBeNull();
    consistent(h);
  });

  it("Should reopen a due retry while the task is paused without claiming it", () => {
    const h = task();
    failOnce(h);
    h.ok({ type: "pause_task" });
    expect(fireRetry(h)).toEqual(["task_step_reopened", "task_step_ready"]);
    expect(h.state.task!.status).toBe("paused");
  });

  it("Should not call a task stalled while its only unfinished step awaits a retry (after a failure or a lost lease)", () => {
    const failed = task();
    failOnce(failed);
    expect(diagnostics(failed.state).stalled).toBe(false);
    const lost = task();
    lost.claimWith("a");
    lost.now += LEASE_MS;
    lost.ok({ type: "reconcile_leases" });
    expect(st(lost, "a")).toMatchObject({ status: "pending", retry_at: expect.any(String) });
    expect(diagnostics(lost.state).stalled).toBe(false);
  });
});

describe("replay", () => {
  it("Should rebuild retry counts, retry_at and the retrying index from the WAL", () => {
    const h = task();
    failOnce(h);
    consistent(h);
    fireRetry(h);
    h.claimWith("a");
    h.now += LEASE_MS;
    h.ok({ type: "reconcile_leases" });
    consistent(h);
    expect(st(h, "a")).toMatchObject({ retry_attempts: 2, retry_at: iso(h.now + 2_000) });
    expect(T0).toBeLessThan(h.now);
  });
});
