/** Gathering a nested schema's definitions where its refs resolve: names kept, clashes renamed, a self-referring root made a definition. */
import { describe, expect, it } from "vitest";
import { jsonSchemaOf } from "../../routes/http/catalog.js";
import { SchemaDefinitions } from "../../routes/http/schema-definitions.js";
import { StepInputSchema } from "../../src/core/index.js";

const node = (label: string) => ({ type: "object", properties: { label: { const: label }, next: { $ref: "#/$defs/__schema0" } }, $defs: { __schema0: { type: "object", properties: { label: { const: label }, next: { $ref: "#/$defs/__schema0" } } } } });

describe("SchemaDefinitions", () => {
  it("Should keep a definition's name, share the same definitions, and rename a different one that wants a taken name", () => {
    const defs = new SchemaDefinitions("#/components/schemas/");
    const a = defs.take(node("a"));
    const again = defs.take(node("a"));
    const b = defs.take(node("b"));
    expect(a).toEqual({ type: "object", properties: { label: { const: "a" }, next: { $ref: "#/components/schemas/__schema0" } } });
    expect(again).toEqual(a);
    expect(b.properties).toEqual({ label: { const: "b" }, next: { $ref: "#/components/schemas/__schema0_1" } });
    expect(Object.keys(defs.defs)).toEqual(["__schema0", "__schema0_1"]);
    // A definition's own refs follow its new name.
    expect(defs.defs.__schema0_1).toEqual({ type: "object", properties: { label: { const: "b" }, next: { $ref: "#/components/schemas/__schema0_1" } } });
  });

  it("Should make a root that refers to itself a definition, so its refs still mean it where it is placed", () => {
    const step = jsonSchemaOf(StepInputSchema);
    expect(JSON.stringify(step)).toContain('"$ref":"#"');
    const defs = new SchemaDefinitions("#/$defs/");
    const placed = defs.take(step);
    expect(JSON.stringify(placed)).not.toContain('"$ref":"#"');
    expect(JSON.stringify(placed)).toContain('"$ref":"#/$defs/__root"');
    expect(defs.defs.__root).toEqual(placed);
  });

  it("Should leave data alone and refuse a local ref its definitions do not hold", () => {
    const defs = new SchemaDefinitions("#/$defs/");
    expect(defs.take({ const: { $ref: "#/anything" }, default: { $ref: "#" } })).toEqual({ const: { $ref: "#/anything" }, default: { $ref: "#" } });
    expect(defs.defs).toEqual({});
    expect(() => defs.take({ properties: { x: { $ref: "#/properties/y" } } })).toThrow(/points at nothing/);
  });
});
