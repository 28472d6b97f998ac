/** The API reference's model, fed the service's real OpenAPI document: what /docs draws for each operation. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { contrastRatio, docsModel, filterSections, METHOD_COLOURS, type OperationDoc } from "../../dashboard/src/docs-model.js";
import { type SchemaNode, schemaTree } from "../../dashboard/src/schema-tree.js";
import { OPERATIONS, openApiDocument } from "../../routes/http/catalog.js";

const doc = openApiDocument("http://x");
const model = docsModel(doc);
const operations = model.sections.flatMap((s) => s.operations);
const byId = (id: string): OperationDoc => {
  const op = operations.find((o) => o.operationId === id);
  if (op === undefined) throw new Error(`no operation ${id}`);
  return op;
};
const prop = (node: SchemaNode | undefined, name: string): SchemaNode => {
  const found = node?.properties.find((p) => p.name === name);
  if (found === undefined) throw new Error(`no property ${name} in ${node?.type}`);
  return found;
};
const bodyOf = (id: string): SchemaNode => byId(id).body!.contents.find((c) => c.mediaType === "application/json")!.schema!;

describe("the API reference's model", () => {
  it("Should list every operation of the document once, each under a unique anchor", () => {
    const inDoc = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`));
    expect(operations.map((o) => `${o.method} ${o.path}`).sort()).toEqual(inDoc.sort());
    expect(model.operationCount).toBe(OPERATIONS.length + 3);
    expect(new Set(operations.map((o) => o.anchor)).size).toBe(operations.length);
    for (const op of operations) expect(op.anchor).toMatch(/^op-[a-z0-9-]+$/);
    expect(model).toMatchObject({ title: "Agent task runtime", version: "1.0.0", servers: ["http://x"] });
  });

  it("Should group operations by the last resource of their path when they carry no tag", () => {
    const sectionOf = (id: string) => model.sections.find((s) => s.operations.some((o) => o.operationId === id))?.title;
    expect(sectionOf("createSession")).toBe("Sessions");
    // Tokens are a collection of their own (DELETE .../tokens/{token_id}): minting, listing and revoking read together.
    for (const id of ["mintToken", "listTokens", "revokeToken", "revokeAllTokens"]) expect(sectionOf(id), id).toBe("Tokens");
    expect(sectionOf("createTask")).toBe("Tasks");
    expect(sectionOf("completeTask")).toBe("Tasks");
    expect(sectionOf("claimNextStep")).toBe("Steps");
    expect(sectionOf("respondAction")).toBe("Actions");
    expect(sectionOf("mcp")).toBe("Other endpoints");
    // Sections keep the document's order: the first section is the first path's.
    expect(model.sections[0]!.title).toBe("Sessions");
    expect(new Set(model.sections.map((s) => s.id)).size).toBe(model.sections.length);
  });

  it("Should group by an operation's first tag when it has one", () => {
    const tagged = docsModel({ paths: { "/a/{id}": { get: { operationId: "getA", tags: ["Alpha"] } }, "/b": { post: { operationId: "postB" } } } });
    expect(tagged.sections.map((s) => [s.title, s.operations.map((o) => o.operationId)])).toEqual([["Alpha", ["getA"]], ["Other endpoints", ["postB"]]]);
  });

  it("Should read the roles and the tool name from the description, and keep the rest as notes", () => {
    const respond = byId("respondAction");
    expect(respond).toMatchObject({ method: "POST", path: "/v1/sessions/{sid}/tasks/{tid}/actions/{action_id}/respond", tool: "agent.respond_action", roles: ["orchestrator", "approver"], authenticated: true });
    expect(respond.notes).toBe("Mutating calls accept an Idempotency-Key header.");
    expect(byId("listTasks").tool).toBe("agent.task_list");
    expect(byId("agentCard")).toMatchObject({ authenticated: false, roles: [] });
  });

  it("Should describe path and query parameters with their types and enums", () => {
    const params = byId("listTasks").parameters;
    expect(params.find((p) => p.name === "sid")).toMatchObject({ in: "path", required: true, schema: { type: "string" } });
    expect(params.find((p) => p.name === "include_terminal")).toMatchObject({ in: "query", required: false, schema: { enumValues: ['"true"', '"false"'] } });
    expect(params.find((p) => p.name === "limit")!.schema.constraints).toContain("pattern ^\\d+$");
  });

  it("Should draw the create-task body as a tree: required fields, bounds, the step schema through its $ref, and recursion cut once", () => {
    const body = bodyOf("createTask");
    expect(body.type).toBe("object");
    expect(prop(body, "title")).toMatchObject({ required: true, type: "string", constraints: ["1–200 chars"] });
    expect(prop(body, "summary")).toMatchObject({ required: false, constraints: ["≤ 8000 chars", 'default ""'] });
    expect(prop(body, "visibility").enumValues).toEqual(['"foreground"', '"background"', '"internal"', '"hidden"']);
    // zod's "any safe integer" bounds are noise, not a limit a reader needs.
    expect(prop(body, "priority")).toMatchObject({ type: "integer", constraints: [] });
    expect(prop(body, "metadata").type).toBe("object (any keys)");
    const steps = prop(body, "steps");
    expect(steps).toMatchObject({ required: true, type: "array of object", constraints: ["≤ 10000 items"] });
    const step = steps.items!;
    expect(prop(step, "step_id").required).toBe(true);
    expect(prop(step, "depends_on_step_ids").type).toBe("array of string");
    expect(prop(step, "retry_policy")).toMatchObject({ nullable: true, type: "object" });
    expect(prop(prop(step, "retry_policy"), "max_attempts")).toMatchObject({ required: true, type: "integer", constraints: ["1–100"] });
    const delegate = prop(step, "delegate");
    expect(delegate.variantKind).toBe("oneOf");
    expect(delegate.variants!.map((v) => v.label)).toEqual(['kind = "task"', 'kind = "a2a"']);
    const childSteps = prop(prop(delegate.variants![0]!.node, "task"), "steps");
    // A child task's steps are steps again: named, not expanded a second time.
    expect(childSteps.items).toMatchObject({ recursive: true, type: "same as body.steps[]" });
    expect(childSteps.type).toBe("array of same as body.steps[]");
    expect(prop(delegate.variants![1]!.node, "agent_card_url").constraints).toContain("format uri");
  });

  it("Should fold a null alternative into a nullable field and label a discriminated union by its const", () => {
    const ops = prop(bodyOf("updateTask"), "ops");
    expect(ops.constraints).toEqual(["1–10000 items"]);
    const kinds = ops.items!.variants!.map((v) => v.label);
    expect(kinds).toContain('op = "update_task"');
    const update = ops.items!.variants!.find((v) => v.label === 'op = "update_task"')!.node;
    expect(prop(update, "op")).toMatchObject({ isConst: true, type: '"update_task"', required: true });
    expect(prop(update, "objective")).toMatchObject({ type: "string", nullable: true, constraints: ["≤ 8000 chars"] });
    expect(prop(update, "visibility")).toMatchObject({ nullable: true, enumValues: ['"foreground"', '"background"', '"internal"', '"hidden"'] });
  });

  it("Should resolve responses' $ref to the components and list each media type", () => {
    const responses = byId("respondAction").responses;
    expect(responses.map((r) => r.status)).toEqual(["200", "default"]);
    const error = responses[1]!.contents[0]!;
    expect(error.mediaType).toBe("application/json");
    expect(error.schema!.refName).toBe("Error");
    const code = prop(prop(error.schema, "error"), "code");
    expect(code.required).toBe(true);
    expect(code.enumValues).toEqual(expect.arrayContaining(['"not_found"', '"validation_error"']));
    expect(byId("streamTaskEvents").responses[0]!.contents.map((c) => c.mediaType)).toEqual(["text/event-stream"]);
    const decision = prop(bodyOf("respondAction"), "decision");
    expect(decision.enumValues).toEqual(['"approved"', '"rejected"', '"submitted"']);
  });

  it("Should keep an operation only when its text holds every word of the filter", () => {
    expect(filterSections(model.sections, "").flatMap((s) => s.operations)).toHaveLength(operations.length);
    expect(filterSections(model.sections, "  RESPOND ").flatMap((s) => s.operations.map((o) => o.operationId))).toEqual(["respondAction"]);
    // Words need not be adjacent: a role and a word of the path.
    expect(filterSections(model.sections, "approver respond").flatMap((s) => s.operations.map((o) => o.operationId))).toEqual(["respondAction"]);
    expect(filterSections(model.sections, "agent.task_claim").flatMap((s) => s.operations.map((o) => o.operationId))).toEqual(["claimStep", "claimNextStep"]);
    expect(filterSections(model.sections, "no-such-operation")).toEqual([]);
  });
});

describe("a JSON Schema as a tree", () => {
  const scope = (root: unknown, extra: Record<string, unknown> = {}) => ({ doc: { components: { schemas: extra } }, root });

  it("Should read type lists, allOf and unresolvable references without failing", () => {
    expect(schemaTree({ type: ["string", "null"], minLength: 2 }, scope({}))).toMatchObject({ type: "string", nullable: true, constraints: ["≥ 2 chars"] });
    const merged = schemaTree({ allOf: [{ type: "object", properties: { a: { type: "string" } }, required: ["a"] }, { properties: { b: { type: "integer" } } }] }, scope({}));
    expect(merged.properties.map((p) => [p.name, p.type, p.required])).toEqual([["a", "string", true], ["b", "integer", false]]);
    expect(schemaTree({ $ref: "#/components/schemas/Missing" }, scope({})).type).toBe("unresolved #/components/schemas/Missing");
    expect(schemaTree(true, scope({})).type).toBe("any");
  });

  it("Should name a component that contains itself instead of expanding it forever", () => {
    const node = { type: "object", properties: { children: { type: "array", items: { $ref: "#/components/schemas/Node" } } } };
    const tree = schemaTree({ $ref: "#/components/schemas/Node" }, scope({}, { Node: node }), { at: "body" });
    expect(tree.refName).toBe("Node");
    expect(prop(tree, "children")).toMatchObject({ type: "array of Node", items: { recursive: true, refName: "Node" } });
  });
});

describe("the reference page's colours and assets", () => {
  it("Should give every method badge a text contrast of at least 4.5:1", () => {
    for (const [method, { fg, bg }] of Object.entries(METHOD_COLOURS)) expect(contrastRatio(fg, bg), method).toBeGreaterThanOrEqual(4.5);
    expect(contrastRatio("#000000", "#ffffff")).toBeCloseTo(21, 5);
  });

  it("Should build a page that asks no other host for anything", () => {
    // The test setup builds dist/dashboard before the tests run.
    const page = readFileSync("dist/dashboard/docs.html", "utf8");
    const refs = [...page.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((m) => m[1]!);
    expect(refs).toContain("/docs.js");
    for (const ref of refs) expect(ref, ref).toMatch(/^(\/(?!\/)|data:)/);
    const script = readFileSync("dist/dashboard/docs.js", "utf8");
    expect(script).toContain("/openapi.json");
    // The only absolute URLs in the bundle are the DOM's XML namespaces, which are names, not requests.
    const urls = new Set([...script.matchAll(/\b(?:https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}[^"'`\s)]*/gi)].map((m) => m[0]));
    for (const url of urls) expect(url, url).toMatch(/^http:\/\/www\.w3\.org\//);
  });
});
