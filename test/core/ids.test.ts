import { decodeTime, isValid } from "ulid";
import { describe, expect, it } from "vitest";
import { ulidFactory } from "../../src/lib/ids.js";

describe("ulidFactory", () => {
  it("Should make valid ULIDs of the given time that sort in creation order within one millisecond, all distinct", () => {
    const next = ulidFactory();
    const ids = Array.from({ length: 5_000 }, () => next(1_800_000_000_000));
    for (const id of ids.slice(0, 10)) expect(isValid(id)).toBe(true);
    expect(decodeTime(ids[0]!)).toBe(1_800_000_000_000);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("Should draw fresh randomness for every millisecond and for every factory (no two factories repeat each other)", () => {
    const a = ulidFactory();
    const b = ulidFactory();
    const randomOf = (id: string) => id.slice(10);
    const fromA = Array.from({ length: 2_000 }, (_, i) => randomOf(a(1_800_000_000_000 + i)));
    const fromB = Array.from({ length: 2_000 }, (_, i) => randomOf(b(1_800_000_000_000 + i)));
    expect(new Set(fromA).size).toBe(fromA.length);
    expect(fromA.filter((r, i) => r === fromB[i])).toEqual([]);
    // Every Crockford character shows up in the random parts: the values are spread over the whole alphabet.
    expect(new Set(fromA.join("")).size).toBe(32);
  });
});
