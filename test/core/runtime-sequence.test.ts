/**
 * @module Runtime event sequences on random WALs (the model tests' generators): strictly increasing, each a
 * resume point that loses and repeats nothing, and `?after_seq=N` resuming after all of WAL event N's events.
 * Resumes go through the task stream's own pieces: the id parser, the frame encoder, and the catch-up rule of
 * TaskGraphObject.catchUpFrom (the worker tests run the object itself).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { projectEvent, projectWal, type RuntimeEvent, runtimeSequence, SEQUENCE_STRIDE, sequencePosition, type WalEvent } from "../../src/core/index.js";
import { isAfterId } from "../../src/client/event-stream.js";
import { SseParser } from "../../src/lib/sse-parser.js";
import { parseTaskEventId, runtimeFrames, type TaskCursor } from "../../durable-objects/shared/sse-frames.js";
import { orchestrator, TASK } from "./harness.js";
import { interpret, specArb } from "./model/commands.js";
import { smallDagArb } from "./model/dag-gen.js";
import { Stats, World } from "./model/world.js";

/** A frame of the task stream, its data parsed. */
interface Frame {
  readonly id: string | undefined;
  readonly event: RuntimeEvent;
}

/** Parses a task stream's text with the SDK's parser. */
function parseFrames(text: string): Frame[] {
  return new SseParser().push(text).map((f) => ({ id: f.id, event: JSON.parse(f.data) as RuntimeEvent }));
}

/**
 * What a task stream sends after `cursor` over the whole WAL: catchUpFrom's rule (a cursor with `k` starts at
 * its own WAL event and skips its events through k; one without starts at the next WAL event) on one page.
 */
function streamAfter(wal: readonly WalEvent[], cursor: TaskCursor): Frame[] {
  const partial = cursor.k !== null;
  const afterSeq = partial ? cursor.seq - 1 : cursor.seq;
  let text = "";
  for (const e of wal) if (e.wal_seq > afterSeq) text += runtimeFrames(e, partial && e.wal_seq === cursor.seq ? cursor.k! : -1);
  return parseFrames(text);
}

/** A random WAL: a small DAG created, then random commands from every kind of actor (refused ones write nothing). */
const walArb = fc
  .record({ steps: smallDagArb(8), specs: fc.array(fc.oneof(specArb("mixed"), specArb("progress")), { minLength: 1, maxLength: 40, size: "max" }) })
  .map(({ steps, specs }) => {
    const world = new World(new Stats());
    const created = world.exec(orchestrator, { type: "create_task", task_id: TASK, wal_name: "plan", title: "Plan", summary: "A plan", steps }, "create");
    if (!created.ok) throw new Error(`create_task refused: ${created.error.code}`);
    specs.forEach((spec, i) => world.step(interpret(world, spec), `#${i}`));
    return world.wal as readonly WalEvent[];
  });

/** fast-check prints the seed and path of a failure; FC_SEED (and FC_PATH) replay exactly that case. */
const params = (numRuns: number): fc.Parameters<unknown> => ({
  numRuns,
  ...(process.env.FC_SEED ? { seed: Number(process.env.FC_SEED) } : {}),
  ...(process.env.FC_PATH ? { path: process.env.FC_PATH } : {}),
});

describe("runtime event sequences", () => {
  it("Should map a sequence back to its WAL event and index", () => {
    expect(runtimeSequence(7, 0)).toBe(7 * SEQUENCE_STRIDE);
    expect(runtimeSequence(7, 1)).toBe(7 * SEQUENCE_STRIDE + 1);
    expect(sequencePosition(runtimeSequence(123_456_789, SEQUENCE_STRIDE - 1))).toEqual({ walSeq: 123_456_789, k: SEQUENCE_STRIDE - 1 });
  });

  it("Should parse an id as the cursor of its sequence, keep accepting legacy `N.k` ids, and refuse anything else", () => {
    expect(parseTaskEventId(String(runtimeSequence(7, 1)))).toEqual({ seq: 7, k: 1 });
    expect(parseTaskEventId(String(runtimeSequence(7, 0)))).toEqual({ seq: 7, k: 0 });
    expect(parseTaskEventId("0")).toEqual({ seq: 0, k: 0 });
    expect(parseTaskEventId("7.1")).toEqual({ seq: 7, k: 1 });
    for (const bad of ["", "abc", "-3", "01", "7.0", "7.01", "1.2.3", "1e3", "99999999999999999"]) expect(parseTaskEventId(bad), bad).toBeNull();
  });

  it("Should, on random WALs, strictly increase, resume exactly from every id, and resume after_seq=N after WAL event N", () => {
    fc.assert(
      fc.property(walArb, (wal) => {
        const all = projectWal(wal);
        // Room for every projection: fewer runtime events per WAL event than SEQUENCE_STRIDE.
        for (const e of wal) expect(projectEvent(e).length, e.event_type).toBeLessThan(SEQUENCE_STRIDE);
        for (let i = 1; i < all.length; i++) expect(all[i]!.sequence, `${all[i]!.type} after ${all[i - 1]!.type}`).toBeGreaterThan(all[i - 1]!.sequence);

        // The whole stream: every event, id = its sequence.
        const frames = streamAfter(wal, { seq: 0, k: null });
        expect(frames.map((f) => f.event)).toEqual(all);
        expect(frames.map((f) => f.id)).toEqual(all.map((e) => String(e.sequence)));

        // Resuming from any id gives exactly the events after it; a legacy `N.k` id resumes at the same place.
        frames.forEach((f, i) => {
          const cursor = parseTaskEventId(f.id!);
          expect(cursor).not.toBeNull();
          expect(streamAfter(wal, cursor!).map((r) => r.event), `after ${f.id}`).toEqual(all.slice(i + 1));
          const { walSeq, k } = sequencePosition(f.event.sequence);
          if (k > 0) expect(parseTaskEventId(`${walSeq}.${k}`)).toEqual(cursor);
          // The SDK orders the ids the same way (it drops a frame that is not after the last one it saw).
          if (i > 0) expect([isAfterId(f.id!, frames[i - 1]!.id), isAfterId(frames[i - 1]!.id!, f.id)]).toEqual([true, false]);
        });

        // ?after_seq=N: every runtime event of WAL events after N, as after the last id of WAL event N.
        for (let n = 0; n <= wal.length; n++) {
          const expected = projectWal(wal.slice(n));
          expect(streamAfter(wal, { seq: n, k: null }).map((f) => f.event), `after_seq=${n}`).toEqual(expected);
          const lastOfN = all.filter((e) => sequencePosition(e.sequence).walSeq === n).at(-1);
          if (lastOfN !== undefined) expect(streamAfter(wal, parseTaskEventId(String(lastOfN.sequence))!).map((f) => f.event)).toEqual(expected);
        }
      }),
      params(150),
    );
  }, 300_000);
});
