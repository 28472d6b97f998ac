/**
 * @module What the dashboard's Chromium suite and its benchmark share: Chromium, a page that may only talk to
 * loopback, the dashboard opened with a token in the URL fragment, the DOM contract's selectors, sessions and DAGs
 * driven through the client SDK, axe-core, and where screenshots go.
 */
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { RuntimeClient } from "../../src/client/index.js";

/** Debian's chromium (what `.ci/run` installs) unless CHROMIUM_PATH names another. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** Where screenshots go: $DASHBOARD_ARTIFACTS, else a directory under the system's temp dir (never the repository). */
export const ARTIFACTS = process.env.DASHBOARD_ARTIFACTS ?? path.join(os.tmpdir(), "agent-task-runtime-dashboard-artifacts");

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}

/** True for 127.0.0.0/8, localhost and ::1. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127(\.\d{1,3}){3}$/.test(h);
}

/** A page whose every request is checked: anything but loopback (and data:/blob:) is recorded and aborted. */
export interface WatchedPage {
  readonly context: BrowserContext;
  readonly page: Page;
  /** URLs the page asked for on a non-loopback host (aborted, so an offline machine behaves like this one). */
  readonly offLoopback: string[];
  /** Console errors and uncaught exceptions of the page. */
  readonly pageErrors: string[];
}

export async function watchedPage(browser: Browser, viewport = { width: 1280, height: 800 }): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport, acceptDownloads: true });
  const offLoopback: string[] = [];
  const pageErrors: string[] = [];
  await context.route("**/*", (route) => {
    const url = new URL(route.request().url());
    if (url.protocol === "data:" || url.protocol === "blob:" || isLoopbackHost(url.hostname)) return route.continue();
    offLoopback.push(url.href);
    return route.abort("blockedbyclient");
  });
  const page = await context.newPage();
  page.on("pageerror", (e) => pageErrors.push(e.message));
  return { context, page, offLoopback, pageErrors };
}

/** The dashboard's address with the token in the fragment (never the query string). */
export function dashboardUrl(base: string, token: string): string {
  return `${base}/#token=${encodeURIComponent(token)}`;
}

/** Opens the dashboard with `token`, then, for a task, routes to its view the way a link does. */
export async function openDashboard(page: Page, base: string, token: string, taskId?: string): Promise<void> {
  await page.goto(dashboardUrl(base, token));
  // The app takes the token out of the fragment and routes to the session view.
  await page.waitForFunction('location.hash === "#/" && document.querySelector("#app .loading") === null');
  if (taskId !== undefined) await routeTo(page, `#/tasks/${taskId}`);
}

/** Moves the dashboard to another route (`#/`, `#/tasks/<id>`) as a link would, without reloading the page. */
export async function routeTo(page: Page, hash: string): Promise<void> {
  await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
}

/** A step's node in the DAG (`svg g[data-step-id]`), or in the first dashboard's plain step list. */
export function stepNode(stepId: string, status?: string): string {
  const s = status === undefined ? "" : `[data-status="${status}"]`;
  return [`svg[aria-label="Task DAG"] g[data-step-id="${stepId}"]${s}`, `ul.steps > li[data-step-id="${stepId}"]${s}`].join(", ");
}

/** Every step node on the page. */
export const ANY_STEP_NODE = 'svg[aria-label="Task DAG"] g[data-step-id], ul.steps > li[data-step-id]';

/** A session with an orchestrator, an observer and an approver, made through the SDK. */
export interface Session {
  readonly sessionId: string;
  readonly orch: RuntimeClient;
  readonly observerToken: string;
  readonly approverToken: string;
}

export async function newSession(base: string, adminToken: string): Promise<Session> {
  const admin = new RuntimeClient({ baseUrl: base, token: adminToken, batching: false });
  const created = await admin.createSession({ orchestrator_agent_id: "e2e-orchestrator" });
  const orch = admin.withToken(created.orchestrator.token);
  const approver = await orch.mintApproverToken(created.session_id, { agent_id: "e2e-reviewer" });
  return { sessionId: created.session_id, orch, observerToken: created.observer.token, approverToken: approver.token };
}

/** A step as the create call takes it. */
export interface StepSpec {
  step_id: string;
  title: string;
  summary: string;
  depends_on_step_ids: string[];
  required?: boolean;
}

/**
 * A layered DAG of `count` steps: `width` steps per layer, each depending on one or two steps of the layer before
 * (so the layout has real edges, not a flat row); ids s0000, s0001, …
 */
export function layeredSteps(count: number, width: number): StepSpec[] {
  const id = (i: number) => `s${String(i).padStart(String(count - 1).length, "0")}`;
  return Array.from({ length: count }, (_, i) => {
    const layer = Math.floor(i / width);
    const deps: string[] = [];
    if (layer > 0) {
      const prev = (layer - 1) * width;
      deps.push(id(prev + (i % width)));
      if (i % 3 === 0 && width > 1) deps.push(id(prev + ((i + 1) % width)));
    }
    return { step_id: id(i), title: `Step ${i}`, summary: `Layer ${layer}`, depends_on_step_ids: deps };
  });
}

/** The create call's limit on steps per request is not assumed: big DAGs are created with their steps in one body. */
export async function createTask(orch: RuntimeClient, sessionId: string, taskId: string, title: string, steps: readonly StepSpec[]): Promise<void> {
  await orch.createTask(sessionId, { task_id: taskId, wal_name: taskId, title, summary: title, steps: steps as StepSpec[] });
}

/** A worker run scoped to `stepId` claims it and completes it. */
export async function completeStep(orch: RuntimeClient, sessionId: string, taskId: string, stepId: string): Promise<void> {
  const worker = await orch.dispatchWorker({ sessionId, taskId }, { allowed_step_ids: [stepId] });
  await worker.claimStep(stepId);
  await worker.updateStep(stepId, { status: "completed", result_summary: `${stepId} done` });
  await worker.finish({ outcome: "finished" });
}

/** axe-core's violations of impact "serious" or "critical" on the page as it is now, one line each. */
export async function seriousA11yViolations(page: Page): Promise<string[]> {
  const axePath = createRequire(import.meta.url).resolve("axe-core/axe.min.js");
  await page.addScriptTag({ path: axePath });
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(ctx: unknown, opts: object): Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[] }> } }).axe;
    const result = await axe.run((globalThis as unknown as { document: unknown }).document, { resultTypes: ["violations"] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.slice(0, 3).map((n) => JSON.stringify(n.target)) }));
  });
  return violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.impact} ${v.id}: ${v.help} (${v.targets.join(", ")})`);
}

/** Saves a full-page screenshot under ARTIFACTS; returns its path. */
export async function screenshot(page: Page, name: string, opts: { fullPage?: boolean } = {}): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: opts.fullPage ?? true });
  return file;
}
