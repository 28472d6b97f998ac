import { expect, it } from "vitest";
import { Harness, step } from "./harness.js";
import { replay } from "../../src/core/index.js";
it("smoke", () => {
  const h = new Harness();
  const c = h.create([step("a"), step("b"), step("c", ["a", "b"])]);
  console.log(h.types(c));
  h.complete("a"); h.complete("b");
  expect(h.status("c")).toBe("ready");
  const w = h.claimWith("c");
  const d = h.ok({ type: "update_step", step_id: "c", status: "completed" }, w);
  console.log(h.types(d));
  console.log(h.types(h.ok({ type: "complete_task" })));
  expect(replay(h.wal)).toEqual(h.state);
});
