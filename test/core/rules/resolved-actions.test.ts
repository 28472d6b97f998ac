/**
 * @module Resolved actions in memory (docs/limits.md "Counted caps"): once answered, an action's record keeps what
 * open actions and summaries need and drops the asker's text (prompt, input_schema), which the WAL keeps; the
 * text comes back from the action's action_requested event, whose wal_seq the state records. Replay, and a
 * snapshot restored then replayed, build the same slim state as the live one.
 */
import { describe, expect, it } from "vitest";
import { replay, restoreSnapshot, takeSnapshot, withRequestText } from "../../../src/core/index.js";
import { Harness, step } from "../harness.js";
import { consistent, LEASE_MS, setStep } from "./support.js";

const SCHEMA = { type: "object", required: ["region"], properties: { region: { type: "string", description: "x".repeat(2_000) } } };

/** A held step a, an input action asked on it and answered, and an approval still open on the task. */
function answered() {
  const h = new Harness();
  h.create([step("a")], { step_lease_timeout_ms: LEASE_MS });
  const w = h.claimWith("a");
  h.ok(setStep("a", "running"), w);
  const asked = h.ok({ type: "request_action", step_id: "a", kind: "input", prompt: "Which region? ".repeat(100), input_schema: SCHEMA }, w);
  const id = (asked.value as { action_id: string }).action_id;
  const requestSeq = asked.events[0]!.wal_seq;
  h.ok({ type: "respond_action", action_id: id, decision: "submitted", input: { region: "eu" }, comment: "EU it is" });
  const open = (h.ok({ type: "request_action", kind: "approval", prompt: "Ship it?" }).value as { action_id: string }).action_id;
  return { h, id, requestSeq, open };
}

describe("a resolved action in memory", () => {
  it("Should drop the prompt and input_schema of an answered action, keeping its answer, and keep an open one whole", () => {
    const { h, id, open } = answered();
    expect(h.state.actions.get(id)).toMatchObject({ status: "resolved", prompt: "", input_schema: null, decision: "submitted", input: { region: "eu" }, comment: "EU it is", step_id: "a" });
    expect(h.state.actions.get(open)).toMatchObject({ status: "open", prompt: "Ship it?" });
    consistent(h);
  });

  it("Should record where each action was asked, and give the whole action back from that WAL event", () => {
    const { h, id, requestSeq } = answered();
    expect(h.state.actionRequests.get(id)).toBe(requestSeq);
    const whole = withRequestText(h.state.actions.get(id)!, h.wal.find((e) => e.wal_seq === requestSeq));
    expect(whole).toMatchObject({ action_id: id, status: "resolved", prompt: "Which region? ".repeat(100), input_schema: SCHEMA, input: { region: "eu" } });
    // A copy: memory stays slim.
    expect(h.state.actions.get(id)!.prompt).toBe("");
    expect(() => withRequestText(h.state.actions.get(id)!, h.wal[0])).toThrow(/no action_requested event/);
  });

  it("Should restore the same slim state from a snapshot as replay builds", () => {
    const { h, id, requestSeq } = answered();
    const restored = restoreSnapshot(JSON.parse(JSON.stringify(takeSnapshot(h.state))));
    expect(restored).toEqual(h.state);
    expect(restored.actions.get(id)!.prompt).toBe("");
    expect(restored.actionRequests.get(id)).toBe(requestSeq);
    expect(replay(h.wal)).toEqual(h.state);
  });
});
