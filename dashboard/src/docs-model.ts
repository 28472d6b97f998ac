/**
 * @module The API reference's model: an OpenAPI 3.1 document turned into what /docs draws — sections of
 * operations (by tag, else by the path's resource), each with its parameters, its request body's JSON Schema as a
 * tree ($ref resolved, recursion cut), and its responses. Pure: no DOM, tested in Node with the real document.
 */
import { isObject, type Json, type RefScope, resolvePointer, type SchemaNode, schemaTree, str } from "./schema-tree.js";

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
