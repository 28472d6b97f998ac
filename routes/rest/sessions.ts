/** @module Session routes: create sessions, mint, list and revoke tokens, the session snapshot, task list, task create and the inbox of open actions. */
import { type Context, Hono } from "hono";
import { ulidFactory } from "../../src/lib/ids.js";
import type { MintedToken, RevocationState } from "../../durable-objects/session/session-tokens.js";
import { rememberRevocation } from "../../durable-objects/shared/revocations.js";
import { EmptyBody } from "../../durable-objects/commands/command-schemas.js";
import {
  type AnyWriteAnswer as WriteAnswer,
  CreateSessionBody,
  CreateTaskBody,
  DEFAULT_ACTION_PAGE_LIMIT,
  DEFAULT_TOKEN_PAGE_LIMIT,
  MintTokenBody,
  SessionActionsQueryParams,
  SessionSnapshotQueryParams,
  TaskListQueryParams,
  TokenListQueryParams,
  type TokenListPage,
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
  const createdAt = new Date().toISOString();
  const ttl = readConfig(c.env).tokenTtlSeconds;
  const orchestrator = { agent_id: body.orchestrator_agent_id ?? "orchestrator", run_id: `orun_${lowerId()}` };
  const result = (await session.create(sessionId, createdAt, { metadata: body.metadata ?? null }, orchestrator, ttl, idem)) as RpcResult<{ answer: unknown }>;
  return result.ok ? c.json(result.value.answer as object, 201) : errorResponse(c, result.error);
});

sessionRoutes.post("/:sid/tokens", async (c) => {
  const sid = c.req.param("sid");
  const { body } = await readCommandBody(c, MintTokenBody);
  const runId = body.role === "orchestrator" ? `orun_${lowerId()}` : null;
  // An A2A client sees only what its agent id submitted: each unnamed one gets an id of its own.
  const agentId = body.agent_id ?? (body.role === "a2a_client" ? `a2a_${lowerId()}` : body.role);
  const ttl = body.ttl_seconds ?? readConfig(c.env).tokenTtlSeconds;
  const minted = (await sessionStub(c, sid).mintToken({ role: body.role, sid, sub: agentId, run: runId }, ttl, makerExpiry(c))) as RpcResult<MintedToken>;
  if (!minted.ok) return errorResponse(c, minted.error);
  return c.json({ role: body.role, agent_id: agentId, run_id: runId, ...minted.value }, 201);
});

sessionRoutes.get("/:sid/tokens", async (c) => {
  const sid = c.req.param("sid");
  const query = validate(TokenListQueryParams, c.req.query());
  const page = (await sessionStub(c, sid).listTokens(query.limit ?? DEFAULT_TOKEN_PAGE_LIMIT, query.cursor ?? null)) as RpcResult<TokenListPage>;
  return page.ok ? c.json(page.value) : errorResponse(c, page.error);
});

sessionRoutes.delete("/:sid/tokens/:token_id", async (c) => {
  const sid = c.req.param("sid");
  const result = (await sessionStub(c, sid).revokeToken(c.req.param("token_id"))) as RpcResult<{ revoked: { token_id: string; revoked_at: string }; state: RevocationState }>;
  if (!result.ok) return errorResponse(c, result.error);
  rememberRevocation(sid, result.value.state);
  return c.json(result.value.revoked);
});

sessionRoutes.post("/:sid/tokens/revoke-all", async (c) => {
  const sid = c.req.param("sid");
  await readCommandBody(c, EmptyBody);
  const caller = c.get("caller");
  const agentId = caller.kind === "token" ? caller.claims.sub : "orchestrator";
  const runId = `orun_${lowerId()}`;
  const result = (await sessionStub(c, sid).revokeAllTokens({ role: "orchestrator", sid, sub: agentId, run: runId }, readConfig(c.env).tokenTtlSeconds, makerExpiry(c))) as RpcResult<{ minted: MintedToken; state: RevocationState }>;
  if (!result.ok) return errorResponse(c, result.error);
  rememberRevocation(sid, result.value.state);
  return c.json({ role: "orchestrator", agent_id: agentId, run_id: runId, ...result.value.minted }, 201);
});

/** The session object of `sid`. */
function sessionStub(c: Context<AppEnv>, sid: string) {
  return c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sid));
}

/** A token minted for a token caller expires no later than the caller's own; the admin's are bounded by ttl alone. */
function makerExpiry(c: Context<AppEnv>): number | undefined {
  const caller = c.get("caller");
  return caller.kind === "token" ? caller.claims.exp : undefined;
}


sessionRoutes.get("/:sid", async (c) => {
  const sid = c.req.param("sid");
  requireSessionActor(c, sid);
  const query = validate(SessionSnapshotQueryParams, c.req.query());
  const snapshot = await c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sid)).snapshot(query.blocked_after ?? 0);
  if (snapshot === null) fail("not_found", `no session ${sid}`);
  return c.json(snapshot);
});

sessionRoutes.get("/:sid/tasks", async (c) => {
  const sid = c.req.param("sid");
  requireSessionActor(c, sid);
  const query = validate(TaskListQueryParams, c.req.query());
  const page = await c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sid)).listTasks({
    include_terminal: query.include_terminal ?? false,
    include_archived: query.include_archived ?? false,
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
