/** @module Task tools (docs/model.md "Tools"): the rules of each tool, one file per tool, under one describe. */
import { describe } from "vitest";
import type { MakeDriver } from "../drivers/driver.js";
import { registerDispatchWorker } from "./task-tools-dispatch.js";
import { registerClaimStep } from "./task-tools-claim.js";
import { registerUpdateStep } from "./task-tools-update-step.js";
import { registerCloseTask } from "./task-tools-complete-fail-cancel.js";
import { registerUpdateTask } from "./task-tools-update.js";
import { registerQuerySteps } from "./task-tools-query-steps.js";
import { registerProgress } from "./task-tools-progress.js";
import { registerRunEnd } from "./task-tools-run-end.js";

/** Registers the "Task Tools" rules against the drivers `makeDriver` makes. */
export function runTaskTools(makeDriver: MakeDriver): void {
  describe("Task Tools", () => {
    registerDispatchWorker(makeDriver);
    registerClaimStep(makeDriver);
    registerUpdateStep(makeDriver);
    registerCloseTask(makeDriver);
    registerUpdateTask(makeDriver);
    registerQuerySteps(makeDriver);
    registerProgress(makeDriver);
    registerRunEnd(makeDriver);
  });
}
