/**
 * @module The maintainer's docs against the code they describe: docs/api.md names every operation of the route
 * catalog (method and path) and every error code with the HTTP status STATUS_OF gives it; docs/limits.md names every
 * configurable limit of wrangler.toml's [vars]; docs/security.md's role matrix gives each operation exactly the catalog's
 * roles. A route, code or var added without its line in the docs fails here, and so does a line left behind.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { STATUS_OF } from "../../durable-objects/shared/http-errors.js";
import { OPERATIONS } from "../../routes/http/catalog.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const read = (file: string): string => readFileSync(`${ROOT}${file}`, "utf8");

/** What a doc is checked for: the operations (method and path) and error statuses of the code. */
type OperationRef = { readonly method: string; readonly path: string; readonly roles?: readonly string[] };

/** `METHOD /path` of an operation, as the docs write it (in backticks). */
const routeOf = (op: OperationRef): string => `${op.method.toUpperCase()} ${op.path}`;

/** Every `` `METHOD /v1/…` `` a doc names (query strings left off). Pure. */
function documentedRoutes(doc: string): Set<string> {
  return new Set([...doc.matchAll(/`(GET|POST|PATCH|DELETE) (\/v1\/[^`?\s]*)[^`]*`/g)].map((m) => `${m[1]} ${m[2]}`));
}

/** Operations the doc does not name, and /v1 routes it names that no operation has. Pure. */
function routeMismatches(doc: string, operations: readonly OperationRef[]): { missing: string[]; unknown: string[] } {
  const named = documentedRoutes(doc);
  const real = new Set(operations.map(routeOf));
  return { missing: [...real].filter((r) => !named.has(r)), unknown: [...named].filter((r) => !real.has(r)) };
}

/** The error table's rows, `` | `code` | status | `` → code: status. Pure. */
function documentedStatuses(doc: string): Map<string, number> {
  return new Map([...doc.matchAll(/^\|\s*`([a-z_]+)`\s*\|\s*(\d{3})\s*\|/gm)].map((m) => [m[1]!, Number(m[2])]));
}

/** Codes missing from the doc or given another status there, and rows for codes that do not exist. Pure. */
function statusMismatches(doc: string, statusOf: Readonly<Record<string, number>>): string[] {
  const rows = documentedStatuses(doc);
  const problems: string[] = [];
  for (const [code, status] of Object.entries(statusOf)) {
    if (!rows.has(code)) problems.push(`${code} (${status}) is not in the error table`);
    else if (rows.get(code) !== status) problems.push(`${code} is ${rows.get(code)} in the error table, ${status} in STATUS_OF`);
  }
  for (const code of rows.keys()) if (!Object.hasOwn(statusOf, code)) problems.push(`${code} is in the error table but is no error code`);
  return problems;
}

/** The names of wrangler.toml's [vars]. Pure. */
function varsOf(toml: string): string[] {
  const section = /^\[vars\]\s*$([\s\S]*?)(?=^\[|(?![\s\S]))/m.exec(toml)?.[1] ?? "";
  return [...section.matchAll(/^([A-Z][A-Z0-9_]*)\s*=/gm)].map((m) => m[1]!);
}

/**
 * The role matrix: `` | `METHOD /path` | `tool` | ✓ | — | … `` under a header row naming the roles → the roles
 * marked ✓ for each route. Pure.
 */
function roleMatrix(doc: string): Map<string, string[]> {
  const lines = doc.split("\n");
  const header = lines.find((line) => /^\|\s*operation\s*\|/.test(line));
  if (header === undefined) return new Map();
  const columns = header.split("|").slice(1, -1).map((cell) => cell.trim());
  const matrix = new Map<string, string[]>();
  for (const line of lines) {
    const route = /^\|\s*`((?:GET|POST|PATCH|DELETE) \/[^`]*)`\s*\|/.exec(line)?.[1];
    if (route === undefined) continue;
    const cells = line.split("|").slice(1, -1).map((cell) => cell.trim());
    matrix.set(route, columns.flatMap((column, i) => (cells[i] === "✓" ? [column] : [])));
  }
  return matrix;
}

/** Operations whose row is missing or marks other roles than the catalog's, and rows of no operation. Pure. */
function roleMismatches(doc: string, operations: readonly OperationRef[]): string[] {
  const matrix = roleMatrix(doc);
  const problems: string[] = [];
  for (const op of operations) {
    const marked = matrix.get(routeOf(op))?.slice().sort();
    const roles = [...(op.roles ?? [])].sort();
    if (marked === undefined) problems.push(`${routeOf(op)} has no row`);
    else if (marked.join(",") !== roles.join(",")) problems.push(`${routeOf(op)} marks ${marked.join(", ") || "nobody"}; the catalog: ${roles.join(", ")}`);
  }
  const real = new Set(operations.map(routeOf));
  for (const route of matrix.keys()) if (!real.has(route)) problems.push(`${route} has a row but is no operation`);
  return problems;
}

const api = read("docs/api.md");
const security = read("docs/security.md");
const limits = read("docs/limits.md");

describe("docs/api.md", () => {
  it("Should name every operation of the route catalog, and no /v1 route the catalog lacks", () => {
    expect(routeMismatches(api, OPERATIONS)).toEqual({ missing: [], unknown: [] });
  });

  it("Should list every error code with the status STATUS_OF answers it with", () => {
    expect(statusMismatches(api, STATUS_OF)).toEqual([]);
  });

});

describe("docs/limits.md", () => {
  it("Should name every configurable limit of wrangler.toml", () => {
    const vars = varsOf(read("wrangler.toml"));
    expect(vars).toContain("MAX_BODY_BYTES");
    expect(vars.filter((name) => !limits.includes(`\`${name}\``))).toEqual([]);
  });
});

describe("docs/security.md", () => {
  it("Should give every operation exactly the roles the catalog gives it", () => {
    expect(roleMismatches(security, OPERATIONS)).toEqual([]);
  });
});

describe("the checks themselves", () => {
  const ops: OperationRef[] = [
    { method: "get", path: "/v1/a/{x}", roles: ["observer"] },
    { method: "post", path: "/v1/a/{x}/b", roles: ["admin", "worker"] },
  ];
  const doc = ["| route | what |", "|---|---|", "| `GET /v1/a/{x}` | reads |", "| `POST /v1/a/{x}/b?y=1` | writes |"].join("\n");

  it("Should report an operation whose line was removed, and a line whose operation was removed", () => {
    expect(routeMismatches(doc, ops)).toEqual({ missing: [], unknown: [] });
    expect(routeMismatches(doc.replace("| `GET /v1/a/{x}` | reads |", ""), ops).missing).toEqual(["GET /v1/a/{x}"]);
    expect(routeMismatches(doc, ops.slice(1)).unknown).toEqual(["GET /v1/a/{x}"]);
  });

  it("Should report a code missing from the error table, one with another status, and one that does not exist", () => {
    const table = "| `a_error` | 400 | bad |\n| `b_error` | 409 | clash |";
    expect(statusMismatches(table, { a_error: 400, b_error: 409 })).toEqual([]);
    expect(statusMismatches(table, { a_error: 400, b_error: 409, c_error: 503 })).toEqual(["c_error (503) is not in the error table"]);
    expect(statusMismatches(table, { a_error: 401, b_error: 409 })).toEqual(["a_error is 400 in the error table, 401 in STATUS_OF"]);
    expect(statusMismatches(table, { a_error: 400 })).toEqual(["b_error is in the error table but is no error code"]);
  });

  it("Should read the vars of the [vars] section only", () => {
    expect(varsOf('name = "x"\n[build]\nCOMMAND = "y"\n[vars]\n# a comment\nA_MS = "1"\nB = ""\n')).toEqual(["A_MS", "B"]);
    expect(varsOf('[vars]\nA = "1"\n[[migrations]]\nTAG = "v1"\n')).toEqual(["A"]);
  });

  it("Should report a role the matrix marks that the catalog does not give, and a missing row", () => {
    const matrix = ["| operation | tool | admin | worker | observer |", "|---|---|:---:|:---:|:---:|", "| `GET /v1/a/{x}` | `a` | — | — | ✓ |", "| `POST /v1/a/{x}/b` | `b` | ✓ | ✓ | — |"].join("\n");
    expect(roleMismatches(matrix, ops)).toEqual([]);
    expect(roleMismatches(matrix.replace("| `a` | — | — | ✓ |", "| `a` | — | ✓ | ✓ |"), ops)).toEqual(["GET /v1/a/{x} marks observer, worker; the catalog: observer"]);
    expect(roleMismatches(matrix.replace("| `GET /v1/a/{x}` | `a` | — | — | ✓ |", ""), ops)).toEqual(["GET /v1/a/{x} has no row"]);
  });
});
