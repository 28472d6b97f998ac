/**
 * @module The counted caps the core decides (docs/limits.md "Counted caps"): actions open at once in a task, actions
 * one attempt asks, and child tasks one delegated step creates. Each is accepted at its limit and refused one past
 * it with limit_exceeded {limit, value, setting}, writing nothing.
 */
import { describe, expect, it } from "vitest";
import { type Actor, DEFAULT_LIMITS, type Delegation, type RuntimeError } from "../../../src/core/index.js";
import { Harness, orchestrator, step } from "../harness.js";
import { consistent, LEASE_MS, rejectsAs, setStep, st, systemCaller } from "./support.js";

/** An approval request on `stepId`, or on the task when null. */
const ask = (stepId: string | null, prompt = "May I?") => ({ type: "request_action", ...(stepId === null ? {} : { step_id: stepId }), kind: "approval", prompt });
/** The orchestrator's answer to an action. */
const approve = (actionId: string) => ({ type: "respond_action", action_id: actionId, decision: "approved" });
const idOf = (d: { value: unknown }): string => (d.value as { action_id: string }).action_id;

/** A limit_exceeded refusal with exactly these details, nothing written. */
function refusedPast(h: Harness, command: Record<string, unknown>, actor: Actor, details: Record<string, unknown>): RuntimeError {
  const error = rejectsAs(h, command, actor, "limit_exceeded");
  expect(error.details).toEqual(details);
  return error;
}

describe("actions open at once in a task (MAX_OPEN_ACTIONS_PER_TASK)", () => {
  it("Should accept the limit-th open action and refuse one more, task- or step-level, until one is answered", () => {
    const h = new Harness();
    h.limits = { ...DEFAULT_LIMITS, maxOpenActionsPerTask: 3 };
    h.create([step("a")], { step_lease_timeout_ms: LEASE_MS });
    const w = h.claimWith("a");
    h.ok(setStep("a", "running"), w);
    const first = idOf(h.ok(ask(null, "one")));
    h.ok(ask(null, "two"));
    h.ok(ask("a", "three"), w);
    expect(h.state.index.openActions.size).toBe(3);
    const details = { limit: 3, value: 4, setting: "MAX_OPEN_ACTIONS_PER_TASK" };
    refusedPast(h, ask(null, "four"), orchestrator, details);
    h.ok(approve(first));
    h.ok(ask(null, "four"));
    refusedPast(h, ask(null, "five"), orchestrator, details);
    consistent(h);
  });

  it("Should default to 1,000", () => {
    expect(DEFAULT_LIMITS.maxOpenActionsPerTask).toBe(1_000);
  });
});

describe("actions one attempt asks (MAX_ACTIONS_PER_ATTEMPT)", () => {
  /** A worker holding step a, running. */
  function holding(limit: number) {
    const h = new Harness();
    h.limits = { ...DEFAULT_LIMITS, maxActionsPerAttempt: limit };
    h.create([step("a")], { step_lease_timeout_ms: LEASE_MS });
    const w = h.claimWith("a");
    h.ok(setStep("a", "running"), w);
    return { h, w };
  }

  it("Should count the attempt's resolved actions too: the limit-th is accepted, one more refused", () => {
    const { h, w } = holding(2);
    h.ok(approve(idOf(h.ok(ask("a"), w))));
    const second = idOf(h.ok(ask("a"), w));
    // While one is open, another on the same step is invalid_transition as before, not a count.
    rejectsAs(h, ask("a"), w, "invalid_transition");
    h.ok(approve(second));
    refusedPast(h, ask("a"), w, { limit: 2, value: 3, setting: "MAX_ACTIONS_PER_ATTEMPT" });
    // The orchestrator asking on behalf of the held step asks within the same attempt.
    refusedPast(h, ask("a"), orchestrator, { limit: 2, value: 3, setting: "MAX_ACTIONS_PER_ATTEMPT" });
    // A task-level action belongs to no attempt.
    h.ok(ask(null));
    consistent(h);
  });

  it("Should give the step's next attempt a fresh count", () => {
    const { h, w } = holding(1);
    h.ok(approve(idOf(h.ok(ask("a"), w))));
    refusedPast(h, ask("a"), w, { limit: 1, value: 2, setting: "MAX_ACTIONS_PER_ATTEMPT" });
    h.ok(setStep("a", "failed"), w);
    h.ok({ type: "update_task", ops: [{ op: "reopen_step", step_id: "a" }] });
    const next = h.claimWith("a");
    h.ok(ask("a"), next);
    consistent(h);
  });

  it("Should default to 100", () => {
    expect(DEFAULT_LIMITS.maxActionsPerAttempt).toBe(100);
  });
});

describe("child tasks one delegated step creates (MAX_CHILDREN_PER_STEP)", () => {
  const CHILD = { title: "Research", summary: "", steps: [{ step_id: "find", title: "Find", summary: "", depends_on_step_ids: [] }] };
  const reconcile = (h: Harness) => h.ok({ type: "reconcile_leases" }, systemCaller);
  /** The delegation of the step's latest attempt. */
  const latest = (h: Harness): Delegation => h.state.delegations.get(st(h, "kid").delegation_id!)!;
  /** The latest child reports it failed: the step's attempt fails. */
  const childFailed = (h: Harness) =>
    h.ok({ type: "record_delegation", delegation_id: latest(h).delegation_id, report: { kind: "child_settled", child_task_id: latest(h).child_task_id, child_status: "failed", result_summary: "no", artifact_ids: [] } }, systemCaller);
  const reopen = { type: "update_task", ops: [{ op: "reopen_step", step_id: "kid" }] };

  function delegated(limit: number, extra: Record<string, unknown> = {}): Harness {
    const h = new Harness();
    h.limits = { ...DEFAULT_LIMITS, maxChildrenPerStep: limit };
    h.create([step("kid", [], { delegate: { kind: "task", task: CHILD }, ...extra })]);
    reconcile(h);
    return h;
  }

  it("Should reopen a failed delegated step up to the limit-th child, and refuse the reopen past it", () => {
    const h = delegated(2);
    childFailed(h);
    h.ok(reopen);
    reconcile(h);
    expect([...h.state.delegations.values()].filter((d) => d.kind === "task")).toHaveLength(2);
    childFailed(h);
    // A patch op's refusal names the op, as every op error does.
    refusedPast(h, reopen, orchestrator, { limit: 2, value: 3, setting: "MAX_CHILDREN_PER_STEP", op_index: 0 });
    expect(st(h, "kid").status).toBe("failed");
    consistent(h);
  });

  it("Should not retry a child-task delegate by its policy past the limit: that failure is final", () => {
    const h = delegated(2, { retry_policy: { max_attempts: 5, initial_interval_ms: 1_000, backoff_coefficient: 1, max_interval_ms: 1_000 } });
    childFailed(h);
    expect(st(h, "kid").retry_at).not.toBeNull();
    h.now += 1_000;
    reconcile(h);
    reconcile(h);
    expect(h.state.delegations.size).toBe(2);
    childFailed(h);
    expect(st(h, "kid")).toMatchObject({ status: "failed", retry_at: null });
    h.now += 60_000;
    reconcile(h);
    reconcile(h);
    expect(h.state.delegations.size).toBe(2);
    consistent(h);
  });

  it("Should default to 100, the most attempts a retry policy allows", () => {
    expect(DEFAULT_LIMITS.maxChildrenPerStep).toBe(100);
  });
});
