/** @module Task graph routes (link_tasks / unlink_tasks): link and unlink tasks, and read the session's task graph. */
import { Hono } from "hono";
import { DEFAULT_GRAPH_PAGE_LIMIT, GraphQueryParams, LinkTasksBody, type TaskGraphPage, type TaskLink } from "../../src/contract/index.js";
import type { RpcResult } from "../../durable-objects/shared/rpc-result.js";
import { type AppEnv, requireSessionActor } from "../http/auth.js";
import { validate } from "../../durable-objects/commands/command-json.js";
import { readCommandBody } from "../http/body.js";
import { errorResponse, fail } from "../../durable-objects/shared/http-errors.js";

/** Routes under /v1/sessions. */
export const linkRoutes = new Hono<AppEnv>();

/** What a link id may be: what link_tasks mints (`lnk_` and a lowercase ULID). */
const LINK_ID_PATTERN = /^lnk_[0-9a-z]{26}$/;

linkRoutes.post("/:sid/links", async (c) => {
  const sid = c.req.param("sid");
  const actor = requireSessionActor(c, sid);
  const { body, idem } = await readCommandBody(c, LinkTasksBody);
  const session = c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sid));
  if ((await session.describe()) === null) fail("not_found", `no session ${sid}`);
  const result = (await session.linkTasks(actor, body, idem)) as RpcResult<{ link: TaskLink; created: boolean }>;
  return result.ok ? c.json({ link: result.value.link }, result.value.created ? 201 : 200) : errorResponse(c, result.error);
});

linkRoutes.delete("/:sid/links/:link_id", async (c) => {
  const sid = c.req.param("sid");
  const linkId = c.req.param("link_id");
  if (!LINK_ID_PATTERN.test(linkId)) fail("validation_error", "the link id must match ^lnk_[0-9a-z]{26}$", { link_id: linkId.slice(0, 100) });
  const result = (await c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sid)).unlinkTasks(linkId)) as RpcResult<{ link: TaskLink }>;
  return result.ok ? c.json(result.value) : errorResponse(c, result.error);
});

linkRoutes.get("/:sid/graph", async (c) => {
  const sid = c.req.param("sid");
  requireSessionActor(c, sid);
  const query = validate(GraphQueryParams, c.req.query());
  const session = c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sid));
  if ((await session.describe()) === null) fail("not_found", `no session ${sid}`);
  const result = (await session.taskGraph({ limit: query.limit ?? DEFAULT_GRAPH_PAGE_LIMIT, ...(query.cursor === undefined ? {} : { cursor: query.cursor }) })) as RpcResult<TaskGraphPage>;
  return result.ok ? c.json(result.value) : errorResponse(c, result.error);
});
