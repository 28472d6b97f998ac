/**
 * The DAG (docs/model.md "The DAG"): one test per rule, named after the rule. Each test asserts exact statuses, exact emitted event types and exact error codes, and that a rejected command writes nothing.
 */
import { describe, expect, it } from "vitest";
import { emptyState, querySteps, replay, taskView } from "../../../src/core/index.js";
import { Harness, orchestrator, step, TASK } from "../harness.js";
import { types, stepIds, payload, upd, setStep, consistent, rejects, INVALID_IDS, q, ids } from "./support.js";

describe("DAG Model", () => {
  it("a task is one complete DAG", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"]), step("c", ["a"]), step("d", ["b", "c"])]);
    expect(h.state.task!.task_id).toBe(TASK);
    expect([...h.state.steps.keys()]).toEqual(["a", "b", "c", "d"]);
    expect([...h.state.index.dependents.get("a")!].sort()).toEqual(["b", "c"]);
    expect([...h.state.index.dependents.get("b")!]).toEqual(["d"]);
    expect(h.wal.filter((e) => e.event_type === "task_created")).toHaveLength(1);
    consistent(h);
    // The DAG must be whole: a step may not depend on a step outside it.
    const g = new Harness();
    const e = rejects(g, { type: "create_task", task_id: TASK, wal_name: "plan", title: "Plan", steps: [step("a"), step("b", ["elsewhere"])] }, "unknown_dependency");
    expect(e.details).toMatchObject({ step_id: "b", depends_on_step_id: "elsewhere" });
  });

  it("the nodes of the DAG are the schedulable steps", () => {
    const h = new Harness();
    h.create([step("a"), step("b")]);
    expect(h.state.index.ready.get("default")?.ids()).toEqual(["a", "b"]);
    const wa = h.claimWith("a");
    const wb = h.claimWith("b");
    expect(h.state.steps.get("a")!.claimed_by_run_id).toBe(wa.run_id);
    expect(h.state.steps.get("b")!.claimed_by_run_id).toBe(wb.run_id);
    // No node besides the steps: a name that is not a step cannot be claimed.
    rejects(h, { type: "claim_step", step_id: "task_1" }, "not_found", h.dispatch());
  });

  it("the task DAG has task_id, wal name, title, summary, status, root_step_ids, steps, creator and timestamps", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"]), step("c")]);
    const view = taskView(h.state);
    expect(view.task).toMatchObject({
      task_id: TASK,
      wal_name: "plan",
      title: "Plan",
      summary: "A plan",
      status: "running",
      root_step_ids: ["a", "c"],
      created_by_agent_id: orchestrator.agent_id,
      created_by_run_id: orchestrator.run_id,
      created_at: "2026-01-01T00:00:00.000Z",
      updated_at: "2026-01-01T00:00:00.000Z",
    });
    expect(view.steps.map((s) => s.step_id)).toEqual(["a", "b", "c"]);
  });

  it("the task_id is the one the orchestrator gives in task_create", () => {
    const h = new Harness();
    h.ok({ type: "create_task", task_id: "my-task_7", wal_name: "plan", title: "Plan", steps: [step("a")] });
    expect(h.state.task!.task_id).toBe("my-task_7");
    expect(h.wal.every((e) => e.task_id === "my-task_7")).toBe(true);
  });

  it("the core never derives the task_id from title, summary or wal name", () => {
    const h = new Harness();
    rejects(h, { type: "create_task", wal_name: "plan", title: "Plan", summary: "A plan", steps: [] }, "validation_error");
    h.ok({ type: "create_task", task_id: "t9", wal_name: "other-name", title: "Some Title", summary: "x", steps: [] });
    expect(h.state.task!.task_id).toBe("t9");
    expect(h.state.task!.wal_name).toBe("other-name");
  });

  it("a task_id is unique among the session's active tasks", () => {
    const h = new Harness();
    h.create([step("a")]);
    rejects(h, { type: "create_task", task_id: TASK, wal_name: "plan2", title: "Again", steps: [step("a")] }, "task_id_conflict");
  });

  it.each(INVALID_IDS.map((id) => [JSON.stringify(id).slice(0, 20), id]))("a task_id must use safe characters a-z0-9-_ (rejects %s)", (_label, id) => {
    const h = new Harness();
    rejects(h, { type: "create_task", task_id: id, wal_name: "plan", title: "Plan", steps: [] }, "validation_error");
    expect(h.state).toEqual(emptyState());
  });

  it("a task_id may not be empty, longer than 64 characters or carry path semantics", () => {
    for (const id of ["", "x".repeat(65), "../etc", "a/b", "/root", "."]) {
      const h = new Harness();
      rejects(h, { type: "create_task", task_id: id, wal_name: "plan", title: "Plan", steps: [] }, "validation_error");
    }
    const h = new Harness();
    h.ok({ type: "create_task", task_id: "x".repeat(64), wal_name: "plan", title: "Plan", steps: [] });
    expect(h.state.task!.task_id).toHaveLength(64);
  });

  it("a step has step_id, title, summary, status, dependencies, required (default true), worker pool (default), claim, lease, result_summary, artifact_ids and updated_at", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"], { required: false, worker_pool_id: "gpu" })]);
    expect(h.state.steps.get("a")).toMatchObject({
      step_id: "a",
      title: "Step a",
      summary: "Do a",
      status: "ready",
      depends_on_step_ids: [],
      required: true,
      worker_pool_id: "default",
      claimed_by_agent_id: null,
      claimed_by_run_id: null,
      lease_expires_at: null,
      result_summary: null,
      artifact_ids: [],
      updated_at: "2026-01-01T00:00:00.000Z",
    });
    expect(h.state.steps.get("b")).toMatchObject({ status: "pending", depends_on_step_ids: ["a"], required: false, worker_pool_id: "gpu" });
    const w = h.claimWith("a");
    expect(h.state.steps.get("a")).toMatchObject({
      status: "claimed",
      claimed_by_agent_id: w.agent_id,
      claimed_by_run_id: w.run_id,
      lease_expires_at: "2026-01-01T00:01:00.000Z",
    });
  });

  it("the step_id is the one the orchestrator gives in task_create or task_update", () => {
    const h = new Harness();
    h.create([step("first-step_1")]);
    h.ok(upd({ op: "add_step", step: step("added_2", ["first-step_1"]) }));
    expect([...h.state.steps.keys()]).toEqual(["first-step_1", "added_2"]);
  });

  it("the core never derives a step_id from title or summary", () => {
    const h = new Harness();
    rejects(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "Plan", steps: [{ title: "T", summary: "S", depends_on_step_ids: [] }] }, "validation_error");
    h.create([step("a")]);
    rejects(h, upd({ op: "add_step", step: { title: "T", summary: "S", depends_on_step_ids: [] } }), "validation_error");
  });

  it("a step_id is unique within the task DAG", () => {
    const h = new Harness();
    const e = rejects(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "Plan", steps: [step("a"), step("a")] }, "duplicate_step");
    expect(e.details).toMatchObject({ step_id: "a" });
    h.create([step("a")]);
    rejects(h, upd({ op: "add_step", step: step("a") }), "duplicate_step");
    rejects(h, upd({ op: "add_step", step: step("n") }, { op: "add_step", step: step("n") }), "duplicate_step");
  });

  it.each(INVALID_IDS.map((id) => [JSON.stringify(id).slice(0, 20), id]))("a step_id must use safe characters a-z0-9-_ (rejects %s)", (_label, id) => {
    const h = new Harness();
    rejects(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "Plan", steps: [step(id)] }, "validation_error");
    h.create([step("a")]);
    rejects(h, upd({ op: "add_step", step: step(id) }), "validation_error");
  });

  it("a step_id may not be empty, longer than 64 characters or carry path semantics (also in dependencies)", () => {
    const h = new Harness();
    h.create([step("a")]);
    for (const id of ["", "x".repeat(65), "../a", "a/b", "/a"]) {
      rejects(h, upd({ op: "add_step", step: step(id) }), "validation_error");
      rejects(h, upd({ op: "add_step", step: step("ok", [id]) }), "validation_error");
    }
    h.ok(upd({ op: "add_step", step: step("y".repeat(64)) }));
    expect(h.status("y".repeat(64))).toBe("ready");
  });

  it("natural-language content (titles, summaries, result summaries) is written and updated by the model through task tools", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"])]);
    h.ok(upd({ op: "update_task", title: "Renamed plan", summary: "New words" }, { op: "update_step", step_id: "b", fields: { title: "Better b", summary: "Clearer" } }));
    const w = h.claimWith("a");
    h.ok(setStep("a", "completed", { result_summary: "All good, see report", artifact_ids: ["art_1"] }), w);
    expect(h.state.task).toMatchObject({ title: "Renamed plan", summary: "New words" });
    expect(h.state.steps.get("b")).toMatchObject({ title: "Better b", summary: "Clearer" });
    expect(h.state.steps.get("a")).toMatchObject({ result_summary: "All good, see report", artifact_ids: ["art_1"] });
  });

  it("the core never reads natural-language text to decide DAG state (titles do not affect readiness)", () => {
    const plain = new Harness();
    const wordy = new Harness();
    const words = (id: string, deps: string[] = []) => ({ ...step(id, deps), title: "DONE - completed", summary: `status: cancelled; depends on nothing; blocked by ${id}` });
    const p = plain.create([step("a"), step("b", ["a"]), step("c")]);
    const q = wordy.create([words("a"), words("b", ["a"]), words("c")]);
    expect(types(q)).toEqual(types(p));
    expect(stepIds(q)).toEqual(stepIds(p));
    for (const id of ["a", "b", "c"]) expect(wordy.status(id)).toBe(plain.status(id));
    expect(wordy.status("b")).toBe("pending");
    const w = wordy.claimWith("a");
    const d = wordy.ok(setStep("a", "completed", { result_summary: "FAILED. cancelled. b must not run" }), w);
    expect(types(d)).toEqual(["task_step_completed", "task_step_ready"]);
    expect(wordy.status("b")).toBe("ready");
  });

  it("machine fields (topology, status, pool, claim, lease, artifacts) change only through structured tool input under the state rules", () => {
    const h = new Harness();
    rejects(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "Plan", steps: [step("a", [], { status: "completed" })] }, "validation_error");
    rejects(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "Plan", steps: [step("a", [], { claimed_by_agent_id: "w" })] }, "validation_error");
    h.create([step("a"), step("b", ["a"])]);
    rejects(h, upd({ op: "update_step", step_id: "b", fields: { status: "ready" } }), "validation_error");
    rejects(h, upd({ op: "update_step", step_id: "a", fields: { lease_expires_at: "2030-01-01T00:00:00.000Z" } }), "validation_error");
    rejects(h, upd({ op: "update_step", step_id: "a", fields: { artifact_ids: ["x"] } }), "validation_error");
    // Status, claim and lease come from claims and workers only: the orchestrator cannot start a ready step itself.
    rejects(h, setStep("a", "claimed"), "invalid_transition");
    rejects(h, setStep("a", "running"), "invalid_transition");
    h.ok(upd({ op: "update_step", step_id: "b", fields: { summary: "status=ready, depends_on none, worker_pool gpu" } }));
    expect(h.state.steps.get("b")).toMatchObject({ status: "pending", depends_on_step_ids: ["a"], worker_pool_id: "default" });
  });

  it("v1 has no step priority, order or reorder", () => {
    const h = new Harness();
    rejects(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "Plan", steps: [step("a", [], { priority: 1 })] }, "validation_error");
    rejects(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "Plan", steps: [step("a", [], { order: 1 })] }, "validation_error");
    h.create([step("a"), step("b")]);
    rejects(h, upd({ op: "reorder", step_ids: ["b", "a"] }), "validation_error");
    rejects(h, upd({ op: "update_step", step_id: "a", fields: { priority: 5 } }), "validation_error");
    rejects(h, upd({ op: "update_step", step_id: "a", fields: { order: 0 } }), "validation_error");
    expect("priority" in h.state.steps.get("a")!).toBe(false);
    expect("order" in h.state.steps.get("a")!).toBe(false);
  });

  it("execution order is expressed through depends_on_step_ids", () => {
    const h = new Harness();
    // b is listed first but depends on a: only a can run.
    h.create([step("b", ["a"]), step("a")]);
    expect(h.status("b")).toBe("pending");
    const w = h.dispatch();
    const d = h.ok({ type: "claim_next" }, w);
    expect(d.value).toMatchObject({ kind: "claimed", step_id: "a" });
    const idle = h.dispatch();
    expect(h.ok({ type: "claim_next" }, idle).value).toEqual({ kind: "no_step_claimed", reason: "no_ready_step" });
    h.ok(setStep("a", "completed"), w);
    expect(h.ok({ type: "claim_next" }, idle).value).toMatchObject({ kind: "claimed", step_id: "b" });
  });

  it("the orchestrator limits what a worker run may handle with dispatch_worker.allowed_step_ids", () => {
    const h = new Harness();
    h.create([step("a"), step("b"), step("c")]);
    const w = h.dispatch({ allowed_step_ids: ["c", "c"] });
    expect(h.state.runs.get(w.run_id!)!.allowed_step_ids).toEqual(["c"]);
    const page = querySteps(h.state, w, {});
    expect(page.ok && page.value.steps.map((s) => s.step_id)).toEqual(["c"]);
    rejects(h, { type: "claim_step", step_id: "a" }, "permission_denied", w);
    expect(h.ok({ type: "claim_next" }, w).value).toMatchObject({ kind: "claimed", step_id: "c" });
    rejects(h, { type: "dispatch_worker", allowed_step_ids: [] }, "validation_error");
  });

  it("step status, result_summary and artifact_ids in the DAG/WAL are the source of truth of scheduling", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"])]);
    const w = h.claimWith("a");
    h.ok(setStep("a", "completed", { result_summary: "made it", artifact_ids: ["art_a", "art_b"] }), w);
    const rebuilt = replay(h.wal);
    expect(rebuilt.steps.get("a")).toMatchObject({ status: "completed", result_summary: "made it", artifact_ids: ["art_a", "art_b"] });
    expect(rebuilt.steps.get("b")!.status).toBe("ready");
    const completedEvent = h.wal.find((e) => e.event_type === "task_step_completed")!;
    const attemptId = h.state.steps.get("a")!.attempt_ids[0];
    expect(payload(completedEvent)).toEqual({ result_summary: "made it", artifact_ids: ["art_a", "art_b"], attempt_id: attemptId, run_id: w.run_id });
    consistent(h);
  });

  it("a worker run's final result is returned to the orchestrator but never overwrites the step's status", () => {
    const h = new Harness();
    h.create([step("a"), step("b")]);
    const wa = h.claimWith("a");
    const claimedResult = { status: "completed", result_summary: "I finished a", artifact_ids: ["art"] };
    const d = h.ok({ type: "finish_run", run_id: wa.run_id, outcome: "finished", result: claimedResult }, wa);
    expect(types(d)).toEqual(["task_step_failed", "worker_run_ended"]);
    expect(h.state.steps.get("a")).toMatchObject({ status: "failed", result_summary: "worker_finished_without_terminal_step_status", artifact_ids: [] });
    expect(h.state.runs.get(wa.run_id!)!.result).toEqual(claimedResult);
    const wb = h.claimWith("b");
    h.ok(setStep("b", "blocked", { reason: "needs input" }), wb);
    h.ok({ type: "finish_run", run_id: wb.run_id, outcome: "finished", result: { status: "completed" } }, wb);
    expect(h.status("b")).toBe("blocked");
    consistent(h);
  });
});
