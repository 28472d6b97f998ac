/**
 * @module The two live event streams (Server-Sent Events): a task's runtime events and a session's task
 * summaries. The route authenticates, parses the resume point (a bad one is a 400 before any byte streams)
 * and relays the object's byte stream into the SSE response (routes/http/subscriber-relay.ts: this side sees a
 * client go and tells the object); framing happens once per event in the object.
 */
import { type Context, Hono } from "hono";
import { taskObjectName } from "../../durable-objects/shared/env.js";
import { parseSessionEventId, parseTaskEventId, type TaskCursor } from "../../durable-objects/shared/sse-frames.js";
import type { RpcResult } from "../../durable-objects/shared/rpc-result.js";
import { type AppEnv, requireSessionActor, requireTaskActor } from "../http/auth.js";
import { validate } from "../../durable-objects/commands/command-json.js";
import { fail } from "../../durable-objects/shared/http-errors.js";
import { relaySubscriber } from "../http/subscriber-relay.js";
import { EventsQueryParams } from "../http/schemas.js";

/** Routes under /v1/sessions: GET /{sid}/events and GET /{sid}/tasks/{tid}/events. */
export const eventRoutes = new Hono<AppEnv>();

/** The Last-Event-ID header, when present and not empty (a browser sends it when it resumes). */
function lastEventId(c: Context<AppEnv>): string | null {
  const raw = c.req.header("last-event-id");
  return raw === undefined || raw.trim() === "" ? null : raw;
}

/** Where a task stream starts: Last-Event-ID (it wins: EventSource resumes with the URL it first used), after_seq, or the start. */
function taskCursor(c: Context<AppEnv>): TaskCursor {
  const q = validate(EventsQueryParams, c.req.query());
  const header = lastEventId(c);
  if (header !== null) {
    const cursor = parseTaskEventId(header);
    if (cursor === null) fail("validation_error", "Last-Event-ID must be an id this stream sent: a runtime event's sequence", { last_event_id: header.slice(0, 100) });
    return cursor;
  }
  return { seq: q.after_seq ?? 0, k: null };
}

function sessionCursor(c: Context<AppEnv>): number {
  const q = validate(EventsQueryParams, c.req.query());
  const header = lastEventId(c);
  if (header !== null) {
    const seq = parseSessionEventId(header);
    if (seq === null) fail("validation_error", "Last-Event-ID must be an id this stream sent: <seq>", { last_event_id: header.slice(0, 100) });
    return seq;
  }
  return q.after_seq ?? 0;
}

eventRoutes.get("/:sid/tasks/:tid/events", async (c) => {
  const sid = c.req.param("sid");
  const tid = c.req.param("tid");
  const actor = requireTaskActor(c, sid, tid);
  const cursor = taskCursor(c);
  const stub = c.env.TASK_GRAPHS.get(c.env.TASK_GRAPHS.idFromName(taskObjectName(sid, tid)));
  return relaySubscriber(c, {
    open: async (holder) => (await stub.streamEvents(actor, cursor, holder)) as RpcResult<ReadableStream<Uint8Array>>,
    drop: (id) => stub.dropSubscriber(id),
  });
});

eventRoutes.get("/:sid/events", async (c) => {
  const sid = c.req.param("sid");
  requireSessionActor(c, sid);
  const afterSeq = sessionCursor(c);
  const session = c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sid));
  return relaySubscriber(c, {
    open: async (holder) => (await session.streamEvents(afterSeq, holder)) as RpcResult<ReadableStream<Uint8Array>>,
    drop: (id) => session.dropSubscriber(id),
  });
});
