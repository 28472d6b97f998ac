/**
 * The client SDK in a real browser (headless Chromium) against a real `wrangler dev`: the SDK bundled for
 * the browser platform (a Node-only import fails the bundle), loaded by a page on another origin (so CORS
 * is exercised), running a fan-out/fan-in DAG with pooled workers whose group commits go over the
 * browser's own WebSocket, while `subscribe()` streams the task's events over fetch until its end frame.
 *
 * Needs Chromium: `CHROMIUM_PATH`, else /usr/bin/chromium (Debian's `chromium`, which `.ci/run` installs).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { build } from "esbuild";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, defaultAdminToken, startDevServer, stopDevServer } from "../../scripts/dev-server.js";
import type { BrowserRun } from "./browser-scenario.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

let server: DevServer;
let page: Server;
let pageOrigin: string;
let browser: Browser;
let workDir: string;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`);
  // The SDK with the page's scenario, bundled for browsers: a Node-only import would fail here.
  const bundle = await build({ entryPoints: ["test/e2e/browser-scenario.ts"], bundle: true, format: "esm", platform: "browser", target: "es2022", write: false, logLevel: "silent" });
  const scenarioJs = bundle.outputFiles[0]!.text;
  page = createServer((req, res) => {
    if (req.url === "/scenario.js") res.writeHead(200, { "content-type": "text/javascript" }).end(scenarioJs);
    else res.writeHead(200, { "content-type": "text/html" }).end('<!doctype html><title>client</title><script type="module" src="/scenario.js"></script>');
  });
  await new Promise<void>((resolve) => page.listen(0, "127.0.0.1", resolve));
  pageOrigin = `http://127.0.0.1:${(page.address() as AddressInfo).port}`;
  workDir = mkdtempSync(path.join(os.tmpdir(), "browser-e2e-"));
  server = await startDevServer({ workDir, logLevel: "warn", vars: { CORS_ORIGINS: pageOrigin }, startupTimeoutMs: 90_000 });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
});

afterAll(async () => {
  await browser?.close();
  if (server !== undefined) await stopDevServer(server);
  page?.close();
  if (workDir !== undefined) rmSync(workDir, { recursive: true, force: true });
});

describe("the client SDK in a browser (headless Chromium) against wrangler dev", () => {
  it("Should run pooled workers over the browser's WebSocket to a completed task, streaming its events to the end", async () => {
    const tab = await browser.newPage();
    await tab.goto(pageOrigin);
    await tab.waitForFunction(() => typeof (globalThis as { runScenario?: unknown }).runScenario === "function");
    const run = await tab.evaluate(
      ([base, admin]) => (globalThis as unknown as { runScenario(base: string, admin: string): Promise<BrowserRun> }).runScenario(base, admin),
      [server.base, defaultAdminToken()] as const,
    );
    await tab.close();

    expect(run.completed).toEqual(["a", "b", "c", "d", "e", "f", "synthesis"]);
    expect(run.status).toBe("completed");
    expect(run.sockets, "the workers' group commits went over the browser's WebSocket").toBeGreaterThanOrEqual(1);
    expect(run.batchRequests, "no batch went over HTTP").toBe(0);
    expect(run.eventTypes.filter((t) => t === "task.attempt.completed"), JSON.stringify(run.eventTypes)).toHaveLength(7);
    expect(run.eventTypes[0]).toBe("task.created");
    expect(run.eventTypes.at(-1), "the stream ran to the task's end").toBe("task.completed");
    expect(run.conflictCode, "typed errors in the browser").toBe("task_terminal");
  });
});
