/**
 * @module The bench routes, for `npm run bench:session` only: served when the Worker's BENCH_SEED var is "1" (a
 * local `wrangler dev --var BENCH_SEED:1`; never set in production), and then only to the admin token. Without
 * the var every path here is 404, as if there were no route. Outside /v1 and the route catalog: not the API.
 */
import { Hono } from "hono";
import { z } from "zod";
import type { RpcResult } from "../../durable-objects/shared/rpc-result.js";
import { MAX_SEED_ROWS, type SeedResult } from "../../durable-objects/session/session-bench.js";
import { type AppEnv, authenticate, requireAdmin } from "../http/auth.js";
import { readCommandBody } from "../http/body.js";
import { errorResponse, fail } from "../../durable-objects/shared/http-errors.js";

/** POST /_bench/sessions/{sid}/seed: index rows copied from a confirmed task of the session. */
const SeedBody = z.strictObject({
  template_task_id: z.string().min(1).max(200),
  count: z.number().int().min(1).max(MAX_SEED_ROWS),
  prefix: z.string().regex(/^[A-Za-z0-9_-]{1,40}$/),
});

/** Routes under /_bench. */
export const benchRoutes = new Hono<AppEnv>();

benchRoutes.use("*", async (c, next) => {
  if (c.env.BENCH_SEED !== "1") fail("not_found", `no route ${c.req.method} ${new URL(c.req.url).pathname}`);
  await next();
});
benchRoutes.use("*", authenticate);
benchRoutes.use("*", async (c, next) => {
  requireAdmin(c);
  await next();
});

benchRoutes.post("/sessions/:sid/seed", async (c) => {
  const { body } = await readCommandBody(c, SeedBody);
  const session = c.env.SESSIONS.get(c.env.SESSIONS.idFromName(c.req.param("sid")));
  const result = (await session.benchSeed(body.template_task_id, body.count, body.prefix)) as RpcResult<SeedResult>;
  return result.ok ? c.json(result.value, 201) : errorResponse(c, result.error);
});

/**
 * POST /_bench/floor/write: the object probe of /health/object plus one SQLite write, answered once durable: the
 * floor under any write request (an unbatched step makes one durable commit; the probe makes none).
 */
benchRoutes.post("/floor/write", async (c) => {
  const writes = await c.env.SESSIONS.get(c.env.SESSIONS.idFromName("health-probe")).benchFloorWrite();
  return c.json({ ok: true, writes });
});

benchRoutes.get("/sessions/:sid/counters", async (c) => {
  const session = c.env.SESSIONS.get(c.env.SESSIONS.idFromName(c.req.param("sid")));
  return c.json(await session.benchCounters());
});

/**
 * POST /_bench/objects/{name}/touch: one call to the task object `_bench/{name}`, which a new name makes new (its
 * start and empty schema, no task): the floor under a task's create, which must make its object.
 */
benchRoutes.post("/objects/:name/touch", async (c) => {
  const name = c.req.param("name");
  if (!/^[A-Za-z0-9_-]{1,80}$/.test(name)) fail("validation_error", "name is 1 to 80 letters, digits, _ or -", { name });
  const entry = (await c.env.TASK_GRAPHS.get(c.env.TASK_GRAPHS.idFromName(`_bench/${name}`)).indexEntry()) as RpcResult<unknown>;
  return entry.ok ? c.json({ has_task: entry.value !== null }) : errorResponse(c, entry.error);
});
