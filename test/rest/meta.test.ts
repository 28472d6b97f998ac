import { describe, expect, it } from "vitest";
import { call, dispatch, newSession, newTask, step } from "../support/helpers.js";

describe("public and self-describing routes", () => {
  it("Should serve an OpenAPI document listing every v1 operation without a token", async () => {
    const res = await call("GET", "/openapi.json");
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe("3.1.0");
    expect(Object.keys(res.body.paths)).toContain("/v1/sessions/{sid}/tasks/{tid}/steps/claim-next");
    const create = res.body.paths["/v1/sessions/{sid}/tasks"].post;
    expect(create.requestBody.content["application/json"].schema.required).toEqual(expect.arrayContaining(["task_id", "wal_name", "title", "steps"]));
    expect(Object.keys(res.body.paths["/v1/sessions/{sid}/tasks/{tid}/events"].get.responses["200"].content)).toEqual(["text/event-stream"]);
    expect(Object.keys(res.body.paths["/v1/sessions/{sid}/tasks/{tid}/socket"].get.responses)).toContain("101");
    // The MCP endpoint is one JSON-RPC POST with the same bearer token.
    expect(res.body.paths["/mcp"].post.security).toEqual([{ bearer: [] }]);
    // A2A: the public card and the JSON-RPC endpoint.
    expect(res.body.paths["/.well-known/agent-card.json"].get.security).toEqual([]);
    expect(res.body.paths["/a2a"].post.security).toEqual([{ bearer: [] }]);
    // The error envelope names every code a client may meet, the bug and rate-limit codes included.
    expect(res.body.components.schemas.Error.properties.error.properties.code.enum).toEqual(expect.arrayContaining(["storage_error", "internal_error", "rate_limited", "validation_error"]));
  });

  it("Should describe pause, resume and the human-action routes with their bodies and queries", async () => {
    const { paths } = (await call("GET", "/openapi.json")).body;
    const T = "/v1/sessions/{sid}/tasks/{tid}";
    for (const [path, method] of [[`${T}/pause`, "post"], [`${T}/resume`, "post"], [`${T}/steps/{step}/actions`, "post"], [`${T}/actions`, "post"], [`${T}/actions`, "get"], [`${T}/actions/{action_id}`, "get"], [`${T}/actions/{action_id}/respond`, "post"], ["/v1/sessions/{sid}/actions", "get"]] as const) {
      expect(paths[path]?.[method], `${method} ${path}`).toBeDefined();
    }
    expect(paths[`${T}/actions`].post.requestBody.content["application/json"].schema.required).toEqual(expect.arrayContaining(["kind", "prompt"]));
    expect(paths[`${T}/actions/{action_id}/respond`].post.requestBody.content["application/json"].schema.properties.decision.enum).toEqual(["approved", "rejected", "submitted"]);
    const waitMs = paths[`${T}/actions/{action_id}`].get.parameters.find((p: { name: string }) => p.name === "wait_ms");
    expect(waitMs).toMatchObject({ in: "query", required: false });
    expect(paths[`${T}/actions/{action_id}/respond`].post.description).toContain("Roles: orchestrator, approver");
  });

  it("Should leave /docs to the static assets rather than serve a page that loads a renderer from another host", async () => {
    // The asset docs.html answers /docs before the Worker is asked (wrangler.toml [assets]); the test pool serves
    // no assets, so here the request reaches the Worker, which has no such route.
    const res = await call("GET", "/docs");
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("not_found");
  });

  it("Should answer the object round trip probe", async () => {
    const res = await call("GET", "/health/object");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
  });

  it("Should return the task template as a user block to any session token", async () => {
    const s = await newSession();
    const res = await call("GET", "/v1/task-template", s.observer);
    expect(res.status).toBe(200);
    expect(res.body.role).toBe("user");
    expect(res.body.content).toContain("depends_on_step_ids");
    // The guide teaches the lifecycle tools too: retries, human actions, pause and acceptance artifacts.
    for (const word of ["retry_policy", "approval", "pause", "required_artifacts"]) expect(res.body.content).toContain(word);
  });

  it("Should answer 401 for the template without a token", async () => {
    expect((await call("GET", "/v1/task-template")).status).toBe(401);
  });

  it("Should list only the tools of the caller's role", async () => {
    const s = await newSession();
    const t = await newTask(s, "tools", [step("a")]);
    const w = await dispatch(s, t);
    const orch = await call("GET", "/v1/tools", s.orch);
    const worker = await call("GET", "/v1/tools", w.token);
    const names = (r: typeof orch) => r.body.tools.map((tool: { name: string }) => tool.name);
    expect(names(orch)).toEqual(expect.arrayContaining(["agent.task_create", "agent.task_update", "agent.dispatch_worker", "agent.task_complete"]));
    expect(names(worker)).toEqual(expect.arrayContaining(["agent.task_claim_step", "agent.task_update_step", "agent.task_query_steps"]));
    expect(names(worker)).not.toContain("agent.task_create");
    expect(names(worker)).not.toContain("agent.task_update");
    // Streams are for programs, not tools an agent calls for one answer.
    for (const stream of ["task_events", "session_events", "command_socket"]) expect([...names(orch), ...names(worker)]).not.toContain(stream);
    // An agent calls a tool by its name: no two tools of one role share one.
    for (const list of [names(orch), names(worker)]) expect(new Set(list).size).toBe(list.length);
    expect(names(orch)).toEqual(expect.arrayContaining(["agent.request_action", "agent.request_task_action"]));
    const claim = worker.body.tools.find((tool: { name: string }) => tool.name === "agent.task_update_step");
    expect(claim.input_schema.properties.body.properties.status.enum).toEqual(expect.arrayContaining(["completed", "failed", "blocked"]));
  });
});

describe("GET .../summary", () => {
  it("Should keep the caller's own and blocked steps first when over budget", async () => {
    const s = await newSession();
    const many = Array.from({ length: 60 }, (_, i) => step(`s${String(i).padStart(2, "0")}`));
    const t = await newTask(s, "sum", [...many, step("stuck")]);
    await call("POST", `${t}/steps/stuck/status`, s.orch, { status: "blocked", reason: "needs input" });
    const w = await dispatch(s, t);
    const claimed = await call("POST", `${t}/steps/s59/claim`, w.token);
    expect(claimed.status).toBe(200);
    const res = await call("GET", `${t}/summary?token_budget=150`, w.token);
    expect(res.status).toBe(200);
    expect(res.body.truncated).toBe(true);
    expect(res.body.token_estimate).toBeLessThanOrEqual(150);
    expect(res.body.text).toContain("s59");
    expect(res.body.text).toContain("stuck");
    expect(res.body.omitted.ready).toBeGreaterThan(0);
  });

  it("Should reject a budget below the minimum with validation_error", async () => {
    const s = await newSession();
    const t = await newTask(s, "sum2", [step("a")]);
    const res = await call("GET", `${t}/summary?token_budget=5`, s.orch);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("validation_error");
  });
});
