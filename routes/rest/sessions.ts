/** @module Session routes: create sessions, mint tokens, the session snapshot, task list, task create and the inbox of open actions. */
import { Hono } from "hono";
import { ulidFactory } from "../../src/lib/ids.js";
import { mintToken } from "../../durable-objects/shared/tokens.js";
import {
  type AnyWriteAnswer as WriteAnswer,
  CreateSessionBody,
  CreateTaskBody,
  DEFAULT_ACTION_PAGE_LIMIT,
  MintTokenBody,
  SessionActionsQueryParams,
  TaskListQueryParams,
} from "../../src/contract/index.js";
import { readConfig, taskObjectName } from "../../durable-objects/shared/env.js";
import type { RpcResult } from "../../durable-objects/shared/rpc-result.js";
import { type AppEnv, requireAdmin, requireSessionActor } from "../http/auth.js";
import { parseJsonObject, validate } from "../../durable-objects/commands/command-json.js";
import { sha256DerivedId } from "../../src/lib/hash.js";
import { idempotencyOf, readBodyText, readCommandBody } from "../http/body.js";
import { errorResponse, fail } from "../../durable-objects/shared/http-errors.js";

const newId = ulidFactory();
const lowerId = () => newId().toLowerCase();

/** Routes under /v1/sessions. */
export const sessionRoutes = new Hono<AppEnv>();

sessionRoutes.post("/", async (c) => {
  requireAdmin(c);
  const text = await readBodyText(c);
  const body = validate(CreateSessionBody, parseJsonObject(text));
  const idem = idempotencyOf(c, text);
  // With an Idempotency-Key and no chosen id, the id comes from the key, so a retry reaches the same session.
  const sessionId = body.session_id ?? (idem === null ? `sess_${lowerId()}` : `sess_${(await sha256DerivedId("session", idem.key, "")).slice(0, 26)}`);
  const session = c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sessionId));
  const now = Date.now();
  const createdAt = new Date(now).toISOString();
  const ttl = readConfig(c.env).tokenTtlSeconds;
  const agentId = body.orchestrator_agent_id ?? "orchestrator";
  const runId = `orun_${lowerId()}`;
  const orchestrator = await mintToken(c.env.TOKEN_SECRET, { role: "orchestrator", sid: sessionId, sub: agentId, run: runId }, now, ttl);
  const observer = await mintToken(c.env.TOKEN_SECRET, { role: "observer", sid: sessionId, sub: "observer", run: null }, now, ttl);
  const answer = { session_id: sessionId, created_at: createdAt, orchestrator: { agent_id: agentId, run_id: runId, ...orchestrator }, observer };
  const result = (await session.create(sessionId, createdAt, { metadata: body.metadata ?? null }, answer, idem)) as RpcResult<{ answer: unknown }>;
  return result.ok ? c.json(result.value.answer as object, 201) : errorResponse(c, result.error);
});

sessionRoutes.post("/:sid/tokens", async (c) => {
  const sid = c.req.param("sid");
  const { body } = await readCommandBody(c, MintTokenBody);
  const session = c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sid));
  if ((await session.describe()) === null) fail("not_found", `no session ${sid}`);
  const runId = body.role === "orchestrator" ? `orun_${lowerId()}` : null;
  // An A2A client sees only what its agent id submitted: each unnamed one gets an id of its own.
  const agentId = body.agent_id ?? (body.role === "a2a_client" ? `a2a_${lowerId()}` : body.role);
  const minted = await mintToken(c.env.TOKEN_SECRET, { role: body.role, sid, sub: agentId, run: runId }, Date.now(), body.ttl_seconds ?? readConfig(c.env).tokenTtlSeconds);
  return c.json({ role: body.role, agent_id: agentId, run_id: runId, ...minted }, 201);
});

sessionRoutes.get("/:sid", async (c) => {
  const sid = c.req.param("sid");
  requireSessionActor(c, sid);
  const snapshot = await c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sid)).snapshot();
  if (snapshot === null) fail("not_found", `no session ${sid}`);
  return c.json(snapshot);
});

sessionRoutes.get("/:sid/tasks", async (c) => {
  const sid = c.req.param("sid");
  requireSessionActor(c, sid);
  const query = validate(TaskListQueryParams, c.req.query());
  const page = await c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sid)).listTasks({
    include_terminal: query.include_terminal ?? false,
    ...(query.status === undefined ? {} : { status: query.status }),
    limit: query.limit ?? 50,
    offset: query.offset ?? 0,
  });
  return c.json(page);
});

sessionRoutes.get("/:sid/actions", async (c) => {
  const sid = c.req.param("sid");
  requireSessionActor(c, sid);
  const query = validate(SessionActionsQueryParams, c.req.query());
  const page = await c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sid)).listOpenActions({ limit: query.limit ?? DEFAULT_ACTION_PAGE_LIMIT, offset: query.offset ?? 0 });
  return c.json(page);
});

sessionRoutes.post("/:sid/tasks", async (c) => {
  const sid = c.req.param("sid");
  const actor = requireSessionActor(c, sid);
  const text = await readBodyText(c);
  const raw = parseJsonObject(text);
  const body = validate(CreateTaskBody, raw);
  const idem = idempotencyOf(c, text);
  const stub = c.env.TASK_GRAPHS.get(c.env.TASK_GRAPHS.idFromName(taskObjectName(sid, body.task_id)));
  const result = (await stub.createTask(actor, raw, idem)) as RpcResult<WriteAnswer>;
  return result.ok ? c.json(result.value, 201) : errorResponse(c, result.error);
});
