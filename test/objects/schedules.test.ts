/**
 * Durable schedules, driven by their alarm: each test sets the clock the schedule object reads (its `clock` field,
 * in the future, so the real alarm never fires during a test) and runs the alarm itself (runDurableObjectAlarm).
 * Every overlap policy; a stop across three occurrences caught up inside and outside the catch-up window; a crash
 * between deciding an occurrence and creating its task (exactly one task, whether the create's answer was lost or
 * the create never happened); pause and resume (a paused schedule misses nothing); trigger now; delete while an
 * occurrence runs; the events stream, resumable, its events valid against the published schema.
 */
import { Validator } from "@cfworker/json-schema";
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { OccurrencePorts } from "../../durable-objects/schedule/occurrence-ports.js";
import type { ScheduleObject } from "../../durable-objects/schedule/schedule-object.js";
import type { ScheduleRpc } from "../../durable-objects/schedule/schedule-rpc.js";
import eventSchemaText from "../fixtures/agentruntime-schemas/agentruntime-event.schema.json?raw";
import { call, newSession, type TestSession } from "../support/helpers.js";
import { openStream } from "../support/sse.js";
import { bindings, eventually, expectError, expectOk } from "../support/support.js";
import { nextOccurrence } from "../../src/core/index.js";

const at = (hhmmss: string) => Date.parse(`2031-01-01T${hhmmss}Z`);
const stubOf = (s: TestSession, id: string) => bindings.SCHEDULES.get(bindings.SCHEDULES.idFromName(`${s.sid}/${id}`));
const schedulesPath = (s: TestSession) => `/v1/sessions/${s.sid}/schedules`;

/** Runs `fn` inside the schedule's object (its stub is typed by the RPC interface, the instance is the class). */
function inObject<R>(s: TestSession, id: string, fn: (instance: ScheduleObject) => R): Promise<R> {
  return runInDurableObject(stubOf(s, id), (instance: ScheduleRpc) => fn(instance as unknown as ScheduleObject));
}

/** Sets the time the schedule object reads. */
async function setClock(s: TestSession, id: string, ms: number): Promise<void> {
  await inObject(s, id, (instance) => {
    instance.clock = () => ms;
  });
}

/** Moves the clock to `ms` and runs the schedule's alarm (it must be set). */
async function tick(s: TestSession, id: string, ms: number): Promise<void> {
  await setClock(s, id, ms);
  expect(await runDurableObjectAlarm(stubOf(s, id))).toBe(true);
}

/** A schedule every ten minutes, created at 00:05 of the test's day. */
async function schedule(s: TestSession, id: string, extra: Record<string, unknown> = {}): Promise<any> {
  await setClock(s, id, at("00:05:00"));
  return expectOk(await call("POST", schedulesPath(s), s.orch, { schedule_id: id, cron: "*/10 * * * *", task: { title: "Nightly report", steps: [] }, ...extra }), 201);
}

const get = async (s: TestSession, id: string) => expectOk(await call("GET", `${schedulesPath(s)}/${id}`, s.observer));
const taskOf = async (s: TestSession, tid: string) => call("GET", `/v1/sessions/${s.sid}/tasks/${tid}`, s.observer);
const outcomes = (view: any) => view.recent_runs.map((r: any) => `${r.task_id}:${r.outcome}`);
/** The session's tasks whose id starts with the schedule's. */
async function tasksOf(s: TestSession, id: string): Promise<string[]> {
  const page = expectOk(await call("GET", `/v1/sessions/${s.sid}/tasks?include_terminal=true&limit=500`, s.observer));
  return page.tasks.map((t: any) => t.task_id as string).filter((t: string) => t.startsWith(`${id}-`)).sort();
}
/** The session's index lists exactly these tasks of the schedule (an occurrence's task reaches the index by its push, after its create answered). */
async function expectTasks(s: TestSession, id: string, expected: string[]): Promise<void> {
  await eventually(async () => expect(await tasksOf(s, id)).toEqual(expected));
}
const complete = async (s: TestSession, tid: string) => expectOk(await call("POST", `/v1/sessions/${s.sid}/tasks/${tid}/complete`, s.orch, {}));

describe("a schedule's occurrences", () => {
  it("Should create one task per occurrence, named after it, carrying its schedule_trigger ref, and learn its end", async () => {
    const s = await newSession();
    const created = await schedule(s, "daily", { timezone: "Europe/Paris", overlap: "allow" });
    expect(created).toMatchObject({ schedule_id: "daily", cron: "*/10 * * * *", timezone: "Europe/Paris", overlap: "allow", catchup_window_ms: 60_000, paused: false, next_run_at: "2031-01-01T00:10:00.000Z", recent_runs: [], missed: 0 });
    await tick(s, "daily", at("00:10:01"));
    const task = expectOk(await taskOf(s, "daily-20310101t001000z")).task;
    expect(task.input_refs).toEqual([{ kind: "schedule_trigger", schedule_id: "daily", scheduled_at: "2031-01-01T00:10:00.000Z" }]);
    expect(task.title).toBe("Nightly report");
    expect(outcomes(await get(s, "daily"))).toEqual(["daily-20310101t001000z:running"]);
    await complete(s, "daily-20310101t001000z");
    await tick(s, "daily", at("00:10:07"));
    const view = await get(s, "daily");
    expect(outcomes(view)).toEqual(["daily-20310101t001000z:completed"]);
    expect(view.next_run_at).toBe("2031-01-01T00:20:00.000Z");
    // A task that fails ends its occurrence failed (job.item.failed).
    await tick(s, "daily", at("00:20:01"));
    expectOk(await call("POST", `/v1/sessions/${s.sid}/tasks/daily-20310101t002000z/fail`, s.orch, { reason: "no data" }));
    await tick(s, "daily", at("00:20:07"));
    expect(outcomes(await get(s, "daily"))).toEqual(["daily-20310101t002000z:failed", "daily-20310101t001000z:completed"]);
    expect((await eventsOf(s, "daily")).at(-1)).toMatchObject({ type: "job.item.failed", status: "failed", taskId: "daily-20310101t002000z" });
  });
});

describe("overlap policies", () => {
  it("skip: an occurrence while the previous task runs is skipped and counted", async () => {
    const s = await newSession();
    await schedule(s, "skipper");
    await tick(s, "skipper", at("00:10:01"));
    await tick(s, "skipper", at("00:20:01"));
    const view = await get(s, "skipper");
    expect(outcomes(view)).toEqual(["skipper-20310101t002000z:skipped", "skipper-20310101t001000z:running"]);
    expect(view.skipped).toBe(1);
    await expectTasks(s, "skipper", ["skipper-20310101t001000z"]);
    // Once the previous task ended, the next occurrence starts.
    await complete(s, "skipper-20310101t001000z");
    await tick(s, "skipper", at("00:30:01"));
    await expectTasks(s, "skipper", ["skipper-20310101t001000z", "skipper-20310101t003000z"]);
  });

  it("allow: every occurrence starts", async () => {
    const s = await newSession();
    await schedule(s, "allower", { overlap: "allow" });
    await tick(s, "allower", at("00:10:01"));
    await tick(s, "allower", at("00:20:01"));
    await expectTasks(s, "allower", ["allower-20310101t001000z", "allower-20310101t002000z"]);
  });

  it("buffer_one: one occurrence waits for the previous task's end (a later one is skipped), then starts", async () => {
    const s = await newSession();
    await schedule(s, "buffer", { overlap: "buffer_one" });
    await tick(s, "buffer", at("00:10:01"));
    await tick(s, "buffer", at("00:20:01"));
    await tick(s, "buffer", at("00:30:01"));
    expect(outcomes(await get(s, "buffer"))).toEqual(["buffer-20310101t003000z:skipped", "buffer-20310101t002000z:buffered", "buffer-20310101t001000z:running"]);
    await expectTasks(s, "buffer", ["buffer-20310101t001000z"]);
    await complete(s, "buffer-20310101t001000z");
    await tick(s, "buffer", at("00:30:07"));
    expect(outcomes(await get(s, "buffer"))).toEqual(["buffer-20310101t003000z:skipped", "buffer-20310101t002000z:running", "buffer-20310101t001000z:completed"]);
    await expectTasks(s, "buffer", ["buffer-20310101t001000z", "buffer-20310101t002000z"]);
  });

  it("cancel_previous: the running previous task is cancelled, then the occurrence starts", async () => {
    const s = await newSession();
    await schedule(s, "replacer", { overlap: "cancel_previous" });
    await tick(s, "replacer", at("00:10:01"));
    await tick(s, "replacer", at("00:20:01"));
    expect(expectOk(await taskOf(s, "replacer-20310101t001000z")).task.status).toBe("cancelled");
    expect(expectOk(await taskOf(s, "replacer-20310101t002000z")).task.status).not.toBe("cancelled");
    await tick(s, "replacer", at("00:20:07"));
    expect(outcomes(await get(s, "replacer"))).toEqual(["replacer-20310101t002000z:running", "replacer-20310101t001000z:cancelled"]);
  });
});

describe("occurrences that fell while nothing ran", () => {
  it("Should start the one back within the catch-up window and count the older ones missed (job.progress)", async () => {
    const s = await newSession();
    await schedule(s, "down-in");
    // Down from 00:05 across 00:10, 00:20 and 00:30; back at 00:30:30.
    await tick(s, "down-in", at("00:30:30"));
    const view = await get(s, "down-in");
    expect(outcomes(view)).toEqual(["down-in-20310101t003000z:running"]);
    expect(view.missed).toBe(2);
    await expectTasks(s, "down-in", ["down-in-20310101t003000z"]);
  });

  it("Should start none of them back outside the window: all three are missed", async () => {
    const s = await newSession();
    await schedule(s, "down-out");
    await tick(s, "down-out", at("00:32:00"));
    const view = await get(s, "down-out");
    expect(view.recent_runs).toEqual([]);
    expect(view.missed).toBe(3);
    expect(view.next_run_at).toBe("2031-01-01T00:40:00.000Z");
    await expectTasks(s, "down-out", []);
  });

  it("Should keep a frequent cron's occurrences bounded: the newest settled ones, and every open one", async () => {
    const s = await newSession();
    await schedule(s, "busy", { cron: "* * * * * *", catchup_window_ms: 30 * 60_000 });
    // Twenty minutes of a cron every second: the first occurrence starts, the 1,199 after it are skipped.
    await tick(s, "busy", at("00:25:00"));
    const view = await get(s, "busy");
    expect(view.skipped).toBe(1_199);
    await expectTasks(s, "busy", ["busy-20310101t000501z"]);
    const rows = await inObject(s, "busy", (instance) => (instance as unknown as { ctx: DurableObjectState }).ctx.storage.sql.exec<{ n: number; open: number }>("SELECT COUNT(*) AS n, SUM(state = 'created') AS open FROM occurrences").one());
    // The newest 1,000 (all skipped) and the running first one, older than them.
    expect(rows).toEqual({ n: 1_001, open: 1 });
  });

  it("Should start all three when the window covers the stop (overlap allow)", async () => {
    const s = await newSession();
    await schedule(s, "down-wide", { overlap: "allow", catchup_window_ms: 30 * 60_000 });
    await tick(s, "down-wide", at("00:30:30"));
    await expectTasks(s, "down-wide", ["down-wide-20310101t001000z", "down-wide-20310101t002000z", "down-wide-20310101t003000z"]);
    expect((await get(s, "down-wide")).missed).toBe(0);
  });
});

describe("a crash between deciding an occurrence and creating its task", () => {
  /** Replaces the object's createTask port by `make(real)` until it is evicted. */
  async function wrapCreate(s: TestSession, id: string, make: (real: OccurrencePorts["createTask"]) => OccurrencePorts["createTask"]): Promise<void> {
    await inObject(s, id, (instance) => {
      const real = instance.ports.createTask.bind(instance.ports);
      instance.ports = { ...instance.ports, createTask: make(real) };
    });
  }

  it("Should make exactly one task when the create's answer was lost (the retry finds the task it made)", async () => {
    const s = await newSession();
    await schedule(s, "lost");
    let calls = 0;
    await wrapCreate(s, "lost", (real) => async (actor, body) => {
      calls += 1;
      const answer = await real(actor, body);
      if (calls === 1) throw new Error("the object went away before the answer was recorded");
      return answer;
    });
    await tick(s, "lost", at("00:10:01"));
    expect(outcomes(await get(s, "lost"))).toEqual(["lost-20310101t001000z:pending"]);
    await expectTasks(s, "lost", ["lost-20310101t001000z"]);
    await evictDurableObject(stubOf(s, "lost"));
    await tick(s, "lost", at("00:10:07"));
    expect(outcomes(await get(s, "lost"))).toEqual(["lost-20310101t001000z:running"]);
    await expectTasks(s, "lost", ["lost-20310101t001000z"]);
    const started = await eventsOf(s, "lost");
    expect(started.filter((e) => e.type === "job.item.started")).toHaveLength(1);
  });

  it("Should make exactly one task when the object went away right after the decision was stored", async () => {
    const s = await newSession();
    await schedule(s, "crashed");
    await wrapCreate(s, "crashed", () => async () => {
      throw new Error("evicted before the create");
    });
    await tick(s, "crashed", at("00:10:01"));
    await expectTasks(s, "crashed", []);
    await evictDurableObject(stubOf(s, "crashed"));
    // A fresh object: the decision is stored, the task is owed and made once, however often the alarm runs.
    await tick(s, "crashed", at("00:10:07"));
    await tick(s, "crashed", at("00:10:13"));
    await expectTasks(s, "crashed", ["crashed-20310101t001000z"]);
    expect(outcomes(await get(s, "crashed"))).toEqual(["crashed-20310101t001000z:running"]);
  });

  it("Should record create_failed (job.item.failed) when another task holds the occurrence's id", async () => {
    const s = await newSession();
    await schedule(s, "taken");
    expectOk(await call("POST", `/v1/sessions/${s.sid}/tasks`, s.orch, { task_id: "taken-20310101t001000z", wal_name: "other", title: "Someone else's", steps: [] }), 201);
    await tick(s, "taken", at("00:10:01"));
    expect(outcomes(await get(s, "taken"))).toEqual(["taken-20310101t001000z:create_failed"]);
    expect((await eventsOf(s, "taken")).at(-1)).toMatchObject({ type: "job.item.failed", status: "create_failed", taskId: "taken-20310101t001000z" });
  });
});

describe("pause, resume, trigger, delete", () => {
  it("Should miss nothing while paused, and run again from the resume on", async () => {
    const s = await newSession();
    await schedule(s, "napper");
    await setClock(s, "napper", at("00:06:00"));
    expect(expectOk(await call("POST", `${schedulesPath(s)}/napper/pause`, s.orch, {}))).toMatchObject({ paused: true, next_run_at: null });
    await setClock(s, "napper", at("00:45:00"));
    const resumed = expectOk(await call("POST", `${schedulesPath(s)}/napper/resume`, s.orch, {}));
    expect(resumed).toMatchObject({ paused: false, missed: 0, next_run_at: "2031-01-01T00:50:00.000Z", recent_runs: [] });
    await tick(s, "napper", at("00:50:01"));
    await expectTasks(s, "napper", ["napper-20310101t005000z"]);
    expect((await get(s, "napper")).missed).toBe(0);
    expect((await eventsOf(s, "napper")).map((e) => `${e.type}:${e.phase ?? ""}`)).toEqual(["job.created:", "job.progress:paused", "job.progress:resumed", "job.item.started:"]);
  });

  it("Should archive an occurrence's task archive_after_days after the schedule saw it end, not before", async () => {
    const s = await newSession();
    expect(await schedule(s, "tidy", { archive_after_days: 1 })).toMatchObject({ archive_after_days: 1 });
    await tick(s, "tidy", at("00:10:01"));
    await expectTasks(s, "tidy", ["tidy-20310101t001000z"]);
    await complete(s, "tidy-20310101t001000z");
    // The schedule learns the end at its next poll; the archive falls due a day after that.
    await tick(s, "tidy", at("00:10:07"));
    expect(outcomes(await get(s, "tidy"))).toEqual(["tidy-20310101t001000z:completed"]);
    const ended = Date.parse("2031-01-01T00:10:07Z");
    await tick(s, "tidy", ended + 86_400_000 - 60_000);
    expect(expectOk(await taskOf(s, "tidy-20310101t001000z")).task.archived_at ?? null).toBeNull();
    await tick(s, "tidy", ended + 86_400_000 + 1_000);
    expect(expectOk(await taskOf(s, "tidy-20310101t001000z")).task.archived_at).toEqual(expect.any(String));
    // Archived tasks leave the task list (the day's new occurrence is listed); the occurrence keeps its outcome.
    await eventually(async () => expect(await tasksOf(s, "tidy")).toEqual(["tidy-20310102t001000z"]));
    expect(outcomes(await get(s, "tidy"))).toContain("tidy-20310101t001000z:completed");
  });

  it("Should run one occurrence now on trigger (the same one again within that second), also while paused", async () => {
    const s = await newSession();
    await schedule(s, "now", { paused: true });
    await setClock(s, "now", at("00:07:12") + 345);
    const first = expectOk(await call("POST", `${schedulesPath(s)}/now/trigger`, s.orch, {}), 201);
    expect(first.run).toEqual({ scheduled_at: "2031-01-01T00:07:12.000Z", task_id: "now-20310101t000712z", outcome: "running", trigger: "manual" });
    const again = expectOk(await call("POST", `${schedulesPath(s)}/now/trigger`, s.orch, {}), 201);
    expect(again.run.task_id).toBe("now-20310101t000712z");
    await expectTasks(s, "now", ["now-20310101t000712z"]);
  });

  it("Should stop and remove a schedule whose occurrence runs, leave the task alone and end its stream with job.cancelled", async () => {
    const s = await newSession();
    await schedule(s, "goner");
    await tick(s, "goner", at("00:10:01"));
    const removed = expectOk(await call("DELETE", `${schedulesPath(s)}/goner`, s.orch));
    expect(removed.schedule_id).toBe("goner");
    expect(expectOk(await taskOf(s, "goner-20310101t001000z")).task.status).not.toBe("cancelled");
    expectError(await call("GET", `${schedulesPath(s)}/goner`, s.observer), 404, "not_found");
    expect(expectOk(await call("GET", schedulesPath(s), s.observer)).schedules).toEqual([]);
    const events = await eventsOf(s, "goner");
    expect(events.at(-1)).toMatchObject({ type: "job.cancelled", payload: { running_task_ids: ["goner-20310101t001000z"] } });
    // A schedule id is used once per session.
    expectError(await call("POST", schedulesPath(s), s.orch, { schedule_id: "goner", cron: "* * * * *", task: { title: "Again", steps: [] } }), 409, "schedule_conflict");
  });
});

describe("the schedule routes", () => {
  it("Should list the session's schedules and refuse bad input, an unknown schedule and a duplicate id", async () => {
    const s = await newSession();
    await schedule(s, "one");
    await schedule(s, "two", { cron: "0 30 9 * * 1-5", timezone: "Europe/Paris" });
    const list = expectOk(await call("GET", schedulesPath(s), s.observer));
    expect(list.schedules.map((x: any) => x.schedule_id)).toEqual(["one", "two"]);
    expect(list.schedules[1].next_run_at).toBe("2031-01-01T08:30:00.000Z");
    const task = { title: "T", steps: [] };
    for (const body of [
      { schedule_id: "bad", cron: "* * *", task },
      { schedule_id: "bad", cron: "99 * * * *", task },
      { schedule_id: "bad", cron: "* * * * *", timezone: "Nowhere/Special", task },
      { schedule_id: "bad", cron: "* * * * *", start_at: "2031-02-01T00:00:00Z", end_at: "2031-01-01T00:00:00Z", task },
      { schedule_id: "Bad Id", cron: "* * * * *", task },
      { schedule_id: "bad", cron: "* * * * *", overlap: "queue", task },
      { schedule_id: "bad", cron: "* * * * *", task: { steps: [] } },
      { schedule_id: "bad", cron: "* * * * *", archive_after_days: 0, task },
      { schedule_id: "bad", cron: "* * * * *", archive_after_days: 3_651, task },
    ]) {
      expectError(await call("POST", schedulesPath(s), s.orch, body), 400, "validation_error");
    }
    // A template no occurrence could create is refused with the create's own error.
    const cyclic = { title: "T", steps: [{ step_id: "a", title: "A", summary: "", depends_on_step_ids: ["b"] }, { step_id: "b", title: "B", summary: "", depends_on_step_ids: ["a"] }] };
    expectError(await call("POST", schedulesPath(s), s.orch, { schedule_id: "cyclic", cron: "* * * * *", task: cyclic }), 409, "dependency_cycle");
    expectError(await call("GET", `${schedulesPath(s)}/cyclic`, s.observer), 404, "not_found");
    expectError(await call("GET", `${schedulesPath(s)}/nope`, s.observer), 404, "not_found");
    expectError(await call("POST", `${schedulesPath(s)}/nope/trigger`, s.orch, {}), 404, "not_found");
    expectError(await call("POST", schedulesPath(s), s.orch, { schedule_id: "one", cron: "* * * * *", task }), 409, "schedule_conflict");
    expectError(await call("POST", schedulesPath(s), s.observer, { schedule_id: "three", cron: "* * * * *", task }), 403, "tool_not_available");
  });

  it("Should answer a create retried with its Idempotency-Key with the schedule, and the key with another body idempotency_conflict", async () => {
    const s = await newSession();
    await setClock(s, "keyed", at("00:05:00"));
    const body = { schedule_id: "keyed", cron: "*/10 * * * *", task: { title: "T", steps: [] } };
    const headers = { "idempotency-key": "create-keyed" };
    const first = expectOk(await call("POST", schedulesPath(s), s.orch, body, headers), 201);
    expect(expectOk(await call("POST", schedulesPath(s), s.orch, body, headers), 201)).toEqual(first);
    expectError(await call("POST", schedulesPath(s), s.orch, { ...body, cron: "* * * * *" }, headers), 422, "idempotency_conflict");
  });

  it("Should refuse one schedule past MAX_SCHEDULES_PER_SESSION with 409 limit_exceeded", async () => {
    const s = await newSession();
    const cap = Number(bindings.MAX_SCHEDULES_PER_SESSION);
    for (let i = 0; i < cap; i++) await schedule(s, `capped-${i}`);
    const refused = await call("POST", schedulesPath(s), s.orch, { schedule_id: "one-too-many", cron: "* * * * *", task: { title: "T", steps: [] } });
    expectError(refused, 409, "limit_exceeded");
    expect(refused.body.error.details).toEqual({ limit: cap, value: cap + 1, setting: "MAX_SCHEDULES_PER_SESSION" });
  });
});

/** The schedule's events stream from the start, up to its last event now; each checked against the published schema. */
async function eventsOf(s: TestSession, id: string, headers: Record<string, string> = {}): Promise<any[]> {
  const last = await inObject(s, id, (instance) => (instance as unknown as { store: { lastEventSeq: number } }).store.lastEventSeq);
  const from = headers["last-event-id"] === undefined ? 0 : Number(headers["last-event-id"]);
  const reader = await openStream(`${schedulesPath(s)}/${id}/events`, s.observer, headers);
  const events: any[] = [];
  try {
    for (let seq = from + 1; seq <= last; seq++) {
      const frame = (await reader.next())!;
      expect(frame.id).toBe(String(seq));
      const event = JSON.parse(frame.data);
      expect(frame.event).toBe(event.type);
      const verdict = validator.validate(event);
      expect(verdict.valid, JSON.stringify(verdict.errors)).toBe(true);
      events.push(event);
    }
  } finally {
    await reader.response.body?.cancel().catch(() => undefined);
  }
  return events;
}
const validator = new Validator(JSON.parse(eventSchemaText), "2020-12");

describe("the schedule's events", () => {
  it("Should stream job.created, job.item.started, job.item.completed, job.progress (skipped, missed), valid and resumable by Last-Event-ID", async () => {
    const s = await newSession();
    await schedule(s, "told");
    await tick(s, "told", at("00:10:01"));
    await tick(s, "told", at("00:20:01"));
    await complete(s, "told-20310101t001000z");
    await tick(s, "told", at("00:20:07"));
    await tick(s, "told", at("00:45:00"));
    const events = await eventsOf(s, "told");
    expect(events.map((e) => `${e.type}${e.phase === undefined ? "" : `:${e.phase}`}`)).toEqual(["job.created", "job.item.started", "job.progress:skipped", "job.item.completed", "job.progress:missed"]);
    expect(events[1]).toMatchObject({ jobId: "told", jobItemId: "told-20310101t001000z", taskId: "told-20310101t001000z", sessionId: s.sid, payload: { scheduled_at: "2031-01-01T00:10:00.000Z", trigger: "cron" } });
    expect(events[4].payload).toMatchObject({ missed: 2, first_scheduled_at: "2031-01-01T00:30:00.000Z" });
    const resumed = await eventsOf(s, "told", { "last-event-id": "3" });
    expect(resumed.map((e) => e.sequence)).toEqual([4, 5]);
    expect(resumed.map((e) => e.eventId)).toEqual(events.slice(3).map((e) => e.eventId));
  });
});

describe("croner under workerd", () => {
  /** Replaces `owner[key]` by a Proxy that records each call or construction, then forwards it; returns the restore. */
  function intercept(owner: object, key: string, record: (what: string) => void): () => void {
    const original = Reflect.get(owner, key) as (...args: unknown[]) => unknown;
    const spy = new Proxy(original, {
      apply: (target, self, args) => (record(`${key}(${String(args.at(-1)).slice(0, 80)})`), Reflect.apply(target, self, args)),
      construct: (target, args, newTarget) => (record(`new ${key}(${String(args.at(-1)).slice(0, 80)})`), Reflect.construct(target, args, newTarget) as object),
    });
    Reflect.set(owner, key, spy);
    return () => Reflect.set(owner, key, original);
  }

  it("Should read a cron in a time zone and drive a schedule without generating code (deployed workerd refuses eval and new Function)", async () => {
    const calls: string[] = [];
    const restoreFunction = intercept(globalThis, "Function", (c) => calls.push(c));
    const restoreEval = intercept(globalThis, "eval", (c) => calls.push(c));
    try {
      // A pattern and zone no other test reads: croner parses it here, under the spy.
      expect(new Date(nextOccurrence({ cron: "7 13 * * 2", timezone: "Asia/Tokyo", start_at_ms: null, end_at_ms: null }, at("00:00:00"))!).toISOString()).toBe("2031-01-07T04:07:00.000Z");
      const s = await newSession();
      await schedule(s, "codegen", { cron: "0 45 9 * * 1-5", timezone: "America/New_York", overlap: "allow" });
      await tick(s, "codegen", Date.parse("2031-01-01T14:45:01Z"));
      await expectTasks(s, "codegen", ["codegen-20310101t144500z"]);
    } finally {
      restoreEval();
      restoreFunction();
    }
    expect(calls).toEqual([]);
  });
});
