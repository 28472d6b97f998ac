/**
 * Webhook deliveries in the dashboard, in real Chromium against a real `wrangler dev` (its own, with one try per
 * delivery, so a receiver's 500 fails a delivery at once): a webhook subscribed to a loopback receiver in this
 * test that answers 500; a task's `task.created` delivery fails; the orchestrator's session view lists it under
 * Failed deliveries (event, task link, attempts, last status), the task view's Delivery panel shows the
 * subscription failed as the task read model says; Retry sends it again (the receiver holds it: the row shows
 * pending), the receiver answers 200 and the row says delivered, while a task view left open turns delivered live
 * (no reload); once the page's token is revoked, a Retry shows the runtime's refusal on its row. An
 * observer's task view shows the delivery state by subscription id and never asks for the subscriptions.
 *
 * Needs Chromium: `CHROMIUM_PATH`, else /usr/bin/chromium (Debian's `chromium`, which `.ci/run` installs).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RuntimeClient, type WebhookDelivery } from "../../src/client/index.js";
import { type DevServer, defaultAdminToken, startDevServer, stopDevServer } from "../../scripts/dev-server.js";
import { CHROMIUM, launchChromium, openDashboard, routeTo, screenshot, seriousA11yViolations, watchedPage, type WatchedPage } from "./dashboard-support.js";

/** How long the page or the runtime may take to show something (a bound on a wait, not a timed assertion). */
const SHOWN = { timeout: 20_000 };

/**
 * A loopback webhook receiver whose answer the test sets: `fail` answers 500; `hold` keeps each request
 * unanswered until `release` answers the held ones. Records each request's webhook-id header.
 */
interface Receiver {
  readonly url: string;
  mode: "fail" | "hold";
  readonly received: { webhookId: string; type: string }[];
  /** Resolves once `n` requests are held. */
  held(n: number): Promise<void>;
  release(status: number): void;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const held: ServerResponse[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const receiver: Receiver = {
    url: "",
    mode: "fail",
    received: [],
    held: (n) => new Promise((resolve) => (held.length >= n ? resolve() : waiters.push({ n, resolve }))),
    release(status) {
      for (const res of held.splice(0)) res.writeHead(status, { "content-type": "text/plain" }).end("released");
    },
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
  const server: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    for await (const chunk of req) body += String(chunk);
    receiver.received.push({ webhookId: String(req.headers["webhook-id"] ?? ""), type: (JSON.parse(body) as { type: string }).type });
    if (receiver.mode === "fail") return void res.writeHead(500, { "content-type": "text/plain" }).end("receiver down");
    held.push(res);
    for (const w of waiters.splice(0)) if (held.length >= w.n) w.resolve();
    else waiters.push(w);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return Object.assign(receiver, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks` });
}

let server: DevServer;
let receiver: Receiver;
let browser: Browser;
let workDir: string;
const pages: WatchedPage[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`);
  workDir = mkdtempSync(path.join(os.tmpdir(), "dashboard-webhooks-e2e-"));
  // One try per delivery: the receiver's first 500 fails it. A held request is answered well within the timeout.
  [server, receiver, browser] = await Promise.all([
    startDevServer({ workDir, logLevel: "warn", startupTimeoutMs: 90_000, vars: { WEBHOOK_MAX_TRIES: "1", WEBHOOK_TIMEOUT_MS: "30000" } }),
    startReceiver(),
    launchChromium(),
  ]);
});

afterAll(async () => {
  for (const p of pages) await p.context.close().catch(() => undefined);
  await browser?.close();
  receiver?.release(200);
  await receiver?.close();
  if (server !== undefined) await stopDevServer(server);
  if (workDir !== undefined) rmSync(workDir, { recursive: true, force: true });
});

async function freshPage(): Promise<WatchedPage> {
  const p = await watchedPage(browser);
  pages.push(p);
  return p;
}

const ONE_STEP = [{ step_id: "only", title: "Only", summary: "Do it", depends_on_step_ids: [] }];

describe("webhook deliveries in the dashboard, in Chromium against wrangler dev", () => {
  it("Should list a failed delivery and the task's delivery state, retry it from the page (pending, then delivered), and show a refused retry", async () => {
    const admin = new RuntimeClient({ baseUrl: server.base, token: defaultAdminToken(), batching: false });
    const created = await admin.createSession({ orchestrator_agent_id: "e2e-orchestrator" });
    const sid = created.session_id;
    const orch = admin.withToken(created.orchestrator.token);
    // The pages get an orchestrator token of their own, which the end of the test revokes.
    const pageToken = await orch.mintToken(sid, { role: "orchestrator", agent_id: "e2e-dashboard" });
    const { webhook_id: webhookId } = await orch.createWebhook(sid, { url: receiver.url, events: ["task.created"], description: "ops" });

    // The task's creation is owed to the webhook; the receiver's 500 fails it on its only try.
    await orch.createTask(sid, { task_id: "report", wal_name: "report", title: "Report", summary: "", steps: ONE_STEP });
    let failed: WebhookDelivery | undefined;
    await expect.poll(async () => (failed = (await orch.listWebhookDeliveries(sid, webhookId, { status: "failed" })).deliveries[0]), SHOWN).toBeDefined();
    expect(failed).toMatchObject({ event_type: "task.created", task_id: "report", attempts: 1, last_status_code: 500 });
    const readModel = (await orch.getTask({ sessionId: sid, taskId: "report" })).task.webhook_delivery_state;
    expect(readModel).toEqual([{ webhook_id: webhookId, state: "failed", pending: 0, delivered: 0, failed: 1, last_status_code: 500 }]);

    // The orchestrator's session view: the failed delivery under its subscription.
    const { page, offLoopback, pageErrors } = await freshPage();
    await openDashboard(page, server.base, pageToken.token);
    const section = page.locator('section[aria-label="Failed deliveries"]');
    const row = section.locator(`[data-webhook-id="${webhookId}"] tr[data-delivery-id="${failed!.delivery_id}"]`);
    await row.and(page.locator('[data-phase="failed"]')).waitFor(SHOWN);
    expect(await section.locator(`[data-webhook-id="${webhookId}"] h3`).textContent()).toContain(receiver.url);
    expect(await row.locator('td[data-label="Event"]').textContent()).toBe("task.created");
    expect(await row.locator('td[data-label="Task"] a').getAttribute("href")).toBe("#/tasks/report");
    expect(await row.locator("[data-attempts]").textContent()).toBe("1");
    expect(await row.locator('td[data-label="Last answer"]').textContent()).toContain("HTTP 500");
    expect(await seriousA11yViolations(page), "session view with a failed delivery").toEqual([]);
    await screenshot(page, "session-failed-deliveries");

    // The task view, through the row's link: the Delivery panel says what the read model says.
    await row.locator('td[data-label="Task"] a').click();
    const panelRow = page.locator(`section[aria-labelledby="delivery-title"] tr[data-webhook-id="${webhookId}"]`);
    await panelRow.and(page.locator('[data-delivery-state="failed"]')).waitFor(SHOWN);
    expect(await panelRow.locator("[data-counts]").textContent()).toBe("0 delivered · 0 pending · 1 failed");
    expect(await panelRow.locator("[data-last-status]").textContent()).toBe("HTTP 500");
    // The subscription's URL once the page has read the subscriptions.
    await expect.poll(() => panelRow.locator('td[data-label="Subscription"]').textContent(), SHOWN).toContain(receiver.url);
    expect(await seriousA11yViolations(page), "task view with its delivery state").toEqual([]);
    await screenshot(page, "task-delivery-panel");

    // A second page stays on the task view: it must turn delivered without a reload.
    const watcher = await freshPage();
    await openDashboard(watcher.page, server.base, pageToken.token, "report");
    const watched = watcher.page.locator(`section[aria-labelledby="delivery-title"] tr[data-webhook-id="${webhookId}"]`);
    await watched.and(watcher.page.locator('[data-delivery-state="failed"]')).waitFor(SHOWN);
    await watcher.page.evaluate(() => ((globalThis as { notReloaded?: boolean }).notReloaded = true));

    // Retry from the session view: the receiver holds the try, so the delivery is pending and the row says so.
    receiver.mode = "hold";
    const sentBefore = receiver.received.length;
    await routeTo(page, "#/");
    await row.and(page.locator('[data-phase="failed"]')).waitFor(SHOWN);
    await row.getByRole("button", { name: "Retry" }).click();
    await row.and(page.locator('[data-phase="pending"]')).waitFor(SHOWN);
    await receiver.held(1);
    // Sent again with the same webhook-id: one message, whatever the tries.
    expect(receiver.received.slice(sentBefore)).toEqual([{ webhookId: failed!.delivery_id, type: "task.created" }]);
    expect(receiver.received[0]!.webhookId).toBe(failed!.delivery_id);
    // Still pending while the receiver holds it, after the session's reads that the retry's push caused.
    expect((await orch.listWebhookDeliveries(sid, webhookId, { status: "pending" })).deliveries.map((d) => d.delivery_id)).toEqual([failed!.delivery_id]);
    expect(await row.getAttribute("data-phase")).toBe("pending");

    // The receiver answers 200: the row says delivered, and the task view left open shows it delivered live.
    receiver.release(200);
    await row.and(page.locator('[data-phase="delivered"]')).waitFor(SHOWN);
    expect(await row.locator('td[data-label="Last answer"]').textContent()).toBe("HTTP 2xx");
    expect((await orch.listWebhookDeliveries(sid, webhookId, { status: "delivered" })).deliveries.map((d) => d.delivery_id)).toEqual([failed!.delivery_id]);
    await expect.poll(() => page.locator("[data-failed-count]").textContent(), SHOWN).toBe("0");
    await watched.and(watcher.page.locator('[data-delivery-state="delivered"]')).waitFor(SHOWN);
    expect(await watched.locator("[data-counts]").textContent()).toBe("1 delivered · 0 pending · 0 failed");
    expect(await watched.locator("[data-last-status]").textContent()).toBe("HTTP 200");
    expect(await watcher.page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded)).toBe(true);
    await screenshot(page, "session-delivery-retried");

    // Another failure; then the page's token is revoked: its Retry is refused and the row says why, as do the reads.
    receiver.mode = "fail";
    await orch.createTask(sid, { task_id: "second", wal_name: "second", title: "Second", summary: "", steps: ONE_STEP });
    const second = section.locator("tr[data-delivery-id]", { has: page.locator('a[href="#/tasks/second"]') });
    await second.and(page.locator('[data-phase="failed"]')).waitFor(SHOWN);
    await orch.revokeToken(sid, pageToken.token_id);
    await second.getByRole("button", { name: "Retry" }).click();
    const refusal = second.getByRole("alert");
    await refusal.waitFor(SHOWN);
    expect(await refusal.textContent()).toMatch(/^Retry refused: .*revoked/);
    await section.locator(':scope > p[role="alert"]').waitFor(SHOWN);
    expect(await section.locator(':scope > p[role="alert"]').textContent()).toMatch(/^Could not read the webhook deliveries: .*revoked/);
    // Nothing was sent again: the delivery is as it failed.
    expect((await orch.listWebhookDeliveries(sid, webhookId, { status: "failed" })).deliveries.map((d) => [d.task_id, d.attempts])).toEqual([["second", 1]]);
    await screenshot(page, "session-delivery-refused");

    expect(offLoopback).toEqual([]);
    expect(pageErrors).toEqual([]);
    expect(watcher.offLoopback).toEqual([]);
    expect(watcher.pageErrors).toEqual([]);

    // An observer: the task's delivery state by subscription id, no Failed deliveries, no read of the subscriptions.
    const observer = await freshPage();
    const webhookReads: string[] = [];
    observer.page.on("request", (r) => {
      if (new URL(r.url()).pathname.includes("/webhooks")) webhookReads.push(r.url());
    });
    await openDashboard(observer.page, server.base, created.observer.token, "report");
    const observed = observer.page.locator(`section[aria-labelledby="delivery-title"] tr[data-webhook-id="${webhookId}"]`);
    await observed.and(observer.page.locator('[data-delivery-state="delivered"]')).waitFor(SHOWN);
    expect(await observed.locator('td[data-label="Subscription"]').textContent()).toBe(webhookId);
    await routeTo(observer.page, "#/");
    await observer.page.locator('tr[data-task-id="report"]').waitFor(SHOWN);
    expect(await observer.page.locator('section[aria-label="Failed deliveries"]').count()).toBe(0);
    expect(webhookReads).toEqual([]);
    expect(observer.pageErrors).toEqual([]);
  });

  it("Should say quietly that a task has no webhook deliveries when its session has no webhook", async () => {
    const admin = new RuntimeClient({ baseUrl: server.base, token: defaultAdminToken(), batching: false });
    const created = await admin.createSession({ orchestrator_agent_id: "e2e-orchestrator" });
    await admin.withToken(created.orchestrator.token).createTask(created.session_id, { task_id: "quiet", wal_name: "quiet", title: "Quiet", summary: "", steps: ONE_STEP });
    const { page, pageErrors } = await freshPage();
    await openDashboard(page, server.base, created.orchestrator.token);
    await page.locator('tr[data-task-id="quiet"]').waitFor(SHOWN);
    expect(await page.locator('section[aria-label="Failed deliveries"]').count()).toBe(0);
    await routeTo(page, "#/tasks/quiet");
    const none = page.locator("section[aria-labelledby=\"delivery-title\"] [data-no-deliveries]");
    await none.waitFor(SHOWN);
    expect(await none.textContent()).toBe("No webhook deliveries.");
    expect(await page.locator('section[aria-labelledby="delivery-title"] [role="alert"]').count()).toBe(0);
    expect(pageErrors).toEqual([]);
  });
});
