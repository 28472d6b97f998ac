/** The WAL timeline's rows, filters, pages, export and slider scheduling, as pure functions of the WAL. */
import { describe, expect, it } from "vitest";
import { deliveriesOwed, type WalEvent } from "../../src/core/index.js";
import {
  clockOf,
  eventSummary,
  eventTypesOf,
  exportWalText,
  matches,
  perFrame,
  positionOf,
  rowOf,
  stepIdsOf,
  SUMMARY_MAX,
  TASK_LEVEL,
  TIMELINE_PAGE,
  timelinePage,
  walFileName,
  windowShowing,
} from "../../dashboard/src/model/timeline-model.js";
import { Harness, step } from "../core/harness.js";
import { systemCaller } from "../core/rules/support.js";

const ALL = { type: null, step: null } as const;
const actionId = (d: { value: unknown }) => (d.value as { action_id: string }).action_id;

/** A small task: two steps, an approval, a progress report, an update after dispatch, a failure and a completion. */
function smallWal(): WalEvent[] {
  const h = new Harness();
  h.create([step("fetch"), step("write", ["fetch"])]);
  const plan = h.ok({ type: "request_action", kind: "approval", prompt: "Approve the plan?" });
  h.ok({ type: "respond_action", action_id: actionId(plan), decision: "approved", comment: "ship it" });
  const w = h.claimWith("fetch");
  h.ok({ type: "update_task", ops: [{ op: "update_step", step_id: "fetch", fields: { summary: "Fetch twice" } }, { op: "add_step", step: step("check", ["write"]) }] });
  h.ok({ type: "append_progress", step_id: "fetch", phase: "download", summary: "3 of 4", counters: { files: 3 } }, w);
  h.ok({ type: "update_step", step_id: "fetch", status: "completed", result_summary: "4 files\nfetched", artifact_ids: ["a.txt", "b.txt"] }, w);
  const w2 = h.claimWith("write");
  h.ok({ type: "update_step", step_id: "write", status: "failed", reason: "disk full" }, w2);
  return h.wal;
}

/** `n` progress events of one step after a task_created (a long WAL without running the core n times). */
function longWal(n: number): WalEvent[] {
  const [created] = smallWal();
  const out: WalEvent[] = [created!];
  for (let seq = 2; seq <= n; seq += 1) {
    out.push({
      ...created!,
      wal_seq: seq,
      event_id: `evt_${seq}`,
      step_id: seq % 2 === 0 ? "fetch" : null,
      event_type: "task_progress",
      payload: { phase: "loop", summary: `tick ${seq}`, counters: null, output_refs: null, lease_expires_at: null },
    } as WalEvent);
  }
  return out;
}

describe("the timeline's rows", () => {
  it("Should show each event's wal_seq, time, type, step, actor and a summary of its payload", () => {
    const wal = smallWal();
    const rows = wal.map(rowOf);
    expect(rows.map((r) => r.walSeq)).toEqual(wal.map((_, i) => i + 1));
    const created = rows[0]!;
    expect(created).toMatchObject({ type: "task_created", stepId: null, actor: "orch (orch_run)", time: wal[0]!.created_at, summary: "“Plan” · 2 steps" });
    const by = (type: string) => wal.filter((e) => e.event_type === type).map(eventSummary);
    expect(by("action_requested")).toEqual(["approval · “Approve the plan?”"]);
    expect(by("action_resolved")).toEqual(["approved · by orchestrator · “ship it”"]);
    expect(by("task_updated")).toEqual(["1 update_step, 1 add_step · updated after dispatch: fetch"]);
    expect(by("task_progress")).toEqual(["download · “3 of 4” · files=3"]);
    // Line breaks in a payload never break the row.
    expect(by("task_step_completed")).toEqual(["“4 files fetched” · 2 artifacts"]);
    expect(by("task_step_failed")[0]).toMatch(/^disk full · attempt failed/);
    expect(by("task_step_claimed")[0]).toMatch(/^by \S+ · attempt 1 · run \S+$/);
    expect(by("worker_dispatched")[0]).toMatch(/^run \S+ · agent \S+ · pool default · max \d+ steps?$/);
    const claimed = wal.find((e) => e.event_type === "task_step_claimed")!;
    expect(rowOf(claimed).actor).toBe(`${claimed.actor_agent_id} (${claimed.actor_run_id})`);
  });

  it("Should say what webhook delivery events record: what was queued for which subscription, each try's outcome, a retry", () => {
    const h = new Harness();
    h.create([step("a")]);
    const filter = (webhook_id: string) => ({ webhook_id, events: ["task.created"], task_id: null, created_at: new Date(0).toISOString() });
    h.ok({ type: "queue_webhook_deliveries", deliveries: deliveriesOwed(h.wal, [filter("wh_a"), filter("wh_b")]) }, systemCaller);
    const [toA, toB] = [...h.state.index.pendingByWebhook.values()].flatMap((set) => [...set]);
    h.ok({ type: "record_webhook_tries", tries: [{ delivery_id: toA, status_code: 204, error: null }, { delivery_id: toB, status_code: null, error: "timed out" }], max_tries: 1, retry_base_ms: 1_000 }, systemCaller);
    h.ok({ type: "retry_webhook_delivery", delivery_id: toB }, systemCaller);
    const summaries = h.wal.slice(-3).map(eventSummary);
    expect(summaries).toEqual(["2 deliveries · task.created → wh_a, task.created → wh_b", "delivered (HTTP 204, try 1); failed (timed out, try 1)", `${toB} owed again`]);
  });

  it("Should keep a summary to one line of at most SUMMARY_MAX characters", () => {
    const [created] = smallWal();
    const long = { ...created!, payload: { ...(created as Extract<WalEvent, { event_type: "task_created" }>).payload, task: { ...(created as Extract<WalEvent, { event_type: "task_created" }>).payload.task, title: "x".repeat(500) } } } as WalEvent;
    const summary = eventSummary(long);
    expect(summary).toHaveLength(SUMMARY_MAX);
    expect(summary.endsWith("…")).toBe(true);
  });

  it("Should show the clock time of a timestamp and name the export file after the task", () => {
    expect(clockOf("2026-01-01T09:05:07.042Z")).toBe("09:05:07.042");
    expect(clockOf("not a time")).toBe("not a time");
    expect(walFileName("report-1")).toBe("report-1.wal.jsonl");
  });
});

describe("the timeline's filters", () => {
  it("Should offer the event types and the steps present in the WAL, sorted", () => {
    const wal = smallWal();
    expect(eventTypesOf(wal)).toEqual([...new Set(wal.map((e) => e.event_type))].sort());
    expect(eventTypesOf(wal)).toContain("task_step_failed");
    expect(stepIdsOf(wal)).toEqual(["fetch", "write"]);
  });

  it("Should keep only the events of the chosen type, the chosen step, or both; task-level ones with TASK_LEVEL", () => {
    const wal = smallWal();
    const seqs = (filter: { type: string | null; step: string | null }) => timelinePage(wal, filter, "oldest", 1_000).rows.map((r) => r.walSeq);
    const ofType = seqs({ type: "task_step_claimed", step: null });
    expect(ofType.map((s) => wal[s - 1]!.step_id)).toEqual(["fetch", "write"]);
    const ofStep = seqs({ type: null, step: "fetch" });
    expect(ofStep.length).toBeGreaterThan(3);
    expect(ofStep.every((s) => wal[s - 1]!.step_id === "fetch")).toBe(true);
    expect(seqs({ type: "task_step_claimed", step: "write" })).toEqual([ofType[1]]);
    const taskLevel = seqs({ type: null, step: TASK_LEVEL });
    expect(taskLevel[0]).toBe(1);
    expect(taskLevel.every((s) => wal[s - 1]!.step_id === null)).toBe(true);
    expect(ofStep.length + taskLevel.length + seqs({ type: null, step: "write" }).length).toBe(wal.length);
    expect(seqs({ type: "task_cancelled", step: null })).toEqual([]);
    expect(wal.every((e) => matches(e, ALL))).toBe(true);
  });
});

describe("the timeline's pages", () => {
  it("Should build only one page of rows from a 10,000-event WAL, newest or oldest first", () => {
    const wal = longWal(10_000);
    const newest = timelinePage(wal, ALL, "newest");
    expect(newest.rows).toHaveLength(TIMELINE_PAGE);
    expect(newest.rows[0]!.walSeq).toBe(10_000);
    expect(newest.rows.at(-1)!.walSeq).toBe(10_000 - TIMELINE_PAGE + 1);
    expect(newest).toMatchObject({ matched: 10_000, before: 0, remaining: 10_000 - TIMELINE_PAGE });
    const oldest = timelinePage(wal, ALL, "oldest");
    expect(oldest.rows.map((r) => r.walSeq).slice(0, 3)).toEqual([1, 2, 3]);
  });

  it("Should show more rows on demand and count what lies above and below a window", () => {
    const wal = longWal(1_000);
    expect(timelinePage(wal, ALL, "newest", 2 * TIMELINE_PAGE).rows).toHaveLength(2 * TIMELINE_PAGE);
    const window = timelinePage(wal, ALL, "oldest", 100, 400);
    expect(window.rows.map((r) => r.walSeq)).toEqual(Array.from({ length: 100 }, (_, i) => 401 + i));
    expect(window).toMatchObject({ matched: 1_000, before: 400, remaining: 500 });
    const filtered = timelinePage(wal, { type: null, step: "fetch" }, "newest", 10);
    expect(filtered.matched).toBe(500);
    expect(filtered.rows.map((r) => r.walSeq)).toEqual([1_000, 998, 996, 994, 992, 990, 988, 986, 984, 982]);
    const end = timelinePage(wal, ALL, "oldest", TIMELINE_PAGE, 950);
    expect(end).toMatchObject({ before: 950, remaining: 0 });
    expect(end.rows).toHaveLength(50);
  });

  it("Should move the window to the page holding a sought wal_seq, and leave it when the row is shown", () => {
    const wal = longWal(10_000);
    const position = positionOf(wal, ALL, "newest", 1);
    expect(position).toBe(9_999);
    const window = windowShowing(position, { start: 0, count: TIMELINE_PAGE });
    expect(window).toEqual({ start: 9_800, count: TIMELINE_PAGE });
    expect(timelinePage(wal, ALL, "newest", window.count, window.start).rows.some((r) => r.walSeq === 1)).toBe(true);
    const shown = { start: 0, count: 3 * TIMELINE_PAGE };
    expect(windowShowing(positionOf(wal, ALL, "newest", 9_500), shown)).toBe(shown);
    // A filtered-out event has no position: the window stays.
    expect(positionOf(wal, { type: null, step: "fetch" }, "oldest", 3)).toBe(-1);
    expect(positionOf(wal, { type: null, step: "fetch" }, "oldest", 4)).toBe(1);
  });
});

describe("the WAL export", () => {
  it("Should read every page after the last wal_seq read and join them as JSON Lines", async () => {
    const wal = longWal(25);
    const asked: number[] = [];
    const text = await exportWalText(async (after) => {
      asked.push(after);
      const events = wal.slice(after, after + 10);
      return { events, text: events.map((e) => JSON.stringify(e)).join("\n"), last_wal_seq: wal.length };
    });
    expect(asked).toEqual([0, 10, 20]);
    expect(text.endsWith("\n")).toBe(true);
    expect(text.trimEnd().split("\n").map((l) => (JSON.parse(l) as WalEvent).wal_seq)).toEqual(wal.map((e) => e.wal_seq));
  });

  it("Should export an empty WAL as empty text", async () => {
    expect(await exportWalText(async () => ({ events: [], text: "", last_wal_seq: 0 }))).toBe("");
  });
});

describe("the replay slider's scheduling", () => {
  it("Should seek once per frame with the latest value, and not after a cancel", () => {
    const frames: (() => void)[] = [];
    const seeks: number[] = [];
    const seek = perFrame<number>((n) => seeks.push(n), (cb) => frames.push(cb));
    for (let n = 1; n <= 500; n += 1) seek.push(n);
    expect(frames).toHaveLength(1);
    frames.shift()!();
    expect(seeks).toEqual([500]);
    seek.push(7);
    seek.push(3);
    seek.cancel();
    frames.shift()!();
    expect(seeks).toEqual([500]);
    seek.push(9);
    frames.shift()!();
    expect(seeks).toEqual([500, 9]);
  });
});
