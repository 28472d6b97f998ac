/**
 * Task tools (docs/model.md "Tools"): the rules of agent.task_complete, agent.task_fail and agent.task_cancel. Every rejected command is checked to write nothing.
 */
import { describe, expect, it } from "vitest";
import { replay } from "../../../../src/core/index.js";
import { Harness, observer, orchestrator, step, stranger, T0 } from "../../harness.js";
import { types, payload, iso, rejectsAs, st, runOf, base, byType } from "../support.js";

describe("Task Tools", () => {
  describe("agent.task_complete / agent.task_fail / agent.task_cancel", () => {
    it.each([
      ["complete_task", "a worker"],
      ["fail_task", "a worker"],
      ["cancel_task", "a worker"],
      ["complete_task", "an observer"],
      ["fail_task", "an observer"],
      ["cancel_task", "an observer"],
    ])("only the orchestrator may %s (%s gets tool_not_available)", (type, who) => {
      const h = new Harness();
      h.create([step("a", [], { required: false })]);
      const actor = who === "a worker" ? h.dispatch() : observer;
      rejectsAs(h, { type }, actor, "tool_not_available");
      rejectsAs(h, { type }, stranger, "permission_denied");
      expect(h.state.task!.status).toBe("running");
    });

    it("they close the whole task DAG", () => {
      for (const [type, status] of [
        ["complete_task", "completed"],
        ["fail_task", "failed"],
        ["cancel_task", "cancelled"],
      ] as const) {
        const h = new Harness();
        h.create([step("a", [], { required: false }), step("b", ["a"], { required: false })]);
        h.ok({ type, reason: "done" });
        expect(h.state.task).toMatchObject({ status, status_reason: "done", ended_at: iso(T0) });
        expect(h.state.index.statusCounts.ready + h.state.index.statusCounts.pending + h.state.index.held.size).toBe(0);
        rejectsAs(h, { type }, orchestrator, "task_terminal");
        rejectsAs(h, { type: "dispatch_worker" }, orchestrator, "task_terminal");
      }
    });

    it.each([
      ["fail_task", "task_step_failed", "failed", "task_failed"],
      ["cancel_task", "task_step_cancelled", "cancelled", "task_cancelled"],
    ])("%s force-stops every unfinished step, claimed and running included", (type, stepEvent, status, reason) => {
      const h = new Harness();
      h.create([step("p0"), step("p", ["p0"]), step("r"), step("c"), step("u"), step("b")]);
      const wc = h.claimWith("c");
      const wu = h.claimWith("u");
      h.ok({ type: "update_step", step_id: "u", status: "running" }, wu);
      const wb = h.claimWith("b");
      h.ok({ type: "update_step", step_id: "b", status: "blocked" }, wb);
      const d = h.ok({ type, reason: "abort" });
      const stepEvents = d.events.filter((e) => e.step_id !== null);
      expect(stepEvents.map((e) => [e.event_type, e.step_id])).toEqual(["p0", "p", "r", "c", "u", "b"].map((id) => [stepEvent, id]));
      for (const e of stepEvents) expect(e.payload).toMatchObject({ reason });
      for (const id of ["p0", "p", "r", "c", "u", "b"]) expect(st(h, id)).toMatchObject({ status, status_reason: reason, claimed_by_run_id: null, lease_expires_at: null });
      if (type === "fail_task") for (const id of ["c", "u"]) expect(st(h, id).result_summary).toBe("task_failed");
      expect(runOf(h, wc)).toMatchObject({ status: "cancelling", cancel_request: { reason } });
      expect(runOf(h, wu)).toMatchObject({ status: "cancelling", cancel_request: { reason } });
      expect(h.types(d).at(-1)).toBe(reason);
      expect(replay(h.wal)).toEqual(h.state);
    });

    it.each(["fail_task", "cancel_task"])("%s requests cancellation of the worker runs of claimed/running steps before writing the step's terminal event", (type) => {
      const h = base();
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      const attemptId = st(h, "a").current_attempt_id;
      const d = h.ok({ type });
      const request = d.events.findIndex((e) => e.event_type === "worker_run_cancel_requested" && (e.payload as { run_id: string }).run_id === w.run_id);
      const stepEnd = d.events.findIndex((e) => e.step_id === "a");
      expect(request).toBeGreaterThanOrEqual(0);
      expect(request).toBeLessThan(stepEnd);
      expect(d.events[request]!.payload).toEqual({ run_id: w.run_id, reason: type === "fail_task" ? "task_failed" : "task_cancelled", step_id: "a", attempt_id: attemptId, deadline_at: iso(T0 + 30_000) });
      expect(byType(d.events, "worker_run_ended")).toEqual([]);
    });

    it.each(["fail_task", "cancel_task"])("%s does not use the worker_cancelled fallback; the run's later end skips its step", (type) => {
      const h = base();
      const w = h.claimWith("a");
      const d = h.ok({ type });
      expect(d.events.some((e) => (e.payload as { reason?: unknown }).reason === "worker_cancelled")).toBe(false);
      const stepStatus = h.status("a");
      // The run, asked to cancel, may end with its result; it changes no step.
      const late = h.ok({ type: "finish_run", run_id: w.run_id!, outcome: "finished", result: { transcript: "t" } }, w);
      expect(late.events.map((e) => [e.event_type, e.step_id])).toEqual([["worker_run_ended", null]]);
      expect(h.status("a")).toBe(stepStatus);
      expect(runOf(h, w).result).toEqual({ transcript: "t" });
      // The run has ended: its token is spent.
      rejectsAs(h, { type: "finish_run", run_id: w.run_id!, outcome: "cancelled" }, w, "unauthorized");
      expect(byType(h.wal, "task_step_failed").filter((e) => (e.payload as { reason: string }).reason.startsWith("worker_"))).toEqual([]);
    });

    it("they write task_completed, task_failed and task_cancelled", () => {
      for (const [type, event] of [
        ["complete_task", "task_completed"],
        ["fail_task", "task_failed"],
        ["cancel_task", "task_cancelled"],
      ] as const) {
        const h = new Harness();
        h.create([step("a", [], { required: false })]);
        const d = h.ok({ type, reason: "why" });
        expect(h.types(d).at(-1)).toBe(event);
        expect(d.events.at(-1)).toMatchObject({ step_id: null, payload: { reason: "why" } });
        expect(byType(h.wal, event)).toHaveLength(1);
      }
    });
  });
});
