/** The task-tool conformance suite (docs/model.md) against the HTTP service, through SELF with the session's and runs' tokens. */
import { describe } from "vitest";
import { makeHttpDriver } from "./drivers/http-driver.js";
import { runConformance } from "./index.js";

describe("task-tool conformance (http)", () => {
  runConformance(makeHttpDriver);
});
