/**
 * @module Pause and resume (docs/model.md "Pause, block and resume"): a paused task dispatches and claims nothing, its held steps go on and may
 * settle under leases that still run, and resuming returns it to pending, then promotes ready steps and task_running as after any reopen.
 */
import { describe, expect, it } from "vitest";
import { normalizedTaskStatus } from "../../../src/core/index.js";
import { Harness, observer, orchestrator, step } from "../harness.js";
import { consistent, LEASE_MS, rejectsAs, setStep, st, types } from "./support.js";

/** A task with a, then b after a; a lease of LEASE_MS. */
function task(): Harness {
  const h = new Harness();
  h.create([step("a"), step("b", ["a"])], { step_lease_timeout_ms: LEASE_MS });
  return h;
}

describe("pausing", () => {
  it("Should pause a pending task: native and normalized status paused, reason kept", () => {
    const h = new Harness();
    h.create([]);
    expect(h.state.task!.status).toBe("pending");
    expect(types(h.ok({ type: "pause_task", reason: "review" }))).toEqual(["task_paused"]);
    expect(h.state.task).toMatchObject({ status: "paused", status_reason: "review" });
    expect(normalizedTaskStatus(h.state)).toBe("paused");
    consistent(h);
  });

  it("Should pause a running task", () => {
    const h = task();
    expect(h.state.task!.status).toBe("running");
    h.ok({ type: "pause_task" });
    expect(h.state.task!.status).toBe("paused");
  });

  it("Should refuse dispatch and claims while paused with task_not_dispatchable", () => {
    const h = task();
    const w = h.dispatch();
    h.ok({ type: "pause_task" });
    rejectsAs(h, { type: "dispatch_worker" }, orchestrator, "task_not_dispatchable");
    rejectsAs(h, { type: "claim_step", step_id: "a" }, w, "task_not_dispatchable");
    rejectsAs(h, { type: "claim_next" }, w, "task_not_dispatchable");
  });

  it("Should let a held step be updated and completed while paused, its dependants becoming ready", () => {
    const h = task();
    const w = h.claimWith("a");
    h.ok({ type: "pause_task" });
    h.ok(setStep("a", "running"), w);
    h.ok({ type: "append_progress", summary: "half" }, w);
    h.ok(setStep("a", "completed", { result_summary: "done" }), w);
    expect(st(h, "a").status).toBe("completed");
    expect(st(h, "b").status).toBe("ready");
    expect(h.state.task!.status).toBe("paused");
    consistent(h);
  });

  it("Should still expire leases while paused", () => {
    const h = task();
    h.claimWith("a");
    h.ok({ type: "pause_task" });
    h.now += LEASE_MS;
    expect(types(h.ok({ type: "reconcile_leases" }))).toEqual(["task_step_lease_expired", "task_step_ready"]);
    expect(h.state.task!.status).toBe("paused");
    consistent(h);
  });

  it.each([
    ["paused", (h: Harness) => h.ok({ type: "pause_task" }), "invalid_transition"],
    ["blocked", (h: Harness) => h.ok({ type: "block_task" }), "invalid_transition"],
    ["completed", (h: Harness) => h.ok({ type: "complete_task" }), "task_terminal"],
    ["failed", (h: Harness) => h.ok({ type: "fail_task" }), "task_terminal"],
    ["cancelled", (h: Harness) => h.ok({ type: "cancel_task" }), "task_terminal"],
  ] as const)("Should refuse to pause a %s task with %s", (_, into, code) => {
    const h = new Harness();
    h.create([step("a", [], { required: false })]);
    into(h);
    rejectsAs(h, { type: "pause_task" }, orchestrator, code);
  });

  it("Should refuse a worker's or an observer's pause with tool_not_available", () => {
    const h = task();
    const w = h.claimWith("a");
    rejectsAs(h, { type: "pause_task" }, w, "tool_not_available");
    rejectsAs(h, { type: "pause_task" }, observer, "tool_not_available");
    h.ok({ type: "pause_task" });
    rejectsAs(h, { type: "resume_task" }, w, "tool_not_available");
  });

  it("Should refuse to block a paused task with invalid_transition, so reopening can never end a pause unasked", () => {
    const h = task();
    h.ok({ type: "pause_task" });
    rejectsAs(h, { type: "block_task" }, orchestrator, "invalid_transition");
    expect(h.state.task!.status).toBe("paused");
  });
});

describe("resuming", () => {
  it("Should resume to pending, then running when a step is ready", () => {
    const h = task();
    h.ok({ type: "pause_task" });
    const d = h.ok({ type: "resume_task", reason: "go on" });
    expect(types(d)).toEqual(["task_resumed", "task_running"]);
    expect(h.state.task!.status).toBe("running");
    consistent(h);
  });

  it("Should resume to pending and stay pending when nothing is ready or held", () => {
    const h = new Harness();
    h.create([]);
    h.ok({ type: "pause_task" });
    expect(types(h.ok({ type: "resume_task" }))).toEqual(["task_resumed"]);
    expect(h.state.task).toMatchObject({ status: "pending", status_reason: null });
  });

  it("Should make pending steps whose dependencies completed ready on resume", () => {
    const h = task();
    h.ok({ type: "pause_task" });
    // Added while paused with every dependency met: ready at once by the readiness rule (every dependency completed) or by the resume.
    h.ok({ type: "update_task", ops: [{ op: "add_step", step: step("c") }] });
    h.ok({ type: "resume_task" });
    expect(st(h, "c").status).toBe("ready");
    expect(st(h, "b").status).toBe("pending");
    consistent(h);
  });

  it("Should let claims go on after resume", () => {
    const h = task();
    const w = h.dispatch();
    h.ok({ type: "pause_task" });
    h.ok({ type: "resume_task" });
    h.ok({ type: "claim_step", step_id: "a" }, w);
    expect(st(h, "a").status).toBe("claimed");
  });

  it.each([
    ["pending", () => {
      const h = new Harness();
      h.create([]);
      return h;
    }],
    ["running", task],
    ["blocked", () => {
      const h = task();
      h.ok({ type: "block_task" });
      return h;
    }],
  ] as const)("Should refuse to resume a %s task with invalid_transition", (_, make) => {
    const h = make();
    rejectsAs(h, { type: "resume_task" }, orchestrator, "invalid_transition");
  });

  it("Should refuse to resume a terminal task with task_terminal", () => {
    const h = task();
    h.ok({ type: "pause_task" });
    h.ok({ type: "cancel_task" });
    rejectsAs(h, { type: "resume_task" }, orchestrator, "task_terminal");
  });
});
