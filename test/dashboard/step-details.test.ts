/** The step panel's data, built from the DAG the core rebuilt: attempts, actions, retry, delegation, dispatch-time changes. */
import { describe, expect, it } from "vitest";
import { replay, type RetryPolicy } from "../../src/core/index.js";
import { changedFields, delegateBadge, stepDetails } from "../../dashboard/src/model/step-details.js";
import { Harness, step } from "../core/harness.js";
import { setStep, systemCaller, upd } from "../core/rules/support.js";

const POLICY: RetryPolicy = { max_attempts: 3, initial_interval_ms: 1_000, backoff_coefficient: 2, max_interval_ms: 3_000 };

describe("step details", () => {
  it("Should answer null for a step that does not exist", () => {
    const h = new Harness();
    h.create([step("a")]);
    expect(stepDetails(h.state, "nope")).toBeNull();
  });

  it("Should show a fresh step's status, requiredness, pool and dependencies with no attempt", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"], { required: false, worker_pool_id: "gpu" })]);
    expect(stepDetails(h.state, "b")).toMatchObject({
      stepId: "b",
      title: "Step b",
      status: "queued",
      nativeStatus: "pending",
      required: false,
      pool: "gpu",
      dependsOn: ["a"],
      attempts: [],
      openActions: [],
      retry: null,
      delegation: null,
      claimedBy: null,
      updatedAfterDispatch: false,
      changedSinceDispatch: [],
    });
  });

  it("Should list every attempt with its run, agent and how it ended, the latest one current", () => {
    const h = new Harness();
    h.create([step("a", [], { retry_policy: POLICY })]);
    const first = h.claimWith("a");
    h.ok(setStep("a", "failed", { reason: "flaky" }), first);
    h.now = Date.parse(h.state.steps.get("a")!.retry_at!);
    h.ok({ type: "reconcile_leases" }, systemCaller);
    const second = h.claimWith("a");
    h.ok(setStep("a", "completed", { result_summary: "all good", artifact_ids: ["report.md"] }), second);
    const d = stepDetails(h.state, "a")!;
    expect(d.attempts.map((a) => [a.ordinal, a.runId, a.agentId, a.ended])).toEqual([
      [1, first.run_id, first.agent_id, "failed"],
      [2, second.run_id, second.agent_id, "completed"],
    ]);
    expect(d.attempts.every((a) => a.endedAt !== null)).toBe(true);
    expect(d).toMatchObject({ status: "completed", resultSummary: "all good", artifacts: ["report.md"], retry: { attempts: expect.any(Number), maxAttempts: 3, retryAt: null } });
  });

  it("Should show a scheduled retry while the step waits for it", () => {
    const h = new Harness();
    h.create([step("a", [], { retry_policy: POLICY })]);
    h.ok(setStep("a", "failed", { reason: "flaky" }), h.claimWith("a"));
    const d = stepDetails(h.state, "a")!;
    expect(d.status).toBe("retrying");
    expect(d.retry).toEqual({ retryAt: h.state.steps.get("a")!.retry_at, attempts: 1, maxAttempts: 3 });
    expect(d.retry!.retryAt).not.toBeNull();
  });

  it("Should show an active attempt as not ended and name who holds the step", () => {
    const h = new Harness();
    h.create([step("a")]);
    const w = h.claimWith("a");
    const d = stepDetails(h.state, "a")!;
    expect(d.status).toBe("preparing");
    expect(d.attempts).toHaveLength(1);
    expect(d.attempts[0]).toMatchObject({ ended: null, normalized: "running", current: true, endedAt: null });
    expect(d.claimedBy).toMatchObject({ agentId: w.agent_id, runId: w.run_id });
  });

  it("Should list the step's open actions and show it waiting for permission", () => {
    const h = new Harness();
    h.create([step("a"), step("b")]);
    const w = h.claimWith("a");
    const asked = h.ok({ type: "request_action", step_id: "a", kind: "approval", prompt: "Deploy?" }, w).value as { action_id: string };
    const d = stepDetails(h.state, "a")!;
    expect(d.status).toBe("waiting_permission");
    expect(d.openActions).toEqual([expect.objectContaining({ actionId: asked.action_id, kind: "approval", prompt: "Deploy?" })]);
    expect(stepDetails(h.state, "b")!.openActions).toEqual([]);
  });

  it("Should show what changed since dispatch when the orchestrator edits a held step", () => {
    const h = new Harness();
    h.create([step("gate"), step("x")]);
    h.claimWith("x");
    h.ok(upd({ op: "update_step", step_id: "x", fields: { title: "Now", depends_on_step_ids: ["gate"] } }));
    const d = stepDetails(h.state, "x")!;
    expect(d.updatedAfterDispatch).toBe(true);
    expect(d.changedSinceDispatch).toEqual([
      { field: "title", atDispatch: "Step x", now: "Now" },
      { field: "depends_on_step_ids", atDispatch: "(none)", now: "gate" },
    ]);
  });

  it("Should compare dependencies as sets, not by order", () => {
    const h = new Harness();
    h.create([step("a"), step("b"), step("c", ["a", "b"])]);
    const snapshot = { title: "Step c", summary: "Do c", depends_on_step_ids: ["b", "a"], required: true, worker_pool_id: "default" };
    expect(changedFields(snapshot, h.state.steps.get("c")!)).toEqual([]);
    expect(changedFields({ ...snapshot, required: false }, h.state.steps.get("c")!)).toEqual([{ field: "required", atDispatch: "false", now: "true" }]);
  });

  it("Should show a child task's delegation with the child's id, and an A2A peer's card", () => {
    const h = new Harness();
    const child = { title: "Research", steps: [{ step_id: "find", title: "Find", summary: "", depends_on_step_ids: [] }] };
    const card = "https://peer.example/.well-known/agent-card.json";
    h.create([step("kid", [], { delegate: { kind: "task", task: child } }), step("peer", [], { delegate: { kind: "a2a", agent_card_url: card } }), step("w")]);
    expect(stepDetails(h.state, "kid")!.delegation).toMatchObject({ kind: "task", childTaskId: null, status: null });
    h.ok({ type: "reconcile_leases" }, systemCaller);
    const kid = stepDetails(h.state, "kid")!.delegation!;
    expect(kid.kind).toBe("task");
    expect(kid.childTaskId).toMatch(/\S/);
    expect(kid.status).toBe("starting");
    expect(stepDetails(h.state, "peer")!.delegation).toMatchObject({ kind: "a2a", agentCardRef: card, childTaskId: null });
    expect(delegateBadge(h.state.steps.get("kid")!)).toBe("child task");
    expect(delegateBadge(h.state.steps.get("peer")!)).toBe("A2A");
    expect(delegateBadge(h.state.steps.get("w")!)).toBeNull();
  });

  it("Should read a replayed earlier state as it was then", () => {
    const h = new Harness();
    h.create([step("a")]);
    const before = h.wal.length;
    h.complete("a");
    // No retry policy: the panel shows no retry section even though an attempt was counted.
    expect(stepDetails(h.state, "a")).toMatchObject({ status: "completed", retry: null });
    const earlier = replay(h.wal.slice(0, before));
    expect(stepDetails(earlier, "a")).toMatchObject({ status: "queued", attempts: [] });
  });
});
