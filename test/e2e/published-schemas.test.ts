/**
 * Every schema the runtime publishes compiles with a standard JSON Schema 2020-12 validator (Ajv 8, strict, with
 * the standard formats), as a client that checks its arguments would compile it: the OpenAPI document's request
 * and response schemas with their refs resolved within the document, each /v1/tools input schema, and each
 * tool's input and output schema as the official MCP client receives them from tools/list. Compiled in Node
 * (Ajv generates code, which workerd refuses) against `wrangler dev`. A schema whose $ref points at nothing fails
 * to compile; the recursive step schema (a step whose delegate holds steps) is checked to be followed, not dropped.
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { beforeAll, describe, expect, it, inject } from "vitest";
import { defaultAdminToken } from "../../scripts/dev-server.js";

type Json = Record<string, any>;

/** The e2e project's shared dev server (test/e2e/support/shared-server.ts). */
let server: { base: string };
/** A session's token of each role, and the admin's. */
const tokens: Record<"admin" | "orchestrator" | "worker" | "observer" | "approver", string> = { admin: defaultAdminToken(), orchestrator: "", worker: "", observer: "", approver: "" };
const SESSION_ROLES = ["orchestrator", "worker", "observer", "approver"] as const;

async function rest(method: string, url: string, token: string, body?: unknown): Promise<Json> {
  const res = await fetch(`${server.base}${url}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(15_000),
  });
  const answer = (await res.json()) as Json;
  expect(res.ok, `${method} ${url}: ${JSON.stringify(answer).slice(0, 300)}`).toBe(true);
  return answer;
}

beforeAll(async () => {
  server = { base: inject("sharedDevServerBase") };
  const session = await rest("POST", "/v1/sessions", tokens.admin, {});
  const S = `/v1/sessions/${session.session_id}`;
  tokens.orchestrator = session.orchestrator.token;
  tokens.observer = session.observer.token;
  tokens.approver = (await rest("POST", `${S}/tokens`, tokens.orchestrator, { role: "approver" })).token;
  await rest("POST", `${S}/tasks`, tokens.orchestrator, { task_id: "schemas", wal_name: "schemas", title: "Schemas", steps: [{ step_id: "a", title: "A", summary: "A", depends_on_step_ids: [] }] });
  tokens.worker = (await rest("POST", `${S}/tasks/schemas/workers`, tokens.orchestrator, { agent_id: "schema-worker" })).token;
});

/** A strict 2020-12 validator with the standard formats: an unknown keyword or format, or a $ref to nothing, throws. */
function strictAjv(): Ajv2020 {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats(ajv);
  return ajv;
}

/** Compiles `schema`, failing with `where` and the validator's reason. */
function compile(ajv: Ajv2020, schema: unknown, where: string) {
  try {
    return ajv.compile(schema as object);
  } catch (e) {
    return expect.fail(`${where} does not compile: ${(e as Error).message}`);
  }
}

/** A create-task body whose step delegates to a child task with a step of its own: the recursive step schema. */
function createTaskBody(childStep: Json): Json {
  const child = { kind: "task", task: { title: "Child", steps: [childStep] } };
  return { task_id: "t1", wal_name: "t1", title: "Parent", steps: [{ step_id: "s1", title: "S1", summary: "", depends_on_step_ids: [], delegate: child }] };
}
const GOOD_CHILD_STEP = { step_id: "c1", title: "C1", summary: "", depends_on_step_ids: [] };
/** A child step without its step_id: valid only to a validator that did not follow the step schema's $ref. */
const BAD_CHILD_STEP = { title: "C1", summary: "", depends_on_step_ids: [] };

const pointer = (...segments: string[]) => segments.map((s) => `/${s.replace(/~/g, "~0").replace(/\//g, "~1")}`).join("");

describe("published schemas", () => {
  it("Should compile every request and response schema of the OpenAPI document, its refs resolved within the document", async () => {
    const doc = (await (await fetch(`${server.base}/openapi.json`, { signal: AbortSignal.timeout(15_000) })).json()) as Json;
    const ajv = strictAjv();
    // The document's own fields are not JSON Schema keywords; everything under them that a ref reaches is.
    ajv.addVocabulary(["openapi", "info", "servers", "paths", "components"]);
    const id = "https://schemas.test/openapi.json";
    ajv.addSchema(doc, id);
    const locations: string[] = Object.keys(doc.components.schemas).map((name) => pointer("components", "schemas", name));
    for (const [route, item] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(item)) {
        (op.parameters ?? []).forEach((_: unknown, i: number) => locations.push(pointer("paths", route, method, "parameters", String(i), "schema")));
        for (const type of Object.keys(op.requestBody?.content ?? {})) locations.push(pointer("paths", route, method, "requestBody", "content", type, "schema"));
        for (const [status, response] of Object.entries<Json>(op.responses ?? {})) {
          for (const type of Object.keys(response.content ?? {})) locations.push(pointer("paths", route, method, "responses", status, "content", type, "schema"));
        }
      }
    }
    expect(locations.length).toBeGreaterThan(100);
    for (const at of locations) compile(ajv, { $ref: `${id}#${at}` }, `OpenAPI ${at}`);
    const createTask = compile(ajv, { $ref: `${id}#${pointer("paths", "/v1/sessions/{sid}/tasks", "post", "requestBody", "content", "application/json", "schema")}` }, "createTask body");
    expect(createTask(createTaskBody(GOOD_CHILD_STEP)), JSON.stringify(createTask.errors)).toBe(true);
    expect(createTask(createTaskBody(BAD_CHILD_STEP))).toBe(false);
    expect(JSON.stringify(createTask.errors)).toContain("step_id");
  });

  it("Should compile each /v1/tools input schema of every role on its own", async () => {
    for (const role of ["admin", ...SESSION_ROLES] as const) {
      const { tools } = await rest("GET", "/v1/tools", tokens[role]);
      expect(tools.length, role).toBeGreaterThan(0);
      const ajv = strictAjv();
      for (const tool of tools as Json[]) compile(ajv, tool.input_schema, `/v1/tools ${role} ${tool.name}`);
      if (role === "orchestrator") {
        const create = (tools as Json[]).find((t) => t.name === "agent.task_create")!;
        const validate = compile(strictAjv(), create.input_schema, "agent.task_create");
        expect(validate({ sid: "s", body: createTaskBody(GOOD_CHILD_STEP) }), JSON.stringify(validate.errors)).toBe(true);
        expect(validate({ sid: "s", body: createTaskBody(BAD_CHILD_STEP) })).toBe(false);
      }
    }
  });

  it("Should compile each tool's input and output schema that the official MCP client receives from tools/list, for every role", async () => {
    for (const role of SESSION_ROLES) {
      const client = new Client({ name: "e2e-schemas", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
      const fetchBounded = (url: string | URL | Request, init?: RequestInit) => fetch(url, { ...init, signal: init?.signal ?? AbortSignal.timeout(15_000) });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${server.base}/mcp`), { fetch: fetchBounded, requestInit: { headers: { authorization: `Bearer ${tokens[role]}` } } }));
      try {
        const tools: Json[] = [];
        let cursor: string | undefined;
        do {
          const page = await client.listTools(cursor === undefined ? {} : { cursor });
          tools.push(...(page.tools as Json[]));
          cursor = page.nextCursor;
        } while (cursor !== undefined);
        expect(tools.length, role).toBeGreaterThan(0);
        const ajv = strictAjv();
        for (const tool of tools) {
          compile(ajv, tool.inputSchema, `MCP ${role} ${tool.name} inputSchema`);
          if (tool.outputSchema !== undefined) compile(ajv, tool.outputSchema, `MCP ${role} ${tool.name} outputSchema`);
        }
        if (role === "orchestrator") {
          const create = tools.find((t) => t.name === "agent.task_create")!;
          const validate = compile(strictAjv(), create.inputSchema, "agent.task_create");
          expect(validate(createTaskBody(GOOD_CHILD_STEP)), JSON.stringify(validate.errors)).toBe(true);
          expect(validate(createTaskBody(BAD_CHILD_STEP))).toBe(false);
        }
      } finally {
        await client.close();
      }
    }
  });
});
