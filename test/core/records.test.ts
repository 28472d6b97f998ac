import { describe, expect, it } from "vitest";
import { CLAIM_RELEASING_STEP_STATUSES, releasesClaim, STEP_STATUSES, type StepStatus } from "../../src/core/index.js";
import { Harness, step } from "./harness.js";

// The service claims the next step in the same round trip as a worker's update_step only when that update gives
// up the step it held: this table is the task model's rule (a step leaves its run on completed, failed, cancelled or blocked), so a change to the set must be a deliberate change here too.
const RELEASES: Record<StepStatus, boolean> = {
  pending: false,
  ready: false,
  claimed: false,
  running: false,
  blocked: true,
  completed: true,
  failed: true,
  cancelled: true,
};

describe("releasesClaim", () => {
  it.each(STEP_STATUSES.map((status) => [status, RELEASES[status]] as const))("Should say a worker's update to %s releases its claim: %s", (status, releases) => {
    expect(releasesClaim(status)).toBe(releases);
  });

  it("Should hold exactly blocked, completed, failed and cancelled", () => {
    expect([...CLAIM_RELEASING_STEP_STATUSES].sort()).toEqual(["blocked", "cancelled", "completed", "failed"]);
  });

  it("Should say no for anything that is not a step status", () => {
    for (const value of [undefined, null, "", "done", 1, {}]) expect(releasesClaim(value)).toBe(false);
  });

  it.each(["running", "blocked", "completed", "failed", "cancelled"] as const)("Should agree with the core: a worker's update to %s frees its run exactly when releasesClaim says so", (status) => {
    const h = new Harness();
    h.create([step("a"), step("b")]);
    const w = h.claimWith("a", { max_steps: 2 });
    h.ok({ type: "update_step", step_id: "a", status }, w);
    const run = h.state.runs.get(w.run_id!)!;
    expect(run.current_step_id === null).toBe(releasesClaim(status));
    // A freed run claims its next step; one still holding its step is refused.
    const next = h.run({ type: "claim_next" }, w);
    expect(next.ok && next.value.kind === "claimed").toBe(releasesClaim(status));
  });
});
