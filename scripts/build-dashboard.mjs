#!/usr/bin/env node
// Builds the web dashboard into dist/dashboard, the Worker's static assets (wrangler.toml [assets]): the app and
// the offline API reference, each one ES module bundled by esbuild, with their HTML and CSS. wrangler runs it
// before `wrangler dev` and `wrangler deploy` ([build]); the tests run it before they start (test/global-setup.ts).
import { copyFileSync, mkdirSync, readdirSync } from "node:fs";
import path from "node:path";
import { build } from "esbuild";

const out = "dist/dashboard";
mkdirSync(out, { recursive: true });
const entries = { app: "dashboard/src/main.ts" };
for (const file of readdirSync("dashboard/src")) if (file === "docs.ts") entries.docs = "dashboard/src/docs.ts";
await build({
  entryPoints: entries,
  outdir: out,
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  minify: true,
  sourcemap: false,
  legalComments: "none",
  logLevel: "warning",
});
for (const file of readdirSync("dashboard")) if (/\.(html|css|svg|ico)$/.test(file)) copyFileSync(path.join("dashboard", file), path.join(out, file));
