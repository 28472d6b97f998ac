/**
 * @module The committed golden WAL (`test/fixtures/golden.wal.jsonl`) still parses and replays to the DAG it
 * recorded, and a corrupted copy of it is refused with the line that broke it.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  parseWalJsonl,
  rebuildIndex,
  replay,
  replayWalJsonl,
  toWalJsonl,
  WalJsonlError,
} from "../../src/core/index.js";
import { GOLDEN_WAL_PATH } from "../fixtures/golden-wal.js";

const text = readFileSync(GOLDEN_WAL_PATH, "utf8");
const lines = text.trimEnd().split("\n");

/** The golden text with line `n` (1-based) replaced by `f(parsed line)`, or dropped when f returns null. */
function edit(n: number, f: (event: Record<string, any>) => Record<string, any> | string | null): string {
  return lines
    .flatMap((line, i) => {
      if (i + 1 !== n) return [line];
      const out = f(JSON.parse(line));
      return out === null ? [] : [typeof out === "string" ? out : JSON.stringify(out)];
    })
    .join("\n");
}

/** The 1-based line of the first event of this type (and step). */
function lineOf(type: string, stepId?: string): number {
  const i = lines.findIndex((l) => {
    const e = JSON.parse(l);
    return e.event_type === type && (stepId === undefined || e.step_id === stepId);
  });
  if (i < 0) throw new Error(`no ${type} in the golden WAL`);
  return i + 1;
}

describe("the golden WAL", () => {
  const events = parseWalJsonl(text);
  const state = replay(events);

  it("Should parse every line and number the events 1..n", () => {
    expect(events).toHaveLength(lines.length);
    expect(events.map((e) => e.wal_seq)).toEqual(events.map((_, i) => i + 1));
    // Parsing keeps every field (key order aside), and writing then parsing again is lossless.
    expect(events).toEqual(lines.map((l) => JSON.parse(l)));
    expect(parseWalJsonl(toWalJsonl(events))).toEqual(events);
  });

  it("Should replay to a completed task whose indexes match a rebuild", () => {
    expect(state.task).toMatchObject({ task_id: "task_1", status: "completed", status_reason: "v1 shipped", objective: "Ship v1" });
    expect(state.task!.ended_at).not.toBeNull();
    expect(rebuildIndex(state)).toEqual(state.index);
    expect(replayWalJsonl(text)).toEqual(state);
  });

  it.each([
    ["plan", "completed", ["lost", "completed"]],
    ["build_api", "completed", ["completed"]],
    ["build_ui", "completed", ["failed", "completed"]],
    ["build_db", "completed", ["completed"]],
    ["integrate", "completed", ["completed"]],
    ["release", "completed", ["completed"]],
    ["docs", "cancelled", []],
  ])("Should give step %s status %s and attempts %j", (stepId, status, attempts) => {
    const step = state.steps.get(stepId)!;
    expect(step.status).toBe(status);
    expect(step.attempt_ids.map((id) => state.attempts.get(id)!.status)).toEqual(attempts);
    expect(step.attempt_ids.map((id) => state.attempts.get(id)!.ordinal)).toEqual(attempts.map((_, i) => i + 1));
  });

  it("Should keep the facts of the story: lost lease, reopen, pooled run, optional step cancelled", () => {
    const plan = state.steps.get("plan")!;
    expect(state.attempts.get(plan.attempt_ids[0]!)).toMatchObject({ agent_id: "worker_lost", status: "lost", last_error: "lease_expired" });
    expect(plan).toMatchObject({ result_summary: "plan written", artifact_ids: ["art_plan"] });
    expect(state.steps.get("docs")).toMatchObject({ required: false, status_reason: "optional_step_cancelled_on_task_complete" });
    const pooled = [...state.runs.values()].find((r) => r.agent_id === "worker_pool")!;
    expect(pooled).toMatchObject({ max_steps: 2, claims_used: 2, allowed_step_ids: ["build_ui", "integrate"], status: "finished", result: { steps: 2 } });
    expect(state.steps.get("build_db")!.worker_pool_id).toBe("gpu");
    expect(state.steps.get("integrate")!.summary).toBe("Integrate api, ui and db; run e2e");
    expect([...state.runs.values()].every((r) => r.status !== "active")).toBe(true);
    expect(state.runs.size).toBe(7);
    expect(state.progress.get("plan")).toMatchObject({ phase: "planning", counters: { sections: 4 } });
  });
});

describe("a corrupted copy of the golden WAL", () => {
  const claimed = lineOf("task_step_claimed", "build_api");
  const completed = lineOf("task_step_completed", "build_db");

  it.each([
    ["a dropped line (a gap in wal_seq)", () => edit(10, () => null), 10, /wal_seq 11 where 10 was expected \(a gap/],
    ["two lines swapped", () => [...lines.slice(0, 4), lines[5], lines[4], ...lines.slice(6)].join("\n"), 5, /wal_seq 6 where 5 was expected/],
    ["a line cut short (invalid JSON)", () => edit(7, () => lines[6]!.slice(0, 40)), 7, /not valid JSON/],
    ["an empty line inside", () => edit(3, () => ""), 3, /empty line/],
    ["an unknown event type", () => edit(8, (e) => ({ ...e, event_type: "task_exploded" })), 8, /not a WAL event/],
    ["a field of the wrong type", () => edit(claimed, (e) => ({ ...e, payload: { ...e.payload, attempt_ordinal: "first" } })), claimed, /not a WAL event: payload\.attempt_ordinal/],
    ["a missing field", () => edit(4, ({ wal_seq: _drop, ...rest }) => rest), 4, /wal_seq/],
    ["an event of another task", () => edit(12, (e) => ({ ...e, task_id: "task_9" })), 12, /task_9/],
  ])("Should refuse %s in parseWalJsonl, naming the line", (_label, corrupt, line, message) => {
    const bad = corrupt();
    const error = (() => {
      try {
        parseWalJsonl(bad);
      } catch (e) {
        return e;
      }
      throw new Error("parseWalJsonl accepted a corrupted WAL");
    })();
    expect(error).toBeInstanceOf(WalJsonlError);
    expect((error as WalJsonlError).line).toBe(line);
    expect((error as WalJsonlError).message).toMatch(new RegExp(`^line ${line}: `));
    expect((error as WalJsonlError).message).toMatch(message);
  });

  it.each([
    ["an unknown step", () => edit(completed, (e) => ({ ...e, step_id: "ghost" })), completed, /unknown step ghost/],
    ["a second task_created", () => edit(2, (e) => ({ ...JSON.parse(lines[0]!), wal_seq: e.wal_seq })), 2, /task_created, once/],
    ["a WAL that does not start with task_created", () => lines.slice(1).map((l, i) => JSON.stringify({ ...JSON.parse(l), wal_seq: i + 1 })).join("\n"), 1, /starts with task_created/],
    ["an unknown run", () => edit(lineOf("worker_run_ended"), (e) => ({ ...e, payload: { ...e.payload, run_id: "run_ghost" } })), lineOf("worker_run_ended"), /unknown run run_ghost/],
  ])("Should refuse %s in replay, naming the line", (_label, corrupt, line, message) => {
    const bad = corrupt();
    expect(() => parseWalJsonl(bad)).not.toThrow();
    expect(() => replay(parseWalJsonl(bad))).toThrow(message);
    expect(() => replayWalJsonl(bad)).toThrow(new RegExp(`^line ${line}: `));
    expect(() => replayWalJsonl(bad)).toThrow(WalJsonlError);
  });

  it("Should refuse an empty WAL", () => {
    expect(() => replayWalJsonl("\n")).toThrow(/empty/);
  });
});
