/**
 * Task tools (docs/model.md "Tools"): the rules of agent.task_create. Every rejected command is checked to write nothing.
 */
import { describe, expect, it } from "vitest";
import { replay } from "../../../../src/core/index.js";
import { Harness, observer, orchestrator, step, TASK } from "../../harness.js";
import { types, payload, ghost, rejectsAs, st } from "../support.js";

describe("Task Tools", () => {
  describe("agent.task_create", () => {
    it.each([
      ["a worker", ghost, "tool_not_available"],
      ["an observer", observer, "tool_not_available"],
    ])("only the orchestrator may use it (%s gets %s)", (_n, actor, code) => {
      const h = new Harness();
      rejectsAs(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "P", steps: [] }, actor, code);
    });

    it("takes the whole DAG: every step is created at once with its defaults", () => {
      const h = new Harness();
      h.create([step("a"), step("b", ["a"], { required: false, worker_pool_id: "gpu" }), step("c", ["a", "b"])]);
      expect([...h.state.steps.keys()]).toEqual(["a", "b", "c"]);
      expect(st(h, "a")).toMatchObject({ required: true, worker_pool_id: "default", depends_on_step_ids: [], status: "ready", title: "Step a", summary: "Do a" });
      expect(st(h, "b")).toMatchObject({ required: false, worker_pool_id: "gpu", depends_on_step_ids: ["a"], status: "pending" });
      expect(st(h, "c")).toMatchObject({ depends_on_step_ids: ["a", "b"], status: "pending" });
      expect(h.state.task).toMatchObject({ task_id: TASK, wal_name: "plan", title: "Plan", created_by_agent_id: "orch", created_by_run_id: "orch_run" });
    });

    it.each(["A", "a/b", "..", ".hidden", "", "x".repeat(65), "a b", "ä"])("validates step ids: %j is a validation_error", (bad) => {
      const h = new Harness();
      rejectsAs(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "P", steps: [step(bad)] }, orchestrator, "validation_error");
      rejectsAs(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "P", steps: [step("a", [bad])] }, orchestrator, "validation_error");
    });

    it("validates dependencies: a dependency on no step is unknown_dependency", () => {
      const h = new Harness();
      const e = rejectsAs(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "P", steps: [step("a"), step("b", ["zz"])] }, orchestrator, "unknown_dependency");
      expect(e.details).toMatchObject({ step_id: "b", depends_on_step_id: "zz" });
    });

    it.each([
      ["self loop", [step("a", ["a"])]],
      ["two-step loop", [step("a", ["b"]), step("b", ["a"])]],
      ["loop behind a root", [step("r"), step("a", ["r", "c"]), step("b", ["a"]), step("c", ["b"])]],
    ])("checks for cycles: %s is dependency_cycle", (_n, steps) => {
      const h = new Harness();
      rejectsAs(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "P", steps }, orchestrator, "dependency_cycle");
    });

    it("checks for duplicate nodes: a repeated step id is duplicate_step", () => {
      const h = new Harness();
      rejectsAs(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "P", steps: [step("a"), step("b"), step("a")] }, orchestrator, "duplicate_step");
    });

    it.each(["step_id", "title", "summary", "depends_on_step_ids"])("checks required fields: a step without %s is a validation_error", (field) => {
      const h = new Harness();
      const s: Record<string, unknown> = step("a");
      delete s[field];
      rejectsAs(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "P", steps: [s] }, orchestrator, "validation_error");
    });

    it.each(["task_id", "wal_name", "title", "steps"])("checks required task fields: a task without %s is a validation_error", (field) => {
      const h = new Harness();
      const cmd: Record<string, unknown> = { type: "create_task", task_id: TASK, wal_name: "plan", title: "P", steps: [step("a")] };
      delete cmd[field];
      rejectsAs(h, cmd, orchestrator, "validation_error");
    });

    it("creates the in-memory DAG and writes task_created first", () => {
      const h = new Harness();
      const d = h.create([step("a"), step("b", ["a"]), step("c")]);
      expect(h.types(d)).toEqual(["task_created", "task_step_ready", "task_step_ready", "task_running"]);
      expect(d.events.map((e) => e.step_id)).toEqual([null, "a", "c", null]);
      expect(d.events[0]!.payload).toMatchObject({ task: { task_id: TASK, wal_name: "plan" }, steps: [{ step_id: "a" }, { step_id: "b" }, { step_id: "c" }] });
      expect(h.state.task!.status).toBe("running");
      expect(replay(h.wal)).toEqual(h.state);
    });
  });
});
