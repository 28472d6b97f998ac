/** @module Task routes: agent.task_* tools over HTTP, each a call to the task's Durable Object. */
import { type Context, Hono } from "hono";
import {
  ActionGetQueryParams,
  ActionIdParam,
  ActionListQueryParams,
  type AnyWriteAnswer as WriteAnswer,
  DEFAULT_ACTION_PAGE_LIMIT,
  StepQueryParams,
  SummaryQueryParams,
  WalQueryParams,
} from "../../src/contract/index.js";
import type { RpcResult } from "../../durable-objects/shared/rpc-result.js";
import { type AppEnv, requireTaskActor, slotHolder } from "../http/auth.js";
import { parseJsonObject, validate } from "../../durable-objects/commands/command-json.js";
import { idempotencyOf, readBodyText, readCommandBody } from "../http/body.js";
import { errorResponse } from "../../durable-objects/shared/http-errors.js";
import { BatchBody } from "../../durable-objects/commands/command-schemas.js";
import { TaskGetQueryParams } from "../http/schemas.js";
import { runBatch, taskStub } from "../../durable-objects/commands/batch.js";
import { finishAnswer, resolveWrite } from "../../durable-objects/commands/task-writes.js";

/** Routes under /v1/sessions/{sid}/tasks/{tid}. */
export const taskRoutes = new Hono<AppEnv>();

type TaskContext = Context<AppEnv, "/:sid/tasks/:tid">;

function target(c: TaskContext) {
  const sid = c.req.param("sid");
  const tid = c.req.param("tid");
  const actor = requireTaskActor(c, sid, tid);
  return { actor, stub: taskStub(c.env, sid, tid) };
}

function answer<T>(c: Context, result: RpcResult<T>, status: 200 | 201 = 200): Response {
  return result.ok ? c.json(result.value as object, status) : errorResponse(c, result.error);
}

taskRoutes.get("/:sid/tasks/:tid", async (c) => {
  const { actor, stub } = target(c);
  const q = validate(TaskGetQueryParams, c.req.query());
  const request = { ...(q.limit === undefined ? {} : { limit: q.limit }), ...(q.cursor === undefined ? {} : { cursor: q.cursor }) };
  const result = (await stub.getTask(actor, request, await slotHolder(c))) as RpcResult<string | ReadableStream<Uint8Array>>;
  // Encoded by the object (a large page as a stream it paces): passed through, never parsed again here.
  return result.ok ? c.body(result.value, 200, { "content-type": "application/json" }) : errorResponse(c, result.error);
});

taskRoutes.get("/:sid/tasks/:tid/steps", async (c) => {
  const { actor, stub } = target(c);
  const statuses = c.req.queries("status")?.flatMap((s) => s.split(",")).filter((s) => s !== "");
  const raw: Record<string, unknown> = { ...c.req.query() };
  delete raw.status;
  if (statuses !== undefined && statuses.length > 0) raw.status = statuses;
  const q = validate(StepQueryParams, raw);
  const query = {
    ...(q.status === undefined ? {} : { statuses: q.status }),
    ...(q.worker_pool_id === undefined ? {} : { worker_pool_id: q.worker_pool_id }),
    ...(q.claimed_by_agent_id === undefined ? {} : { claimed_by_agent_id: q.claimed_by_agent_id }),
    ...(q.include_terminal_steps === undefined ? {} : { include_terminal_steps: q.include_terminal_steps }),
    ...(q.limit === undefined ? {} : { limit: q.limit }),
    ...(q.offset === undefined ? {} : { offset: q.offset }),
  };
  return answer(c, (await stub.querySteps(actor, query)) as RpcResult<unknown>);
});

taskRoutes.get("/:sid/tasks/:tid/wal", async (c) => {
  const { actor, stub } = target(c);
  const q = validate(WalQueryParams, c.req.query());
  const limit = q.limit === "all" ? Number.MAX_SAFE_INTEGER : (q.limit ?? 1_000);
  const result = (await stub.readWal(actor, q.after_seq ?? 0, limit)) as RpcResult<{ ndjson: ReadableStream<Uint8Array>; last_wal_seq: number }>;
  if (!result.ok) return errorResponse(c, result.error);
  // Streamed as the client reads it: the object reads the WAL from SQL a page per pull, so no export is held whole.
  return c.body(result.value.ndjson, 200, { "content-type": "application/x-ndjson", "x-last-wal-seq": String(result.value.last_wal_seq) });
});

taskRoutes.get("/:sid/tasks/:tid/summary", async (c) => {
  const { actor, stub } = target(c);
  const q = validate(SummaryQueryParams, c.req.query());
  return answer(c, (await stub.summary(actor, q.token_budget ?? 2_000)) as RpcResult<unknown>);
});

taskRoutes.get("/:sid/tasks/:tid/actions", async (c) => {
  const { actor, stub } = target(c);
  const q = validate(ActionListQueryParams, c.req.query());
  const query = { ...(q.status === undefined ? {} : { status: q.status }), limit: q.limit ?? DEFAULT_ACTION_PAGE_LIMIT, offset: q.offset ?? 0 };
  return answer(c, (await stub.listActions(actor, query)) as RpcResult<unknown>);
});

taskRoutes.get("/:sid/tasks/:tid/actions/:action_id", async (c) => {
  const { actor, stub } = target(c);
  const actionId = validate(ActionIdParam, c.req.param("action_id"));
  const q = validate(ActionGetQueryParams, c.req.query());
  return answer(c, (await stub.getAction(actor, actionId, q.wait_ms ?? 0, q.wait_ms ? await slotHolder(c) : undefined)) as RpcResult<unknown>);
});

taskRoutes.post("/:sid/tasks/:tid/batch", async (c) => {
  const sid = c.req.param("sid");
  const tid = c.req.param("tid");
  requireTaskActor(c, sid, tid);
  const { body } = await readCommandBody(c, BatchBody);
  return c.json({ results: await runBatch(c.env, sid, tid, body.commands) });
});

taskRoutes.on(["POST", "PATCH"], ["/:sid/tasks/:tid", "/:sid/tasks/:tid/*"], async (c) => {
  const sid = c.req.param("sid");
  const tid = c.req.param("tid");
  const actor = requireTaskActor(c, sid, tid);
  const text = await readBodyText(c);
  const rest = new URL(c.req.url).pathname.slice(`/v1/sessions/${sid}/tasks/${tid}`.length);
  const write = resolveWrite(c.req.method, rest, parseJsonObject(text));
  const idem = idempotencyOf(c, text);
  const result = (await taskStub(c.env, sid, tid).executeForRoute(actor, write.command, idem, { claimNext: write.claimNext, validated: true })) as RpcResult<WriteAnswer | string>;
  // Encoded by the object: passed through as it came.
  if (result.ok && typeof result.value === "string") return c.body(result.value, write.status, { "content-type": "application/json" });
  const caller = c.get("caller");
  return answer(c, await finishAnswer(c.env, sid, result as RpcResult<WriteAnswer>, caller.kind === "token" ? caller.claims.exp : undefined), write.status);
});
