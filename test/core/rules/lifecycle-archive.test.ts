/**
 * @module Archive (docs/model.md "Archive and retention"): the orchestrator archives a terminal task, which keeps its
 * native status and shows as archived; a live task is refused with invalid_transition and nothing written; a second
 * archive writes nothing; with a retention period the event records when the storage goes.
 */
import { describe, expect, it } from "vitest";
import { normalizedTaskStatus, projectEvent, retentionDeadline, retentionHold } from "../../../src/core/index.js";
import { a2aClient, Harness, observer, orchestrator, step, stranger } from "../harness.js";
import { consistent, rejectsAs, types } from "./support.js";

const DAY_MS = 86_400_000;

function ended(how: "complete_task" | "fail_task" | "cancel_task" = "cancel_task"): Harness {
  const h = new Harness();
  h.create(how === "complete_task" ? [] : [step("a")]);
  h.ok({ type: how, reason: "over" });
  return h;
}

describe("archiving a task", () => {
  it.each(["complete_task", "fail_task", "cancel_task"] as const)("Should archive a task ended by %s: task_archived, normalized archived, native status kept", (how) => {
    const h = ended(how);
    const native = h.state.task!.status;
    const endedAt = h.state.task!.updated_at;
    h.now += 1_000;
    expect(types(h.ok({ type: "archive_task", reason: "tidy" }))).toEqual(["task_archived"]);
    expect(h.state.task).toMatchObject({ status: native, archived_at: new Date(h.now).toISOString(), delete_after: null, updated_at: endedAt });
    expect(normalizedTaskStatus(h.state)).toBe("archived");
    expect(retentionDeadline(h.state)).toBeNull();
    consistent(h);
  });

  it.each([
    ["pending", (h: Harness) => h.create([])],
    ["running", (h: Harness) => h.create([step("a")])],
    ["paused", (h: Harness) => (h.create([step("a")]), h.ok({ type: "pause_task" }))],
    ["blocked", (h: Harness) => (h.create([step("a")]), h.ok({ type: "block_task" }))],
  ] as const)("Should refuse to archive a %s task with invalid_transition, writing nothing", (status, make) => {
    const h = new Harness();
    make(h);
    expect(h.state.task!.status).toBe(status);
    const error = rejectsAs(h, { type: "archive_task" }, orchestrator, "invalid_transition");
    expect(error.details).toMatchObject({ status });
    expect(h.state.task!.archived_at).toBeNull();
  });

  it("Should answer a second archive without writing anything (idempotent)", () => {
    const h = ended();
    h.ok({ type: "archive_task" });
    const first = h.state.task!.archived_at;
    h.now += 5_000;
    const again = h.ok({ type: "archive_task", reason: "again" });
    expect(again.events).toEqual([]);
    expect(h.state.task!.archived_at).toBe(first);
  });

  it("Should record the retention deadline, archived_at plus RETENTION_DAYS, in the event", () => {
    const h = ended();
    h.limits = { ...h.limits, retentionDays: 3 };
    const d = h.ok({ type: "archive_task" });
    const at = new Date(h.now + 3 * DAY_MS).toISOString();
    expect(d.events[0]!.payload).toEqual({ reason: null, delete_after: at });
    expect(h.state.task!.delete_after).toBe(at);
    expect(retentionDeadline(h.state)).toBe(h.now + 3 * DAY_MS);
    // A later change of the setting does not move a recorded deadline: replay reads the event.
    h.limits = { ...h.limits, retentionDays: 1 };
    consistent(h);
    expect(h.state.task!.delete_after).toBe(at);
  });

  it("Should project task.archived with status archived and the deadline", () => {
    const h = ended();
    h.limits = { ...h.limits, retentionDays: 2 };
    const d = h.ok({ type: "archive_task", reason: "tidy" });
    const [event, ...more] = projectEvent(d.events[0]!);
    expect(more).toEqual([]);
    expect(event).toMatchObject({ type: "task.archived", status: "archived", statusReason: "tidy", payload: { deleteAfter: (d.events[0]!.payload as { delete_after: string }).delete_after, actorAgentId: "orch" } });
  });

  it("Should let only the session's orchestrator archive", () => {
    const h = ended();
    rejectsAs(h, { type: "archive_task" }, observer, "tool_not_available");
    rejectsAs(h, { type: "archive_task" }, a2aClient, "tool_not_available");
    rejectsAs(h, { type: "archive_task" }, stranger, "permission_denied");
  });
});

describe("what holds an archived task's storage", () => {
  it("Should hold a task while a run it asked to cancel may still hand in its result", () => {
    const h = new Harness();
    h.create([step("a")]);
    h.claimWith("a");
    h.ok({ type: "cancel_task" });
    h.ok({ type: "archive_task" });
    expect(retentionHold(h.state)).toBe("cancelling_run");
  });

  it("Should hold a child task until its result reached its parent", () => {
    const h = new Harness();
    h.create([step("a")], { delegated_from: { task_id: "parent", step_id: "s", delegation_id: "d1" } });
    h.ok({ type: "cancel_task" });
    h.ok({ type: "archive_task" });
    expect(retentionHold(h.state)).toBe("outbound_work");
  });

  it("Should hold nothing for an ended task with no runs, delegations or reports owed", () => {
    const h = ended();
    h.ok({ type: "archive_task" });
    expect(retentionHold(h.state)).toBeNull();
  });
});
