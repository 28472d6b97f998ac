/**
 * @module The committed golden WAL of an archived task (`test/fixtures/golden-archived.wal.jsonl`) still parses,
 * replays to the archived task it recorded (deadline included), and projects within the published runtime-event schema.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { normalizedTaskStatus, parseWalJsonl, rebuildIndex, replay, retentionDeadline, retentionHold, toWalJsonl } from "../../src/core/index.js";
import { GOLDEN_ARCHIVED_WAL_PATH } from "../fixtures/golden-archived-wal.js";
import { expectConformingProjection } from "./runtime-event-contract.js";

const text = readFileSync(GOLDEN_ARCHIVED_WAL_PATH, "utf8");

describe("the golden WAL of an archived task", () => {
  const events = parseWalJsonl(text);
  const state = replay(events);

  it("Should parse every line losslessly, numbered 1..n", () => {
    expect(events.map((e) => e.wal_seq)).toEqual(events.map((_, i) => i + 1));
    expect(events).toEqual(text.trimEnd().split("\n").map((l) => JSON.parse(l)));
    expect(parseWalJsonl(toWalJsonl(events))).toEqual(events);
  });

  it("Should replay to a completed task archived with its retention deadline, which nothing holds", () => {
    expect(state.task).toMatchObject({ status: "completed", archived_at: "2026-01-01T00:01:02.000Z", delete_after: "2026-01-31T00:01:02.000Z", updated_at: "2026-01-01T00:00:02.000Z" });
    expect(normalizedTaskStatus(state)).toBe("archived");
    expect(retentionDeadline(state)).toBe(Date.parse("2026-01-31T00:01:02.000Z"));
    expect(retentionHold(state)).toBeNull();
    expect(rebuildIndex(state)).toEqual(state.index);
  });

  it("Should project every event within the published runtime-event schema", () => {
    expect(expectConformingProjection(events).map((e) => e.type)).toContain("task.archived");
  });
});
