/** The session view's model: which tasks it shows and in what order, the session's counts, parents, the inbox, the refresher. */
import { describe, expect, it } from "vitest";
import type { InboxAction, ListedTask } from "../../src/client/index.js";
import { buildSessionSnapshot } from "../../durable-objects/session/session-snapshot.js";
import { countTasks } from "../../durable-objects/session/task-counts.js";
import {
  ago,
  ANY_STATUS,
  canAnswer,
  Coalescer,
  countsOfRows,
  countsOfSnapshot,
  DEFAULT_FILTER,
  hiddenTerminal,
  inboxOrder,
  listStatus,
  parentOf,
  RECENTLY_ENDED,
  recentlyEnded,
  recentlyEndedCaption,
  remedyLabel,
  statusCounts,
  stepSummary,
  type TaskFilter,
  visibleTasks,
} from "../../dashboard/src/model/session-model.js";

const noSteps = { pending: 0, ready: 0, claimed: 0, running: 0, blocked: 0, completed: 0, failed: 0, cancelled: 0 };

function row(id: string, over: Partial<ListedTask> = {}): ListedTask {
  const native = over.native_status ?? "running";
  const terminal = native === "completed" || native === "failed" || native === "cancelled";
  return {
    task_id: id, wal_name: id, title: `Task ${id}`, native_status: native, status: over.status ?? (native === "pending" ? "queued" : native),
    step_counts: { ...noSteps }, total_steps: 0, active_runs: 0, lost_attempts: 0, terminal, created_at: "2026-01-01T00:00:00.000Z",
    updated_at: "2026-01-01T00:00:00.000Z", wal_seq: 1, next_deadline_at: null, open_action_count: 0, index_state: "current", ...over,
  } as ListedTask;
}

const rows: ListedTask[] = [
  row("a", { native_status: "pending", status: "queued", created_at: "2026-01-01T00:00:01.000Z", updated_at: "2026-01-01T00:00:05.000Z" }),
  row("b", { native_status: "running", status: "waiting_permission", open_action_count: 2, lost_attempts: 1, created_at: "2026-01-01T00:00:02.000Z", updated_at: "2026-01-01T00:00:09.000Z" }),
  row("c", { native_status: "blocked", status: "blocked", created_at: "2026-01-01T00:00:03.000Z", updated_at: "2026-01-01T00:00:02.000Z", index_state: "stale" }),
  row("d", { native_status: "completed", status: "completed", created_at: "2026-01-01T00:00:04.000Z", updated_at: "2026-01-01T00:00:07.000Z" }),
  row("e", { native_status: "failed", status: "failed", lost_attempts: 3, created_at: "2026-01-01T00:00:05.000Z", updated_at: "2026-01-01T00:00:08.000Z" }),
  row("f", { native_status: "running", status: "running", parent_task_id: "b", created_at: "2026-01-01T00:00:06.000Z", updated_at: "2026-01-01T00:00:09.000Z" }),
];

describe("the session model", () => {
  it("Should count the session as task_summary does: live waiting, blocked and lost, terminal failures, open actions", () => {
    expect(countsOfRows(rows)).toEqual({ active: 4, terminal: 2, failed: 1, lost: 1, waiting: 2, blocked: 1, open_actions: 2, stale: 1 });
  });

  it("Should agree with the server's session snapshot on every count", () => {
    const none = { listed: 0, total: 0, next: null };
    const parts = { counts: countTasks(rows), updatedAt: "2026-01-01T00:00:09.000Z", tasks: [], blocked: [], recentTerminal: [], pages: { tasks: none, blockedTasks: none, recentTerminal: none } };
    const snapshot = buildSessionSnapshot({ session_id: "s", created_at: "2026-01-01T00:00:00.000Z" }, parts);
    expect(countsOfSnapshot(snapshot)).toEqual(countsOfRows(rows));
  });

  it("Should hide terminal tasks unless asked, and filter by normalized status", () => {
    expect(visibleTasks(rows, DEFAULT_FILTER).map((t) => t.task_id).sort()).toEqual(["a", "b", "c", "f"]);
    expect(visibleTasks(rows, { ...DEFAULT_FILTER, includeTerminal: true }).map((t) => t.task_id).sort()).toEqual(["a", "b", "c", "d", "e", "f"]);
    expect(visibleTasks(rows, { ...DEFAULT_FILTER, status: "waiting_permission" }).map((t) => t.task_id)).toEqual(["b"]);
    // A terminal status shows nothing while terminal tasks are hidden.
    expect(visibleTasks(rows, { ...DEFAULT_FILTER, status: "failed" })).toEqual([]);
    expect(visibleTasks(rows, { ...DEFAULT_FILTER, status: "failed", includeTerminal: true }).map((t) => t.task_id)).toEqual(["e"]);
  });

  it("Should order by last update, newest first, ties by task id, or in creation order", () => {
    const all: TaskFilter = { ...DEFAULT_FILTER, includeTerminal: true, status: ANY_STATUS };
    expect(visibleTasks(rows, all).map((t) => t.task_id)).toEqual(["b", "f", "e", "d", "a", "c"]);
    expect(visibleTasks(rows, { ...all, sort: "created" }).map((t) => t.task_id)).toEqual(["a", "b", "c", "d", "e", "f"]);
    // The input is left as it was.
    expect(rows.map((t) => t.task_id)).toEqual(["a", "b", "c", "d", "e", "f"]);
  });

  it("Should count each status for the filter's labels, within the terminal choice", () => {
    expect(Object.fromEntries(statusCounts(rows, false))).toEqual({ queued: 1, waiting_permission: 1, blocked: 1, running: 1 });
    expect(statusCounts(rows, true).get("completed")).toBe(1);
  });

  it("Should hide the session's terminal count while terminal tasks are hidden, none when they are shown or not yet counted", () => {
    const counts = countsOfRows(rows);
    expect(hiddenTerminal(DEFAULT_FILTER, counts)).toBe(2);
    expect(hiddenTerminal({ ...DEFAULT_FILTER, includeTerminal: true }, counts)).toBe(0);
    expect(hiddenTerminal(DEFAULT_FILTER, null)).toBe(0);
  });

  it("Should say how many rows are shown and how many terminal tasks are hidden, with the button that shows them", () => {
    expect(listStatus(DEFAULT_FILTER, { shown: 4, listed: 4, total: 4, hidden: 2 })).toEqual({ text: "4 shown · 2 terminal tasks hidden", remedies: ["show_terminal"], showsRecentlyEnded: false });
    expect(listStatus(DEFAULT_FILTER, { shown: 4, listed: 4, total: 4, hidden: 1 }).text).toBe("4 shown · 1 terminal task hidden");
    // Nothing hidden: no button; a list cut at the read limit says so.
    expect(listStatus({ ...DEFAULT_FILTER, includeTerminal: true }, { shown: 6, listed: 6, total: 6, hidden: 0 })).toEqual({ text: "6 shown", remedies: [], showsRecentlyEnded: false });
    expect(listStatus(DEFAULT_FILTER, { shown: 2000, listed: 2000, total: 2500, hidden: 0 }).text).toBe("2000 shown (the first 2000 of 2500 tasks read)");
  });

  it("Should never leave a bare empty list while the session has tasks: all ended shows the recent ones and one click shows them all", () => {
    // Every task ended, terminal ones hidden (the first look after the demo).
    const allEnded = listStatus(DEFAULT_FILTER, { shown: 0, listed: 0, total: 0, hidden: 3 });
    expect(allEnded).toEqual({ text: "No live task: the session's 3 tasks have all ended.", remedies: ["show_terminal"], showsRecentlyEnded: true });
    expect(listStatus(DEFAULT_FILTER, { shown: 0, listed: 0, total: 0, hidden: 1 }).text).toBe("No live task: the session's only task has ended.");
    expect(remedyLabel("show_terminal", 3)).toBe("Show the 3 terminal tasks");
    expect(remedyLabel("show_terminal", 1)).toBe("Show the terminal task");
    // A status no listed task has: every status back, and the hidden terminal tasks when there are some.
    expect(listStatus({ ...DEFAULT_FILTER, status: "failed" }, { shown: 0, listed: 4, total: 4, hidden: 2 })).toEqual({
      text: "No task has status “failed” among the live ones; 2 terminal tasks are hidden.",
      remedies: ["any_status", "show_terminal"],
      showsRecentlyEnded: false,
    });
    expect(listStatus({ ...DEFAULT_FILTER, status: "waiting_input", includeTerminal: true }, { shown: 0, listed: 6, total: 6, hidden: 0 })).toEqual({
      text: "No task has status “waiting input”.",
      remedies: ["any_status"],
      showsRecentlyEnded: false,
    });
    expect(remedyLabel("any_status", 0)).toBe("Show all statuses");
    // Only a session with no task at all says so, whatever the filter.
    for (const filter of [DEFAULT_FILTER, { ...DEFAULT_FILTER, includeTerminal: true }, { ...DEFAULT_FILTER, status: "running" as const }]) {
      expect(listStatus(filter, { shown: 0, listed: 0, total: 0, hidden: 0 })).toEqual({ text: "This session has no task yet.", remedies: [], showsRecentlyEnded: false });
    }
  });

  it("Should pick the most recently ended tasks, newest first, at most the limit, and caption them", () => {
    expect(recentlyEnded(rows).map((t) => t.task_id)).toEqual(["e", "d"]);
    expect(recentlyEnded(rows, 1).map((t) => t.task_id)).toEqual(["e"]);
    const many = Array.from({ length: RECENTLY_ENDED + 3 }, (_, i) => row(`t${i}`, { native_status: "completed", updated_at: `2026-01-01T00:00:${String(10 + i).padStart(2, "0")}.000Z` }));
    expect(recentlyEnded(many).map((t) => t.task_id)).toEqual(many.map((t) => t.task_id).reverse().slice(0, RECENTLY_ENDED));
    expect(recentlyEndedCaption(5, 8)).toBe("The 5 most recently ended of 8 terminal tasks");
    expect(recentlyEndedCaption(2, 2)).toBe("Recently ended tasks");
  });

  it("Should name a child task's parent, with its title when the list holds it", () => {
    const byId = new Map(rows.map((t) => [t.task_id, t]));
    expect(parentOf(rows[5]!, byId)).toEqual({ taskId: "b", title: "Task b" });
    expect(parentOf(row("g", { parent_task_id: "elsewhere" }), byId)).toEqual({ taskId: "elsewhere", title: null });
    expect(parentOf(row("h", { delegated_from: { task_id: "a", step_id: "s1", delegation_id: "d1" } }), byId)).toEqual({ taskId: "a", title: "Task a" });
    expect(parentOf(rows[0]!, byId)).toBeNull();
  });

  it("Should summarize steps as completed of total plus the other statuses that have steps", () => {
    expect(stepSummary({ total_steps: 5, step_counts: { ...noSteps, completed: 2, running: 1, failed: 2 } })).toEqual({ completed: 2, total: 5, others: [["running", 1], ["failed", 2]] });
  });

  it("Should let only the orchestrator and approvers answer actions", () => {
    expect(["orchestrator", "approver", "observer", "worker", "admin"].filter(canAnswer)).toEqual(["orchestrator", "approver"]);
  });

  it("Should list the inbox newest first, open actions only", () => {
    const action = (id: string, created: string, status: "open" | "resolved" = "open") => ({ action_id: id, created_at: created, status }) as InboxAction;
    const ordered = inboxOrder([action("x", "2026-01-01T00:00:01Z"), action("y", "2026-01-01T00:00:03Z"), action("z", "2026-01-01T00:00:02Z", "resolved"), action("w", "2026-01-01T00:00:03Z")]);
    expect(ordered.map((a) => a.action_id)).toEqual(["y", "w", "x"]);
  });

  it("Should say how long ago a time was", () => {
    const now = Date.parse("2026-01-02T00:00:00Z");
    expect(ago("2026-01-01T23:59:30Z", now)).toBe("30 s ago");
    expect(ago("2026-01-01T23:50:00Z", now)).toBe("10 min ago");
    expect(ago("2026-01-01T21:00:00Z", now)).toBe("3 h ago");
    expect(ago("2025-12-28T00:00:00Z", now)).toBe("5 d ago");
  });
});

describe("the session refresher", () => {
  it("Should run one read at a time and fold every trigger during a read into one more read", async () => {
    const releases: (() => void)[] = [];
    let inFlight = 0;
    let most = 0;
    const reader = new Coalescer(async () => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      await new Promise<void>((resolve) => releases.push(resolve));
      inFlight -= 1;
    });
    reader.trigger();
    for (let i = 0; i < 10; i++) reader.trigger();
    expect(reader.reads).toBe(1);
    releases.shift()!();
    await Promise.resolve();
    await new Promise((r) => setTimeout(r, 0));
    expect(reader.reads).toBe(2);
    releases.shift()!();
    await reader.idle();
    expect(reader.reads).toBe(2);
    expect(most).toBe(1);
    // Once idle, a trigger reads again.
    reader.trigger();
    expect(reader.reads).toBe(3);
    releases.shift()!();
    await reader.idle();
  });

  it("Should keep reading after a failed read", async () => {
    let calls = 0;
    const reader = new Coalescer(async () => {
      calls += 1;
      if (calls === 1) throw new Error("network down");
    });
    reader.trigger();
    await reader.idle();
    reader.trigger();
    await reader.idle();
    expect(calls).toBe(2);
  });
});
