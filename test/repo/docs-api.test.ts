/**
 * @module The maintainer's docs against the code they describe: docs/api.md names every operation of the route
 * catalog (method and path) and every error code with the HTTP status STATUS_OF gives it; docs/limits.md names every
 * configurable limit of wrangler.toml's [vars] (docs/security.md's matrix is generated and checked whole: security-matrix.test.ts).
 * A route, code or var added without its line in the docs fails here, and so does a line left behind.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { STATUS_OF } from "../../durable-objects/shared/http-errors.js";
import { OPERATIONS } from "../../routes/http/catalog.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const read = (file: string): string => readFileSync(`${ROOT}${file}`, "utf8");

/** What a doc is checked for: the operations (method and path) and error statuses of the code. */
type OperationRef = { readonly method: string; readonly path: string };

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

const api = read("docs/api.md");
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

describe("the checks themselves", () => {
  const ops: OperationRef[] = [
    { method: "get", path: "/v1/a/{x}" },
    { method: "post", path: "/v1/a/{x}/b" },
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
});
