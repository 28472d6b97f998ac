/**
 * @module Architecture rules of the product source (src/, routes/, durable-objects/, dashboard/src/), checked on
 * the files:
 *
 * - Layers: every import goes down the LAYERS table (core ← contract ← client; core and contract ←
 *   durable-objects ← routes ← the Worker entry; the dashboard on the client), never up or sideways.
 * - The SDK imports nothing from the server: src/client/index.ts bundled with esbuild lists no input under
 *   routes/ or durable-objects/ (wire types and limits both sides use are in src/contract/).
 * - No import circles among product files, counting every edge TypeScript sees: `import`, `import type`,
 *   `export ... from` and `import("...")` (parsed from the text, since esbuild drops type-only imports).
 * - No product file over MAX_LINES lines unless its @module comment says why, with the words
 *   "over 400 lines" (the MARKER) and a reason, e.g. "over 400 lines: one state machine that reads best whole".
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { posix } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** The folders of product source: the SDK and core (src/), the Worker's routes, its Durable Objects, the dashboard. */
const PRODUCT_DIRS = ["src", "routes", "durable-objects", "dashboard/src"];
/** The server side, which the SDK must not import. */
const SERVER_DIRS = ["routes/", "durable-objects/"];
/** Most lines of a product file whose @module comment does not give the MARKER and a reason. */
const MAX_LINES = 400;
const MARKER = `over ${MAX_LINES} lines`;

/**
 * The layers of the product, lowest first: a file may import files of its own layer and of the layers its
 * `imports` names, nothing else. The first layer whose prefix a file starts with is its layer.
 */
export const LAYERS: readonly { readonly name: string; readonly prefixes: readonly string[]; readonly imports: readonly string[] }[] = [
  // Dependency-free helpers both sides share (hashes, hex, ids, the SSE parser).
  { name: "lib", prefixes: ["src/lib/"], imports: [] },
  // The pure task model: decide, apply, events, views.
  { name: "core", prefixes: ["src/core/"], imports: ["lib"] },
  // Wire types and limits the SDK and the service both use.
  { name: "contract", prefixes: ["src/contract/"], imports: ["core", "lib"] },
  // The SDK: never the server.
  { name: "client", prefixes: ["src/client/"], imports: ["contract", "core", "lib"] },
  // The browser dashboard: the SDK and the model.
  { name: "dashboard", prefixes: ["dashboard/src/"], imports: ["client", "contract", "core", "lib"] },
  // The Durable Objects and the pieces the service shares (configuration, tokens, errors, the write protocol).
  { name: "durable-objects", prefixes: ["durable-objects/"], imports: ["contract", "core", "lib"] },
  // HTTP surfaces: REST, socket, MCP, A2A.
  { name: "routes", prefixes: ["routes/"], imports: ["durable-objects", "contract", "core", "lib"] },
  // The Worker entry: the app and the object classes.
  { name: "entry", prefixes: ["src/index.ts", "src/zod-setup.ts"], imports: ["routes", "durable-objects", "contract", "core", "lib"] },
];

/** The layer of a file, or undefined when no layer's prefix matches. Pure. */
export function layerOf(file: string, layers: typeof LAYERS = LAYERS): string | undefined {
  return layers.find((layer) => layer.prefixes.some((prefix) => file.startsWith(prefix)))?.name;
}

/** Every edge of the graph against the layer table (`from -> to (layer -> layer)`), and files in no layer. Pure. */
export function layerViolations(graph: ReadonlyMap<string, readonly string[]>, layers: typeof LAYERS = LAYERS): string[] {
  const allowed = new Map(layers.map((layer) => [layer.name, new Set([layer.name, ...layer.imports])]));
  const found: string[] = [];
  for (const [from, targets] of graph) {
    const fromLayer = layerOf(from, layers);
    if (fromLayer === undefined) {
      found.push(`${from} is in no layer`);
      continue;
    }
    for (const to of new Set(targets)) {
      const toLayer = layerOf(to, layers);
      if (toLayer === undefined || !allowed.get(fromLayer)!.has(toLayer)) found.push(`${from} -> ${to} (${fromLayer} -> ${toLayer ?? "no layer"})`);
    }
  }
  return found.sort();
}

// ---- the import graph (pure) ------------------------------------------------------------------------

/**
 * The module specifiers a TypeScript source imports, in order: static imports (type-only too), side-effect
 * imports, `export ... from` and dynamic `import("...")`. Comments and template literals are blanked first, so
 * an import written in a comment or a template (the task template's prose, say) is not one. Regular expression
 * literals are not: an import-like one naming a relative path would show as an unresolved import, not pass.
 */
export function importSpecifiers(source: string): string[] {
  const code = blankCommentsAndTemplates(source);
  const found: { at: number; spec: string }[] = [];
  const patterns = [
    /(?<![.\w$])(?:import|export)\b[^;'"`]*?\bfrom\s*(["'])([^"'\n]+)\1/g,
    /(?<![.\w$])import\s*(["'])([^"'\n]+)\1/g,
    /(?<![.\w$])import\s*\(\s*(["'])([^"'\n]+)\1\s*\)/g,
  ];
  for (const pattern of patterns) for (const m of code.matchAll(pattern)) found.push({ at: m.index, spec: m[2]! });
  return found.sort((a, b) => a.at - b.at).map((f) => f.spec);
}

/** The source with comments and template literals replaced by spaces (newlines kept); quoted strings kept. */
function blankCommentsAndTemplates(source: string): string {
  const out = source.split("");
  const blank = (from: number, to: number): void => {
    for (let k = from; k < to; k++) if (out[k] !== "\n") out[k] = " ";
  };
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    const next = source[i + 1];
    if (c === "/" && next === "/") {
      const end = source.indexOf("\n", i);
      const stop = end === -1 ? source.length : end;
      blank(i, stop);
      i = stop;
    } else if (c === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2);
      const stop = end === -1 ? source.length : end + 2;
      blank(i, stop);
      i = stop;
    } else if (c === '"' || c === "'" || c === "`") {
      let j = i + 1;
      while (j < source.length && source[j] !== c && (c === "`" || source[j] !== "\n")) j += source[j] === "\\" ? 2 : 1;
      const stop = Math.min(j + 1, source.length);
      if (c === "`") blank(i, stop);
      i = stop;
    } else {
      i += 1;
    }
  }
  return out.join("");
}

/**
 * Import circles of a graph (file → the files it imports), as closed paths `[a, b, …, a]`: for every edge that
 * lies on a circle, the shortest circle through it, each circle once (rotated to start at its least file),
 * sorted. Every import that must go for the graph to have no circles is on a listed one. Pure.
 */
export function findCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const edges = (node: string): string[] => [...new Set(graph.get(node) ?? [])].sort();
  const component = stronglyConnected([...graph.keys()].sort(), edges);
  const cycles = new Map<string, string[]>();
  for (const from of [...graph.keys()].sort()) {
    for (const to of edges(from)) {
      if (from !== to && (component.get(from) === undefined || component.get(from) !== component.get(to))) continue;
      const back = from === to ? [to] : shortestPath(to, from, edges, (n) => component.get(n) === component.get(from));
      const open = [from, ...back.slice(0, -1)];
      const start = open.indexOf([...open].sort()[0]!);
      const rotated = [...open.slice(start), ...open.slice(0, start)];
      cycles.set(rotated.join("\n"), [...rotated, rotated[0]!]);
    }
  }
  return [...cycles.keys()].sort().map((key) => cycles.get(key)!);
}

/** Tarjan's strongly connected components: each node's component id (nodes only reached as targets get one too). */
function stronglyConnected(nodes: readonly string[], edges: (node: string) => string[]): Map<string, number> {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const component = new Map<string, number>();
  const stack: string[] = [];
  let counter = 0;
  let components = 0;
  const visit = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter);
    counter += 1;
    stack.push(node);
    for (const next of edges(node)) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (!component.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      let member: string;
      do {
        member = stack.pop()!;
        component.set(member, components);
      } while (member !== node);
      components += 1;
    }
  };
  for (const node of nodes) if (!index.has(node)) visit(node);
  return component;
}

/** The shortest path `from` → `to` (both included) through nodes that pass `within`; breadth-first, in name order. */
function shortestPath(from: string, to: string, edges: (node: string) => string[], within: (node: string) => boolean): string[] {
  const parent = new Map<string, string | null>([[from, null]]);
  const queue = [from];
  for (let head = 0; head < queue.length; head++) {
    const node = queue[head]!;
    if (node === to) break;
    for (const next of edges(node)) {
      if (parent.has(next) || !within(next)) continue;
      parent.set(next, node);
      queue.push(next);
    }
  }
  const path: string[] = [];
  for (let node: string | null = to; node !== null; node = parent.get(node) ?? null) path.unshift(node);
  return path;
}

// ---- the product files ------------------------------------------------------------------------------

/** Every product source file, as a path from the repository root (posix). */
function productFiles(dirs: readonly string[] = PRODUCT_DIRS): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(`${ROOT}${dir}`, { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) files.push(path);
    }
  };
  for (const dir of dirs) walk(dir);
  return files.sort();
}

/** The file a relative specifier names (`./x.js` → `./x.ts`, a folder → its index.ts), or undefined. */
function resolveImport(fromFile: string, spec: string): string | undefined {
  const target = posix.normalize(posix.join(posix.dirname(fromFile), spec));
  const candidates = [target.replace(/\.js$/, ".ts"), target, `${target}.ts`, `${target}/index.ts`];
  return candidates.find((c) => c.endsWith(".ts") && existsSync(`${ROOT}${c}`) && statSync(`${ROOT}${c}`).isFile());
}

/** The import graph of the product files (relative imports only; packages are not nodes), and what did not resolve. */
function productGraph(dirs: readonly string[] = PRODUCT_DIRS): { graph: Map<string, string[]>; unresolved: string[] } {
  const graph = new Map<string, string[]>();
  const unresolved: string[] = [];
  for (const file of productFiles(dirs)) {
    const targets: string[] = [];
    for (const spec of importSpecifiers(readFileSync(`${ROOT}${file}`, "utf8"))) {
      if (!spec.startsWith(".")) continue;
      const target = resolveImport(file, spec);
      if (target === undefined) unresolved.push(`${file}: ${spec}`);
      else targets.push(target);
    }
    graph.set(file, targets);
  }
  return { graph, unresolved };
}

// ---- the tests --------------------------------------------------------------------------------------

describe("the import-graph helpers", () => {
  it("importSpecifiers finds static, type-only, re-export, side-effect and dynamic imports, not comments or templates", () => {
    const source = [
      '/** @module x. import y from "./in-doc.js" */',
      'import type { A } from "./a.js";',
      "import {",
      "  type B,",
      "  c,",
      '} from "./b.js";',
      'export * from "./c.js";',
      'export { type D, e } from "./d.js";',
      'import "./side-effect.js";',
      'const f = await import("./f.js");',
      'type G = typeof import("./g.js");',
      '// import h from "./in-comment.js";',
      'const t = `import i from "./in-template.js"`;',
      'const s = "not an import: import x from";',
      'import { z } from "zod";',
      'x.import("./method.js");',
    ].join("\n");
    expect(importSpecifiers(source)).toEqual(["./a.js", "./b.js", "./c.js", "./d.js", "./side-effect.js", "./f.js", "./g.js", "zod"]);
  });

  it("findCycles finds nothing in a graph without circles", () => {
    const graph = new Map([
      ["a", ["b", "c"]],
      ["b", ["c", "outside"]],
      ["c", []],
    ]);
    expect(findCycles(graph)).toEqual([]);
  });

  it("findCycles lists each circle, two through one file, a self-import and a longer one with a chord", () => {
    const graph = new Map<string, string[]>([
      ["env", ["session", "task"]],
      ["session", ["env", "core"]],
      ["task", ["env", "core"]],
      ["core", []],
      ["self", ["self"]],
      ["p", ["q", "r"]],
      ["q", ["r"]],
      ["r", ["p"]],
    ]);
    expect(findCycles(graph)).toEqual([
      ["env", "session", "env"],
      ["env", "task", "env"],
      ["p", "q", "r", "p"],
      ["p", "r", "p"],
      ["self", "self"],
    ]);
  });

  it("findCycles does not depend on the order of the map or of the imports", () => {
    const graph = new Map<string, string[]>([
      ["c", ["a"]],
      ["b", ["c", "c"]],
      ["a", ["b"]],
    ]);
    expect(findCycles(graph)).toEqual([["a", "b", "c", "a"]]);
  });
});

describe("the layer table", () => {
  it("layerViolations lets edges go down, and names an edge up, a sideways one and a file in no layer", () => {
    const graph = new Map<string, string[]>([
      ["src/core/model/state.ts", ["src/lib/hash.ts", "src/core/model/records.ts"]],
      ["src/client/index.ts", ["src/contract/index.ts", "src/core/index.ts"]],
      ["routes/app.ts", ["durable-objects/shared/env.ts"]],
      // up: an object reaching into a route (the kind of edge the socket used to have)
      ["durable-objects/task/command-sockets.ts", ["routes/socket/task-socket.ts"]],
      // sideways: the SDK reaching into the service
      ["src/client/transport.ts", ["durable-objects/shared/env.ts"]],
      ["elsewhere/x.ts", []],
    ]);
    expect(layerViolations(graph)).toEqual([
      "durable-objects/task/command-sockets.ts -> routes/socket/task-socket.ts (durable-objects -> routes)",
      "elsewhere/x.ts is in no layer",
      "src/client/transport.ts -> durable-objects/shared/env.ts (client -> durable-objects)",
    ]);
  });

  it("every import of the product follows it", () => {
    const { graph, unresolved } = productGraph();
    expect(unresolved).toEqual([]);
    // Not vacuous: every layer has files.
    const layers = new Set([...graph.keys()].map((file) => layerOf(file)));
    expect([...layers].sort()).toEqual(LAYERS.map((layer) => layer.name).sort());
    expect(layerViolations(graph)).toEqual([]);
  });
});

describe("the SDK imports nothing from the server", () => {
  it("src/client bundled with esbuild has no input under routes/ or durable-objects/", async () => {
    const result = await build({
      absWorkingDir: ROOT,
      // The API client and the webhook receiver's verifier, the SDK's two entries (package.json "exports").
      entryPoints: ["src/client/index.ts", "src/client/webhook-verify.ts"],
      outdir: "out",
      bundle: true,
      write: false,
      metafile: true,
      platform: "neutral",
      format: "esm",
      packages: "external",
      logLevel: "silent",
    });
    const inputs = Object.keys(result.metafile.inputs).map((p) => posix.normalize(p.replaceAll("\\", "/")));
    // Not vacuous: the bundle is the SDK.
    expect(inputs).toContain("src/client/index.ts");
    expect(inputs).toContain("src/client/runtime-client.ts");
    expect(inputs.filter((p) => SERVER_DIRS.some((dir) => p.startsWith(dir)))).toEqual([]);
    // The SDK takes its limits from contract/limits.ts (no zod), and the request schemas only as types.
    expect(inputs).toContain("src/contract/limits.ts");
    expect(inputs).not.toContain("src/contract/requests.ts");
  });
});

describe("the product source", () => {
  it("has no import circles (type-only imports and re-exports included)", () => {
    const { graph, unresolved } = productGraph();
    // Not vacuous: the graph holds the product files and their imports.
    expect(graph.get("src/client/index.ts")).toContain("src/client/runtime-client.ts");
    expect(graph.get("routes/http/schemas.ts")).toContain("src/contract/index.ts");
    expect(unresolved).toEqual([]);
    expect(findCycles(graph).map((cycle) => cycle.join(" -> "))).toEqual([]);
  });

  it(`has no file over ${MAX_LINES} lines unless its @module comment says why ("${MARKER}")`, () => {
    const over: string[] = [];
    for (const file of productFiles()) {
      const text = readFileSync(`${ROOT}${file}`, "utf8");
      const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
      if (lines <= MAX_LINES) continue;
      const header = /\/\*\*([\s\S]*?)\*\//.exec(text)?.[1] ?? "";
      const prose = header.replace(/^\s*\*/gm, " ").replace(/\s+/g, " ").toLowerCase();
      if (!(prose.includes("@module") && prose.includes(MARKER))) over.push(`${file}: ${lines} lines`);
    }
    expect(over).toEqual([]);
  });
});
