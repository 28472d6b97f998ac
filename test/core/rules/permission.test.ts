/**
 * Seed 003 "Permission": one test (or table row) per rule. Every rejected command is checked to write nothing.
 */
import { describe, expect, it } from "vitest";
import { replay } from "../../../src/core/index.js";
import { observer, orchestrator, stranger, TASK } from "../harness.js";
import { systemCaller, rejectsAs, q, ids, qErr, st, runOf, base } from "./support.js";

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
    ["create_task", { type: "create_task", task_id: "t2", wal_name: "w2", title: "T", steps: [] }],
    ["update_task", { type: "update_task", ops: [{ op: "update_task", title: "x" }] }],
    ["complete_task", { type: "complete_task" }],
    ["fail_task", { type: "fail_task" }],
    ["cancel_task", { type: "cancel_task" }],
    ["block_task", { type: "block_task" }],
    ["reopen_task", { type: "reopen_task" }],
    ["dispatch_worker", { type: "dispatch_worker" }],
    ["cancel_run", { type: "cancel_run", run_id: "run_x" }],
  ])("a worker calling %s, outside its tool set, gets tool_not_available", (_n, cmd) => {
    const h = base();
    const w = h.claimWith("a");
    rejectsAs(h, cmd, w, "tool_not_available");
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
  ])("an ordinary agent (observer, system) gets no task write tool: %s is tool_not_available", (_n, cmd) => {
    const h = base();
    rejectsAs(h, cmd, observer, "tool_not_available");
    rejectsAs(h, cmd, systemCaller, "tool_not_available");
  });

  it("a non-orchestrator reaching beyond its scope on task content gets permission_denied", () => {
    const h = base();
    const w1 = h.claimWith("a");
    const w2 = h.claimWith("c");
    rejectsAs(h, { type: "update_step", step_id: "c", status: "completed", result_summary: "stolen" }, w1, "permission_denied");
    rejectsAs(h, { type: "append_progress", step_id: "c", summary: "x" }, w1, "permission_denied");
    rejectsAs(h, { type: "finish_run", run_id: w2.run_id!, outcome: "cancelled" }, w1, "permission_denied");
    rejectsAs(h, { type: "update_step", step_id: "a", status: "running" }, { ...w1, task_id: "task_other" }, "permission_denied");
    rejectsAs(h, { type: "update_step", step_id: "a", status: "running" }, { ...w1, session_id: "sess_other" }, "permission_denied");
    expect(st(h, "c")).toMatchObject({ status: "claimed", claimed_by_run_id: w2.run_id, result_summary: null });
  });

  it("the orchestrator's task writes still go through state, DAG and WAL checks", () => {
    const h = base();
    const w = h.claimWith("a");
    rejectsAs(h, { type: "update_task", ops: [{ op: "add_dependency", step_id: "a", depends_on_step_id: "b" }] }, orchestrator, "dependency_cycle");
    rejectsAs(h, { type: "update_task", ops: [{ op: "delete_step", step_id: "a" }] }, orchestrator, "invalid_transition");
    rejectsAs(h, { type: "update_task", ops: [{ op: "cancel_step", step_id: "a" }] }, orchestrator, "invalid_transition");
    rejectsAs(h, { type: "update_step", step_id: "a", status: "cancelled" }, orchestrator, "invalid_transition");
    rejectsAs(h, { type: "update_step", step_id: "b", status: "completed" }, orchestrator, "invalid_transition");
    rejectsAs(h, { type: "complete_task" }, orchestrator, "task_not_completeable");
    rejectsAs(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "P", steps: [] }, orchestrator, "task_id_conflict");
    h.ok({ type: "fail_task" });
    rejectsAs(h, { type: "update_task", ops: [{ op: "update_task", title: "x" }] }, orchestrator, "task_terminal");
    rejectsAs(h, { type: "update_step", step_id: "a", status: "completed" }, orchestrator, "task_terminal");
    expect(runOf(h, w).status).toBe("cancelling");
  });
});
