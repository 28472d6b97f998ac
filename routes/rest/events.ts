/**
 * @module The two live event streams (Server-Sent Events): a task's runtime events and a session's task
 * summaries. The route authenticates, parses the resume point (a bad one is a 400 before any byte streams)
 * and wraps the object's byte stream in the SSE response; framing happens once per event in the object.
 */
import { type Context, Hono } from "hono";
import { taskObjectName } from "../../durable-objects/shared/env.js";
import { parseSessionEventId, parseTaskEventId, type TaskCursor } from "../../durable-objects/shared/sse-frames.js";
import type { RpcResult } from "../../durable-objects/shared/rpc-result.js";
import { type AppEnv, requireSessionActor, requireTaskActor } from "../http/auth.js";
import { validate } from "../../durable-objects/commands/command-json.js";
import { errorResponse, fail } from "../../durable-objects/shared/http-errors.js";
import { EventsQueryParams } from "../http/schemas.js";

/** Routes under /v1/sessions: GET /{sid}/events and GET /{sid}/tasks/{tid}/events. */
export const eventRoutes = new Hono<AppEnv>();

/** The headers of every event stream. */
export const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" } as const;

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

function streamAnswer(c: Context<AppEnv>, result: RpcResult<ReadableStream<Uint8Array>>): Response {
  if (!result.ok) return errorResponse(c, result.error);
  return c.body(result.value, 200, SSE_HEADERS);
}

eventRoutes.get("/:sid/tasks/:tid/events", async (c) => {
  const sid = c.req.param("sid");
  const tid = c.req.param("tid");
  const actor = requireTaskActor(c, sid, tid);
  const cursor = taskCursor(c);
  const stub = c.env.TASK_GRAPHS.get(c.env.TASK_GRAPHS.idFromName(taskObjectName(sid, tid)));
  return streamAnswer(c, (await stub.streamEvents(actor, cursor)) as RpcResult<ReadableStream<Uint8Array>>);
});

eventRoutes.get("/:sid/events", async (c) => {
  const sid = c.req.param("sid");
  requireSessionActor(c, sid);
  const afterSeq = sessionCursor(c);
  const session = c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sid));
  return streamAnswer(c, (await session.streamEvents(afterSeq)) as RpcResult<ReadableStream<Uint8Array>>);
});
