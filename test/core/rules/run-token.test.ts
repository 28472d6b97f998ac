/**
 * @module A worker token lives as long as its run: once the run has ended (finished, cancelled, timed out) every
 * command of the task with it is unauthorized (run_ended), decided by the core's authorize for every surface,
 * except the one result a run stopped by the task's end may still hand in.
 */
import { describe, expect, it } from "vitest";
import { checkRunToken } from "../../../src/core/index.js";
import { type Actor } from "../../../src/core/index.js";
import { Harness, orchestrator, step } from "../harness.js";
import { type Cmd, consistent, rejects } from "./support.js";

/** Every command a worker may send, aimed at step `a`. */
const WORKER_COMMANDS: Cmd[] = [
  { type: "claim_next" },
  { type: "claim_step", step_id: "a" },
  { type: "update_step", step_id: "a", status: "running" },
  { type: "append_progress", step_id: "a", summary: "still here" },
  { type: "request_action", step_id: "a", kind: "approval", prompt: "may I?" },
];

/** Every worker command, and its own finish, is refused as a spent token naming the run and how it ended. */
function spent(h: Harness, w: Actor, runStatus: string, statusReason: string): void {
  const expected = { reason: "run_ended", run_id: w.run_id, run_status: runStatus, status_reason: statusReason };
  for (const command of [...WORKER_COMMANDS, { type: "finish_run", run_id: w.run_id, outcome: "finished" }]) {
    expect(rejects(h, command, "unauthorized", w).details).toEqual(expected);
  }
  expect(checkRunToken(h.state, w)).toMatchObject({ code: "unauthorized", details: expected });
  consistent(h);
}

describe("the token of a worker run that has ended", () => {
  it("Should refuse every command of a run the orchestrator cancelled (run_ended), and nothing of another run", () => {
    const h = new Harness();
    h.create([step("a"), step("b")]);
    const w = h.claimWith("a");
    const other = h.dispatch();
    h.ok({ type: "cancel_run", run_id: w.run_id, reason: "changed my mind" });
    spent(h, w, "cancelled", "changed my mind");
    expect(checkRunToken(h.state, other)).toBeNull();
    expect(checkRunToken(h.state, orchestrator)).toBeNull();
    h.ok({ type: "claim_step", step_id: "b" }, other);
  });

  it("Should refuse every command of a run that finished itself", () => {
    const h = new Harness();
    h.create([step("a")]);
    const w = h.dispatch();
    h.ok({ type: "finish_run", run_id: w.run_id, outcome: "finished" }, w);
    spent(h, w, "finished", "finished");
  });

  it("Should refuse every command of a run whose deadline passed, once reconciling timed it out", () => {
    const h = new Harness();
    h.create([step("a")]);
    const w = h.claimWith("a", { timeout_ms: 1_000 });
    h.now += 1_000;
    h.ok({ type: "reconcile_leases" });
    spent(h, w, "timed_out", "worker_timeout");
  });

  it("Should refuse every command of the runs the task's completion ended", () => {
    const h = new Harness();
    h.create([step("a")]);
    h.complete("a");
    const idle = h.dispatch();
    h.ok({ type: "complete_task" });
    spent(h, idle, "cancelled", "task_completed");
  });

  it("Should let a run stopped by the task's end hand in its result once, and nothing after", () => {
    const h = new Harness();
    h.create([step("a")]);
    const w = h.claimWith("a");
    h.ok({ type: "cancel_task" });
    // Asked to cancel, not ended: it is told why (task_terminal), and may finish.
    expect(checkRunToken(h.state, w)).toBeNull();
    rejects(h, { type: "append_progress", step_id: "a", summary: "x" }, "task_terminal", w);
    h.ok({ type: "finish_run", run_id: w.run_id, outcome: "cancelled" }, w);
    // Ended without a result: the result may still come, once, and only with a result.
    rejects(h, { type: "finish_run", run_id: w.run_id, outcome: "finished" }, "unauthorized", w);
    const late = h.ok({ type: "finish_run", run_id: w.run_id, outcome: "finished", result: { transcript: "t" } }, w);
    expect(late.events.map((e) => e.payload)).toEqual([{ run_id: w.run_id, status: "cancelled", reason: "late_result", result: { transcript: "t" } }]);
    spent(h, w, "cancelled", "task_cancelled");
  });
});
