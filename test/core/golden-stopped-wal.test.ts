/**
 * @module The committed golden WAL of a stop with runs in flight (`test/fixtures/golden-stopped.wal.jsonl`) still
 * parses, replays to the DAG it recorded, and projects within the published runtime-event schema.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { nextDeadline, parseWalJsonl, rebuildIndex, replay, toWalJsonl } from "../../src/core/index.js";
import { GOLDEN_STOPPED_WAL_PATH } from "../fixtures/golden-stopped-wal.js";
import { expectConformingProjection } from "./runtime-event-contract.js";

const text = readFileSync(GOLDEN_STOPPED_WAL_PATH, "utf8");

describe("the golden WAL of a stop with runs in flight", () => {
  const events = parseWalJsonl(text);
  const state = replay(events);
  const run = (agent: string) => [...state.runs.values()].find((r) => r.agent_id === agent)!;

  it("Should parse every line losslessly, numbered 1..n", () => {
    expect(events.map((e) => e.wal_seq)).toEqual(events.map((_, i) => i + 1));
    expect(events).toEqual(text.trimEnd().split("\n").map((l) => JSON.parse(l)));
    expect(parseWalJsonl(toWalJsonl(events))).toEqual(events);
  });

  it("Should replay to a failed task whose runs ended by acknowledging, by timing out, and took a late result", () => {
    const failedAt = events.find((e) => e.event_type === "task_failed")!.created_at;
    expect(state.task).toMatchObject({ status: "failed", status_reason: "the report was withdrawn", ended_at: failedAt, updated_at: failedAt });
    expect([...state.steps.values()].map((s) => [s.step_id, s.status, s.status_reason])).toEqual([
      ["research", "failed", "task_failed"],
      ["draft", "completed", null],
      ["review", "failed", "task_failed"],
    ]);
    expect(run("worker_research")).toMatchObject({ status: "cancelled", status_reason: "task_failed", result: { sources_read: 4 }, cancel_request: { reason: "task_failed", requested_by_agent_id: "orch", timed_out_at: null } });
    expect(run("worker_idle")).toMatchObject({ status: "cancelled", status_reason: "child_agent_cancel_timeout", result: { note: "was never given a step" }, cancel_request: { reason: "task_failed", timed_out_at: expect.any(String) } });
    expect(run("worker_draft")).toMatchObject({ status: "finished", cancel_request: null });
    expect(state.index.cancellingRuns.size).toBe(0);
    expect(nextDeadline(state)).toBeNull();
    expect(rebuildIndex(state)).toEqual(state.index);
  });

  it("Should project every event within the published runtime-event schema", () => {
    const types = expectConformingProjection(events).map((e) => e.type);
    expect(types).toContain("task.cancel_requested");
    expect(types).toContain("subagent.status");
  });
});
