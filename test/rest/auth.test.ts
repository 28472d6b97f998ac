/**
 * The auth matrix (docs/api.md "Auth"): 401 for missing, malformed, forged or expired tokens; 403
 * permission_denied for a token out of session/task/step scope; 403 tool_not_available for a role calling
 * a tool it does not have.
 */
import { sign } from "hono/jwt";
import { beforeAll, describe, expect, it } from "vitest";
import { ADMIN, call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { expectError, expectOk, mintRole, signClaims, TOKEN_SECRET, uniqueId, walText } from "../support/support.js";

/** Session A with task t1 (a, b ready; c after a) and task t2; session B beside it. */
let A: TestSession;
let B: TestSession;
let t1: string;
let t2: string;
let w1: { token: string; run_id: string; agent_id: string };
let w2: { token: string; run_id: string; agent_id: string };
let bWorker: { token: string; run_id: string; agent_id: string };

beforeAll(async () => {
  [A, B] = await Promise.all([newSession(), newSession()]);
  t1 = await newTask(A, "t1", [step("a"), step("b"), step("c", ["a"]), step("g", [], { worker_pool_id: "gpu" })]);
  t2 = await newTask(A, "t2", [step("a")]);
  w1 = await dispatch(A, t1, { agent_id: "w1", allowed_step_ids: ["a", "c"] });
  w2 = await dispatch(A, t2, { agent_id: "w2" });
  const bt = await newTask(B, "t1", [step("a")]);
  bWorker = await dispatch(B, bt);
});

const now = () => Math.floor(Date.now() / 1000);

describe("401 unauthorized", () => {
  /** Credentials that must never authenticate, as the Authorization header they send (or none). */
  const BAD: [string, () => Promise<Record<string, string>>][] = [
    ["no token is sent", async () => ({})],
    ["the scheme is Basic", async () => ({ authorization: `Basic ${btoa("admin:x")}` })],
    ["Bearer has no token", async () => ({ authorization: "Bearer" })],
    ["Bearer has two words", async () => ({ authorization: `Bearer ${A.orch} extra` })],
    ["the token is not a JWT", async () => ({ authorization: "Bearer not-a-token" })],
    ["the admin token has a typo", async () => ({ authorization: "Bearer test-admin-token-x" })],
    [
      "the token is signed with another secret",
      async () => ({ authorization: `Bearer ${await signClaims({ role: "orchestrator", sid: A.sid, sub: "orchestrator", run: "orun_x", iat: now(), exp: now() + 3600 }, "another-secret")}` }),
    ],
    [
      "the token is expired",
      async () => ({ authorization: `Bearer ${await signClaims({ role: "orchestrator", sid: A.sid, sub: "orchestrator", run: "orun_x", iat: now() - 7200, exp: now() - 3600 })}` }),
    ],
    [
      "the token is signed with another algorithm",
      async () => ({ authorization: `Bearer ${await sign({ role: "orchestrator", sid: A.sid, sub: "orchestrator", run: "orun_x", iat: now(), exp: now() + 3600 }, TOKEN_SECRET, "HS512")}` }),
    ],
    ["the token carries no role", async () => ({ authorization: `Bearer ${await signClaims({ sid: A.sid, sub: "x", run: null, iat: now(), exp: now() + 3600 })}` })],
    [
      "the token claims the admin role",
      async () => ({ authorization: `Bearer ${await signClaims({ role: "admin", sid: A.sid, sub: "x", run: null, iat: now(), exp: now() + 3600 })}` }),
    ],
    ["a signed token is tampered with", async () => ({ authorization: `Bearer ${A.observer.slice(0, -2)}${A.observer.endsWith("AA") ? "BB" : "AA"}` })],
  ];

  it.each(BAD)("Should answer 401 unauthorized on every /v1 route when %s", async (_name, headers) => {
    const h = await headers();
    const routes: [string, string, unknown?][] = [
      ["POST", "/v1/sessions", {}],
      ["GET", `/v1/sessions/${A.sid}`],
      ["GET", `/v1/sessions/${A.sid}/tasks`],
      ["POST", `/v1/sessions/${A.sid}/tasks`, { task_id: uniqueId(), wal_name: uniqueId(), title: "x", steps: [] }],
      ["GET", t1],
      ["PATCH", t1, { ops: [{ op: "update_task", title: "x" }] }],
      ["POST", `${t1}/steps/a/claim`],
      ["GET", `${t1}/wal`],
      ["GET", "/v1/no-such-route"],
    ];
    for (const [method, path, body] of routes) {
      const res = await call(method, path, undefined, body, h);
      expectError(res, 401, "unauthorized");
      // RFC 6750 §3: the answer names the scheme it wants.
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer /);
    }
  });

  it("Should accept ?access_token= on a GET and reject it on a POST", async () => {
    expectOk(await call("GET", `${t1}?access_token=${A.observer}`));
    expectError(await call("GET", `${t1}?access_token=garbage`), 401, "unauthorized");
    expectError(await call("POST", `${t1}/block?access_token=${A.orch}`, undefined, {}), 401, "unauthorized");
  });

  it("Should serve /health without a token", async () => {
    expectOk(await call("GET", "/health"));
  });
});

describe("403 permission_denied: out of session or task scope", () => {
  it.each([
    ["GET", "/v1/sessions/A", undefined],
    ["GET", "/v1/sessions/A/tasks", undefined],
    ["POST", "/v1/sessions/A/tasks", { task_id: "x1", wal_name: "x1", title: "x", steps: [] }],
    ["POST", "/v1/sessions/A/tokens", { role: "observer" }],
    ["GET", "/v1/sessions/A/tasks/t1", undefined],
    ["PATCH", "/v1/sessions/A/tasks/t1", { ops: [{ op: "update_task", title: "x" }] }],
    ["GET", "/v1/sessions/A/tasks/t1/steps", undefined],
    ["GET", "/v1/sessions/A/tasks/t1/wal", undefined],
    ["POST", "/v1/sessions/A/tasks/t1/workers", {}],
    ["POST", "/v1/sessions/A/tasks/t1/complete", {}],
    ["POST", "/v1/sessions/A/tasks/t1/steps/a/status", { status: "completed" }],
  ])("Should answer 403 permission_denied when session B's tokens call %s %s of session A", async (method, path, body) => {
    const p = path.replace("/A", `/${A.sid}`);
    for (const token of [B.orch, B.observer, bWorker.token]) {
      expectError(await call(method, p, token, body), 403, "permission_denied");
    }
  });

  it.each([
    ["GET", "", undefined],
    ["GET", "/steps", undefined],
    ["GET", "/wal", undefined],
    ["POST", "/steps/a/claim", undefined],
    ["POST", "/steps/claim-next", undefined],
    ["POST", "/steps/a/status", { status: "running" }],
    ["POST", "/steps/a/progress", { summary: "x" }],
    ["POST", "/runs/RUN/finish", { outcome: "finished" }],
  ])("Should answer 403 permission_denied when a worker of t2 calls %s t1%s", async (method, rest, body) => {
    expectError(await call(method, `${t1}${rest.replace("RUN", w2.run_id)}`, w2.token, body), 403, "permission_denied");
  });

  it.each([
    ["GET", "/v1/sessions/A"],
    ["GET", "/v1/sessions/A/tasks"],
    ["GET", "/v1/sessions/A/tasks/t1"],
  ])("Should answer 403 permission_denied when the admin token calls %s %s inside a session", async (method, path) => {
    expectError(await call(method, path.replace("/A", `/${A.sid}`), ADMIN), 403, "permission_denied");
  });

  it("Should answer 403 permission_denied when a worker claims outside its allowed_step_ids or pool", async () => {
    const before = (await call("GET", t1, A.orch)).body.wal_seq;
    for (const id of ["b", "g"]) {
      const res = await call("POST", `${t1}/steps/${id}/claim`, w1.token);
      expectError(res, 403, "permission_denied");
      expect(res.body.error.details.step_id).toBe(id);
    }
    const page = expectOk(await call("GET", `${t1}/steps`, w1.token));
    expect(page.steps.map((s: any) => s.step_id)).toEqual(["a"]);
    expect((await call("GET", t1, A.orch)).body.wal_seq).toBe(before);
  });

  it("Should answer 403 permission_denied when a worker touches a step another run holds", async () => {
    const s = await newSession();
    const t = await newTask(s, "t1", [step("a"), step("b")]);
    const holder = await dispatch(s, t);
    const other = await dispatch(s, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, holder.token));
    for (const status of ["running", "completed", "failed", "blocked", "cancelled"]) {
      expectError(await call("POST", `${t}/steps/a/status`, other.token, { status }), 403, "permission_denied");
    }
    expectError(await call("POST", `${t}/steps/a/progress`, other.token, { summary: "mine" }), 403, "permission_denied");
    expectError(await call("POST", `${t}/runs/${holder.run_id}/finish`, other.token, { outcome: "cancelled" }), 403, "permission_denied");
    // A step nobody holds is not the worker's either.
    expectError(await call("POST", `${t}/steps/b/status`, other.token, { status: "completed" }), 403, "permission_denied");
    const view = expectOk(await call("GET", t, s.orch));
    expect(view.steps[0]).toMatchObject({ step_id: "a", status: "claimed", claimed_by_run_id: holder.run_id });
    expect(view.runs.every((r: any) => r.status === "active")).toBe(true);
  });

  it("Should answer 401 unauthorized (run_ended), not 403, when a worker whose run has ended claims again", async () => {
    const s = await newSession();
    const t = await newTask(s, "t1", [step("a"), step("b")]);
    const w = await dispatch(s, t, { max_steps: 3 });
    expectOk(await call("POST", `${t}/runs/${w.run_id}/finish`, w.token, { outcome: "finished" }));
    expectError(await call("POST", `${t}/steps/a/claim`, w.token), 401, "unauthorized");
    expectError(await call("POST", `${t}/steps/claim-next`, w.token), 401, "unauthorized");
  });

  it("Should answer 403 permission_denied when a worker token names a run the task never dispatched", async () => {
    const forged = await signClaims({ role: "worker", sid: A.sid, tid: "t1", sub: "w9", run: "run_nope", iat: now(), exp: now() + 3600 });
    expectError(await call("POST", `${t1}/steps/a/claim`, forged), 403, "permission_denied");
    expectError(await call("GET", `${t1}/steps`, forged), 403, "permission_denied");
  });
});

describe("403 tool_not_available: the role lacks the tool", () => {
  const ORCHESTRATOR_ONLY: [string, string, unknown][] = [
    ["POST", "/v1/sessions/SID/tasks", { task_id: "x2", wal_name: "x2", title: "x", steps: [] }],
    ["PATCH", "TASK", { ops: [{ op: "update_task", title: "x" }] }],
    ["POST", "TASK/complete", {}],
    ["POST", "TASK/fail", {}],
    ["POST", "TASK/cancel", {}],
    ["POST", "TASK/block", {}],
    ["POST", "TASK/reopen", {}],
    ["POST", "TASK/workers", {}],
    ["POST", "TASK/runs/RUN/cancel", {}],
    ["POST", "/v1/sessions/SID/tokens", { role: "observer" }],
  ];
  const resolve = (path: string) => path.replace("SID", A.sid).replace("TASK", t1).replace("RUN", w1.run_id);

  it.each(ORCHESTRATOR_ONLY)("Should answer 403 tool_not_available when a worker calls %s %s", async (method, path, body) => {
    const before = (await call("GET", t1, A.orch)).body.wal_seq;
    expectError(await call(method, resolve(path), w1.token, body), 403, "tool_not_available");
    expect((await call("GET", t1, A.orch)).body.wal_seq).toBe(before);
  });

  it.each([
    ...ORCHESTRATOR_ONLY,
    ["POST", "TASK/runs/RUN/finish", { outcome: "finished" }],
    ["POST", "TASK/steps/a/claim", undefined],
    ["POST", "TASK/steps/claim-next", undefined],
    ["POST", "TASK/steps/b/status", { status: "completed" }],
    ["POST", "TASK/steps/b/progress", { summary: "x" }],
  ] as [string, string, unknown][])("Should answer 403 tool_not_available when the observer calls %s %s", async (method, path, body) => {
    const before = (await call("GET", t1, A.orch)).body.wal_seq;
    expectError(await call(method, resolve(path), A.observer, body), 403, "tool_not_available");
    expect((await call("GET", t1, A.orch)).body.wal_seq).toBe(before);
  });

  it.each([
    ["claim", "POST", "TASK/steps/b/claim"],
    ["claim-next", "POST", "TASK/steps/claim-next"],
  ])("Should answer 403 tool_not_available when the orchestrator calls %s (worker tool)", async (_name, method, path) => {
    expectError(await call(method, resolve(path), A.orch), 403, "tool_not_available");
  });
});

describe("an a2a_client token outside /a2a", () => {
  let client: string;
  beforeAll(async () => {
    client = await mintRole(A, "a2a_client", "partner-agent");
  });

  it.each([
    ["GET", "/v1/sessions/SID"],
    ["GET", "/v1/sessions/SID/tasks"],
    ["GET", "TASK"],
    ["GET", "TASK/wal"],
    ["POST", "/v1/sessions/SID/tasks", { task_id: "x3", wal_name: "x3", title: "x", steps: [] }],
    ["POST", "TASK/cancel", {}],
    ["GET", "/v1/tools"],
  ] as [string, string, unknown?][])("Should answer 403 tool_not_available on %s %s, writing nothing", async (method, path, body) => {
    const before = (await call("GET", t1, A.orch)).body.wal_seq;
    expectError(await call(method, path.replace("SID", A.sid).replace("TASK", t1), client, body), 403, "tool_not_available");
    expect((await call("GET", t1, A.orch)).body.wal_seq).toBe(before);
  });

  it("Should give each a2a_client minted without an agent id an id of its own", async () => {
    const mint = async () => expectOk(await call("POST", `/v1/sessions/${A.sid}/tokens`, A.orch, { role: "a2a_client" }), 201);
    const [one, two] = [await mint(), await mint()];
    expect(one.agent_id).toMatch(/^a2a_/);
    expect(two.agent_id).not.toBe(one.agent_id);
    expect(one.run_id).toBeNull();
  });

  it("Should refuse it on /mcp and as a batch command's token", async () => {
    const mcp = await call("POST", "/mcp", client, { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }, { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" });
    expectError(mcp, 403, "tool_not_available");
    const batch = expectOk(await call("POST", `${t1}/batch`, A.orch, { commands: [{ token: client, method: "POST", path: `${t1}/cancel`, body: {} }] }));
    expect(batch.results[0]).toMatchObject({ ok: false, status: 403, body: { error: { code: "tool_not_available" } } });
    expect((await call("GET", t1, A.orch)).body.task.status).not.toBe("cancelled");
  });
});

describe("reads in scope", () => {
  it.each([
    ["the session snapshot", "/v1/sessions/SID"],
    ["the task list", "/v1/sessions/SID/tasks?include_terminal=true"],
    ["the task", "TASK"],
    ["the steps", "TASK/steps"],
    ["the WAL", "TASK/wal"],
  ])("Should let the observer and the orchestrator read %s", async (_name, path) => {
    const p = path.replace("SID", A.sid).replace("TASK", t1);
    for (const token of [A.observer, A.orch]) {
      if (p.endsWith("/wal")) expect((await walText(t1, token)).status).toBe(200);
      else expectOk(await call("GET", p, token));
    }
  });

  it.each([
    ["the task", ""],
    ["its steps", "/steps"],
    ["the WAL", "/wal"],
  ])("Should let a worker read %s of its own task", async (_name, rest) => {
    if (rest === "/wal") expect((await walText(t1, w1.token)).status).toBe(200);
    else expectOk(await call("GET", `${t1}${rest}`, w1.token));
  });
});

describe("session creation and token minting", () => {
  it("Should let the admin create sessions and nobody else", async () => {
    expectOk(await call("POST", "/v1/sessions", ADMIN, {}), 201);
    for (const token of [A.orch, A.observer, w1.token]) expectError(await call("POST", "/v1/sessions", token, {}), 403, "permission_denied");
  });

  it.each([
    ["the admin", () => ADMIN, "orchestrator"],
    ["the admin", () => ADMIN, "observer"],
    ["the orchestrator", () => A.orch, "orchestrator"],
    ["the orchestrator", () => A.orch, "observer"],
  ])("Should let %s mint an %s token that works in the session", async (_who, token, role) => {
    const minted = expectOk(await call("POST", `/v1/sessions/${A.sid}/tokens`, token(), { role }), 201);
    expect(minted.role).toBe(role);
    expectOk(await call("GET", `/v1/sessions/${A.sid}/tasks`, minted.token));
    const create = await call("POST", `/v1/sessions/${A.sid}/tasks`, minted.token, { task_id: uniqueId(), wal_name: uniqueId(), title: "x", steps: [] });
    if (role === "orchestrator") expectOk(create, 201);
    else expectError(create, 403, "tool_not_available");
  });

  it.each([
    ["a worker", () => w1.token, 403, "tool_not_available"],
    ["the observer", () => A.observer, 403, "tool_not_available"],
    ["another session's orchestrator", () => B.orch, 403, "permission_denied"],
  ])("Should refuse to let %s mint tokens", async (_who, token, status, code) => {
    expectError(await call("POST", `/v1/sessions/${A.sid}/tokens`, token(), { role: "orchestrator" }), status, code);
  });
});
