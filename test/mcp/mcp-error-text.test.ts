/** The text of an MCP error result: every domain error code says whether a model has a next move, and which. */
import { describe, expect, it } from "vitest";
import { errorText, NEXT_MOVE } from "../../routes/mcp/mcp-text.js";
import { ERROR_CODES } from "../../src/core/index.js";

describe("MCP error text", () => {
  it("Should have an entry, advice or none, for every domain error code and for no other", () => {
    expect(Object.keys(NEXT_MOVE).sort()).toEqual([...ERROR_CODES].sort());
  });

  it("Should name the code and message, then the next move when there is one", () => {
    expect(errorText("step_already_claimed", "held by run r1")).toBe(
      "Error step_already_claimed: held by run r1\nAnother run holds it: query ready steps again (agent.task_query_steps) and claim another, or call agent.task_claim_next.",
    );
    expect(errorText("rate_limited", "slow down")).toBe("Error rate_limited: slow down\nWait a moment (details.retry_after_ms) and call again.");
    expect(errorText("dependency_cycle", "a → b → a")).toBe("Error dependency_cycle: a → b → a");
    // A code from elsewhere (an older or newer server) is shown as it came, with no advice.
    for (const code of ["quota_exceeded", "toString", "constructor"]) expect(errorText(code, "m")).toBe(`Error ${code}: m`);
  });
});
