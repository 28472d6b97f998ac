/** Builds the dashboard's static assets before any test project starts: the Workers pool serves them (wrangler.toml [assets]). */
import { execFileSync } from "node:child_process";

export default function setup(): void {
  execFileSync(process.execPath, ["scripts/build-dashboard.mjs"], { stdio: "inherit" });
}
