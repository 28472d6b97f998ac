/**
 * The webhook routes (POST/GET/DELETE /v1/sessions/{sid}/webhooks…, docs/api.md "Delivery and notifications"): a
 * create answers its `whsec_` secret once and no read ever carries it; a URL the outbound rules refuse (the
 * runtime's own network, a host not in OUTBOUND_ALLOWLIST) and bad events are 400 with nothing stored; the caps
 * hold at their maximum and refuse one past it (100 subscriptions, a 2,048-character URL); a delete is final;
 * the delivery list validates its query and pages the session's replica; a failed delivery's retry reaches its
 * task through the replica; a retried create with its Idempotency-Key answers the same subscription; the MCP
 * tools run the same routes.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.js";
import { MAX_WEBHOOK_URL_LENGTH, MAX_WEBHOOKS_PER_SESSION, type WebhookDelivery } from "../../src/contract/index.js";
import { call, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { connectMcp } from "../support/mcp-clients.js";
import { bindings, eventually, expectError, expectOk, taskStub, uniqueId } from "../support/support.js";

const hooksOf = (sid: string) => `/v1/sessions/${sid}/webhooks`;
const sessionStub = (sid: string) => bindings.SESSIONS.get(bindings.SESSIONS.idFromName(sid));
/** A loopback receiver: OUTBOUND_ALLOWLIST is "loopback" in the tests (vitest.config.ts). */
const HOOK = "http://127.0.0.1:9/hook";

async function subscribe(s: TestSession, body: Record<string, unknown> = { url: HOOK, events: ["task.completed"] }): Promise<{ webhook_id: string; secret: string; webhook: any }> {
  return expectOk(await call("POST", hooksOf(s.sid), s.orch, body), 201);
}

/** Sets the outbound allowlist the session object checks URLs against, as if OUTBOUND_ALLOWLIST said so. */
async function withAllowlist(sid: string, allowlist: string[]): Promise<void> {
  await runInDurableObject(sessionStub(sid), (instance: SessionObject) => {
    (instance as unknown as { webhooks: { allowlist: readonly string[] } }).webhooks.allowlist = allowlist;
  });
}

describe("Subscribing", () => {
  it("Should answer the whsec_ secret once at creation, and no list or read of the subscription carries it", async () => {
    const s = await newSession();
    const created = await subscribe(s, { url: HOOK, events: ["task.completed", "action.required"], description: "CI notifications" });
    expect(created).toEqual({
      webhook_id: expect.stringMatching(/^wh_[0-9a-z]{26}$/),
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      webhook: { webhook_id: created.webhook_id, kind: "webhook", url: HOOK, events: ["task.completed", "action.required"], description: "CI notifications", task_id: null, status: "active", disabled_reason: null, created_at: expect.any(String) },
    });
    const key = created.secret.slice("whsec_".length);
    const list = await call("GET", hooksOf(s.sid), s.orch);
    expect(expectOk(list)).toEqual({ webhooks: [created.webhook] });
    const one = await call("GET", `${hooksOf(s.sid)}/${created.webhook_id}`, s.orch);
    expect(expectOk(one)).toEqual(created.webhook);
    for (const answer of [list, one]) {
      expect(JSON.stringify(answer.body)).not.toContain(key);
      expect(JSON.stringify(answer.body)).not.toContain("whsec_");
    }
    // Two creates, two secrets.
    expect((await subscribe(s)).secret).not.toBe(created.secret);
  });

  it("Should refuse the runtime's own network and hosts outside OUTBOUND_ALLOWLIST with 400 validation_error, storing nothing", async () => {
    const s = await newSession();
    const refusedHere = ["http://10.0.0.1/", "http://169.254.169.254/latest/meta-data", "http://192.168.1.1/hook", "https://hooks.example/in", "ftp://127.0.0.1/hook", "not a url"];
    for (const url of refusedHere) {
      const res = await call("POST", hooksOf(s.sid), s.orch, { url, events: ["task.completed"] });
      expectError(res, 400, "validation_error");
      expect(res.body.error.details.reason, url).toEqual(expect.any(String));
    }
    // With no allowlist, loopback is refused too; with "*", every address of the runtime's own network still is.
    await withAllowlist(s.sid, []);
    for (const url of ["http://127.0.0.1:9/", "http://[::1]/hook"]) {
      const res = await call("POST", hooksOf(s.sid), s.orch, { url, events: ["task.completed"] });
      expectError(res, 400, "validation_error");
      expect(res.body.error.message, url).toContain("is not in OUTBOUND_ALLOWLIST");
    }
    await withAllowlist(s.sid, ["*"]);
    for (const url of ["http://10.0.0.1/", "http://127.0.0.1:9/", "http://[::1]/hook", "http://169.254.169.254/latest/meta-data", "http://0x7f.1/hook"]) {
      const res = await call("POST", hooksOf(s.sid), s.orch, { url, events: ["task.completed"] });
      expectError(res, 400, "validation_error");
      expect(res.body.error.message, url).toMatch(/is a (loopback|private|link-local) address: OUTBOUND_ALLOWLIST must name it/);
    }
    expect(expectOk(await call("GET", hooksOf(s.sid), s.orch))).toEqual({ webhooks: [] });
    // A public host "*" allows is taken.
    expect((await subscribe(s, { url: "https://hooks.example/in", events: ["task.completed"] })).webhook.url).toBe("https://hooks.example/in");
  });

  it("Should refuse bad events and unknown fields with 400 validation_error", async () => {
    const s = await newSession();
    for (const body of [{ url: HOOK }, { url: HOOK, events: [] }, { url: HOOK, events: ["task.exploded"] }, { url: HOOK, events: "task.completed" }, { url: HOOK, events: ["task.completed"], secret: "whsec_mine" }, { events: ["task.completed"] }]) {
      expectError(await call("POST", hooksOf(s.sid), s.orch, body), 400, "validation_error");
    }
    expect(expectOk(await call("GET", hooksOf(s.sid), s.orch))).toEqual({ webhooks: [] });
  });

  it("Should take a URL of 2,048 characters and refuse one of 2,049", async () => {
    const s = await newSession();
    const longest = HOOK + "/" + "x".repeat(MAX_WEBHOOK_URL_LENGTH - HOOK.length - 1);
    expect(longest).toHaveLength(2_048);
    expect((await subscribe(s, { url: longest, events: ["task.completed"] })).webhook.url).toBe(longest);
    expectError(await call("POST", hooksOf(s.sid), s.orch, { url: `${longest}x`, events: ["task.completed"] }), 400, "validation_error");
  });

  it("Should hold 100 subscriptions and answer the 101st 409 limit_exceeded, storing nothing", async () => {
    const s = await newSession();
    expect(MAX_WEBHOOKS_PER_SESSION).toBe(100);
    for (let i = 0; i < 100; i++) await subscribe(s, { url: `${HOOK}/${i}`, events: ["task.completed"] });
    const refused = await call("POST", hooksOf(s.sid), s.orch, { url: `${HOOK}/100`, events: ["task.completed"] });
    expectError(refused, 409, "limit_exceeded");
    expect(refused.body.error.details).toEqual({ limit: 100, value: 101, setting: "MAX_WEBHOOKS_PER_SESSION" });
    expect(expectOk(await call("GET", hooksOf(s.sid), s.orch)).webhooks).toHaveLength(100);
    // A deleted one no longer counts.
    const first = expectOk(await call("GET", hooksOf(s.sid), s.orch)).webhooks[0].webhook_id;
    expectOk(await call("DELETE", `${hooksOf(s.sid)}/${first}`, s.orch));
    await subscribe(s, { url: `${HOOK}/100`, events: ["task.completed"] });
  });

  it("Should answer a create retried with its Idempotency-Key as the first, and the key with another body 422 idempotency_conflict", async () => {
    const s = await newSession();
    const key = { "idempotency-key": uniqueId("hook-key") };
    const first = expectOk(await call("POST", hooksOf(s.sid), s.orch, { url: HOOK, events: ["task.completed"] }, key), 201);
    const again = expectOk(await call("POST", hooksOf(s.sid), s.orch, { url: HOOK, events: ["task.completed"] }, key), 201);
    expect(again).toEqual(first);
    expect(expectOk(await call("GET", hooksOf(s.sid), s.orch)).webhooks).toHaveLength(1);
    expectError(await call("POST", hooksOf(s.sid), s.orch, { url: `${HOOK}/other`, events: ["task.completed"] }, key), 422, "idempotency_conflict");
  });

  it("Should answer 404 for a session that does not exist", async () => {
    const s = await newSession();
    // A token of session s naming another session is refused for its scope; the listing of s itself is fine.
    expectError(await call("GET", hooksOf(uniqueId("nosuch")), s.orch), 403, "permission_denied");
    expectError(await call("GET", `${hooksOf(s.sid)}/wh_none`, s.orch), 404, "not_found");
  });
});

describe("Deleting", () => {
  it("Should delete a subscription: 404 for it afterwards, on read, on delete and on its deliveries", async () => {
    const s = await newSession();
    const { webhook_id } = await subscribe(s);
    expect(expectOk(await call("DELETE", `${hooksOf(s.sid)}/${webhook_id}`, s.orch))).toEqual({ webhook_id });
    expectError(await call("GET", `${hooksOf(s.sid)}/${webhook_id}`, s.orch), 404, "not_found");
    expectError(await call("DELETE", `${hooksOf(s.sid)}/${webhook_id}`, s.orch), 404, "not_found");
    expectError(await call("GET", `${hooksOf(s.sid)}/${webhook_id}/deliveries`, s.orch), 404, "not_found");
    expect(expectOk(await call("GET", hooksOf(s.sid), s.orch))).toEqual({ webhooks: [] });
  });
});

describe("Deliveries", () => {
  function delivery(webhookId: string, taskId: string, n: number, status: WebhookDelivery["status"]): WebhookDelivery {
    return {
      delivery_id: `dlv_${taskId}_${n}`, webhook_id: webhookId, event_type: "task.completed", event_id: `evt_${n}`, task_id: taskId, status, attempts: status === "pending" ? 0 : 1,
      last_status_code: status === "delivered" ? 200 : status === "failed" ? 500 : null, last_error: null, next_attempt_at: status === "pending" ? new Date().toISOString() : null, updated_at: new Date().toISOString(),
    };
  }

  it("Should validate the query: a bad status, limit 0 or 501, a foreign cursor are 400", async () => {
    const s = await newSession();
    const { webhook_id } = await subscribe(s);
    const path = `${hooksOf(s.sid)}/${webhook_id}/deliveries`;
    expect(expectOk(await call("GET", path, s.orch))).toEqual({ deliveries: [], next_cursor: null });
    for (const query of ["status=exploded", "status=PENDING", "limit=0", "limit=501", "limit=abc", "after=", "nope=1"]) {
      expectError(await call("GET", `${path}?${query}`, s.orch), 400, "validation_error");
    }
    expectError(await call("GET", `${path}?after=bm90LWEtY3Vyc29y`, s.orch), 400, "validation_error");
    expect(expectOk(await call("GET", `${path}?limit=500&status=failed`, s.orch))).toEqual({ deliveries: [], next_cursor: null });
  });

  it("Should page the deliveries the session holds, newest first, by status", async () => {
    const s = await newSession();
    const tid = uniqueId("delivering");
    await newTask(s, tid, [step("a")]);
    const { webhook_id } = await subscribe(s);
    const entry = (await taskStub(s.sid, tid).indexEntry()) as { ok: true; value: any };
    const rows = [delivery(webhook_id, tid, 1, "delivered"), delivery(webhook_id, tid, 2, "failed"), delivery(webhook_id, tid, 3, "pending")];
    await sessionStub(s.sid).upsertTask(entry.value, rows);
    const path = `${hooksOf(s.sid)}/${webhook_id}/deliveries`;
    const first = expectOk(await call("GET", `${path}?limit=2`, s.orch));
    expect(first.deliveries).toEqual([rows[2], rows[1]]);
    const second = expectOk(await call("GET", `${path}?limit=2&after=${first.next_cursor}`, s.orch));
    expect(second).toEqual({ deliveries: [rows[0]], next_cursor: null });
    expect(expectOk(await call("GET", `${path}?status=failed`, s.orch)).deliveries).toEqual([rows[1]]);
    // A retry of a delivery the session does not hold is 404, before any task is asked.
    expectError(await call("POST", `${path}/dlv_none/retry`, s.orch, {}), 404, "not_found");
    expectError(await call("POST", `${path}/${"d".repeat(201)}/retry`, s.orch, {}), 400, "validation_error");
  });
});

describe("Retrying a delivery", () => {
  it("Should find a failed delivery's task through the session and send it again: 200 with the delivery owed afresh", { timeout: 30_000 }, async () => {
    const s = await newSession();
    // A receiver answering 410 Gone: the delivery fails at its first try (and the subscription is disabled).
    const { webhook_id } = await subscribe(s, { url: `${inject("webhookReceiverBase")}/${uniqueId("retry-route")}/status-410`, events: ["task.created"] });
    await newTask(s, uniqueId("retried"), [step("a")]);
    const path = `${hooksOf(s.sid)}/${webhook_id}/deliveries`;
    const failed = await eventually(async () => {
      const [only] = expectOk(await call("GET", `${path}?status=failed`, s.orch)).deliveries;
      expect(only).toMatchObject({ status: "failed", attempts: 1, last_status_code: 410 });
      return only as WebhookDelivery;
    }, 10_000);
    const retried = expectOk(await call("POST", `${path}/${failed.delivery_id}/retry`, s.orch, {}));
    expect(retried).toEqual({ delivery: expect.objectContaining({ delivery_id: failed.delivery_id, webhook_id, status: "pending", attempts: 0 }) });
    expectError(await call("POST", `${path}/dlv_none/retry`, s.orch, {}), 404, "not_found");
  });
});

describe("The webhook tools over MCP", () => {
  it("Should create, list, read, page and delete a subscription through the MCP tools, never listing its secret", async () => {
    const s = await newSession();
    const client = await connectMcp(s.orch);
    try {
      const created = await client.callTool({ name: "create_webhook", arguments: { url: HOOK, events: ["task.failed"] } });
      expect(created.isError ?? false).toBe(false);
      const { webhook_id, secret } = created.structuredContent as { webhook_id: string; secret: string };
      expect(secret).toMatch(/^whsec_/);
      const listed = await client.callTool({ name: "list_webhooks", arguments: {} });
      expect(listed.structuredContent).toEqual({ webhooks: [expect.objectContaining({ webhook_id, url: HOOK })] });
      expect(JSON.stringify(listed)).not.toContain(secret.slice(6));
      expect((await client.callTool({ name: "get_webhook", arguments: { webhook_id } })).structuredContent).toMatchObject({ webhook_id, events: ["task.failed"] });
      expect((await client.callTool({ name: "list_webhook_deliveries", arguments: { webhook_id, status: "failed", limit: 10 } })).structuredContent).toEqual({ deliveries: [], next_cursor: null });
      expect((await client.callTool({ name: "delete_webhook", arguments: { webhook_id } })).structuredContent).toEqual({ webhook_id });
      const gone = await client.callTool({ name: "get_webhook", arguments: { webhook_id } });
      expect([gone.isError, gone.structuredContent.status]).toEqual([true, 404]);
    } finally {
      await client.close();
    }
  });
});
