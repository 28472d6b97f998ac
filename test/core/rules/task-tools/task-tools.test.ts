/**
 * Task tools (docs/model.md "Tools"), the rules common to every tool. Every rejected command is checked to write nothing.
 */
import { describe, expect, it } from "vitest";
import { replay } from "../../../../src/core/index.js";
import { orchestrator, SESSION, step, TASK } from "../../harness.js";
import { rejectsAs, base } from "../support.js";

describe("Task Tools", () => {
  it("task tools change the in-memory DAG and append every change to the WAL", () => {
    const h = base();
    const w = h.claimWith("a");
    h.ok({ type: "update_step", step_id: "a", status: "completed" }, w);
    h.ok({ type: "update_task", ops: [{ op: "add_step", step: step("e", ["b"]) }] });
    expect(h.wal.map((e) => e.wal_seq)).toEqual(h.wal.map((_, i) => i + 1));
    expect(h.state.last_wal_seq).toBe(h.wal.length);
    expect(replay(h.wal)).toEqual(h.state);
    expect(h.status("a")).toBe("completed");
    expect(h.status("e")).toBe("pending");
  });

  it("every event carries the actor and session of the run context", () => {
    const h = base();
    for (const e of h.wal) expect(e).toMatchObject({ session_id: SESSION, actor_agent_id: "orch", actor_run_id: "orch_run", task_id: TASK });
    const w = h.dispatch({ agent_id: "worker_x" });
    const d = h.ok({ type: "claim_step", step_id: "a" }, w);
    expect(d.events[0]).toMatchObject({ session_id: SESSION, actor_agent_id: "worker_x", actor_run_id: w.run_id });
  });

  it.each([
    ["actor_agent_id", { actor_agent_id: "orch" }],
    ["actor_run_id", { actor_run_id: "orch_run" }],
    ["session_id", { session_id: SESSION }],
    ["actor", { actor: { role: "orchestrator", agent_id: "orch" } }],
  ])("actor fields in a command body (%s) are rejected and cannot change who acts", (_n, field) => {
    const h = base();
    const w = h.claimWith("a");
    // A worker claiming to be the orchestrator gets nothing.
    rejectsAs(h, { type: "update_task", ops: [{ op: "update_task", title: "Mine" }], ...field }, w, "validation_error");
    rejectsAs(h, { type: "complete_task", ...field }, w, "validation_error");
    // Even its own allowed tools refuse the field.
    rejectsAs(h, { type: "update_step", step_id: "a", status: "running", ...field }, w, "validation_error");
    rejectsAs(h, { type: "claim_next", ...field }, h.dispatch(), "validation_error");
    // And the orchestrator cannot write under another name.
    rejectsAs(h, { type: "update_task", ops: [{ op: "update_task", title: "X" }], ...field }, orchestrator, "validation_error");
    expect(h.state.task!.title).toBe("Plan");
    const d = h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
    expect(d.events[0]).toMatchObject({ actor_agent_id: w.agent_id, actor_run_id: w.run_id });
  });
});
