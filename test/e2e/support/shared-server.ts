/**
 * One `wrangler dev` with the default configuration, shared by the e2e files that need nothing else (each makes its
 * own sessions, so they do not see each other's tasks): started once before the e2e project, stopped after it.
 * Files that need other vars (CORS, short SSE limits, quick delegate retries) start their own.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { startDevServer, stopDevServer } from "../../../scripts/dev-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The base URL of the shared dev server, e.g. http://127.0.0.1:41234. */
    sharedDevServerBase: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const workDir = mkdtempSync(path.join(os.tmpdir(), "e2e-shared-"));
  const server = await startDevServer({ workDir, logLevel: "warn", startupTimeoutMs: 90_000 });
  project.provide("sharedDevServerBase", server.base);
  return async () => {
    await stopDevServer(server);
    rmSync(workDir, { recursive: true, force: true });
  };
}
