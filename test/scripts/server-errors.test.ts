/** @module The benchmarks' count of a dev server's error lines: the runtime's incidents and workerd's own errors, by kind. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { serverErrors } from "../../scripts/dev-server.js";

let dir: string | undefined;
afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A DevServer record whose log holds `lines`. */
function serverWithLog(lines: string[]) {
  dir = mkdtempSync(path.join(os.tmpdir(), "server-errors-"));
  const logFile = path.join(dir, "dev.log");
  writeFileSync(logFile, lines.join("\n"));
  return { base: "http://127.0.0.1:1", child: null, logFile, persistDir: null, startupMs: 0 };
}

const red = (text: string) => `\u001b[31m✘ \u001b[41;31m[\u001b[41;97mERROR\u001b[41;31m]\u001b[0m \u001b[1m${text}\u001b[0m`;
const incident = (id: string, where: string, error: string) => red(JSON.stringify({ level: "error", incident_id: id, where, error, stack: "x" }));

describe("serverErrors", () => {
  it("Should count incidents by where and error and workerd's error lines by text, numbers set aside, most frequent first", async () => {
    const server = serverWithLog([
      incident("a", "task object: webhook delivery", "max active timeouts: 10000, finished timeouts: 490"),
      "",
      incident("b", "task object: webhook delivery", "max active timeouts: 10000, finished timeouts: 512"),
      red("e = kj/async-io-unix.c++:918: overloaded: Too many open files"),
      "[wrangler:info] GET /health 200 OK (2ms)",
      "  stack: /bin/workerd@51f7040",
    ]);
    expect(await serverErrors(server)).toEqual([
      { error: "task object: webhook delivery: max active timeouts: #, finished timeouts: #", count: 2 },
      { error: "e = kj/async-io-unix.c++:#: overloaded: Too many open files", count: 1 },
    ]);
  });

  it("Should find nothing in a log without errors, or with no log at all", async () => {
    expect(await serverErrors(serverWithLog(["[wrangler:info] Ready on http://127.0.0.1:8787"]))).toEqual([]);
    expect(await serverErrors(null)).toEqual([]);
  });
});
