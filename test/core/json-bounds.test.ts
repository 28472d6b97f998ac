/** @module The JSON bounds: the raw-text depth scan agrees with the parsed value's depth, and the free-form schemas stop at their bounds. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  CommandSchema,
  jsonTextDepth,
  jsonValueDepth,
  JsonObjectSchema,
  JsonValueSchema,
  MAX_DOCUMENT_DEPTH,
  MAX_JSON_BYTES,
  MAX_JSON_DEPTH,
  utf8Length,
} from "../../src/core/index.js";

/** JSON text of `levels` nested objects, built without recursion: `{"a":{"a":…1…}}`. */
const nestedText = (levels: number, leaf = "1") => '{"a":'.repeat(levels) + leaf + "}".repeat(levels);

describe("jsonTextDepth", () => {
  it("Should agree with the depth of the parsed value for any JSON (brackets and escapes inside strings do not count)", () => {
    fc.assert(
      fc.property(fc.json({ depthSize: "large" }), (text) => {
        expect(jsonTextDepth(text, Number.MAX_SAFE_INTEGER)).toBe(jsonValueDepth(JSON.parse(text), Number.MAX_SAFE_INTEGER));
      }),
      { seed: 20261123, numRuns: 500 },
    );
  });

  it.each([
    { name: "a scalar", text: "1", depth: 0 },
    { name: "an empty object", text: "{}", depth: 1 },
    { name: "brackets inside a string", text: '{"a":"[[{{"}', depth: 1 },
    { name: "an escaped quote before brackets", text: '["\\"[[[", []]', depth: 2 },
    { name: "an escaped backslash before the closing quote", text: '["\\\\", [[]]]', depth: 3 },
    { name: "a string that never closes", text: '["[[[', depth: 1 },
  ])("Should count $name as $depth levels", ({ text, depth }) => {
    expect(jsonTextDepth(text, 100)).toBe(depth);
  });

  it("Should stop counting just past the bound, whatever the real depth", () => {
    expect(jsonTextDepth("[".repeat(500_000), MAX_DOCUMENT_DEPTH)).toBe(MAX_DOCUMENT_DEPTH + 1);
  });
});

describe("the free-form value schemas", () => {
  it("Should leave room in a document for a free-form value inside the deepest envelope (a socket frame's command body)", () => {
    expect(MAX_DOCUMENT_DEPTH).toBeGreaterThanOrEqual(MAX_JSON_DEPTH + 4);
  });

  // Values are built inside the test: a title formatted from a deep value would itself overflow the stack.
  it.each([
    { name: "a value exactly at the depth bound", ok: true, text: () => nestedText(MAX_JSON_DEPTH) },
    { name: "a value one level deeper", ok: false, text: () => nestedText(MAX_JSON_DEPTH + 1) },
    { name: "an array one level deeper", ok: false, text: () => "[".repeat(MAX_JSON_DEPTH + 1) + "]".repeat(MAX_JSON_DEPTH + 1) },
    { name: "a value 100,000 levels deep", ok: false, text: () => nestedText(100_000) },
  ])("Should decide $name: accepted $ok", ({ ok, text }) => {
    const value = JSON.parse(text());
    expect(JsonValueSchema.safeParse(value).success).toBe(ok);
    expect(JsonObjectSchema.safeParse(value).success).toBe(ok);
  });

  it("Should accept a value of exactly MAX_JSON_BYTES of UTF-8 and refuse one byte more, counting multi-byte characters", () => {
    // "é" is 2 bytes and "😀" 4 in UTF-8: the bound is on bytes, not on UTF-16 units.
    const skeleton = utf8Length(JSON.stringify({ a: "é😀" }));
    const atBound = { a: `é😀${"x".repeat(MAX_JSON_BYTES - skeleton)}` };
    expect(new TextEncoder().encode(JSON.stringify(atBound)).length).toBe(MAX_JSON_BYTES);
    expect(JsonObjectSchema.safeParse(atBound).success).toBe(true);
    expect(JsonValueSchema.safeParse({ a: `${atBound.a}x` }).success).toBe(false);
  });

  it("Should agree with TextEncoder on the UTF-8 length of any string JSON.stringify produces", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (s) => {
        const text = JSON.stringify(s);
        expect(utf8Length(text)).toBe(new TextEncoder().encode(text).length);
      }),
      { seed: 20261123, numRuns: 200 },
    );
    // ≈ 1.3 s alone; the core runs beside the Workers pool, so it is given room rather than the default 5 s.
  }, 20_000);

  it.each([
    { field: "metadata", command: () => ({ type: "create_task", task_id: "t", wal_name: "t", title: "T", steps: [], metadata: JSON.parse(nestedText(MAX_JSON_DEPTH + 1)) }) },
    { field: "result", command: () => ({ type: "finish_run", run_id: "r", outcome: "finished", result: JSON.parse(`[${nestedText(MAX_JSON_DEPTH)}]`) }) },
  ])("Should refuse a command whose $field is one level too deep, naming the field", ({ field, command }) => {
    const parsed = CommandSchema.safeParse(command());
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues.map((i) => i.path.join("."))).toEqual([field]);
  });
});
