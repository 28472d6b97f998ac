/** Seed 003's conformance suite against the HTTP service, through SELF with the session's and runs' tokens. */
import { describe } from "vitest";
import { makeHttpDriver } from "../conformance/http-driver.js";
import { runConformance } from "../conformance/index.js";

describe("003 conformance (http)", () => {
  runConformance(makeHttpDriver);
});
