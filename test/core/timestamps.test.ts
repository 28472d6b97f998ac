/**
 * @module The core's timestamp text and parsing: isoTimestamp is Date#toISOString's text for every millisecond
 * (it keeps each second's text and adds the milliseconds), and parseTimestamp is Date.parse (it keeps the texts
 * it parsed), whatever came before them.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isoTimestamp, parseTimestamp } from "../../src/core/decide/context.js";

/** Milliseconds from 1900 to beyond year 9999, where toISOString's text takes a sign and six year digits. */
const instant = fc.integer({ min: -2_208_988_800_000, max: 260_000_000_000_000 });

describe("isoTimestamp", () => {
  it("Should give toISOString's text for any millisecond, after any others", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(instant, instant.map((ms) => ms - (ms % 1000)), fc.constantFrom(0, -1, 999, 1000, -1000, 1_767_225_599_999)), { minLength: 1, maxLength: 40 }), (list) => {
        for (const ms of list) expect(isoTimestamp(ms)).toBe(new Date(ms).toISOString());
      }),
      { numRuns: 500 },
    );
  });

  it("Should give toISOString's text for a fractional millisecond too, after its second was kept", () => {
    expect(isoTimestamp(1_000)).toBe("1970-01-01T00:00:01.000Z");
    expect(isoTimestamp(1_000.5)).toBe(new Date(1_000.5).toISOString());
    expect(() => isoTimestamp(Number.NaN)).toThrow(RangeError);
  });
});

describe("parseTimestamp", () => {
  it("Should give Date.parse's number for any text, asked once or again", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(instant.map((ms) => new Date(ms).toISOString()), fc.constantFrom("", "not a date", "2026-01-01", "2026-02-30T00:00:00.000Z")), { minLength: 1, maxLength: 20 }), (texts) => {
        for (const text of [...texts, ...texts]) expect(parseTimestamp(text)).toEqual(Date.parse(text));
      }),
      { numRuns: 300 },
    );
  });
});
