/**
 * @module Durable schedules: create, list, read, pause, resume, trigger and delete a session's schedules, and stream a
 * schedule's events. Each schedule is its own object (`<sid>/<schedule_id>`); the session lists their ids. Roles come
 * from the catalog (routes/http/catalog.ts), checked before a route runs.
 */
import { type Context, Hono } from "hono";
import { EmptyBody } from "../../durable-objects/commands/command-schemas.js";
import { parseJsonObject, validate } from "../../durable-objects/commands/command-json.js";
import { readConfig, scheduleObjectName } from "../../durable-objects/shared/env.js";
import { errorResponse, fail } from "../../durable-objects/shared/http-errors.js";
import type { RpcResult } from "../../durable-objects/shared/rpc-result.js";
import { parseSessionEventId } from "../../durable-objects/shared/sse-frames.js";
import { CreateScheduleBody, type Schedule, type TriggerAnswer } from "../../src/contract/index.js";
import { SCHEDULE_ID_PATTERN, templateError, timingError } from "../../src/core/index.js";
import { ulidFactory } from "../../src/lib/ids.js";
import { type AppEnv, requireSessionActor } from "../http/auth.js";
import { idempotencyOf, readBodyText, readCommandBody } from "../http/body.js";
import { EventsQueryParams } from "../http/schemas.js";
import { relaySubscriber } from "../http/subscriber-relay.js";

const newId = ulidFactory();
const lowerId = () => newId().toLowerCase();

/** Routes under /v1/sessions. */
export const scheduleRoutes = new Hono<AppEnv>();

/** The object of schedule `scheduleId` of `sid`; a malformed id is validation_error, never an object named after it. */
function scheduleStub(c: Context<AppEnv>, sid: string, scheduleId: string) {
  if (!SCHEDULE_ID_PATTERN.test(scheduleId)) fail("validation_error", "the schedule id must match ^[a-z0-9_-]{1,47}$", { schedule_id: scheduleId.slice(0, 100) });
  return c.env.SCHEDULES.get(c.env.SCHEDULES.idFromName(scheduleObjectName(sid, scheduleId)));
}

scheduleRoutes.post("/:sid/schedules", async (c) => {
  const sid = c.req.param("sid");
  const actor = requireSessionActor(c, sid);
  const text = await readBodyText(c);
  const body = validate(CreateScheduleBody, parseJsonObject(text));
  const timing = {
    cron: body.cron,
    timezone: body.timezone ?? "UTC",
    start_at_ms: body.start_at === undefined ? null : Date.parse(body.start_at),
    end_at_ms: body.end_at === undefined ? null : Date.parse(body.end_at),
  };
  const refused = timingError(timing) ?? templateError(body.task, body.schedule_id, { actor, now: Date.now(), newId: lowerId, limits: readConfig(c.env).limits });
  if (refused !== null) return errorResponse(c, refused);
  const result = (await scheduleStub(c, sid, body.schedule_id).create(actor, sid, body, idempotencyOf(c, text))) as RpcResult<{ schedule: Schedule; created: boolean }>;
  return result.ok ? c.json(result.value.schedule, 201) : errorResponse(c, result.error);
});

scheduleRoutes.get("/:sid/schedules", async (c) => {
  const sid = c.req.param("sid");
  requireSessionActor(c, sid);
  const session = c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sid));
  if ((await session.describe()) === null) fail("not_found", `no session ${sid}`);
  const ids = await session.listSchedules();
  // At most MAX_SCHEDULES_PER_SESSION reads, side by side; one deleted meanwhile is left out.
  const read = (await Promise.all(ids.map((id) => scheduleStub(c, sid, id).get()))) as RpcResult<Schedule>[];
  const schedules = read.flatMap((r) => (r.ok ? [r.value] : []));
  return c.json({ schedules, total: schedules.length });
});

scheduleRoutes.get("/:sid/schedules/:schedule_id", async (c) => {
  const sid = c.req.param("sid");
  requireSessionActor(c, sid);
  const result = (await scheduleStub(c, sid, c.req.param("schedule_id")).get()) as RpcResult<Schedule>;
  return result.ok ? c.json(result.value) : errorResponse(c, result.error);
});

for (const action of ["pause", "resume"] as const) {
  scheduleRoutes.post(`/:sid/schedules/:schedule_id/${action}`, async (c) => {
    const sid = c.req.param("sid");
    requireSessionActor(c, sid);
    await readCommandBody(c, EmptyBody);
    const stub = scheduleStub(c, sid, c.req.param("schedule_id"));
    const result = (await (action === "pause" ? stub.pause() : stub.resume())) as RpcResult<Schedule>;
    return result.ok ? c.json(result.value) : errorResponse(c, result.error);
  });
}

scheduleRoutes.post("/:sid/schedules/:schedule_id/trigger", async (c) => {
  const sid = c.req.param("sid");
  requireSessionActor(c, sid);
  await readCommandBody(c, EmptyBody);
  const result = (await scheduleStub(c, sid, c.req.param("schedule_id")).trigger()) as RpcResult<TriggerAnswer>;
  return result.ok ? c.json(result.value, 201) : errorResponse(c, result.error);
});

scheduleRoutes.delete("/:sid/schedules/:schedule_id", async (c) => {
  const sid = c.req.param("sid");
  requireSessionActor(c, sid);
  const result = (await scheduleStub(c, sid, c.req.param("schedule_id")).remove()) as RpcResult<Schedule>;
  return result.ok ? c.json(result.value) : errorResponse(c, result.error);
});

scheduleRoutes.get("/:sid/schedules/:schedule_id/events", async (c) => {
  const sid = c.req.param("sid");
  requireSessionActor(c, sid);
  const stub = scheduleStub(c, sid, c.req.param("schedule_id"));
  const q = validate(EventsQueryParams, c.req.query());
  const header = c.req.header("last-event-id");
  let afterSeq = q.after_seq ?? 0;
  if (header !== undefined && header.trim() !== "") {
    const seq = parseSessionEventId(header);
    if (seq === null) fail("validation_error", "Last-Event-ID must be an id this stream sent: <seq>", { last_event_id: header.slice(0, 100) });
    afterSeq = seq;
  }
  return relaySubscriber(c, {
    open: async (holder) => (await stub.streamEvents(afterSeq, holder)) as RpcResult<ReadableStream<Uint8Array>>,
    drop: (id) => stub.dropSubscriber(id),
  });
});
