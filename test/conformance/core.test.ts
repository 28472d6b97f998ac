/** The task-tool conformance suite (docs/model.md) against the pure core (decide/apply with the harness's fixed clock). */
import { describe } from "vitest";
import { makeCoreDriver } from "./drivers/core-driver.js";
import { runConformance } from "./index.js";

describe("task-tool conformance (core)", () => {
  runConformance(makeCoreDriver);
});
