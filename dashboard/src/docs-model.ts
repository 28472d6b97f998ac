/**
 * @module The API reference's model: an OpenAPI 3.1 document turned into what /docs draws — sections of
 * operations (by tag, else by the path's resource), each with its parameters, its request body's JSON Schema as a
 * tree ($ref resolved, recursion cut), and its responses. Pure: no DOM, tested in Node with the real document.
 */

/** A JSON Schema or an OpenAPI object, read loosely: the renderer must survive any document. */
type Json = Record<string, unknown>;

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

/** One parameter: path, query or header. */
export interface ParameterDoc {
  readonly name: string;
  readonly in: string;
  readonly required: boolean;
  readonly description?: string;
  readonly schema: SchemaNode;
}

/** One response: its status, description and the schema per media type. */
export interface ResponseDoc {
  readonly status: string;
  readonly description: string;
  readonly contents: readonly { readonly mediaType: string; readonly schema?: SchemaNode }[];
}

/** One operation as the page shows it. */
export interface OperationDoc {
  /** The element id of its entry, unique in the page (`op-<operationId>`). */
  readonly anchor: string;
  readonly method: string;
  readonly path: string;
  readonly operationId?: string;
  readonly summary: string;
  readonly description: string;
  /** The description without what `roles` and `tool` already say. */
  readonly notes: string;
  /** The roles allowed to call it (`x-roles`, else the description's "Roles: a, b."). */
  readonly roles: readonly string[];
  /** The tool name agents know it by (`x-tool`, else the description's "Tool: x."). */
  readonly tool?: string;
  /** Whether it needs a bearer token. */
  readonly authenticated: boolean;
  readonly parameters: readonly ParameterDoc[];
  readonly body?: { readonly required: boolean; readonly contents: readonly { readonly mediaType: string; readonly schema?: SchemaNode }[] };
  readonly responses: readonly ResponseDoc[];
  /** Lower-cased text the filter box matches against. */
  readonly searchText: string;
}

/** A group of operations. */
export interface SectionDoc {
  readonly id: string;
  readonly title: string;
  readonly operations: readonly OperationDoc[];
}

/** The whole reference. */
export interface DocsModel {
  readonly title: string;
  readonly version: string;
  readonly description: string;
  readonly servers: readonly string[];
  readonly sections: readonly SectionDoc[];
  readonly operationCount: number;
}

const METHODS = ["get", "put", "post", "patch", "delete", "head", "options", "trace"] as const;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

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
interface RefScope {
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

/** The section an operation belongs in, when it has no tag: the last resource of its path (a segment some path follows with a {parameter}). */
export function sectionOfPath(path: string, collections: ReadonlySet<string>): { id: string; title: string } {
  const segments = path.split("/").filter((s) => s !== "");
  const statics = segments.filter((s) => !s.startsWith("{"));
  const resource = [...statics].reverse().find((s) => collections.has(s));
  if (resource !== undefined) return { id: slug(resource), title: titleOf(resource) };
  const first = segments[0] ?? "";
  return /^v\d+$/.test(first) ? { id: `${first}-other`, title: `Other /${first} routes` } : { id: "other", title: "Other endpoints" };
}

/** The static segments some path follows with a {parameter}: the API's resources (sessions, tasks, steps…). */
export function collectionsOf(paths: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const path of paths) {
    const segments = path.split("/").filter((s) => s !== "");
    segments.forEach((s, i) => {
      if (!s.startsWith("{") && segments[i + 1]?.startsWith("{") === true) out.add(s);
    });
  }
  return out;
}

const slug = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "") || "x";
const titleOf = (s: string) => s.replace(/[-_]+/g, " ").replace(/^./, (c) => c.toUpperCase());

/** "Roles: a, b." and "Tool: x." as the catalog writes them into descriptions. */
function listed(description: string, label: string): string | undefined {
  return listedPattern(label).exec(description)?.[1]?.trim();
}

/** `label: value.` where the value may hold dots inside a word (agent.task_list). */
const listedPattern = (label: string) => new RegExp(`(?:^|\\s)${label}: ([^.]+(?:\\.[a-z_][^.\\s]*)*)\\.`);

function contentsOf(content: unknown, scope: (schema: unknown) => RefScope, at: string): { mediaType: string; schema?: SchemaNode }[] {
  if (!isObject(content)) return [];
  return Object.entries(content).map(([mediaType, media]) => {
    const schema = isObject(media) ? media.schema : undefined;
    return schema === undefined ? { mediaType } : { mediaType, schema: schemaTree(schema, scope(schema), { at }) };
  });
}

/** The model of a whole OpenAPI document. */
export function docsModel(doc: unknown): DocsModel {
  const d = isObject(doc) ? doc : {};
  const info = isObject(d.info) ? d.info : {};
  const paths = isObject(d.paths) ? d.paths : {};
  const scopeOf = (schema: unknown): RefScope => ({ doc: d, root: schema });
  const collections = collectionsOf(Object.keys(paths));
  const sections = new Map<string, { id: string; title: string; operations: OperationDoc[] }>();
  const anchors = new Set<string>();
  let count = 0;

  for (const [path, item] of Object.entries(paths)) {
    if (!isObject(item)) continue;
    const shared = Array.isArray(item.parameters) ? item.parameters : [];
    for (const method of METHODS) {
      const op = item[method];
      if (!isObject(op)) continue;
      count++;
      const resolve = (v: unknown): unknown => (isObject(v) && typeof v.$ref === "string" ? (resolvePointer(d, v.$ref) ?? v) : v);
      const description = str(op.description) ?? "";
      const operationId = str(op.operationId);
      const rolesExt = Array.isArray(op["x-roles"]) ? op["x-roles"].filter((r): r is string => typeof r === "string") : undefined;
      const rolesText = listed(description, "Roles");
      const roles = rolesExt ?? (rolesText === undefined ? [] : rolesText.split(",").map((r) => r.trim()).filter((r) => r !== ""));
      const tool = str(op["x-tool"]) ?? listed(description, "Tool");
      // Operation parameters override the path item's of the same name and place.
      const byKey = new Map<string, Json>();
      for (const p of [...shared, ...(Array.isArray(op.parameters) ? op.parameters : [])].map(resolve)) if (isObject(p)) byKey.set(`${String(p.in)}:${String(p.name)}`, p);
      const parameters: ParameterDoc[] = [...byKey.values()].map((p) => ({
        name: str(p.name) ?? "",
        in: str(p.in) ?? "",
        required: p.required === true || p.in === "path",
        ...(str(p.description) === undefined ? {} : { description: str(p.description)! }),
        schema: schemaTree(p.schema ?? {}, scopeOf(p.schema), { at: str(p.name) ?? "parameter" }),
      }));
      const requestBody = resolve(op.requestBody);
      const body = isObject(requestBody) ? { required: requestBody.required === true, contents: contentsOf(requestBody.content, scopeOf, "body") } : undefined;
      const responses: ResponseDoc[] = Object.entries(isObject(op.responses) ? op.responses : {}).map(([status, r]) => {
        const res = resolve(r);
        return { status, description: isObject(res) ? (str(res.description) ?? "") : "", contents: isObject(res) ? contentsOf(res.content, scopeOf, "response") : [] };
      });
      const security = Array.isArray(op.security) ? op.security : Array.isArray(d.security) ? d.security : [];
      const authenticated = security.some((s) => isObject(s) && Object.keys(s).length > 0) && !security.some((s) => isObject(s) && Object.keys(s).length === 0);

      let anchor = `op-${slug(operationId ?? `${method}-${path}`)}`;
      for (let i = 2; anchors.has(anchor); i++) anchor = `op-${slug(operationId ?? `${method}-${path}`)}-${i}`;
      anchors.add(anchor);

      const tags = Array.isArray(op.tags) ? op.tags.filter((t): t is string => typeof t === "string") : [];
      const where = tags[0] !== undefined ? { id: `tag-${slug(tags[0])}`, title: tags[0] } : sectionOfPath(path, collections);
      const summary = str(op.summary) ?? "";
      const entry: OperationDoc = {
        anchor,
        method: method.toUpperCase(),
        path,
        ...(operationId === undefined ? {} : { operationId }),
        summary,
        description,
        notes: (["Tool", "Roles"] as const).reduce((text, label) => ((label === "Tool" ? tool : roles.length > 0 ? roles : undefined) === undefined ? text : text.replace(listedPattern(label), "")), description).trim(),
        roles,
        ...(tool === undefined ? {} : { tool }),
        authenticated,
        parameters,
        ...(body === undefined ? {} : { body }),
        responses,
        searchText: [method, path, operationId, summary, description, tool, ...roles, ...parameters.map((p) => p.name)].filter((x) => x !== undefined).join(" ").toLowerCase(),
      };
      const section = sections.get(where.id) ?? { ...where, id: `section-${where.id}`, operations: [] };
      section.operations.push(entry);
      sections.set(where.id, section);
    }
  }

  return {
    title: str(info.title) ?? "API reference",
    version: str(info.version) ?? "",
    description: str(info.description) ?? "",
    servers: (Array.isArray(d.servers) ? d.servers : []).map((s) => (isObject(s) ? str(s.url) : undefined)).filter((u): u is string => u !== undefined),
    sections: [...sections.values()],
    operationCount: count,
  };
}

/** The operations a filter leaves: every word of `query` must appear in the operation's text. */
export function filterSections(sections: readonly SectionDoc[], query: string): SectionDoc[] {
  const words = query.toLowerCase().split(/\s+/).filter((w) => w !== "");
  if (words.length === 0) return [...sections];
  return sections
    .map((s) => ({ ...s, operations: s.operations.filter((op) => words.every((w) => op.searchText.includes(w))) }))
    .filter((s) => s.operations.length > 0);
}

/** The colours of each method's badge: dark text on a light tint, each pair at least 4.5:1 (WCAG AA). */
export const METHOD_COLOURS: Readonly<Record<string, { readonly fg: string; readonly bg: string }>> = {
  GET: { fg: "#0b4f2a", bg: "#dcf3e4" },
  POST: { fg: "#0b3d91", bg: "#dde8fb" },
  PUT: { fg: "#6a3a00", bg: "#fbecd6" },
  PATCH: { fg: "#5b2a86", bg: "#efe3fa" },
  DELETE: { fg: "#8a1010", bg: "#fbe0e0" },
  HEAD: { fg: "#33383f", bg: "#e8ebef" },
  OPTIONS: { fg: "#33383f", bg: "#e8ebef" },
  TRACE: { fg: "#33383f", bg: "#e8ebef" },
};

/** WCAG 2 contrast ratio of two #rrggbb colours. */
export function contrastRatio(a: string, b: string): number {
  const lum = (hex: string) => {
    const [r, g, bl] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255).map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4)) as [number, number, number];
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}
