/**
 * The web dashboard in real Chromium against a real `wrangler dev`: the page is opened with a token in the URL
 * fragment; DAGs are driven through the client SDK from Node while the page follows them live (no reload, no
 * polling); an approver approves from the inbox and the waiting worker goes on; the replay slider rebuilds an
 * earlier DAG; the WAL timeline lists and exports the WAL; the session's schedules show their next run and latest
 * runs; a session whose tasks have all ended shows the recent ones and how many terminal tasks are hidden, one click
 * away; axe-core finds no serious violation; /docs renders offline. Every page may only talk to loopback: any other request is aborted and fails the test.
 * Screenshots go to $DASHBOARD_ARTIFACTS (default: a directory under the system's temp dir).
 *
 * Needs Chromium: `CHROMIUM_PATH`, else /usr/bin/chromium (Debian's `chromium`, which `.ci/run` installs).
 */
import { existsSync, readFileSync } from "node:fs";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { normalizedStepStatus, normalizedTaskStatus, replay, type WalEvent } from "../../src/core/index.js";
import { OPERATIONS } from "../../routes/http/catalog.js";
import { defaultAdminToken } from "../../scripts/dev-server.js";
import {
  ANY_STEP_NODE,
  CHROMIUM,
  completeStep,
  createTask,
  launchChromium,
  newSession,
  openDashboard,
  routeTo,
  screenshot,
  seriousA11yViolations,
  type Session,
  stepNode,
  watchedPage,
  type WatchedPage,
} from "./dashboard-support.js";

/** How long the page may take to show something (a bound on a wait, not a timed assertion). */
const SHOWN = { timeout: 15_000 };

/** The e2e project's shared dev server (test/e2e/support/shared-server.ts). */
let server: { base: string };
let browser: Browser;
const pages: WatchedPage[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`);
  server = { base: inject("sharedDevServerBase") };
  browser = await launchChromium();
});

afterAll(async () => {
  for (const p of pages) await p.context.close().catch(() => undefined);
  await browser?.close();
});

/** A fresh page whose requests are watched (closed after the suite). */
async function freshPage(viewport?: { width: number; height: number }): Promise<WatchedPage> {
  const p = await watchedPage(browser, viewport);
  pages.push(p);
  return p;
}

/** The WAL of a task as the orchestrator exports it. */
async function walOf(s: Session, taskId: string): Promise<WalEvent[]> {
  return (await s.orch.walExport({ sessionId: s.sessionId, taskId }, { limit: 5_000 })).events;
}

/** A small diamond: plan → research, draft → review (optional draft-notes on the side). */
const DIAMOND = [
  { step_id: "plan", title: "Plan", summary: "Split the work", depends_on_step_ids: [] },
  { step_id: "research", title: "Research", summary: "Find facts", depends_on_step_ids: ["plan"] },
  { step_id: "draft", title: "Draft", summary: "Write it", depends_on_step_ids: ["plan"] },
  { step_id: "notes", title: "Notes", summary: "Optional notes", depends_on_step_ids: ["plan"], required: false },
  { step_id: "review", title: "Review", summary: "Check it", depends_on_step_ids: ["research", "draft"] },
];

describe("the dashboard in Chromium against wrangler dev", () => {
  let s: Session;
  const taskId = "diamond";

  beforeAll(async () => {
    s = await newSession(server.base, defaultAdminToken());
    await createTask(s.orch, s.sessionId, taskId, "Diamond report", DIAMOND);
  });

  it("Should serve the dashboard at / with the token taken out of the address, listing the session's tasks", async () => {
    const { page, offLoopback, pageErrors } = await freshPage();
    const requested: string[] = [];
    page.on("request", (r) => requested.push(r.url()));
    await openDashboard(page, server.base, s.observerToken);
    await page.locator(`[data-task-id="${taskId}"] a[href="#/tasks/${taskId}"]`).waitFor(SHOWN);
    expect(page.url(), "the token left the address bar").not.toContain("token=");
    expect(requested.filter((u) => new URL(u).search.includes(encodeURIComponent(s.observerToken).slice(0, 40)) || u.includes(s.observerToken)), "no request carries the token in its URL").toEqual([]);
    await screenshot(page, "session-view");
    expect(offLoopback).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it("Should show each task's normalized status in its row, the session's counts and the filters", async () => {
    const { page, offLoopback } = await freshPage();
    await openDashboard(page, server.base, s.observerToken);
    const tasks = page.locator('section[aria-label="Tasks"]');
    await tasks.waitFor(SHOWN);
    const expected = normalizedTaskStatus(replay(await walOf(s, taskId)));
    await tasks.locator(`[data-task-id="${taskId}"][data-status="${expected}"]`).waitFor(SHOWN);
    for (const name of ["active", "terminal", "failed", "lost", "waiting", "blocked"]) expect(await page.locator(`[data-count="${name}"]`).count(), `count ${name}`).toBeGreaterThan(0);
    await page.locator('select[aria-label="Status"]').waitFor(SHOWN);
    await page.locator('input[type=checkbox][aria-label="Include terminal tasks"]').waitFor(SHOWN);
    expect(offLoopback).toEqual([]);
  });

  it("Should change step nodes' status live, without a reload, as workers complete steps through the SDK", async () => {
    const { page, offLoopback, pageErrors } = await freshPage();
    await openDashboard(page, server.base, s.observerToken, taskId);
    await page.locator(stepNode("plan", "queued")).waitFor(SHOWN);
    expect(await page.locator(ANY_STEP_NODE).count()).toBe(DIAMOND.length);
    // A mark on the window: a reload would lose it.
    await page.evaluate(() => ((globalThis as { notReloaded?: boolean }).notReloaded = true));
    let navigations = 0;
    page.on("framenavigated", (f) => {
      if (f === page.mainFrame()) navigations += 1;
    });

    await completeStep(s.orch, s.sessionId, taskId, "plan");
    await page.locator(stepNode("plan", "completed")).waitFor(SHOWN);
    for (const step of ["research", "draft"]) await completeStep(s.orch, s.sessionId, taskId, step);
    await page.locator(stepNode("research", "completed")).waitFor(SHOWN);
    await page.locator(stepNode("draft", "completed")).waitFor(SHOWN);
    await page.locator(stepNode("review", "queued")).waitFor(SHOWN);
    await completeStep(s.orch, s.sessionId, taskId, "review");
    await page.locator(stepNode("review", "completed")).waitFor(SHOWN);

    expect(await page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded)).toBe(true);
    expect(navigations, "no navigation of the main frame").toBe(0);
    await screenshot(page, "task-view-live");
    expect(offLoopback).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it("Should draw the DAG as an svg whose nodes are focusable, carry the native status in their title, and open a step panel with Enter", async () => {
    const { page, offLoopback } = await freshPage();
    await openDashboard(page, server.base, s.observerToken, taskId);
    const dag = page.locator('svg[aria-label="Task DAG"]');
    await dag.waitFor(SHOWN);
    await page.locator(`svg[aria-label="Task DAG"] g[data-step-id="review"][data-status="completed"][data-native-status="completed"]`).waitFor(SHOWN);
    expect(await dag.locator("g[data-step-id]").count()).toBe(DIAMOND.length);
    const node = dag.locator('g[data-step-id="draft"]');
    expect(await node.getAttribute("tabindex")).toBe("0");
    expect(await node.getAttribute("role")).toBe("button");
    expect(await node.locator("title").textContent()).toContain("completed");
    await node.focus();
    await page.keyboard.press("Enter");
    await page.locator('aside[aria-label="Step draft"]').waitFor(SHOWN);
    const wal = await walOf(s, taskId);
    await expect.poll(() => page.locator("[data-shown-wal-seq]").first().textContent(), SHOWN).toBe(String(wal.at(-1)!.wal_seq));
    await screenshot(page, "task-view-panel");
    expect(offLoopback).toEqual([]);
  });

  it("Should rebuild an earlier DAG with the replay slider and return to the live one", async () => {
    const { page, offLoopback } = await freshPage();
    await openDashboard(page, server.base, s.observerToken, taskId);
    await page.locator(stepNode("review", "completed")).waitFor(SHOWN);
    const wal = await walOf(s, taskId);
    // The last wal_seq at which plan was not yet completed, and what the core says it was then.
    let seq = 1;
    for (let n = 1; n <= wal.length; n++) {
      const state = replay(wal.slice(0, n));
      const plan = state.steps.get("plan");
      if (plan !== undefined && normalizedStepStatus(state, plan) !== "completed") seq = wal[n - 1]!.wal_seq;
    }
    const earlier = replay(wal.filter((e) => e.wal_seq <= seq));
    const planThen = normalizedStepStatus(earlier, earlier.steps.get("plan")!);
    expect(planThen).not.toBe("completed");

    const slider = page.locator('input[type=range][aria-label="Replay to wal_seq"]');
    await slider.waitFor(SHOWN);
    expect(await slider.getAttribute("min")).toBe("1");
    expect(await slider.getAttribute("max")).toBe(String(wal.at(-1)!.wal_seq));
    await slider.fill(String(seq));
    await page.locator(stepNode("plan", planThen)).waitFor(SHOWN);
    await page.locator(stepNode("review", "queued")).waitFor(SHOWN);
    await expect.poll(() => page.locator("[data-shown-wal-seq]").first().textContent(), SHOWN).toBe(String(seq));
    await screenshot(page, "task-view-replay");

    await page.getByRole("button", { name: "Live", exact: true }).click();
    await page.locator(stepNode("plan", "completed")).waitFor(SHOWN);
    await expect.poll(() => page.locator("[data-shown-wal-seq]").first().textContent(), SHOWN).toBe(String(wal.at(-1)!.wal_seq));
    expect(offLoopback).toEqual([]);
  });

  it("Should list every WAL event in the timeline, filter it by step, and export the WAL as JSON Lines", async () => {
    const { page, offLoopback } = await freshPage();
    const exportUrls: string[] = [];
    page.on("request", (r) => {
      if (r.url().includes("/wal")) exportUrls.push(r.url());
    });
    await openDashboard(page, server.base, s.observerToken, taskId);
    const timeline = page.locator('section[aria-label="WAL timeline"]');
    await timeline.waitFor(SHOWN);
    const wal = await walOf(s, taskId);
    await expect.poll(() => timeline.locator("li[data-wal-seq]").count(), SHOWN).toBe(wal.length);

    await timeline.locator('select[aria-label="Step"]').selectOption("draft");
    const draftEvents = wal.filter((e) => JSON.stringify(e).includes('"draft"'));
    await expect.poll(() => timeline.locator("li[data-wal-seq]").count(), SHOWN).toBeLessThan(wal.length);
    const shown = await timeline.locator("li[data-wal-seq]").evaluateAll((els) => els.map((el) => Number(el.getAttribute("data-wal-seq"))));
    expect(shown.length).toBeGreaterThan(0);
    for (const n of shown) expect(draftEvents.map((e) => e.wal_seq), `wal_seq ${n} concerns draft`).toContain(n);

    const [download] = await Promise.all([page.waitForEvent("download", SHOWN), timeline.getByRole("button", { name: "Export WAL" }).click()]);
    const file = await download.path();
    const lines = readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l) as WalEvent);
    expect(lines.map((e) => e.wal_seq)).toEqual(wal.map((e) => e.wal_seq));
    expect(exportUrls.filter((u) => u.includes("token")), "the WAL is fetched with the Authorization header, never a token in the URL").toEqual([]);
    expect(offLoopback).toEqual([]);
  });

  it("Should have no serious or critical axe-core violation on the session view and the task view", async () => {
    const { page, offLoopback } = await freshPage();
    await openDashboard(page, server.base, s.observerToken);
    await page.locator(`[data-task-id="${taskId}"]`).waitFor(SHOWN);
    expect(await seriousA11yViolations(page), "session view").toEqual([]);
    await routeTo(page, `#/tasks/${taskId}`);
    await page.locator(stepNode("review", "completed")).waitFor(SHOWN);
    expect(await seriousA11yViolations(page), "task view").toEqual([]);
    expect(offLoopback).toEqual([]);
  });

  it("Should keep the task view usable on a narrow screen (no horizontal scroll of the page)", async () => {
    const { page, offLoopback } = await freshPage({ width: 390, height: 844 });
    await openDashboard(page, server.base, s.observerToken, taskId);
    await page.locator(stepNode("review", "completed")).waitFor(SHOWN);
    const overflow = await page.evaluate<number>("document.documentElement.scrollWidth - document.documentElement.clientWidth");
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot(page, "task-view-narrow");
    expect(offLoopback).toEqual([]);
  });
});

describe("a session whose tasks have all ended, in Chromium", () => {
  it("Should show the recently ended tasks and how many terminal tasks are hidden; one click shows them, and the filters still hide them", async () => {
    const s = await newSession(server.base, defaultAdminToken());
    await createTask(s.orch, s.sessionId, "shipped", "Shipped report", [{ step_id: "only", title: "Only", summary: "Do it", depends_on_step_ids: [] }]);
    await completeStep(s.orch, s.sessionId, "shipped", "only");
    await s.orch.completeTask({ sessionId: s.sessionId, taskId: "shipped" }, { reason: "report written" });
    await createTask(s.orch, s.sessionId, "dropped", "Dropped idea", [{ step_id: "only", title: "Only", summary: "Do it", depends_on_step_ids: [] }]);
    await s.orch.cancelTask({ sessionId: s.sessionId, taskId: "dropped" }, { reason: "not needed" });
    const { page, offLoopback, pageErrors } = await freshPage();
    await openDashboard(page, server.base, s.observerToken);
    const tasks = page.locator('section[aria-label="Tasks"]');
    const status = tasks.locator("[data-list-status]");
    const terminalBox = page.locator('input[type=checkbox][aria-label="Include terminal tasks"]');

    // The first look: no empty list, but the ended tasks under a caption and the button that shows them all.
    await expect.poll(() => status.textContent(), SHOWN).toBe("No live task: the session's 2 tasks have all ended.");
    expect(await tasks.textContent()).not.toContain("No task matches");
    const recent = tasks.locator("table", { has: page.locator("caption", { hasText: "Recently ended tasks" }) });
    await recent.locator('[data-task-id="dropped"][data-status="cancelled"]').waitFor(SHOWN);
    await recent.locator('[data-task-id="shipped"][data-status="completed"]').waitFor(SHOWN);
    expect(await terminalBox.isChecked()).toBe(false);
    expect(await seriousA11yViolations(page), "session view, every task ended").toEqual([]);
    await screenshot(page, "session-view-all-ended");

    // One click: the terminal tasks are in the list itself, and the filter says it includes them.
    await tasks.getByRole("button", { name: "Show the 2 terminal tasks" }).click();
    await expect.poll(() => status.textContent(), SHOWN).toBe("2 shown");
    expect(await terminalBox.isChecked()).toBe(true);
    expect(await tasks.locator("caption").count()).toBe(0);
    expect(await tasks.locator("tr[data-task-id]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-task-id")).sort())).toEqual(["dropped", "shipped"]);

    // A live task arrives; unticking the box hides the ended ones again, and the line counts them.
    await createTask(s.orch, s.sessionId, "fresh", "Fresh work", [{ step_id: "only", title: "Only", summary: "Do it", depends_on_step_ids: [] }]);
    await tasks.locator('[data-task-id="fresh"]').waitFor(SHOWN);
    await terminalBox.uncheck();
    await expect.poll(() => status.textContent(), SHOWN).toBe("1 shown · 2 terminal tasks hidden");
    expect(await tasks.locator("tr[data-task-id]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-task-id")))).toEqual(["fresh"]);
    await tasks.getByRole("button", { name: "Show the 2 terminal tasks" }).waitFor(SHOWN);
    expect(await seriousA11yViolations(page), "session view, terminal tasks hidden").toEqual([]);

    // A status no live task has: the line says so and gives every status back in one click.
    await page.locator('select[aria-label="Status"]').selectOption("cancelled");
    await expect.poll(() => status.textContent(), SHOWN).toBe("No task has status “cancelled” among the live ones; 2 terminal tasks are hidden.");
    await tasks.getByRole("button", { name: "Show all statuses" }).click();
    await expect.poll(() => status.textContent(), SHOWN).toBe("1 shown · 2 terminal tasks hidden");
    expect(await page.locator('select[aria-label="Status"]').inputValue()).toBe("all");
    expect(offLoopback).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});

describe("the approver's inbox in Chromium", () => {
  it("Should show a worker's approval request in the inbox; clicking Approve lets the worker complete its step", async () => {
    const s = await newSession(server.base, defaultAdminToken());
    const taskId = "release";
    await createTask(s.orch, s.sessionId, taskId, "Release 1.2", [{ step_id: "deploy", title: "Deploy", summary: "Ship it", depends_on_step_ids: [] }]);
    const { page, offLoopback, pageErrors } = await freshPage();
    await openDashboard(page, server.base, s.approverToken);
    const inbox = page.locator('section[aria-label="Open actions"]');
    await inbox.waitFor(SHOWN);

    const worker = await s.orch.dispatchWorker({ sessionId: s.sessionId, taskId }, { allowed_step_ids: ["deploy"] });
    let decision: string | null | undefined;
    const ran = worker.run(async (_step, ctx) => {
      const answer = await ctx.ask({ kind: "approval", prompt: "Deploy 1.2 to production?" });
      decision = answer.decision;
      if (answer.decision !== "approved") throw new Error(`deploy ${answer.decision}`);
      return { result_summary: "deployed" };
    });
    // The run must not outlive the test if the page never answers: it is cut when the test gives up below.
    try {
      const item = inbox.locator("[data-action-id]");
      await item.first().waitFor(SHOWN);
      expect(await item.count()).toBe(1);
      const actionId = (await item.first().getAttribute("data-action-id"))!;
      const open = await s.orch.sessionActions(s.sessionId, { status: "open" });
      expect(open.actions.map((a) => a.action_id)).toEqual([actionId]);
      await expect.poll(() => item.first().textContent(), SHOWN).toContain("Deploy 1.2 to production?");
      await screenshot(page, "inbox-open");
      await item.first().getByRole("button", { name: "Approve", exact: true }).click();

      const report = await Promise.race([ran, new Promise<never>((_, reject) => setTimeout(() => reject(new Error("the worker did not go on after the approval")), SHOWN.timeout))]);
      expect(decision).toBe("approved");
      expect(report.completed).toEqual(["deploy"]);
      const view = await s.orch.getTask({ sessionId: s.sessionId, taskId });
      expect(view.steps.find((st) => st.step_id === "deploy")?.status).toBe("completed");
      await inbox.locator(`[data-action-id="${actionId}"]`).waitFor({ state: "detached", ...SHOWN });
      expect(offLoopback).toEqual([]);
      expect(pageErrors).toEqual([]);
    } finally {
      // Whatever happened, no worker run is left waiting on its action.
      await s.orch.cancelTask({ sessionId: s.sessionId, taskId }, { reason: "test over" }).catch(() => undefined);
      await ran.catch(() => undefined);
    }
  });
});

describe("the session's schedules in Chromium", () => {
  it("Should list a schedule with its cron, next run and missed count, and a triggered run with a link to its task", async () => {
    const s = await newSession(server.base, defaultAdminToken());
    // A cron far ahead: the only run is the manual trigger's.
    const created = await s.orch.createSchedule(s.sessionId, { schedule_id: "yearly-report", cron: "0 0 1 1 *", timezone: "UTC", task: { title: "Yearly report", steps: [] } });
    const { page, offLoopback, pageErrors } = await freshPage();
    await openDashboard(page, server.base, s.observerToken);
    const row = page.locator('section[aria-label="Schedules"] tr[data-schedule-id="yearly-report"]');
    await row.waitFor(SHOWN);
    expect(created.next_run_at).not.toBeNull();
    await row.locator(`[data-next-run] time[datetime="${created.next_run_at}"]`).waitFor(SHOWN);
    expect(await row.locator("td").first().textContent()).toContain("0 0 1 1 *");
    expect(await row.locator("[data-missed]").textContent()).toBe("0");

    // The trigger creates a task: the session stream's event makes the panel read again, no reload.
    const { run } = await s.orch.triggerSchedule(s.sessionId, "yearly-report");
    const link = row.locator(`li[data-run-task-id="${run.task_id}"] a[href="#/tasks/${run.task_id}"]`);
    await link.waitFor(SHOWN);
    await screenshot(page, "session-schedules");
    expect(await seriousA11yViolations(page)).toEqual([]);
    await link.click();
    await page.waitForFunction(`location.hash === "#/tasks/${run.task_id}"`);
    expect(offLoopback).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it("Should not show the panel to a session without schedules, nor ask for schedules with a worker's token", async () => {
    const s = await newSession(server.base, defaultAdminToken());
    await createTask(s.orch, s.sessionId, "solo", "Solo", [{ step_id: "only", title: "Only", summary: "One step", depends_on_step_ids: [] }]);
    const observer = await freshPage();
    const listed = observer.page.waitForResponse((r) => new URL(r.url()).pathname.endsWith("/schedules"), SHOWN);
    await openDashboard(observer.page, server.base, s.observerToken);
    expect((await listed).status()).toBe(200);
    await observer.page.locator('[data-task-id="solo"]').waitFor(SHOWN);
    expect(await observer.page.locator('section[aria-label="Schedules"]').count()).toBe(0);

    await s.orch.createSchedule(s.sessionId, { schedule_id: "nightly", cron: "0 3 * * *", task: { title: "Nightly", steps: [] } });
    const worker = await s.orch.dispatchWorker({ sessionId: s.sessionId, taskId: "solo" }, { allowed_step_ids: ["only"] });
    try {
      const { page, pageErrors } = await freshPage();
      const scheduleReads: string[] = [];
      page.on("request", (r) => {
        if (new URL(r.url()).pathname.includes("/schedules")) scheduleReads.push(r.url());
      });
      await openDashboard(page, server.base, worker.token);
      await page.locator(stepNode("only")).waitFor(SHOWN);
      expect(scheduleReads).toEqual([]);
      expect(pageErrors).toEqual([]);
    } finally {
      await worker.finish({ outcome: "finished" });
    }
  });
});

describe("the API reference at /docs", () => {
  it("Should render offline: no request leaves loopback, and the operations are listed", async () => {
    const { page, offLoopback } = await freshPage();
    await page.goto(`${server.base}/docs`);
    const paths = [...new Set(OPERATIONS.map((op) => op.path))];
    await expect.poll(() => page.evaluate<string>("document.body.innerText"), SHOWN).toContain(paths[0]);
    const text = await page.evaluate<string>("document.body.innerText");
    expect(paths.filter((p) => !text.includes(p)), "operations missing from /docs").toEqual([]);
    // The viewport only: the whole reference is tens of thousands of pixels tall.
    await screenshot(page, "docs", { fullPage: false });
    expect(offLoopback).toEqual([]);
  });
});
