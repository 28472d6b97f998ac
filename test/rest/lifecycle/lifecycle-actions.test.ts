/**
 * @module Human actions over HTTP: asking at step and task level, answering (approver and orchestrator), every
 * refusal writing nothing, the batch route and the command socket carrying the commands, the approver token, the
 * lease an open action suspends, expiry by the alarm, and the reads (list, one action with a long-poll wait, the
 * session inbox).
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { Action } from "../../../src/core/index.js";
import { ADMIN, call, dispatch, newSession, newTask, step, type TestSession } from "../../support/helpers.js";
import { eventually, expectError, expectOk, expectRefusedWritingNothing, expectWriteAnswer, holdAlarm, mintRole, sleep, taskStub, uniqueId, walOf } from "../../support/support.js";
import { socketFrame } from "../../support/test-socket.js";

let S: TestSession;
let approver: string;
beforeAll(async () => {
  S = await newSession();
  approver = await mintRole(S, "approver", "alice");
});

/** A task of S whose step `a` is claimed by a worker run. */
async function heldTask(extra: Record<string, unknown> = {}) {
  const id = uniqueId("act");
  const t = await newTask(S, id, [step("a"), step("b", ["a"])], extra);
  const w = await dispatch(S, t);
  const claim = expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
  return { id, t, w, claim, stub: taskStub(S.sid, id) };
}

const ask = (kind: "approval" | "input", extra: Record<string, unknown> = {}) => ({ kind, prompt: kind === "approval" ? "May I publish?" : "Which region?", ...extra });
const stepOf = (view: { steps: { step_id: string }[] }, id: string) => view.steps.find((s) => s.step_id === id) as Record<string, unknown>;

describe("the approver token", () => {
  it("Should be minted by the admin or the orchestrator and by no other role", async () => {
    const byAdmin = expectOk(await call("POST", `/v1/sessions/${S.sid}/tokens`, ADMIN, { role: "approver", agent_id: "bob" }), 201);
    expect(byAdmin).toMatchObject({ role: "approver", agent_id: "bob", run_id: null, token: expect.any(String) });
    const { w } = await heldTask();
    for (const token of [S.observer, approver, w.token]) {
      expectError(await call("POST", `/v1/sessions/${S.sid}/tokens`, token, { role: "approver" }), 403, "tool_not_available");
    }
  });

  it("Should read the session, its tasks and their WAL like an observer", async () => {
    const { t, id } = await heldTask();
    expect(expectOk(await call("GET", `/v1/sessions/${S.sid}`, approver)).session_id).toBe(S.sid);
    expect(expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks`, approver)).tasks.length).toBeGreaterThan(0);
    expect(expectOk(await call("GET", t, approver)).task.task_id).toBe(id);
    expect(expectOk(await call("GET", `${t}/steps`, approver)).steps.length).toBeGreaterThan(0);
    expect((await walOf(t, approver)).length).toBeGreaterThan(0);
  });

  it("Should be refused every write but respond with 403 tool_not_available, writing nothing", async () => {
    const { t } = await heldTask();
    const writes: [string, string, unknown][] = [
      ["POST", `${t}/pause`, {}],
      ["POST", `${t}/complete`, {}],
      ["PATCH", t, { ops: [{ op: "update_task", summary: "x" }] }],
      ["POST", `${t}/workers`, {}],
      ["POST", `${t}/actions`, ask("approval")],
      ["POST", `${t}/steps/a/actions`, ask("approval")],
      ["POST", `${t}/steps/a/progress`, { summary: "x" }],
    ];
    for (const [method, path, body] of writes) await expectRefusedWritingNothing(t, S.orch, () => call(method, path, approver, body), 403, "tool_not_available");
    expectError(await call("POST", `/v1/sessions/${S.sid}/tasks`, approver, { task_id: uniqueId(), wal_name: uniqueId(), title: "T", steps: [] }), 403, "tool_not_available");
  });

  it("Should list in /v1/tools only the reads and respond", async () => {
    const names: string[] = expectOk(await call("GET", "/v1/tools", approver)).tools.map((tool: { name: string }) => tool.name);
    expect(names).toEqual(expect.arrayContaining(["agent.respond_action", "agent.task_get", "agent.task_list", "agent.task_actions", "agent.task_action", "session_actions"]));
    for (const write of ["agent.task_create", "agent.task_update", "agent.task_pause", "agent.task_resume", "agent.request_action", "agent.request_task_action", "agent.task_complete", "agent.dispatch_worker", "agent.task_claim_step", "mint_token"]) {
      expect(names).not.toContain(write);
    }
    const orchestrator: string[] = expectOk(await call("GET", "/v1/tools", S.orch)).tools.map((tool: { name: string }) => tool.name);
    expect(orchestrator).toEqual(expect.arrayContaining(["agent.task_pause", "agent.task_resume", "agent.request_action", "agent.request_task_action", "agent.respond_action"]));
    const observer: string[] = expectOk(await call("GET", "/v1/tools", S.observer)).tools.map((tool: { name: string }) => tool.name);
    expect(observer).not.toContain("agent.respond_action");
  });
});

describe("asking and answering", () => {
  it("Should open a step-level action by the step's holder with 201 and the action record", async () => {
    const { t, id, w, claim } = await heldTask();
    const res = expectOk(await call("POST", `${t}/steps/a/actions`, w.token, ask("approval", { timeout_ms: 60_000 })), 201);
    expectWriteAnswer(res, id);
    expect(res).toMatchObject({ action_id: expect.stringMatching(/^act_/), status: "open", expires_at: expect.any(String) });
    expect(res.action).toMatchObject({
      action_id: res.action_id,
      task_id: id,
      step_id: "a",
      attempt_id: claim.attempt_id,
      run_id: w.run_id,
      kind: "approval",
      prompt: "May I publish?",
      status: "open",
      decision: null,
      requested_by_agent_id: w.agent_id,
    });
    expect(Date.parse(res.expires_at) - Date.parse(res.action.created_at)).toBe(60_000);
    const wal = await walOf(t, S.orch, `?after_seq=${claim.wal_seq}`);
    expect(wal.map((e) => [e.event_type, e.step_id])).toEqual([["action_requested", "a"]]);
  });

  it("Should let the approver answer it and refuse a second answer with 409 action_resolved, writing nothing", async () => {
    const { t, id, w } = await heldTask();
    const asked = expectOk(await call("POST", `${t}/steps/a/actions`, w.token, ask("approval")), 201);
    const res = expectOk(await call("POST", `${t}/actions/${asked.action_id}/respond`, approver, { decision: "approved", comment: "go" }));
    expectWriteAnswer(res, id);
    expect(res).toMatchObject({ action_id: asked.action_id, status: "resolved" });
    expect(res.action).toMatchObject({ decision: "approved", comment: "go", resolved_by: { agent_id: "alice", role: "approver" }, resolved_at: expect.any(String) });
    await expectRefusedWritingNothing(t, S.orch, () => call("POST", `${t}/actions/${asked.action_id}/respond`, S.orch, { decision: "rejected" }), 409, "action_resolved");
  });

  it("Should check an input against the action's input_schema: 400 validation_error writing nothing, then accept a fitting one", async () => {
    const { t, w } = await heldTask();
    const schema = { type: "object", properties: { region: { type: "string", enum: ["eu", "us"] } }, required: ["region"], additionalProperties: false };
    const asked = expectOk(await call("POST", `${t}/steps/a/actions`, w.token, ask("input", { input_schema: schema })), 201);
    const respond = (body: unknown) => () => call("POST", `${t}/actions/${asked.action_id}/respond`, S.orch, body);
    await expectRefusedWritingNothing(t, S.orch, respond({ decision: "submitted", input: { region: "mars" } }), 400, "validation_error");
    await expectRefusedWritingNothing(t, S.orch, respond({ decision: "submitted", input: { area: "eu" } }), 400, "validation_error");
    await expectRefusedWritingNothing(t, S.orch, respond({ decision: "submitted" }), 400, "validation_error");
    await expectRefusedWritingNothing(t, S.orch, respond({ decision: "approved" }), 400, "validation_error");
    await expectRefusedWritingNothing(t, S.orch, respond({ decision: "exploded" }), 400, "validation_error");
    const res = expectOk(await respond({ decision: "submitted", input: { region: "eu" } })());
    expect(res.action).toMatchObject({ decision: "submitted", input: { region: "eu" }, resolved_by: { role: "orchestrator" } });
  });

  it("Should refuse an answer by the observer or a worker with 403, and an unknown action with 404, each writing nothing", async () => {
    const { t, w } = await heldTask();
    const asked = expectOk(await call("POST", `${t}/steps/a/actions`, w.token, ask("approval")), 201);
    const respond = (token: string, actionId: string) => () => call("POST", `${t}/actions/${actionId}/respond`, token, { decision: "approved" });
    await expectRefusedWritingNothing(t, S.orch, respond(S.observer, asked.action_id), 403, "tool_not_available");
    await expectRefusedWritingNothing(t, S.orch, respond(w.token, asked.action_id), 403, "tool_not_available");
    await expectRefusedWritingNothing(t, S.orch, respond(approver, "act_unknown"), 404, "not_found");
  });

  it("Should keep task-level actions to the orchestrator and one open action per step", async () => {
    const { t, id, w } = await heldTask();
    await expectRefusedWritingNothing(t, S.orch, () => call("POST", `${t}/actions`, w.token, ask("approval")), 403, "tool_not_available");
    const task = expectOk(await call("POST", `${t}/actions`, S.orch, ask("approval")), 201);
    expect(task.action).toMatchObject({ task_id: id, step_id: null, attempt_id: null, run_id: null, status: "open" });
    expectOk(await call("POST", `${t}/steps/a/actions`, w.token, ask("input")), 201);
    await expectRefusedWritingNothing(t, S.orch, () => call("POST", `${t}/steps/a/actions`, S.orch, ask("approval")), 409, "invalid_transition");
    // A step the caller does not hold.
    await expectRefusedWritingNothing(t, S.orch, () => call("POST", `${t}/steps/b/actions`, w.token, ask("approval")), 403, "permission_denied");
    await expectRefusedWritingNothing(t, S.orch, () => call("POST", `${t}/steps/a/actions`, w.token, ask("approval", { input_schema: { type: "object" } })), 400, "validation_error");
  });

  it("Should withdraw the open action of a step whose claim ends", async () => {
    const { t, w } = await heldTask();
    const asked = expectOk(await call("POST", `${t}/steps/a/actions`, w.token, ask("approval")), 201);
    const done = expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "completed" }));
    const wal = await walOf(t, S.orch, `?after_seq=${asked.wal_seq}`);
    const resolved = wal.find((e) => e.event_type === "action_resolved");
    expect(resolved?.payload).toMatchObject({ action_id: asked.action_id, decision: "withdrawn" });
    expect(done.wal_seq).toBe(wal.at(-1)!.wal_seq);
  });
});

describe("the batch route and the command socket", () => {
  it("Should carry request, respond, pause and resume as batch commands with their single routes' answers", async () => {
    const { t, w } = await heldTask();
    const res = expectOk(
      await call("POST", `${t}/batch`, S.orch, {
        commands: [
          { token: w.token, method: "POST", path: `${t}/steps/a/actions`, body: ask("approval") },
          { token: S.orch, method: "POST", path: `${t}/actions`, body: ask("input") },
          { token: S.orch, method: "POST", path: `${t}/pause`, body: { reason: "wait" } },
          { token: S.orch, method: "POST", path: `${t}/resume` },
        ],
      }),
    );
    expect(res.results.map((r: { ok: boolean }) => r.ok)).toEqual([true, true, true, true]);
    const [stepAction, taskAction] = res.results.map((r: { body: { action: Action } }) => r.body.action);
    expect(stepAction).toMatchObject({ step_id: "a", status: "open" });
    expect(taskAction).toMatchObject({ step_id: null, status: "open" });
    expect(res.results[2].body.task.status).toBe("paused");
    // The approver's own token may send a batch of answers.
    const answers = expectOk(
      await call("POST", `${t}/batch`, approver, {
        commands: [
          { token: approver, method: "POST", path: `${t}/actions/${stepAction.action_id}/respond`, body: { decision: "rejected", comment: "no" } },
          { token: approver, method: "POST", path: `${t}/actions/${stepAction.action_id}/respond`, body: { decision: "approved" } },
          { token: approver, method: "POST", path: `${t}/pause` },
        ],
      }),
    );
    expect(answers.results.map((r: { status: number; body: { error?: { code: string } } }) => [r.status, r.body.error?.code ?? "ok"])).toEqual([
      [200, "ok"],
      [409, "action_resolved"],
      [403, "tool_not_available"],
    ]);
    expect(answers.results[0].body.action).toMatchObject({ decision: "rejected", resolved_by: { agent_id: "alice", role: "approver" } });
  });

  it("Should carry them as command-socket commands", async () => {
    const { t, w } = await heldTask();
    const frame = await socketFrame(t, w.token, [{ token: w.token, method: "POST", path: `${t}/steps/a/actions`, body: ask("approval") }]);
    expect(frame.id).toBe(1);
    expect(frame.results[0]).toMatchObject({ ok: true, body: { status: "open", action: { step_id: "a" } } });
    const answer = await socketFrame(t, S.orch, [{ token: approver, method: "POST", path: `${t}/actions/${frame.results[0].body.action_id}/respond`, body: { decision: "approved" } }]);
    expect(answer.results[0]).toMatchObject({ ok: true, body: { action: { decision: "approved", resolved_by: { role: "approver" } } } });
  });
});

describe("an open action and the alarm", () => {
  it("Should never expire the step's lease while its action is open, and restart the lease when it is resolved", async () => {
    const { t, stub, w, claim } = await heldTask({ step_lease_timeout_ms: 1_000 });
    const asked = expectOk(await call("POST", `${t}/steps/a/actions`, w.token, ask("approval", { timeout_ms: 60_000 })), 201);
    await holdAlarm(stub);
    await sleep(1_200);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    // The WAL export does not reconcile: only the alarm could have expired the lease, and it did not.
    expect((await walOf(t, S.orch, `?after_seq=${asked.wal_seq}`)).map((e) => e.event_type)).toEqual([]);
    expect(stepOf(expectOk(await call("GET", t, S.orch)), "a")).toMatchObject({ status: "claimed", claimed_by_run_id: w.run_id, current_attempt_id: claim.attempt_id });

    const resolved = expectOk(await call("POST", `${t}/actions/${asked.action_id}/respond`, approver, { decision: "approved" }));
    const lease = stepOf(expectOk(await call("GET", t, S.orch)), "a").lease_expires_at as string;
    expect(Date.parse(lease)).toBe(Date.parse(resolved.action.resolved_at) + 1_000);
    // Running again: the restarted lease lapses like any other.
    await holdAlarm(stub);
    await sleep(1_200);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const after = await walOf(t, S.orch, `?after_seq=${resolved.wal_seq}`);
    expect(after.map((e) => e.event_type)).toEqual(["task_step_lease_expired", "task_step_ready"]);
  });

  it("Should expire an action on time through the alarm, with no request arriving", async () => {
    const { t, stub, w } = await heldTask();
    const asked = expectOk(await call("POST", `${t}/steps/a/actions`, w.token, ask("approval", { timeout_ms: 1_000 })), 201);
    await holdAlarm(stub);
    await sleep(1_200);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const wal = await walOf(t, S.orch, `?after_seq=${asked.wal_seq}`);
    expect(wal.map((e) => [e.event_type, e.actor_agent_id])).toEqual([["action_resolved", "system"]]);
    expect(wal[0]!.payload).toMatchObject({ action_id: asked.action_id, decision: "expired" });
    const got = expectOk(await call("GET", `${t}/actions/${asked.action_id}`, S.observer));
    expect(got.action).toMatchObject({ action_id: asked.action_id, status: "resolved", decision: "expired", resolved_at: wal[0]!.created_at });
    // Resolved by the alarm once due: never before expires_at.
    expect(Date.parse(got.action.resolved_at)).toBeGreaterThanOrEqual(Date.parse(asked.expires_at));
    await expectRefusedWritingNothing(t, S.orch, () => call("POST", `${t}/actions/${asked.action_id}/respond`, approver, { decision: "approved" }), 409, "action_resolved");
  });
});

describe("reading actions", () => {
  it("Should list a task's actions oldest first, filtered by status and paginated", async () => {
    const { t, w } = await heldTask();
    const first = expectOk(await call("POST", `${t}/actions`, S.orch, ask("approval")), 201);
    const second = expectOk(await call("POST", `${t}/steps/a/actions`, w.token, ask("input")), 201);
    const third = expectOk(await call("POST", `${t}/actions`, S.orch, ask("input")), 201);
    expectOk(await call("POST", `${t}/actions/${first.action_id}/respond`, approver, { decision: "approved" }));
    const all = expectOk(await call("GET", `${t}/actions`, approver));
    expect(all).toMatchObject({ total: 3, limit: 50, offset: 0, next_offset: null });
    expect(all.actions.map((a: Action) => a.action_id)).toEqual([first.action_id, second.action_id, third.action_id]);
    const open = expectOk(await call("GET", `${t}/actions?status=open`, S.observer));
    expect(open.actions.map((a: Action) => a.action_id)).toEqual([second.action_id, third.action_id]);
    const resolved = expectOk(await call("GET", `${t}/actions?status=resolved`, w.token));
    expect(resolved.actions.map((a: Action) => [a.action_id, a.decision])).toEqual([[first.action_id, "approved"]]);
    const page = expectOk(await call("GET", `${t}/actions?limit=1&offset=1`, S.orch));
    expect(page).toMatchObject({ total: 3, limit: 1, offset: 1, next_offset: 2 });
    expect(page.actions.map((a: Action) => a.action_id)).toEqual([second.action_id]);
  });

  it("Should answer one action, and 404 not_found for an unknown one", async () => {
    const { t, w } = await heldTask();
    const asked = expectOk(await call("POST", `${t}/steps/a/actions`, w.token, ask("approval")), 201);
    expect(expectOk(await call("GET", `${t}/actions/${asked.action_id}`, approver))).toEqual({ action: asked.action });
    expectError(await call("GET", `${t}/actions/act_unknown`, approver), 404, "not_found");
    expectError(await call("GET", `${t}/actions/${asked.action_id}?wait_ms=30001`, approver), 400, "validation_error");
  });

  it("Should answer a long poll as soon as the action is resolved", async () => {
    const { t, w } = await heldTask();
    const asked = expectOk(await call("POST", `${t}/steps/a/actions`, w.token, ask("approval")), 201);
    const waiting = call("GET", `${t}/actions/${asked.action_id}?wait_ms=30000`, S.observer);
    // Answered while the poll waits (the wait is 30 s; the test would time out if the poll only ended then).
    await sleep(100);
    expectOk(await call("POST", `${t}/actions/${asked.action_id}/respond`, approver, { decision: "rejected", comment: "not now" }));
    const got = expectOk(await waiting);
    expect(got.action).toMatchObject({ action_id: asked.action_id, status: "resolved", decision: "rejected", comment: "not now" });
  });

  it("Should answer a long poll with the still-open action when the wait ends", async () => {
    const { t, w } = await heldTask();
    const asked = expectOk(await call("POST", `${t}/steps/a/actions`, w.token, ask("approval")), 201);
    const got = expectOk(await call("GET", `${t}/actions/${asked.action_id}?wait_ms=200`, S.observer));
    expect(got.action).toMatchObject({ action_id: asked.action_id, status: "open", decision: null });
  });

  it("Should list the session's open actions newest first with their task's title, and drop resolved ones", async () => {
    const s = await newSession();
    const approverOfS = await mintRole(s, "approver");
    const t1 = await newTask(s, "inbox-one", [step("a")]);
    const t2 = await newTask(s, "inbox-two", [step("a")]);
    const a1 = expectOk(await call("POST", `${t1}/actions`, s.orch, ask("approval")), 201);
    const a2 = expectOk(await call("POST", `${t2}/actions`, s.orch, ask("input")), 201);
    const inbox = await eventually(async () => {
      const page = expectOk(await call("GET", `/v1/sessions/${s.sid}/actions`, approverOfS));
      expect(page.total).toBe(2);
      return page;
    });
    expect(inbox).toMatchObject({ limit: 50, offset: 0, next_offset: null });
    expect(inbox.actions.map((a: Action & { task_title: string }) => [a.action_id, a.task_title])).toEqual([
      [a2.action_id, "Task inbox-two"],
      [a1.action_id, "Task inbox-one"],
    ]);
    expectOk(await call("POST", `${t2}/actions/${a2.action_id}/respond`, approverOfS, { decision: "submitted", input: { any: "thing" } }));
    await eventually(async () => {
      const page = expectOk(await call("GET", `/v1/sessions/${s.sid}/actions?status=open&limit=1`, s.observer));
      expect(page).toMatchObject({ total: 1, limit: 1, next_offset: null });
      expect(page.actions.map((a: Action) => a.action_id)).toEqual([a1.action_id]);
    });
    expectError(await call("GET", `/v1/sessions/${s.sid}/actions?status=resolved`, s.orch), 400, "validation_error");
    expectError(await call("GET", `/v1/sessions/${s.sid}/actions`, S.orch), 403, "permission_denied");
  });
});
