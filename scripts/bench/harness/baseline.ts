/** @module The baseline a benchmark measures beside this checkout (`--baseline <rev or checkout>`): a checkout as it is, or a commit checked out into a temporary work tree. */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type DevServer, startDevServer } from "../../dev-server.js";
import { sourceState } from "./meter.js";

/**
 * The baseline's work tree: a checkout as it is, or a detached work tree of a commit (beside this checkout's
 * node_modules), removed by `remove` or, at the latest, when the process exits (a run stopped half-way included).
 */
export function baselineTree(rev: string): { dir: string; remove: () => void } {
  if (existsSync(path.join(rev, "package.json"))) return { dir: path.resolve(rev), remove: () => undefined };
  const dir = mkdtempSync(path.join(os.tmpdir(), "bench-baseline-"));
  try {
    execFileSync("git", ["worktree", "add", "--detach", dir, rev], { stdio: "ignore" });
  } catch {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`--baseline ${rev}: neither a checkout (no package.json there) nor a revision of this repository`);
  }
  symlinkSync(path.resolve("node_modules"), path.join(dir, "node_modules"));
  for (const file of [".dev.vars"]) if (existsSync(file)) execFileSync("cp", [file, path.join(dir, file)]);
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    try {
      execFileSync("git", ["worktree", "remove", "--force", dir], { stdio: "ignore" });
    } catch {
      // already gone; `git worktree prune` forgets a tree removed by hand
    }
  };
  process.once("exit", remove);
  return { dir, remove };
}

/** The commit of a checkout (short) and whether its work tree differs from it (untracked files count). */
export function treeState(tree: string): string {
  const { commit, changed_files } = sourceState(tree);
  return commit === null ? "?" : `${commit.slice(0, 7)}${changed_files.length > 0 ? "+changes" : ""}`;
}

/** A dev server of the baseline checkout `dir` on a free port, with these extra vars; says which tree it runs. */
export function startBaselineServer(dir: string, vars: Record<string, string> = {}): Promise<DevServer> {
  console.log(`starting node scripts/dev.mjs in ${dir} (baseline ${treeState(dir)}) on a free port …`);
  return startDevServer({ cwd: dir, vars });
}
