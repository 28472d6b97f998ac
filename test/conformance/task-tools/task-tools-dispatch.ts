/** @module Task tools (docs/model.md "Tools"): agent.dispatch_worker. */
import { describe, it } from "vitest";
import { DIAMOND, type MakeDriver } from "../drivers/driver.js";
import { created, rejected } from "../drivers/expect.js";

/** Registers the rules of agent.dispatch_worker against the drivers `makeDriver` makes. */
export function registerDispatchWorker(makeDriver: MakeDriver): void {
  describe("agent.dispatch_worker", () => {
    it("a dispatch is refused when allowed_step_ids names a step the DAG does not have", async () => {
      const d = await created(await makeDriver(), DIAMOND());
      await rejected(d, () => d.dispatch({ allowed_step_ids: ["a", "zz"] }), "validation_error");
    });
  });
}
