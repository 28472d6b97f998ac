/**
 * @module The demo's webhook (docs/api.md "Delivery and notifications"): the orchestrator subscribes a small receiver
 * on this machine's loopback to the session's `task.completed` events with the SDK (`createWebhook`); the receiver
 * verifies every delivery with the SDK's `verifyWebhook` under the secret the subscription answered once, and
 * announces it as it arrives; `show` prints the verified message of one task. A server that may not call this
 * machine (OUTBOUND_ALLOWLIST without `loopback`) refuses the subscription: the demo says so and goes on without it.
 */
import { isRuntimeApiError, type RuntimeClient } from "../src/client/index.js";
import { verifyWebhook } from "../src/client/webhook-verify.js";
import { type Arrival, WebhookReceiver } from "./bench/harness/webhook-receiver.js";

/** The demo's subscription and its receiver. */
export interface DemoWebhook {
  /** Prints the verified delivery of `taskId`'s task.completed, waiting for it up to `timeoutMs`. */
  show(taskId: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** Starts the receiver and subscribes it to the session's `task.completed`; null (said through `log`) when the server refuses it. */
export async function startDemoWebhook(orch: RuntimeClient, sessionId: string, log: (line: string) => void): Promise<DemoWebhook | null> {
  const receiver = await WebhookReceiver.start();
  const url = receiver.url("demo", "completed");
  let created: Awaited<ReturnType<RuntimeClient["createWebhook"]>>;
  try {
    created = await orch.createWebhook(sessionId, { url, events: ["task.completed"], description: "npm start demo: task.completed" });
  } catch (e) {
    await receiver.close();
    if (!isRuntimeApiError(e)) throw e;
    log(`  (no webhook: the server answered ${e.status} ${e.code} to a receiver on ${url}: ${e.message}; OUTBOUND_ALLOWLIST=loopback in .dev.vars allows it)`);
    return null;
  }
  const { secret } = created;
  receiver.register("demo", "completed", (body, headers) => verifyWebhook(secret, body, headers));
  log(`  Webhook ${created.webhook_id}: task.completed of every task of the session → ${url} (signed; verified on arrival)`);
  const waiters = new Map<string, (a: Arrival) => void>();
  receiver.onArrival = (a) => {
    log(`  ⚑ webhook ${a.webhookId}: ${a.type} of ${a.taskId}, signature verified`);
    waiters.get(a.taskId)?.(a);
  };
  return {
    async show(taskId, timeoutMs = 10_000) {
      let arrival = receiver.arrivals.find((a) => a.taskId === taskId);
      if (arrival === undefined) {
        let timer: NodeJS.Timeout | undefined;
        arrival = await new Promise<Arrival | undefined>((resolve) => {
          waiters.set(taskId, resolve);
          timer = setTimeout(() => resolve(undefined), timeoutMs);
        });
        clearTimeout(timer);
        waiters.delete(taskId);
      }
      if (arrival === undefined) return log(`\nWebhook: no task.completed of ${taskId} arrived within ${timeoutMs / 1000} s`);
      const { data } = arrival.message;
      const shown = { type: arrival.message.type, timestamp: arrival.message.timestamp, data: { type: data.type, taskId: data.taskId, sequence: data.sequence, eventId: data.eventId, status: data.status, timestamp: data.timestamp } };
      log(`\nWebhook delivery of ${taskId} (POST ${url}, webhook-id ${arrival.webhookId}), verified by the SDK's verifyWebhook (data abridged):`);
      log(`  ${JSON.stringify(shown)}`);
    },
    close: () => receiver.close(),
  };
}
