#!/usr/bin/env node
// Starts `wrangler dev` on http://127.0.0.1:8787 with local storage; creates .dev.vars from
// .dev.vars.example on first run so a fresh clone has its (local-only) secrets.
import { spawn } from "node:child_process";
import { copyFileSync, existsSync } from "node:fs";

if (!existsSync(".dev.vars")) {
  copyFileSync(".dev.vars.example", ".dev.vars");
  console.log("Created .dev.vars with local development secrets (see docs/deploy.md: never use them in production).");
}
const args = ["wrangler", "dev", "--ip", "127.0.0.1", "--port", process.env.PORT ?? "8787", ...process.argv.slice(2)];
const child = spawn("npx", args, {
  stdio: "inherit",
  env: { ...process.env, CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false" },
});
child.on("exit", (code) => process.exit(code ?? 0));
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
