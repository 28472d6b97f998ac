/**
 * @module Whole published schemas: a schema placed inside a larger document (a request body inside the OpenAPI
 * document, a body inside a tool's argument schema) has its `$ref`s resolved against that document's root, not
 * against the object that carried its `$defs`. The generated definitions of a recursive schema (a step whose
 * delegate holds steps) are gathered at the one place its refs point to.
 */

/** A JSON Schema object. */
export type JsonSchema = Record<string, unknown>;

const LOCAL_DEFS = "#/$defs/";

/** Keywords whose values are data, not schemas: a `$ref` key inside them is not a reference. */
const DATA_KEYWORDS = new Set(["const", "enum", "default", "examples"]);

/**
 * The definitions of the schemas taken into one document, kept where `refPrefix` points (`#/$defs/` for a
 * tool's argument schema, `#/components/schemas/` for OpenAPI). A definition keeps its generated name unless
 * another definition holds it; schemas with the same definitions (two bodies holding the recursive step) share
 * one copy.
 */
export class SchemaDefinitions {
  readonly defs: Record<string, JsonSchema> = {};
  private readonly namesOfSet = new Map<string, ReadonlyMap<string, string>>();

  constructor(private readonly refPrefix: string) {}

  /** `schema` without its `$defs` and with its refs pointing at this document's definitions, which it joins. */
  take(schema: JsonSchema): JsonSchema {
    const { $defs, ...body } = schema as JsonSchema & { $defs?: Record<string, JsonSchema> };
    const local: Record<string, JsonSchema> = { ...$defs };
    // A root that refers to itself ("#") is a definition of its own, so its refs still mean it once it is inlined.
    if (refersToRoot(body)) local["#"] = body;
    // Even without definitions its refs are checked: a local ref to anything else would break once it is placed.
    if (Object.keys(local).length === 0) return this.rewrite(body, new Map());
    const key = JSON.stringify(local);
    let names = this.namesOfSet.get(key);
    if (names === undefined) {
      const chosen = new Map<string, string>();
      for (const name of Object.keys(local)) chosen.set(name, this.freeName(name === "#" ? "__root" : name, chosen));
      for (const [name, def] of Object.entries(local)) this.defs[chosen.get(name)!] = this.rewrite(def, chosen);
      this.namesOfSet.set(key, chosen);
      names = chosen;
    }
    return this.rewrite(body, names);
  }

  private freeName(wanted: string, chosen: ReadonlyMap<string, string>): string {
    const taken = (name: string) => name in this.defs || [...chosen.values()].includes(name);
    if (!taken(wanted)) return wanted;
    let n = 1;
    while (taken(`${wanted}_${n}`)) n++;
    return `${wanted}_${n}`;
  }

  private rewrite(value: unknown, names: ReadonlyMap<string, string>): JsonSchema {
    const visit = (node: unknown): unknown => {
      if (Array.isArray(node)) return node.map(visit);
      if (typeof node !== "object" || node === null) return node;
      const out: JsonSchema = {};
      for (const [key, child] of Object.entries(node)) {
        if (key === "$ref" && typeof child === "string") out[key] = this.target(child, names);
        else out[key] = DATA_KEYWORDS.has(key) ? child : visit(child);
      }
      return out;
    };
    return visit(value) as JsonSchema;
  }

  private target(ref: string, names: ReadonlyMap<string, string>): string {
    if (!ref.startsWith("#")) return ref;
    if (ref === "#") return this.refPrefix + pointerSegment(names.get("#")!);
    if (ref.startsWith(LOCAL_DEFS)) {
      const [name = "", ...rest] = ref.slice(LOCAL_DEFS.length).split("/");
      const renamed = names.get(name.replace(/~1/g, "/").replace(/~0/g, "~"));
      if (renamed !== undefined) return [this.refPrefix + pointerSegment(renamed), ...rest].join("/");
    }
    throw new Error(`a schema's $ref ${ref} points at nothing its definitions hold`);
  }
}

const pointerSegment = (name: string): string => name.replace(/~/g, "~0").replace(/\//g, "~1");

function refersToRoot(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(refersToRoot);
  if (typeof node !== "object" || node === null) return false;
  return Object.entries(node).some(([key, child]) => (key === "$ref" ? child === "#" : !DATA_KEYWORDS.has(key) && refersToRoot(child)));
}
