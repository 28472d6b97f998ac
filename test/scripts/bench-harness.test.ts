/** @module The benchmark harness's generic pieces: the option parser over defaults and the merge of repeats. */
import { describe, expect, it } from "vitest";
import { parseCli } from "../../scripts/bench/harness/cli.js";
import { mergeRuns, stats } from "../../scripts/bench/harness/meter.js";

describe("parseCli", () => {
  const defaults = { quick: false, steps: 4_800, url: null as string | null };

  it("Should keep the defaults when no option is given", () => {
    expect(parseCli("usage", defaults, [])).toEqual(defaults);
  });

  it("Should set a flag, a whole number and a word from kebab-case options", () => {
    expect(parseCli("usage", { ...defaults, readersPerTask: 1 }, ["--quick", "--steps", "960", "--url", "http://127.0.0.1:8787", "--readers-per-task", "3"])).toEqual({ quick: true, steps: 960, url: "http://127.0.0.1:8787", readersPerTask: 3 });
  });

  it.each([
    [["--nope"], /unknown option --nope/],
    [["--steps"], /--steps needs a value/],
    [["--steps", "1.5"], /--steps takes a whole number/],
    [["--steps", "0"], /--steps takes a whole number/],
  ])("Should refuse %j", (argv, message) => {
    expect(() => parseCli("usage", defaults, argv)).toThrow(message);
  });
});

describe("mergeRuns", () => {
  const part = (workers: number, steps: number, latencies: number[], extra: object = {}) => ({ workers, label: "x", steps, timed_out: false, create_ms: [steps], reasons: { done: 1 }, step_call: stats(latencies), samples: { step_call: latencies }, ...extra });

  it("Should sum numbers, keep `keep` from the first part, join arrays, add up counts and pool latency samples", () => {
    const m = mergeRuns([part(8, 10, [1, 2]), part(8, 20, [3, 4], { timed_out: true })], ["workers"]);
    expect(m).toMatchObject({ workers: 8, label: "x", steps: 30, timed_out: true, create_ms: [10, 20], reasons: { done: 2 }, samples: { step_call: [1, 2, 3, 4] } });
    expect(m.step_call).toEqual(stats([1, 2, 3, 4]));
  });

  it("Should keep the first error of the parts that have one", () => {
    const m = mergeRuns([part(1, 1, [1]), part(1, 1, [1], { first_error: "second" }), part(1, 1, [1], { first_error: "third" })]);
    expect((m as { first_error?: string }).first_error).toBe("second");
  });
});
