/** @module Task routes: agent.task_* tools over HTTP, each a call to the task's Durable Object. */
import { type Context, Hono } from "hono";
import { verifyToken } from "../src/auth/tokens.js";
import { type RuntimeError, runtimeError } from "../src/core/index.js";
import { taskObjectName } from "../src/env.js";
import type { BatchItem, RpcResult, TaskGraphObject, WriteAnswer } from "../durable-objects/task-graph-object.js";
import { actorOf, type AppEnv, requireTaskActor } from "./auth.js";
import { hashRequest, idempotencyOf, parseJsonObject, readBodyText, readCommandBody, validate } from "./body.js";
import { errorResponse, STATUS_OF, toRuntimeError } from "./http-error.js";
import { BatchBody, StepQueryParams, SummaryQueryParams, WalQueryParams } from "./schemas.js";
import { finishAnswer, rejected, resolveWrite } from "./task-writes.js";

/** Routes under /v1/sessions/{sid}/tasks/{tid}. */
export const taskRoutes = new Hono<AppEnv>();

type TaskContext = Context<AppEnv, "/:sid/tasks/:tid">;

function stubOf(c: Context<AppEnv>, sid: string, tid: string): DurableObjectStub<TaskGraphObject> {
  return c.env.TASK_GRAPHS.get(c.env.TASK_GRAPHS.idFromName(taskObjectName(sid, tid)));
}

function target(c: TaskContext) {
  const sid = c.req.param("sid");
  const tid = c.req.param("tid");
  const actor = requireTaskActor(c, sid, tid);
  return { actor, stub: stubOf(c, sid, tid) };
}

function answer<T>(c: Context, result: RpcResult<T>, status: 200 | 201 = 200): Response {
  return result.ok ? c.json(result.value as object, status) : errorResponse(c, result.error);
}

taskRoutes.get("/:sid/tasks/:tid", async (c) => {
  const { actor, stub } = target(c);
  return answer(c, (await stub.getTask(actor)) as RpcResult<unknown>);
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
  const result = (await stub.readWal(actor, q.after_seq ?? 0, q.limit ?? 1_000)) as RpcResult<{ events: unknown[]; last_wal_seq: number }>;
  if (!result.ok) return errorResponse(c, result.error);
  const body = result.value.events.map((e) => JSON.stringify(e)).join("\n");
  return c.body(body === "" ? "" : `${body}\n`, 200, { "content-type": "application/x-ndjson", "x-last-wal-seq": String(result.value.last_wal_seq) });
});

taskRoutes.get("/:sid/tasks/:tid/summary", async (c) => {
  const { actor, stub } = target(c);
  const q = validate(SummaryQueryParams, c.req.query());
  return answer(c, (await stub.summary(actor, q.token_budget ?? 2_000)) as RpcResult<unknown>);
});

taskRoutes.post("/:sid/tasks/:tid/batch", async (c) => {
  const sid = c.req.param("sid");
  const tid = c.req.param("tid");
  requireTaskActor(c, sid, tid);
  const { body } = await readCommandBody(c, BatchBody);
  const prefix = `/v1/sessions/${sid}/tasks/${tid}`;
  // Each command is authenticated with its own token and resolved like its single route; one that fails
  // here gets its error in place and never reaches the task object.
  const prepared = await Promise.all(
    body.commands.map(async (command): Promise<BatchItem | RuntimeError> => {
      try {
        const claims = await verifyToken(c.env.TOKEN_SECRET, command.token);
        if (claims === null) return runtimeError("unauthorized", "the command's token is malformed, forged or expired");
        const actor = actorOf(claims);
        if (actor.session_id !== sid || (actor.role === "worker" && actor.task_id !== tid)) return runtimeError("permission_denied", "the command's token is not in this task's scope");
        const path = command.path.split("?")[0]!;
        if (!path.startsWith(prefix)) return runtimeError("validation_error", `a batch command's path must be under ${prefix}`, { path: command.path });
        const resolved = resolveWrite(command.method, path.slice(prefix.length), parseJsonObject(JSON.stringify(command.body ?? {})));
        const idem = command.idempotency_key === undefined ? null : { key: command.idempotency_key, hash: await hashRequest(command.method.toUpperCase(), path, JSON.stringify(command.body ?? {})) };
        return { actor, command: resolved.command, idem, claimNext: resolved.claimNext };
      } catch (e) {
        return toRuntimeError(e);
      }
    }),
  );
  const items = prepared.filter((p): p is BatchItem => !("code" in p));
  const answers = items.length === 0 ? [] : ((await stubOf(c, sid, tid).executeBatch(items)) as RpcResult<WriteAnswer>[]);
  let next = 0;
  const results = await Promise.all(
    prepared.map(async (p) => {
      const result = "code" in p ? rejected(p) : await finishAnswer(c.env, sid, answers[next++]!);
      return result.ok ? { ok: true, status: 200, body: result.value } : { ok: false, status: STATUS_OF[result.error.code], body: { error: { ...result.error, details: result.error.details ?? {} } } };
    }),
  );
  return c.json({ results });
});

taskRoutes.on(["POST", "PATCH"], ["/:sid/tasks/:tid", "/:sid/tasks/:tid/*"], async (c) => {
  const sid = c.req.param("sid");
  const tid = c.req.param("tid");
  const actor = requireTaskActor(c, sid, tid);
  const text = await readBodyText(c);
  const rest = new URL(c.req.url).pathname.slice(`/v1/sessions/${sid}/tasks/${tid}`.length);
  const write = resolveWrite(c.req.method, rest, parseJsonObject(text));
  const idem = await idempotencyOf(c, text);
  const result = (await stubOf(c, sid, tid).execute(actor, write.command, idem, { claimNext: write.claimNext })) as RpcResult<WriteAnswer>;
  return answer(c, await finishAnswer(c.env, sid, result), write.status);
});
