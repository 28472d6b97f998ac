/**
 * Every route of the API (docs/api.md "Routes") that routes/ serves: the success answer's shape (writes carry the task summary,
 * event_ids and wal_seq), malformed input, paths and pages, with each error's status and envelope. The task
 * model's rules behind the task routes (DAG checks, transitions, claims, run ends, step queries) run once for the core
 * and once over these routes in the conformance suite (test/conformance, run by core.test.ts and http.test.ts).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { ADMIN, call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { eventually, expectError, expectOk, expectWriteAnswer, sleep, uniqueId, walOf, walText } from "../support/support.js";

const uid = () => crypto.randomUUID().slice(0, 8);

/** One session for the whole file (creating a session object costs ~100 ms); tasks get unique ids. */
let S: TestSession;
beforeAll(async () => {
  S = await newSession();
});

/** A new task in the shared session. */
async function task(steps: ReturnType<typeof step>[], extra: Record<string, unknown> = {}) {
  const id = uniqueId();
  return { s: S, t: await newTask(S, id, steps, extra), id };
}

/** A task with roots a and d, b and c after a, e after b and c. */
const DIAMOND = () => [step("a"), step("b", ["a"]), step("c", ["a"]), step("d"), step("e", ["b", "c"])];

async function getTask(path: string, token: string) {
  return expectOk(await call("GET", path, token));
}

function stepOf(view: any, id: string) {
  return view.steps.find((s: any) => s.step_id === id);
}

describe("POST /v1/sessions", () => {
  it("Should create a session with orchestrator and observer tokens when the admin calls", async () => {
    const body = expectOk(await call("POST", "/v1/sessions", ADMIN, {}), 201);
    expect(body).toEqual({
      session_id: expect.stringMatching(/^sess_[a-z0-9]+$/),
      created_at: expect.any(String),
      orchestrator: { agent_id: "orchestrator", run_id: expect.stringMatching(/^orun_/), token: expect.any(String), token_id: expect.stringMatching(/^tok_[a-z0-9]{26}$/), expires_at: expect.any(String) },
      observer: { token: expect.any(String), token_id: expect.stringMatching(/^tok_[a-z0-9]{26}$/), expires_at: expect.any(String) },
    });
    expect(Date.parse(body.orchestrator.expires_at)).toBeGreaterThan(Date.now());
  });

  it("Should use the given session_id and orchestrator_agent_id when the body names them", async () => {
    const sid = `sess-${uid()}`;
    const body = expectOk(await call("POST", "/v1/sessions", ADMIN, { session_id: sid, orchestrator_agent_id: "planner", metadata: { team: "x" } }), 201);
    expect(body.session_id).toBe(sid);
    expect(body.orchestrator.agent_id).toBe("planner");
    const snap = expectOk(await call("GET", `/v1/sessions/${sid}`, body.orchestrator.token));
    expect(snap.session_id).toBe(sid);
  });

  it.each([
    ["the session_id has bad characters", { session_id: "Bad.Session" }],
    ["the session_id is too long", { session_id: "s".repeat(65) }],
    ["the body has an unknown field", { bogus: true }],
    ["the body is malformed JSON", "{not json"],
    ["the body is not an object", "[1,2]"],
  ])("Should answer 400 validation_error when %s", async (_name, body) => {
    expectError(await call("POST", "/v1/sessions", ADMIN, body), 400, "validation_error");
  });

  it("Should answer 400 validation_error when the session_id already exists", async () => {
    const sid = `sess-${uid()}`;
    expectOk(await call("POST", "/v1/sessions", ADMIN, { session_id: sid }), 201);
    expectError(await call("POST", "/v1/sessions", ADMIN, { session_id: sid }), 400, "validation_error");
  });
});

describe("POST /v1/sessions/{sid}/tokens", () => {
  it.each([
    ["orchestrator", /^orun_/],
    ["observer", null],
  ] as const)("Should mint a working %s token when the admin asks", async (role, runPattern) => {
    const s = await newSession();
    const body = expectOk(await call("POST", `/v1/sessions/${s.sid}/tokens`, ADMIN, { role, agent_id: `${role}-2`, ttl_seconds: 3600 }), 201);
    expect(body).toEqual({ role, agent_id: `${role}-2`, run_id: runPattern === null ? null : expect.stringMatching(runPattern), token: expect.any(String), token_id: expect.stringMatching(/^tok_/), expires_at: expect.any(String) });
    const expires = Date.parse(body.expires_at) - Date.now();
    expect(expires).toBeGreaterThan(3500_000);
    expect(expires).toBeLessThanOrEqual(3601_000);
    expectOk(await call("GET", `/v1/sessions/${s.sid}`, body.token));
  });

  it.each([
    ["the role is worker", { role: "worker" }],
    ["the role is missing", {}],
    ["ttl_seconds is below a minute", { role: "observer", ttl_seconds: 10 }],
    ["the body has an unknown field", { role: "observer", scope: "all" }],
    ["the body is malformed JSON", "{"],
  ])("Should answer 400 validation_error when %s", async (_name, body) => {
    expectError(await call("POST", `/v1/sessions/${S.sid}/tokens`, S.orch, body), 400, "validation_error");
  });

  it("Should answer 404 not_found when the admin mints for an unknown session", async () => {
    expectError(await call("POST", `/v1/sessions/sess-nope-${uid()}/tokens`, ADMIN, { role: "observer" }), 404, "not_found");
  });
});

describe("GET /v1/sessions/{sid} and GET /v1/sessions/{sid}/tasks", () => {
  /** Five tasks: running, blocked, failed, completed, waiting (no steps), created in that order. */
  async function sessionWithTasks(): Promise<TestSession> {
    const s = await newSession();
    await newTask(s, "t-run", [step("a")]);
    const blocked = await newTask(s, "t-blocked", [step("a")]);
    expectOk(await call("POST", `${blocked}/block`, s.orch, { reason: "waiting on a human" }));
    const failed = await newTask(s, "t-failed", [step("a")]);
    expectOk(await call("POST", `${failed}/fail`, s.orch, {}));
    const done = await newTask(s, "t-done", [step("a")]);
    expectOk(await call("POST", `${done}/steps/a/status`, s.orch, { status: "completed" }));
    expectOk(await call("POST", `${done}/complete`, s.orch, {}));
    await newTask(s, "t-wait", []);
    return s;
  }
  let L: TestSession;
  beforeAll(async () => {
    L = await sessionWithTasks();
  }, 30_000);

  it("Should summarise active, terminal, failed, waiting and blocked tasks when the snapshot is read", async () => {
    const s = L;
    await eventually(async () => {
      const snap = expectOk(await call("GET", `/v1/sessions/${s.sid}`, s.observer));
      expect(snap).toMatchObject({
        session_id: s.sid,
        created_at: expect.any(String),
        task_summary: { active: 3, terminal: 2, failed: 1, lost: 0, waiting: 1, blocked: 1, stale: 0 },
      });
      expect(snap.task_summary.recent_terminal.map((t: any) => t.task_id)).toEqual(["t-done", "t-failed"]);
    });
  });

  it("Should list only active tasks in creation order when include_terminal is not set", async () => {
    const s = L;
    await eventually(async () => {
      const page = expectOk(await call("GET", `/v1/sessions/${s.sid}/tasks`, s.orch));
      expect(page.tasks.map((t: any) => t.task_id)).toEqual(["t-run", "t-blocked", "t-wait"]);
      expect(page).toMatchObject({ total: 3, limit: 50, offset: 0, next_offset: null });
      expect(page.tasks[0]).toMatchObject({
        task_id: "t-run",
        wal_name: "t-run",
        title: "Task t-run",
        native_status: "running",
        status: "running",
        total_steps: 1,
        terminal: false,
        index_state: "current",
        wal_seq: expect.any(Number),
      });
      expect(page.tasks[2]).toMatchObject({ native_status: "pending", status: "queued" });
    });
  });

  it.each([
    ["include_terminal=true", "?include_terminal=true", ["t-run", "t-blocked", "t-wait", "t-done", "t-failed"], null],
    ["status=blocked", "?status=blocked", ["t-blocked"], null],
    ["a normalized status (queued)", "?status=queued", ["t-wait"], null],
    ["status=failed without include_terminal", "?status=failed", [], null],
    ["status=failed with include_terminal", "?status=failed&include_terminal=true", ["t-failed"], null],
    ["limit=2", "?limit=2", ["t-run", "t-blocked"], 2],
    ["offset=2", "?limit=2&offset=2", ["t-wait"], null],
    ["limit=2 over terminal tasks", "?include_terminal=true&limit=2&offset=2", ["t-wait", "t-done"], 4],
  ])("Should page the task list when the query has %s", async (_name, query, ids, nextOffset) => {
    const s = L;
    await eventually(async () => {
      const page = expectOk(await call("GET", `/v1/sessions/${s.sid}/tasks${query}`, s.orch));
      expect(page.tasks.map((t: any) => t.task_id)).toEqual(ids);
      expect(page.next_offset).toBe(nextOffset);
    });
  });

  it.each([
    ["include_terminal is not a boolean", "?include_terminal=yes"],
    ["limit is zero", "?limit=0"],
    ["limit is over 500", "?limit=501"],
    ["offset is negative", "?offset=-1"],
    ["limit is not a number", "?limit=ten"],
    ["the query has an unknown parameter", "?sort=asc"],
  ])("Should answer 400 validation_error when %s", async (_name, query) => {
    expectError(await call("GET", `/v1/sessions/${S.sid}/tasks${query}`, S.orch), 400, "validation_error");
  });
});

describe("POST /v1/sessions/{sid}/tasks (agent.task_create)", () => {
  it("Should create the DAG and answer with the task summary, event_ids and wal_seq when the body is valid", async () => {
    const s = S;
    const id = uniqueId();
    const res = await call("POST", `/v1/sessions/${s.sid}/tasks`, s.orch, {
      task_id: id,
      wal_name: `${id}-wal`,
      title: "Research",
      summary: "fan out",
      steps: DIAMOND(),
      objective: "learn",
      priority: 2,
      metadata: { k: "v" },
    });
    const body = expectOk(res, 201);
    expectWriteAnswer(body, id);
    // task_created, two roots ready, task_running.
    expect(body.event_ids).toHaveLength(4);
    expect(new Set(body.event_ids).size).toBe(4);
    expect(body.wal_seq).toBe(4);
    expect(body.task).toMatchObject({ status: "running", total_steps: 5, step_counts: { ready: 2, pending: 3 }, diagnostics: { completeable: false, stalled: false } });
    const view = await getTask(`/v1/sessions/${s.sid}/tasks/${id}`, s.orch);
    expect(view.task).toMatchObject({ task_id: id, wal_name: `${id}-wal`, objective: "learn", priority: 2, metadata: { k: "v" }, root_step_ids: ["a", "d"], step_lease_timeout_ms: 60_000 });
  });

  it("Should create a pending task with no ready step when the DAG is empty", async () => {
    const s = S;
    const id = uniqueId();
    const body = expectOk(await call("POST", `/v1/sessions/${s.sid}/tasks`, s.orch, { task_id: id, wal_name: id, title: "Empty", steps: [] }), 201);
    expect(body.task.status).toBe("pending");
    expect(body.event_ids).toHaveLength(1);
  });

  const base = () => {
    const id = uniqueId();
    return { task_id: id, wal_name: id, title: "T", summary: "", steps: [step("a"), step("b", ["a"])] };
  };
  it.each([
    ["the task_id has bad characters", { task_id: "Bad.Id" }, 400, "validation_error"],
    ["the task_id is longer than 64", { task_id: "t".repeat(65) }, 400, "validation_error"],
    ["the task_id is empty", { task_id: "" }, 400, "validation_error"],
    ["the wal_name contains a slash", { wal_name: "a/b" }, 400, "validation_error"],
    ["the wal_name is ..", { wal_name: ".." }, 400, "validation_error"],
    ["the wal_name is hidden", { wal_name: ".wal" }, 400, "validation_error"],
    ["the title is missing", { title: undefined }, 400, "validation_error"],
    ["the title is over 200 characters", { title: "x".repeat(201) }, 400, "validation_error"],
    ["the summary is over 8000 characters", { summary: "x".repeat(8001) }, 400, "validation_error"],
    ["the body has an unknown field", { colour: "red" }, 400, "validation_error"],
    ["a step has an unknown field", { steps: [{ ...step("a"), owner: "me" }] }, 400, "validation_error"],
    ["a step id has bad characters", { steps: [step("A!")] }, 400, "validation_error"],
    ["step_lease_timeout_ms is under a second", { step_lease_timeout_ms: 10 }, 400, "validation_error"],
  ])("Should answer %s with the matching error", async (_name, patch, status, code) => {
    const s = S;
    expectError(await call("POST", `/v1/sessions/${s.sid}/tasks`, s.orch, { ...base(), ...patch }), status, code);
  });

  it.each([
    ["malformed JSON", '{"task_id": "t1",'],
    ["a JSON array", "[]"],
    ["a JSON string", '"task"'],
  ])("Should answer 400 validation_error when the body is %s", async (_name, text) => {
    const s = S;
    expectError(await call("POST", `/v1/sessions/${s.sid}/tasks`, s.orch, text), 400, "validation_error");
  });

  it("Should answer 413 payload_too_large when the body is over 1 MiB", async () => {
    const s = S;
    const res = await call("POST", `/v1/sessions/${s.sid}/tasks`, s.orch, { ...base(), summary: "x".repeat(1_100_000) });
    expectError(res, 413, "payload_too_large");
  });

  it("Should answer 409 task_id_conflict when the task_id is already used", async () => {
    const { s, id } = await task([step("a")]);
    expectError(await call("POST", `/v1/sessions/${s.sid}/tasks`, s.orch, { ...base(), task_id: id }), 409, "task_id_conflict");
  });

  it("Should answer 409 path_conflict when the wal_name is already used by another task", async () => {
    const { s, id } = await task([step("a")]);
    expectError(await call("POST", `/v1/sessions/${s.sid}/tasks`, s.orch, { ...base(), wal_name: id }), 409, "path_conflict");
  });

  it("Should record the token's identity when the body carries actor fields", async () => {
    const admin = expectOk(await call("POST", "/v1/sessions", ADMIN, { orchestrator_agent_id: "boss" }), 201);
    const s = { sid: admin.session_id, orch: admin.orchestrator.token, observer: admin.observer.token };
    const body = base();
    const res = await call("POST", `/v1/sessions/${s.sid}/tasks`, s.orch, {
      ...body,
      actor_agent_id: "mallory",
      actor_run_id: "run_evil",
      actor_role: "orchestrator",
      actor: { agent_id: "mallory" },
    });
    expectOk(res, 201);
    const path = `/v1/sessions/${s.sid}/tasks/${body.task_id}`;
    const w = await dispatch(s, path, { agent_id: "w1" });
    expectOk(await call("POST", `${path}/steps/a/claim`, w.token, { actor_agent_id: "mallory", actor_run_id: admin.orchestrator.run_id }));
    expectOk(await call("POST", `${path}/steps/a/status`, w.token, { status: "completed", actor_agent_id: "boss", actor_run_id: "x" }));
    const wal = await walOf(path, s.orch);
    const created = wal.find((e) => e.event_type === "task_created")!;
    expect(created).toMatchObject({ actor_agent_id: "boss", actor_run_id: admin.orchestrator.run_id });
    for (const type of ["task_step_claimed", "task_step_completed"]) {
      expect(wal.find((e) => e.event_type === type)).toMatchObject({ actor_agent_id: "w1", actor_run_id: w.run_id });
    }
    expect(wal.some((e) => e.actor_agent_id === "mallory")).toBe(false);
    const view = await getTask(path, s.orch);
    expect(view.task.created_by_agent_id).toBe("boss");
  });
});

describe("GET .../tasks/{tid} (agent.task_get)", () => {
  it("Should answer the DAG with attempts, runs, progress and diagnostics when the task exists", async () => {
    const { s, t, id } = await task(DIAMOND());
    const view = await getTask(t, s.orch);
    expect(Object.keys(view).sort()).toEqual(["actions", "attempts", "delegations", "diagnostics", "progress", "runs", "snapshot", "steps", "task", "wal_seq"]);
    expect(Object.keys(view.snapshot).sort()).toEqual(["attempts", "blockedTasks", "deliveryState", "openActions", "task", "taskGraph"]);
    expect(view.steps.map((x: any) => [x.step_id, x.status])).toEqual([
      ["a", "ready"],
      ["b", "pending"],
      ["c", "pending"],
      ["d", "ready"],
      ["e", "pending"],
    ]);
    expect(stepOf(view, "a")).toMatchObject({ required: true, worker_pool_id: "default", claimed_by_run_id: null, attempt_ids: [], artifact_ids: [] });
    expect(view).toMatchObject({ attempts: [], runs: [], progress: [], diagnostics: { completeable: false, stalled: false }, wal_seq: 4 });
  });

  it("Should answer 404 not_found when the task does not exist", async () => {
    const s = S;
    expectError(await call("GET", `/v1/sessions/${s.sid}/tasks/nope`, s.orch), 404, "not_found");
  });

  it.each([
    ["has bad characters", "Bad.Id"],
    ["is longer than 64", "t".repeat(65)],
  ])("Should answer 400 validation_error when the task id in the path %s", async (_name, tid) => {
    const s = S;
    expectError(await call("GET", `/v1/sessions/${s.sid}/tasks/${tid}`, s.orch), 400, "validation_error");
  });
});

describe("PATCH .../tasks/{tid} (agent.task_update)", () => {
  it("Should answer the write shape with wal_seq advanced by its event_ids, the WAL's task_updated first, when the ops are valid", async () => {
    const { s, t, id } = await task(DIAMOND());
    const before = (await getTask(t, s.orch)).wal_seq;
    const ops = [
      { op: "add_step", step: step("f") },
      { op: "add_step", step: step("g", ["f"]) },
      { op: "add_dependency", step_id: "e", depends_on_step_id: "g" },
      { op: "cancel_step", step_id: "d" },
    ];
    const body = expectOk(await call("PATCH", t, s.orch, { ops }));
    expectWriteAnswer(body, id);
    expect(body.event_ids.length).toBeGreaterThanOrEqual(1);
    expect(body.wal_seq).toBe(before + body.event_ids.length);
    const wal = await walOf(t, s.orch, `?after_seq=${before}`);
    expect(wal[0]!.event_type).toBe("task_updated");
    expect(wal.map((e) => e.event_id)).toEqual(body.event_ids);
  });

  it.each([
    ["ops is empty", { ops: [] }, 400, "validation_error"],
    ["ops is missing", {}, 400, "validation_error"],
    ["an op is unknown", { ops: [{ op: "rename_step", step_id: "a" }] }, 400, "validation_error"],
    ["an op has an unknown field", { ops: [{ op: "cancel_step", step_id: "a", force: true }] }, 400, "validation_error"],
    ["the body has an unknown field", { ops: [{ op: "update_task", title: "x" }], dry_run: true }, 400, "validation_error"],
  ])("Should answer %s with the matching error and write nothing", async (_name, body, status, code) => {
    const { s, t, id } = await task(DIAMOND());
    const before = await getTask(t, s.orch);
    expectError(await call("PATCH", t, s.orch, body), status, code);
    expect(await getTask(t, s.orch)).toEqual(before);
  });

  it("Should answer 400 validation_error when the body is malformed JSON", async () => {
    const { s, t, id } = await task(DIAMOND());
    expectError(await call("PATCH", t, s.orch, "{ops:"), 400, "validation_error");
  });

  it("Should answer 404 not_found when the task does not exist", async () => {
    const s = S;
    expectError(await call("PATCH", `/v1/sessions/${s.sid}/tasks/nope`, s.orch, { ops: [{ op: "update_task", title: "x" }] }), 404, "not_found");
  });
});

describe("POST .../complete /fail /cancel /block /reopen", () => {
  it.each(["fail", "cancel"])("Should answer the task summary with the run counted as cancelling when the orchestrator asks to %s", async (path) => {
    const { s, t, id } = await task([step("a"), step("b", ["a"]), step("c")]);
    const w = await dispatch(s, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    const body = expectOk(await call("POST", `${t}/${path}`, s.orch, { reason: "stop" }));
    expectWriteAnswer(body, id);
    expect(body.task).toMatchObject({ status: path === "fail" ? "failed" : "cancelled", active_runs: 0, cancelling_runs: 1 });
  });

  it.each(["complete", "fail", "cancel", "block", "reopen"])("Should answer 400 validation_error when /%s gets an unknown field", async (path) => {
    const { s, t, id } = await task([step("a")]);
    expectError(await call("POST", `${t}/${path}`, s.orch, { reason: "x", force: true }), 400, "validation_error");
    expectError(await call("POST", `${t}/${path}`, s.orch, { reason: 42 }), 400, "validation_error");
  });

  it.each(["complete", "fail", "cancel", "block", "reopen"])("Should answer 404 not_found when /%s names an unknown task", async (path) => {
    const s = S;
    expectError(await call("POST", `/v1/sessions/${s.sid}/tasks/nope/${path}`, s.orch, {}), 404, "not_found");
  });
});

describe("POST .../workers (agent.dispatch_worker)", () => {
  it("Should start a run and answer its token, run record and the write shape when the task is live", async () => {
    const { s, t, id } = await task(DIAMOND());
    const body = expectOk(await call("POST", `${t}/workers`, s.orch, { agent_id: "w1", worker_pool_id: "default", allowed_step_ids: ["a", "b", "a"], timeout_ms: 60_000, max_steps: 2 }), 201);
    expectWriteAnswer(body, id);
    expect(body).toMatchObject({ run_id: expect.stringMatching(/^run_/), agent_id: "w1", token: expect.any(String), expires_at: expect.any(String) });
    expect(body.run).toMatchObject({ run_id: body.run_id, agent_id: "w1", status: "active", worker_pool_id: "default", allowed_step_ids: ["a", "b"], max_steps: 2, claims_used: 0, deadline_at: expect.any(String) });
    expect(body.event_ids).toHaveLength(1);
    expect(body.task.active_runs).toBe(1);
  });

  it("Should default to one step in the default pool with a generated agent id when the body is empty", async () => {
    const { s, t, id } = await task(DIAMOND());
    const body = expectOk(await call("POST", `${t}/workers`, s.orch, {}), 201);
    expect(body.run).toMatchObject({ worker_pool_id: "default", allowed_step_ids: null, max_steps: 1, deadline_at: null });
    expect(body.agent_id).toMatch(/^worker_/);
  });

  it.each([
    ["allowed_step_ids is empty", { allowed_step_ids: [] }],
    ["allowed_step_ids has a bad id", { allowed_step_ids: ["A"] }],
    ["timeout_ms is under a second", { timeout_ms: 5 }],
    ["max_steps is zero", { max_steps: 0 }],
    ["the body has an unknown field", { model: "big" }],
    ["the body is malformed JSON", "{"],
  ])("Should answer 400 validation_error when %s", async (_name, body) => {
    const { s, t, id } = await task(DIAMOND());
    expectError(await call("POST", `${t}/workers`, s.orch, body), 400, "validation_error");
  });

  it("Should answer 404 not_found when the task does not exist", async () => {
    const s = S;
    expectError(await call("POST", `/v1/sessions/${s.sid}/tasks/nope/workers`, s.orch, {}), 404, "not_found");
  });
});

describe("POST .../runs/{run}/finish and /cancel", () => {
  it("Should answer the write shape with the held step's failure and the run's end when a run finishes holding a step", async () => {
    const { s, t, id } = await task(DIAMOND());
    const w = await dispatch(s, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    const body = expectOk(await call("POST", `${t}/runs/${w.run_id}/finish`, w.token, { outcome: "finished", result: { note: "bye" } }));
    expectWriteAnswer(body, id);
    expect(body.event_ids).toHaveLength(2);
    const wal = await walOf(t, s.orch, `?after_seq=${body.wal_seq - 2}`);
    expect(wal.map((e) => e.event_id)).toEqual(body.event_ids);
  });

  it("Should answer one event and no active run when a run that holds nothing finishes", async () => {
    const { s, t, id } = await task(DIAMOND());
    const w = await dispatch(s, t);
    const body = expectOk(await call("POST", `${t}/runs/${w.run_id}/finish`, s.orch, { outcome: "finished" }));
    expect(body.event_ids).toHaveLength(1);
    expect(body.task.active_runs).toBe(0);
  });

  it.each([
    ["the outcome is unknown", { outcome: "crashed" }],
    ["the outcome is missing", {}],
    ["the body has an unknown field", { outcome: "finished", exit_code: 0 }],
  ])("Should answer 400 validation_error when %s", async (_name, body) => {
    const { s, t, id } = await task(DIAMOND());
    const w = await dispatch(s, t);
    expectError(await call("POST", `${t}/runs/${w.run_id}/finish`, w.token, body), 400, "validation_error");
  });

  it("Should answer 400 validation_error when the cancel body has an unknown field", async () => {
    const { s, t, id } = await task(DIAMOND());
    const w = await dispatch(s, t);
    expectError(await call("POST", `${t}/runs/${w.run_id}/cancel`, s.orch, { hard: true }), 400, "validation_error");
  });
});

describe("GET .../steps (agent.task_query_steps)", () => {
  /** Steps r0..r6 ready in the default pool, g ready in pool gpu, p pending after r0. */
  const STEPS = () => [...Array.from({ length: 7 }, (_, i) => step(`r${i}`)), step("g", [], { worker_pool_id: "gpu" }), step("p", ["r0"])];

  it.each([
    ["a comma-separated status list", "?status=pending,claimed", ["r0", "p"]],
    ["a repeated status parameter", "?status=claimed&status=pending", ["r0", "p"]],
  ])("Should filter the orchestrator's query when it gives %s", async (_name, query, ids) => {
    const { s, t, id } = await task(STEPS());
    const w = await dispatch(s, t, { agent_id: "w1" });
    expectOk(await call("POST", `${t}/steps/r0/claim`, w.token));
    expectOk(await call("POST", `${t}/steps/r1/status`, s.orch, { status: "completed" }));
    const page = expectOk(await call("GET", `${t}/steps${query}`, s.orch));
    expect(page.steps.map((x: any) => x.step_id)).toEqual(ids);
  });

  it.each([
    ["a terminal status is asked without include_terminal_steps", "?status=completed"],
    ["a status is unknown", "?status=done"],
    ["limit is zero", "?limit=0"],
    ["include_terminal_steps is not a boolean", "?include_terminal_steps=1"],
    ["worker_pool_id has bad characters", "?worker_pool_id=GPU!"],
    ["the query has an unknown parameter", "?order=desc"],
  ])("Should answer 400 validation_error when %s", async (_name, query) => {
    const { s, t, id } = await task(STEPS());
    expectError(await call("GET", `${t}/steps${query}`, s.orch), 400, "validation_error");
  });

  it("Should answer 404 not_found when the task does not exist", async () => {
    const s = S;
    expectError(await call("GET", `/v1/sessions/${s.sid}/tasks/nope/steps`, s.orch), 404, "not_found");
  });
});

describe("POST .../steps/{step}/claim (agent.task_claim_step)", () => {
  it("Should claim the step with a lease and an attempt and answer the write shape when it is ready", async () => {
    const { s, t, id } = await task(DIAMOND());
    const w = await dispatch(s, t, { agent_id: "w1" });
    const body = expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    expectWriteAnswer(body, id);
    expect(body.event_ids).toHaveLength(1);
    expect(body.attempt_id).toMatch(/^att_/);
    expect(body.step).toMatchObject({ step_id: "a", status: "claimed", claimed_by_agent_id: "w1", claimed_by_run_id: w.run_id, current_attempt_id: body.attempt_id, attempt_ids: [body.attempt_id] });
    const lease = Date.parse(body.step.lease_expires_at) - Date.now();
    expect(lease).toBeGreaterThan(50_000);
    expect(lease).toBeLessThanOrEqual(60_000);
    const view = await getTask(t, s.orch);
    expect(view.attempts).toEqual([
      expect.objectContaining({ attempt_id: body.attempt_id, step_id: "a", run_id: w.run_id, agent_id: "w1", ordinal: 1, status: "active", step_snapshot: expect.objectContaining({ title: "Step a" }) }),
    ]);
  });

  it.each([
    ["the step id has bad characters", "", "Bad.Step", 400, "validation_error"],
  ])("Should answer when %s with the matching error", async (_name, _setup, stepId, status, code) => {
    const { s, t } = await task(DIAMOND());
    const w = await dispatch(s, t);
    const before = (await getTask(t, s.orch)).wal_seq;
    expectError(await call("POST", `${t}/steps/${stepId}/claim`, w.token), status, code);
    expect((await getTask(t, s.orch)).wal_seq).toBe(before);
  });

  it("Should answer 400 validation_error when the claim body has a field", async () => {
    const { s, t, id } = await task(DIAMOND());
    const w = await dispatch(s, t);
    expectError(await call("POST", `${t}/steps/a/claim`, w.token, { lease_ms: 10 }), 400, "validation_error");
    expectError(await call("POST", `${t}/steps/a/claim`, w.token, "{"), 400, "validation_error");
  });
});

describe("POST .../steps/claim-next", () => {
  it("Should answer the claimed step, its attempt id and the write shape when a step is in scope", async () => {
    const { s, t, id } = await task(DIAMOND());
    const w = await dispatch(s, t);
    const body = expectOk(await call("POST", `${t}/steps/claim-next`, w.token));
    expectWriteAnswer(body, id);
    expect(body.step).toMatchObject({ step_id: "a", status: "claimed", claimed_by_run_id: w.run_id });
    expect(body.attempt_id).toMatch(/^att_/);
  });

  it.each([["the run has used its claims", {}, true, "run_budget_spent"]])("Should answer 200 no_step_claimed with the unchanged wal_seq and no event when %s", async (_name, body, useBudget, reason) => {
    const { s, t, id } = await task(DIAMOND());
    const w = await dispatch(s, t, body);
    if (useBudget) {
      expectOk(await call("POST", `${t}/steps/claim-next`, w.token));
      expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "completed" }));
    }
    const before = (await getTask(t, s.orch)).wal_seq;
    const res = expectOk(await call("POST", `${t}/steps/claim-next`, w.token));
    expect(res).toMatchObject({ no_step_claimed: true, reason, event_ids: [], wal_seq: before });
    expectWriteAnswer(res, id);
    expect(res.step).toBeUndefined();
  });

  it("Should answer 400 validation_error when the body has a field", async () => {
    const { s, t, id } = await task(DIAMOND());
    const w = await dispatch(s, t);
    expectError(await call("POST", `${t}/steps/claim-next`, w.token, { step_id: "a" }), 400, "validation_error");
  });
});

describe("POST .../steps/{step}/status (agent.task_update_step)", () => {
  async function claimed() {
    const { s, t, id } = await task(DIAMOND());
    const w = await dispatch(s, t, { max_steps: 5 });
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    return { s, t, w, id };
  }

  it("Should answer the event ids the WAL holds when the holder sets its step's status", async () => {
    const { s, t, w, id } = await claimed();
    const body = expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "completed", result_summary: "found it" }));
    expectWriteAnswer(body, id);
    const wal = await walOf(t, s.orch, `?after_seq=${body.wal_seq - body.event_ids.length}`);
    expect(wal[0]).toMatchObject({ event_type: "task_step_completed", step_id: "a", event_id: body.event_ids[0] });
    expect(wal.map((e) => e.event_id)).toEqual(body.event_ids);
  });

  it("Should renew the lease when the holder writes a non-terminal status", async () => {
    const { s, t, w } = await claimed();
    const first = stepOf(await getTask(t, s.orch), "a").lease_expires_at;
    await sleep(15);
    expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "running" }));
    const second = stepOf(await getTask(t, s.orch), "a").lease_expires_at;
    await sleep(15);
    const body = expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "running", result_summary: "halfway" }));
    const third = stepOf(await getTask(t, s.orch), "a");
    expect(Date.parse(second)).toBeGreaterThan(Date.parse(first));
    expect(Date.parse(third.lease_expires_at)).toBeGreaterThan(Date.parse(second));
    expect(third.result_summary).toBe("halfway");
    const wal = await walOf(t, s.orch, `?after_seq=${body.wal_seq - 1}`);
    expect(wal[0]!.event_type).toBe("task_step_updated");
  });

  it("Should claim the next step in the same answer when claim_next is true", async () => {
    const { s, t, w, id } = await claimed();
    const body = expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "completed", claim_next: true }));
    expectWriteAnswer(body, id);
    expect(body.next).toMatchObject({ step: { step_id: "b", status: "claimed", claimed_by_run_id: w.run_id }, attempt_id: expect.stringMatching(/^att_/) });
    // completed, b ready, c ready, b claimed.
    expect(body.event_ids).toHaveLength(4);
    const view = await getTask(t, s.orch);
    expect(stepOf(view, "b").status).toBe("claimed");
    expect(body.wal_seq).toBe(view.wal_seq);
  });

  it("Should answer next.no_step_claimed when claim_next is true and nothing is ready", async () => {
    const { s, t, id } = await task([step("a"), step("b", ["a"], { worker_pool_id: "gpu" })]);
    const w = await dispatch(s, t, { max_steps: 5 });
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    const body = expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "completed", claim_next: true }));
    expect(body.next).toEqual({ no_step_claimed: true, reason: "no_ready_step" });
    expect(body.step).toBeUndefined();
  });

  it("Should ignore claim_next when the status is not terminal", async () => {
    const { t, w } = await claimed();
    const body = expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "running", claim_next: true }));
    expect(body.next).toBeUndefined();
  });

  it.each([
    ["the status is unknown", "w", "a", { status: "done" }, 400, "validation_error"],
    ["the status is missing", "w", "a", {}, 400, "validation_error"],
    ["result_summary is over 8000 characters", "w", "a", { status: "completed", result_summary: "x".repeat(8001) }, 400, "validation_error"],
    ["the body tries to change the title", "w", "a", { status: "running", title: "mine now" }, 400, "validation_error"],
    ["the body is malformed JSON", "w", "a", "{status", 400, "validation_error"],
    ["the step id has bad characters", "o", "A.B", { status: "completed" }, 400, "validation_error"],
  ])("Should answer when %s with the matching error", async (_name, who, stepId, body, status, code) => {
    const { s, t, w } = await claimed();
    const token = who.startsWith("o") ? s.orch : w.token;
    const before = (await getTask(t, s.orch)).wal_seq;
    expectError(await call("POST", `${t}/steps/${stepId}/status`, token, body), status, code);
    expect((await getTask(t, s.orch)).wal_seq).toBe(before);
  });
});

describe("POST .../steps/{step}/progress (agent.task_progress)", () => {
  it("Should record progress and renew the lease when the holder reports on its step", async () => {
    const { s, t, id } = await task(DIAMOND());
    const w = await dispatch(s, t);
    const claim = expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    await sleep(15);
    const body = expectOk(await call("POST", `${t}/steps/a/progress`, w.token, { phase: "search", summary: "3 of 10", counters: { done: 3, total: 10 }, output_refs: ["r2://a/1"] }));
    expectWriteAnswer(body, id);
    expect(body.event_ids).toHaveLength(1);
    const view = await getTask(t, s.orch);
    expect(Date.parse(stepOf(view, "a").lease_expires_at)).toBeGreaterThan(Date.parse(claim.step.lease_expires_at));
    expect(view.progress).toEqual([{ step_id: "a", phase: "search", summary: "3 of 10", counters: { done: 3, total: 10 }, output_refs: ["r2://a/1"], updated_at: expect.any(String) }]);
  });

  it("Should record the orchestrator's progress on any step when it reports", async () => {
    const { s, t, id } = await task(DIAMOND());
    expectOk(await call("POST", `${t}/steps/b/progress`, s.orch, { summary: "waiting on a" }));
    const view = await getTask(t, s.orch);
    expect(view.progress).toEqual([expect.objectContaining({ step_id: "b", summary: "waiting on a", output_refs: [] })]);
  });

  it.each([
    ["counters are not numbers", "w", "a", { counters: { done: "three" } }, 400, "validation_error"],
    ["the body has an unknown field", "w", "a", { percent: 30 }, 400, "validation_error"],
    ["the phase is over 64 characters", "w", "a", { phase: "p".repeat(65) }, 400, "validation_error"],
  ])("Should answer when %s with the matching error", async (_name, who, stepId, body, status, code) => {
    const { s, t, id } = await task(DIAMOND());
    const w = await dispatch(s, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    const token = who === "w" ? w.token : s.orch;
    expectError(await call("POST", `${t}/steps/${stepId}/progress`, token, body), status, code);
  });
});

describe("GET .../wal", () => {
  async function taskWithHistory() {
    const { s, t, id } = await task(DIAMOND());
    const w = await dispatch(s, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "completed" }));
    return { s, t, id };
  }

  it("Should export the whole WAL as JSON Lines in wal_seq order when no range is given", async () => {
    const { s, t, id } = await taskWithHistory();
    const res = await walText(t, s.observer);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/x-ndjson");
    expect(res.text.endsWith("\n")).toBe(true);
    const lines = res.text.trimEnd().split("\n");
    const events = lines.map((l) => JSON.parse(l));
    const view = await getTask(t, s.orch);
    expect(events.map((e) => e.wal_seq)).toEqual(Array.from({ length: view.wal_seq }, (_, i) => i + 1));
    expect(res.headers.get("x-last-wal-seq")).toBe(String(view.wal_seq));
    expect(events[0]).toMatchObject({ event_type: "task_created", task_id: id, session_id: s.sid, step_id: null, payload: { task: { task_id: id } } });
    expect(new Set(events.map((e) => e.event_id)).size).toBe(events.length);
  });

  it.each([
    ["after_seq=2&limit=3", [3, 4, 5]],
    ["after_seq=6", [7, 8, 9]],
    ["limit=1", [1]],
    ["after_seq=9", []],
    ["after_seq=100", []],
  ])("Should page the WAL when the query is %s", async (query, seqs) => {
    const { s, t } = await taskWithHistory();
    const res = await walText(t, s.orch, `?${query}`);
    expect(res.status).toBe(200);
    const events = res.text === "" ? [] : res.text.trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(events.map((e) => e.wal_seq)).toEqual(seqs);
    expect(res.headers.get("x-last-wal-seq")).toBe("9");
  });

  it.each([
    ["after_seq is negative", "?after_seq=-1"],
    ["after_seq is not a number", "?after_seq=first"],
    ["limit is zero", "?limit=0"],
    ["limit is over 10000", "?limit=10001"],
    ["the query has an unknown parameter", "?format=json"],
  ])("Should answer 400 validation_error when %s", async (_name, query) => {
    const { s, t } = await taskWithHistory();
    expectError(await call("GET", `${t}/wal${query}`, s.orch), 400, "validation_error");
  });

  it("Should answer 404 not_found when the task does not exist", async () => {
    const s = S;
    expectError(await call("GET", `/v1/sessions/${s.sid}/tasks/nope/wal`, s.orch), 404, "not_found");
  });
});

describe("unknown routes", () => {
  it.each([
    ["GET", "/nope", false],
    ["GET", "/v1/nope", true],
    ["DELETE", "/v1/sessions/SID/tasks/TID", true],
    ["POST", "/v1/sessions/SID/tasks/TID/steps/a/restart", true],
    ["PUT", "/v1/sessions/SID", true],
  ])("Should answer 404 not_found when %s %s is called", async (method, path, withToken) => {
    const { s, id } = await task([step("a")]);
    expectError(await call(method, path.replace("SID", s.sid).replace("TID", id), withToken ? s.orch : undefined), 404, "not_found");
  });
});

describe("malformed paths", () => {
  it.each([
    ["a step id", "POST", "/steps/%E0%A4%A/claim", "worker", undefined],
    ["a step id on status", "POST", "/steps/%E0%A4%A/status", "worker", { status: "completed" }],
    ["a run id", "POST", "/runs/%ZZ/finish", "orchestrator", { outcome: "finished" }],
    ["a run id on cancel", "POST", "/runs/%ZZ/cancel", "orchestrator", {}],
  ])("Should answer 400 validation_error, not a retryable 503, when %s is not valid percent-encoding", async (_name, method, rest, who, body) => {
    const { s, t } = await task([step("a")]);
    const w = await dispatch(s, t);
    expectError(await call(method, `${t}${rest}`, who === "worker" ? w.token : s.orch, body), 400, "validation_error");
  });

  it("Should answer 400 validation_error when the task id in the path is not valid percent-encoding", async () => {
    expectError(await call("GET", `/v1/sessions/${S.sid}/tasks/%E0%A4%A`, S.orch), 400, "validation_error");
  });
});
