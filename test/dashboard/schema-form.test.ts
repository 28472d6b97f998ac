/** The input action's form, from its input_schema: which fields it draws, what input the values make, what it refuses. */
import { describe, expect, it } from "vitest";
import { allFields, formOf, initialValues, inputOf, issuesByField, issuesOf, type FormField } from "../../dashboard/src/model/schema-form-model.js";

const schema = {
  type: "object",
  required: ["name", "count", "tags", "reviewer"],
  properties: {
    name: { type: "string", title: "Name", description: "Who asked", minLength: 2 },
    count: { type: "integer", minimum: 1, maximum: 10 },
    ratio: { type: "number" },
    urgent: { type: "boolean", default: true },
    color: { type: "string", enum: ["red", "green"] },
    tags: { type: "array", items: { type: "string" }, minItems: 1 },
    reviewer: { type: "object", required: ["email"], properties: { email: { type: "string", format: "email" }, note: { type: "string", maxLength: 1000 } } },
    extra: { type: "object", properties: { why: { type: "string" }, ok: { type: "boolean" } }, required: ["why"] },
    either: { anyOf: [{ type: "string" }, { type: "number" }] },
    table: { type: "array", items: { type: "object" } },
  },
};

const kinds = (root: FormField) => Object.fromEntries(allFields(root).map((f) => [f.key, f.kind]));

describe("the schema form", () => {
  it("Should draw each property as its field, nested objects as fieldsets, and what it cannot draw as JSON", () => {
    const root = formOf(schema);
    expect(kinds(root)).toEqual({
      "#": "object",
      "#/name": "string",
      "#/count": "number",
      "#/ratio": "number",
      "#/urgent": "boolean",
      "#/color": "choice",
      "#/tags": "string-list",
      "#/reviewer": "object",
      "#/reviewer/email": "string",
      "#/reviewer/note": "string",
      "#/extra": "object",
      "#/extra/why": "string",
      "#/extra/ok": "boolean",
      "#/either": "json",
      "#/table": "json",
    });
    const byKey = new Map(allFields(root).map((f) => [f.key, f]));
    expect(byKey.get("#/name")).toMatchObject({ label: "Name", description: "Who asked", required: true });
    expect(byKey.get("#/count")).toMatchObject({ label: "count", integer: true, required: true });
    expect(byKey.get("#/ratio")).toMatchObject({ integer: false, required: false });
    expect(byKey.get("#/reviewer/email")).toMatchObject({ inputType: "email", required: true, multiline: false });
    expect(byKey.get("#/reviewer/note")).toMatchObject({ multiline: true });
    expect(byKey.get("#/color")).toMatchObject({ options: ["red", "green"] });
  });

  it("Should answer a JSON field for no schema, an empty one and a combinator at the root, and a single field for a scalar root", () => {
    expect(formOf(null).kind).toBe("json");
    expect(formOf({}).kind).toBe("json");
    expect(formOf({ oneOf: [{ type: "string" }] }).kind).toBe("json");
    expect(formOf({ type: "object" }).kind).toBe("json");
    expect(formOf({ type: ["string", "null"] })).toMatchObject({ kind: "string", key: "#" });
  });

  it("Should start from the schema's defaults", () => {
    const root = formOf(schema);
    const values = initialValues(root, schema);
    expect(values["#/urgent"]).toBe(true);
    expect(values["#/extra/ok"]).toBe(false);
    expect(values["#/name"]).toBe("");
    const withDefaults = { type: "object", properties: { c: { enum: ["a", "b"], default: "b" }, n: { type: "number", default: 3 }, l: { type: "array", items: { type: "string" }, default: ["x", "y"] } } };
    expect(initialValues(formOf(withDefaults), withDefaults)).toEqual({ "#/c": "1", "#/n": "3", "#/l": "x\ny" });
  });

  it("Should turn filled values into the input: numbers parsed, one string a line, choices by option, optional empties left out", () => {
    const root = formOf(schema);
    const values = {
      ...initialValues(root, schema),
      "#/name": "Ada",
      "#/count": " 3 ",
      "#/color": "1",
      "#/tags": "alpha\n\n beta \n",
      "#/reviewer/email": "ada@example.com",
      "#/either": "42",
    };
    expect(inputOf(root, values)).toEqual({
      ok: true,
      value: { name: "Ada", count: 3, urgent: true, color: "green", tags: ["alpha", "beta"], reviewer: { email: "ada@example.com" }, either: 42 },
    });
  });

  it("Should refuse missing required fields, bad numbers, bounds, lengths and bad JSON, each on its field", () => {
    const root = formOf(schema);
    const empty = inputOf(root, initialValues(root, schema));
    expect(empty.ok).toBe(false);
    if (empty.ok) return;
    // The optional object `extra` is left alone while nothing in it is filled; its required `why` does not bind.
    expect(Object.keys(empty.errors).sort()).toEqual(["#/count", "#/name", "#/reviewer/email", "#/tags"]);

    const bad = inputOf(root, {
      ...initialValues(root, schema),
      "#/name": "A",
      "#/count": "2.5",
      "#/ratio": "abc",
      "#/tags": "one",
      "#/reviewer/email": "a@b.c",
      "#/extra/ok": true,
      "#/either": "{nope",
    });
    expect(bad).toEqual({
      ok: false,
      errors: {
        "#/name": "At least 2 characters.",
        "#/count": "Must be a whole number.",
        "#/ratio": "Must be a number.",
        "#/extra/why": "Required.",
        "#/either": "Must be valid JSON.",
      },
    });
    const over = inputOf(root, { ...initialValues(root, schema), "#/name": "Ada", "#/count": "11", "#/tags": "x", "#/reviewer/email": "a@b.c" });
    expect(over).toEqual({ ok: false, errors: { "#/count": "At most 10." } });
  });

  it("Should check a pattern, and answer a root scalar or JSON value as it is", () => {
    const code = formOf({ type: "string", pattern: "^[A-Z]{3}$" });
    expect(inputOf(code, { "#": "abc" })).toEqual({ ok: false, errors: { "#": "Must match ^[A-Z]{3}$." } });
    expect(inputOf(code, { "#": "ABC" })).toEqual({ ok: true, value: "ABC" });
    expect(inputOf(formOf(null), { "#": "[1, {\"a\": true}]" })).toEqual({ ok: true, value: [1, { a: true }] });
    expect(inputOf(formOf(null), { "#": "" })).toEqual({ ok: false, errors: { "#": "Required." } });
  });

  it("Should place the server's validation issues on their fields, or the nearest field above", () => {
    const root = formOf(schema);
    const issues = issuesOf({ issues: [
      { path: "#/reviewer/email", keyword: "format", message: "not an email" },
      { path: "#/tags/0", keyword: "type", message: "not a string" },
      { path: "#", keyword: "required", message: "missing name" },
      { bogus: true },
    ] });
    expect(issues).toHaveLength(3);
    expect(issuesByField(root, issues)).toEqual({ "#/reviewer/email": ["not an email"], "#/tags": ["not a string"], "#": ["missing name"] });
    expect(issuesOf(undefined)).toEqual([]);
  });

  it("Should escape property names in keys as JSON Pointer does", () => {
    const s = { type: "object", properties: { "a/b": { type: "string" }, "c~d": { type: "string" } } };
    expect(allFields(formOf(s)).map((f) => f.key)).toEqual(["#", "#/a~1b", "#/c~0d"]);
    expect(inputOf(formOf(s), { "#/a~1b": "x", "#/c~0d": "" })).toEqual({ ok: true, value: { "a/b": "x" } });
  });
});
