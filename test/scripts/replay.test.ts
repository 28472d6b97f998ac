/** @module `scripts/replay.ts` run through its exported `main` on the golden WAL and on broken copies of it. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { main, type ReplayIo } from "../../scripts/replay.js";
import { GOLDEN_WAL_PATH } from "../fixtures/golden-wal.js";

const golden = readFileSync(GOLDEN_WAL_PATH, "utf8");

/** Runs main with an in-memory file system; returns the exit code and what it printed. */
function run(args: string[], files: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const io: ReplayIo = {
    out: (line) => out.push(line),
    err: (line) => err.push(line),
    readFile: (path) => {
      if (path in files) return files[path]!;
      return readFileSync(path, "utf8");
    },
  };
  const code = main(args, io);
  return { code, out: out.join("\n"), err: err.join("\n") };
}

describe("npm run replay", () => {
  it("Should print the golden task, its steps by status with attempts, and its runs", () => {
    const { code, out, err } = run([GOLDEN_WAL_PATH]);
    expect(code).toBe(0);
    expect(err).toBe("");
    expect(out).toMatch(/^Task task_1 · "Plan" · completed \(v1 shipped\)/);
    for (const stepId of ["plan", "build_api", "build_ui", "build_db", "integrate", "release", "docs"]) expect(out).toContain(`    ${stepId}  `);
    expect(out).toMatch(/ {2}completed \(6\)\n/);
    expect(out).toMatch(/ {2}cancelled \(1\)\n {4}docs /);
    expect(out).toMatch(/attempt 1 {2}run_\S+ \(worker_lost\) {2}lost .*lease_expired/);
    expect(out).toMatch(/attempt 2 {2}run_\S+ \(worker_pool\) {2}completed/);
    expect(out).toContain("optional_step_cancelled_on_task_complete");
    expect(out).toMatch(/\nRuns\n/);
    expect(out).toMatch(/worker_pool {2}pool default · allowed build_ui, integrate · finished .* claims 2\/2/);
  });

  it.each([
    ["a dropped line", golden.split("\n").filter((_, i) => i !== 9).join("\n"), /line 10: wal_seq 11 where 10 was expected \(a gap: event 10 is missing\)/],
    ["a broken field", golden.replace('"event_type":"task_step_ready"', '"event_type":"task_step_readied"'), /line 2: not a WAL event/],
    ["an unknown step", golden.replace('"step_id":"release","payload":{"result_summary"', '"step_id":"ghost","payload":{"result_summary"'), /line \d+: event does not fit the WAL before it: .*unknown step ghost/],
  ])("Should exit 1 naming the line for %s", (_label, text, message) => {
    expect(text).not.toBe(golden);
    const { code, out, err } = run(["broken.wal.jsonl"], { "broken.wal.jsonl": text });
    expect(code).toBe(1);
    expect(out).toBe("");
    expect(err).toMatch(/^replay: broken\.wal\.jsonl: /);
    expect(err).toMatch(message);
  });

  it("Should exit 1 when the file cannot be read, and 2 without exactly one file", () => {
    expect(run(["/no/such/file.wal.jsonl"])).toMatchObject({ code: 1, err: expect.stringContaining("cannot read /no/such/file.wal.jsonl") });
    expect(run([])).toMatchObject({ code: 2, err: expect.stringContaining("usage: npm run replay -- <file.wal.jsonl>") });
    expect(run(["a", "b"]).code).toBe(2);
  });
});
