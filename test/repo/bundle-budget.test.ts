/**
 * @module Bundle budgets of what a browser loads: the SDK (src/client/index.ts, and its webhook verifier) and the dashboard's app.js
 * (dashboard/src/main.ts), each bundled as scripts/build-dashboard.mjs bundles the dashboard (esbuild: bundle,
 * minify, ES module, browser), then gzipped. Both run the core through src/core/browser.ts, which holds no zod:
 * the schemas stay with the service.
 */
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** Bytes per KB in the budgets. */
const KB = 1_000;

interface Bundle {
  /** Bytes of the gzipped bundle. */
  readonly gzipBytes: number;
  /** Every file the bundler read for it, as paths from the repository root. */
  readonly inputs: readonly string[];
}

/** Bundles one entry for the browser, minified, and gzips it. */
async function browserBundle(entry: string): Promise<Bundle> {
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: [entry],
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    legalComments: "none",
    write: false,
    metafile: true,
    logLevel: "silent",
  });
  const [output] = result.outputFiles;
  return { gzipBytes: gzipSync(output!.contents).length, inputs: Object.keys(result.metafile.inputs).map((path) => path.replaceAll("\\", "/")) };
}

const isZod = (path: string): boolean => path.startsWith("node_modules/zod/");

describe.each([
  { name: "the SDK", entry: "src/client/index.ts", budgetKb: 40, holds: ["src/client/runtime-client.ts", "src/core/apply/apply.ts"] },
  // The SDK's second entry (agent-task-runtime/client/webhooks): the standardwebhooks library, kept out of the SDK above.
  { name: "the SDK's webhook verifier", entry: "src/client/webhook-verify.ts", budgetKb: 8, holds: ["src/client/webhook-verify.ts", "node_modules/standardwebhooks/dist/index.js"] },
  { name: "the dashboard's app.js", entry: "dashboard/src/main.ts", budgetKb: 100, holds: ["dashboard/src/main.ts", "src/core/apply/apply.ts"] },
])("$name in a browser", ({ entry, budgetKb, holds }) => {
  it(`Should be at most ${budgetKb} KB gzipped, with no zod in it`, async () => {
    const bundle = await browserBundle(entry);
    // Not vacuous: the bundle is the entry's, and it runs the core (apply/replay).
    for (const file of holds) expect(bundle.inputs).toContain(file);
    expect(bundle.inputs.filter(isZod)).toEqual([]);
    expect(bundle.gzipBytes).toBeLessThanOrEqual(budgetKb * KB);
  });
});
