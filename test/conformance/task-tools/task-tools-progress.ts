/** @module Task tools (docs/model.md "Tools"): agent.task_progress. */
import { describe, it } from "vitest";
import { DIAMOND, type MakeDriver } from "../drivers/driver.js";
import { accepted, created, holder, rejected } from "../drivers/expect.js";

/** Registers the rules of agent.task_progress against the drivers `makeDriver` makes. */
export function registerProgress(makeDriver: MakeDriver): void {
  describe("agent.task_progress", () => {
    it.each([
      ["the step does not exist", "zz", false, "not_found"],
      ["the task is cancelled", "a", true, "task_terminal"],
    ])("progress is refused when %s", async (_name, stepId, cancel, code) => {
      const d = await created(await makeDriver(), DIAMOND());
      await holder(d, "a");
      if (cancel) accepted(await d.task("cancel"));
      await rejected(d, () => d.progress("orchestrator", stepId, { summary: "x" }), code);
    });
  });
}
