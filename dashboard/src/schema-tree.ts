/**
 * @module A JSON Schema as the tree the API reference draws: each node a row (name, type, required, constraints,
 * description) with its properties, items, additional properties or variants; $refs resolved against the schema's
 * own root and then the document, a recursive $ref drawn once and named. Pure: no DOM.
 */

/** A JSON Schema or an OpenAPI object, read loosely: the renderer must survive any document. */
export type Json = Record<string, unknown>;

/** Read loosely: a JSON object (not an array), and a string or undefined. */
export const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
export const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** One schema as drawn: a row (name, type, required, constraints, description) and its children. */
export interface SchemaNode {
  /** The property's name; undefined for a root, an array's items or a variant. */
  readonly name?: string;
  /** What it is, in words: "string", "integer", "array of object", "one of 3", `"task"` for a const. */
  readonly type: string;
  readonly required: boolean;
  readonly nullable: boolean;
  readonly description?: string;
  /** The allowed values, JSON-encoded (`"approved"`, `3`, `null`). */
  readonly enumValues?: readonly string[];
  /** Bounds and formats in words: "1–200 chars", "pattern ^[a-z]+$", "default \"\"". */
  readonly constraints: readonly string[];
  /** The named schema a $ref pointed at (components' names; generated names such as __schema0 are left out). */
  readonly refName?: string;
  /** A const: `type` is its JSON value. */
  readonly isConst?: boolean;
  /** A $ref back to one of its own ancestors: drawn once, not expanded again. */
  readonly recursive?: boolean;
  /** An object's properties, in the schema's order. */
  readonly properties: readonly SchemaNode[];
  /** An array's items. */
  readonly items?: SchemaNode;
  /** An object's additional properties when they have a schema of their own. */
  readonly additional?: SchemaNode;
  /** anyOf / oneOf alternatives, each with a label (its discriminating const when it has one). */
  readonly variants?: readonly { readonly label: string; readonly node: SchemaNode }[];
  readonly variantKind?: "anyOf" | "oneOf";
}

/** Follows a local JSON pointer (`#/a/b~1c`) from `root`; undefined when it leads nowhere. */
export function resolvePointer(root: unknown, ref: string): unknown {
  if (!ref.startsWith("#")) return undefined;
  const parts = ref.slice(1).split("/").slice(1).map((p) => decodeURIComponent(p).replace(/~1/g, "/").replace(/~0/g, "~"));
  let at: unknown = root;
  for (const part of parts) {
    if (isObject(at)) at = at[part];
    else if (Array.isArray(at) && /^\d+$/.test(part)) at = at[Number(part)];
    else return undefined;
  }
  return at;
}

/** Where a schema's $refs are looked up: its own root first (generated $defs live there), then the document. */
export interface RefScope {
  readonly doc: unknown;
  readonly root: unknown;
}

/** The integer bounds zod writes for "any safe integer": no bound a reader needs to see. */
const SAFE_BOUND = Number.MAX_SAFE_INTEGER;

function constraintsOf(s: Json): string[] {
  const out: string[] = [];
  const range = (lo: unknown, hi: unknown, unit: string) => {
    const l = typeof lo === "number" ? lo : undefined;
    const h = typeof hi === "number" ? hi : undefined;
    if (l !== undefined && h !== undefined) out.push(l === h ? `exactly ${l}${unit}` : `${l}–${h}${unit}`);
    else if (l !== undefined) out.push(`≥ ${l}${unit}`);
    else if (h !== undefined) out.push(`≤ ${h}${unit}`);
  };
  range(s.minLength, s.maxLength, " chars");
  range(s.minItems, s.maxItems, " items");
  range(s.minProperties, s.maxProperties, " properties");
  const lo = typeof s.minimum === "number" && Math.abs(s.minimum) < SAFE_BOUND ? s.minimum : undefined;
  const hi = typeof s.maximum === "number" && Math.abs(s.maximum) < SAFE_BOUND ? s.maximum : undefined;
  range(lo, hi, "");
  if (typeof s.exclusiveMinimum === "number") out.push(`> ${s.exclusiveMinimum}`);
  if (typeof s.exclusiveMaximum === "number") out.push(`< ${s.exclusiveMaximum}`);
  if (typeof s.multipleOf === "number") out.push(`multiple of ${s.multipleOf}`);
  if (typeof s.format === "string") out.push(`format ${s.format}`);
  if (typeof s.pattern === "string") out.push(`pattern ${s.pattern}`);
  if (s.uniqueItems === true) out.push("unique items");
  if ("default" in s) out.push(`default ${JSON.stringify(s.default)}`);
  return out;
}

/** The name a reader may see for a $ref target: the last segment, unless it is a generated one. */
function refNameOf(ref: string): string | undefined {
  const last = ref.split("/").pop() ?? "";
  return last === "" || last.startsWith("__") ? undefined : last;
}

const isNullSchema = (s: unknown): boolean => isObject(s) && (s.type === "null" || (Array.isArray(s.enum) && s.enum.length === 1 && s.enum[0] === null));

/** The label of an anyOf/oneOf alternative: `op = "update_task"` when a property is a const, else its type. */
function variantLabel(node: SchemaNode, index: number): string {
  const tag = node.properties.find((p) => p.isConst === true);
  if (tag !== undefined) return `${tag.name} = ${tag.type}`;
  return node.refName ?? `${index + 1}. ${node.type}`;
}

/**
 * The tree of one JSON Schema. `ancestors` holds the $refs being expanded above this node, so a recursive
 * schema (a step holding steps) is drawn once and then named, not expanded forever.
 */
export function schemaTree(schema: unknown, scope: RefScope, opts: { name?: string; required?: boolean; at?: string } = {}, ancestors: ReadonlyMap<string, string> = new Map()): SchemaNode {
  const at = opts.at ?? opts.name ?? "root";
  const base = { ...(opts.name === undefined ? {} : { name: opts.name }), required: opts.required ?? false };
  if (schema === true || (isObject(schema) && Object.keys(schema).length === 0)) return { ...base, type: "any", nullable: false, constraints: [], properties: [] };
  if (schema === false) return { ...base, type: "nothing", nullable: false, constraints: [], properties: [] };
  if (!isObject(schema)) return { ...base, type: "any", nullable: false, constraints: [], properties: [] };

  const ref = str(schema.$ref);
  if (ref !== undefined) {
    const refName = refNameOf(ref);
    const { $ref: _ignored, ...siblings } = schema;
    const first = ancestors.get(ref);
    if (first !== undefined) {
      return { ...base, type: refName ?? `same as ${first}`, nullable: false, constraints: [], properties: [], recursive: true, ...(refName === undefined ? {} : { refName }), ...(str(siblings.description) === undefined ? {} : { description: str(siblings.description)! }) };
    }
    const target = resolvePointer(scope.root, ref) ?? resolvePointer(scope.doc, ref);
    if (target === undefined) return { ...base, type: `unresolved ${ref}`, nullable: false, constraints: [], properties: [] };
    const merged = isObject(target) ? { ...target, ...siblings } : target;
    const node = schemaTree(merged, scope, { ...opts, at }, new Map([...ancestors, [ref, at]]));
    return refName === undefined ? node : { ...node, refName };
  }

  const description = str(schema.description) ?? str(schema.title);
  const common = { ...base, ...(description === undefined ? {} : { description }), constraints: constraintsOf(schema) };

  // allOf: one object with every part's properties (what generated documents use it for).
  if (Array.isArray(schema.allOf)) {
    const { allOf, ...rest } = schema;
    const parts = (allOf as unknown[]).map((part) => schemaTree(part, scope, { at }, ancestors));
    const own = schemaTree(rest, scope, { at }, ancestors);
    const properties = [...parts.flatMap((p) => p.properties), ...own.properties];
    return { ...common, type: properties.length > 0 ? "object" : own.type, nullable: own.nullable, properties, constraints: [...own.constraints] };
  }

  for (const kind of ["oneOf", "anyOf"] as const) {
    const list = schema[kind];
    if (!Array.isArray(list)) continue;
    const nullable = list.some(isNullSchema);
    const rest = list.filter((s) => !isNullSchema(s));
    if (rest.length === 1) {
      const { [kind]: _dropped, ...outer } = schema;
      const inner = schemaTree(rest[0], scope, { ...opts, at }, ancestors);
      const outerDescription = str(outer.description);
      return { ...inner, nullable: inner.nullable || nullable, ...(outerDescription === undefined ? {} : { description: outerDescription }) };
    }
    const nodes = rest.map((s) => schemaTree(s, scope, { at }, ancestors));
    return {
      ...common,
      type: `${kind === "oneOf" ? "one of" : "any of"} ${nodes.length}`,
      nullable,
      properties: [],
      variants: nodes.map((node, i) => ({ label: variantLabel(node, i), node })),
      variantKind: kind,
    };
  }

  const types = Array.isArray(schema.type) ? schema.type.filter((t): t is string => typeof t === "string") : typeof schema.type === "string" ? [schema.type] : [];
  const nullable = types.includes("null") || schema.nullable === true;
  const nonNull = types.filter((t) => t !== "null");
  const enumValues = Array.isArray(schema.enum) ? schema.enum.filter((v) => v !== null).map((v) => JSON.stringify(v)) : undefined;
  const hasConst = "const" in schema;
  const requiredNames = Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === "string") : [];
  const properties = isObject(schema.properties)
    ? Object.entries(schema.properties).map(([name, s]) => schemaTree(s, scope, { name, required: requiredNames.includes(name), at: `${at}.${name}` }, ancestors))
    : [];
  const isObjectType = nonNull.includes("object") || (nonNull.length === 0 && properties.length > 0);
  const isArrayType = nonNull.includes("array") || (nonNull.length === 0 && "items" in schema);
  const items = isArrayType && "items" in schema && !Array.isArray(schema.items) ? schemaTree(schema.items, scope, { at: `${at}[]` }, ancestors) : undefined;
  const extra = schema.additionalProperties;
  const additional = isObjectType && isObject(extra) && Object.keys(extra).length > 0 ? schemaTree(extra, scope, { at: `${at}.*` }, ancestors) : undefined;

  let type: string;
  if (hasConst) type = JSON.stringify(schema.const);
  else if (isArrayType) type = items === undefined ? "array" : `array of ${items.refName ?? items.type}`;
  else if (isObjectType) {
    // An object without declared properties whose values may be anything: a free-form JSON object.
    type = properties.length === 0 && additional === undefined && extra !== false ? "object (any keys)" : "object";
  } else if (nonNull.length > 0) type = nonNull.join(" | ");
  else if (enumValues !== undefined) type = "enum";
  else type = "any";

  return {
    ...common,
    type,
    nullable,
    ...(enumValues === undefined || enumValues.length === 0 ? {} : { enumValues }),
    ...(hasConst ? { isConst: true } : {}),
    properties,
    ...(items === undefined ? {} : { items }),
    ...(additional === undefined ? {} : { additional }),
  };
}
