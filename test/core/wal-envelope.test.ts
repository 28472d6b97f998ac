/**
 * @module The WAL export as a browser reads it (src/core/browser.ts, no zod): each line's envelope checked
 * (walEnvelopeCheck), the lines checked to fit together. It reads the golden WAL exactly as the schema does,
 * and refuses a row that is not a WAL row's envelope, naming the line and the field.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { readWalJsonlLines, walEnvelopeCheck, WalJsonlError, walEnvelopeProblem } from "../../src/core/browser.js";
import { parseWalJsonl } from "../../src/core/index.js";
import { GOLDEN_WAL_PATH } from "../fixtures/golden-wal.js";

const text = readFileSync(GOLDEN_WAL_PATH, "utf8");
const lines = text.trimEnd().split("\n");

/** The golden text with line `n` (1-based) replaced by `f(parsed line)`. */
function edit(n: number, f: (event: Record<string, any>) => unknown): string {
  return lines.map((line, i) => (i + 1 === n ? JSON.stringify(f(JSON.parse(line))) : line)).join("\n");
}

describe("the WAL export read with the envelope check", () => {
  it("Should read the golden WAL into the events the WAL schema reads", () => {
    const events = readWalJsonlLines(text, walEnvelopeCheck).map((l) => l.event);
    expect(events.length).toBe(lines.length);
    expect(events).toEqual(parseWalJsonl(text));
  });

  it.each([
    ["a wal_seq that is a string", () => edit(3, (e) => ({ ...e, wal_seq: "3" })), 3, /wal_seq: expected a positive integer/],
    ["a missing task_id", () => edit(4, ({ task_id: _drop, ...rest }) => rest), 4, /task_id: expected an id/],
    ["a step_id with a path in it", () => edit(5, (e) => ({ ...e, step_id: "../x" })), 5, /step_id: expected an id/],
    ["an unknown event type", () => edit(6, (e) => ({ ...e, event_type: "task_exploded" })), 6, /event_type: expected a WAL event type/],
    ["a payload that is a list", () => edit(7, (e) => ({ ...e, payload: [] })), 7, /payload: expected an object/],
    ["a line that is not an object", () => edit(8, () => [1, 2]), 8, /expected an object/],
    ["an actor_run_id that is a number", () => edit(9, (e) => ({ ...e, actor_run_id: 7 })), 9, /actor_run_id: expected a string or null/],
  ])("Should refuse %s, naming the line and the field", (_label, corrupt, line, message) => {
    const read = () => readWalJsonlLines(corrupt(), walEnvelopeCheck);
    expect(read).toThrow(WalJsonlError);
    expect(read).toThrow(new RegExp(`^line ${line}: not a WAL event: `));
    expect(read).toThrow(message);
  });

  it("Should name every wrong field of one envelope", () => {
    expect(walEnvelopeProblem({ ...JSON.parse(lines[0]!), session_id: 1, created_at: null })).toBe("session_id: expected a string; created_at: expected a string");
  });
});
