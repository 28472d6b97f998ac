/** Seed 003's conformance suite against the pure core (decide/apply with the harness's fixed clock). */
import { describe } from "vitest";
import { makeCoreDriver } from "./drivers/core-driver.js";
import { runConformance } from "./index.js";

describe("003 conformance (core)", () => {
  runConformance(makeCoreDriver);
});
