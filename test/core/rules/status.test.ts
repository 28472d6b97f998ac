/**
 * Statuses (docs/model.md "Statuses"): one test per rule, named after the rule. Each test asserts exact statuses, exact emitted event types and exact error codes, and that a rejected command writes nothing.
 */
import { describe, expect, it } from "vitest";
import { type Actor, diagnostics, emptyState, querySteps, replay, STEP_STATUSES, TASK_STATUSES, taskSummary, taskView } from "../../../src/core/index.js";
import { Harness, observer, orchestrator, step, TASK } from "../harness.js";
import { type Cmd, types, stepIds, payload, upd, setStep, optional, consistent, rejects, done, put, ids } from "./support.js";

describe("Status", () => {
  it("task statuses are pending, running, blocked, completed, failed, cancelled, plus paused", () => {
    expect([...TASK_STATUSES]).toEqual(["pending", "running", "blocked", "paused", "completed", "failed", "cancelled"]);
  });

  it("step statuses are pending, ready, claimed, running, blocked, completed, failed, cancelled", () => {
    expect([...STEP_STATUSES]).toEqual(["pending", "ready", "claimed", "running", "blocked", "completed", "failed", "cancelled"]);
  });

  it("required=false marks an optional exploration/helper step (required defaults to true)", () => {
    const h = new Harness();
    h.create([step("a"), optional("o"), step("r", [], { required: true })]);
    expect(h.state.steps.get("a")!.required).toBe(true);
    expect(h.state.steps.get("o")!.required).toBe(false);
    expect(h.state.steps.get("r")!.required).toBe(true);
    expect(h.state.index.requiredNotCompleted).toBe(2);
  });

  it("a task starts in status pending", () => {
    const empty = new Harness();
    const d = empty.create([]);
    expect(types(d)).toEqual(["task_created"]);
    expect(empty.state.task!.status).toBe("pending");
    const h = new Harness();
    h.create([step("a", ["b"]), step("b")]);
    expect(h.wal[0]!.event_type).toBe("task_created");
    expect(replay(h.wal.slice(0, 1)).task!.status).toBe("pending");
  });

  it("the task becomes running automatically when a ready, claimed or running step first appears", () => {
    const h = new Harness();
    const c = h.create([step("a"), step("b", ["a"])]);
    expect(types(c)).toEqual(["task_created", "task_step_ready", "task_running"]);
    expect(h.state.task!.status).toBe("running");
    const empty = new Harness();
    empty.create([]);
    const d = empty.ok(upd({ op: "add_step", step: step("x") }));
    expect(types(d)).toEqual(["task_updated", "task_step_ready", "task_running"]);
    expect(empty.state.task!.status).toBe("running");
    // Later ready steps do not write task_running again.
    const later = h.ok(setStep("a", "completed"), h.claimWith("a"));
    expect(types(later)).toEqual(["task_step_completed", "task_step_ready"]);
  });

  it("the automatic running transition is written as a task_running WAL event", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"])]);
    done(h, "a");
    done(h, "b");
    const at = h.wal.findIndex((e) => e.event_type === "task_running");
    expect(h.wal.filter((e) => e.event_type === "task_running")).toHaveLength(1);
    expect(h.wal[at]).toMatchObject({ task_id: TASK, step_id: null, payload: {} });
    expect(replay(h.wal.slice(0, at)).task!.status).toBe("pending");
    expect(replay(h.wal.slice(0, at + 1)).task!.status).toBe("running");
  });

  it("blocking the task changes only the task status, never a step status", () => {
    const h = new Harness();
    h.create([step("gate"), step("r"), step("c"), step("x", ["gate"])]);
    h.claimWith("c");
    const before = [...h.state.steps.values()].map((s) => ({ ...s }));
    const d = h.ok({ type: "block_task" });
    expect(types(d)).toEqual(["task_blocked"]);
    expect(stepIds(d)).toEqual([null]);
    expect(h.state.task!.status).toBe("blocked");
    expect([...h.state.steps.values()].map((s) => s.status)).toEqual(before.map((s) => s.status));
    expect([...h.state.steps.values()].map((s) => s.claimed_by_run_id)).toEqual(before.map((s) => s.claimed_by_run_id));
  });

  it("blocking the task does not cancel the worker runs of claimed or running steps", () => {
    const h = new Harness();
    h.create([step("a"), step("b")]);
    const wa = put(h, "a", "claimed")!;
    const wb = put(h, "b", "running")!;
    h.ok({ type: "block_task" });
    expect(h.state.runs.get(wa.run_id!)!.status).toBe("active");
    expect(h.state.runs.get(wb.run_id!)!.status).toBe("active");
    expect(h.state.index.activeRuns.size).toBe(2);
    expect(h.state.steps.get("b")).toMatchObject({ status: "running", claimed_by_run_id: wb.run_id });
  });

  it("existing claimed/running workers of a blocked task may still write their step status and results", () => {
    const h = new Harness();
    h.create([step("a"), step("b")]);
    const wa = put(h, "a", "claimed")!;
    const wb = put(h, "b", "running")!;
    h.ok({ type: "block_task" });
    expect(types(h.ok(setStep("a", "running", { result_summary: "half way" }), wa))).toEqual(["task_step_started"]);
    expect(types(h.ok(setStep("b", "running", { artifact_ids: ["draft"] }), wb))).toEqual(["task_step_updated"]);
    expect(types(h.ok({ type: "append_progress", summary: "50%" }, wa))).toEqual(["task_progress"]);
    expect(h.state.steps.get("a")).toMatchObject({ status: "running", result_summary: "half way" });
    expect(h.state.steps.get("b")).toMatchObject({ status: "running", artifact_ids: ["draft"] });
    expect(h.state.task!.status).toBe("blocked");
  });

  it("the stalled diagnostic: nothing ready, claimed or running while failed, blocked or pending steps remain", () => {
    const h = new Harness();
    h.create([step("a"), step("b"), step("c", ["a"])]);
    expect(diagnostics(h.state)).toEqual({ completeable: false, stalled: false });
    put(h, "a", "failed");
    expect(diagnostics(h.state).stalled).toBe(false); // b is ready
    const wb = put(h, "b", "claimed")!;
    expect(diagnostics(h.state).stalled).toBe(false); // b is claimed
    h.ok(setStep("b", "blocked"), wb);
    expect(diagnostics(h.state)).toEqual({ completeable: false, stalled: true });
    expect(taskSummary(h.state).diagnostics.stalled).toBe(true);
    expect(taskView(h.state).diagnostics.stalled).toBe(true);
    h.ok(upd({ op: "reopen_step", step_id: "a" }));
    expect(diagnostics(h.state).stalled).toBe(false);
  });

  it("the stalled diagnostic is not the source of truth and writes nothing to the WAL", () => {
    const h = new Harness();
    h.create([step("a")]);
    const w = h.claimWith("a");
    h.ok(setStep("a", "blocked"), w);
    const walLength = h.wal.length;
    const before = replay(h.wal);
    expect(diagnostics(h.state).stalled).toBe(true);
    taskSummary(h.state);
    taskView(h.state);
    expect(h.wal.length).toBe(walLength);
    expect(h.state).toEqual(before);
    expect(h.state.task!.status).toBe("running");
    expect(JSON.stringify(h.wal)).not.toMatch(/stalled/);
  });

  it("the completeable diagnostic is true once every required step is completed", () => {
    const h = new Harness();
    h.create([step("a"), step("b"), optional("o")]);
    expect(diagnostics(h.state).completeable).toBe(false);
    done(h, "a");
    expect(diagnostics(h.state).completeable).toBe(false);
    done(h, "b");
    expect(diagnostics(h.state)).toEqual({ completeable: true, stalled: false });
    expect(taskSummary(h.state).diagnostics.completeable).toBe(true);
    expect(taskView(h.state).diagnostics.completeable).toBe(true);
  });

  it("the completeable diagnostic is not the source of truth and writes nothing to the WAL", () => {
    const h = new Harness();
    h.create([step("a")]);
    done(h, "a");
    const walLength = h.wal.length;
    const before = replay(h.wal);
    expect(diagnostics(h.state).completeable).toBe(true);
    taskSummary(h.state);
    expect(h.wal.length).toBe(walLength);
    expect(h.state).toEqual(before);
    expect(h.state.task!.status).toBe("running");
    expect(JSON.stringify(h.wal)).not.toMatch(/completeable/);
  });

  it("completeable also requires that no step is claimed or running", () => {
    const h = new Harness();
    h.create([step("a"), optional("o"), optional("p")]);
    done(h, "a");
    const wo = put(h, "o", "claimed")!;
    expect(diagnostics(h.state).completeable).toBe(false);
    h.ok(setStep("o", "running"), wo);
    expect(diagnostics(h.state).completeable).toBe(false);
    h.ok(setStep("o", "completed"), wo);
    expect(diagnostics(h.state).completeable).toBe(true);
  });

  it("agent.task_complete rejects a task with a claimed or running step, optional ones included", () => {
    const h = new Harness();
    h.create([step("a"), optional("oc"), optional("or")]);
    done(h, "a");
    const wc = put(h, "oc", "claimed")!;
    const wr = put(h, "or", "running")!;
    const e = rejects(h, { type: "complete_task" }, "task_not_completeable");
    expect(e.details).toMatchObject({ held_step_ids: ["oc", "or"] });
    h.ok(setStep("oc", "failed"), wc);
    rejects(h, { type: "complete_task" }, "task_not_completeable");
    h.ok({ type: "cancel_run", run_id: wr.run_id });
    h.ok({ type: "complete_task" });
    expect(h.state.task!.status).toBe("completed");
  });

  it("on a successful agent.task_complete the core cancels the optional steps still pending or ready", () => {
    const h = new Harness();
    h.create([step("a"), optional("o1"), optional("o2", ["o1"]), step("b", ["a"])]);
    done(h, "a");
    done(h, "b");
    expect(h.status("o1")).toBe("ready");
    expect(h.status("o2")).toBe("pending");
    h.ok({ type: "complete_task" });
    expect(h.state.steps.get("o1")).toMatchObject({ status: "cancelled", status_reason: "optional_step_cancelled_on_task_complete" });
    expect(h.state.steps.get("o2")).toMatchObject({ status: "cancelled", status_reason: "optional_step_cancelled_on_task_complete" });
    expect(h.state.index.ready.size).toBe(0);
  });

  it("each optional step cancelled on completion gets its own task_step_cancelled WAL event", () => {
    const h = new Harness();
    h.create([step("a"), optional("o1"), optional("o2", ["o1"]), optional("o3")]);
    done(h, "a");
    const d = h.ok({ type: "complete_task" });
    expect(types(d)).toEqual(["task_step_cancelled", "task_step_cancelled", "task_step_cancelled", "task_completed"]);
    expect(stepIds(d)).toEqual(["o1", "o2", "o3", null]);
    consistent(h);
  });

  it("task status failed is set only explicitly by the orchestrator", () => {
    const h = new Harness();
    h.create([step("a")]);
    const w = h.dispatch();
    rejects(h, { type: "fail_task" }, "tool_not_available", w);
    rejects(h, { type: "fail_task" }, "tool_not_available", observer);
    h.ok({ type: "fail_task" });
    expect(h.state.task!.status).toBe("failed");
  });

  it("the core never sets the task failed by itself: step failures only change steps", () => {
    const h = new Harness();
    h.create([step("a"), step("b"), step("c", ["a"])]);
    put(h, "a", "failed");
    const wb = h.claimWith("b");
    h.ok({ type: "finish_run", run_id: wb.run_id, outcome: "timeout" }, wb);
    expect(h.status("b")).toBe("failed");
    expect(h.status("c")).toBe("pending");
    expect(h.state.task!.status).toBe("running");
    expect(h.wal.some((e) => e.event_type === "task_failed")).toBe(false);
  });

  it("the task is failed through agent.task_fail", () => {
    const h = new Harness();
    h.create([step("a")]);
    done(h, "a");
    const d = h.ok({ type: "fail_task", reason: "gave up" });
    expect(types(d)).toEqual(["task_failed"]);
    expect(h.state.task).toMatchObject({ status: "failed", status_reason: "gave up", ended_at: "2026-01-01T00:00:00.000Z" });
  });

  /** One step in every status, two of them held by worker runs. */
  function everyStatus(): { h: Harness; wc: Actor; wr: Actor } {
    const h = new Harness();
    h.create([step("c1"), step("f1"), step("x1"), step("r"), step("p", ["r"]), step("b"), step("cl"), step("ru")]);
    done(h, "c1");
    const wf = put(h, "f1", "failed")!;
    h.ok({ type: "finish_run", run_id: wf.run_id, outcome: "finished" }, wf);
    put(h, "x1", "cancelled");
    const wb = put(h, "b", "blocked")!;
    h.ok({ type: "finish_run", run_id: wb.run_id, outcome: "finished" }, wb);
    const wc = put(h, "cl", "claimed")!;
    const wr = put(h, "ru", "running")!;
    return { h, wc, wr };
  }

  it("agent.task_fail force-ends every unfinished step, claimed and running ones included", () => {
    const { h } = everyStatus();
    const d = h.ok({ type: "fail_task" });
    expect(types(d)).toEqual(["worker_run_cancel_requested", "worker_run_cancel_requested", "task_step_failed", "task_step_failed", "task_step_failed", "task_step_failed", "task_step_failed", "task_failed"]);
    expect(stepIds(d).filter((id) => id !== null)).toEqual(["r", "p", "b", "cl", "ru"]);
    for (const id of ["r", "p", "b", "cl", "ru"]) expect(h.status(id)).toBe("failed");
    expect(h.state.index.held.size).toBe(0);
    consistent(h);
  });

  it("agent.task_fail requests cancellation of the worker runs of claimed/running steps and writes those steps failed", () => {
    const { h, wc, wr } = everyStatus();
    h.ok({ type: "fail_task" });
    expect(h.state.runs.get(wc.run_id!)).toMatchObject({ status: "cancelling", cancel_request: { reason: "task_failed" }, ended_at: null });
    expect(h.state.runs.get(wr.run_id!)).toMatchObject({ status: "cancelling", cancel_request: { reason: "task_failed" }, ended_at: null });
    for (const id of ["cl", "ru"]) {
      const s = h.state.steps.get(id)!;
      expect(s).toMatchObject({ status: "failed", claimed_by_run_id: null, claimed_by_agent_id: null, lease_expires_at: null });
      expect(h.state.attempts.get(s.attempt_ids[0]!)!.status).toBe("cancelled");
    }
    expect(h.state.index.activeRuns.size).toBe(0);
    expect(h.state.index.cancellingRuns).toEqual(new Set([wc.run_id, wr.run_id]));
  });

  it("agent.task_fail writes task_step_failed for pending, ready and blocked steps", () => {
    const { h } = everyStatus();
    const d = h.ok({ type: "fail_task" });
    const failed = d.events.filter((e) => e.event_type === "task_step_failed").map((e) => e.step_id);
    expect(failed).toEqual(expect.arrayContaining(["p", "r", "b"]));
    for (const id of ["p", "r", "b"]) expect(h.status(id)).toBe("failed");
  });

  it("completed, failed and cancelled steps keep their status under agent.task_fail", () => {
    const { h } = everyStatus();
    const d = h.ok({ type: "fail_task" });
    expect(stepIds(d)).not.toContain("c1");
    expect(stepIds(d)).not.toContain("f1");
    expect(stepIds(d)).not.toContain("x1");
    expect(h.state.steps.get("c1")).toMatchObject({ status: "completed", result_summary: "c1 done" });
    expect(h.state.steps.get("f1")).toMatchObject({ status: "failed", status_reason: "failed by worker", result_summary: "f1 failed" });
    expect(h.state.steps.get("x1")).toMatchObject({ status: "cancelled" });
  });

  it("every step failed by agent.task_fail gets reason and result_summary task_failed", () => {
    const { h } = everyStatus();
    const d = h.ok({ type: "fail_task" });
    for (const e of d.events.filter((x) => x.event_type === "task_step_failed")) {
      expect(payload(e)).toMatchObject({ reason: "task_failed", result_summary: "task_failed" });
    }
    for (const id of ["r", "p", "b", "cl", "ru"]) expect(h.state.steps.get(id)).toMatchObject({ status_reason: "task_failed", result_summary: "task_failed" });
    // Not the ordinary worker_cancelled fallback.
    expect(JSON.stringify(d.events)).not.toMatch(/worker_cancelled/);
  });

  it("a failed task is terminal and cannot be restored", () => {
    const h = new Harness();
    h.create([step("a")]);
    h.ok({ type: "fail_task" });
    rejects(h, { type: "reopen_task" }, "task_terminal");
    rejects(h, upd({ op: "reopen_step", step_id: "a" }), "task_terminal");
    rejects(h, { type: "block_task" }, "task_terminal");
    expect(h.state.task!.status).toBe("failed");
  });

  it("a cancelled task is terminal and cannot be restored", () => {
    const h = new Harness();
    h.create([step("a")]);
    const d = h.ok({ type: "cancel_task" });
    expect(types(d)).toEqual(["task_step_cancelled", "task_cancelled"]);
    rejects(h, { type: "reopen_task" }, "task_terminal");
    rejects(h, { type: "complete_task" }, "task_terminal");
    expect(h.state.task!.status).toBe("cancelled");
  });

  const TERMINATE: Record<string, (h: Harness) => void> = {
    completed: (h) => h.ok({ type: "complete_task" }),
    failed: (h) => h.ok({ type: "fail_task" }),
    cancelled: (h) => h.ok({ type: "cancel_task" }),
  };

  it.each(Object.keys(TERMINATE))("after the task is %s every step update tool answers task_terminal", (end) => {
    const h = new Harness();
    h.create([step("a"), optional("o")]);
    done(h, "a");
    const w = h.dispatch();
    TERMINATE[end]!(h);
    expect(h.state.task!.status).toBe(end);
    const attempts: [Cmd, Actor][] = [
      [upd({ op: "update_step", step_id: "a", fields: { title: "x" } }), orchestrator],
      [upd({ op: "add_step", step: step("n") }), orchestrator],
      [upd({ op: "cancel_step", step_id: "o" }), orchestrator],
      [upd({ op: "reopen_step", step_id: "o" }), orchestrator],
      [upd({ op: "delete_step", step_id: "o" }), orchestrator],
      [setStep("a", "failed"), orchestrator],
      [setStep("o", "blocked"), orchestrator],
      [setStep("o", "running"), w],
      [{ type: "claim_step", step_id: "o" }, w],
      [{ type: "claim_next" }, w],
      [{ type: "append_progress", step_id: "a", summary: "late" }, orchestrator],
      [{ type: "dispatch_worker" }, orchestrator],
      [{ type: "cancel_run", run_id: w.run_id }, orchestrator],
      [{ type: "block_task" }, orchestrator],
      [{ type: "reopen_task" }, orchestrator],
      [{ type: "complete_task" }, orchestrator],
      [{ type: "fail_task" }, orchestrator],
      [{ type: "cancel_task" }, orchestrator],
    ];
    // Completing the task ended w's run, so its spent token is refused first; a stop leaves it cancelling, told why.
    for (const [command, actor] of attempts) rejects(h, command, actor === w && end === "completed" ? "unauthorized" : "task_terminal", actor);
  });

  it.each(Object.keys(TERMINATE))("after the task is %s no step status change is written to the WAL", (end) => {
    const h = new Harness();
    h.create([step("a"), optional("o"), optional("q")]);
    done(h, "a");
    TERMINATE[end]!(h);
    const walLength = h.wal.length;
    h.now += 10 * 60_000;
    expect(types(h.ok({ type: "reconcile_leases" }))).toEqual([]);
    expect(h.wal.length).toBe(walLength);
  });

  it("a late worker run of a terminal task may end and persist its result but cannot change the DAG", () => {
    const h = new Harness();
    h.create([step("a"), step("b")]);
    const w = put(h, "a", "running")!;
    h.ok({ type: "fail_task" });
    const statuses = [...h.state.steps.values()].map((s) => s.status);
    const d = h.ok({ type: "finish_run", run_id: w.run_id, outcome: "finished", result: { transcript: "t", summary: "a is done" } }, w);
    expect(types(d)).toEqual(["worker_run_ended"]);
    expect(payload(d.events[0])).toMatchObject({ reason: "task_failed", status: "cancelled" });
    expect(h.state.runs.get(w.run_id!)!.result).toEqual({ transcript: "t", summary: "a is done" });
    expect([...h.state.steps.values()].map((s) => s.status)).toEqual(statuses);
    // Its run has ended and its result is in: its token is spent.
    expect(rejects(h, setStep("a", "completed", { result_summary: "late" }), "unauthorized", w).details).toMatchObject({ reason: "run_ended", run_id: w.run_id });
    rejects(h, { type: "finish_run", run_id: w.run_id, outcome: "finished", result: { again: true } }, "unauthorized", w);
    consistent(h);
  });

  it.each(Object.keys(TERMINATE))("a late worker result after the task is %s records the run's end but leaves the task's updated_at at its end", (end) => {
    const h = new Harness();
    h.create([step("a"), optional("o")]);
    done(h, "a");
    const w = h.dispatch();
    h.now += 1_000;
    TERMINATE[end]!(h);
    const endedAt = h.state.task!.ended_at;
    expect(h.state.task!.updated_at).toBe(endedAt);
    // Terminal tasks are listed by updated_at: a result handed in a minute later must not move the task.
    h.now += 60_000;
    h.ok({ type: "finish_run", run_id: w.run_id, outcome: "finished", result: { transcript: "late" } }, w);
    expect(h.state.runs.get(w.run_id!)).toMatchObject({ result: { transcript: "late" } });
    expect(h.state.task!.updated_at).toBe(endedAt);
    expect(taskSummary(h.state).updated_at).toBe(endedAt);
    consistent(h);
  });

  it("a step with an incomplete dependency never becomes ready, claimed or running", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"]), step("c")]);
    const w = h.dispatch({ allowed_step_ids: ["b"] });
    rejects(h, { type: "claim_step", step_id: "b" }, "invalid_transition", w);
    expect(h.ok({ type: "claim_next" }, w).value).toEqual({ kind: "no_step_claimed", reason: "no_ready_step" });
    rejects(h, setStep("b", "claimed"), "invalid_transition");
    rejects(h, setStep("b", "running"), "invalid_transition");
    rejects(h, setStep("b", "ready"), "invalid_transition");
    // A held step given an unmet dependency goes back to pending, not ready, when its lease lapses.
    const wc = h.claimWith("c");
    h.ok(upd({ op: "add_dependency", step_id: "c", depends_on_step_id: "a" }));
    expect(h.status("c")).toBe("claimed");
    h.now += 61_000;
    const d = h.ok({ type: "reconcile_leases" });
    expect(types(d)).toEqual(["task_step_lease_expired"]);
    expect(h.status("c")).toBe("pending");
    expect(h.state.runs.get(wc.run_id!)!.current_step_id).toBeNull();
    // A reopened step with an unmet dependency stays pending.
    h.ok(setStep("c", "blocked"));
    expect(types(h.ok(upd({ op: "reopen_step", step_id: "c" })))).toEqual(["task_updated", "task_step_reopened"]);
    expect(h.status("c")).toBe("pending");
  });

  it.each(["ready", "claimed", "running", "blocked", "failed", "cancelled"])("only completed satisfies a dependency (a %s dependency does not)", (status) => {
    const h = new Harness();
    h.create([step("gate"), step("a"), step("c"), step("d", ["a"]), step("e", ["c", "a"])]);
    put(h, "a", status);
    expect(h.status("d")).toBe("pending");
    // e's other dependency completes: the one in `status` still holds it back.
    done(h, "c");
    expect(h.status("e")).toBe("pending");
    expect(h.state.index.ready.get("default")?.ids()).not.toContain("d");
    expect(h.state.index.ready.get("default")?.ids()).not.toContain("e");
  });

  it("ready is maintained automatically by the core from dependency completion", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"]), step("c", ["a", "b"])]);
    expect([h.status("a"), h.status("b"), h.status("c")]).toEqual(["ready", "pending", "pending"]);
    done(h, "a");
    expect([h.status("b"), h.status("c")]).toEqual(["ready", "pending"]);
    done(h, "b");
    expect(h.status("c")).toBe("ready");
    expect(h.wal.filter((e) => e.event_type === "task_step_ready").map((e) => e.step_id)).toEqual(["a", "b", "c"]);
  });

  it("the orchestrator neither needs nor may set a step ready by hand", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"])]);
    rejects(h, setStep("b", "ready"), "invalid_transition");
    rejects(h, setStep("b", "pending"), "invalid_transition");
    rejects(h, setStep("a", "ready"), "invalid_transition");
    rejects(h, upd({ op: "update_step", step_id: "b", fields: { status: "ready" } }), "validation_error");
    const w = h.claimWith("a");
    rejects(h, setStep("a", "ready"), "invalid_transition", w);
  });

  it("a pending step whose dependencies are all completed becomes ready unless it is blocked or cancelled", () => {
    const h = new Harness();
    h.create([step("a"), step("p", ["a"]), step("b", ["a"]), step("x", ["a"]), step("f", ["a"])]);
    h.ok(setStep("b", "blocked"));
    h.ok(upd({ op: "cancel_step", step_id: "x" }));
    h.ok(setStep("f", "failed"));
    done(h, "a");
    expect(h.status("p")).toBe("ready");
    expect(h.status("b")).toBe("blocked");
    expect(h.status("x")).toBe("cancelled");
    expect(h.status("f")).toBe("failed");
  });

  it("each automatic ready transition writes a task_step_ready WAL event", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"]), step("c", ["a"]), step("d", ["b"])]);
    const w = h.claimWith("a");
    const d = h.ok(setStep("a", "completed"), w);
    expect(types(d)).toEqual(["task_step_completed", "task_step_ready", "task_step_ready"]);
    expect(stepIds(d)).toEqual(["a", "b", "c"]);
    expect(d.events[1]).toMatchObject({ task_id: TASK, step_id: "b", payload: {} });
  });

  it("only the orchestrator lifts a blocked step", () => {
    const h = new Harness();
    h.create([step("a")]);
    const w = put(h, "a", "blocked")!;
    rejects(h, setStep("a", "running"), "permission_denied", w);
    rejects(h, setStep("a", "claimed"), "permission_denied", w);
    rejects(h, upd({ op: "reopen_step", step_id: "a" }), "tool_not_available", w);
    rejects(h, setStep("a", "running"), "invalid_transition");
    const d = h.ok(upd({ op: "reopen_step", step_id: "a" }));
    expect(types(d)).toEqual(["task_updated", "task_step_reopened", "task_step_ready"]);
  });

  it("a worker may mark its claimed step blocked with a reason and result_summary", () => {
    const h = new Harness();
    h.create([step("a")]);
    const w = h.claimWith("a");
    const attemptId = h.state.steps.get("a")!.current_attempt_id;
    const d = h.ok(setStep("a", "blocked", { reason: "needs credentials", result_summary: "got halfway", artifact_ids: ["log_1"] }), w);
    expect(types(d)).toEqual(["task_step_blocked"]);
    expect(payload(d.events[0])).toEqual({ reason: "needs credentials", result_summary: "got halfway", artifact_ids: ["log_1"], attempt_id: attemptId, run_id: w.run_id });
    expect(h.state.steps.get("a")).toMatchObject({ status: "blocked", status_reason: "needs credentials", result_summary: "got halfway", artifact_ids: ["log_1"] });
  });

  it("marking a step blocked clears claimed_by_agent_id, claimed_by_run_id and lease_expires_at", () => {
    const h = new Harness();
    h.create([step("a")]);
    const w = put(h, "a", "running")!;
    expect(h.state.steps.get("a")!.lease_expires_at).not.toBeNull();
    h.ok(setStep("a", "blocked"), w);
    expect(h.state.steps.get("a")).toMatchObject({ claimed_by_agent_id: null, claimed_by_run_id: null, lease_expires_at: null, current_attempt_id: null });
  });

  it("a blocked step is no longer held by its worker and needs the orchestrator", () => {
    const h = new Harness();
    h.create([step("a"), step("b")]);
    const w = h.claimWith("a");
    h.ok(setStep("a", "blocked"), w);
    expect(h.state.runs.get(w.run_id!)!.current_step_id).toBeNull();
    expect(h.state.index.held.has("a")).toBe(false);
    rejects(h, setStep("a", "completed"), "permission_denied", w);
    rejects(h, { type: "append_progress", step_id: "a", summary: "still on it" }, "permission_denied", w);
    const other = h.dispatch();
    rejects(h, { type: "claim_step", step_id: "a" }, "invalid_transition", other);
    h.now += 10 * 60_000;
    expect(types(h.ok({ type: "reconcile_leases" }))).toEqual([]);
    expect(h.status("a")).toBe("blocked");
  });

  it("a worker cannot move a blocked step back to pending or ready", () => {
    const h = new Harness();
    h.create([step("a")]);
    const w = put(h, "a", "blocked")!;
    rejects(h, setStep("a", "pending"), "invalid_transition", w);
    rejects(h, setStep("a", "ready"), "invalid_transition", w);
    rejects(h, setStep("a", "running"), "permission_denied", w);
    rejects(h, upd({ op: "reopen_step", step_id: "a" }), "tool_not_available", w);
    expect(h.status("a")).toBe("blocked");
  });

  it("lifting a blocked step sets it pending, then the core moves it to ready from its dependencies", () => {
    const h = new Harness();
    h.create([step("gate"), step("a"), step("b")]);
    put(h, "a", "blocked");
    put(h, "b", "blocked");
    h.ok(upd({ op: "add_dependency", step_id: "b", depends_on_step_id: "gate" }));
    let d = h.ok(upd({ op: "reopen_step", step_id: "a" }));
    expect(types(d)).toEqual(["task_updated", "task_step_reopened", "task_step_ready"]);
    expect(h.status("a")).toBe("ready");
    d = h.ok(upd({ op: "reopen_step", step_id: "b" }));
    expect(types(d)).toEqual(["task_updated", "task_step_reopened"]);
    expect(h.status("b")).toBe("pending");
    done(h, "gate");
    expect(h.status("b")).toBe("ready");
  });

  it("lifting a blocked step writes task_step_reopened", () => {
    const h = new Harness();
    h.create([step("a")]);
    put(h, "a", "blocked");
    const d = h.ok(upd({ op: "reopen_step", step_id: "a", reason: "credentials provided" }));
    expect(d.events[1]).toMatchObject({ event_type: "task_step_reopened", step_id: "a", payload: { reason: "credentials provided" } });
    const reopenedAt = h.wal.indexOf(d.events[1]!);
    expect(replay(h.wal.slice(0, reopenedAt + 1)).steps.get("a")!.status).toBe("pending");
  });

  it.each(["blocked", "failed"])("the orchestrator may change a %s step's title, summary, dependencies, worker pool and required", (status) => {
    const h = new Harness();
    h.create([step("gate"), step("z"), step("a")]);
    done(h, "z");
    put(h, "a", status);
    const fields = { title: "New a", summary: "New plan", depends_on_step_ids: ["z"], worker_pool_id: "gpu", required: false };
    const d = h.ok(upd({ op: "update_step", step_id: "a", fields }));
    expect(types(d)).toEqual(["task_updated"]);
    expect(h.state.steps.get("a")).toMatchObject({ ...fields, status });
    h.ok(upd({ op: "add_dependency", step_id: "a", depends_on_step_id: "gate" }, { op: "remove_dependency", step_id: "a", depends_on_step_id: "z" }));
    expect(h.state.steps.get("a")!.depends_on_step_ids).toEqual(["gate"]);
    consistent(h);
  });

  it.each(["blocked", "failed"])("a worker cannot change a %s step's content or dependencies", (status) => {
    const h = new Harness();
    h.create([step("gate"), step("a")]);
    const w = put(h, "a", status)!;
    rejects(h, upd({ op: "update_step", step_id: "a", fields: { title: "mine" } }), "tool_not_available", w);
    rejects(h, upd({ op: "add_dependency", step_id: "a", depends_on_step_id: "gate" }), "tool_not_available", w);
    rejects(h, setStep("a", status, { title: "mine" }), "validation_error", w);
    rejects(h, setStep("a", status, { depends_on_step_ids: [] }), "validation_error", w);
  });

  it("only the orchestrator may restore a failed step", () => {
    const h = new Harness();
    h.create([step("a")]);
    const w = put(h, "a", "failed")!;
    rejects(h, upd({ op: "reopen_step", step_id: "a" }), "tool_not_available", w);
    rejects(h, upd({ op: "reopen_step", step_id: "a" }), "tool_not_available", observer);
    rejects(h, setStep("a", "running"), "invalid_transition");
    h.ok(upd({ op: "reopen_step", step_id: "a" }));
    expect(h.status("a")).toBe("ready");
  });

  it("a worker may mark its claimed step failed with a reason", () => {
    const h = new Harness();
    h.create([step("a")]);
    const w = h.claimWith("a");
    const d = h.ok(setStep("a", "failed", { reason: "tests fail", result_summary: "3 failing tests" }), w);
    expect(types(d)).toEqual(["task_step_failed"]);
    expect(payload(d.events[0])).toMatchObject({ reason: "tests fail", result_summary: "3 failing tests", attempt_status: "failed" });
    expect(h.state.steps.get("a")).toMatchObject({ status: "failed", status_reason: "tests fail", claimed_by_run_id: null });
  });

  it("a worker cannot move a failed step back to pending, ready or running", () => {
    const h = new Harness();
    h.create([step("a")]);
    const w = put(h, "a", "failed")!;
    rejects(h, setStep("a", "pending"), "invalid_transition", w);
    rejects(h, setStep("a", "ready"), "invalid_transition", w);
    rejects(h, setStep("a", "running"), "permission_denied", w);
    rejects(h, setStep("a", "completed"), "permission_denied", w);
    expect(h.status("a")).toBe("failed");
  });

  it("restoring a failed step sets it pending, then the core moves it to ready from its dependencies", () => {
    const h = new Harness();
    h.create([step("gate"), step("a"), step("b")]);
    put(h, "a", "failed");
    put(h, "b", "failed");
    h.ok(upd({ op: "add_dependency", step_id: "b", depends_on_step_id: "gate" }));
    expect(types(h.ok(upd({ op: "reopen_step", step_id: "a" })))).toEqual(["task_updated", "task_step_reopened", "task_step_ready"]);
    expect(h.status("a")).toBe("ready");
    expect(types(h.ok(upd({ op: "reopen_step", step_id: "b" })))).toEqual(["task_updated", "task_step_reopened"]);
    expect(h.status("b")).toBe("pending");
  });

  it("restoring a failed step writes task_step_reopened", () => {
    const h = new Harness();
    h.create([step("a")]);
    put(h, "a", "failed");
    const d = h.ok(upd({ op: "reopen_step", step_id: "a", reason: "retry" }));
    expect(d.events[1]).toMatchObject({ event_type: "task_step_reopened", step_id: "a", payload: { reason: "retry" } });
    expect(h.state.steps.get("a")!.status_reason).toBe("retry");
  });

  it("failed does not satisfy a dependency", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"])]);
    put(h, "a", "failed");
    expect(h.status("b")).toBe("pending");
    expect(diagnostics(h.state)).toEqual({ completeable: false, stalled: true });
  });

  it("a step depending on a failed step never becomes ready by itself", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"]), step("c")]);
    put(h, "a", "failed");
    done(h, "c");
    h.now += 10 * 60_000;
    h.ok({ type: "reconcile_leases" });
    expect(h.status("b")).toBe("pending");
    expect(h.wal.some((e) => e.event_type === "task_step_ready" && e.step_id === "b")).toBe(false);
  });

  it("after a failed step the orchestrator restores it, changes the DAG or adds a remedy step", () => {
    const restore = new Harness();
    restore.create([step("a"), step("b", ["a"])]);
    put(restore, "a", "failed");
    restore.ok(upd({ op: "reopen_step", step_id: "a" }));
    done(restore, "a");
    expect(restore.status("b")).toBe("ready");

    const remedy = new Harness();
    remedy.create([step("a"), step("b", ["a"])]);
    put(remedy, "a", "failed");
    const d = remedy.ok(upd({ op: "add_step", step: step("a2") }, { op: "update_step", step_id: "b", fields: { depends_on_step_ids: ["a2"] } }));
    expect(types(d)).toEqual(["task_updated", "task_step_ready"]);
    expect(stepIds(d)).toEqual([null, "a2"]);
    done(remedy, "a2");
    expect(remedy.status("b")).toBe("ready");
    expect(remedy.status("a")).toBe("failed");
    consistent(remedy);
  });

  it("a cancelled step is terminal at step level and cannot be restored", () => {
    const h = new Harness();
    h.create([step("a")]);
    put(h, "a", "cancelled");
    rejects(h, upd({ op: "reopen_step", step_id: "a" }), "invalid_transition");
    for (const to of ["claimed", "running", "blocked", "completed", "failed", "cancelled"]) rejects(h, setStep("a", to), "invalid_transition");
    rejects(h, { type: "claim_step", step_id: "a" }, "invalid_transition", h.dispatch());
    expect(h.status("a")).toBe("cancelled");
  });

  it("the orchestrator may retitle a cancelled step but not make it runnable again", () => {
    const h = new Harness();
    h.create([step("gate"), step("a")]);
    put(h, "a", "cancelled");
    const d = h.ok(upd({ op: "update_step", step_id: "a", fields: { title: "Dropped a", summary: "not needed" } }));
    expect(types(d)).toEqual(["task_updated"]);
    expect(h.state.steps.get("a")).toMatchObject({ status: "cancelled", title: "Dropped a", summary: "not needed" });
    rejects(h, upd({ op: "update_step", step_id: "a", fields: { depends_on_step_ids: [] } }), "invalid_transition");
    rejects(h, upd({ op: "update_step", step_id: "a", fields: { required: false } }), "invalid_transition");
    rejects(h, upd({ op: "update_step", step_id: "a", fields: { worker_pool_id: "gpu" } }), "invalid_transition");
    rejects(h, upd({ op: "add_dependency", step_id: "a", depends_on_step_id: "gate" }), "invalid_transition");
    rejects(h, upd({ op: "reopen_step", step_id: "a" }), "invalid_transition");
  });

  it("a cancelled step's dependencies, worker pool and required no longer affect scheduling", () => {
    const h = new Harness();
    h.create([step("a"), step("x", ["a"], { worker_pool_id: "gpu" })]);
    h.ok(upd({ op: "cancel_step", step_id: "x" }));
    done(h, "a");
    expect(h.status("x")).toBe("cancelled");
    expect(h.state.index.ready.get("gpu")).toBeUndefined();
    const gpu = h.dispatch({ worker_pool_id: "gpu" });
    expect(h.ok({ type: "claim_next" }, gpu).value).toEqual({ kind: "no_step_claimed", reason: "no_ready_step" });
    const page = querySteps(h.state, gpu, {});
    expect(page.ok && page.value.steps).toEqual([]);
  });

  it("when a cancelled step's work is still needed the orchestrator adds a replacement step", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"])]);
    put(h, "a", "cancelled");
    const d = h.ok(upd({ op: "add_step", step: step("a_v2") }, { op: "remove_dependency", step_id: "b", depends_on_step_id: "a" }, { op: "add_dependency", step_id: "b", depends_on_step_id: "a_v2" }));
    expect(types(d)).toEqual(["task_updated", "task_step_ready"]);
    expect(h.state.steps.get("a_v2")!.status).toBe("ready");
    done(h, "a_v2");
    expect(h.status("b")).toBe("ready");
    expect(h.status("a")).toBe("cancelled");
  });

  it("the orchestrator may cancel a pending or ready step directly", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"]), step("c")]);
    let d = h.ok(upd({ op: "cancel_step", step_id: "a", reason: "not needed" }, { op: "cancel_step", step_id: "b" }));
    expect(types(d)).toEqual(["task_updated", "task_step_cancelled", "task_step_cancelled"]);
    expect(stepIds(d)).toEqual([null, "a", "b"]);
    expect(h.state.steps.get("a")).toMatchObject({ status: "cancelled", status_reason: "not needed" });
    expect(h.status("b")).toBe("cancelled");
    d = h.ok(setStep("c", "cancelled"));
    expect(types(d)).toEqual(["task_step_cancelled"]);
    expect(h.status("c")).toBe("cancelled");
    consistent(h);
  });

  it("the orchestrator cannot cancel a completed step", () => {
    const h = new Harness();
    h.create([step("a")]);
    done(h, "a");
    rejects(h, upd({ op: "cancel_step", step_id: "a" }), "invalid_transition");
    rejects(h, setStep("a", "cancelled"), "invalid_transition");
    expect(h.status("a")).toBe("completed");
  });

  it.each(["claimed", "running"])("the orchestrator does not cancel a single %s step directly", (status) => {
    const h = new Harness();
    h.create([step("a")]);
    const w = put(h, "a", status)!;
    const e = rejects(h, upd({ op: "cancel_step", step_id: "a" }), "invalid_transition");
    expect(e.message).toMatch(/worker run/);
    rejects(h, setStep("a", "cancelled"), "invalid_transition");
    expect(h.state.steps.get("a")).toMatchObject({ status, claimed_by_run_id: w.run_id });
  });

  it.each([
    ["cancelled", "worker_cancelled"],
    ["finished", "worker_finished_without_terminal_step_status"],
    ["timeout", "worker_timeout"],
  ])("to stop a held step the orchestrator ends its worker run and the core fails the step with the fallback reason (run %s)", (outcome, reason) => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"])]);
    const w = put(h, "a", "running")!;
    const d = outcome === "cancelled" ? h.ok({ type: "cancel_run", run_id: w.run_id }) : h.ok({ type: "finish_run", run_id: w.run_id, outcome }, w);
    expect(types(d)).toEqual(["task_step_failed", "worker_run_ended"]);
    expect(payload(d.events[0])).toMatchObject({ reason, result_summary: reason });
    expect(h.state.steps.get("a")).toMatchObject({ status: "failed", status_reason: reason, claimed_by_run_id: null });
    expect(h.status("b")).toBe("pending");
    // Or the orchestrator changes the DAG afterwards.
    h.ok(upd({ op: "remove_dependency", step_id: "b", depends_on_step_id: "a" }));
    expect(h.status("b")).toBe("ready");
  });

  it("agent.task_cancel and agent.task_fail are the exception: they force-end claimed and running steps", () => {
    const { h, wc, wr } = everyStatus();
    const d = h.ok({ type: "cancel_task", reason: "user stop" });
    expect(types(d)).toEqual(["worker_run_cancel_requested", "worker_run_cancel_requested", "task_step_cancelled", "task_step_cancelled", "task_step_cancelled", "task_step_cancelled", "task_step_cancelled", "task_cancelled"]);
    expect(stepIds(d).filter((id) => id !== null)).toEqual(["r", "p", "b", "cl", "ru"]);
    for (const id of ["r", "p", "b", "cl", "ru"]) expect(h.state.steps.get(id)).toMatchObject({ status: "cancelled", status_reason: "task_cancelled", claimed_by_run_id: null });
    expect(h.state.steps.get("c1")!.status).toBe("completed");
    expect(h.state.steps.get("f1")!.status).toBe("failed");
    expect(h.state.runs.get(wc.run_id!)).toMatchObject({ status: "cancelling", cancel_request: { reason: "task_cancelled" } });
    expect(h.state.runs.get(wr.run_id!)).toMatchObject({ status: "cancelling", cancel_request: { reason: "task_cancelled" } });
    consistent(h);
  });

  it("after a cancelled step the orchestrator changes the DAG or adds an alternative step to continue", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"]), step("c", ["b"])]);
    put(h, "a", "cancelled");
    const d = h.ok(upd({ op: "update_step", step_id: "b", fields: { depends_on_step_ids: [] } }));
    expect(types(d)).toEqual(["task_updated", "task_step_ready"]);
    expect(h.status("b")).toBe("ready");
  });

  it("cancelled does not satisfy a dependency", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"])]);
    put(h, "a", "cancelled");
    expect(h.status("b")).toBe("pending");
    expect(diagnostics(h.state).stalled).toBe(true);
  });

  it("a step depending on a cancelled step never becomes ready by itself", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"]), step("c")]);
    put(h, "a", "cancelled");
    done(h, "c");
    h.ok(upd({ op: "update_step", step_id: "b", fields: { title: "retitled" } }));
    expect(h.status("b")).toBe("pending");
    expect(h.wal.some((e) => e.event_type === "task_step_ready" && e.step_id === "b")).toBe(false);
  });

  it("downstream of a cancelled step the orchestrator must explicitly edit the DAG, cancel the downstream steps or add another path", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"]), step("c", ["b"])]);
    put(h, "a", "cancelled");
    expect(h.status("b")).toBe("pending");
    const d = h.ok(upd({ op: "cancel_step", step_id: "b" }, { op: "cancel_step", step_id: "c" }));
    expect(types(d)).toEqual(["task_updated", "task_step_cancelled", "task_step_cancelled"]);
    expect([h.status("b"), h.status("c")]).toEqual(["cancelled", "cancelled"]);
  });

  it.each([
    ["blocked", "task_step_blocked"],
    ["completed", "task_step_completed"],
    ["failed", "task_step_failed"],
    ["cancelled", "task_step_cancelled"],
  ])("a worker may move its claimed step straight to %s", (status, event) => {
    const h = new Harness();
    h.create([step("a")]);
    const w = h.claimWith("a");
    const d = h.ok(setStep("a", status), w);
    expect(types(d)).toEqual([event]);
    expect(h.state.steps.get("a")).toMatchObject({ status, claimed_by_run_id: null, lease_expires_at: null });
    expect(h.state.runs.get(w.run_id!)!.current_step_id).toBeNull();
  });

  it.each([
    ["blocked", "task_step_blocked"],
    ["completed", "task_step_completed"],
    ["failed", "task_step_failed"],
    ["cancelled", "task_step_cancelled"],
  ])("running is an optional start state, not a precondition (running -> %s)", (status, event) => {
    const h = new Harness();
    h.create([step("a")]);
    const w = h.claimWith("a");
    expect(h.status("a")).toBe("claimed");
    expect(types(h.ok(setStep("a", "running"), w))).toEqual(["task_step_started"]);
    const d = h.ok(setStep("a", status), w);
    expect(types(d)).toEqual([event]);
    expect(h.status("a")).toBe(status);
    rejects(h, setStep("a", "claimed"), "permission_denied", w);
  });

  it("a completed step is a fact of execution history", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"])]);
    done(h, "a");
    for (const to of ["claimed", "running", "blocked", "failed", "cancelled", "completed"]) rejects(h, setStep("a", to), "invalid_transition");
    rejects(h, upd({ op: "reopen_step", step_id: "a" }), "invalid_transition");
    rejects(h, upd({ op: "cancel_step", step_id: "a" }), "invalid_transition");
    expect(h.status("a")).toBe("completed");
  });

  it("a completed step cannot be deleted nor its result_summary/artifact_ids changed", () => {
    const h = new Harness();
    h.create([step("a")]);
    const w = h.claimWith("a");
    h.ok(setStep("a", "completed", { result_summary: "v1", artifact_ids: ["art1"] }), w);
    rejects(h, upd({ op: "delete_step", step_id: "a" }), "invalid_transition");
    rejects(h, setStep("a", "completed", { result_summary: "v2" }), "invalid_transition");
    rejects(h, setStep("a", "completed", { artifact_ids: ["art2"] }), "invalid_transition");
    rejects(h, setStep("a", "completed", { result_summary: "v2" }), "permission_denied", w);
    rejects(h, upd({ op: "update_step", step_id: "a", fields: { result_summary: "v2" } }), "validation_error");
    rejects(h, { type: "append_progress", step_id: "a", summary: "redo" }, "permission_denied", w);
    expect(h.state.steps.get("a")).toMatchObject({ status: "completed", result_summary: "v1", artifact_ids: ["art1"] });
  });

  it("the orchestrator may retitle a completed step but not change that it is completed", () => {
    const h = new Harness();
    h.create([step("gate"), step("a")]);
    done(h, "a");
    const d = h.ok(upd({ op: "update_step", step_id: "a", fields: { title: "Clearer a", summary: "what a did" } }));
    expect(types(d)).toEqual(["task_updated"]);
    expect(h.state.steps.get("a")).toMatchObject({ status: "completed", title: "Clearer a", summary: "what a did", result_summary: "a done" });
    rejects(h, upd({ op: "update_step", step_id: "a", fields: { depends_on_step_ids: ["gate"] } }), "invalid_transition");
    rejects(h, upd({ op: "update_step", step_id: "a", fields: { required: false } }), "invalid_transition");
    rejects(h, upd({ op: "update_step", step_id: "a", fields: { worker_pool_id: "gpu" } }), "invalid_transition");
    rejects(h, upd({ op: "add_dependency", step_id: "a", depends_on_step_id: "gate" }), "invalid_transition");
  });

  it("to correct a completed step's result the orchestrator adds a remedy step or edits the downstream DAG", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"])]);
    done(h, "a");
    const d = h.ok(upd({ op: "add_step", step: step("fix_a", ["a"]) }, { op: "add_dependency", step_id: "b", depends_on_step_id: "fix_a" }));
    expect(types(d)).toEqual(["task_updated", "task_step_pending", "task_step_ready"]);
    expect(stepIds(d)).toEqual([null, "b", "fix_a"]);
    expect(h.status("b")).toBe("pending");
    done(h, "fix_a");
    expect(h.status("b")).toBe("ready");
    expect(h.state.steps.get("a")).toMatchObject({ status: "completed", result_summary: "a done" });
  });

  it.each(["pending", "ready", "blocked", "failed", "claimed", "running"])(
    "the orchestrator may change a %s step's title, summary, dependencies, worker pool and required",
    (status) => {
      const h = new Harness();
      h.create([step("gate"), step("z"), step("x")]);
      done(h, "z");
      put(h, "x", status);
      const fields = { title: "X2", summary: "S2", depends_on_step_ids: ["z"], worker_pool_id: "pool2", required: false };
      const d = h.ok(upd({ op: "update_step", step_id: "x", fields }));
      const after = status === "pending" ? "ready" : status;
      expect(types(d)).toEqual(status === "pending" ? ["task_updated", "task_step_ready"] : ["task_updated"]);
      expect(h.state.steps.get("x")).toMatchObject({ ...fields, status: after });
      if (after === "ready") expect(h.state.index.ready.get("pool2")?.ids()).toEqual(["x"]);
      consistent(h);
    },
  );

  it.each(["claimed", "running"])("changing a %s step does not touch the dispatched worker run", (status) => {
    const h = new Harness();
    h.create([step("gate"), step("x")]);
    const w = put(h, "x", status)!;
    const before = h.state.runs.get(w.run_id!)!;
    const runBefore = { ...before };
    h.ok(upd({ op: "update_step", step_id: "x", fields: { title: "Changed", summary: "Do it differently", worker_pool_id: "other" } }));
    expect(h.state.runs.get(w.run_id!)).toEqual(runBefore);
    expect(h.state.steps.get("x")).toMatchObject({ status, claimed_by_run_id: w.run_id, claimed_by_agent_id: w.agent_id });
    const attempt = h.state.attempts.get(h.state.steps.get("x")!.current_attempt_id!)!;
    expect(attempt).toMatchObject({ status: "active", step_snapshot: { title: "Step x", summary: "Do x", worker_pool_id: "default" } });
    // The worker keeps working on it.
    expect(types(h.ok(setStep("x", "completed"), w))).toEqual(["task_step_completed"]);
  });

  it("changing a claimed or running step injects no message into the running worker", () => {
    const h = new Harness();
    h.create([step("a"), step("b")]);
    put(h, "a", "claimed");
    put(h, "b", "running");
    const d = h.ok(upd({ op: "update_step", step_id: "a", fields: { title: "A2" } }, { op: "update_step", step_id: "b", fields: { summary: "B2" } }));
    expect(types(d)).toEqual(["task_updated"]);
    expect(h.state.progress.size).toBe(0);
  });

  it.each(["claimed", "running"])("a %s step given unmet dependencies keeps its status and its worker run", (status) => {
    const h = new Harness();
    h.create([step("gate"), step("x")]);
    const w = put(h, "x", status)!;
    const d = h.ok(upd({ op: "add_dependency", step_id: "x", depends_on_step_id: "gate" }));
    expect(types(d)).toEqual(["task_updated"]);
    expect(h.state.steps.get("x")).toMatchObject({ status, depends_on_step_ids: ["gate"], claimed_by_run_id: w.run_id });
    expect(h.state.runs.get(w.run_id!)!.status).toBe("active");
    expect(types(h.ok(setStep("x", "completed"), w))).toEqual(["task_step_completed"]);
  });

  it("changing a claimed or running step records in task_updated that it was updated after dispatch", () => {
    const h = new Harness();
    h.create([step("gate"), step("a"), step("b"), step("c")]);
    const wa = put(h, "a", "claimed")!;
    const wb = put(h, "b", "running")!;
    const d = h.ok(
      upd(
        { op: "update_step", step_id: "a", fields: { title: "A2" } },
        { op: "add_dependency", step_id: "b", depends_on_step_id: "gate" },
        { op: "update_step", step_id: "c", fields: { title: "C2" } },
      ),
    );
    expect(payload(d.events[0]).updated_after_dispatch).toEqual([
      { step_id: "a", run_id: wa.run_id },
      { step_id: "b", run_id: wb.run_id },
    ]);
    expect(h.state.steps.get("a")!.updated_after_dispatch).toBe(true);
    expect(h.state.steps.get("b")!.updated_after_dispatch).toBe(true);
    expect(h.state.steps.get("c")!.updated_after_dispatch).toBe(false);
    consistent(h);
  });

  it("inspect shows both the dispatch-time step the worker saw and the current step", () => {
    const h = new Harness();
    h.create([step("gate"), step("x")]);
    const w = put(h, "x", "running")!;
    h.ok(upd({ op: "update_step", step_id: "x", fields: { title: "Now", summary: "Current", depends_on_step_ids: ["gate"] } }));
    const view = taskView(h.state);
    const current = view.steps.find((s) => s.step_id === "x")!;
    const attempt = view.attempts.find((a) => a.step_id === "x")!;
    expect(current).toMatchObject({ title: "Now", summary: "Current", depends_on_step_ids: ["gate"], updated_after_dispatch: true });
    expect(attempt).toMatchObject({ run_id: w.run_id, step_snapshot: { title: "Step x", summary: "Do x", depends_on_step_ids: [], required: true, worker_pool_id: "default" } });
  });

  it("changes to content, dependencies, worker pool and required are recorded as a task_updated patch, never as task_step_updated", () => {
    const h = new Harness();
    h.create([step("a"), step("b"), step("c")]);
    put(h, "c", "running");
    const ops = [
      { op: "update_step", step_id: "a", fields: { title: "A2", required: false, worker_pool_id: "p2" } },
      { op: "add_dependency", step_id: "b", depends_on_step_id: "a" },
      { op: "update_step", step_id: "c", fields: { summary: "C2" } },
    ];
    const d = h.ok(upd(...ops));
    expect(types(d)).toEqual(["task_updated", "task_step_pending"]);
    expect(payload(d.events[0]).ops).toEqual(ops);
    expect(d.events.some((e) => e.event_type === "task_step_updated")).toBe(false);
    expect(h.wal.filter((e) => e.event_type === "task_updated")).toHaveLength(1);
  });

  it("after a dependency change the core recomputes ready/pending only for pending and ready steps", () => {
    const h = new Harness();
    h.create([step("gate"), step("z"), step("r"), step("p", ["gate"]), step("bl"), step("fl"), step("cl")]);
    done(h, "z");
    put(h, "bl", "blocked");
    put(h, "fl", "failed");
    put(h, "cl", "claimed");
    const d = h.ok(
      upd(
        { op: "add_dependency", step_id: "r", depends_on_step_id: "gate" },
        { op: "update_step", step_id: "p", fields: { depends_on_step_ids: ["z"] } },
        { op: "add_dependency", step_id: "bl", depends_on_step_id: "gate" },
        { op: "update_step", step_id: "fl", fields: { depends_on_step_ids: ["z"] } },
        { op: "add_dependency", step_id: "cl", depends_on_step_id: "gate" },
      ),
    );
    expect(types(d)).toEqual(["task_updated", "task_step_pending", "task_step_ready"]);
    expect(stepIds(d)).toEqual([null, "r", "p"]);
    expect(d.events[1]).toMatchObject({ payload: { reason: "dependencies_not_completed" } });
    expect([h.status("r"), h.status("p"), h.status("bl"), h.status("fl"), h.status("cl")]).toEqual(["pending", "ready", "blocked", "failed", "claimed"]);
    consistent(h);
  });

  it.each(["blocked", "failed"])("a %s step keeps its status after a dependency change until explicitly reopened", (status) => {
    const h = new Harness();
    h.create([step("gate"), step("z"), step("x", ["gate"])]);
    done(h, "z");
    h.ok(setStep("x", status));
    expect(h.status("x")).toBe(status);
    const d = h.ok(upd({ op: "update_step", step_id: "x", fields: { depends_on_step_ids: ["z"] } }));
    expect(types(d)).toEqual(["task_updated"]);
    expect(h.status("x")).toBe(status);
    expect(types(h.ok(upd({ op: "reopen_step", step_id: "x" })))).toEqual(["task_updated", "task_step_reopened", "task_step_ready"]);
  });

  it("a cancelled step stays cancelled and out of scheduling after its title or summary changes", () => {
    const h = new Harness();
    h.create([step("z"), step("x", ["z"])]);
    h.ok(upd({ op: "cancel_step", step_id: "x" }));
    done(h, "z");
    const d = h.ok(upd({ op: "update_step", step_id: "x", fields: { title: "Renamed", summary: "Still dropped" } }));
    expect(types(d)).toEqual(["task_updated"]);
    expect(h.status("x")).toBe("cancelled");
    expect(h.state.index.ready.size).toBe(0);
  });

  it("a worker can never change a step's title, summary, dependencies, worker pool or required", () => {
    const h = new Harness();
    h.create([step("a"), step("b")]);
    const w = h.claimWith("a");
    for (const fields of [{ title: "t" }, { summary: "s" }, { depends_on_step_ids: ["b"] }, { worker_pool_id: "p" }, { required: false }]) {
      rejects(h, upd({ op: "update_step", step_id: "a", fields }), "tool_not_available", w);
      rejects(h, setStep("a", "running", fields), "validation_error", w);
    }
    rejects(h, upd({ op: "add_dependency", step_id: "a", depends_on_step_id: "b" }), "tool_not_available", w);
    rejects(h, upd({ op: "add_step", step: step("c") }), "tool_not_available", w);
    rejects(h, upd({ op: "delete_step", step_id: "b" }), "tool_not_available", w);
    // Nor can the orchestrator through agent.task_update_step.
    rejects(h, setStep("a", "running", { title: "t" }), "validation_error");
  });

  it("after any step change the core re-checks dependencies and DAG constraints", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"]), step("c")]);
    rejects(h, upd({ op: "update_step", step_id: "c", fields: { depends_on_step_ids: ["nope"] } }), "unknown_dependency");
    rejects(h, upd({ op: "add_dependency", step_id: "c", depends_on_step_id: "nope" }), "unknown_dependency");
    rejects(h, upd({ op: "add_step", step: step("d", ["nope"]) }), "unknown_dependency");
    rejects(h, upd({ op: "update_step", step_id: "a", fields: { depends_on_step_ids: ["b"] } }), "dependency_cycle");
    rejects(h, upd({ op: "remove_dependency", step_id: "c", depends_on_step_id: "a" }), "validation_error");
    // Atomic: one bad op rejects the whole patch, including the good ops before it.
    rejects(h, upd({ op: "add_step", step: step("e") }, { op: "update_task", title: "T" }, { op: "add_dependency", step_id: "a", depends_on_step_id: "b" }), "dependency_cycle");
    rejects(h, upd({ op: "add_step", step: step("f") }, { op: "delete_step", step_id: "a" }), "step_has_dependents");
    expect(h.state.steps.has("e")).toBe(false);
    expect(h.state.task!.title).toBe("Plan");
  });

  it("for a pending or ready step an unmet dependency after a change means pending, a met one ready", () => {
    const h = new Harness();
    h.create([step("gate"), step("z"), step("r"), step("p", ["gate"])]);
    done(h, "z");
    let d = h.ok(upd({ op: "add_dependency", step_id: "r", depends_on_step_id: "gate" }));
    expect(types(d)).toEqual(["task_updated", "task_step_pending"]);
    expect(h.status("r")).toBe("pending");
    d = h.ok(upd({ op: "update_step", step_id: "p", fields: { depends_on_step_ids: ["z"] } }));
    expect(types(d)).toEqual(["task_updated", "task_step_ready"]);
    expect(h.status("p")).toBe("ready");
    // Still met: stays ready with no status event.
    d = h.ok(upd({ op: "add_dependency", step_id: "p", depends_on_step_id: "z" }, { op: "update_step", step_id: "p", fields: { title: "P" } }));
    expect(types(d)).toEqual(["task_updated"]);
    expect(h.status("p")).toBe("ready");
    consistent(h);
  });

  it.each(["pending", "ready", "cancelled"])("the orchestrator may delete a %s step", (status) => {
    const h = new Harness();
    h.create([step("gate"), step("x")]);
    put(h, "x", status);
    const d = h.ok(upd({ op: "delete_step", step_id: "x" }));
    expect(types(d)).toEqual(["task_updated"]);
    expect(h.state.steps.has("x")).toBe(false);
    expect(h.state.index.ready.get("default")?.ids()).toEqual(["gate"]);
    expect(h.state.index.dependents.has("gate")).toBe(false);
    consistent(h);
  });

  it.each(["blocked", "failed", "completed", "claimed", "running"])("the orchestrator cannot delete a %s step", (status) => {
    const h = new Harness();
    h.create([step("gate"), step("x")]);
    put(h, "x", status);
    rejects(h, upd({ op: "delete_step", step_id: "x" }), "invalid_transition");
    expect(h.status("x")).toBe(status);
  });

  it("deleting a step that other steps still depend on fails with step_has_dependents", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"]), step("c", ["a"]), step("d")]);
    let e = rejects(h, upd({ op: "delete_step", step_id: "a" }), "step_has_dependents");
    expect((e.details!.dependents as string[]).sort()).toEqual(["b", "c"]);
    // Even a cancelled dependant still counts, and a cancelled dependency is still "not completed".
    h.ok(upd({ op: "cancel_step", step_id: "a" }, { op: "cancel_step", step_id: "b" }));
    e = rejects(h, upd({ op: "delete_step", step_id: "a" }), "step_has_dependents");
    expect(e.details).toMatchObject({ step_id: "a" });
  });

  it("the orchestrator must first change the dependants' depends_on_step_ids, then delete the step", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"]), step("c", ["a"])]);
    // Patch ops apply in the given order; the core does not reorder them.
    rejects(
      h,
      upd({ op: "delete_step", step_id: "a" }, { op: "update_step", step_id: "b", fields: { depends_on_step_ids: [] } }, { op: "remove_dependency", step_id: "c", depends_on_step_id: "a" }),
      "step_has_dependents",
    );
    const d = h.ok(
      upd({ op: "update_step", step_id: "b", fields: { depends_on_step_ids: [] } }, { op: "remove_dependency", step_id: "c", depends_on_step_id: "a" }, { op: "delete_step", step_id: "a" }),
    );
    expect(types(d)).toEqual(["task_updated", "task_step_ready", "task_step_ready"]);
    expect([...h.state.steps.keys()]).toEqual(["b", "c"]);
    consistent(h);
  });

  it("the core neither removes downstream dependencies nor cascades deletion", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"]), step("c", ["b"])]);
    rejects(h, upd({ op: "delete_step", step_id: "a" }), "step_has_dependents");
    expect(h.state.steps.get("b")!.depends_on_step_ids).toEqual(["a"]);
    expect([...h.state.steps.keys()]).toEqual(["a", "b", "c"]);
    h.ok(upd({ op: "remove_dependency", step_id: "c", depends_on_step_id: "b" }, { op: "delete_step", step_id: "b" }));
    expect([...h.state.steps.keys()]).toEqual(["a", "c"]);
    expect(h.state.steps.get("c")!.depends_on_step_ids).toEqual([]);
  });

  it.each(Object.keys(TERMINATE))("a %s task is terminal as a whole and does not follow the step restore rules", (end) => {
    const h = new Harness();
    h.create([step("a"), optional("o"), optional("f")]);
    done(h, "a");
    put(h, "f", "failed");
    TERMINATE[end]!(h);
    rejects(h, upd({ op: "reopen_step", step_id: "f" }), "task_terminal");
    rejects(h, upd({ op: "reopen_step", step_id: "o" }), "task_terminal");
    rejects(h, { type: "reopen_task" }, "task_terminal");
    expect(h.state.task!.status).toBe(end);
  });

  it("every DAG create and change is cycle-checked", () => {
    const h = new Harness();
    rejects(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "Plan", steps: [step("a", ["b"]), step("b", ["a"])] }, "dependency_cycle");
    rejects(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "Plan", steps: [step("a", ["a"])] }, "dependency_cycle");
    expect(h.state).toEqual(emptyState());
    h.create([step("a"), step("b", ["a"]), step("c", ["b"])]);
    rejects(h, upd({ op: "add_dependency", step_id: "a", depends_on_step_id: "c" }), "dependency_cycle");
    rejects(h, upd({ op: "add_dependency", step_id: "a", depends_on_step_id: "a" }), "dependency_cycle");
    rejects(h, upd({ op: "update_step", step_id: "b", fields: { depends_on_step_ids: ["c"] } }), "dependency_cycle");
    rejects(h, upd({ op: "add_step", step: step("n", ["c"]) }, { op: "add_dependency", step_id: "a", depends_on_step_id: "n" }), "dependency_cycle");
    // A cycle introduced and then broken within one patch is fine: the final DAG is what counts.
    h.ok(upd({ op: "add_dependency", step_id: "a", depends_on_step_id: "c" }, { op: "remove_dependency", step_id: "a", depends_on_step_id: "c" }));
    consistent(h);
  });

  it("a detected dependency cycle returns dependency_cycle", () => {
    const h = new Harness();
    const e = rejects(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "Plan", steps: [step("root"), step("a", ["root", "c"]), step("b", ["a"]), step("c", ["b"])] }, "dependency_cycle");
    expect((e.details!.step_ids as string[]).sort()).toEqual(expect.arrayContaining(["a", "b", "c"]));
    expect(e.details!.step_ids).not.toContain("root");
    expect(h.wal).toHaveLength(0);
  });
});
