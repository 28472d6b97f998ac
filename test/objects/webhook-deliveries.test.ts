/**
 * Webhook deliveries end to end in the runtime (docs/api.md "Delivery and notifications"): a subscription of the
 * session gets its task events signed as Standard Webhooks sign them — verified here by the `standardwebhooks`
 * library, not our code — in WAL order; a receiver failing three times gets the event four times with one
 * webhook-id; 410 Gone disables the subscription; outcomes show in the task read model and the session's
 * delivery list; a crash between the commit and the send, or during the send, loses nothing (the platform's
 * reset of the object, its outbox's send port held, as the delegation outbox's crash tests do).
 */
import { runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { inject, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import type { WebhookOutbox } from "../../durable-objects/task/webhook-outbox.js";
import type { TaskGraphObject } from "../../durable-objects/task/task-graph-object.js";
import type { CreatedWebhook } from "../../src/contract/index.js";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { BASE, bindings, eventually, expectOk, taskStub, uniqueId, walExport } from "../support/support.js";
import type { ReceivedRequest } from "../support/webhook-receiver.js";

const base = inject("webhookReceiverBase");
const sessionStub = (sid: string) => bindings.SESSIONS.get(bindings.SESSIONS.idFromName(sid));

/** Subscribes the session to `events` at the receiver's `/<id>/<behaviour>`. */
async function subscribe(s: TestSession, id: string, behaviour: string, events: string[]): Promise<CreatedWebhook> {
  return unwrap(await sessionStub(s.sid).createWebhook({ kind: "webhook", url: `${base}/${id}/${behaviour}`, events }));
}

function unwrap<T>(result: { ok: true; value: T } | { ok: false; error: { code: string; message: string } }): T {
  if (!result.ok) throw new Error(`${result.error.code}: ${result.error.message}`);
  return result.value;
}

async function received(id: string): Promise<ReceivedRequest[]> {
  return (await (await fetch(`${base}/_received/${id}`)).json()) as ReceivedRequest[];
}

/** Each request verified by the library with the subscription's secret; the parsed bodies. */
function verified(secret: string, requests: ReceivedRequest[]): { type: string; timestamp: string; data: any }[] {
  const wh = new Webhook(secret);
  return requests.map((r) => wh.verify(r.body, r.headers) as { type: string; timestamp: string; data: any });
}

async function taskView(s: TestSession, path: string): Promise<any> {
  return expectOk(await call("GET", path, s.orch));
}

/** A task of steps a, b; a worker completes both and the orchestrator the task. */
async function runToCompletion(s: TestSession, path: string): Promise<void> {
  const w = await dispatch(s, path, { agent_id: "w1", max_steps: 2 });
  for (const id of ["a", "b"]) {
    expectOk(await call("POST", `${path}/steps/${id}/claim`, w.token));
    expectOk(await call("POST", `${path}/steps/${id}/status`, w.token, { status: "completed" }));
  }
  const task = await taskView(s, path);
  if (task.task.status !== "completed") expectOk(await call("POST", `${path}/complete`, s.orch, {}));
}

describe("signed deliveries", { timeout: 30_000 }, () => {
  it("Should deliver each subscribed event signed (verified by the standardwebhooks library) and in WAL order, and show it delivered", async () => {
    const s = await newSession();
    const id = uniqueId("in-order");
    const hook = await subscribe(s, id, "ok", ["task.created", "task.started", "task.completed", "task.attempt.completed"]);
    const tid = uniqueId("t");
    const path = await newTask(s, tid, [step("a"), step("b", ["a"])]);
    await runToCompletion(s, path);
    const requests = await eventually(async () => {
      const got = await received(id);
      expect(got.map((r) => JSON.parse(r.body).type)).toContain("task.completed");
      return got;
    }, 10_000);
    const bodies = verified(hook.secret, requests);
    expect(bodies.map((b) => b.type)).toEqual(["task.created", "task.started", "task.attempt.completed", "task.attempt.completed", "task.completed"]);
    const sequences = bodies.map((b) => b.data.sequence as number);
    expect([...sequences].sort((x, y) => x - y)).toEqual(sequences);
    expect(bodies.every((b) => b.data.taskId === tid && b.data.sessionId === s.sid)).toBe(true);
    expect(new Set(requests.map((r) => r.headers["webhook-id"])).size).toBe(requests.length);
    // A body signed with another secret does not verify: the library really checks.
    expect(() => new Webhook(`whsec_${btoa("another secret of 32 bytes......")}`).verify(requests[0]!.body, requests[0]!.headers)).toThrow();
    await eventually(async () => {
      const view = await taskView(s, path);
      expect(view.task.webhook_delivery_state).toEqual([{ webhook_id: hook.webhook_id, state: "delivered", pending: 0, delivered: 5, failed: 0, last_status_code: 200 }]);
    }, 5_000);
  });

  it("Should try a receiver failing three times a fourth time, with one webhook-id, and record it delivered after 4 attempts", async () => {
    const s = await newSession();
    const id = uniqueId("flaky");
    const hook = await subscribe(s, id, "flaky-3", ["task.created"]);
    const path = await newTask(s, uniqueId("t"), [step("a")]);
    const requests = await eventually(async () => {
      const got = await received(id);
      expect(got).toHaveLength(4);
      return got;
    }, 15_000);
    expect(new Set(requests.map((r) => r.headers["webhook-id"])).size).toBe(1);
    expect(verified(hook.secret, requests).every((b) => b.type === "task.created")).toBe(true);
    await eventually(async () => {
      const [state] = (await taskView(s, path)).task.webhook_delivery_state;
      expect(state).toMatchObject({ state: "delivered", delivered: 1, last_status_code: 200 });
    }, 5_000);
    const page = await eventually(async () => {
      const listed = unwrap(await sessionStub(s.sid).listWebhookDeliveries(hook.webhook_id, { limit: 10 }));
      expect(listed.deliveries[0]).toMatchObject({ status: "delivered", attempts: 4, last_status_code: 200, event_type: "task.created", next_attempt_at: null });
      return listed;
    }, 5_000);
    expect(page.deliveries[0]!.delivery_id).toBe(requests[0]!.headers["webhook-id"]);
  });

  it("Should disable a subscription whose receiver answers 410 Gone, record the delivery failed, and send it nothing more", async () => {
    const s = await newSession();
    const id = uniqueId("gone");
    const hook = await subscribe(s, id, "status-410", ["task.created", "task.attempt.started"]);
    const path = await newTask(s, uniqueId("t"), [step("a")]);
    await eventually(async () => expect((await sessionStub(s.sid).getWebhook(hook.webhook_id)) as any).toMatchObject({ ok: true, value: { status: "disabled" } }), 10_000);
    // Recorded failed once the task object read the subscriptions again: nothing after it is queued.
    await eventually(async () => expect((await taskView(s, path)).task.webhook_delivery_state[0]).toMatchObject({ state: "failed", failed: 1 }), 5_000);
    const w = await dispatch(s, path, { agent_id: "w1" });
    expectOk(await call("POST", `${path}/steps/a/claim`, w.token));
    await eventually(async () => {
      const [state] = (await taskView(s, path)).task.webhook_delivery_state;
      expect(state).toMatchObject({ state: "failed", failed: 1, last_status_code: 410 });
    }, 5_000);
    expect(await received(id)).toHaveLength(1);
  });

  it("Should retry a failed delivery when asked, sending it again with the same webhook-id", async () => {
    const s = await newSession();
    const id = uniqueId("retry");
    const hook = await subscribe(s, id, "status-410", ["task.created"]);
    const tid = uniqueId("t");
    await newTask(s, tid, [step("a")]);
    const [first] = await eventually(async () => {
      const got = await received(id);
      expect(got).toHaveLength(1);
      return got;
    }, 10_000);
    const failed = await eventually(async () => {
      const view = await taskStub(s.sid, tid).retryWebhookDelivery(first!.headers["webhook-id"]!);
      expect(view.ok).toBe(true);
      return view;
    }, 5_000);
    expect(failed).toMatchObject({ ok: true, value: { delivery: { status: "pending", attempts: 0, webhook_id: hook.webhook_id } } });
    // The subscription is disabled: the retried delivery fails at once, unsent, as removed.
    await eventually(async () => {
      const view = await taskView(s, `/v1/sessions/${s.sid}/tasks/${tid}`);
      expect(view.task.webhook_delivery_state[0]).toMatchObject({ state: "failed" });
    }, 5_000);
    expect(await received(id)).toHaveLength(1);
    const again = await taskStub(s.sid, tid).retryWebhookDelivery("dlv_nope");
    expect(again).toMatchObject({ ok: false, error: { code: "not_found" } });
  });
});

/**
 * Holds the task object's webhook send port: "before" the request goes out, or "after" the receiver answered (the
 * answer then lost, as in a crash before the outcome is committed).
 */
async function holdSends(stub: ReturnType<typeof taskStub>, when: "before" | "after"): Promise<{ seen: number }> {
  const held = { seen: 0 };
  await runInDurableObject(stub, (instance: TaskGraphObject) => {
    const outbox = (instance as unknown as { shell: { webhooks: WebhookOutbox } }).shell.webhooks;
    const real = outbox.ports;
    outbox.ports = {
      ...real,
      send: async (...args) => {
        held.seen += 1;
        if (when === "after") await real.send(...args);
        return new Promise(() => {});
      },
    };
  });
  return held;
}

/** The platform's reset of the task object (the hung send dies with it), then the alarm its restart armed. */
async function crashAndRecover(sid: string, tid: string): Promise<void> {
  const crashed = await runInDurableObject(taskStub(sid, tid), (_i, state) => state.abort("crash")).then(
    () => null,
    (e: unknown) => e,
  );
  expect(String(crashed)).toContain("crash");
  await runDurableObjectAlarm(taskStub(sid, tid));
}

describe("a crash loses nothing", { timeout: 30_000 }, () => {
  for (const when of ["before", "after"] as const) {
    it(`Should deliver an event whose commit was followed by a crash ${when === "before" ? "before the send" : "during the send (the receiver got it, its answer was lost)"}`, async () => {
      const s = await newSession();
      const id = uniqueId(`crash-${when}`);
      const hook = await subscribe(s, id, "ok", ["task.attempt.started"]);
      const tid = uniqueId("t");
      const path = await newTask(s, tid, [step("a")]);
      const held = await holdSends(taskStub(s.sid, tid), when);
      const w = await dispatch(s, path, { agent_id: "w1" });
      expectOk(await call("POST", `${path}/steps/a/claim`, w.token));
      await eventually(async () => expect(held.seen).toBe(1), 5_000);
      expect(await received(id)).toHaveLength(when === "after" ? 1 : 0);
      // While the send is under way the alarm still comes by (WEBHOOK_TIMEOUT_MS and a margin): a dead object is woken to send again.
      // (Read until set: an alarm run under way, e.g. one pushing the index, has taken the stored one and re-arms as it ends.)
      await eventually(async () => {
        const alarm = await runInDurableObject(taskStub(s.sid, tid), (_i, state) => state.storage.getAlarm());
        expect(alarm).not.toBeNull();
        expect(alarm! - Date.now()).toBeLessThanOrEqual(10_000 + 5_000);
      }, 3_000);
      await crashAndRecover(s.sid, tid);
      const requests = await eventually(async () => {
        const got = await received(id);
        expect(got).toHaveLength(when === "after" ? 2 : 1);
        return got;
      }, 10_000);
      expect(new Set(requests.map((r) => r.headers["webhook-id"])).size).toBe(1);
      expect(verified(hook.secret, requests).map((b) => b.type)).toEqual(requests.map(() => "task.attempt.started"));
      await eventually(async () => expect((await taskView(s, path)).task.webhook_delivery_state[0]).toMatchObject({ state: "delivered", delivered: 1 }), 5_000);
    });
  }
});

describe("a send that throws", { timeout: 30_000 }, () => {
  it("Should record a throwing send as a failed try, backed off, not send it again at once", async () => {
    const s = await newSession();
    const id = uniqueId("throws");
    await subscribe(s, id, "ok", ["task.attempt.started"]);
    const tid = uniqueId("t");
    const path = await newTask(s, tid, [step("a")]);
    const calls = { n: 0 };
    await runInDurableObject(taskStub(s.sid, tid), (instance: TaskGraphObject) => {
      const outbox = (instance as unknown as { shell: { webhooks: WebhookOutbox } }).shell.webhooks;
      outbox.ports = {
        ...outbox.ports,
        send: async () => {
          calls.n += 1;
          throw new Error("boom");
        },
      };
    });
    const w = await dispatch(s, path, { agent_id: "w1" });
    expectOk(await call("POST", `${path}/steps/a/claim`, w.token));
    await eventually(async () => expect((await taskView(s, path)).task.webhook_delivery_state[0]).toMatchObject({ state: "pending", pending: 1, last_status_code: null }), 5_000);
    // The next try waits WEBHOOK_RETRY_BASE_MS (100 ms here), then 400 ms: a handful of calls in a second, not a loop.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(calls.n).toBeGreaterThanOrEqual(1);
    expect(calls.n).toBeLessThanOrEqual(4);
  });
});

describe("secrets", { timeout: 30_000 }, () => {
  it("Should show a webhook's secret in its create's answer only: never in the WAL export, the task, the session, the subscription list or read, the deliveries, the events", async () => {
    const s = await newSession();
    const id = uniqueId("secret");
    const created = await call("POST", `/v1/sessions/${s.sid}/webhooks`, s.orch, { url: `${base}/${id}/ok`, events: ["task.created", "task.completed"] });
    const hook = expectOk(created, 201);
    expect(hook.secret).toMatch(/^whsec_/);
    const tid = uniqueId("t");
    const path = await newTask(s, tid, [step("a"), step("b", ["a"])]);
    await runToCompletion(s, path);
    await eventually(async () => expect((await received(id)).length).toBe(2), 10_000);
    await eventually(async () => expect((await taskView(s, path)).task.webhook_delivery_state[0]).toMatchObject({ delivered: 2 }), 5_000);
    const reads = [
      await walExport(path, s.orch),
      JSON.stringify(await taskView(s, path)),
      JSON.stringify(expectOk(await call("GET", `/v1/sessions/${s.sid}`, s.orch))),
      JSON.stringify(expectOk(await call("GET", `/v1/sessions/${s.sid}/webhooks`, s.orch))),
      JSON.stringify(expectOk(await call("GET", `/v1/sessions/${s.sid}/webhooks/${hook.webhook_id}`, s.orch))),
      JSON.stringify(await eventually(async () => {
        const page = expectOk(await call("GET", `/v1/sessions/${s.sid}/webhooks/${hook.webhook_id}/deliveries`, s.orch));
        expect(page.deliveries).toHaveLength(2);
        return page;
      }, 5_000)),
      // The task is completed: its event stream ends.
      await (await SELF.fetch(`${BASE}${path}/events?after_seq=0`, { headers: { authorization: `Bearer ${s.orch}` } })).text(),
      // Each delivery itself carries the signature, never the key.
      JSON.stringify(await received(id)),
    ];
    const key = hook.secret.slice("whsec_".length);
    for (const text of reads) {
      expect(text).not.toContain(hook.secret);
      expect(text).not.toContain(key);
    }
  });
});
