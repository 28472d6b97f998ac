import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ReadyQueue } from "../../src/core/index.js";

const id = (ordinal: number) => `s${ordinal}`;

describe("ReadyQueue", () => {
  it("Should hold exactly the added, not removed, steps in ordinal order under any sequence of adds and removes", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.nat(3_000)), { maxLength: 400 }), (ops) => {
        const queue = new ReadyQueue();
        const model = new Set<number>();
        for (const [add, ordinal] of ops) {
          if (add && !model.has(ordinal)) {
            queue.add(id(ordinal), ordinal);
            model.add(ordinal);
          } else if (!add) {
            queue.remove(id(ordinal), ordinal);
            model.delete(ordinal);
          }
        }
        const expected = [...model].sort((a, b) => a - b).map(id);
        expect(queue.ids()).toEqual(expected);
        expect(queue.size).toBe(expected.length);
        expect(queue.first()).toBe(expected[0]);
      }),
      { numRuns: 300 },
    );
  });

  it("Should lay out the same set of steps identically whatever the history, so replayed indexes deep-equal live ones", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.nat(5_000), { maxLength: 200 }), fc.uniqueArray(fc.nat(5_000), { maxLength: 100 }), (keep, transient) => {
        const direct = new ReadyQueue();
        for (const o of [...keep].sort((a, b) => a - b)) direct.add(id(o), o);
        const churned = new ReadyQueue();
        const extra = transient.filter((o) => !keep.includes(o));
        for (const o of [...extra, ...keep]) churned.add(id(o), o);
        for (const o of extra) churned.remove(id(o), o);
        expect(churned).toEqual(direct);
      }),
      { numRuns: 200 },
    );
  });

  it("Should ignore the removal of a step it does not hold", () => {
    const queue = new ReadyQueue();
    queue.add("a", 1);
    queue.remove("b", 1);
    queue.remove("c", 900);
    expect(queue.ids()).toEqual(["a"]);
  });
});
