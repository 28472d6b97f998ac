/**
 * @module The pure rules of durable schedules (src/core/schedules/): occurrences of a cron in a time zone within
 * start_at and end_at (DST days in Europe/Paris included), which occurrences are due or missed given the cursor and
 * the catch-up window, the overlap decision, an occurrence's task id, and the job events' envelope against the
 * published schema.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_LIMITS,
  holdsTrigger,
  nextOccurrence,
  occurrenceTaskBody,
  occurrencesBetween,
  occurrenceTaskId,
  overlapDecision,
  scanDue,
  SCHEDULE_EVENT_TYPES,
  scheduleEvent,
  type ScheduleTiming,
  scheduleTriggerRef,
  templateError,
  timingError,
} from "../../../src/core/index.js";
import { ID_PATTERN } from "../../../src/core/index.js";
import { validateRuntimeEvent } from "../runtime-event-contract.js";

const utc = (iso: string) => Date.parse(iso);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const timing = (cron: string, timezone = "UTC", start: string | null = null, end: string | null = null): ScheduleTiming => ({
  cron,
  timezone,
  start_at_ms: start === null ? null : utc(start),
  end_at_ms: end === null ? null : utc(end),
});

describe("occurrences", () => {
  it("Should read 5 fields minute first and 6 fields second first, strictly after the given time", () => {
    expect(iso(nextOccurrence(timing("*/15 * * * *"), utc("2030-01-01T10:00:00Z")))).toBe("2030-01-01T10:15:00.000Z");
    expect(iso(nextOccurrence(timing("*/15 * * * *"), utc("2030-01-01T10:00:00.001Z")))).toBe("2030-01-01T10:15:00.000Z");
    expect(iso(nextOccurrence(timing("*/10 * * * * *"), utc("2030-01-01T10:00:05Z")))).toBe("2030-01-01T10:00:10.000Z");
  });

  it("Should read the fields in the schedule's time zone", () => {
    // 09:00 in New York is 14:00 UTC in January (EST) and 13:00 UTC in July (EDT).
    expect(iso(nextOccurrence(timing("0 9 * * *", "America/New_York"), utc("2030-01-10T00:00:00Z")))).toBe("2030-01-10T14:00:00.000Z");
    expect(iso(nextOccurrence(timing("0 9 * * *", "America/New_York"), utc("2030-07-10T00:00:00Z")))).toBe("2030-07-10T13:00:00.000Z");
  });

  it("Should keep within start_at and end_at", () => {
    const t = timing("0 * * * *", "UTC", "2030-01-01T05:30:00Z", "2030-01-01T08:00:00Z");
    expect(occurrencesBetween(t, utc("2030-01-01T00:00:00Z"), utc("2030-01-02T00:00:00Z"), 100).map(iso)).toEqual([
      "2030-01-01T06:00:00.000Z",
      "2030-01-01T07:00:00.000Z",
      "2030-01-01T08:00:00.000Z",
    ]);
    expect(nextOccurrence(t, utc("2030-01-01T08:00:00Z"))).toBeNull();
    // A start_at exactly on an occurrence includes it.
    expect(iso(nextOccurrence(timing("0 * * * *", "UTC", "2030-01-01T05:00:00Z"), 0))).toBe("2030-01-01T05:00:00.000Z");
  });

  describe("a daily 02:30 in Europe/Paris on the DST days of 2026", () => {
    const paris = timing("30 2 * * *", "Europe/Paris");
    const day = (from: string, to: string) => occurrencesBetween(paris, utc(from), utc(to), 10).map(iso);

    it("Should run once on the spring-forward day, at 03:00 CEST (02:30 does not exist: the clocks go from 02:00 to 03:00)", () => {
      // The day before at 02:30 CET (01:30Z), the day after at 02:30 CEST (00:30Z).
      expect(day("2026-03-27T22:00:00Z", "2026-03-28T22:00:00Z")).toEqual(["2026-03-28T01:30:00.000Z"]);
      expect(day("2026-03-29T22:00:00Z", "2026-03-30T22:00:00Z")).toEqual(["2026-03-30T00:30:00.000Z"]);
      const onTheDay = day("2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z");
      expect(onTheDay).toEqual([SPRING_FORWARD_RUN]);
    });

    it("Should run once on the fall-back day, at the first 02:30 (it happens twice: in CEST, then in CET)", () => {
      const onTheDay = day("2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z");
      expect(onTheDay).toEqual([FALL_BACK_RUN]);
      expect(day("2026-10-25T23:00:00Z", "2026-10-26T23:00:00Z")).toEqual(["2026-10-26T01:30:00.000Z"]);
    });
  });

  it("Should refuse a cron of another field count, an unknown time zone, a bad field, end_at before start_at, and a window with no occurrence", () => {
    expect(timingError(timing("* * * *"))?.details).toMatchObject({ fields: 4 });
    expect(timingError(timing("0 0 0 * * * *"))?.details).toMatchObject({ fields: 7 });
    expect(timingError(timing("@daily"))?.code).toBe("validation_error");
    expect(timingError(timing("0 9 * * *", "Mars/Olympus"))?.details).toEqual({ timezone: "Mars/Olympus" });
    expect(timingError(timing("61 * * * *"))?.code).toBe("validation_error");
    expect(timingError(timing("0 * * * *", "UTC", "2030-01-02T00:00:00Z", "2030-01-01T00:00:00Z"))?.message).toMatch(/end_at must be after start_at/);
    expect(timingError(timing("0 0 1 1 *", "UTC", "2030-02-01T00:00:00Z", "2030-03-01T00:00:00Z"))?.message).toMatch(/no occurrence/);
    expect(timingError(timing("0 9 * * 1-5", "Europe/Paris"))).toBeNull();
    expect(timingError(timing("*/5 * * * * *"))).toBeNull();
  });

  it("Should list occurrences in strictly increasing order, each the next after the one before (property)", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("*/7 * * * *", "0 */3 * * *", "15 4 * * 1", "*/20 * * * * *", "0 0 29 2 *", "30 2 * * *"),
        fc.constantFrom("UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"),
        fc.integer({ min: utc("2026-01-01T00:00:00Z"), max: utc("2034-01-01T00:00:00Z") }),
        (cron, tz, from) => {
          const t = timing(cron, tz);
          const list = occurrencesBetween(t, from, from + 40 * 86_400_000, 20);
          let before = from;
          for (const at of list) {
            expect(at).toBeGreaterThan(before);
            expect(at % 1000).toBe(0);
            expect(nextOccurrence(t, before)).toBe(at);
            before = at;
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe("due and missed occurrences", () => {
  const hourly = timing("0 * * * *");

  it("Should start what fell within the catch-up window and count what fell before it as missed", () => {
    // Down from 10:30 to 13:00:30: 11:00 and 12:00 are missed, 13:00 is 30 s late (window 60 s).
    const scan = scanDue(hourly, utc("2030-01-01T10:30:00Z"), utc("2030-01-01T13:00:30Z"), 60_000);
    expect(scan.start.map(iso)).toEqual(["2030-01-01T13:00:00.000Z"]);
    expect(scan.missed).toEqual({ count: 2, first_at: utc("2030-01-01T11:00:00Z"), last_at: utc("2030-01-01T12:00:00Z"), at_least: false });
    expect(iso(scan.cursor)).toBe("2030-01-01T13:00:00.000Z");
    expect(scan.more).toBe(false);
  });

  it("Should start every occurrence of a stop shorter than the window, and none (only count them) of one outside it", () => {
    const inside = scanDue(hourly, utc("2030-01-01T10:30:00Z"), utc("2030-01-01T13:10:00Z"), 4 * 3_600_000);
    expect(inside.start).toHaveLength(3);
    expect(inside.missed.count).toBe(0);
    const outside = scanDue(hourly, utc("2030-01-01T10:30:00Z"), utc("2030-01-01T13:10:00Z"), 60_000);
    expect(outside.start).toEqual([]);
    expect(outside.missed.count).toBe(3);
  });

  it("Should find nothing before the next occurrence, and leave the cursor where it was", () => {
    expect(scanDue(hourly, utc("2030-01-01T10:00:00Z"), utc("2030-01-01T10:59:59Z"), 60_000)).toEqual({
      start: [],
      missed: { count: 0, first_at: null, last_at: null, at_least: false },
      cursor: utc("2030-01-01T10:00:00Z"),
      more: false,
    });
  });

  it("Should catch up a long stop of a frequent schedule in bounded passes, the missed count a lower bound once it jumps", () => {
    const everySecond = timing("* * * * * *");
    const now = utc("2030-01-02T00:00:00Z");
    const first = scanDue(everySecond, utc("2030-01-01T00:00:00Z"), now, 60_000, 100);
    expect(first.start).toEqual([]);
    expect(first.missed.count).toBe(100);
    expect(first.missed.at_least).toBe(true);
    expect(first.cursor).toBe(now - 60_000 - 1);
    expect(first.more).toBe(true);
    const second = scanDue(everySecond, first.cursor, now, 60_000, 100);
    expect(second.start).toHaveLength(61);
    expect(second.missed.count).toBe(0);
    expect(second.cursor).toBe(now);
    expect(second.more).toBe(false);
  });

  it("Should decide every occurrence at most once over any sequence of passes, each exactly once unless a pass jumped (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 5 * 3_600_000 }), { minLength: 1, maxLength: 12 }), fc.integer({ min: 0, max: 3 * 3_600_000 }), (gaps, window) => {
        const t = timing("*/20 * * * *");
        const start = utc("2030-01-01T00:00:00Z");
        let cursor = start;
        let now = start;
        let counted = 0;
        let jumped = false;
        const started = new Set<number>();
        for (const gap of gaps) {
          now += gap;
          for (;;) {
            const scan = scanDue(t, cursor, now, window, 7);
            for (const at of scan.start) {
              expect(now - at).toBeLessThanOrEqual(window);
              expect(started.has(at)).toBe(false);
              started.add(at);
            }
            counted += scan.start.length + scan.missed.count;
            jumped ||= scan.missed.at_least;
            expect(scan.cursor).toBeGreaterThanOrEqual(cursor);
            cursor = scan.cursor;
            if (!scan.more) break;
          }
        }
        // Every occurrence between the first cursor and the last `now` is started or counted missed, none twice; a
        // pass that jumped over missed ones counts fewer (its count is a lower bound).
        const total = occurrencesBetween(t, start, now, 100_000).length;
        if (jumped) expect(counted).toBeLessThan(total);
        else expect(counted).toBe(total);
      }),
      { numRuns: 200 },
    );
  });
});

describe("overlap", () => {
  it("Should start whenever the previous task is terminal or there is none, whatever the policy", () => {
    for (const policy of ["skip", "allow", "buffer_one", "cancel_previous"] as const) {
      expect(overlapDecision(policy, "none", false)).toBe("start");
      expect(overlapDecision(policy, "terminal", false)).toBe("start");
    }
  });

  it("Should skip, start, buffer one (then skip) or cancel the previous while it runs", () => {
    expect(overlapDecision("skip", "active", false)).toBe("skip");
    expect(overlapDecision("allow", "active", false)).toBe("start");
    expect(overlapDecision("buffer_one", "active", false)).toBe("buffer");
    expect(overlapDecision("buffer_one", "active", true)).toBe("skip");
    expect(overlapDecision("cancel_previous", "active", false)).toBe("cancel_previous");
  });
});

describe("an occurrence's task", () => {
  it("Should be named {schedule_id}-{yyyymmddthhmmssz}, a valid task id for the longest schedule id", () => {
    expect(occurrenceTaskId("nightly", utc("2026-03-29T00:30:05Z"))).toBe("nightly-20260329t003005z");
    const longest = "s".repeat(47);
    expect(ID_PATTERN.test(occurrenceTaskId(longest, utc("2099-12-31T23:59:59Z")))).toBe(true);
  });

  it("Should carry the schedule_trigger ref it is recognised by", () => {
    const ref = scheduleTriggerRef("nightly", utc("2026-03-29T00:30:00Z"));
    expect(ref).toEqual({ kind: "schedule_trigger", schedule_id: "nightly", scheduled_at: "2026-03-29T00:30:00.000Z" });
    expect(holdsTrigger([{ kind: "file", uri: "x" }, { ...ref }], ref)).toBe(true);
    expect(holdsTrigger([{ ...ref, scheduled_at: "2026-03-30T00:30:00.000Z" }], ref)).toBe(false);
    expect(holdsTrigger(null, ref)).toBe(false);
  });
});

describe("the template", () => {
  const ctx = { actor: { role: "orchestrator" as const, session_id: "s", agent_id: "orchestrator", run_id: null }, now: utc("2030-01-01T00:00:00Z"), newId: () => "id", limits: DEFAULT_LIMITS };
  const stepOf = (id: string, deps: string[] = []) => ({ step_id: id, title: id, summary: "", depends_on_step_ids: deps });

  it("Should make the create body of an occurrence: the derived id as task id and wal name, the template's refs and the trigger", () => {
    const body = occurrenceTaskBody({ title: "T", steps: [], input_refs: [{ kind: "file", uri: "r" }] }, "nightly", utc("2030-01-01T02:30:00Z"));
    expect(body).toEqual({
      title: "T",
      steps: [],
      task_id: "nightly-20300101t023000z",
      wal_name: "nightly-20300101t023000z",
      input_refs: [{ kind: "file", uri: "r" }, { kind: "schedule_trigger", schedule_id: "nightly", scheduled_at: "2030-01-01T02:30:00.000Z" }],
    });
  });

  it("Should refuse a template no occurrence could create, with the create's own error", () => {
    expect(templateError({ title: "T", steps: [stepOf("a")] }, "nightly", ctx)).toBeNull();
    expect(templateError({ title: "T", steps: [stepOf("a", ["b"]), stepOf("b", ["a"])] }, "nightly", ctx)?.code).toBe("dependency_cycle");
    expect(templateError({ title: "T", steps: [stepOf("a", ["ghost"])] }, "nightly", ctx)?.code).toBe("unknown_dependency");
    expect(templateError({ title: "T", steps: [stepOf("a"), stepOf("a")] }, "nightly", ctx)?.code).toBe("duplicate_step");
  });
});

describe("job events", () => {
  it("Should be valid Agent Runtime events of every type the schedule emits", () => {
    for (const [i, type] of SCHEDULE_EVENT_TYPES.entries()) {
      const event = scheduleEvent(
        { type, ...(type.startsWith("job.item") ? { taskId: "nightly-20260329t003005z", status: "running" } : {}), phase: type === "job.progress" ? "missed" : undefined, payload: { n: i } },
        { eventId: `01J${i}`, timestamp: "2030-01-01T00:00:00.000Z", sequence: i + 1, sessionId: "sess_1", scheduleId: "nightly" },
      );
      expect(validateRuntimeEvent(event), JSON.stringify(validateRuntimeEvent.errors)).toBe(true);
      expect(event).toMatchObject({ type, jobId: "nightly", sessionId: "sess_1", sequence: i + 1 });
    }
  });
});

// What croner does on the DST days, as the schedule docs state it (docs/api.md "Schedules").
const SPRING_FORWARD_RUN = "2026-03-29T01:00:00.000Z";
const FALL_BACK_RUN = "2026-10-25T00:30:00.000Z";
