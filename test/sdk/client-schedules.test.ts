/**
 * The SDK's schedule calls against the Worker: create (its retry with the same Idempotency-Key answered as the
 * first), list, get, trigger, pause, resume, the schedule's event stream to its end, and delete. The occurrences'
 * own rules are driven by the alarm in test/objects/schedules.test.ts; here the schedule's cron never falls during
 * the test (once a year) and only the trigger makes a task.
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { type FetchLike, RuntimeApiError, RuntimeClient } from "../../src/client/index.js";
import { ADMIN } from "../support/helpers.js";
import { BASE, rejection } from "../support/support.js";

const selfFetch: FetchLike = SELF.fetch.bind(SELF);
const client = (token: string) => new RuntimeClient({ baseUrl: BASE, token, fetch: selfFetch });

describe("RuntimeClient: schedules", () => {
  it("Should create, list, read, trigger, pause, resume, follow and delete a schedule", async () => {
    const admin = client(ADMIN);
    const s = await admin.createSession();
    const orch = admin.withToken(s.orchestrator.token);
    const observer = admin.withToken(s.observer.token);
    const sid = s.session_id;
    const body = { schedule_id: "yearly", cron: "0 0 1 1 *", timezone: "Europe/Paris", overlap: "allow" as const, task: { title: "Yearly review", steps: [] } };

    const created = await orch.createSchedule(sid, body, { idempotencyKey: "yearly-create" });
    expect(created).toMatchObject({ schedule_id: "yearly", overlap: "allow", paused: false, missed: 0, recent_runs: [] });
    expect(await orch.createSchedule(sid, body, { idempotencyKey: "yearly-create" })).toEqual(created);
    const conflict = await rejection(orch.createSchedule(sid, body));
    expect([conflict.status, conflict.code]).toEqual([409, "schedule_conflict"]);

    expect((await observer.listSchedules(sid)).schedules.map((x) => x.schedule_id)).toEqual(["yearly"]);
    const triggered = await orch.triggerSchedule(sid, "yearly");
    expect(triggered.run).toMatchObject({ outcome: "running", trigger: "manual" });
    expect((await observer.getTask({ sessionId: sid, taskId: triggered.run.task_id })).task.input_refs).toEqual([{ kind: "schedule_trigger", schedule_id: "yearly", scheduled_at: triggered.run.scheduled_at }]);
    expect((await orch.pauseSchedule(sid, "yearly")).next_run_at).toBeNull();
    expect((await orch.resumeSchedule(sid, "yearly")).next_run_at).toMatch(/-01-01T00:00:00.000Z$|-12-31T23:00:00.000Z$/);
    expect((await observer.getSchedule(sid, "yearly")).recent_runs.map((r) => r.task_id)).toEqual([triggered.run.task_id]);

    expect((await orch.deleteSchedule(sid, "yearly")).schedule_id).toBe("yearly");
    const types: string[] = [];
    const sub = observer.subscribeSchedule(sid, "yearly");
    for await (const e of sub) types.push(e.type);
    expect(types).toEqual(["job.created", "job.item.started", "job.progress", "job.progress", "job.cancelled"]);
    const gone = await rejection(observer.getSchedule(sid, "yearly"));
    expect(gone).toBeInstanceOf(RuntimeApiError);
    expect([gone.status, gone.code]).toEqual([404, "not_found"]);
  });
});
