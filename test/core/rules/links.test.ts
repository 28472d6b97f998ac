/**
 * @module The task's side of the session's task graph: set_blockers records which tasks block this one (their
 * `blocks` links, blocker not completed) as task_blockers_updated, idempotent by version; while any blocker is
 * listed, dispatch and claims are refused and the task's normalized status is blocked.
 */
import { describe, expect, it } from "vitest";
import { blockedBy, normalizedTaskStatus, parseWalJsonl, projectEvent, replay, taskSummary, toWalJsonl } from "../../../src/core/index.js";
import { Harness, observer, orchestrator, step } from "../harness.js";
import { consistent, rejectsAs, setStep, systemCaller, typesOf } from "./support.js";

const block = (version: number, ...blockers: string[]) => ({ type: "set_blockers", version, blocked_by: blockers });

/** A running task with one ready step. */
function task(): Harness {
  const h = new Harness();
  h.create([step("a"), step("b", ["a"])]);
  return h;
}

describe("set_blockers", () => {
  it("Should start a task with no blockers at version 0", () => {
    const h = task();
    expect(h.state.task).toMatchObject({ blocked_by: [], blockers_version: 0 });
    expect(blockedBy(h.state)).toEqual([]);
  });

  it("Should record a newer version as task_blockers_updated by the system, blockers sorted and without repeats", () => {
    const h = task();
    expect(typesOf(h, block(1, "z", "m", "z"), systemCaller)).toEqual(["task_blockers_updated"]);
    const event = h.wal[h.wal.length - 1]!;
    expect(event).toMatchObject({ actor_agent_id: "system", step_id: null, payload: { version: 1, blocked_by: ["m", "z"] } });
    expect(h.state.task).toMatchObject({ blocked_by: ["m", "z"], blockers_version: 1 });
    expect(blockedBy(h.state)).toEqual(["m", "z"]);
    expect(h.state.task!.updated_at).toBe(event.created_at);
    consistent(h);
  });

  it("Should write nothing for a version that is not newer than the recorded one (a re-sent or stale push)", () => {
    const h = task();
    h.ok(block(3, "x"), systemCaller);
    const walLength = h.wal.length;
    for (const stale of [block(3, "y"), block(2), block(1, "x", "y")]) {
      const d = h.ok(stale, systemCaller);
      expect(d.events).toEqual([]);
    }
    expect(h.wal.length).toBe(walLength);
    expect(h.state.task).toMatchObject({ blocked_by: ["x"], blockers_version: 3 });
    // A later version may jump ahead (pushes that never arrived are superseded).
    expect(typesOf(h, block(7), systemCaller)).toEqual(["task_blockers_updated"]);
    expect(h.state.task).toMatchObject({ blocked_by: [], blockers_version: 7 });
  });

  it("Should refuse set_blockers from every agent role with tool_not_available and a bad version with validation_error", () => {
    const h = task();
    const w = h.dispatch();
    for (const actor of [orchestrator, w, observer]) rejectsAs(h, block(1, "x"), actor, "tool_not_available");
    rejectsAs(h, block(0, "x"), systemCaller, "validation_error");
    rejectsAs(h, { type: "set_blockers", version: 1, blocked_by: ["Not An Id"] }, systemCaller, "validation_error");
  });

  it("Should record blockers on a terminal task too (a fact, changing nothing it could do)", () => {
    const h = task();
    h.ok({ type: "cancel_task" });
    expect(typesOf(h, block(1, "x"), systemCaller)).toEqual(["task_blockers_updated"]);
    expect(normalizedTaskStatus(h.state)).toBe("cancelled");
  });
});

describe("a task held by blockers", () => {
  it("Should refuse dispatch and claims with task_not_dispatchable naming the blockers, and allow them once the list is empty", () => {
    const h = task();
    const w = h.dispatch();
    h.ok(block(1, "upstream"), systemCaller);
    expect(rejectsAs(h, { type: "dispatch_worker" }, orchestrator, "task_not_dispatchable").details).toEqual({ blocked_by: ["upstream"] });
    expect(rejectsAs(h, { type: "claim_step", step_id: "a" }, w, "task_not_dispatchable").details).toEqual({ blocked_by: ["upstream"] });
    expect(rejectsAs(h, { type: "claim_next" }, w, "task_not_dispatchable").details).toEqual({ blocked_by: ["upstream"] });
    h.ok(block(2), systemCaller);
    expect(typesOf(h, { type: "claim_step", step_id: "a" }, w)).toEqual(["task_step_claimed"]);
    expect(typesOf(h, { type: "dispatch_worker" })).toEqual(["worker_dispatched"]);
    consistent(h);
  });

  it("Should let a step held before the blockers arrived go on and settle", () => {
    const h = task();
    const w = h.claimWith("a");
    h.ok(block(1, "upstream"), systemCaller);
    expect(typesOf(h, setStep("a", "completed"), w)).toContain("task_step_completed");
    expect(h.state.steps.get("b")!.status).toBe("ready");
    consistent(h);
  });

  it("Should show a pending or running task as blocked while blockers are listed, and its own status after", () => {
    const pending = new Harness();
    pending.create([]);
    pending.ok(block(1, "upstream"), systemCaller);
    expect(pending.state.task!.status).toBe("pending");
    expect(normalizedTaskStatus(pending.state)).toBe("blocked");
    const running = task();
    expect(running.state.task!.status).toBe("running");
    running.ok(block(1, "upstream"), systemCaller);
    expect(normalizedTaskStatus(running.state)).toBe("blocked");
    expect(taskSummary(running.state).normalized_status).toBe("blocked");
    running.ok(block(2), systemCaller);
    expect(normalizedTaskStatus(running.state)).toBe("running");
    // A paused task stays paused: its own stop comes first.
    const paused = task();
    paused.ok({ type: "pause_task" });
    paused.ok(block(1, "upstream"), systemCaller);
    expect(normalizedTaskStatus(paused.state)).toBe("paused");
  });

  it("Should rebuild blockers from the WAL (JSON Lines round trip) exactly as live, and from a WAL written before them as none", () => {
    const h = task();
    const w = h.dispatch();
    h.ok(block(1, "x", "y"), systemCaller);
    h.ok(block(2, "y"), systemCaller);
    h.ok(block(2, "z"), systemCaller);
    const rebuilt = replay(parseWalJsonl(toWalJsonl(h.wal)));
    expect(rebuilt).toEqual(h.state);
    expect(rebuilt.task).toMatchObject({ blocked_by: ["y"], blockers_version: 2 });
    expect(rejectsAs(h, { type: "claim_next" }, w, "task_not_dispatchable").details).toEqual({ blocked_by: ["y"] });
    // A WAL with no task_blockers_updated (every WAL before links existed) replays to an unblocked task.
    const old = task();
    expect(replay(parseWalJsonl(toWalJsonl(old.wal))).task).toMatchObject({ blocked_by: [], blockers_version: 0 });
  });

  it("Should project task_blockers_updated as task.dependency.updated with the blockers", () => {
    const h = task();
    h.ok(block(4, "upstream"), systemCaller);
    const events = projectEvent(h.wal[h.wal.length - 1]!);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: "task.dependency.updated", payload: { blockedBy: ["upstream"], blockersVersion: 4, actorAgentId: "system" } });
  });
});
