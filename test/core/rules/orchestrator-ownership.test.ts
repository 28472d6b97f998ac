/**
 * Who owns what (docs/model.md "Roles"): one test (or table row) per rule. Every rejected command is checked to write nothing.
 */
import { describe, expect, it } from "vitest";
import { Harness, observer, step, stranger, TASK } from "../harness.js";
import { types, ghost, systemCaller, rejectsAs, typesOf, q, ids, qErr, st, runOf, base } from "./support.js";

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

});
