/** @module Task routes: agent.task_* tools over HTTP, each a call to the task's Durable Object. */
import { type Context, Hono } from "hono";
import type { Actor } from "../src/core/index.js";
import { taskObjectName } from "../src/env.js";
import type { RpcResult } from "../durable-objects/task-graph-object.js";
import { type AppEnv, requireTaskActor } from "./auth.js";
import { readCommandBody, validate } from "./body.js";
import { errorResponse } from "./http-error.js";
import {
  CancelRunBody,
  DispatchWorkerBody,
  EmptyBody,
  FinishRunBody,
  ProgressBody,
  ReasonBody,
  StepQueryParams,
  SummaryQueryParams,
  UpdateStepBody,
  UpdateTaskBody,
  WalQueryParams,
} from "./schemas.js";

/** Routes under /v1/sessions/{sid}/tasks/{tid}. */
export const taskRoutes = new Hono<AppEnv>();

type TaskContext = Context<AppEnv, "/:sid/tasks/:tid">;

function target(c: TaskContext): { actor: Actor; stub: DurableObjectStub<import("../durable-objects/task-graph-object.js").TaskGraphObject> } {
  const sid = c.req.param("sid");
  const tid = c.req.param("tid");
  const actor = requireTaskActor(c, sid, tid);
  return { actor, stub: c.env.TASK_GRAPHS.get(c.env.TASK_GRAPHS.idFromName(taskObjectName(sid, tid))) };
}

function answer<T>(c: Context, result: RpcResult<T>, status: 200 | 201 = 200): Response {
  return result.ok ? c.json(result.value as object, status) : errorResponse(c, result.error);
}

taskRoutes.get("/:sid/tasks/:tid", async (c) => {
  const { actor, stub } = target(c);
  return answer(c, (await stub.getTask(actor)) as RpcResult<unknown>);
});

taskRoutes.patch("/:sid/tasks/:tid", async (c) => {
  const { actor, stub } = target(c);
  const { body, idem } = await readCommandBody(c, UpdateTaskBody);
  return answer(c, (await stub.execute(actor, { type: "update_task", ...body }, idem)) as RpcResult<unknown>);
});

const lifecycle = { complete: "complete_task", fail: "fail_task", cancel: "cancel_task", block: "block_task", reopen: "reopen_task" } as const;
for (const [path, type] of Object.entries(lifecycle)) {
  taskRoutes.post(`/:sid/tasks/:tid/${path}`, async (c) => {
    const { actor, stub } = target(c as TaskContext);
    const { body, idem } = await readCommandBody(c, ReasonBody);
    return answer(c, (await stub.execute(actor, { type, ...body }, idem)) as RpcResult<unknown>);
  });
}

taskRoutes.post("/:sid/tasks/:tid/workers", async (c) => {
  const { actor, stub } = target(c);
  const { body, idem } = await readCommandBody(c, DispatchWorkerBody);
  return answer(c, (await stub.execute(actor, { type: "dispatch_worker", ...body }, idem)) as RpcResult<unknown>, 201);
});

taskRoutes.post("/:sid/tasks/:tid/runs/:run/finish", async (c) => {
  const { actor, stub } = target(c);
  const { body, idem } = await readCommandBody(c, FinishRunBody);
  return answer(c, (await stub.execute(actor, { type: "finish_run", run_id: c.req.param("run"), ...body }, idem)) as RpcResult<unknown>);
});

taskRoutes.post("/:sid/tasks/:tid/runs/:run/cancel", async (c) => {
  const { actor, stub } = target(c);
  const { body, idem } = await readCommandBody(c, CancelRunBody);
  return answer(c, (await stub.execute(actor, { type: "cancel_run", run_id: c.req.param("run"), ...body }, idem)) as RpcResult<unknown>);
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

// claim-next is registered before /steps/:step/claim so the literal path wins.
taskRoutes.post("/:sid/tasks/:tid/steps/claim-next", async (c) => {
  const { actor, stub } = target(c);
  const { idem } = await readCommandBody(c, EmptyBody);
  return answer(c, (await stub.execute(actor, { type: "claim_next" }, idem)) as RpcResult<unknown>);
});

taskRoutes.post("/:sid/tasks/:tid/steps/:step/claim", async (c) => {
  const { actor, stub } = target(c);
  const { idem } = await readCommandBody(c, EmptyBody);
  return answer(c, (await stub.execute(actor, { type: "claim_step", step_id: c.req.param("step") }, idem)) as RpcResult<unknown>);
});

taskRoutes.post("/:sid/tasks/:tid/steps/:step/status", async (c) => {
  const { actor, stub } = target(c);
  const { body, idem } = await readCommandBody(c, UpdateStepBody);
  const { claim_next: claimNext, ...fields } = body;
  const command = { type: "update_step", step_id: c.req.param("step"), ...fields };
  return answer(c, (await stub.execute(actor, command, idem, { claimNext: claimNext === true })) as RpcResult<unknown>);
});

taskRoutes.post("/:sid/tasks/:tid/steps/:step/progress", async (c) => {
  const { actor, stub } = target(c);
  const { body, idem } = await readCommandBody(c, ProgressBody);
  return answer(c, (await stub.execute(actor, { type: "append_progress", step_id: c.req.param("step"), ...body }, idem)) as RpcResult<unknown>);
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
