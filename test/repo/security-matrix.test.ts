/**
 * @module docs/security.md's authorization matrix is the one scripts/security-matrix.ts generates from the route
 * catalog and the core's COMMAND_ROLES (`npm run docs:security` rewrites it), and generating it refuses two tables
 * that disagree.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { OPERATIONS } from "../../routes/http/catalog.js";
import { authorizationMatrix, MATRIX_END, MATRIX_START, tableDisagreements, withMatrix } from "../../scripts/security-matrix.js";

const doc = readFileSync(fileURLToPath(new URL("../../docs/security.md", import.meta.url)), "utf8");

describe("docs/security.md's authorization matrix", () => {
  it("Should be exactly the matrix generated from the catalog and COMMAND_ROLES (run `npm run docs:security`)", () => {
    const start = doc.indexOf(MATRIX_START);
    expect(start).toBeGreaterThan(0);
    expect(doc.slice(start, doc.indexOf(MATRIX_END) + MATRIX_END.length)).toBe(authorizationMatrix());
  });

  it("Should give every catalog operation one row, and show a worker's session-wide reads refused for its scope", () => {
    const matrix = authorizationMatrix();
    for (const op of OPERATIONS) expect(matrix.split("\n").filter((line) => line.startsWith(`| \`${op.method.toUpperCase()} ${op.path}\` |`)), op.operationId).toHaveLength(1);
    expect(matrix).toContain("| `GET /v1/sessions/{sid}/actions` | `session_actions` |  | `permission_denied` | ✓ | `permission_denied` | ✓ | ✓ |");
    expect(matrix).toContain("| `GET /v1/sessions/{sid}/tasks` | `agent.task_list` |  | `permission_denied` | ✓ | `permission_denied` | ✓ | ✓ |");
  });
});

describe("the generator itself", () => {
  it("Should replace only what lies between the markers, and refuse a doc without them", () => {
    const text = `intro\n${MATRIX_START}\nold\n${MATRIX_END}\noutro`;
    expect(withMatrix(text, `${MATRIX_START}\nnew\n${MATRIX_END}`)).toBe(`intro\n${MATRIX_START}\nnew\n${MATRIX_END}\noutro`);
    expect(() => withMatrix("no markers", "x")).toThrow(/markers/);
  });

  it("Should agree with the real tables, and name a role the catalog gives a write whose command the core refuses it", () => {
    expect(tableDisagreements()).toEqual([]);
    const claim = OPERATIONS.find((op) => op.operationId === "claimStep")!;
    const widened = OPERATIONS.map((op) => (op === claim ? { ...claim, roles: [...claim.roles, "observer" as const] } : op));
    expect(tableDisagreements(widened)).toEqual(["claimStep: the catalog lets observer call it, the core refuses claim_step (tool_not_available)"]);
    expect(() => authorizationMatrix(widened)).toThrow(/disagree/);
  });

  it("Should name a task write that runs no core command", () => {
    const stray = { ...OPERATIONS.find((op) => op.operationId === "completeTask")!, operationId: "strayWrite", tool: "no_such_tool" };
    expect(tableDisagreements([...OPERATIONS, stray])).toEqual(["strayWrite writes a task but runs no command of COMMAND_ROLES"]);
  });
});
