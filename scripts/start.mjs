#!/usr/bin/env node
// `npm start`: serves the runtime on http://127.0.0.1:8787 (wrangler dev, local storage, local dev
// secrets), runs the live demo against it once it answers, then keeps serving until Ctrl-C.
// `npm start -- --no-demo` only serves; `--verbose` keeps wrangler's request log during the demo.
import { spawn } from "node:child_process";

const port = process.env.PORT ?? "8787";
const base = `http://127.0.0.1:${port}`;
const demo = !process.argv.includes("--no-demo");
// With the demo, wrangler logs warnings only, so its per-request lines do not bury the demo's output.
const devArgs = demo && !process.argv.includes("--verbose") ? ["--log-level", "warn"] : [];
const server = spawn(process.execPath, ["scripts/dev.mjs", ...devArgs], { stdio: "inherit", env: { ...process.env, PORT: port } });
let stopping = false;
const stop = (code) => {
  if (stopping) return;
  stopping = true;
  server.kill("SIGINT");
  setTimeout(() => process.exit(code), 3_000).unref();
};
server.on("exit", (code) => {
  if (!stopping) process.exit(code ?? 1);
  process.exit(0);
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => stop(0));

async function waitForHealth() {
  for (let i = 0; i < 360; i++) {
    try {
      const res = await fetch(`${base}/health`);
      if (res.ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`the server did not answer ${base}/health`);
}

if (demo) {
  await waitForHealth();
  const run = spawn(process.execPath, ["node_modules/tsx/dist/cli.mjs", "scripts/demo.ts", "--url", base], { stdio: "inherit" });
  run.on("exit", (code) => {
    console.log(code === 0 ? `\nThe runtime keeps serving on ${base}: the dashboard links above stay open to you. Ctrl-C stops it.` : `\nThe demo failed (exit ${code}); the runtime keeps serving on ${base}.`);
  });
}
