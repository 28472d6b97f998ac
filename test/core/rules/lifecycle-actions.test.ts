/**
 * @module Human actions (docs/model.md "Human actions"): who may ask and answer, what an answer must fit, and how an open action holds
 * its step's lease (suspended while open, restarted on resolution, withdrawn when its claim or task ends).
 */
import { describe, expect, it } from "vitest";
import { type Actor, DEFAULT_LIMITS, nextDeadline, normalizedStepStatus, normalizedTaskStatus } from "../../../src/core/index.js";
import { Harness, observer, orchestrator, SESSION, step, T0 } from "../harness.js";
import { byType, type Cmd, consistent, ghost, iso, LEASE_MS, type Ok, payload, rejectsAs, setStep, st, types, upd } from "./support.js";

/** A person who answers actions (the approver role). */
const approver: Actor = { role: "approver", session_id: SESSION, agent_id: "human", run_id: null };

/** A step-level approval request on `stepId`. */
const ask = (stepId: string | null, extra: Cmd = {}): Cmd => ({ type: "request_action", ...(stepId === null ? {} : { step_id: stepId }), kind: "approval", prompt: "May I?", ...extra });
/** An input request with a schema needing a string `region`. */
const askInput = (stepId: string | null, extra: Cmd = {}): Cmd =>
  ask(stepId, { kind: "input", prompt: "Which region?", input_schema: { type: "object", required: ["region"], properties: { region: { type: "string" } } }, ...extra });
/** A respond_action command. */
const answer = (actionId: string, decision: string, extra: Cmd = {}): Cmd => ({ type: "respond_action", action_id: actionId, decision, ...extra });
/** The action id an accepted request_action answers with. */
const idOf = (d: Ok): string => (d.value as { action_id: string }).action_id;

/** A task with steps a and b (b after a) and a worker holding a (running). */
function holding(): { h: Harness; w: Actor } {
  const h = new Harness();
  h.create([step("a"), step("b", ["a"])], { step_lease_timeout_ms: LEASE_MS });
  const w = h.claimWith("a");
  h.ok(setStep("a", "running"), w);
  return { h, w };
}

describe("asking for an action", () => {
  it("Should let a worker open an approval on the step it holds, tied to its attempt and run", () => {
    const { h, w } = holding();
    const d = h.ok(ask("a"), w);
    const action = h.state.actions.get(idOf(d))!;
    expect(action).toMatchObject({ step_id: "a", kind: "approval", status: "open", attempt_id: st(h, "a").current_attempt_id, run_id: w.run_id, requested_by_agent_id: w.agent_id });
    expect(action.expires_at).toBe(iso(T0 + DEFAULT_LIMITS.actionTimeoutMs));
    expect(h.state.index.stepActions.get("a")).toBe(action.action_id);
    consistent(h);
  });

  it("Should let a worker open an input action with a schema on the step it holds", () => {
    const { h, w } = holding();
    const d = h.ok(askInput("a", { timeout_ms: 5_000 }), w);
    expect(h.state.actions.get(idOf(d))).toMatchObject({ kind: "input", input_schema: { required: ["region"] }, expires_at: iso(T0 + 5_000) });
  });

  it("Should refuse a worker asking on a step it does not hold with permission_denied", () => {
    const { h } = holding();
    const other = h.dispatch();
    rejectsAs(h, ask("a"), other, "permission_denied");
    rejectsAs(h, ask("b"), other, "permission_denied");
  });

  it("Should let the orchestrator open a task-level action", () => {
    const { h } = holding();
    const d = h.ok(ask(null));
    expect(h.state.actions.get(idOf(d))).toMatchObject({ step_id: null, attempt_id: null, run_id: null, requested_by_agent_id: orchestrator.agent_id });
  });

  it("Should refuse a worker's task-level action with tool_not_available", () => {
    const { h, w } = holding();
    rejectsAs(h, ask(null), w, "tool_not_available");
  });

  it("Should refuse an observer's action with tool_not_available", () => {
    const { h } = holding();
    rejectsAs(h, ask("a"), observer, "tool_not_available");
    rejectsAs(h, ask(null), observer, "tool_not_available");
  });

  it("Should refuse a second open action on one step with invalid_transition", () => {
    const { h, w } = holding();
    h.ok(ask("a"), w);
    rejectsAs(h, askInput("a"), w, "invalid_transition");
    rejectsAs(h, ask("a"), orchestrator, "invalid_transition");
  });

  it("Should refuse an input_schema on an approval with validation_error", () => {
    const { h, w } = holding();
    rejectsAs(h, ask("a", { input_schema: { type: "object" } }), w, "validation_error");
  });

  it("Should refuse an input_schema it cannot use with validation_error", () => {
    const { h, w } = holding();
    rejectsAs(h, askInput("a", { input_schema: { type: "string", pattern: "([" } }), w, "validation_error");
    rejectsAs(h, askInput("a", { input_schema: { type: "object", properties: { code: { type: "string", pattern: "([" } } } }), w, "validation_error");
    rejectsAs(h, askInput("a", { input_schema: { patternProperties: { "[z-a]": {} } } }), w, "validation_error");
    rejectsAs(h, askInput("a", { input_schema: { $ref: "https://example.com/missing.json" } }), w, "validation_error");
  });
});

describe("answering an action", () => {
  it.each([
    ["the orchestrator", orchestrator],
    ["an approver", approver],
  ])("Should let %s approve, recording who decided, when and the comment", (_, who) => {
    const { h, w } = holding();
    const id = idOf(h.ok(ask("a"), w));
    h.now += 1_000;
    h.ok(answer(id, "approved", { comment: "fine" }), who);
    expect(h.state.actions.get(id)).toMatchObject({ status: "resolved", decision: "approved", comment: "fine", resolved_by: { agent_id: who.agent_id, role: who.role }, resolved_at: iso(T0 + 1_000) });
    expect(h.state.index.openActions.size).toBe(0);
    consistent(h);
  });

  it("Should refuse a worker's or an observer's answer with tool_not_available", () => {
    const { h, w } = holding();
    const id = idOf(h.ok(ask("a"), w));
    rejectsAs(h, answer(id, "approved"), w, "tool_not_available");
    rejectsAs(h, answer(id, "approved"), observer, "tool_not_available");
    rejectsAs(h, answer(id, "approved"), ghost, "tool_not_available");
  });

  it("Should answer an unknown action with not_found", () => {
    const { h } = holding();
    rejectsAs(h, answer("act_nope", "approved"), approver, "not_found");
  });

  it("Should refuse a second answer with action_resolved and write nothing", () => {
    const { h, w } = holding();
    const id = idOf(h.ok(ask("a"), w));
    h.ok(answer(id, "rejected"), approver);
    const e = rejectsAs(h, answer(id, "approved"), orchestrator, "action_resolved");
    expect(e.details).toMatchObject({ action_id: id, decision: "rejected" });
  });

  it("Should refuse a decision that does not fit the kind with validation_error", () => {
    const { h, w } = holding();
    const approval = idOf(h.ok(ask(null)));
    rejectsAs(h, answer(approval, "submitted", { input: { region: "eu" } }), approver, "validation_error");
    const input = idOf(h.ok(askInput("a"), w));
    rejectsAs(h, answer(input, "approved"), approver, "validation_error");
    rejectsAs(h, answer(input, "submitted"), approver, "validation_error");
    rejectsAs(h, answer(approval, "approved", { input: 1 }), approver, "validation_error");
  });

  it("Should refuse an input that does not match the schema with validation_error and its issues", () => {
    const { h, w } = holding();
    const id = idOf(h.ok(askInput("a"), w));
    const e = rejectsAs(h, answer(id, "submitted", { input: { region: 7 } }), approver, "validation_error");
    expect((e.details as { issues: { path: string }[] }).issues.some((i) => i.path.includes("region"))).toBe(true);
    rejectsAs(h, answer(id, "submitted", { input: {} }), approver, "validation_error");
    h.ok(answer(id, "submitted", { input: { region: "eu" } }), approver);
    expect(h.state.actions.get(id)).toMatchObject({ decision: "submitted", input: { region: "eu" } });
  });

  it("Should refuse an input its schema cannot be applied to (a nested $ref that resolves nowhere) with validation_error, never a crash", () => {
    const { h, w } = holding();
    const id = idOf(h.ok(askInput("a", { input_schema: { type: "object", properties: { region: { $ref: "#/$defs/missing" } } } }), w));
    rejectsAs(h, answer(id, "submitted", { input: { region: "eu" } }), approver, "validation_error");
    h.ok(answer(id, "rejected", { comment: "the form is broken" }), approver);
  });
});

describe("an open action and its step's lease", () => {
  it("Should never expire the lease while the action is open, and set the alarm for the action's expiry instead", () => {
    const { h, w } = holding();
    const d = h.ok(ask("a", { timeout_ms: 10 * LEASE_MS }), w);
    const action = h.state.actions.get(idOf(d))!;
    expect(nextDeadline(h.state)).toBe(Date.parse(action.expires_at));
    h.now += 5 * LEASE_MS;
    const r = h.run({ type: "reconcile_leases" });
    expect(r.ok && byType(r.events, "task_step_lease_expired")).toEqual([]);
    expect(st(h, "a")).toMatchObject({ status: "running", claimed_by_run_id: w.run_id });
  });

  it("Should restart the lease from the resolution time", () => {
    const { h, w } = holding();
    const id = idOf(h.ok(ask("a"), w));
    h.now += 3 * LEASE_MS;
    const d = h.ok(answer(id, "approved"), approver);
    expect(payload(d.events[0]).lease_expires_at).toBe(iso(h.now + LEASE_MS));
    expect(st(h, "a").lease_expires_at).toBe(iso(h.now + LEASE_MS));
    expect(nextDeadline(h.state)).toBe(h.now + LEASE_MS);
    consistent(h);
  });

  it("Should expire an action at expires_at as the system, with decision expired, restarting the lease", () => {
    const { h, w } = holding();
    const id = idOf(h.ok(ask("a", { timeout_ms: 2 * LEASE_MS }), w));
    h.now = T0 + 2 * LEASE_MS - 1;
    const early = h.ok({ type: "reconcile_leases" });
    expect(early.events).toEqual([]);
    h.now = T0 + 2 * LEASE_MS;
    const d = h.ok({ type: "reconcile_leases" });
    expect(d.events.map((e) => e.event_type)).toEqual(["action_resolved"]);
    expect(d.events[0]).toMatchObject({ actor_agent_id: "system", payload: { decision: "expired", resolved_by_role: "system", lease_expires_at: iso(h.now + LEASE_MS) } });
    expect(h.state.actions.get(id)).toMatchObject({ decision: "expired", resolved_by: { agent_id: "system", role: "system" } });
    expect(st(h, "a")).toMatchObject({ status: "running", lease_expires_at: iso(h.now + LEASE_MS) });
    consistent(h);
  });

  it.each<[string, (h: Harness, w: Actor) => Ok]>([
    ["the step completes", (h, w) => h.ok(setStep("a", "completed"), w)],
    ["the step fails", (h, w) => h.ok(setStep("a", "failed"), w)],
    ["the step is blocked", (h, w) => h.ok(setStep("a", "blocked"), w)],
    ["the run ends", (h, w) => h.ok({ type: "finish_run", run_id: w.run_id, outcome: "finished" }, w)],
    ["the run is cancelled", (h, w) => h.ok({ type: "cancel_run", run_id: w.run_id })],
    ["the task is cancelled", (h) => h.ok({ type: "cancel_task" })],
    ["the task fails", (h) => h.ok({ type: "fail_task" })],
  ])("Should withdraw the step's open action in the same decision when %s", (_, end) => {
    const { h, w } = holding();
    const id = idOf(h.ok(ask("a"), w));
    const d = end(h, w);
    const resolved = byType(d.events, "action_resolved");
    expect(resolved).toHaveLength(1);
    expect(resolved[0]).toMatchObject({ actor_agent_id: "system", payload: { action_id: id, decision: "withdrawn", resolved_by_role: "system", lease_expires_at: null } });
    expect(d.events[d.events.length - 1]!.event_type).toBe("action_resolved");
    expect(h.state.actions.get(id)!.status).toBe("resolved");
    expect(h.state.index.stepActions.size).toBe(0);
    consistent(h);
  });

  it("Should withdraw, not expire, an action whose run's deadline passed before the action's expiry in the same reconcile", () => {
    const h = new Harness();
    h.create([step("a", [], { retry_policy: { max_attempts: 2, initial_interval_ms: 0, backoff_coefficient: 1, max_interval_ms: 0 } })], { step_lease_timeout_ms: LEASE_MS });
    const w = h.claimWith("a", { timeout_ms: 5_000 });
    const id = idOf(h.ok(ask("a", { timeout_ms: 10_000 }), w));
    h.now += 20_000;
    const d = h.ok({ type: "reconcile_leases" });
    expect(types(d)).toEqual(["task_step_failed", "worker_run_ended", "task_step_reopened", "task_step_ready", "action_resolved"]);
    expect(h.state.actions.get(id)).toMatchObject({ decision: "withdrawn" });
    expect(st(h, "a")).toMatchObject({ status: "ready", lease_expires_at: null, claimed_by_run_id: null });
    consistent(h);
  });

  it("Should withdraw a task-level action when the task ends", () => {
    const h = new Harness();
    h.create([step("a", [], { required: false })]);
    const id = idOf(h.ok(ask(null)));
    const d = h.ok({ type: "complete_task" });
    expect(byType(d.events, "action_resolved").map((e) => payload(e))).toMatchObject([{ action_id: id, decision: "withdrawn" }]);
    consistent(h);
  });

  it("Should leave a task-level action open when a step's claim ends", () => {
    const { h, w } = holding();
    const id = idOf(h.ok(ask(null)));
    h.ok(setStep("a", "completed"), w);
    expect(h.state.actions.get(id)!.status).toBe("open");
  });
});

describe("normalized statuses while an action is open", () => {
  it("Should show the step waiting_permission for an approval and waiting_input for an input, then its own status", () => {
    const { h, w } = holding();
    const approval = idOf(h.ok(ask("a"), w));
    expect(normalizedStepStatus(h.state, st(h, "a"))).toBe("waiting_permission");
    h.ok(answer(approval, "approved"), approver);
    expect(normalizedStepStatus(h.state, st(h, "a"))).toBe("running");
    h.ok(askInput("a"), w);
    expect(normalizedStepStatus(h.state, st(h, "a"))).toBe("waiting_input");
    expect(normalizedTaskStatus(h.state)).toBe("running");
  });

  it("Should show the task waiting_permission or waiting_input while a task-level action is open", () => {
    const h = new Harness();
    h.create([step("a")]);
    const input = idOf(h.ok(askInput(null)));
    expect(normalizedTaskStatus(h.state)).toBe("waiting_input");
    const approval = idOf(h.ok(ask(null)));
    expect(normalizedTaskStatus(h.state)).toBe("waiting_permission");
    h.ok(answer(approval, "approved"), approver);
    expect(normalizedTaskStatus(h.state)).toBe("waiting_input");
    h.ok(answer(input, "submitted", { input: { region: "eu" } }), approver);
    expect(normalizedTaskStatus(h.state)).toBe("running");
  });
});

describe("replay", () => {
  it("Should rebuild actions, their indexes and the leases they held from the WAL", () => {
    const { h, w } = holding();
    const id = idOf(h.ok(askInput("a", { timeout_ms: 5_000 }), w));
    h.ok(ask(null));
    consistent(h);
    h.now += 5_000;
    h.ok({ type: "reconcile_leases" });
    consistent(h);
    h.ok(ask("a"), w);
    h.ok(upd({ op: "update_task", title: "Renamed" }));
    h.ok(setStep("a", "completed"), w);
    expect(h.state.actions.get(id)!.decision).toBe("expired");
    consistent(h);
  });
});
