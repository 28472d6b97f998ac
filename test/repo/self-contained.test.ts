/**
 * @module The repository stands alone: no tracked text file names a document or folder outside it. A clone with
 * nothing beside it must be able to follow every reference it makes, so a rule taken from the task model says
 * what the rule is (or points into docs/), never at a source document or a sibling folder. Checked on every file
 * `git ls-files` lists, but the lockfile and the benchmark result data (bench/*-results.json), which quote
 * nothing of ours.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { posix } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/**
 * Tracked files not checked: the lockfile and the benchmark results (data, not text of ours), and this file, whose
 * examples of what is refused are its own test cases below.
 */
const SKIPPED = [/^package-lock\.json$/, /^bench\/[^/]*-results\.json$/, /^test\/repo\/self-contained\.test\.ts$/];

/** A reference to something outside the repository, by what gives it away. */
const OUTSIDE_REFERENCES: readonly { readonly rule: string; readonly pattern: RegExp }[] = [
  // The contract, the design and the style notes live in docs/ (docs/api.md, docs/design.md): upper case is theirs.
  { rule: "a document outside the repo", pattern: /\b(?:API|DESIGN|STYLE)\.md\b/g },
  // The numbered source documents of the task model: say the rule, or point at docs/model.md.
  { rule: "a numbered source document", pattern: /\bseeds?[ -]?0\d\d\b/gi },
  // A bare number cited as one: "(003)", "(003 ...", "003's", "003 \"Status\"" (never an error code or a count).
  { rule: "a numbered source document", pattern: /\(00[0-4]\b|(?<![\w.,(-])00[0-4](?='s\b| "[A-Z])/g },
  { rule: "a numbered source document", pattern: /\bthe seed's\b/gi },
  { rule: "a folder outside the repo", pattern: /\bshared\/seeds\b|(?<![\w.])\/work\/shared\b/g },
];

/** A relative path up to a folder named `shared`: fine when that folder is ours (durable-objects/shared). */
const RELATIVE_SHARED = /((?:\.\.\/)+)shared\b/g;

/** One reference found: where, what, and which rule it breaks. */
export interface OutsideReference {
  readonly file: string;
  readonly line: number;
  readonly text: string;
  readonly rule: string;
}

/**
 * The references to outside the repository in one file's text. `file` is the repo-relative path, which relative
 * paths are resolved from; `isDir` says whether a repo-relative path is a folder of the repository. Pure.
 */
export function outsideReferences(file: string, text: string, isDir: (repoPath: string) => boolean): OutsideReference[] {
  const found: OutsideReference[] = [];
  const lines = text.split("\n");
  lines.forEach((content, i) => {
    // One report per reference: "Seed 003's" matches two rules, but names one document.
    const spans: { start: number; end: number; text: string; rule: string }[] = [];
    const add = (m: RegExpMatchArray, rule: string) => {
      const start = m.index!;
      const end = start + m[0].length;
      if (!spans.some((s) => start < s.end && s.start < end)) spans.push({ start, end, text: m[0], rule });
    };
    for (const { rule, pattern } of OUTSIDE_REFERENCES) for (const m of content.matchAll(pattern)) add(m, rule);
    for (const m of content.matchAll(RELATIVE_SHARED)) {
      const target = posix.normalize(posix.join(posix.dirname(file), `${m[1]}shared`));
      if (target.startsWith("../") || !isDir(target)) add(m, "a folder outside the repo");
    }
    spans.sort((a, b) => a.start - b.start);
    for (const s of spans) found.push({ file, line: i + 1, text: s.text, rule: s.rule });
  });
  return found;
}

/** Every tracked text file (not the skipped data), repo-relative. */
function trackedTextFiles(): string[] {
  const listed = execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" }).split("\0").filter((f) => f !== "");
  return listed.filter((file) => {
    if (SKIPPED.some((skip) => skip.test(file))) return false;
    const path = `${ROOT}${file}`;
    // A file deleted in the work tree but not yet from the index is not there to read.
    if (!existsSync(path)) return false;
    const head = readFileSync(path).subarray(0, 8_000);
    return !head.includes(0);
  });
}

const isRepoDir = (repoPath: string) => {
  const path = `${ROOT}${repoPath}`;
  return existsSync(path) && statSync(path).isDirectory();
};

describe("outsideReferences", () => {
  const inRepo = (dirs: string[]) => (path: string) => dirs.includes(path);

  it.each([
    ["a document outside the repo", "see API.md \"Errors\"", "API.md"],
    ["a document outside the repo", "equivalent to DESIGN.md's decide → append → apply", "DESIGN.md"],
    ["a document outside the repo", "as STYLE.md asks", "STYLE.md"],
    ["a numbered source document", "/** Seed 003 \"Status\": one test per rule. */", "Seed 003"],
    ["a numbered source document", "the read model of seeds 001/004", "seeds 001"],
    ["a numbered source document", "/** A value for every seed-001 record field. */", "seed-001"],
    ["a numbered source document", "returns it to 003's ready and running promotion", "003"],
    ["a numbered source document", "/** Seed 003's conformance suite */", "Seed 003"],
    ["a numbered source document", "/** Task status (003 \"Status\"). */", "(003"],
    ["a numbered source document", "reads wait for reconciled leases (003)", "(003"],
    ["a numbered source document", "the WAL of the seed's layout", "the seed's"],
    ["a folder outside the repo", "read /work/shared/seeds/003.txt", "/work/shared"],
  ])("Should report %s in %j", (rule, line, text) => {
    expect(outsideReferences("src/x.ts", `first line\n${line}\n`, inRepo([]))).toEqual([{ file: "src/x.ts", line: 2, text, rule }]);
  });

  it("Should report a relative path to a shared folder outside the repo, or to one the repo does not have", () => {
    const dirs = inRepo(["durable-objects/shared"]);
    expect(outsideReferences("test/core/x.ts", 'const SCHEMAS = "../../../shared/agentruntime-schemas";', dirs)).toEqual([
      { file: "test/core/x.ts", line: 1, text: "../../../shared", rule: "a folder outside the repo" },
    ]);
    expect(outsideReferences("README.md", "The notes are in ../shared/.", dirs)).toHaveLength(1);
    expect(outsideReferences("test/core/x.ts", 'import "../shared/helpers.js";', dirs)).toHaveLength(1);
  });

  it.each([
    ["a folder of ours reached by a relative import", "durable-objects/task/commit-shell.ts", 'import { err } from "../shared/rpc-result.js";'],
    ["the lower-case docs of the repo", "README.md", "Routes are in docs/api.md; the objects in docs/design.md."],
    ["a JSON-RPC error code", "routes/a2a/errors.ts", "TaskNotFound is -32001, ContentTypeNotSupported -32005."],
    ["a conformance case id", "test/a2a/tck.test.ts", 'it("CORE-HIST-001/003 (SHOULD): Should omit history", () => {});'],
    ["a number with thousands", "wrangler.toml", "# 1,000 steps, 10,000 events, (1,000 per page)"],
    ["a padded step id", "bench/x.ts", "steps s00001, s00002 and 0.001 s"],
    ["a property test's seed", "test/core/x.test.ts", "fast-check prints the seed and path; FC_SEED=<seed> replays it with a fixed seed"],
  ])("Should not report %s", (_what, file, line) => {
    expect(outsideReferences(file, line, inRepo(["durable-objects/shared"]))).toEqual([]);
  });
});

describe("the repository", () => {
  it("Should name no document or folder outside itself in any tracked text file", () => {
    const found = trackedTextFiles().flatMap((file) => outsideReferences(file, readFileSync(`${ROOT}${file}`, "utf8"), isRepoDir));
    expect(found.map((r) => `${r.file}:${r.line}: ${r.text} (${r.rule})`)).toEqual([]);
  });

  it("Should read the files it checks: the product, the tests and the docs are among them", () => {
    const files = trackedTextFiles();
    for (const file of ["src/core/index.ts", "durable-objects/task/commit-shell.ts", "test/core/harness.ts", "README.md", "wrangler.toml"]) expect(files).toContain(file);
    expect(files.some((f) => SKIPPED.some((skip) => skip.test(f)))).toBe(false);
  });
});
