/**
 * @module The worker project's global setup: starts the loopback webhook receiver (webhook-receiver.ts) in Node and
 * provides its base URL to the tests in workerd (`inject("webhookReceiverBase")`), which reach it through
 * OUTBOUND_ALLOWLIST "loopback" (vitest.config.ts).
 */
import type { TestProject } from "vitest/node";
import { startWebhookReceiver } from "./webhook-receiver.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The loopback webhook receiver, e.g. http://127.0.0.1:41234. */
    webhookReceiverBase: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const receiver = await startWebhookReceiver();
  project.provide("webhookReceiverBase", receiver.base);
  return () => receiver.close();
}
