/**
 * The session's subscriptions and its replica of their deliveries (durable-objects/session/session-webhooks.ts),
 * through the session object's RPC: secrets leave only in a create's answer and in the delivery targets a task
 * object reads; an A2A push config is replaced by its id; the replica keeps the newest row of each delivery, drops
 * the rows of deleted subscriptions, pages newest first with a cursor bound to its webhook, and goes with its task
 * when retention removes the task.
 */
import { describe, expect, it } from "vitest";
import type { IndexEntry, WebhookDelivery } from "../../src/contract/index.js";
import { newSession, newTask, step } from "../support/helpers.js";
import { bindings, taskStub, uniqueId } from "../support/support.js";

const sessionStub = (sid: string) => bindings.SESSIONS.get(bindings.SESSIONS.idFromName(sid));
const HOOK = "http://127.0.0.1:9/hook";

function unwrap<T>(result: { ok: true; value: T } | { ok: false; error: { code: string; message: string } }): T {
  if (!result.ok) throw new Error(`${result.error.code}: ${result.error.message}`);
  return result.value;
}

function deliveryRow(webhookId: string, taskId: string, n: number, over: Partial<WebhookDelivery> = {}): WebhookDelivery {
  return {
    delivery_id: `dlv_${webhookId}_${n}`, webhook_id: webhookId, event_type: "task.updated", event_id: `evt_${n}`, task_id: taskId, status: "pending",
    attempts: 0, last_status_code: null, last_error: null, next_attempt_at: "2030-01-01T00:00:00.000Z", updated_at: `2030-01-01T00:00:${String(n % 60).padStart(2, "0")}.000Z`, ...over,
  };
}

/** A session with one real task, and the task's index entry to push deliveries with. */
async function sessionWithTask(): Promise<{ sid: string; tid: string; entry: IndexEntry }> {
  const s = await newSession();
  const tid = uniqueId("hooked");
  await newTask(s, tid, [step("a")]);
  const entry = unwrap(await taskStub(s.sid, tid).indexEntry())!;
  return { sid: s.sid, tid, entry };
}

describe("subscriptions", () => {
  it("Should answer a webhook's secret once, and never list, read or target it but for a task object", async () => {
    const { sid, tid } = await sessionWithTask();
    const session = sessionStub(sid);
    const created = unwrap(await session.createWebhook({ kind: "webhook", url: HOOK, events: ["task.completed", "task.failed"], description: "done" }));
    expect(created.webhook_id).toMatch(/^wh_[0-9a-z]{26}$/);
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(atob(created.secret.slice(6))).toHaveLength(32);
    expect(created.webhook).toMatchObject({ kind: "webhook", url: HOOK, events: ["task.completed", "task.failed"], description: "done", task_id: null, status: "active", disabled_reason: null });
    const reads = [await session.listWebhooks(), await session.getWebhook(created.webhook_id)];
    for (const read of reads) expect(JSON.stringify(read)).not.toContain(created.secret.slice(6));
    expect(await session.deliveryTargets(tid)).toEqual([expect.objectContaining({ webhook_id: created.webhook_id, secret: created.secret, kind: "webhook", token: null })]);
  });

  it("Should refuse a URL the outbound rules refuse, and writes nothing", async () => {
    const { sid } = await sessionWithTask();
    const session = sessionStub(sid);
    const refused = await session.createWebhook({ kind: "webhook", url: "http://10.0.0.1/hook", events: ["task.created"] });
    expect(refused).toMatchObject({ ok: false, error: { code: "validation_error" } });
    expect(JSON.stringify(refused)).toContain("is not in OUTBOUND_ALLOWLIST");
    expect(await session.listWebhooks()).toEqual([]);
  });

  it("Should keep an A2A push config by its id: a second with the same id replaces it, other tasks do not see it", async () => {
    const { sid, tid } = await sessionWithTask();
    const session = sessionStub(sid);
    const first = unwrap(await session.createWebhook({ kind: "a2a_push", webhook_id: "cfg-1", task_id: tid, url: HOOK, events: ["task.completed"], token: "t1", authorization: null }));
    expect(first).toMatchObject({ webhook_id: "cfg-1", secret: "", webhook: { kind: "a2a_push", task_id: tid } });
    const again = unwrap(await session.createWebhook({ kind: "a2a_push", webhook_id: "cfg-1", task_id: tid, url: `${HOOK}/2`, events: ["task.failed"], token: "t2", authorization: "Bearer x" }));
    expect(again.webhook).toMatchObject({ url: `${HOOK}/2`, events: ["task.failed"], created_at: first.webhook.created_at });
    expect(await session.listWebhooks(tid)).toHaveLength(1);
    expect(JSON.stringify(await session.listWebhooks())).not.toMatch(/Bearer x|"t2"/);
    expect(await session.deliveryTargets(tid)).toEqual([expect.objectContaining({ webhook_id: "cfg-1", token: "t2", authorization: "Bearer x", secret: null })]);
    expect(await session.deliveryTargets("another-task")).toEqual([]);
    // The id of another task's config is not taken over.
    expect(await session.createWebhook({ kind: "a2a_push", webhook_id: "cfg-1", task_id: "another-task", url: HOOK, events: ["task.failed"], token: null, authorization: null })).toMatchObject({ ok: false, error: { code: "validation_error" } });
  });

  it("Should disable a subscription (listed disabled, no longer a target) and delete one (not_found after)", async () => {
    const { sid, tid } = await sessionWithTask();
    const session = sessionStub(sid);
    const a = unwrap(await session.createWebhook({ kind: "webhook", url: HOOK, events: ["task.created"] }));
    const b = unwrap(await session.createWebhook({ kind: "webhook", url: HOOK, events: ["task.created"] }));
    await session.disableWebhook(a.webhook_id, "the receiver answered 410 Gone");
    expect(unwrap(await session.getWebhook(a.webhook_id))).toMatchObject({ status: "disabled", disabled_reason: "the receiver answered 410 Gone" });
    expect((await session.deliveryTargets(tid)).map((t) => t.webhook_id)).toEqual([b.webhook_id]);
    expect(unwrap(await session.deleteWebhook(b.webhook_id))).toEqual({ webhook_id: b.webhook_id });
    expect(await session.getWebhook(b.webhook_id)).toMatchObject({ ok: false, error: { code: "not_found" } });
    expect(await session.deleteWebhook(b.webhook_id)).toMatchObject({ ok: false, error: { code: "not_found" } });
    expect((await session.listWebhooks()).map((w) => w.webhook_id)).toEqual([a.webhook_id]);
  });

  it("Should answer not_found for a session that was never created", async () => {
    expect(await sessionStub(uniqueId("nosession")).createWebhook({ kind: "webhook", url: HOOK, events: ["task.created"] })).toMatchObject({ ok: false, error: { code: "not_found" } });
  });
});

describe("the delivery replica", () => {
  it("Should keep the newest row of each delivery and drop rows of subscriptions it does not hold", async () => {
    const { sid, tid, entry } = await sessionWithTask();
    const session = sessionStub(sid);
    const hook = unwrap(await session.createWebhook({ kind: "webhook", url: HOOK, events: ["task.updated"] }));
    const first = deliveryRow(hook.webhook_id, tid, 1);
    await session.upsertTask(entry, [first, deliveryRow("wh_gone", tid, 2)]);
    const delivered = { ...first, status: "delivered" as const, attempts: 1, last_status_code: 200, next_attempt_at: null, updated_at: "2030-01-01T00:01:00.000Z" };
    await session.upsertTask(entry, [delivered]);
    // An older push arriving late changes nothing.
    await session.upsertTask(entry, [first]);
    expect(unwrap(await session.getWebhookDelivery(hook.webhook_id, first.delivery_id))).toEqual(delivered);
    expect(await session.getWebhookDelivery("wh_gone", "dlv_wh_gone_2")).toMatchObject({ ok: false, error: { code: "not_found" } });
    expect(await session.getWebhookDelivery(hook.webhook_id, "dlv_none")).toMatchObject({ ok: false, error: { code: "not_found" } });
  });

  it("Should page newest first, by status, with a cursor bound to its webhook", async () => {
    const { sid, tid, entry } = await sessionWithTask();
    const session = sessionStub(sid);
    const hook = unwrap(await session.createWebhook({ kind: "webhook", url: HOOK, events: ["task.updated"] }));
    const other = unwrap(await session.createWebhook({ kind: "webhook", url: HOOK, events: ["task.updated"] }));
    const rows = Array.from({ length: 7 }, (_, i) => deliveryRow(hook.webhook_id, tid, i + 1, i % 3 === 0 ? { status: "failed", next_attempt_at: null } : {}));
    await session.upsertTask(entry, [...rows, deliveryRow(other.webhook_id, tid, 100)]);
    const seen: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = unwrap(await session.listWebhookDeliveries(hook.webhook_id, { limit: 3, ...(after === undefined ? {} : { after }) }));
      seen.push(...page.deliveries.map((d) => d.delivery_id));
      if (page.next_cursor === null) break;
      after = page.next_cursor;
    }
    expect(seen).toEqual(rows.map((r) => r.delivery_id).reverse());
    const failed = unwrap(await session.listWebhookDeliveries(hook.webhook_id, { status: "failed", limit: 500 }));
    expect(failed).toEqual({ deliveries: [rows[6], rows[3], rows[0]], next_cursor: null });
    const firstPage = unwrap(await session.listWebhookDeliveries(hook.webhook_id, { limit: 1 }));
    expect(await session.listWebhookDeliveries(other.webhook_id, { limit: 1, after: firstPage.next_cursor! })).toMatchObject({ ok: false, error: { code: "validation_error" } });
    expect(await session.listWebhookDeliveries(hook.webhook_id, { limit: 1, after: "not-a-cursor" })).toMatchObject({ ok: false, error: { code: "validation_error" } });
    expect(await session.listWebhookDeliveries(hook.webhook_id, { limit: 0 })).toMatchObject({ ok: false, error: { code: "validation_error" } });
    expect(await session.listWebhookDeliveries("wh_none", { limit: 1 })).toMatchObject({ ok: false, error: { code: "not_found" } });
  });

  it("Should drop a subscription's rows with it, and a task's rows and push configs when retention removes the task", async () => {
    const { sid, tid, entry } = await sessionWithTask();
    const session = sessionStub(sid);
    unwrap(await session.createWebhook({ kind: "a2a_push", webhook_id: `${tid}.cfg`, task_id: tid, url: HOOK, events: ["task.completed"], token: null, authorization: null }));
    const a = unwrap(await session.createWebhook({ kind: "webhook", url: HOOK, events: ["task.updated"] }));
    const b = unwrap(await session.createWebhook({ kind: "webhook", url: HOOK, events: ["task.updated"] }));
    await session.upsertTask(entry, [deliveryRow(a.webhook_id, tid, 1), deliveryRow(b.webhook_id, tid, 2)]);
    unwrap(await session.deleteWebhook(a.webhook_id));
    // Re-created under a new id, the old rows are not its own; a late push of them is dropped.
    await session.upsertTask(entry, [deliveryRow(a.webhook_id, tid, 1)]);
    expect(await session.getWebhookDelivery(a.webhook_id, `dlv_${a.webhook_id}_1`)).toMatchObject({ ok: false, error: { code: "not_found" } });
    expect(await session.forgetTask(tid, entry.wal_name, entry.wal_seq)).toEqual({ forgotten: true });
    expect(unwrap(await session.listWebhookDeliveries(b.webhook_id, { limit: 10 })).deliveries).toEqual([]);
    expect(await session.listWebhooks(tid)).toEqual([]);
    expect((await session.listWebhooks()).map((w) => w.webhook_id).sort()).toEqual([b.webhook_id]);
  });
});
