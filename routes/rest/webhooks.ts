/**
 * @module Signed webhooks (docs/api.md "Delivery and notifications"): subscribe, list, read and delete a session's
 * subscriptions, page through a subscription's deliveries, and send a failed delivery again (orchestrator only, by
 * the catalog's roles, checked before a route runs). The session holds the subscriptions and the replica of their
 * deliveries; a retry goes to the task object that owns the delivery.
 */
import { type Context, Hono } from "hono";
import { EmptyBody } from "../../durable-objects/commands/command-schemas.js";
import { validate } from "../../durable-objects/commands/command-json.js";
import { taskObjectName } from "../../durable-objects/shared/env.js";
import { errorResponse, fail } from "../../durable-objects/shared/http-errors.js";
import type { RpcResult } from "../../durable-objects/shared/rpc-result.js";
import { scopeIdempotency } from "../../durable-objects/task/storage/idempotency-store.js";
import { type CreatedWebhook, CreateWebhookBody, DEFAULT_DELIVERY_PAGE_LIMIT, type Webhook, type WebhookDelivery, WebhookDeliveryQueryParams, type WebhookDeliveryPage } from "../../src/contract/index.js";
import { type AppEnv, requireSessionActor } from "../http/auth.js";
import { readCommandBody } from "../http/body.js";

/** Routes under /v1/sessions. */
export const webhookRoutes = new Hono<AppEnv>();

/** Longest webhook id (a webhook's `wh_…`, or an A2A push config's own id) and delivery id a path may name. */
const MAX_WEBHOOK_ID = 128;
const MAX_DELIVERY_ID = 200;

function sessionOf(c: Context<AppEnv>, sid: string) {
  return c.env.SESSIONS.get(c.env.SESSIONS.idFromName(sid));
}

/** The path's webhook id; one too long to be any is validation_error, never a lookup. */
function webhookIdOf(c: Context<AppEnv>): string {
  const id = c.req.param("webhook_id")!;
  if (id.length > MAX_WEBHOOK_ID) fail("validation_error", `a webhook id is at most ${MAX_WEBHOOK_ID} characters`, { webhook_id: id.slice(0, 100) });
  return id;
}

webhookRoutes.post("/:sid/webhooks", async (c) => {
  const sid = c.req.param("sid");
  const actor = requireSessionActor(c, sid);
  const { body, idem } = await readCommandBody(c, CreateWebhookBody);
  const subscription = { kind: "webhook" as const, url: body.url, events: body.events, ...(body.description === undefined ? {} : { description: body.description }) };
  const result = (await sessionOf(c, sid).createWebhook(subscription, scopeIdempotency(actor, idem))) as RpcResult<CreatedWebhook>;
  return result.ok ? c.json(result.value, 201) : errorResponse(c, result.error);
});

webhookRoutes.get("/:sid/webhooks", async (c) => {
  const sid = c.req.param("sid");
  const session = sessionOf(c, sid);
  if ((await session.describe()) === null) fail("not_found", `no session ${sid}`);
  return c.json({ webhooks: (await session.listWebhooks()) as Webhook[] });
});

webhookRoutes.get("/:sid/webhooks/:webhook_id", async (c) => {
  const result = (await sessionOf(c, c.req.param("sid")).getWebhook(webhookIdOf(c))) as RpcResult<Webhook>;
  return result.ok ? c.json(result.value) : errorResponse(c, result.error);
});

webhookRoutes.delete("/:sid/webhooks/:webhook_id", async (c) => {
  const result = (await sessionOf(c, c.req.param("sid")).deleteWebhook(webhookIdOf(c))) as RpcResult<{ webhook_id: string }>;
  return result.ok ? c.json(result.value) : errorResponse(c, result.error);
});

webhookRoutes.get("/:sid/webhooks/:webhook_id/deliveries", async (c) => {
  const webhookId = webhookIdOf(c);
  const q = validate(WebhookDeliveryQueryParams, c.req.query());
  const query = { limit: q.limit ?? DEFAULT_DELIVERY_PAGE_LIMIT, ...(q.status === undefined ? {} : { status: q.status }), ...(q.after === undefined ? {} : { after: q.after }) };
  const result = (await sessionOf(c, c.req.param("sid")).listWebhookDeliveries(webhookId, query)) as RpcResult<WebhookDeliveryPage>;
  return result.ok ? c.json(result.value) : errorResponse(c, result.error);
});

// The session's replica says which task holds the delivery; that task's object owns its state and sends it again.
webhookRoutes.post("/:sid/webhooks/:webhook_id/deliveries/:delivery_id/retry", async (c) => {
  const sid = c.req.param("sid");
  const webhookId = webhookIdOf(c);
  const deliveryId = c.req.param("delivery_id");
  if (deliveryId.length > MAX_DELIVERY_ID) fail("validation_error", `a delivery id is at most ${MAX_DELIVERY_ID} characters`, { delivery_id: deliveryId.slice(0, 100) });
  await readCommandBody(c, EmptyBody);
  const found = (await sessionOf(c, sid).getWebhookDelivery(webhookId, deliveryId)) as RpcResult<WebhookDelivery>;
  if (!found.ok) return errorResponse(c, found.error);
  const task = c.env.TASK_GRAPHS.get(c.env.TASK_GRAPHS.idFromName(taskObjectName(sid, found.value.task_id)));
  const result = (await task.retryWebhookDelivery(deliveryId)) as RpcResult<{ delivery: WebhookDelivery }>;
  return result.ok ? c.json(result.value) : errorResponse(c, result.error);
});
