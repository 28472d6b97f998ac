/**
 * Permissions (docs/model.md "Roles"): one test (or table row) per rule. Every rejected command is checked to write nothing.
 */
import { describe, expect, it } from "vitest";
import { replay } from "../../../src/core/index.js";
import { stranger } from "../harness.js";
import { systemCaller, rejectsAs, q, ids, qErr, st, base } from "./support.js";

describe("Permission", () => {
  it("the core checks permission on every task tool", () => {
    const h = base();
    const w = h.claimWith("a");
    const other = { ...w, task_id: "task_other" };
    rejectsAs(h, { type: "update_step", step_id: "a", status: "running" }, other, "permission_denied");
    rejectsAs(h, { type: "append_progress", summary: "x" }, other, "permission_denied");
    rejectsAs(h, { type: "claim_next" }, other, "permission_denied");
    rejectsAs(h, { type: "update_step", step_id: "c", status: "blocked" }, stranger, "permission_denied");
    rejectsAs(h, { type: "dispatch_worker" }, stranger, "permission_denied");
    rejectsAs(h, { type: "complete_task" }, stranger, "permission_denied");
    expect(qErr(h, other)).toBe("permission_denied");
  });

  it("a worker's effective tools are read, ready query, claim, and updates of its own claimed step", () => {
    const h = base();
    const w = h.dispatch();
    expect(ids(q(h, w))).toEqual(["a", "c", "d"]);
    h.ok({ type: "claim_step", step_id: "a" }, w);
    h.ok({ type: "update_step", step_id: "a", status: "running", result_summary: "r" }, w);
    h.ok({ type: "append_progress", summary: "p" }, w);
    h.ok({ type: "update_step", step_id: "a", status: "completed", artifact_ids: ["o"] }, w);
    h.ok({ type: "finish_run", run_id: w.run_id!, outcome: "finished" }, w);
    expect(replay(h.wal)).toEqual(h.state);
  });

  it.each([
    ["update_step", { type: "update_step", step_id: "a", status: "running" }],
    ["claim_step", { type: "claim_step", step_id: "a" }],
    ["claim_next", { type: "claim_next" }],
    ["append_progress", { type: "append_progress", summary: "x" }],
    ["update_task", { type: "update_task", ops: [{ op: "update_task", title: "x" }] }],
    ["complete_task", { type: "complete_task" }],
    ["dispatch_worker", { type: "dispatch_worker" }],
    ["finish_run", { type: "finish_run", run_id: "run_x", outcome: "finished" }],
  ])("an ordinary agent (a system caller; the observer is in the conformance suite) gets no task write tool: %s is tool_not_available", (_n, cmd) => {
    const h = base();
    rejectsAs(h, cmd, systemCaller, "tool_not_available");
  });

  it("a non-orchestrator reaching beyond its scope on task content gets permission_denied (forged task or session; its own task's steps and runs are in the conformance suite)", () => {
    const h = base();
    const w1 = h.claimWith("a");
    const w2 = h.claimWith("c");
    rejectsAs(h, { type: "update_step", step_id: "a", status: "running" }, { ...w1, task_id: "task_other" }, "permission_denied");
    rejectsAs(h, { type: "update_step", step_id: "a", status: "running" }, { ...w1, session_id: "sess_other" }, "permission_denied");
    expect(st(h, "c")).toMatchObject({ status: "claimed", claimed_by_run_id: w2.run_id, result_summary: null });
  });

});
