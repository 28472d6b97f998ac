/** The schedules panel's model: who reads schedules, each one's next run, its latest runs and their outcome. */
import { describe, expect, it } from "vitest";
import type { OccurrenceOutcome, Schedule, ScheduleRun } from "../../src/client/index.js";
import { canReadSchedules, hasTask, latestRuns, noNextRun, outcomeBadge, SHOWN_RUNS, until, utcMinute } from "../../dashboard/src/model/schedule-model.js";

function run(i: number, outcome: OccurrenceOutcome = "completed"): ScheduleRun {
  return { scheduled_at: `2026-12-0${i}T03:00:00.000Z`, task_id: `nightly-2026120${i}t030000z`, outcome, trigger: "cron" };
}

function schedule(over: Partial<Schedule> = {}): Schedule {
  return {
    schedule_id: "nightly", session_id: "sess_1", cron: "0 3 * * *", timezone: "UTC", overlap: "skip", catchup_window_ms: 60_000,
    start_at: null, end_at: null, paused: false, task: {}, archive_after_days: null, created_at: "2026-12-01T00:00:00.000Z", created_by_agent_id: "orch",
    next_run_at: "2026-12-07T03:00:00.000Z", recent_runs: [], missed: 0, skipped: 0, ...over,
  };
}

describe("the schedules panel's model", () => {
  it("Should let every role but a worker read schedules", () => {
    for (const role of ["admin", "orchestrator", "observer", "approver"]) expect(canReadSchedules(role), role).toBe(true);
    expect(canReadSchedules("worker")).toBe(false);
  });

  it("Should show the newest runs first, at most SHOWN_RUNS", () => {
    const runs = [5, 4, 3, 2, 1].map((i) => run(i));
    expect(latestRuns(schedule({ recent_runs: runs })).map((r) => r.task_id)).toEqual(runs.slice(0, SHOWN_RUNS).map((r) => r.task_id));
    expect(latestRuns(schedule())).toEqual([]);
  });

  it("Should say paused, or that no run is left, instead of a next run time", () => {
    expect(noNextRun(schedule())).toBeNull();
    expect(noNextRun(schedule({ paused: true, next_run_at: null }))).toBe("paused");
    expect(noNextRun(schedule({ next_run_at: null }))).toBe("no run left");
  });

  it("Should link a run to its task only when the occurrence created one", () => {
    for (const o of ["running", "completed", "failed", "cancelled"] as const) expect(hasTask(run(1, o)), o).toBe(true);
    for (const o of ["pending", "skipped", "buffered", "create_failed", "abandoned"] as const) expect(hasTask(run(1, o)), o).toBe(false);
    expect(outcomeBadge("create_failed")).toBe("failed");
    expect(outcomeBadge("pending")).toBe("queued");
  });

  it("Should write times to the minute in UTC and say how far ahead they are", () => {
    expect(utcMinute("2027-01-01T01:00:00+01:00")).toBe("2027-01-01 00:00 UTC");
    const now = Date.parse("2026-12-06T00:00:00.000Z");
    expect(until("2026-12-06T00:00:30.000Z", now)).toBe("in 30 s");
    expect(until("2026-12-06T00:10:00.000Z", now)).toBe("in 10 min");
    expect(until("2026-12-06T05:00:00.000Z", now)).toBe("in 5 h");
    expect(until("2027-01-01T00:00:00.000Z", now)).toBe("in 26 d");
    expect(until("2026-12-05T00:00:00.000Z", now)).toBe("now");
  });
});
