/** Seed 003's conformance suite against the HTTP service, through SELF with the session's and runs' tokens. */
import { describe } from "vitest";
import { makeHttpDriver } from "./drivers/http-driver.js";
import { runConformance } from "./index.js";

describe("003 conformance (http)", () => {
  runConformance(makeHttpDriver);
});
