/**
 * Seed 003 rules, one test (or table row) per bullet, for the sections "Orchestrator Ownership",
 * "Task Tools", "Step Claim Lease" and "Permission". Every rejected command is checked to write nothing.
 */
import { describe, expect, it } from "vitest";
import {
  type Actor,
  type Decision,
  nextDeadline,
  querySteps,
  type RuntimeError,
  replay,
  type StepPage,
  type StepQuery,
  type WalEvent,
} from "../../src/core/index.js";
import { Harness, observer, orchestrator, SESSION, step, stranger, T0, TASK } from "./harness.js";

type Ok = Extract<Decision, { ok: true }>;

const LEASE_MS = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

/** A worker-role caller that holds no run of the task. */
const ghost: Actor = { role: "worker", session_id: SESSION, task_id: TASK, agent_id: "ghost", run_id: "run_ghost" };
/** A system caller (not a task tool user). */
const systemCaller: Actor = { role: "system", session_id: SESSION, agent_id: "system", run_id: null };

/** Runs a command that must be rejected with `code`, and checks it wrote nothing. */
function rejects(h: Harness, command: Record<string, unknown>, actor: Actor, code: string): RuntimeError {
  const before = h.wal.length;
  const seq = h.state.last_wal_seq;
  const d = h.run(command, actor);
  if (d.ok) throw new Error(`expected ${String(command.type)} to fail with ${code}, it wrote ${d.events.map((e) => e.event_type).join(", ")}`);
  expect(d.error.code).toBe(code);
  expect(h.wal.length).toBe(before);
  expect(h.state.last_wal_seq).toBe(seq);
  expect(replay(h.wal)).toEqual(h.state);
  return d.error;
}

/** Runs a command that must succeed and returns its event types; checks the WAL still replays to the state. */
function typesOf(h: Harness, command: Record<string, unknown>, actor: Actor = orchestrator): string[] {
  const d = h.ok(command, actor);
  expect(replay(h.wal)).toEqual(h.state);
  return d.events.map((e) => e.event_type);
}

function q(h: Harness, actor: Actor, query: StepQuery = {}): StepPage {
  const r = querySteps(h.state, actor, query);
  if (!r.ok) throw new Error(`query failed: ${r.error.code}: ${r.error.message}`);
  return r.value;
}
const ids = (p: StepPage) => p.steps.map((s) => s.step_id);

function qErr(h: Harness, actor: Actor, query: StepQuery = {}): string {
  const r = querySteps(h.state, actor, query);
  if (r.ok) throw new Error(`query should fail, got ${ids(r.value).join(",")}`);
  return r.error.code;
}

function st(h: Harness, id: string) {
  const s = h.state.steps.get(id);
  if (s === undefined) throw new Error(`no step ${id}`);
  return s;
}

function runOf(h: Harness, actor: Actor) {
  const r = h.state.runs.get(actor.run_id!);
  if (r === undefined) throw new Error("no run");
  return r;
}

function attemptsOf(h: Harness, id: string) {
  return st(h, id).attempt_ids.map((a) => h.state.attempts.get(a)!);
}

/** Task with roots a, c, d and b depending on a. */
function base(): Harness {
  const h = new Harness();
  h.create([step("a"), step("b", ["a"]), step("c"), step("d")]);
  return h;
}

const byType = (events: WalEvent[], type: string) => events.filter((e) => e.event_type === type);

// ───────────────────────────────────────────────────────────────────────────────────────────────
describe("Orchestrator Ownership", () => {
  it.each([
    ["a worker", ghost],
    ["an observer", observer],
    ["a system caller", systemCaller],
  ])("only the orchestrator can create a task DAG (%s cannot)", (_n, actor) => {
    const h = new Harness();
    rejects(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "Plan", steps: [step("a")] }, actor, "tool_not_available");
    expect(h.state.task).toBeNull();
    expect(typesOf(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "Plan", steps: [step("a")] })).toEqual([
      "task_created",
      "task_step_ready",
      "task_running",
    ]);
  });

  /** Setup for content changes: a ready, b pending on a, c claimed by `holder`, d failed, e blocked. */
  function contentSetup() {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"]), step("c"), step("d"), step("e")]);
    const failer = h.claimWith("d");
    h.ok({ type: "update_step", step_id: "d", status: "failed", reason: "boom" }, failer);
    const blocker = h.claimWith("e");
    h.ok({ type: "update_step", step_id: "e", status: "blocked", reason: "stuck" }, blocker);
    const holder = h.claimWith("c");
    return { h, holder };
  }

  it.each([
    ["task title", [{ op: "update_task", title: "New title" }], (h: Harness) => expect(h.state.task!.title).toBe("New title")],
    ["task summary", [{ op: "update_task", summary: "New summary" }], (h: Harness) => expect(h.state.task!.summary).toBe("New summary")],
    ["step title", [{ op: "update_step", step_id: "a", fields: { title: "A2" } }], (h: Harness) => expect(st(h, "a").title).toBe("A2")],
    ["step summary", [{ op: "update_step", step_id: "a", fields: { summary: "S2" } }], (h: Harness) => expect(st(h, "a").summary).toBe("S2")],
    [
      "DAG topology (depends_on_step_ids)",
      [{ op: "update_step", step_id: "b", fields: { depends_on_step_ids: ["c"] } }],
      (h: Harness) => expect(st(h, "b").depends_on_step_ids).toEqual(["c"]),
    ],
    ["a dependency added", [{ op: "add_dependency", step_id: "a", depends_on_step_id: "c" }], (h: Harness) => expect(st(h, "a").depends_on_step_ids).toEqual(["c"])],
    ["a dependency removed", [{ op: "remove_dependency", step_id: "b", depends_on_step_id: "a" }], (h: Harness) => expect(st(h, "b").depends_on_step_ids).toEqual([])],
    ["a step added", [{ op: "add_step", step: step("n", ["a"]) }], (h: Harness) => expect(st(h, "n").status).toBe("pending")],
    ["a step deleted", [{ op: "delete_step", step_id: "b" }], (h: Harness) => expect(h.state.steps.has("b")).toBe(false)],
    [
      "a step split in two",
      [
        { op: "add_step", step: step("a1") },
        { op: "add_step", step: step("a2", ["a1"]) },
        { op: "update_step", step_id: "b", fields: { depends_on_step_ids: ["a2"] } },
        { op: "delete_step", step_id: "a" },
      ],
      (h: Harness) => {
        expect(h.state.steps.has("a")).toBe(false);
        expect(st(h, "b").depends_on_step_ids).toEqual(["a2"]);
      },
    ],
    [
      "two steps merged into one",
      [
        { op: "update_step", step_id: "a", fields: { title: "A and B" } },
        { op: "delete_step", step_id: "b" },
      ],
      (h: Harness) => expect([...h.state.steps.keys()]).toEqual(["a", "c", "d", "e"]),
    ],
    ["a step's worker_pool_id", [{ op: "update_step", step_id: "a", fields: { worker_pool_id: "gpu" } }], (h: Harness) => expect(st(h, "a").worker_pool_id).toBe("gpu")],
    ["a step's required flag", [{ op: "update_step", step_id: "a", fields: { required: false } }], (h: Harness) => expect(st(h, "a").required).toBe(false)],
  ])("only the orchestrator can change task content: %s", (_n, ops, check) => {
    const { h, holder } = contentSetup();
    rejects(h, { type: "update_task", ops }, holder, "tool_not_available");
    rejects(h, { type: "update_task", ops }, observer, "tool_not_available");
    rejects(h, { type: "update_task", ops }, stranger, "permission_denied");
    const types = typesOf(h, { type: "update_task", ops });
    expect(types[0]).toBe("task_updated");
    check(h);
  });

  it("the orchestrator need not assign steps to workers: an unscoped run claims the first ready step of its pool", () => {
    const h = base();
    const w = h.dispatch();
    expect(runOf(h, w).allowed_step_ids).toBeNull();
    const d = h.ok({ type: "claim_next" }, w);
    expect(d.value).toMatchObject({ kind: "claimed", step_id: "a" });
    expect(st(h, "a").claimed_by_run_id).toBe(w.run_id);
  });

  it("the orchestrator maintains blocked state and worker_pool_id; ready is maintained by the core", () => {
    const h = base();
    const w = h.claimWith("c");
    // Nobody writes ready or pending by hand.
    rejects(h, { type: "update_step", step_id: "b", status: "ready" }, orchestrator, "invalid_transition");
    rejects(h, { type: "update_step", step_id: "c", status: "ready" }, w, "invalid_transition");
    rejects(h, { type: "update_step", step_id: "c", status: "pending" }, w, "invalid_transition");
    // The orchestrator sets blocked and the pool.
    expect(typesOf(h, { type: "update_step", step_id: "d", status: "blocked", reason: "needs input" })).toEqual(["task_step_blocked"]);
    expect(h.status("d")).toBe("blocked");
    typesOf(h, { type: "update_task", ops: [{ op: "update_step", step_id: "b", fields: { worker_pool_id: "gpu" } }] });
    expect(st(h, "b").worker_pool_id).toBe("gpu");
    // Completing a makes b ready in the same decision, without anyone asking.
    const wa = h.claimWith("a");
    expect(typesOf(h, { type: "update_step", step_id: "a", status: "completed" }, wa)).toEqual(["task_step_completed", "task_step_ready"]);
    expect(h.status("b")).toBe("ready");
  });

  it("the ready queue is passive: readiness never dispatches a run or claims a step", () => {
    const h = base();
    expect(h.wal.map((e) => e.event_type)).toEqual(["task_created", "task_step_ready", "task_step_ready", "task_step_ready", "task_running"]);
    expect(h.state.runs.size).toBe(0);
    const w = h.claimWith("a");
    const types = typesOf(h, { type: "update_step", step_id: "a", status: "completed" }, w);
    expect(types).toEqual(["task_step_completed", "task_step_ready"]);
    expect(h.state.runs.size).toBe(1);
    expect(h.status("b")).toBe("ready");
    expect(st(h, "b").claimed_by_run_id).toBeNull();
    expect(h.state.index.activeRuns.size).toBe(1); // only the run the orchestrator dispatched
  });

  it("a worker queries the ready queue and claims only inside a run started by dispatch_worker", () => {
    const h = base();
    expect(qErr(h, ghost)).toBe("permission_denied");
    rejects(h, { type: "claim_step", step_id: "a" }, ghost, "permission_denied");
    rejects(h, { type: "claim_next" }, ghost, "permission_denied");
    const w = h.dispatch();
    expect(ids(q(h, w))).toEqual(["a", "c", "d"]);
    expect(typesOf(h, { type: "claim_step", step_id: "a" }, w)).toEqual(["task_step_claimed"]);
  });

  it("a worker run claims at most one step", () => {
    const h = base();
    const w = h.claimWith("a");
    rejects(h, { type: "claim_step", step_id: "c" }, w, "step_already_claimed_by_run");
    h.ok({ type: "update_step", step_id: "a", status: "completed" }, w);
    rejects(h, { type: "claim_step", step_id: "c" }, w, "step_already_claimed_by_run");
    const before = h.wal.length;
    expect(h.ok({ type: "claim_next" }, w).value).toEqual({ kind: "no_step_claimed", reason: "run_budget_spent" });
    expect(h.wal.length).toBe(before);
    expect(runOf(h, w).claims_used).toBe(1);
  });

  it.each([
    ["title", { title: "Hijack" }],
    ["summary", { summary: "Hijack" }],
    ["depends_on_step_ids", { depends_on_step_ids: [] }],
    ["worker_pool_id", { worker_pool_id: "gpu" }],
    ["required", { required: false }],
  ])("a worker cannot change task content (step %s through update_step)", (_n, field) => {
    const h = base();
    const w = h.claimWith("a");
    rejects(h, { type: "update_step", step_id: "a", status: "running", ...field }, w, "validation_error");
    rejects(h, { type: "update_task", ops: [{ op: "update_step", step_id: "a", fields: field }] }, w, "tool_not_available");
    expect(st(h, "a")).toMatchObject({ title: "Step a", summary: "Do a", depends_on_step_ids: [], worker_pool_id: "default", required: true, status: "claimed" });
  });

  it("a worker can read the task's steps it can see", () => {
    const h = new Harness();
    h.create([step("a"), step("b", ["a"]), step("g", [], { worker_pool_id: "gpu" })]);
    const w = h.dispatch();
    expect(ids(q(h, w))).toEqual(["a"]);
    expect(ids(q(h, w, { statuses: ["pending", "ready"] }))).toEqual(["a", "b"]);
    const g = h.dispatch({ worker_pool_id: "gpu" });
    expect(ids(q(h, g))).toEqual(["g"]);
  });

  it("a worker can claim a step it may execute", () => {
    const h = base();
    const w = h.dispatch();
    expect(typesOf(h, { type: "claim_step", step_id: "c" }, w)).toEqual(["task_step_claimed"]);
    expect(st(h, "c")).toMatchObject({ status: "claimed", claimed_by_agent_id: w.agent_id, claimed_by_run_id: w.run_id });
  });

  it.each([
    ["claimed", "claimed", ["task_step_updated"]],
    ["running", "running", ["task_step_started"]],
    ["blocked", "blocked", ["task_step_blocked"]],
    ["completed", "completed", ["task_step_completed", "task_step_ready"]],
    ["failed", "failed", ["task_step_failed"]],
  ])("a worker can set its own claimed step's execution status to %s", (to, status, types) => {
    const h = base();
    const w = h.claimWith("a");
    expect(typesOf(h, { type: "update_step", step_id: "a", status: to }, w)).toEqual(types);
    expect(h.status("a")).toBe(status);
  });

  it("a worker can write result_summary and artifact_ids on its claimed step", () => {
    const h = base();
    const w = h.claimWith("a");
    h.ok({ type: "update_step", step_id: "a", status: "running", result_summary: "half", artifact_ids: ["art_1"] }, w);
    expect(st(h, "a")).toMatchObject({ result_summary: "half", artifact_ids: ["art_1"] });
    h.ok({ type: "update_step", step_id: "a", status: "completed", result_summary: "done", artifact_ids: ["art_1", "art_2"] }, w);
    expect(st(h, "a")).toMatchObject({ status: "completed", result_summary: "done", artifact_ids: ["art_1", "art_2"] });
    expect(attemptsOf(h, "a")[0]!.result_summary).toBe("done");
  });

  it("a worker cannot change other steps", () => {
    const h = base();
    const w1 = h.claimWith("a");
    const w2 = h.claimWith("c");
    rejects(h, { type: "update_step", step_id: "c", status: "completed" }, w1, "permission_denied"); // held by another run
    rejects(h, { type: "update_step", step_id: "d", status: "running" }, w1, "permission_denied"); // ready, held by nobody
    rejects(h, { type: "update_step", step_id: "b", status: "failed" }, w1, "permission_denied"); // pending
    rejects(h, { type: "append_progress", step_id: "c", summary: "mine now" }, w1, "permission_denied");
    expect(st(h, "c")).toMatchObject({ status: "claimed", claimed_by_run_id: w2.run_id });
  });

  it.each([
    ["add_step", { op: "add_step", step: step("x") }],
    ["delete_step", { op: "delete_step", step_id: "d" }],
    ["add_dependency", { op: "add_dependency", step_id: "d", depends_on_step_id: "c" }],
    ["remove_dependency", { op: "remove_dependency", step_id: "b", depends_on_step_id: "a" }],
    ["update_step depends_on_step_ids", { op: "update_step", step_id: "b", fields: { depends_on_step_ids: [] } }],
    ["cancel_step", { op: "cancel_step", step_id: "d" }],
  ])("a worker cannot change the DAG topology (%s)", (_n, op) => {
    const h = base();
    const w = h.claimWith("a");
    rejects(h, { type: "update_task", ops: [op] }, w, "tool_not_available");
    expect([...h.state.steps.keys()]).toEqual(["a", "b", "c", "d"]);
    expect(st(h, "b").depends_on_step_ids).toEqual(["a"]);
  });
});

// ───────────────────────────────────────────────────────────────────────────────────────────────
describe("Task Tools", () => {
  it("task tools change the in-memory DAG and append every change to the WAL", () => {
    const h = base();
    const w = h.claimWith("a");
    h.ok({ type: "update_step", step_id: "a", status: "completed" }, w);
    h.ok({ type: "update_task", ops: [{ op: "add_step", step: step("e", ["b"]) }] });
    expect(h.wal.map((e) => e.wal_seq)).toEqual(h.wal.map((_, i) => i + 1));
    expect(h.state.last_wal_seq).toBe(h.wal.length);
    expect(replay(h.wal)).toEqual(h.state);
    expect(h.status("a")).toBe("completed");
    expect(h.status("e")).toBe("pending");
  });

  it("every event carries the actor and session of the run context", () => {
    const h = base();
    for (const e of h.wal) expect(e).toMatchObject({ session_id: SESSION, actor_agent_id: "orch", actor_run_id: "orch_run", task_id: TASK });
    const w = h.dispatch({ agent_id: "worker_x" });
    const d = h.ok({ type: "claim_step", step_id: "a" }, w);
    expect(d.events[0]).toMatchObject({ session_id: SESSION, actor_agent_id: "worker_x", actor_run_id: w.run_id });
  });

  it.each([
    ["actor_agent_id", { actor_agent_id: "orch" }],
    ["actor_run_id", { actor_run_id: "orch_run" }],
    ["session_id", { session_id: SESSION }],
    ["actor", { actor: { role: "orchestrator", agent_id: "orch" } }],
  ])("actor fields in a command body (%s) are rejected and cannot change who acts", (_n, field) => {
    const h = base();
    const w = h.claimWith("a");
    // A worker claiming to be the orchestrator gets nothing.
    rejects(h, { type: "update_task", ops: [{ op: "update_task", title: "Mine" }], ...field }, w, "validation_error");
    rejects(h, { type: "complete_task", ...field }, w, "validation_error");
    // Even its own allowed tools refuse the field.
    rejects(h, { type: "update_step", step_id: "a", status: "running", ...field }, w, "validation_error");
    rejects(h, { type: "claim_next", ...field }, h.dispatch(), "validation_error");
    // And the orchestrator cannot write under another name.
    rejects(h, { type: "update_task", ops: [{ op: "update_task", title: "X" }], ...field }, orchestrator, "validation_error");
    expect(h.state.task!.title).toBe("Plan");
    const d = h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
    expect(d.events[0]).toMatchObject({ actor_agent_id: w.agent_id, actor_run_id: w.run_id });
  });

  describe("agent.task_create", () => {
    it.each([
      ["a worker", ghost, "tool_not_available"],
      ["an observer", observer, "tool_not_available"],
    ])("only the orchestrator may use it (%s gets %s)", (_n, actor, code) => {
      const h = new Harness();
      rejects(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "P", steps: [] }, actor, code);
    });

    it("takes the whole DAG: every step is created at once with its defaults", () => {
      const h = new Harness();
      h.create([step("a"), step("b", ["a"], { required: false, worker_pool_id: "gpu" }), step("c", ["a", "b"])]);
      expect([...h.state.steps.keys()]).toEqual(["a", "b", "c"]);
      expect(st(h, "a")).toMatchObject({ required: true, worker_pool_id: "default", depends_on_step_ids: [], status: "ready", title: "Step a", summary: "Do a" });
      expect(st(h, "b")).toMatchObject({ required: false, worker_pool_id: "gpu", depends_on_step_ids: ["a"], status: "pending" });
      expect(st(h, "c")).toMatchObject({ depends_on_step_ids: ["a", "b"], status: "pending" });
      expect(h.state.task).toMatchObject({ task_id: TASK, wal_name: "plan", title: "Plan", created_by_agent_id: "orch", created_by_run_id: "orch_run" });
    });

    it.each(["A", "a/b", "..", ".hidden", "", "x".repeat(65), "a b", "ä"])("validates step ids: %j is a validation_error", (bad) => {
      const h = new Harness();
      rejects(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "P", steps: [step(bad)] }, orchestrator, "validation_error");
      rejects(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "P", steps: [step("a", [bad])] }, orchestrator, "validation_error");
    });

    it("validates dependencies: a dependency on no step is unknown_dependency", () => {
      const h = new Harness();
      const e = rejects(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "P", steps: [step("a"), step("b", ["zz"])] }, orchestrator, "unknown_dependency");
      expect(e.details).toMatchObject({ step_id: "b", depends_on_step_id: "zz" });
    });

    it.each([
      ["self loop", [step("a", ["a"])]],
      ["two-step loop", [step("a", ["b"]), step("b", ["a"])]],
      ["loop behind a root", [step("r"), step("a", ["r", "c"]), step("b", ["a"]), step("c", ["b"])]],
    ])("checks for cycles: %s is dependency_cycle", (_n, steps) => {
      const h = new Harness();
      rejects(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "P", steps }, orchestrator, "dependency_cycle");
    });

    it("checks for duplicate nodes: a repeated step id is duplicate_step", () => {
      const h = new Harness();
      rejects(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "P", steps: [step("a"), step("b"), step("a")] }, orchestrator, "duplicate_step");
    });

    it.each(["step_id", "title", "summary", "depends_on_step_ids"])("checks required fields: a step without %s is a validation_error", (field) => {
      const h = new Harness();
      const s: Record<string, unknown> = step("a");
      delete s[field];
      rejects(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "P", steps: [s] }, orchestrator, "validation_error");
    });

    it.each(["task_id", "wal_name", "title", "steps"])("checks required task fields: a task without %s is a validation_error", (field) => {
      const h = new Harness();
      const cmd: Record<string, unknown> = { type: "create_task", task_id: TASK, wal_name: "plan", title: "P", steps: [step("a")] };
      delete cmd[field];
      rejects(h, cmd, orchestrator, "validation_error");
    });

    it("creates the in-memory DAG and writes task_created first", () => {
      const h = new Harness();
      const d = h.create([step("a"), step("b", ["a"]), step("c")]);
      expect(h.types(d)).toEqual(["task_created", "task_step_ready", "task_step_ready", "task_running"]);
      expect(d.events.map((e) => e.step_id)).toEqual([null, "a", "c", null]);
      expect(d.events[0]!.payload).toMatchObject({ task: { task_id: TASK, wal_name: "plan" }, steps: [{ step_id: "a" }, { step_id: "b" }, { step_id: "c" }] });
      expect(h.state.task!.status).toBe("running");
      expect(replay(h.wal)).toEqual(h.state);
    });
  });

  describe("agent.task_update", () => {
    it("only the orchestrator may use it", () => {
      const h = base();
      const w = h.claimWith("a");
      const cmd = { type: "update_task", ops: [{ op: "update_task", title: "T" }] };
      rejects(h, cmd, w, "tool_not_available");
      rejects(h, cmd, observer, "tool_not_available");
      rejects(h, cmd, systemCaller, "tool_not_available");
      rejects(h, cmd, stranger, "permission_denied");
      expect(typesOf(h, cmd)).toEqual(["task_updated"]);
    });

    it("changes task and step content, dependencies, required and worker_pool_id", () => {
      const h = base();
      typesOf(h, {
        type: "update_task",
        ops: [
          { op: "update_task", title: "T2", summary: "S2" },
          { op: "update_step", step_id: "c", fields: { title: "C2", summary: "CS2", depends_on_step_ids: ["d"], required: false, worker_pool_id: "gpu" } },
        ],
      });
      expect(h.state.task).toMatchObject({ title: "T2", summary: "S2" });
      expect(st(h, "c")).toMatchObject({ title: "C2", summary: "CS2", depends_on_step_ids: ["d"], required: false, worker_pool_id: "gpu", status: "pending" });
    });

    it("several changes go in one submission: steps added, dependencies changed and steps cancelled together", () => {
      const h = base();
      const d = h.ok({
        type: "update_task",
        ops: [
          { op: "add_step", step: step("x") },
          { op: "add_step", step: step("y", ["x"]) },
          { op: "add_dependency", step_id: "c", depends_on_step_id: "a" },
          { op: "remove_dependency", step_id: "b", depends_on_step_id: "a" },
          { op: "cancel_step", step_id: "d", reason: "not needed" },
          { op: "cancel_step", step_id: "y" },
        ],
      });
      expect(h.types(d)).toEqual(["task_updated", "task_step_cancelled", "task_step_cancelled", "task_step_ready", "task_step_pending", "task_step_ready"]);
      expect(d.events.slice(1).map((e) => e.step_id)).toEqual(["d", "y", "b", "c", "x"]);
      expect([h.status("b"), h.status("c"), h.status("d"), h.status("x"), h.status("y")]).toEqual(["ready", "pending", "cancelled", "ready", "cancelled"]);
      expect(replay(h.wal)).toEqual(h.state);
    });

    it("takes structured patch ops, never a whole-DAG replacement", () => {
      const h = base();
      rejects(h, { type: "update_task", steps: [step("a")] }, orchestrator, "validation_error");
      rejects(h, { type: "update_task", ops: [], steps: [step("a")] }, orchestrator, "validation_error");
      rejects(h, { type: "update_task", ops: [] }, orchestrator, "validation_error");
      rejects(h, { type: "update_task", ops: [{ op: "replace_dag", steps: [step("a")] }] }, orchestrator, "validation_error");
      rejects(h, { type: "update_task", ops: [{ op: "reorder", step_id: "a" }] }, orchestrator, "validation_error");
    });

    it("update_task changes the task title and summary", () => {
      const h = base();
      const d = h.ok({ type: "update_task", ops: [{ op: "update_task", title: "New" }, { op: "update_task", summary: "Sum" }] });
      expect(h.types(d)).toEqual(["task_updated"]);
      expect(h.state.task).toMatchObject({ title: "New", summary: "Sum" });
      rejects(h, { type: "update_task", ops: [{ op: "update_task" }] }, orchestrator, "validation_error");
      rejects(h, { type: "update_task", ops: [{ op: "update_task", title: "" }] }, orchestrator, "validation_error");
      rejects(h, { type: "update_task", ops: [{ op: "update_task", title: "x", status: "completed" }] }, orchestrator, "validation_error");
    });

    it("add_step takes a whole step (step_id, title, summary, depends_on_step_ids), required defaults true, worker_pool_id optional", () => {
      const h = base();
      for (const field of ["step_id", "title", "summary", "depends_on_step_ids"]) {
        const s: Record<string, unknown> = step("x");
        delete s[field];
        rejects(h, { type: "update_task", ops: [{ op: "add_step", step: s }] }, orchestrator, "validation_error");
      }
      const d = h.ok({
        type: "update_task",
        ops: [
          { op: "add_step", step: step("x"), reason: "new work" },
          { op: "add_step", step: step("y", ["a"], { required: false, worker_pool_id: "gpu" }) },
        ],
      });
      expect(h.types(d)).toEqual(["task_updated", "task_step_ready"]);
      expect(d.events[1]!.step_id).toBe("x");
      expect(st(h, "x")).toMatchObject({ required: true, worker_pool_id: "default", status: "ready" });
      expect(st(h, "y")).toMatchObject({ required: false, worker_pool_id: "gpu", status: "pending", depends_on_step_ids: ["a"] });
      rejects(h, { type: "update_task", ops: [{ op: "add_step", step: step("a") }] }, orchestrator, "duplicate_step");
      rejects(h, { type: "update_task", ops: [{ op: "add_step", step: step("z", ["nope"]) }] }, orchestrator, "unknown_dependency");
    });

    it("update_step changes only title, summary, depends_on_step_ids, required and worker_pool_id", () => {
      const h = base();
      h.ok({ type: "update_task", ops: [{ op: "update_step", step_id: "b", fields: { title: "B2", summary: "S", depends_on_step_ids: ["c", "d"], required: false, worker_pool_id: "io" } }] });
      expect(st(h, "b")).toMatchObject({ title: "B2", summary: "S", depends_on_step_ids: ["c", "d"], required: false, worker_pool_id: "io", status: "pending" });
      for (const fields of [{ status: "ready" }, { result_summary: "x" }, { artifact_ids: [] }, { claimed_by_run_id: "r" }, { lease_expires_at: iso(T0) }, {}]) {
        rejects(h, { type: "update_task", ops: [{ op: "update_step", step_id: "b", fields }] }, orchestrator, "validation_error");
      }
      rejects(h, { type: "update_task", ops: [{ op: "update_step", step_id: "nope", fields: { title: "x" } }] }, orchestrator, "not_found");
    });

    it("delete_step removes a step; a step others depend on is step_has_dependents", () => {
      const h = base();
      const e = rejects(h, { type: "update_task", ops: [{ op: "delete_step", step_id: "a" }] }, orchestrator, "step_has_dependents");
      expect(e.details).toMatchObject({ step_id: "a", dependents: ["b"] });
      expect(h.types(h.ok({ type: "update_task", ops: [{ op: "delete_step", step_id: "d", reason: "dup" }] }))).toEqual(["task_updated"]);
      expect(h.state.steps.has("d")).toBe(false);
      rejects(h, { type: "update_task", ops: [{ op: "delete_step", step_id: "d" }] }, orchestrator, "not_found");
    });

    it("add_dependency adds one edge; a ready step whose new dependency is not completed goes back to pending", () => {
      const h = base();
      const d = h.ok({ type: "update_task", ops: [{ op: "add_dependency", step_id: "d", depends_on_step_id: "c" }] });
      expect(h.types(d)).toEqual(["task_updated", "task_step_pending"]);
      expect(st(h, "d")).toMatchObject({ depends_on_step_ids: ["c"], status: "pending" });
      rejects(h, { type: "update_task", ops: [{ op: "add_dependency", step_id: "c", depends_on_step_id: "d" }] }, orchestrator, "dependency_cycle");
      rejects(h, { type: "update_task", ops: [{ op: "add_dependency", step_id: "c", depends_on_step_id: "nope" }] }, orchestrator, "unknown_dependency");
      rejects(h, { type: "update_task", ops: [{ op: "add_dependency", step_id: "c" }] }, orchestrator, "validation_error");
    });

    it("remove_dependency removes one edge; a pending step whose dependencies are then completed becomes ready", () => {
      const h = base();
      const d = h.ok({ type: "update_task", ops: [{ op: "remove_dependency", step_id: "b", depends_on_step_id: "a" }] });
      expect(h.types(d)).toEqual(["task_updated", "task_step_ready"]);
      expect(st(h, "b")).toMatchObject({ depends_on_step_ids: [], status: "ready" });
      rejects(h, { type: "update_task", ops: [{ op: "remove_dependency", step_id: "b", depends_on_step_id: "a" }] }, orchestrator, "validation_error");
    });

    it("cancel_step cancels a pending or ready step with its reason (task_step_cancelled)", () => {
      const h = base();
      const d = h.ok({ type: "update_task", ops: [{ op: "cancel_step", step_id: "b", reason: "drop" }, { op: "cancel_step", step_id: "c" }] });
      expect(h.types(d)).toEqual(["task_updated", "task_step_cancelled", "task_step_cancelled"]);
      expect(d.events[1]!.payload).toEqual({ reason: "drop", attempt_id: null, run_id: null });
      expect(d.events[2]!.payload).toEqual({ reason: null, attempt_id: null, run_id: null });
      expect(st(h, "b")).toMatchObject({ status: "cancelled", status_reason: "drop" });
      h.claimWith("d");
      rejects(h, { type: "update_task", ops: [{ op: "cancel_step", step_id: "d" }] }, orchestrator, "invalid_transition");
      rejects(h, { type: "update_task", ops: [{ op: "cancel_step", step_id: "b" }] }, orchestrator, "invalid_transition");
    });

    it("reopen_step returns a failed or blocked step to pending with its reason (task_step_reopened), then readiness", () => {
      const h = base();
      const w1 = h.claimWith("c");
      h.ok({ type: "update_step", step_id: "c", status: "failed" }, w1);
      const w2 = h.claimWith("d");
      h.ok({ type: "update_step", step_id: "d", status: "blocked" }, w2);
      const d = h.ok({ type: "update_task", ops: [{ op: "reopen_step", step_id: "c", reason: "retry" }, { op: "reopen_step", step_id: "d" }] });
      expect(h.types(d)).toEqual(["task_updated", "task_step_reopened", "task_step_reopened", "task_step_ready", "task_step_ready"]);
      expect(d.events[1]!.payload).toEqual({ reason: "retry" });
      expect([h.status("c"), h.status("d")]).toEqual(["ready", "ready"]);
      rejects(h, { type: "update_task", ops: [{ op: "reopen_step", step_id: "a" }] }, orchestrator, "invalid_transition");
      rejects(h, { type: "update_task", ops: [{ op: "reopen_step", step_id: "b" }] }, orchestrator, "invalid_transition");
    });

    it("applies ops to a scratch DAG in the given order and never reorders them", () => {
      const h = base();
      // Adding x before depending on it works; the other way round does not.
      rejects(
        h,
        { type: "update_task", ops: [{ op: "add_dependency", step_id: "c", depends_on_step_id: "x" }, { op: "add_step", step: step("x") }] },
        orchestrator,
        "unknown_dependency",
      );
      h.ok({ type: "update_task", ops: [{ op: "add_step", step: step("x") }, { op: "add_dependency", step_id: "c", depends_on_step_id: "x" }] });
      expect(st(h, "c").depends_on_step_ids).toEqual(["x"]);
      // Delete then re-add the same id works; re-add then delete is a duplicate.
      rejects(h, { type: "update_task", ops: [{ op: "add_step", step: step("d", [], { title: "D2" }) }, { op: "delete_step", step_id: "d" }] }, orchestrator, "duplicate_step");
      h.ok({ type: "update_task", ops: [{ op: "delete_step", step_id: "d" }, { op: "add_step", step: step("d", [], { title: "D2" }) }] });
      expect(st(h, "d").title).toBe("D2");
      // The same two ops in either order give different results: cancel then reopen is refused (cancelled is terminal).
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "failed" }, w);
      rejects(h, { type: "update_task", ops: [{ op: "reopen_step", step_id: "a" }, { op: "reopen_step", step_id: "a" }] }, orchestrator, "invalid_transition");
      const d = h.ok({ type: "update_task", ops: [{ op: "reopen_step", step_id: "a" }, { op: "cancel_step", step_id: "a" }] });
      expect(h.types(d)).toEqual(["task_updated", "task_step_reopened", "task_step_cancelled"]);
      expect(h.status("a")).toBe("cancelled");
      expect(replay(h.wal)).toEqual(h.state);
    });

    it("validates the final DAG as a whole, after every op is applied", () => {
      const h = base();
      // A cycle that a later op removes is fine.
      h.ok({
        type: "update_task",
        ops: [
          { op: "add_dependency", step_id: "a", depends_on_step_id: "b" },
          { op: "remove_dependency", step_id: "b", depends_on_step_id: "a" },
        ],
      });
      expect(st(h, "a").depends_on_step_ids).toEqual(["b"]);
      expect([h.status("a"), h.status("b")]).toEqual(["pending", "ready"]);
      // A step may name a dependency added later in the same patch.
      h.ok({ type: "update_task", ops: [{ op: "add_step", step: step("x", ["y"]) }, { op: "add_step", step: step("y") }] });
      expect([h.status("x"), h.status("y")]).toEqual(["pending", "ready"]);
      // A cycle only the final DAG has is refused.
      rejects(
        h,
        { type: "update_task", ops: [{ op: "add_step", step: step("p", ["q"]) }, { op: "add_step", step: step("q", ["p"]) }] },
        orchestrator,
        "dependency_cycle",
      );
      // A dependency deleted by a later op is caught on the final DAG.
      rejects(
        h,
        { type: "update_task", ops: [{ op: "add_step", step: step("z") }, { op: "update_step", step_id: "c", fields: { depends_on_step_ids: ["z"] } }, { op: "update_step", step_id: "c", fields: { depends_on_step_ids: ["zz"] } }] },
        orchestrator,
        "unknown_dependency",
      );
    });

    it("is atomic: one failing op writes nothing and leaves the DAG as it was", () => {
      const h = base();
      const w = h.claimWith("c");
      h.ok({ type: "update_step", step_id: "c", status: "completed" }, w);
      const before = replay(h.wal);
      const e = rejects(
        h,
        {
          type: "update_task",
          ops: [
            { op: "update_task", title: "Changed" },
            { op: "add_step", step: step("e", ["a"]) },
            { op: "cancel_step", step_id: "d" },
            { op: "remove_dependency", step_id: "b", depends_on_step_id: "a" },
            { op: "delete_step", step_id: "c" }, // completed: cannot be deleted
          ],
        },
        orchestrator,
        "invalid_transition",
      );
      expect(e.details).toMatchObject({ op_index: 4 });
      expect(h.state).toEqual(before);
      expect(h.state.task!.title).toBe("Plan");
      expect(h.state.steps.has("e")).toBe(false);
      expect([h.status("b"), h.status("d")]).toEqual(["pending", "ready"]);
    });

    it("each successful update writes exactly one task_updated whose payload holds the patch list", () => {
      const h = base();
      const ops = [
        { op: "update_task", title: "T2" },
        { op: "add_step", step: { ...step("x"), required: false, worker_pool_id: "default" } },
        { op: "update_step", step_id: "b", fields: { summary: "new" } },
        { op: "add_dependency", step_id: "x", depends_on_step_id: "a" },
        { op: "remove_dependency", step_id: "x", depends_on_step_id: "a" },
        { op: "cancel_step", step_id: "d", reason: "no" },
        { op: "delete_step", step_id: "d" },
      ];
      const d = h.ok({ type: "update_task", ops });
      expect(byType(d.events, "task_updated")).toHaveLength(1);
      expect(d.events[0]!.event_type).toBe("task_updated");
      expect(d.events[0]!.payload).toEqual({ ops, updated_after_dispatch: [] });
      // The cancel of a step deleted later in the same patch is moot.
      expect(h.types(d)).toEqual(["task_updated", "task_step_ready"]);
      expect(replay(h.wal)).toEqual(h.state);
      // Later ops on the same step never rewrite an earlier op as recorded.
      const ops2 = [
        { op: "update_step", step_id: "b", fields: { depends_on_step_ids: ["c"] } },
        { op: "add_dependency", step_id: "b", depends_on_step_id: "x" },
        { op: "add_step", step: { ...step("y"), required: true, worker_pool_id: "default" } },
        { op: "add_dependency", step_id: "y", depends_on_step_id: "b" },
      ];
      const d2 = h.ok({ type: "update_task", ops: ops2 });
      expect(d2.events[0]!.payload).toEqual({ ops: ops2, updated_after_dispatch: [] });
      expect(st(h, "b").depends_on_step_ids).toEqual(["c", "x"]);
      expect(st(h, "y").depends_on_step_ids).toEqual(["b"]);
      expect(replay(h.wal)).toEqual(h.state);
    });
  });

  describe("agent.task_query_steps", () => {
    it("the orchestrator can query any step of an active task", () => {
      const h = new Harness();
      h.create([step("a"), step("b", ["a"]), step("g", [], { worker_pool_id: "gpu" })]);
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      expect(ids(q(h, orchestrator))).toEqual(["a", "b", "g"]);
      expect(q(h, orchestrator).steps.map((s) => s.status)).toEqual(["running", "pending", "ready"]);
    });

    it("a terminal task answers queries read-only and takes no further step update", () => {
      const h = base();
      const w = h.claimWith("a");
      h.ok({ type: "fail_task", reason: "stop" });
      expect(ids(q(h, orchestrator, { include_terminal_steps: true }))).toEqual(["a", "b", "c", "d"]);
      expect(ids(q(h, orchestrator))).toEqual([]);
      expect(ids(q(h, w, { include_terminal_steps: true, statuses: ["failed"] }))).toEqual(["a", "b", "c", "d"]);
      rejects(h, { type: "update_step", step_id: "a", status: "completed" }, w, "task_terminal");
      rejects(h, { type: "update_step", step_id: "c", status: "completed" }, orchestrator, "task_terminal");
      rejects(h, { type: "claim_step", step_id: "c" }, w, "task_terminal");
      rejects(h, { type: "claim_next" }, w, "task_terminal");
      rejects(h, { type: "append_progress", step_id: "a", summary: "late" }, w, "task_terminal");
    });

    it("a worker can query the steps visible to it", () => {
      const h = base();
      const w = h.dispatch();
      const p = q(h, w);
      expect(ids(p)).toEqual(["a", "c", "d"]);
      expect(p.steps.every((s) => s.status === "ready")).toBe(true);
    });

    it("a worker run queries only the task its dispatch named", () => {
      const h = base();
      const w = h.dispatch();
      expect(qErr(h, { ...w, task_id: "task_other" })).toBe("permission_denied");
      expect(qErr(h, { ...w, session_id: "sess_other" })).toBe("permission_denied");
      expect(qErr(h, stranger)).toBe("permission_denied");
    });

    it("filters by several statuses at once", () => {
      const h = base();
      const w = h.claimWith("c");
      h.ok({ type: "update_step", step_id: "c", status: "running" }, w);
      expect(ids(q(h, orchestrator, { statuses: ["pending", "running"] }))).toEqual(["b", "c"]);
      expect(ids(q(h, orchestrator, { statuses: ["ready"] }))).toEqual(["a", "d"]);
      expect(ids(q(h, orchestrator, { statuses: ["claimed", "blocked"] }))).toEqual([]);
    });

    it("filters by worker_pool_id", () => {
      const h = new Harness();
      h.create([step("a"), step("g1", [], { worker_pool_id: "gpu" }), step("b", ["a"]), step("g2", ["a"], { worker_pool_id: "gpu" })]);
      expect(ids(q(h, orchestrator, { worker_pool_id: "gpu" }))).toEqual(["g1", "g2"]);
      expect(ids(q(h, orchestrator, { worker_pool_id: "gpu", statuses: ["ready"] }))).toEqual(["g1"]);
      expect(ids(q(h, orchestrator, { worker_pool_id: "default" }))).toEqual(["a", "b"]);
      // A worker cannot widen its pool by asking for another one.
      const w = h.dispatch();
      expect(ids(q(h, w, { worker_pool_id: "gpu" }))).toEqual([]);
    });

    it("filters by claimed_by_agent_id", () => {
      const h = base();
      const w1 = h.claimWith("a", { agent_id: "alice" });
      h.claimWith("c", { agent_id: "bob" });
      expect(ids(q(h, orchestrator, { claimed_by_agent_id: "alice" }))).toEqual(["a"]);
      expect(ids(q(h, orchestrator, { claimed_by_agent_id: "bob" }))).toEqual(["c"]);
      expect(ids(q(h, w1, { claimed_by_agent_id: "alice", statuses: ["claimed"] }))).toEqual(["a"]);
    });

    it("leaves out completed, failed and cancelled steps by default", () => {
      const h = new Harness();
      h.create([step("a"), step("b"), step("c"), step("d")]);
      h.complete("a");
      const w = h.claimWith("b");
      h.ok({ type: "update_step", step_id: "b", status: "failed" }, w);
      h.ok({ type: "update_task", ops: [{ op: "cancel_step", step_id: "c" }] });
      expect(ids(q(h, orchestrator))).toEqual(["d"]);
      expect(q(h, orchestrator).total).toBe(1);
    });

    it("returns terminal steps only with include_terminal_steps=true", () => {
      const h = new Harness();
      h.create([step("a"), step("b"), step("c"), step("d")]);
      h.complete("a");
      const w = h.claimWith("b");
      h.ok({ type: "update_step", step_id: "b", status: "failed" }, w);
      h.ok({ type: "update_task", ops: [{ op: "cancel_step", step_id: "c" }] });
      expect(ids(q(h, orchestrator, { include_terminal_steps: true }))).toEqual(["a", "b", "c", "d"]);
      expect(ids(q(h, orchestrator, { include_terminal_steps: true, statuses: ["completed", "cancelled"] }))).toEqual(["a", "c"]);
      expect(qErr(h, orchestrator, { statuses: ["completed"] })).toBe("validation_error");
      expect(ids(q(h, orchestrator, { include_terminal_steps: false }))).toEqual(["d"]);
    });

    it("pages with limit and offset, limit 50 by default", () => {
      const h = new Harness();
      h.create(Array.from({ length: 60 }, (_, i) => step(`s${String(i).padStart(2, "0")}`)));
      const first = q(h, orchestrator);
      expect(first).toMatchObject({ total: 60, limit: 50, offset: 0, next_offset: 50 });
      expect(first.steps).toHaveLength(50);
      expect(first.steps[0]!.step_id).toBe("s00");
      const rest = q(h, orchestrator, { offset: 50 });
      expect(rest).toMatchObject({ total: 60, limit: 50, offset: 50, next_offset: null });
      expect(ids(rest)).toEqual(Array.from({ length: 10 }, (_, i) => `s${50 + i}`));
      expect(ids(q(h, orchestrator, { limit: 3, offset: 7 }))).toEqual(["s07", "s08", "s09"]);
      expect(q(h, orchestrator, { limit: 3, offset: 7 }).next_offset).toBe(10);
    });

    it("orders by created_at ascending, never by status", () => {
      const h = new Harness();
      h.create([step("z"), step("m", ["z"]), step("a")]);
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      h.ok({ type: "update_task", ops: [{ op: "add_step", step: step("b") }] });
      expect(ids(q(h, orchestrator))).toEqual(["z", "m", "a", "b"]);
      // A deleted and re-added step is created again, so it moves to the end.
      h.ok({ type: "update_task", ops: [{ op: "delete_step", step_id: "m" }, { op: "add_step", step: step("m") }] });
      expect(ids(q(h, orchestrator))).toEqual(["z", "a", "b", "m"]);
      expect(ids(q(h, orchestrator, { statuses: ["ready"] }))).toEqual(["z", "b", "m"]);
    });

    it("a worker's ready query lists only its pool's ready steps, with completed dependencies and no live lease", () => {
      const h = new Harness();
      h.create([step("a"), step("b", ["a"]), step("c"), step("g", [], { worker_pool_id: "gpu" }), step("e")]);
      const other = h.claimWith("c");
      const w = h.dispatch();
      expect(ids(q(h, w))).toEqual(["a", "e"]); // not b (dependency), c (leased), g (other pool)
      // Only ready steps, even when more are asked for by pool.
      expect(ids(q(h, w, { worker_pool_id: "default" }))).toEqual(["a", "e"]);
      h.ok({ type: "update_step", step_id: "c", status: "running" }, other);
      expect(ids(q(h, w))).toEqual(["a", "e"]);
    });

    it("a worker's ready query returns 5 candidates by default", () => {
      const h = new Harness();
      h.create(Array.from({ length: 8 }, (_, i) => step(`s${i}`)));
      const w = h.dispatch();
      const p = q(h, w);
      expect(p).toMatchObject({ limit: 5, total: 8, next_offset: 5 });
      expect(ids(p)).toEqual(["s0", "s1", "s2", "s3", "s4"]);
      expect(ids(q(h, w, { limit: 10 }))).toHaveLength(8);
      expect(q(h, orchestrator).limit).toBe(50);
    });

    it("allowed_step_ids narrows what a worker run may query", () => {
      const h = base();
      const w = h.dispatch({ allowed_step_ids: ["d", "b"] });
      expect(ids(q(h, w))).toEqual(["d"]);
      expect(ids(q(h, w, { statuses: ["pending", "ready"] }))).toEqual(["b", "d"]);
    });

    it("allowed_step_ids is a hard scope: a step outside it can be neither queried nor claimed", () => {
      const h = base();
      const w = h.dispatch({ allowed_step_ids: ["d"] });
      expect(ids(q(h, w, { statuses: ["ready"] }))).toEqual(["d"]);
      rejects(h, { type: "claim_step", step_id: "a" }, w, "permission_denied");
      expect(h.ok({ type: "claim_next" }, w).value).toMatchObject({ kind: "claimed", step_id: "d" });
    });

    it("omitted allowed_step_ids means no limit by step id", () => {
      const h = base();
      const w = h.dispatch();
      expect(runOf(h, w).allowed_step_ids).toBeNull();
      expect(ids(q(h, w))).toEqual(["a", "c", "d"]);
    });

    it("an empty allowed_step_ids is a validation_error", () => {
      const h = base();
      const e = rejects(h, { type: "dispatch_worker", allowed_step_ids: [] }, orchestrator, "validation_error");
      expect(e.message).toContain("allowed_step_ids");
      expect(h.state.runs.size).toBe(0);
    });

    it("duplicate ids in allowed_step_ids are removed", () => {
      const h = base();
      const w = h.dispatch({ allowed_step_ids: ["c", "a", "c", "a"] });
      expect(runOf(h, w).allowed_step_ids).toEqual(["c", "a"]);
      expect(byType(h.wal, "worker_dispatched").at(-1)!.payload).toMatchObject({ allowed_step_ids: ["c", "a"] });
      expect(ids(q(h, w))).toEqual(["a", "c"]);
    });

    it("allowed_step_ids may name steps that are not ready: a ready query returns only the ready ones", () => {
      const h = base();
      const w = h.dispatch({ allowed_step_ids: ["b", "c"] }); // b is pending: dispatch is still fine
      expect(ids(q(h, w))).toEqual(["c"]);
    });

    it("no ready step within allowed_step_ids: claim-next answers no_step_claimed and writes nothing", () => {
      const h = base();
      const w = h.dispatch({ allowed_step_ids: ["b"] });
      expect(ids(q(h, w))).toEqual([]);
      const before = h.wal.length;
      const d = h.ok({ type: "claim_next" }, w);
      expect(d.events).toEqual([]);
      expect(d.value).toEqual({ kind: "no_step_claimed", reason: "no_ready_step" });
      expect(h.wal.length).toBe(before);
      expect(runOf(h, w)).toMatchObject({ status: "active", claims_used: 0, current_step_id: null });
    });

    it("expired leases are reconciled before a query, so an expired step is a candidate again", () => {
      const h = base();
      h.claimWith("a");
      const w = h.dispatch();
      expect(ids(q(h, w))).toEqual(["c", "d"]);
      h.now = T0 + LEASE_MS;
      expect(typesOf(h, { type: "reconcile_leases" }, w)).toEqual(["task_step_lease_expired", "task_step_ready"]);
      expect(ids(q(h, w))).toEqual(["a", "c", "d"]);
    });
  });

  describe("agent.task_claim_step", () => {
    it.each([
      ["the orchestrator", orchestrator],
      ["an observer", observer],
      ["a system caller", systemCaller],
    ])("is for worker runs: %s gets tool_not_available", (_n, actor) => {
      const h = base();
      rejects(h, { type: "claim_step", step_id: "a" }, actor, "tool_not_available");
      rejects(h, { type: "claim_next" }, actor, "tool_not_available");
    });

    it("a worker run claims only within the task its dispatch named", () => {
      const h = base();
      const w = h.dispatch();
      rejects(h, { type: "claim_step", step_id: "a" }, { ...w, task_id: "task_other" }, "permission_denied");
      rejects(h, { type: "claim_next" }, { ...w, task_id: "task_other" }, "permission_denied");
      rejects(h, { type: "claim_step", step_id: "a" }, { ...w, agent_id: "impostor" }, "permission_denied");
    });

    it("one claim per run: a run holding a step gets step_already_claimed_by_run on a second claim", () => {
      const h = base();
      const w = h.claimWith("a");
      const e = rejects(h, { type: "claim_step", step_id: "c" }, w, "step_already_claimed_by_run");
      expect(e.details).toMatchObject({ step_id: "a" });
      rejects(h, { type: "claim_next" }, w, "step_already_claimed_by_run");
      h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      rejects(h, { type: "claim_step", step_id: "d" }, w, "step_already_claimed_by_run");
    });

    it("a single-step run that has finished its claim gets step_already_claimed_by_run again", () => {
      const h = base();
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "completed" }, w);
      rejects(h, { type: "claim_step", step_id: "c" }, w, "step_already_claimed_by_run");
    });

    it("claims only ready, visible, dependency-complete, lease-free steps", () => {
      const h = new Harness();
      h.create([step("a"), step("b", ["a"]), step("g", [], { worker_pool_id: "gpu" }), step("c"), step("k")]);
      h.claimWith("c");
      h.complete("k");
      const w = h.dispatch();
      rejects(h, { type: "claim_step", step_id: "b" }, w, "invalid_transition"); // dependency not completed
      rejects(h, { type: "claim_step", step_id: "g" }, w, "permission_denied"); // other pool
      rejects(h, { type: "claim_step", step_id: "c" }, w, "step_already_claimed"); // live lease
      rejects(h, { type: "claim_step", step_id: "k" }, w, "invalid_transition"); // completed
      rejects(h, { type: "claim_step", step_id: "nope" }, w, "not_found");
      expect(typesOf(h, { type: "claim_step", step_id: "a" }, w)).toEqual(["task_step_claimed"]);
    });

    it("with allowed_step_ids a run claims only steps inside them", () => {
      const h = base();
      const w = h.dispatch({ allowed_step_ids: ["c"] });
      rejects(h, { type: "claim_step", step_id: "a" }, w, "permission_denied");
      rejects(h, { type: "claim_step", step_id: "d" }, w, "permission_denied");
      expect(typesOf(h, { type: "claim_step", step_id: "c" }, w)).toEqual(["task_step_claimed"]);
    });

    it("an allowed step that is not ready yet cannot be claimed, which is no dispatch validation error", () => {
      const h = base();
      const w = h.dispatch({ allowed_step_ids: ["b"] });
      rejects(h, { type: "claim_step", step_id: "b" }, w, "invalid_transition");
      expect(runOf(h, w).status).toBe("active");
      h.complete("a");
      expect(typesOf(h, { type: "claim_step", step_id: "b" }, w)).toEqual(["task_step_claimed"]);
    });

    it("a claim is atomic: of two runs claiming one step only one wins", () => {
      const h = base();
      const w1 = h.dispatch();
      const w2 = h.dispatch();
      // Both decide against the same state; the first to commit wins and the second sees the lease.
      h.ok({ type: "claim_step", step_id: "a" }, w1);
      const e = rejects(h, { type: "claim_step", step_id: "a" }, w2, "step_already_claimed");
      expect(e.details).toMatchObject({ step_id: "a", lease_expires_at: iso(T0 + LEASE_MS) });
      expect(byType(h.wal, "task_step_claimed")).toHaveLength(1);
      expect(st(h, "a").claimed_by_run_id).toBe(w1.run_id);
    });

    it("losing a claim race is normal: the loser's run is not failed and it claims another step", () => {
      const h = base();
      h.claimWith("a");
      const w = h.dispatch();
      rejects(h, { type: "claim_step", step_id: "a" }, w, "step_already_claimed");
      expect(runOf(h, w)).toMatchObject({ status: "active", claims_used: 0 });
      expect(ids(q(h, w))).toEqual(["c", "d"]);
      expect(typesOf(h, { type: "claim_step", step_id: "c" }, w)).toEqual(["task_step_claimed"]);
    });

    it("no claimable step: no_step_claimed is a normal success without events", () => {
      const h = new Harness();
      h.create([step("a"), step("b", ["a"])]);
      h.claimWith("a");
      const w = h.dispatch();
      const before = h.wal.length;
      const d = h.run({ type: "claim_next" }, w);
      expect(d).toEqual({ ok: true, events: [], value: { kind: "no_step_claimed", reason: "no_ready_step" } });
      expect(h.wal.length).toBe(before);
      expect(runOf(h, w).status).toBe("active");
    });

    it("step_already_claimed and no_step_claimed write nothing to the WAL", () => {
      const h = base();
      h.claimWith("a");
      const w = h.dispatch({ allowed_step_ids: ["a", "b"] });
      rejects(h, { type: "claim_step", step_id: "a" }, w, "step_already_claimed");
      const before = h.wal.length;
      expect(h.ok({ type: "claim_next" }, w).events).toEqual([]);
      expect(h.wal.length).toBe(before);
      expect(replay(h.wal)).toEqual(h.state);
    });

    it("a claim sets claimed_by_agent_id, claimed_by_run_id, lease_expires_at and status claimed, and writes task_step_claimed", () => {
      const h = base();
      h.now = T0 + 1234;
      const w = h.dispatch({ agent_id: "alice" });
      const d = h.ok({ type: "claim_step", step_id: "c" }, w);
      expect(h.types(d)).toEqual(["task_step_claimed"]);
      expect(d.events[0]).toMatchObject({ step_id: "c", payload: { run_id: w.run_id, agent_id: "alice", lease_expires_at: iso(T0 + 1234 + LEASE_MS), attempt_ordinal: 1 } });
      expect(d.value).toMatchObject({ kind: "claimed", step_id: "c" });
      expect(st(h, "c")).toMatchObject({ status: "claimed", claimed_by_agent_id: "alice", claimed_by_run_id: w.run_id, lease_expires_at: iso(T0 + 1234 + LEASE_MS) });
    });

    it("a claim does not start the step: only update_step(status=running) does", () => {
      const h = base();
      const w = h.claimWith("a");
      expect(h.status("a")).toBe("claimed");
      expect(h.wal.some((e) => e.event_type === "task_step_started")).toBe(false);
      expect(typesOf(h, { type: "update_step", step_id: "a", status: "running" }, w)).toEqual(["task_step_started"]);
      expect(h.status("a")).toBe("running");
    });

    it.each([
      ["blocked", ["task_step_blocked"]],
      ["completed", ["task_step_completed", "task_step_ready"]],
      ["failed", ["task_step_failed"]],
      ["cancelled", ["task_step_cancelled"]],
    ])("a worker may skip running: claimed goes straight to %s", (to, types) => {
      const h = base();
      const w = h.claimWith("a");
      expect(typesOf(h, { type: "update_step", step_id: "a", status: to }, w)).toEqual(types);
      expect(h.status("a")).toBe(to);
      expect(h.wal.some((e) => e.event_type === "task_step_started")).toBe(false);
    });

    it("a blocked task takes no claim: task_not_dispatchable", () => {
      const h = base();
      const w = h.dispatch();
      h.ok({ type: "block_task" });
      rejects(h, { type: "claim_step", step_id: "a" }, w, "task_not_dispatchable");
      rejects(h, { type: "claim_next" }, w, "task_not_dispatchable");
      rejects(h, { type: "dispatch_worker" }, orchestrator, "task_not_dispatchable");
    });

    describe("pooled runs (dispatch_worker max_steps > 1)", () => {
      it("claim again once the current step is terminal, one at a time", () => {
        const h = base();
        const w = h.dispatch({ max_steps: 3 });
        h.ok({ type: "claim_step", step_id: "a" }, w);
        h.ok({ type: "update_step", step_id: "a", status: "completed" }, w);
        expect(h.ok({ type: "claim_next" }, w).value).toMatchObject({ kind: "claimed", step_id: "b" });
        h.ok({ type: "update_step", step_id: "b", status: "failed" }, w);
        expect(typesOf(h, { type: "claim_step", step_id: "d" }, w)).toEqual(["task_step_claimed"]);
        expect(runOf(h, w)).toMatchObject({ claims_used: 3, current_step_id: "d" });
        expect(attemptsOf(h, "b")[0]!.run_id).toBe(w.run_id);
      });

      it("a second claim while holding a step is step_already_claimed_by_run", () => {
        const h = base();
        const w = h.dispatch({ max_steps: 5 });
        h.ok({ type: "claim_step", step_id: "a" }, w);
        rejects(h, { type: "claim_step", step_id: "c" }, w, "step_already_claimed_by_run");
        rejects(h, { type: "claim_next" }, w, "step_already_claimed_by_run");
        h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
        rejects(h, { type: "claim_step", step_id: "c" }, w, "step_already_claimed_by_run");
      });

      it("a spent budget: claim_step is step_already_claimed_by_run, claim_next is no_step_claimed", () => {
        const h = base();
        const w = h.dispatch({ max_steps: 2 });
        h.ok({ type: "claim_step", step_id: "a" }, w);
        h.ok({ type: "update_step", step_id: "a", status: "completed" }, w);
        h.ok({ type: "claim_step", step_id: "c" }, w);
        h.ok({ type: "update_step", step_id: "c", status: "blocked" }, w);
        const e = rejects(h, { type: "claim_step", step_id: "d" }, w, "step_already_claimed_by_run");
        expect(e.details).toMatchObject({ max_steps: 2 });
        const before = h.wal.length;
        expect(h.run({ type: "claim_next" }, w)).toEqual({ ok: true, events: [], value: { kind: "no_step_claimed", reason: "run_budget_spent" } });
        expect(h.wal.length).toBe(before);
      });
    });
  });

  describe("agent.task_update_step", () => {
    it.each([
      ["title", { title: "x" }],
      ["summary", { summary: "x" }],
      ["depends_on_step_ids", { depends_on_step_ids: [] }],
      ["worker_pool_id", { worker_pool_id: "gpu" }],
      ["required", { required: false }],
    ])("changes execution status and results only: %s is a validation_error for every agent", (_n, field) => {
      const h = base();
      const w = h.claimWith("a");
      rejects(h, { type: "update_step", step_id: "a", status: "running", ...field }, w, "validation_error");
      rejects(h, { type: "update_step", step_id: "a", status: "running", ...field }, orchestrator, "validation_error");
      rejects(h, { type: "update_step", step_id: "d", status: "blocked", ...field }, orchestrator, "validation_error");
    });

    it("the orchestrator may update the execution status and results of any step", () => {
      const h = base();
      const w = h.claimWith("a");
      expect(typesOf(h, { type: "update_step", step_id: "a", status: "running" })).toEqual(["task_step_started"]);
      expect(typesOf(h, { type: "update_step", step_id: "a", status: "completed", result_summary: "by orch" })).toEqual(["task_step_completed", "task_step_ready"]);
      expect(st(h, "a")).toMatchObject({ status: "completed", result_summary: "by orch", claimed_by_run_id: null });
      expect(runOf(h, w).current_step_id).toBeNull();
      expect(typesOf(h, { type: "update_step", step_id: "c", status: "blocked", reason: "wait" })).toEqual(["task_step_blocked"]);
      expect(typesOf(h, { type: "update_step", step_id: "d", status: "failed", result_summary: "skip" })).toEqual(["task_step_failed"]);
      expect(typesOf(h, { type: "update_step", step_id: "b", status: "cancelled" })).toEqual(["task_step_cancelled"]);
    });

    it("a worker may update only the step its own run holds", () => {
      const h = base();
      const w1 = h.claimWith("a");
      const w2 = h.claimWith("c");
      rejects(h, { type: "update_step", step_id: "c", status: "running" }, w1, "permission_denied");
      rejects(h, { type: "update_step", step_id: "a", status: "completed" }, w2, "permission_denied");
      rejects(h, { type: "update_step", step_id: "a", status: "completed" }, { ...w1, run_id: w2.run_id }, "permission_denied");
      expect(typesOf(h, { type: "update_step", step_id: "a", status: "running" }, w1)).toEqual(["task_step_started"]);
    });

    it.each(["complete_task", "fail_task", "cancel_task"])("after %s every step update is task_terminal and writes nothing", (close) => {
      const h = new Harness();
      h.create([step("a"), step("b", [], { required: false })]);
      h.complete("a");
      const w = h.dispatch();
      const wLate = { ...w };
      h.ok({ type: close });
      for (const status of ["running", "completed", "failed", "blocked", "cancelled"]) {
        rejects(h, { type: "update_step", step_id: "a", status }, orchestrator, "task_terminal");
        rejects(h, { type: "update_step", step_id: "b", status }, orchestrator, "task_terminal");
        rejects(h, { type: "update_step", step_id: "b", status }, wLate, "task_terminal");
      }
      rejects(h, { type: "update_task", ops: [{ op: "update_task", title: "x" }] }, orchestrator, "task_terminal");
    });

    it("a completed step's results cannot be changed by any task tool", () => {
      const h = base();
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "completed", result_summary: "final", artifact_ids: ["x"] }, w);
      for (const status of ["running", "completed", "failed", "blocked", "cancelled", "claimed"]) {
        rejects(h, { type: "update_step", step_id: "a", status, result_summary: "rewrite" }, orchestrator, "invalid_transition");
        rejects(h, { type: "update_step", step_id: "a", status, result_summary: "rewrite" }, w, "permission_denied");
      }
      rejects(h, { type: "update_task", ops: [{ op: "update_step", step_id: "a", fields: { result_summary: "rewrite" } }] }, orchestrator, "validation_error");
      rejects(h, { type: "update_task", ops: [{ op: "delete_step", step_id: "a" }] }, orchestrator, "invalid_transition");
      rejects(h, { type: "update_task", ops: [{ op: "remove_dependency", step_id: "b", depends_on_step_id: "a" }, { op: "delete_step", step_id: "a" }] }, orchestrator, "invalid_transition");
      rejects(h, { type: "update_task", ops: [{ op: "reopen_step", step_id: "a" }] }, orchestrator, "invalid_transition");
      rejects(h, { type: "update_task", ops: [{ op: "cancel_step", step_id: "a" }] }, orchestrator, "invalid_transition");
      expect(st(h, "a")).toMatchObject({ status: "completed", result_summary: "final", artifact_ids: ["x"] });
    });

    it("a worker may block its claimed step but cannot unblock it", () => {
      const h = base();
      const w = h.dispatch({ max_steps: 2 });
      h.ok({ type: "claim_step", step_id: "a" }, w);
      h.ok({ type: "update_step", step_id: "a", status: "blocked", reason: "need creds", result_summary: "stuck" }, w);
      expect(st(h, "a")).toMatchObject({ status: "blocked", status_reason: "need creds", result_summary: "stuck" });
      rejects(h, { type: "update_step", step_id: "a", status: "pending" }, w, "invalid_transition");
      rejects(h, { type: "update_step", step_id: "a", status: "ready" }, w, "invalid_transition");
      rejects(h, { type: "update_step", step_id: "a", status: "running" }, w, "permission_denied");
      rejects(h, { type: "claim_step", step_id: "a" }, w, "invalid_transition");
      rejects(h, { type: "update_task", ops: [{ op: "reopen_step", step_id: "a" }] }, w, "tool_not_available");
      expect(h.status("a")).toBe("blocked");
    });

    it("only the orchestrator unblocks a step, back to pending (task_step_reopened), then readiness", () => {
      const h = new Harness();
      h.create([step("r"), step("a", ["r"])]);
      h.complete("r");
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "blocked" }, w);
      rejects(h, { type: "update_step", step_id: "a", status: "running" }, orchestrator, "invalid_transition");
      const d = h.ok({ type: "update_task", ops: [{ op: "reopen_step", step_id: "a", reason: "creds added" }] });
      expect(h.types(d)).toEqual(["task_updated", "task_step_reopened", "task_step_ready"]);
      expect(h.wal.at(-2)).toMatchObject({ event_type: "task_step_reopened", step_id: "a", payload: { reason: "creds added" } });
      expect(h.status("a")).toBe("ready");
    });

    it("a worker may fail its claimed step but cannot recover it", () => {
      const h = base();
      const w = h.dispatch({ max_steps: 2 });
      h.ok({ type: "claim_step", step_id: "a" }, w);
      h.ok({ type: "update_step", step_id: "a", status: "failed", reason: "tests red" }, w);
      expect(st(h, "a")).toMatchObject({ status: "failed", status_reason: "tests red" });
      rejects(h, { type: "update_step", step_id: "a", status: "pending" }, w, "invalid_transition");
      rejects(h, { type: "update_step", step_id: "a", status: "ready" }, w, "invalid_transition");
      rejects(h, { type: "update_step", step_id: "a", status: "running" }, w, "permission_denied");
      rejects(h, { type: "claim_step", step_id: "a" }, w, "invalid_transition");
      rejects(h, { type: "update_task", ops: [{ op: "reopen_step", step_id: "a" }] }, w, "tool_not_available");
      expect(h.status("a")).toBe("failed");
    });

    it("only the orchestrator recovers a failed step, back to pending (task_step_reopened), then readiness", () => {
      const h = new Harness();
      h.create([step("r"), step("a", ["r"]), step("b", ["a"])]);
      h.complete("r");
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "failed" }, w);
      rejects(h, { type: "update_step", step_id: "a", status: "running" }, orchestrator, "invalid_transition");
      rejects(h, { type: "update_step", step_id: "a", status: "completed" }, orchestrator, "invalid_transition");
      const d = h.ok({ type: "update_task", ops: [{ op: "reopen_step", step_id: "a" }] });
      expect(h.types(d)).toEqual(["task_updated", "task_step_reopened", "task_step_ready"]);
      expect([h.status("a"), h.status("b")]).toEqual(["ready", "pending"]);
    });

    it("non-terminal updates renew the lease to now + step_lease_timeout_ms", () => {
      const h = base();
      const w = h.claimWith("a");
      expect(st(h, "a").lease_expires_at).toBe(iso(T0 + LEASE_MS));
      h.now = T0 + 10_000;
      const d1 = h.ok({ type: "update_step", step_id: "a", status: "claimed" }, w);
      expect(d1.events[0]!.payload).toMatchObject({ lease_expires_at: iso(T0 + 10_000 + LEASE_MS) });
      expect(st(h, "a").lease_expires_at).toBe(iso(T0 + 10_000 + LEASE_MS));
      h.now = T0 + 30_000;
      h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      expect(st(h, "a").lease_expires_at).toBe(iso(T0 + 30_000 + LEASE_MS));
      h.now = T0 + 50_000;
      h.ok({ type: "update_step", step_id: "a", status: "running", result_summary: "progress" }, w);
      expect(st(h, "a").lease_expires_at).toBe(iso(T0 + 50_000 + LEASE_MS));
      expect(nextDeadline(h.state)).toBe(T0 + 50_000 + LEASE_MS);
    });

    it.each([
      ["blocked", "blocked"],
      ["completed", "completed"],
      ["failed", "failed"],
      ["cancelled", "cancelled"],
    ])("writing %s ends the lease and the claim", (to, attempt) => {
      const h = base();
      const w = h.claimWith("c");
      h.ok({ type: "update_step", step_id: "c", status: "running" }, w);
      h.ok({ type: "update_step", step_id: "c", status: to }, w);
      expect(st(h, "c")).toMatchObject({ status: to, claimed_by_agent_id: null, claimed_by_run_id: null, lease_expires_at: null, current_attempt_id: null });
      expect(runOf(h, w).current_step_id).toBeNull();
      expect(attemptsOf(h, "c")[0]!.status).toBe(attempt);
      expect(nextDeadline(h.state)).toBeNull();
      h.now = T0 + 10 * LEASE_MS;
      expect(h.ok({ type: "reconcile_leases" }).events).toEqual([]);
    });

    it("claimed → running writes task_step_started, and only that transition does", () => {
      const h = base();
      const w = h.claimWith("a");
      const d = h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      expect(h.types(d)).toEqual(["task_step_started"]);
      expect(d.events[0]).toMatchObject({ step_id: "a", payload: { lease_expires_at: iso(T0 + LEASE_MS) } });
      expect(typesOf(h, { type: "update_step", step_id: "a", status: "running" }, w)).toEqual(["task_step_updated"]);
      rejects(h, { type: "update_step", step_id: "a", status: "claimed" }, w, "invalid_transition");
      expect(byType(h.wal, "task_step_started")).toHaveLength(1);
    });

    it("non-terminal updates write task_step_updated", () => {
      const h = base();
      const w = h.claimWith("a");
      const d1 = h.ok({ type: "update_step", step_id: "a", status: "claimed", result_summary: "looking" }, w);
      expect(h.types(d1)).toEqual(["task_step_updated"]);
      h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      const d2 = h.ok({ type: "update_step", step_id: "a", status: "running", artifact_ids: ["log_1"] }, w);
      expect(h.types(d2)).toEqual(["task_step_updated"]);
      expect(d2.events[0]!.payload).toEqual({ lease_expires_at: iso(T0 + LEASE_MS), result_summary: null, artifact_ids: ["log_1"] });
      expect(st(h, "a")).toMatchObject({ status: "running", result_summary: "looking", artifact_ids: ["log_1"] });
    });

    it("a change to blocked writes task_step_blocked", () => {
      const h = base();
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      const attemptId = st(h, "a").current_attempt_id;
      const d = h.ok({ type: "update_step", step_id: "a", status: "blocked", reason: "why", result_summary: "half" }, w);
      expect(h.types(d)).toEqual(["task_step_blocked"]);
      expect(d.events[0]!.payload).toEqual({ reason: "why", result_summary: "half", artifact_ids: null, attempt_id: attemptId, run_id: w.run_id });
    });

    it.each([
      ["completed", ["task_step_completed", "task_step_ready"]],
      ["failed", ["task_step_failed"]],
      ["cancelled", ["task_step_cancelled"]],
    ])("a change to %s writes its own terminal event", (to, types) => {
      const h = base();
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      expect(typesOf(h, { type: "update_step", step_id: "a", status: to, reason: "r" }, w)).toEqual(types);
      expect(h.status("a")).toBe(to);
    });

    it("task_step_updated never stands for a start, a block or a terminal change", () => {
      const seen: Record<string, string[]> = {};
      for (const from of ["claimed", "running"] as const) {
        for (const to of ["claimed", "running", "blocked", "completed", "failed", "cancelled"] as const) {
          const h = new Harness();
          h.create([step("a")]);
          const w = h.claimWith("a");
          if (from === "running") h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
          const d = h.run({ type: "update_step", step_id: "a", status: to }, w);
          seen[`${from}->${to}`] = d.ok ? h.types(d) : [d.error.code];
        }
      }
      expect(seen).toEqual({
        "claimed->claimed": ["task_step_updated"],
        "claimed->running": ["task_step_started"],
        "claimed->blocked": ["task_step_blocked"],
        "claimed->completed": ["task_step_completed"],
        "claimed->failed": ["task_step_failed"],
        "claimed->cancelled": ["task_step_cancelled"],
        "running->claimed": ["invalid_transition"],
        "running->running": ["task_step_updated"],
        "running->blocked": ["task_step_blocked"],
        "running->completed": ["task_step_completed"],
        "running->failed": ["task_step_failed"],
        "running->cancelled": ["task_step_cancelled"],
      });
    });
  });

  describe("worker run end fallback", () => {
    it("a run that finishes cleanly, holding no step, ends finished with reason finished and fails nothing", () => {
      const h = base();
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "completed" }, w);
      const d = h.ok({ type: "finish_run", run_id: w.run_id!, outcome: "finished", result: { note: "ok" } }, w);
      expect(h.types(d)).toEqual(["worker_run_ended"]);
      expect(runOf(h, w)).toMatchObject({ status: "finished", status_reason: "finished", result: { note: "ok" } });
      expect(st(h, "a").status).toBe("completed");
    });

    it.each([
      ["finished", "worker_finished_without_terminal_step_status", "failed", "finished"],
      ["cancelled", "worker_cancelled", "cancelled", "cancelled"],
      ["timeout", "worker_timeout", "timed_out", "timed_out"],
    ])("a run ending (%s) while still holding a claimed step fails it with %s", (outcome, reason, attempt, runStatus) => {
      const h = base();
      const w = h.claimWith("a");
      const d = h.ok({ type: "finish_run", run_id: w.run_id!, outcome }, w);
      expect(h.types(d)).toEqual(["task_step_failed", "worker_run_ended"]);
      expect(d.events[0]).toMatchObject({ step_id: "a", payload: { reason, result_summary: reason } });
      expect(st(h, "a")).toMatchObject({ status: "failed", status_reason: reason, result_summary: reason, claimed_by_run_id: null, lease_expires_at: null });
      expect(attemptsOf(h, "a")[0]!.status).toBe(attempt);
      expect(runOf(h, w).status).toBe(runStatus);
      expect(replay(h.wal)).toEqual(h.state);
    });

    it("a run ending normally while its step is running fails it with worker_finished_without_terminal_step_status", () => {
      const h = base();
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "running", result_summary: "halfway" }, w);
      const d = h.ok({ type: "finish_run", run_id: w.run_id!, outcome: "finished", result: { text: "I stopped" } }, w);
      expect(h.types(d)).toEqual(["task_step_failed", "worker_run_ended"]);
      expect(st(h, "a")).toMatchObject({ status: "failed", result_summary: "worker_finished_without_terminal_step_status" });
      expect(runOf(h, w).result).toEqual({ text: "I stopped" });
    });

    it("a run the user cancels fails its held step with worker_cancelled", () => {
      const h = base();
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      const d = h.ok({ type: "cancel_run", run_id: w.run_id!, reason: "user stop" });
      expect(h.types(d)).toEqual(["task_step_failed", "worker_run_ended"]);
      expect(d.events[0]!.payload).toMatchObject({ reason: "worker_cancelled", result_summary: "worker_cancelled" });
      expect(d.events[1]!.payload).toMatchObject({ run_id: w.run_id, status: "cancelled", reason: "user stop" });
      rejects(h, { type: "cancel_run", run_id: w.run_id! }, w, "tool_not_available");
    });

    it("a run past its deadline times out: its held step fails with worker_timeout", () => {
      const h = base();
      const w = h.claimWith("a", { timeout_ms: 5_000 });
      h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      expect(nextDeadline(h.state)).toBe(T0 + 5_000);
      h.now = T0 + 4_999;
      expect(h.ok({ type: "reconcile_leases" }).events).toEqual([]);
      h.now = T0 + 5_000;
      const d = h.ok({ type: "reconcile_leases" });
      expect(h.types(d)).toEqual(["task_step_failed", "worker_run_ended"]);
      expect(d.events[0]!.payload).toMatchObject({ reason: "worker_timeout", result_summary: "worker_timeout", attempt_status: "timed_out" });
      expect(runOf(h, w).status).toBe("timed_out");
      expect(attemptsOf(h, "a")[0]!.status).toBe("timed_out");
    });

    it("the fallback is written to the WAL as task_step_failed", () => {
      const h = base();
      const w = h.claimWith("a");
      const before = h.wal.length;
      h.ok({ type: "finish_run", run_id: w.run_id!, outcome: "cancelled" }, w);
      expect(h.wal.slice(before).map((e) => e.event_type)).toEqual(["task_step_failed", "worker_run_ended"]);
      const restored = replay(h.wal);
      expect(restored.steps.get("a")!.status).toBe("failed");
      expect(restored).toEqual(h.state);
    });

    it("a step the run already took to completed, failed, blocked or cancelled is left alone", () => {
      for (const to of ["completed", "failed", "blocked", "cancelled"]) {
        const h = base();
        const w = h.claimWith("a");
        h.ok({ type: "update_step", step_id: "a", status: to, result_summary: "mine" }, w);
        const d = h.ok({ type: "finish_run", run_id: w.run_id!, outcome: "finished" }, w);
        expect(h.types(d)).toEqual(["worker_run_ended"]);
        expect(st(h, "a")).toMatchObject({ status: to });
      }
    });

    it("the fallback touches only the ending run's own claim, never another worker's", () => {
      const h = base();
      const w1 = h.claimWith("a");
      const w2 = h.claimWith("c");
      // w1 loses its lease; w3 claims a again.
      h.now = T0 + LEASE_MS;
      h.ok({ type: "update_step", step_id: "c", status: "running" }, w2);
      h.ok({ type: "reconcile_leases" });
      const w3 = h.claimWith("a");
      const d = h.ok({ type: "finish_run", run_id: w1.run_id!, outcome: "finished" }, w1);
      expect(h.types(d)).toEqual(["worker_run_ended"]);
      expect(st(h, "a")).toMatchObject({ status: "claimed", claimed_by_run_id: w3.run_id });
      expect(st(h, "c")).toMatchObject({ status: "running", claimed_by_run_id: w2.run_id });
      // And an orchestrator cancelling w2 fails c only.
      const d2 = h.ok({ type: "cancel_run", run_id: w2.run_id! });
      expect(d2.events.map((e) => [e.event_type, e.step_id])).toEqual([["task_step_failed", "c"], ["worker_run_ended", null]]);
      expect(h.status("a")).toBe("claimed");
      rejects(h, { type: "finish_run", run_id: w3.run_id!, outcome: "finished" }, w1, "permission_denied");
    });
  });

  describe("agent.task_complete / agent.task_fail / agent.task_cancel", () => {
    it.each([
      ["complete_task", "a worker"],
      ["fail_task", "a worker"],
      ["cancel_task", "a worker"],
      ["complete_task", "an observer"],
      ["fail_task", "an observer"],
      ["cancel_task", "an observer"],
    ])("only the orchestrator may %s (%s gets tool_not_available)", (type, who) => {
      const h = new Harness();
      h.create([step("a", [], { required: false })]);
      const actor = who === "a worker" ? h.dispatch() : observer;
      rejects(h, { type }, actor, "tool_not_available");
      rejects(h, { type }, stranger, "permission_denied");
      expect(h.state.task!.status).toBe("running");
    });

    it("they close the whole task DAG", () => {
      for (const [type, status] of [
        ["complete_task", "completed"],
        ["fail_task", "failed"],
        ["cancel_task", "cancelled"],
      ] as const) {
        const h = new Harness();
        h.create([step("a", [], { required: false }), step("b", ["a"], { required: false })]);
        h.ok({ type, reason: "done" });
        expect(h.state.task).toMatchObject({ status, status_reason: "done", ended_at: iso(T0) });
        expect(h.state.index.statusCounts.ready + h.state.index.statusCounts.pending + h.state.index.held.size).toBe(0);
        rejects(h, { type }, orchestrator, "task_terminal");
        rejects(h, { type: "dispatch_worker" }, orchestrator, "task_terminal");
      }
    });

    it("task_complete requires every required step completed", () => {
      const h = base();
      h.complete("a");
      h.complete("b");
      h.complete("c");
      const e = rejects(h, { type: "complete_task" }, orchestrator, "task_not_completeable");
      expect(e.details).toMatchObject({ required_not_completed: ["d"] });
      h.complete("d");
      expect(typesOf(h, { type: "complete_task" })).toContain("task_completed");
    });

    it("task_complete refuses while any step is claimed or running, optional ones included", () => {
      const h = new Harness();
      h.create([step("a"), step("o", [], { required: false })]);
      h.complete("a");
      const w = h.claimWith("o");
      const e = rejects(h, { type: "complete_task" }, orchestrator, "task_not_completeable");
      expect(e.details).toMatchObject({ held_step_ids: ["o"] });
      h.ok({ type: "update_step", step_id: "o", status: "running" }, w);
      rejects(h, { type: "complete_task" }, orchestrator, "task_not_completeable");
      h.ok({ type: "update_step", step_id: "o", status: "failed" }, w);
      // The two runs (a's and o's) are still active: each ends, then the task completes.
      expect(typesOf(h, { type: "complete_task" })).toEqual(["worker_run_ended", "worker_run_ended", "task_completed"]);
      expect(h.status("o")).toBe("failed");
    });

    it("task_complete cancels pending and ready optional steps, one task_step_cancelled each", () => {
      const h = new Harness();
      h.create([step("a"), step("o1", [], { required: false }), step("o2", ["o1"], { required: false }), step("o3", [], { required: false })]);
      h.complete("a");
      const w = h.claimWith("o3");
      h.ok({ type: "update_step", step_id: "o3", status: "blocked" }, w);
      const d = h.ok({ type: "complete_task" });
      expect(d.events.map((e) => [e.event_type, e.step_id])).toEqual([
        ["task_step_cancelled", "o1"],
        ["task_step_cancelled", "o2"],
        ["worker_run_ended", null],
        ["worker_run_ended", null],
        ["task_completed", null],
      ]);
      expect([h.status("a"), h.status("o1"), h.status("o2"), h.status("o3")]).toEqual(["completed", "cancelled", "cancelled", "blocked"]);
    });

    it.each([
      ["fail_task", "task_step_failed", "failed", "task_failed"],
      ["cancel_task", "task_step_cancelled", "cancelled", "task_cancelled"],
    ])("%s force-stops every unfinished step, claimed and running included", (type, stepEvent, status, reason) => {
      const h = new Harness();
      h.create([step("p0"), step("p", ["p0"]), step("r"), step("c"), step("u"), step("b")]);
      const wc = h.claimWith("c");
      const wu = h.claimWith("u");
      h.ok({ type: "update_step", step_id: "u", status: "running" }, wu);
      const wb = h.claimWith("b");
      h.ok({ type: "update_step", step_id: "b", status: "blocked" }, wb);
      const d = h.ok({ type, reason: "abort" });
      const stepEvents = d.events.filter((e) => e.step_id !== null);
      expect(stepEvents.map((e) => [e.event_type, e.step_id])).toEqual(["p0", "p", "r", "c", "u", "b"].map((id) => [stepEvent, id]));
      for (const e of stepEvents) expect(e.payload).toMatchObject({ reason });
      for (const id of ["p0", "p", "r", "c", "u", "b"]) expect(st(h, id)).toMatchObject({ status, status_reason: reason, claimed_by_run_id: null, lease_expires_at: null });
      if (type === "fail_task") for (const id of ["c", "u"]) expect(st(h, id).result_summary).toBe("task_failed");
      expect(runOf(h, wc)).toMatchObject({ status: "cancelling", cancel_request: { reason } });
      expect(runOf(h, wu)).toMatchObject({ status: "cancelling", cancel_request: { reason } });
      expect(h.types(d).at(-1)).toBe(reason);
      expect(replay(h.wal)).toEqual(h.state);
    });

    it.each(["fail_task", "cancel_task"])("%s requests cancellation of the worker runs of claimed/running steps before writing the step's terminal event", (type) => {
      const h = base();
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      const attemptId = st(h, "a").current_attempt_id;
      const d = h.ok({ type });
      const request = d.events.findIndex((e) => e.event_type === "worker_run_cancel_requested" && (e.payload as { run_id: string }).run_id === w.run_id);
      const stepEnd = d.events.findIndex((e) => e.step_id === "a");
      expect(request).toBeGreaterThanOrEqual(0);
      expect(request).toBeLessThan(stepEnd);
      expect(d.events[request]!.payload).toEqual({ run_id: w.run_id, reason: type === "fail_task" ? "task_failed" : "task_cancelled", step_id: "a", attempt_id: attemptId, deadline_at: iso(T0 + 30_000) });
      expect(byType(d.events, "worker_run_ended")).toEqual([]);
    });

    it.each(["fail_task", "cancel_task"])("%s keeps completed, failed and cancelled steps as they are", (type) => {
      const h = base();
      h.complete("a");
      const w = h.claimWith("c");
      h.ok({ type: "update_step", step_id: "c", status: "failed", reason: "own" }, w);
      h.ok({ type: "update_task", ops: [{ op: "cancel_step", step_id: "d", reason: "skip" }] });
      const d = h.ok({ type });
      expect(d.events.filter((e) => e.step_id !== null).map((e) => e.step_id)).toEqual(["b"]);
      expect(st(h, "a")).toMatchObject({ status: "completed", result_summary: "a done" });
      expect(st(h, "c")).toMatchObject({ status: "failed", status_reason: "own" });
      expect(st(h, "d")).toMatchObject({ status: "cancelled", status_reason: "skip" });
    });

    it.each(["fail_task", "cancel_task"])("%s does not use the worker_cancelled fallback; the run's later end skips its step", (type) => {
      const h = base();
      const w = h.claimWith("a");
      const d = h.ok({ type });
      expect(d.events.some((e) => (e.payload as { reason?: unknown }).reason === "worker_cancelled")).toBe(false);
      const stepStatus = h.status("a");
      // The run, asked to cancel, may end with its result; it changes no step.
      const late = h.ok({ type: "finish_run", run_id: w.run_id!, outcome: "finished", result: { transcript: "t" } }, w);
      expect(late.events.map((e) => [e.event_type, e.step_id])).toEqual([["worker_run_ended", null]]);
      expect(h.status("a")).toBe(stepStatus);
      expect(runOf(h, w).result).toEqual({ transcript: "t" });
      rejects(h, { type: "finish_run", run_id: w.run_id!, outcome: "cancelled" }, w, "invalid_transition");
      expect(byType(h.wal, "task_step_failed").filter((e) => (e.payload as { reason: string }).reason.startsWith("worker_"))).toEqual([]);
    });

    it("they write task_completed, task_failed and task_cancelled", () => {
      for (const [type, event] of [
        ["complete_task", "task_completed"],
        ["fail_task", "task_failed"],
        ["cancel_task", "task_cancelled"],
      ] as const) {
        const h = new Harness();
        h.create([step("a", [], { required: false })]);
        const d = h.ok({ type, reason: "why" });
        expect(h.types(d).at(-1)).toBe(event);
        expect(d.events.at(-1)).toMatchObject({ step_id: null, payload: { reason: "why" } });
        expect(byType(h.wal, event)).toHaveLength(1);
      }
    });
  });
});

// ───────────────────────────────────────────────────────────────────────────────────────────────
describe("Step Claim Lease", () => {
  it("a claim is held under a lease that lapses unless renewed", () => {
    const h = base();
    const w = h.claimWith("a");
    expect(st(h, "a").lease_expires_at).toBe(iso(T0 + LEASE_MS));
    expect(nextDeadline(h.state)).toBe(T0 + LEASE_MS);
    h.now = T0 + LEASE_MS;
    h.ok({ type: "reconcile_leases" });
    expect(st(h, "a")).toMatchObject({ status: "ready", claimed_by_run_id: null });
    rejects(h, { type: "update_step", step_id: "a", status: "completed" }, w, "permission_denied");
  });

  it("the lease lasts task.step_lease_timeout_ms", () => {
    const h = new Harness();
    h.create([step("a"), step("b")], { step_lease_timeout_ms: 5_000 });
    expect(h.state.task!.step_lease_timeout_ms).toBe(5_000);
    h.now = T0 + 100;
    const w = h.claimWith("a");
    expect(st(h, "a").lease_expires_at).toBe(iso(T0 + 5_100));
    h.now = T0 + 5_099;
    expect(h.ok({ type: "reconcile_leases" }).events).toEqual([]);
    h.now = T0 + 5_100;
    expect(typesOf(h, { type: "reconcile_leases" })).toEqual(["task_step_lease_expired", "task_step_ready"]);
    // The deployment default applies when the task sets none.
    const h2 = new Harness();
    h2.limits = { ...h2.limits, stepLeaseTimeoutMs: 7_000 };
    h2.create([step("a")]);
    h2.claimWith("a");
    expect(st(h2, "a").lease_expires_at).toBe(iso(T0 + 7_000));
    expect(w.run_id).not.toBeNull();
  });

  it("while the lease is live no other worker can claim the step", () => {
    const h = base();
    h.claimWith("a");
    const w2 = h.dispatch();
    rejects(h, { type: "claim_step", step_id: "a" }, w2, "step_already_claimed");
    h.now = T0 + LEASE_MS - 1;
    expect(h.ok({ type: "reconcile_leases" }).events).toEqual([]);
    rejects(h, { type: "claim_step", step_id: "a" }, w2, "step_already_claimed");
    expect(h.ok({ type: "claim_next" }, w2).value).toMatchObject({ kind: "claimed", step_id: "c" });
  });

  it("the holder's non-terminal updates and progress renew the lease automatically", () => {
    const h = base();
    const w = h.claimWith("a");
    h.now = T0 + 40_000;
    h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
    expect(st(h, "a").lease_expires_at).toBe(iso(T0 + 100_000));
    h.now = T0 + 90_000;
    const d = h.ok({ type: "append_progress", phase: "build", summary: "compiling" }, w);
    expect(h.types(d)).toEqual(["task_progress"]);
    expect(d.events[0]).toMatchObject({ step_id: "a", payload: { lease_expires_at: iso(T0 + 150_000) } });
    expect(st(h, "a").lease_expires_at).toBe(iso(T0 + 150_000));
    // Past the original lease, still held.
    h.now = T0 + 140_000;
    expect(h.ok({ type: "reconcile_leases" }).events).toEqual([]);
    expect(st(h, "a").claimed_by_run_id).toBe(w.run_id);
    // The orchestrator's progress note does not renew the worker's lease.
    h.ok({ type: "append_progress", step_id: "a", summary: "orch note" });
    expect(st(h, "a").lease_expires_at).toBe(iso(T0 + 150_000));
    expect(replay(h.wal)).toEqual(h.state);
  });

  it("once the holder writes completed, failed or cancelled the step leaves the ready queue for good", () => {
    for (const to of ["completed", "failed", "cancelled"]) {
      const h = new Harness();
      h.create([step("a")]);
      const w = h.claimWith("a");
      h.ok({ type: "update_step", step_id: "a", status: to }, w);
      h.now = T0 + 10 * LEASE_MS;
      expect(h.ok({ type: "reconcile_leases" }).events).toEqual([]);
      const w2 = h.dispatch();
      expect(ids(q(h, w2))).toEqual([]);
      expect(h.ok({ type: "claim_next" }, w2).value).toEqual({ kind: "no_step_claimed", reason: "no_ready_step" });
      expect(h.state.index.ready.get("default")?.ids() ?? []).toEqual([]);
    }
  });

  it("reconciliation runs before queries and reads: an expired step is pending/ready before anyone sees it", () => {
    const h = base();
    h.claimWith("a");
    h.now = T0 + LEASE_MS + 1;
    expect(nextDeadline(h.state)).toBeLessThanOrEqual(h.now);
    h.ok({ type: "reconcile_leases" }, observer);
    expect(nextDeadline(h.state)).toBeNull();
    expect(ids(q(h, orchestrator, { statuses: ["ready"] }))).toEqual(["a", "c", "d"]);
  });

  it("an expired claimed or running lease without a terminal event writes task_step_lease_expired", () => {
    for (const held of ["claimed", "running"]) {
      const h = base();
      const w = h.claimWith("a");
      if (held === "running") h.ok({ type: "update_step", step_id: "a", status: "running" }, w);
      const attempt = st(h, "a").current_attempt_id;
      h.now = T0 + LEASE_MS;
      const d = h.ok({ type: "reconcile_leases" }, w);
      expect(d.events[0]).toMatchObject({
        event_type: "task_step_lease_expired",
        step_id: "a",
        actor_agent_id: "system",
        actor_run_id: null,
        payload: { run_id: w.run_id, attempt_id: attempt, lease_expires_at: iso(T0 + LEASE_MS) },
      });
    }
  });

  it("task_step_lease_expired is written to the WAL and replays to the same DAG", () => {
    const h = base();
    h.claimWith("a");
    h.now = T0 + LEASE_MS;
    const before = h.wal.length;
    h.ok({ type: "reconcile_leases" });
    expect(h.wal.slice(before).map((e) => e.event_type)).toEqual(["task_step_lease_expired", "task_step_ready"]);
    expect(replay(h.wal)).toEqual(h.state);
    expect(replay(h.wal.slice(0, before + 1)).steps.get("a")!.status).toBe("pending");
  });

  it("expiry clears claimed_by_agent_id, claimed_by_run_id and lease_expires_at and returns the step to pending", () => {
    const h = new Harness();
    h.create([step("x"), step("a")]);
    const w = h.claimWith("a");
    // The orchestrator makes a depend on an unfinished step while it is held: expiry leaves it pending.
    h.ok({ type: "update_task", ops: [{ op: "add_dependency", step_id: "a", depends_on_step_id: "x" }] });
    expect(h.status("a")).toBe("claimed");
    h.now = T0 + LEASE_MS;
    const d = h.ok({ type: "reconcile_leases" });
    expect(h.types(d)).toEqual(["task_step_lease_expired"]);
    expect(st(h, "a")).toMatchObject({ status: "pending", claimed_by_agent_id: null, claimed_by_run_id: null, lease_expires_at: null, current_attempt_id: null, status_reason: "lease_expired" });
    expect(runOf(h, w)).toMatchObject({ status: "active", current_step_id: null });
  });

  it("after expiry the core re-runs readiness: task_step_ready follows when dependencies still hold", () => {
    const h = new Harness();
    h.create([step("r"), step("a", ["r"]), step("b")]);
    h.complete("r");
    h.claimWith("a");
    h.claimWith("b");
    h.now = T0 + LEASE_MS;
    const d = h.ok({ type: "reconcile_leases" });
    expect(d.events.map((e) => [e.event_type, e.step_id])).toEqual([
      ["task_step_lease_expired", "a"],
      ["task_step_ready", "a"],
      ["task_step_lease_expired", "b"],
      ["task_step_ready", "b"],
    ]);
    expect([h.status("a"), h.status("b")]).toEqual(["ready", "ready"]);
  });

  it("after expiry another worker may claim the step again, or the orchestrator may change the DAG", () => {
    const h = base();
    const w1 = h.claimWith("a");
    h.now = T0 + LEASE_MS;
    h.ok({ type: "reconcile_leases" });
    const w2 = h.dispatch();
    expect(typesOf(h, { type: "claim_step", step_id: "a" }, w2)).toEqual(["task_step_claimed"]);
    expect(st(h, "a")).toMatchObject({ claimed_by_run_id: w2.run_id, lease_expires_at: iso(T0 + 2 * LEASE_MS) });
    expect(attemptsOf(h, "a").map((a) => [a.run_id, a.status])).toEqual([
      [w1.run_id, "lost"],
      [w2.run_id, "active"],
    ]);
    // The old holder can neither write back nor claim again.
    rejects(h, { type: "update_step", step_id: "a", status: "completed" }, w1, "permission_denied");
    rejects(h, { type: "claim_step", step_id: "c" }, w1, "step_already_claimed_by_run");
    // Or the orchestrator adds a remedial step.
    const h2 = base();
    h2.claimWith("c");
    h2.now = T0 + LEASE_MS;
    h2.ok({ type: "reconcile_leases" });
    expect(typesOf(h2, { type: "update_task", ops: [{ op: "add_step", step: step("c_fix") }, { op: "cancel_step", step_id: "c" }] })).toEqual([
      "task_updated",
      "task_step_cancelled",
      "task_step_ready",
    ]);
  });

  it("lease expiry is not a task failure: the task stays non-terminal", () => {
    const h = base();
    h.claimWith("a");
    h.claimWith("c");
    h.now = T0 + 5 * LEASE_MS;
    const d = h.ok({ type: "reconcile_leases" });
    expect(d.events.some((e) => ["task_failed", "task_cancelled", "task_completed", "task_step_failed"].includes(e.event_type))).toBe(false);
    expect(h.state.task!.status).toBe("running");
    expect(h.state.task!.ended_at).toBeNull();
  });

  it("nextDeadline gives the earliest lease or run deadline; a terminal task has only its runs' cancellation deadlines", () => {
    const h = base();
    expect(nextDeadline(h.state)).toBeNull();
    h.claimWith("a");
    h.now = T0 + 1_000;
    h.claimWith("c", { timeout_ms: 30_000 });
    expect(nextDeadline(h.state)).toBe(T0 + 31_000);
    h.dispatch({ timeout_ms: 10_000 });
    expect(nextDeadline(h.state)).toBe(T0 + 11_000);
    h.ok({ type: "cancel_task" });
    // Leases and run deadlines are over; the three runs are waited for until now + childCancelTimeoutMs.
    expect(nextDeadline(h.state)).toBe(T0 + 1_000 + 30_000);
    h.now = T0 + 10 * LEASE_MS;
    expect(h.types(h.ok({ type: "reconcile_leases" }))).toEqual(Array(3).fill(["child_agent_cancel_timeout", "worker_run_ended"]).flat());
    expect(nextDeadline(h.state)).toBeNull();
    expect(h.ok({ type: "reconcile_leases" }).events).toEqual([]);
  });

  describe("attempts", () => {
    it("a claim opens one attempt with the dispatch-time snapshot", () => {
      const h = base();
      const w = h.claimWith("a");
      const [attempt, ...rest] = attemptsOf(h, "a");
      expect(rest).toEqual([]);
      expect(attempt).toMatchObject({
        step_id: "a",
        run_id: w.run_id,
        agent_id: w.agent_id,
        ordinal: 1,
        status: "active",
        started_at: iso(T0),
        ended_at: null,
        step_snapshot: { title: "Step a", summary: "Do a", depends_on_step_ids: [], required: true, worker_pool_id: "default" },
      });
      expect(st(h, "a").current_attempt_id).toBe(attempt!.attempt_id);
      expect(h.state.attempts.size).toBe(1);
    });

    it.each([
      ["completed", (h: Harness, w: Actor) => h.ok({ type: "update_step", step_id: "a", status: "completed" }, w)],
      ["failed", (h: Harness, w: Actor) => h.ok({ type: "update_step", step_id: "a", status: "failed", reason: "x" }, w)],
      ["cancelled", (h: Harness, w: Actor) => h.ok({ type: "update_step", step_id: "a", status: "cancelled" }, w)],
      ["blocked", (h: Harness, w: Actor) => h.ok({ type: "update_step", step_id: "a", status: "blocked" }, w)],
      [
        "lost",
        (h: Harness) => {
          h.now = T0 + LEASE_MS;
          return h.ok({ type: "reconcile_leases" });
        },
      ],
      ["timed_out", (h: Harness, w: Actor) => h.ok({ type: "finish_run", run_id: w.run_id!, outcome: "timeout" }, w)],
      ["failed", (h: Harness, w: Actor) => h.ok({ type: "finish_run", run_id: w.run_id!, outcome: "finished" }, w)],
      ["cancelled", (h: Harness, w: Actor) => h.ok({ type: "cancel_run", run_id: w.run_id! })],
    ])("the attempt closes as %s (case %#)", (status, end) => {
      const h = base();
      const w = h.claimWith("a");
      h.now = T0 + LEASE_MS; // the close happens at the lease's end for every case
      end(h, w);
      const [attempt] = attemptsOf(h, "a");
      expect(attempt).toMatchObject({ status, ended_at: iso(T0 + LEASE_MS) });
      expect(st(h, "a").current_attempt_id).toBeNull();
    });

    it("a step reopened three times and claimed each time shows four attempts, none overwritten", () => {
      const h = base();
      const runs: Actor[] = [];
      const w1 = h.claimWith("c");
      runs.push(w1);
      h.ok({ type: "update_step", step_id: "c", status: "failed", result_summary: "try 1" }, w1);
      h.ok({ type: "update_task", ops: [{ op: "reopen_step", step_id: "c" }] });
      const w2 = h.claimWith("c");
      runs.push(w2);
      h.ok({ type: "update_step", step_id: "c", status: "blocked", result_summary: "try 2" }, w2);
      h.ok({ type: "update_task", ops: [{ op: "reopen_step", step_id: "c" }] });
      const w3 = h.claimWith("c");
      runs.push(w3);
      h.ok({ type: "finish_run", run_id: w3.run_id!, outcome: "timeout" }, w3);
      h.ok({ type: "update_task", ops: [{ op: "reopen_step", step_id: "c" }] });
      const w4 = h.claimWith("c");
      runs.push(w4);
      h.ok({ type: "update_step", step_id: "c", status: "completed", result_summary: "try 4" }, w4);
      const attempts = attemptsOf(h, "c");
      expect(attempts.map((a) => [a.ordinal, a.run_id, a.status, a.result_summary])).toEqual([
        [1, w1.run_id, "failed", "try 1"],
        [2, w2.run_id, "blocked", "try 2"],
        [3, w3.run_id, "timed_out", "worker_timeout"],
        [4, w4.run_id, "completed", "try 4"],
      ]);
      expect(new Set(attempts.map((a) => a.attempt_id)).size).toBe(4);
      expect(byType(h.wal, "task_step_claimed").map((e) => (e.payload as { attempt_ordinal: number }).attempt_ordinal)).toEqual([1, 2, 3, 4]);
      expect(replay(h.wal)).toEqual(h.state);
    });
  });
});

// ───────────────────────────────────────────────────────────────────────────────────────────────
describe("Permission", () => {
  it("the core checks permission on every task tool", () => {
    const h = base();
    const w = h.claimWith("a");
    const other = { ...w, task_id: "task_other" };
    rejects(h, { type: "update_step", step_id: "a", status: "running" }, other, "permission_denied");
    rejects(h, { type: "append_progress", summary: "x" }, other, "permission_denied");
    rejects(h, { type: "claim_next" }, other, "permission_denied");
    rejects(h, { type: "update_step", step_id: "c", status: "blocked" }, stranger, "permission_denied");
    rejects(h, { type: "dispatch_worker" }, stranger, "permission_denied");
    rejects(h, { type: "complete_task" }, stranger, "permission_denied");
    expect(qErr(h, other)).toBe("permission_denied");
  });

  it("a worker's effective tools are read, ready query, claim, and updates of its own claimed step", () => {
    const h = base();
    const w = h.dispatch();
    expect(ids(q(h, w))).toEqual(["a", "c", "d"]);
    h.ok({ type: "claim_step", step_id: "a" }, w);
    h.ok({ type: "update_step", step_id: "a", status: "running", result_summary: "r" }, w);
    h.ok({ type: "append_progress", summary: "p" }, w);
    h.ok({ type: "update_step", step_id: "a", status: "completed", artifact_ids: ["o"] }, w);
    h.ok({ type: "finish_run", run_id: w.run_id!, outcome: "finished" }, w);
    expect(replay(h.wal)).toEqual(h.state);
  });

  it.each([
    ["create_task", { type: "create_task", task_id: "t2", wal_name: "w2", title: "T", steps: [] }],
    ["update_task", { type: "update_task", ops: [{ op: "update_task", title: "x" }] }],
    ["complete_task", { type: "complete_task" }],
    ["fail_task", { type: "fail_task" }],
    ["cancel_task", { type: "cancel_task" }],
    ["block_task", { type: "block_task" }],
    ["reopen_task", { type: "reopen_task" }],
    ["dispatch_worker", { type: "dispatch_worker" }],
    ["cancel_run", { type: "cancel_run", run_id: "run_x" }],
  ])("a worker calling %s, outside its tool set, gets tool_not_available", (_n, cmd) => {
    const h = base();
    const w = h.claimWith("a");
    rejects(h, cmd, w, "tool_not_available");
  });

  it.each([
    ["update_step", { type: "update_step", step_id: "a", status: "running" }],
    ["claim_step", { type: "claim_step", step_id: "a" }],
    ["claim_next", { type: "claim_next" }],
    ["append_progress", { type: "append_progress", summary: "x" }],
    ["update_task", { type: "update_task", ops: [{ op: "update_task", title: "x" }] }],
    ["complete_task", { type: "complete_task" }],
    ["dispatch_worker", { type: "dispatch_worker" }],
    ["finish_run", { type: "finish_run", run_id: "run_x", outcome: "finished" }],
  ])("an ordinary agent (observer, system) gets no task write tool: %s is tool_not_available", (_n, cmd) => {
    const h = base();
    rejects(h, cmd, observer, "tool_not_available");
    rejects(h, cmd, systemCaller, "tool_not_available");
  });

  it("a non-orchestrator reaching beyond its scope on task content gets permission_denied", () => {
    const h = base();
    const w1 = h.claimWith("a");
    const w2 = h.claimWith("c");
    rejects(h, { type: "update_step", step_id: "c", status: "completed", result_summary: "stolen" }, w1, "permission_denied");
    rejects(h, { type: "append_progress", step_id: "c", summary: "x" }, w1, "permission_denied");
    rejects(h, { type: "finish_run", run_id: w2.run_id!, outcome: "cancelled" }, w1, "permission_denied");
    rejects(h, { type: "update_step", step_id: "a", status: "running" }, { ...w1, task_id: "task_other" }, "permission_denied");
    rejects(h, { type: "update_step", step_id: "a", status: "running" }, { ...w1, session_id: "sess_other" }, "permission_denied");
    expect(st(h, "c")).toMatchObject({ status: "claimed", claimed_by_run_id: w2.run_id, result_summary: null });
  });

  it("the orchestrator's task writes still go through state, DAG and WAL checks", () => {
    const h = base();
    const w = h.claimWith("a");
    rejects(h, { type: "update_task", ops: [{ op: "add_dependency", step_id: "a", depends_on_step_id: "b" }] }, orchestrator, "dependency_cycle");
    rejects(h, { type: "update_task", ops: [{ op: "delete_step", step_id: "a" }] }, orchestrator, "invalid_transition");
    rejects(h, { type: "update_task", ops: [{ op: "cancel_step", step_id: "a" }] }, orchestrator, "invalid_transition");
    rejects(h, { type: "update_step", step_id: "a", status: "cancelled" }, orchestrator, "invalid_transition");
    rejects(h, { type: "update_step", step_id: "b", status: "completed" }, orchestrator, "invalid_transition");
    rejects(h, { type: "complete_task" }, orchestrator, "task_not_completeable");
    rejects(h, { type: "create_task", task_id: TASK, wal_name: "plan", title: "P", steps: [] }, orchestrator, "task_id_conflict");
    h.ok({ type: "fail_task" });
    rejects(h, { type: "update_task", ops: [{ op: "update_task", title: "x" }] }, orchestrator, "task_terminal");
    rejects(h, { type: "update_step", step_id: "a", status: "completed" }, orchestrator, "task_terminal");
    expect(runOf(h, w).status).toBe("cancelling");
  });
});
