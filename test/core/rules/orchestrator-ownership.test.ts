/**
 * Seed 003 "Orchestrator Ownership": one test (or table row) per rule. Every rejected command is checked to write nothing.
 */
import { describe, expect, it } from "vitest";
import { Harness, observer, orchestrator, step, stranger, TASK } from "../harness.js";
import { types, ghost, systemCaller, rejectsAs, typesOf, q, ids, qErr, st, runOf, attemptsOf, base } from "./support.js";

describe("Orchestrator Ownership", () => {
  it.each([
    ["a worker", ghost],
    ["an observer", observer],
    ["a system caller", systemCaller],
  ])("only the orchestrator can create a task DAG (%s cannot)", (_n, actor) => {
    const h = new Harness();
    rejectsAs(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "Plan", steps: [step("a")] }, actor, "tool_not_available");
    expect(h.state.task).toBeNull();
    expect(typesOf(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "Plan", steps: [step("a")] })).toEqual([
      "task_created",
      "task_step_ready",
      "task_running",
    ]);
  });

  /** Setup for content changes: a ready, b pending on a, c claimed by `holder`, d failed, e blocked. */
  function contentSetup() {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"]), step("c"), step("d"), step("e")]);
    const failer = h.claimWith("d");
    h.ok({ type: "update_step", step_id: "d", status: "failed", reason: "boom" }, failer);
    const blocker = h.claimWith("e");
    h.ok({ type: "update_step", step_id: "e", status: "blocked", reason: "stuck" }, blocker);
    const holder = h.claimWith("c");
    return { h, holder };
  }

  it.each([
    ["task title", [{ op: "update_task", title: "New title" }], (h: Harness) => expect(h.state.task!.title).toBe("New title")],
    ["task summary", [{ op: "update_task", summary: "New summary" }], (h: Harness) => expect(h.state.task!.summary).toBe("New summary")],
    ["step title", [{ op: "update_step", step_id: "a", fields: { title: "A2" } }], (h: Harness) => expect(st(h, "a").title).toBe("A2")],
    ["step summary", [{ op: "update_step", step_id: "a", fields: { summary: "S2" } }], (h: Harness) => expect(st(h, "a").summary).toBe("S2")],
    [
      "DAG topology (depends_on_step_ids)",
      [{ op: "update_step", step_id: "b", fields: { depends_on_step_ids: ["c"] } }],
      (h: Harness) => expect(st(h, "b").depends_on_step_ids).toEqual(["c"]),
    ],
    ["a dependency added", [{ op: "add_dependency", step_id: "a", depends_on_step_id: "c" }], (h: Harness) => expect(st(h, "a").depends_on_step_ids).toEqual(["c"])],
    ["a dependency removed", [{ op: "remove_dependency", step_id: "b", depends_on_step_id: "a" }], (h: Harness) => expect(st(h, "b").depends_on_step_ids).toEqual([])],
    ["a step added", [{ op: "add_step", step: step("n", ["a"]) }], (h: Harness) => expect(st(h, "n").status).toBe("pending")],
    ["a step deleted", [{ op: "delete_step", step_id: "b" }], (h: Harness) => expect(h.state.steps.has("b")).toBe(false)],
    [
      "a step split in two",
      [
        { op: "add_step", step: step("a1") },
        { op: "add_step", step: step("a2", ["a1"]) },
        { op: "update_step", step_id: "b", fields: { depends_on_step_ids: ["a2"] } },
        { op: "delete_step", step_id: "a" },
      ],
      (h: Harness) => {
        expect(h.state.steps.has("a")).toBe(false);
        expect(st(h, "b").depends_on_step_ids).toEqual(["a2"]);
      },
    ],
    [
      "two steps merged into one",
      [
        { op: "update_step", step_id: "a", fields: { title: "A and B" } },
        { op: "delete_step", step_id: "b" },
      ],
      (h: Harness) => expect([...h.state.steps.keys()]).toEqual(["a", "c", "d", "e"]),
    ],
    ["a step's worker_pool_id", [{ op: "update_step", step_id: "a", fields: { worker_pool_id: "gpu" } }], (h: Harness) => expect(st(h, "a").worker_pool_id).toBe("gpu")],
    ["a step's required flag", [{ op: "update_step", step_id: "a", fields: { required: false } }], (h: Harness) => expect(st(h, "a").required).toBe(false)],
  ])("only the orchestrator can change task content: %s", (_n, ops, check) => {
    const { h, holder } = contentSetup();
    rejectsAs(h, { type: "update_task", ops }, holder, "tool_not_available");
    rejectsAs(h, { type: "update_task", ops }, observer, "tool_not_available");
    rejectsAs(h, { type: "update_task", ops }, stranger, "permission_denied");
    const types = typesOf(h, { type: "update_task", ops });
    expect(types[0]).toBe("task_updated");
    check(h);
  });

  it("the orchestrator need not assign steps to workers: an unscoped run claims the first ready step of its pool", () => {
    const h = base();
    const w = h.dispatch();
    expect(runOf(h, w).allowed_step_ids).toBeNull();
    const d = h.ok({ type: "claim_next" }, w);
    expect(d.value).toMatchObject({ kind: "claimed", step_id: "a" });
    expect(st(h, "a").claimed_by_run_id).toBe(w.run_id);
  });

  it("the orchestrator maintains blocked state and worker_pool_id; ready is maintained by the core", () => {
    const h = base();
    const w = h.claimWith("c");
    // Nobody writes ready or pending by hand.
    rejectsAs(h, { type: "update_step", step_id: "b", status: "ready" }, orchestrator, "invalid_transition");
    rejectsAs(h, { type: "update_step", step_id: "c", status: "ready" }, w, "invalid_transition");
    rejectsAs(h, { type: "update_step", step_id: "c", status: "pending" }, w, "invalid_transition");
    // The orchestrator sets blocked and the pool.
    expect(typesOf(h, { type: "update_step", step_id: "d", status: "blocked", reason: "needs input" })).toEqual(["task_step_blocked"]);
    expect(h.status("d")).toBe("blocked");
    typesOf(h, { type: "update_task", ops: [{ op: "update_step", step_id: "b", fields: { worker_pool_id: "gpu" } }] });
    expect(st(h, "b").worker_pool_id).toBe("gpu");
    // Completing a makes b ready in the same decision, without anyone asking.
    const wa = h.claimWith("a");
    expect(typesOf(h, { type: "update_step", step_id: "a", status: "completed" }, wa)).toEqual(["task_step_completed", "task_step_ready"]);
    expect(h.status("b")).toBe("ready");
  });

  it("the ready queue is passive: readiness never dispatches a run or claims a step", () => {
    const h = base();
    expect(h.wal.map((e) => e.event_type)).toEqual(["task_created", "task_step_ready", "task_step_ready", "task_step_ready", "task_running"]);
    expect(h.state.runs.size).toBe(0);
    const w = h.claimWith("a");
    const types = typesOf(h, { type: "update_step", step_id: "a", status: "completed" }, w);
    expect(types).toEqual(["task_step_completed", "task_step_ready"]);
    expect(h.state.runs.size).toBe(1);
    expect(h.status("b")).toBe("ready");
    expect(st(h, "b").claimed_by_run_id).toBeNull();
    expect(h.state.index.activeRuns.size).toBe(1); // only the run the orchestrator dispatched
  });

  it("a worker queries the ready queue and claims only inside a run started by dispatch_worker", () => {
    const h = base();
    expect(qErr(h, ghost)).toBe("permission_denied");
    rejectsAs(h, { type: "claim_step", step_id: "a" }, ghost, "permission_denied");
    rejectsAs(h, { type: "claim_next" }, ghost, "permission_denied");
    const w = h.dispatch();
    expect(ids(q(h, w))).toEqual(["a", "c", "d"]);
    expect(typesOf(h, { type: "claim_step", step_id: "a" }, w)).toEqual(["task_step_claimed"]);
  });

  it("a worker run claims at most one step", () => {
    const h = base();
    const w = h.claimWith("a");
    rejectsAs(h, { type: "claim_step", step_id: "c" }, w, "step_already_claimed_by_run");
    h.ok({ type: "update_step", step_id: "a", status: "completed" }, w);
    rejectsAs(h, { type: "claim_step", step_id: "c" }, w, "step_already_claimed_by_run");
    const before = h.wal.length;
    expect(h.ok({ type: "claim_next" }, w).value).toEqual({ kind: "no_step_claimed", reason: "run_budget_spent" });
    expect(h.wal.length).toBe(before);
    expect(runOf(h, w).claims_used).toBe(1);
  });

  it.each([
    ["title", { title: "Hijack" }],
    ["summary", { summary: "Hijack" }],
    ["depends_on_step_ids", { depends_on_step_ids: [] }],
    ["worker_pool_id", { worker_pool_id: "gpu" }],
    ["required", { required: false }],
  ])("a worker cannot change task content (step %s through update_step)", (_n, field) => {
    const h = base();
    const w = h.claimWith("a");
    rejectsAs(h, { type: "update_step", step_id: "a", status: "running", ...field }, w, "validation_error");
    rejectsAs(h, { type: "update_task", ops: [{ op: "update_step", step_id: "a", fields: field }] }, w, "tool_not_available");
    expect(st(h, "a")).toMatchObject({ title: "Step a", summary: "Do a", depends_on_step_ids: [], worker_pool_id: "default", required: true, status: "claimed" });
  });

  it("a worker can read the task's steps it can see", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"]), step("g", [], { worker_pool_id: "gpu" })]);
    const w = h.dispatch();
    expect(ids(q(h, w))).toEqual(["a"]);
    expect(ids(q(h, w, { statuses: ["pending", "ready"] }))).toEqual(["a", "b"]);
    const g = h.dispatch({ worker_pool_id: "gpu" });
    expect(ids(q(h, g))).toEqual(["g"]);
  });

  it("a worker can claim a step it may execute", () => {
    const h = base();
    const w = h.dispatch();
    expect(typesOf(h, { type: "claim_step", step_id: "c" }, w)).toEqual(["task_step_claimed"]);
    expect(st(h, "c")).toMatchObject({ status: "claimed", claimed_by_agent_id: w.agent_id, claimed_by_run_id: w.run_id });
  });

  it.each([
    ["claimed", "claimed", ["task_step_updated"]],
    ["running", "running", ["task_step_started"]],
    ["blocked", "blocked", ["task_step_blocked"]],
    ["completed", "completed", ["task_step_completed", "task_step_ready"]],
    ["failed", "failed", ["task_step_failed"]],
  ])("a worker can set its own claimed step's execution status to %s", (to, status, types) => {
    const h = base();
    const w = h.claimWith("a");
    expect(typesOf(h, { type: "update_step", step_id: "a", status: to }, w)).toEqual(types);
    expect(h.status("a")).toBe(status);
  });

  it("a worker can write result_summary and artifact_ids on its claimed step", () => {
    const h = base();
    const w = h.claimWith("a");
    h.ok({ type: "update_step", step_id: "a", status: "running", result_summary: "half", artifact_ids: ["art_1"] }, w);
    expect(st(h, "a")).toMatchObject({ result_summary: "half", artifact_ids: ["art_1"] });
    h.ok({ type: "update_step", step_id: "a", status: "completed", result_summary: "done", artifact_ids: ["art_1", "art_2"] }, w);
    expect(st(h, "a")).toMatchObject({ status: "completed", result_summary: "done", artifact_ids: ["art_1", "art_2"] });
    expect(attemptsOf(h, "a")[0]!.result_summary).toBe("done");
  });

  it("a worker cannot change other steps", () => {
    const h = base();
    const w1 = h.claimWith("a");
    const w2 = h.claimWith("c");
    rejectsAs(h, { type: "update_step", step_id: "c", status: "completed" }, w1, "permission_denied"); // held by another run
    rejectsAs(h, { type: "update_step", step_id: "d", status: "running" }, w1, "permission_denied"); // ready, held by nobody
    rejectsAs(h, { type: "update_step", step_id: "b", status: "failed" }, w1, "permission_denied"); // pending
    rejectsAs(h, { type: "append_progress", step_id: "c", summary: "mine now" }, w1, "permission_denied");
    expect(st(h, "c")).toMatchObject({ status: "claimed", claimed_by_run_id: w2.run_id });
  });

  it.each([
    ["add_step", { op: "add_step", step: step("x") }],
    ["delete_step", { op: "delete_step", step_id: "d" }],
    ["add_dependency", { op: "add_dependency", step_id: "d", depends_on_step_id: "c" }],
    ["remove_dependency", { op: "remove_dependency", step_id: "b", depends_on_step_id: "a" }],
    ["update_step depends_on_step_ids", { op: "update_step", step_id: "b", fields: { depends_on_step_ids: [] } }],
    ["cancel_step", { op: "cancel_step", step_id: "d" }],
  ])("a worker cannot change the DAG topology (%s)", (_n, op) => {
    const h = base();
    const w = h.claimWith("a");
    rejectsAs(h, { type: "update_task", ops: [op] }, w, "tool_not_available");
    expect([...h.state.steps.keys()]).toEqual(["a", "b", "c", "d"]);
    expect(st(h, "b").depends_on_step_ids).toEqual(["a"]);
  });
});
