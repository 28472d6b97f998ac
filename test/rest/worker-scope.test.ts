/**
 * A worker token reads only its own task: on REST, SSE, MCP and the tool list, the session-wide reads (snapshot,
 * task list, inbox, graph, peers, session stream) answer it 403 permission_denied with details.scope "task", so a
 * worker of task A never sees task B's title or the prompt of B's open action; its own task's reads still answer.
 */
import { SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { connectMcp, expectToolError } from "../support/mcp-clients.js";
import { BASE, expectOk, uniqueId } from "../support/support.js";

const PROMPT = "Wire 1M to account 42?";
const B_TITLE = "Pay the supplier";

let s: TestSession;
let pathA: string;
let pathB: string;
let workerA: string;

beforeAll(async () => {
  s = await newSession();
  pathA = await newTask(s, uniqueId("mine"), [step("a")]);
  pathB = await newTask(s, uniqueId("theirs"), [step("b")], { title: B_TITLE });
  expectOk(await call("POST", `${pathB}/actions`, s.orch, { kind: "approval", prompt: PROMPT }), 201);
  workerA = (await dispatch(s, pathA)).token;
});

/** The session-wide reads, by tool name and path. */
const sessionReads = (): [string, string][] => [
  ["session_actions", `/v1/sessions/${s.sid}/actions`],
  ["agent.task_list", `/v1/sessions/${s.sid}/tasks?include_terminal=true`],
  ["get_session", `/v1/sessions/${s.sid}`],
  ["task_graph", `/v1/sessions/${s.sid}/graph`],
  ["list_peers", `/v1/sessions/${s.sid}/peers`],
  ["session_events", `/v1/sessions/${s.sid}/events`],
];

describe("a worker of task A on the session's reads", () => {
  it("Should see B's title and B's approval prompt in the inbox and task list when it is the observer who reads", async () => {
    const inbox = expectOk(await call("GET", `/v1/sessions/${s.sid}/actions`, s.observer));
    expect(inbox.actions.map((a: { prompt: string; task_title: string }) => [a.prompt, a.task_title])).toEqual([[PROMPT, B_TITLE]]);
    expect(JSON.stringify(expectOk(await call("GET", `/v1/sessions/${s.sid}/tasks`, s.observer)))).toContain(B_TITLE);
  });

  it("Should answer the worker 403 permission_denied {role: worker, scope: task} on every session-wide read, without B's title or prompt", async () => {
    for (const [tool, path] of sessionReads()) {
      const res = await call("GET", path, workerA);
      expect(res.status, path).toBe(403);
      expect(res.body, path).toEqual({ error: { code: "permission_denied", message: expect.any(String), details: { role: "worker", scope: "task", tool } } });
      expect(JSON.stringify(res.body)).not.toContain(PROMPT);
      expect(JSON.stringify(res.body)).not.toContain(B_TITLE);
    }
  });

  it("Should refuse the session stream opened the way EventSource opens it, with ?access_token=", async () => {
    const res = await SELF.fetch(`${BASE}/v1/sessions/${s.sid}/events?access_token=${encodeURIComponent(workerA)}`, { headers: { accept: "text/event-stream" } });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("permission_denied");
  });

  it("Should still answer the worker's reads of its own task", async () => {
    for (const rest of ["", "/steps", "/actions", "/summary"]) expectOk(await call("GET", `${pathA}${rest}`, workerA));
  });

  it("Should list the worker no session-wide tool in GET /v1/tools", async () => {
    const tools = expectOk(await call("GET", "/v1/tools", workerA)).tools as { name: string; http: { path: string } }[];
    expect(tools.map((t) => t.name)).toContain("agent.task_get");
    const names = new Set(tools.map((t) => t.name));
    for (const [tool] of sessionReads()) expect(names.has(tool), tool).toBe(false);
    // Every tool it is shown names a task (or no session at all: the template and the tool list).
    for (const t of tools) expect(t.http.path.includes("{tid}") || !t.http.path.includes("{sid}"), t.http.path).toBe(true);
  });
});

describe("a worker of task A over MCP", () => {
  it("Should not list the session-wide tools, and answer a call of one as REST does: permission_denied", async () => {
    const client = await connectMcp(workerA);
    try {
      const names = new Set((await client.listTools()).tools.map((t) => t.name));
      expect(names.has("agent.task_get")).toBe(true);
      for (const tool of ["session_actions", "agent.task_list", "get_session", "task_graph", "list_peers"]) {
        expect(names.has(tool), tool).toBe(false);
        const result = await client.callTool({ name: tool, arguments: {} });
        expectToolError(result, "permission_denied", 403);
        expect(result.structuredContent.error.details).toEqual({ role: "worker", scope: "task", tool });
        expect(JSON.stringify(result)).not.toContain(PROMPT);
      }
      // Its own task's actions stay readable (task_id comes from its token).
      expect((await client.callTool({ name: "agent.task_actions", arguments: {} })).isError ?? false).toBe(false);
    } finally {
      await client.close();
    }
  });
});
