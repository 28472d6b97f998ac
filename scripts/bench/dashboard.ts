/**
 * @module `npm run bench:dashboard`: the web dashboard in headless Chromium (playwright-core) against `wrangler dev`.
 * 1. Render: a 1,000-step layered DAG; navigation of the task view (token already in the tab's session storage) →
 *    every step node in the DOM and a requestAnimationFrame after it (goal < 1 s).
 * 2. Big DAG: 10,000 steps; navigation → the first step node painted, → the node count settled; the longest main-
 *    thread task meanwhile (PerformanceObserver "longtask"); then a click on a node → its step panel painted.
 * 3. Live: 8 workers complete steps through the SDK while the page shows the task; a MutationObserver on
 *    `data-status` stamps, in the next animation frame, when each node turned completed (Date.now(): the page and
 *    this process share the machine's clock); matched to the time the worker read its status call's answer.
 * Writes bench/dashboard-results.json; `--screenshot` also writes docs/dashboard.png (a mid-size DAG mid-run).
 */
import os from "node:os";
import { performance } from "node:perf_hooks";
import type { Browser, Page } from "playwright-core";
import { ANY_STEP_NODE, createTask, launchChromium, layeredSteps, newSession, openDashboard, type Session } from "../../test/e2e/dashboard-support.js";
import { defaultAdminToken, reloadCount, withBenchServer } from "../dev-server.js";
import { parseCli, run, wholeOption } from "./harness/cli.js";
import { idleBefore, round, runHeader, sourceState } from "./harness/meter.js";
import { fmt, printTables, writeResults } from "./harness/report.js";
import { latencyOf } from "./harness/rounds.js";

/** Longest wait for the page to show something before the sample counts as an error. */
const WAIT_MS = 60_000;

/** In every page before its scripts: long tasks are recorded on window.__longTasks. */
const LONG_TASK_PROBE = `window.__longTasks = [];
try { new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__longTasks.push({ start: e.startTime, ms: e.duration }); }).observe({ type: "longtask", buffered: true }); } catch {}`;

/** A page whose tab already holds the viewer's token (session storage), so the next navigation goes straight to a route. */
async function tabWithToken(browser: Browser, base: string, token: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.addInitScript(LONG_TASK_PROBE);
  await openDashboard(page, base, token);
  return page;
}

/** Navigates to the task view (a fresh document) and measures, in the page's clock from navigation start, when nodes were painted. */
async function renderTask(page: Page, base: string, taskId: string, steps: number) {
  await page.goto("about:blank");
  await page.goto(`${base}/#/tasks/${taskId}`);
  // First node, then every node (a view that draws fewer nodes for a big DAG settles on its own count).
  const first = await page.evaluate(`new Promise((resolve, reject) => {
    const until = performance.now() + ${WAIT_MS};
    const tick = () => {
      if (document.querySelector(${JSON.stringify(ANY_STEP_NODE)}) !== null) return requestAnimationFrame(() => resolve(performance.now()));
      if (performance.now() > until) return reject(new Error("no step node painted"));
      requestAnimationFrame(tick);
    };
    tick();
  })`);
  const all = await page.evaluate(`new Promise((resolve, reject) => {
    const until = performance.now() + ${WAIT_MS};
    let last = -1, stableSince = performance.now();
    const tick = () => {
      const n = document.querySelectorAll(${JSON.stringify(ANY_STEP_NODE)}).length;
      if (n >= ${steps}) return requestAnimationFrame(() => resolve({ at: performance.now(), nodes: n, complete: true }));
      if (n !== last) { last = n; stableSince = performance.now(); }
      // Fewer nodes than steps (level of detail): settled once the count held for a second.
      if (n > 0 && performance.now() - stableSince > 1000) return resolve({ at: stableSince, nodes: n, complete: false });
      if (performance.now() > until) return reject(new Error("nodes still changing"));
      requestAnimationFrame(tick);
    };
    tick();
  })`) as { at: number; nodes: number; complete: boolean };
  const longTasks = (await page.evaluate("window.__longTasks")) as { start: number; ms: number }[];
  const untilAll = longTasks.filter((t) => t.start <= all.at);
  return {
    first_node_ms: round(first as number, 1),
    all_nodes_ms: round(all.at, 1),
    nodes_drawn: all.nodes,
    every_step_drawn: all.complete,
    longest_task_ms: round(Math.max(0, ...untilAll.map((t) => t.ms)), 1),
    long_tasks: untilAll.length,
  };
}

/** Click on a step node → its step panel in the DOM and a frame after it (null when no panel appears: the view has none). */
async function clickProbe(page: Page): Promise<number | null> {
  const node = page.locator(ANY_STEP_NODE).nth(0);
  const stepId = await node.getAttribute("data-step-id");
  await page.evaluate("window.__clickAt = performance.now()");
  await node.click({ timeout: WAIT_MS });
  try {
    await page.locator(`aside[aria-label="Step ${stepId}"]`).waitFor({ timeout: 5_000 });
  } catch {
    return null;
  }
  return round((await page.evaluate("new Promise((r) => requestAnimationFrame(() => r(performance.now() - window.__clickAt)))")) as number, 1);
}

/** Scenario 3: `workers` workers complete `workers × perWorker` independent steps; per step, answer read (Node) → node painted completed (page). */
async function liveScenario(browser: Browser, base: string, s: Session, workers: number, perWorker: number) {
  const taskId = `live-${Date.now().toString(36)}`;
  const count = workers * perWorker;
  await createTask(s.orch, s.sessionId, taskId, "Live latency", layeredSteps(count, count));
  const page = await tabWithToken(browser, base, s.observerToken);
  await page.goto("about:blank");
  await page.goto(`${base}/#/tasks/${taskId}`);
  await page.waitForFunction(`document.querySelectorAll(${JSON.stringify(ANY_STEP_NODE)}).length >= ${count}`, null, { timeout: WAIT_MS });
  await page.evaluate(`(() => {
    window.__painted = {};
    const seen = (el) => {
      if (!(el instanceof Element) || el.getAttribute("data-status") !== "completed") return;
      const id = el.getAttribute("data-step-id");
      if (id === null || id in window.__painted) return;
      window.__painted[id] = -1;
      requestAnimationFrame(() => (window.__painted[id] = Date.now()));
    };
    new MutationObserver((records) => {
      for (const r of records) {
        if (r.type === "attributes") seen(r.target);
        else for (const n of r.addedNodes) if (n instanceof Element) { seen(n); n.querySelectorAll("[data-step-id]").forEach(seen); }
      }
    }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-status"] });
  })()`);
  const answered = new Map<string, { sent: number; answered: number }>();
  const task = { sessionId: s.sessionId, taskId };
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      const worker = await s.orch.dispatchWorker(task, { max_steps: perWorker, agent_id: `bench-${w}` });
      for (let i = 0; i < perWorker; i++) {
        const claim = await worker.claimNext();
        if (claim.no_step_claimed) break;
        const stepId = claim.step.step_id;
        const sent = Date.now();
        await worker.updateStep(stepId, { status: "completed", result_summary: "done" });
        answered.set(stepId, { sent, answered: Date.now() });
      }
      await worker.finish({ outcome: "finished" }).catch(() => undefined);
    }),
  );
  const drivenMs = performance.now() - t0;
  await page.waitForFunction(`Object.values(window.__painted).filter((t) => t > 0).length >= ${answered.size}`, null, { timeout: WAIT_MS }).catch(() => undefined);
  const painted = (await page.evaluate("window.__painted")) as Record<string, number>;
  await page.close();
  const afterAnswer: number[] = [];
  const afterSend: number[] = [];
  for (const [stepId, t] of answered) {
    const at = painted[stepId];
    if (at === undefined || at <= 0) continue;
    afterAnswer.push(at - t.answered);
    afterSend.push(at - t.sent);
  }
  return {
    workers,
    steps: count,
    completed_by_workers: answered.size,
    painted: afterAnswer.length,
    driven_ms: round(drivenMs, 0),
    steps_per_s: round(answered.size / (drivenMs / 1000), 1),
    painted_after_answer_ms: latencyOf(afterAnswer),
    painted_after_send_ms: latencyOf(afterSend),
  };
}

/** docs/dashboard.png: the task view of a mid-size DAG part-way through, one step waiting for a person. */
async function takeScreenshot(browser: Browser, base: string, s: Session): Promise<string> {
  const taskId = "market-report";
  const steps = layeredSteps(24, 4).map((st, i) => ({ ...st, title: ["Plan", "Research", "Draft", "Check", "Revise", "Publish"][Math.floor(i / 4)]! + ` ${(i % 4) + 1}`, required: i % 4 !== 3 }));
  await createTask(s.orch, s.sessionId, taskId, "Q3 market report", steps);
  const task = { sessionId: s.sessionId, taskId };
  for (const st of steps.slice(0, 9)) {
    const w = await s.orch.dispatchWorker(task, { allowed_step_ids: [st.step_id] });
    await w.claimStep(st.step_id);
    await w.updateStep(st.step_id, { status: "completed", result_summary: `${st.title} done` });
    await w.finish({ outcome: "finished" });
  }
  for (const st of steps.slice(9, 11)) {
    const w = await s.orch.dispatchWorker(task, { allowed_step_ids: [st.step_id] });
    await w.claimStep(st.step_id);
    await w.appendProgress(st.step_id, { phase: "working" });
  }
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await openDashboard(page, base, s.observerToken, taskId);
  await page.waitForFunction(`document.querySelectorAll(${JSON.stringify(ANY_STEP_NODE)}).length >= ${steps.length}`, null, { timeout: WAIT_MS });
  await page.waitForTimeout(500);
  const file = "docs/dashboard.png";
  await page.screenshot({ path: file });
  await page.close();
  return file;
}

run(async () => {
  const usage = "usage: npm run bench:dashboard -- [--quick] [--steps 1000] [--big 10000] [--rounds 3] [--workers 8] [--per-worker 40] [--screenshot] [--url http://127.0.0.1:<port>]\n  --steps: the DAG that must render under 1 s; --big: the DAG that must stay usable; --rounds: renders of each; --workers/--per-worker: the live scenario; --screenshot: also write docs/dashboard.png";
  const cli = parseCli(usage, { quick: false, steps: null as string | null, big: null as string | null, rounds: null as string | null, workers: null as string | null, perWorker: null as string | null, screenshot: false, url: null as string | null });
  const plan = {
    steps: wholeOption(cli.steps, "steps", 1_000),
    big: wholeOption(cli.big, "big", 10_000),
    rounds: wholeOption(cli.rounds, "rounds", cli.quick ? 1 : 3),
    workers: wholeOption(cli.workers, "workers", 8),
    per_worker: wholeOption(cli.perWorker, "per-worker", cli.quick ? 10 : 40),
  };
  const loadStart = os.loadavg();
  const source = sourceState();
  const wallStart = performance.now();
  const idle = await idleBefore();
  const browser = await launchChromium();
  try {
    await withBenchServer(cli.url, {}, async (base, server) => {
      const s = await newSession(base, defaultAdminToken());
      const label = Date.now().toString(36);
      console.log(`  render: ${plan.steps} and ${plan.big} steps, ${plan.rounds} round(s) each`);
      await createTask(s.orch, s.sessionId, `dag-${label}`, `${plan.steps} steps`, layeredSteps(plan.steps, 25));
      await createTask(s.orch, s.sessionId, `big-${label}`, `${plan.big} steps`, layeredSteps(plan.big, 100));
      const page = await tabWithToken(browser, base, s.observerToken);
      // One unmeasured render: the browser's caches and the objects warm up.
      await renderTask(page, base, `dag-${label}`, plan.steps);
      const mid = [];
      const big = [];
      for (let r = 0; r < plan.rounds; r++) {
        mid.push(await renderTask(page, base, `dag-${label}`, plan.steps));
        const b = await renderTask(page, base, `big-${label}`, plan.big);
        big.push({ ...b, click_to_panel_ms: await clickProbe(page) });
      }
      await page.close();
      console.log(`  live: ${plan.workers} workers × ${plan.per_worker} steps`);
      const live = await liveScenario(browser, base, s, plan.workers, plan.per_worker);
      const shot = cli.screenshot ? await takeScreenshot(browser, base, await newSession(base, defaultAdminToken())) : null;

      const median = (xs: number[]) => round([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!, 1);
      const results = {
        ...runHeader(cli.quick, loadStart, idle, source),
        browser: { executable: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", version: browser.version(), viewport: "1440x900", headless: true },
        server: { url: base, started_by_script: server !== null, startup_ms: server?.startupMs ?? null, reloads: reloadCount(server) },
        plan,
        definitions: {
          render: "a fresh document of the task view (navigation start = 0; the token already in the tab's session storage): first_node = the first step node in the DOM + one requestAnimationFrame; all_nodes = every step node in the DOM + one frame (or, when the view draws fewer nodes than steps, when their count last changed before holding for 1 s); longest_task = the longest main-thread task (PerformanceObserver longtask) until then",
          click_to_panel: "on the big DAG once drawn: a click on a step node → its aside[aria-label=\"Step <id>\"] in the DOM + one frame; null when no panel appeared within 5 s",
          live: "workers × per_worker independent steps; each worker claims the next step and completes it (POST .../status); painted = Date.now() in the animation frame after a MutationObserver saw the node's data-status turn completed; after_answer = painted − when the worker read the status answer; after_send = painted − when it sent the call (same machine, same clock)",
        },
        render_1k: { rounds: mid, median_all_nodes_ms: median(mid.map((m) => m.all_nodes_ms)), goal_ms: 1_000 },
        render_big: { rounds: big, median_first_node_ms: median(big.map((m) => m.first_node_ms)), median_all_nodes_ms: median(big.map((m) => m.all_nodes_ms)), max_longest_task_ms: Math.max(...big.map((m) => m.longest_task_ms)) },
        live: { ...live, goal_p95_ms: 250 },
        screenshot: shot,
        wall_seconds: round((performance.now() - wallStart) / 1000, 1),
      };
      console.log(`\nDashboard benchmark (${results.mode}) — ${results.machine.cpus} CPUs (${results.machine.cpu_model}), Chromium ${browser.version()}, load ${results.machine.loadavg_start.join(" ")} → ${results.machine.loadavg_end.join(" ")}`);
      printTables([
        {
          title: "render of the task view (ms from navigation start)",
          headers: ["DAG", "first node", "all nodes", "nodes drawn", "longest task", "click → panel"],
          rows: [
            ...mid.map((m) => [`${plan.steps} steps`, fmt(m.first_node_ms), fmt(m.all_nodes_ms), String(m.nodes_drawn), fmt(m.longest_task_ms), "-"]),
            ...big.map((m) => [`${plan.big} steps`, fmt(m.first_node_ms), fmt(m.all_nodes_ms), String(m.nodes_drawn), fmt(m.longest_task_ms), m.click_to_panel_ms === null ? "no panel" : fmt(m.click_to_panel_ms)]),
          ],
        },
        {
          title: `live: ${live.workers} workers, ${live.completed_by_workers} steps completed (${fmt(live.steps_per_s)} steps/s), ${live.painted} nodes seen painted`,
          headers: ["node painted completed", "p50 ms", "p95 ms", "p99 ms", "max ms"],
          rows: [
            ["after the worker read its answer", fmt(live.painted_after_answer_ms.p50_ms), fmt(live.painted_after_answer_ms.p95_ms), fmt(live.painted_after_answer_ms.p99_ms), fmt(live.painted_after_answer_ms.max_ms)],
            ["after the worker sent the call", fmt(live.painted_after_send_ms.p50_ms), fmt(live.painted_after_send_ms.p95_ms), fmt(live.painted_after_send_ms.p99_ms), fmt(live.painted_after_send_ms.max_ms)],
          ],
        },
      ]);
      writeResults("bench/dashboard-results.json", results, results.wall_seconds);
      if (live.painted < live.completed_by_workers) {
        console.log(`\nwarning: ${live.completed_by_workers - live.painted} completed steps never seen painted`);
        process.exitCode = 1;
      }
    });
  } finally {
    await browser.close();
  }
});
