import { describe, expect, it } from "vitest";
import { StepSchema, stepSnapshot, taskReadModel } from "../../src/core/index.js";
import { indexEntryOf } from "../../durable-objects/task/index-entry.js";
import { buildSessionSnapshot } from "../../durable-objects/session/session-snapshot.js";
import { countTasks, isHeldUp } from "../../durable-objects/session/task-counts.js";
import type { ListedTask } from "../../src/contract/index.js";
import { Harness, step } from "./harness.js";
import { validateSnapshot } from "./runtime-event-contract.js";

const MINUTE = 60_000;

function busyTask(): Harness {
  const h = new Harness();
  h.create([step("a"), step("b"), step("c", ["a", "b"]), step("d", ["c"])]);
  const w = h.claimWith("a");
  h.ok({ type: "update_step", step_id: "a", status: "completed", artifact_ids: ["report.md"] }, w);
  h.claimWith("b");
  h.now += 2 * MINUTE;
  h.ok({ type: "reconcile_leases" });
  const w2 = h.claimWith("b");
  h.ok({ type: "update_step", step_id: "b", status: "failed", reason: "source down" }, w2);
  return h;
}

/** The harness always names its task task_1: the session sees each under its own id. */
const listed = (h: Harness, taskId: string, index_state: ListedTask["index_state"] = "current"): ListedTask => ({ ...indexEntryOf(h.state), task_id: taskId, wal_name: taskId, index_state });

describe("task read model (snapshot projection)", () => {
  it("Should validate the task record, its attempts and relationships against the published snapshot schema", () => {
    const h = busyTask();
    const model = taskReadModel(h.state);
    const snapshot = { schemaVersion: "0.4.0", sessionId: "sess_1", threads: [], tasks: [model.task], taskGraph: model.taskGraph, blockedTasks: model.blockedTasks, deliveryState: model.deliveryState };
    const valid: boolean = validateSnapshot(snapshot);
    expect(valid, JSON.stringify(validateSnapshot.errors)).toBe(true);
  });

  it("Should keep every attempt, marking a lapsed lease unknown (never success) with its native status", () => {
    const model = taskReadModel(busyTask().state);
    const b = model.attempts.filter((a) => a.stepId === "b");
    expect(b.map((a) => [a.nativeStatus, a.status])).toEqual([["lost", "unknown"], ["failed", "failed"]]);
    expect(model.attempts.find((a) => a.stepId === "a")!.outputRefs).toEqual([{ kind: "artifact", artifactId: "report.md" }]);
  });

  it("Should list a failed step and the pending step it holds up as blocked, with the blockers", () => {
    const model = taskReadModel(busyTask().state);
    expect(model.blockedTasks).toEqual([
      expect.objectContaining({ stepId: "b", nativeStatus: "failed", reason: "source down" }),
      expect.objectContaining({ stepId: "c", nativeStatus: "pending", blockers: [{ stepId: "b", nativeStatus: "failed" }] }),
    ]);
  });

  it("Should give the graph's dependency edges, spawned runs and produced artifacts", () => {
    const graph = taskReadModel(busyTask().state).taskGraph;
    expect(graph.edges).toEqual([
      { kind: "blocked_by", from: "c", to: "a" },
      { kind: "blocked_by", from: "c", to: "b" },
      { kind: "blocked_by", from: "d", to: "c" },
    ]);
    expect(graph.spawnedWorkers).toHaveLength(3);
    expect(graph.producedArtifacts).toEqual([{ kind: "produced_artifact", stepId: "a", artifactId: "report.md" }]);
  });
});

describe("session snapshot", () => {
  it("Should validate against the published snapshot schema and count active, terminal, failed, lost and stale tasks", () => {
    const running = busyTask();
    const done = new Harness();
    done.create([step("a")]);
    done.complete("a");
    done.ok({ type: "complete_task" });
    const failed = new Harness();
    failed.create([step("a")]);
    failed.ok({ type: "fail_task" });
    const rows = [listed(running, "t_running", "stale"), listed(done, "t_done"), listed(failed, "t_failed")];
    const page = { listed: 1, total: 1, next: null };
    const snapshot = buildSessionSnapshot({ session_id: "sess_1", created_at: "2026-01-01T00:00:00.000Z" }, {
      counts: countTasks(rows),
      updatedAt: rows[0]!.updated_at,
      tasks: rows.filter((t) => !t.terminal),
      blocked: rows.filter(isHeldUp).map((task) => ({ task, actionIds: [] })),
      recentTerminal: rows.filter((t) => t.terminal),
      pages: { tasks: page, blockedTasks: page, recentTerminal: { ...page, listed: 2, total: 2 } },
    });
    const valid: boolean = validateSnapshot(snapshot);
    expect(valid, JSON.stringify(validateSnapshot.errors)).toBe(true);
    expect(snapshot.task_summary).toMatchObject({ active: 1, terminal: 2, failed: 1, lost: 1, stale: 1 });
    expect(snapshot.tasks.find((t) => t.taskId === "t_running")!.status).toBe("stale");
    expect(snapshot.taskSummary.recentTerminal.map((t) => t.taskId).sort()).toEqual(["t_done", "t_failed"]);
    expect(snapshot.blockedTasks).toEqual([expect.objectContaining({ taskId: "t_running", failedSteps: 1 })]);
  });
});

describe("stepSnapshot (what a write answer carries while later commands of its batch apply)", () => {
  it("Should equal a deep clone, and stay as it was when the step changes afterwards", () => {
    const h = busyTask();
    for (const original of h.state.steps.values()) {
      const snapshot = stepSnapshot(original);
      const clone = structuredClone(original);
      expect(snapshot).toEqual(clone);
      original.attempt_ids.push("att_later");
      original.artifact_ids.push("later.md");
      original.depends_on_step_ids.push("later");
      original.status = "cancelled";
      expect(snapshot).toEqual(clone);
    }
  });

  it("Should cover every nested field of a step: all others are primitives (a new object field needs copying)", () => {
    const arrays = new Set(["depends_on_step_ids", "attempt_ids", "artifact_ids"]);
    for (const s of busyTask().state.steps.values()) {
      expect(Object.keys(s).sort()).toEqual(Object.keys(StepSchema.shape).sort());
      for (const [field, value] of Object.entries(s)) if (typeof value === "object" && value !== null) expect(arrays, field).toContain(field);
    }
  });
});
