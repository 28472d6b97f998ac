/**
 * @module The demo's webhook (docs/api.md "Delivery and notifications"): a small receiver on this machine's loopback
 * subscribed to the session's `task.completed` events; every delivery is verified with the Standard Webhooks library
 * (`standardwebhooks`) under the secret the subscription answered once, and announced as it arrives; `show` prints
 * the verified message of one task. A server that may not call this machine (OUTBOUND_ALLOWLIST without `loopback`)
 * refuses the subscription: the demo says so and goes on without it.
 */
import { type Arrival, WebhookReceiver } from "./bench/harness/webhook-receiver.js";

/** The demo's subscription and its receiver. */
export interface DemoWebhook {
  /** Prints the verified delivery of `taskId`'s task.completed, waiting for it up to `timeoutMs`. */
  show(taskId: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** Starts the receiver and subscribes it to the session's `task.completed`; null (said through `log`) when the server refuses it. */
export async function startDemoWebhook(base: string, sessionId: string, orchestratorToken: string, log: (line: string) => void): Promise<DemoWebhook | null> {
  const receiver = await WebhookReceiver.start();
  const url = receiver.url("demo", "completed");
  const res = await fetch(`${base}/v1/sessions/${sessionId}/webhooks`, {
    method: "POST",
    headers: { authorization: `Bearer ${orchestratorToken}`, "content-type": "application/json" },
    body: JSON.stringify({ url, events: ["task.completed"], description: "npm start demo: task.completed" }),
  });
  const answer = (await res.json()) as { webhook_id?: string; secret?: string; error?: { code?: string; message?: string } };
  if (res.status !== 201 || answer.secret === undefined) {
    await receiver.close();
    log(`  (no webhook: the server answered ${res.status} ${answer.error?.code ?? ""} to a receiver on ${url}: ${answer.error?.message ?? ""}; OUTBOUND_ALLOWLIST=loopback in .dev.vars allows it)`);
    return null;
  }
  receiver.register("demo", "completed", answer.secret);
  log(`  Webhook ${answer.webhook_id}: task.completed of every task of the session → ${url} (signed; verified on arrival)`);
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
      log(`\nWebhook delivery of ${taskId} (POST ${url}, webhook-id ${arrival.webhookId}), its webhook-signature verified by standardwebhooks (data abridged):`);
      log(`  ${JSON.stringify(shown)}`);
    },
    close: () => receiver.close(),
  };
}
