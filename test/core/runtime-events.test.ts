import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ATTEMPT_STATUS_MAP, parseWalJsonl, projectEvent, type RuntimeEvent, SEQUENCE_STRIDE, systemActor, TASK_STATUS_MAP, type WalEvent, WalEventSchema } from "../../src/core/index.js";
import { GOLDEN_WAL_PATH } from "../fixtures/golden-wal.js";
import { Harness, SESSION, step } from "./harness.js";
import { expectConformingProjection } from "./runtime-event-contract.js";

const MINUTE = 60_000;

/** A DAG that goes through every WAL event type. */
function everyEventScenario(): Harness {
  const h = new Harness();
  h.create([step("plan"), step("a", ["plan"]), step("b", ["plan"]), step("opt", ["plan"], { required: false }), step("join", ["a", "b"])], { step_lease_timeout_ms: 60_000 });
  const w1 = h.claimWith("plan");
  h.ok({ type: "update_step", step_id: "plan", status: "running" }, w1);
  h.ok({ type: "append_progress", phase: "working", summary: "half", counters: { pages: 2 }, output_refs: ["r2://log"] }, w1);
  h.ok({ type: "update_step", step_id: "plan", status: "running", result_summary: "still going" }, w1);
  h.ok({ type: "update_step", step_id: "plan", status: "completed", result_summary: "outline", artifact_ids: ["outline.md"] }, w1);
  h.ok({ type: "finish_run", run_id: w1.run_id!, outcome: "finished", result: { ok: true } }, w1);
  const w2 = h.claimWith("a");
  h.ok({ type: "update_step", step_id: "a", status: "failed", reason: "source down" }, w2);
  h.ok({ type: "update_task", ops: [{ op: "reopen_step", step_id: "a", reason: "retry" }] });
  h.claimWith("a");
  h.now += 2 * MINUTE;
  h.ok({ type: "reconcile_leases" });
  const w4 = h.claimWith("a", { timeout_ms: 30_000 });
  h.now += 31_000;
  h.ok({ type: "reconcile_leases" });
  expect(h.state.runs.get(w4.run_id!)!.status).toBe("timed_out");
  h.ok({ type: "update_task", ops: [{ op: "reopen_step", step_id: "a" }] });
  h.complete("a");
  const w6 = h.claimWith("b");
  h.ok({ type: "update_step", step_id: "b", status: "blocked", reason: "needs key" }, w6);
  h.ok({ type: "update_task", ops: [{ op: "add_dependency", step_id: "join", depends_on_step_id: "opt" }] });
  h.ok({ type: "update_task", ops: [{ op: "remove_dependency", step_id: "join", depends_on_step_id: "opt" }, { op: "update_task", title: "Plan v2" }] });
  h.ok({ type: "update_task", ops: [{ op: "reopen_step", step_id: "b" }] });
  h.ok({ type: "block_task", reason: "waiting for budget" });
  h.ok({ type: "reopen_task" });
  h.complete("b");
  const w7 = h.claimWith("join");
  h.ok({ type: "cancel_run", run_id: w7.run_id!, reason: "replan" });
  h.ok({ type: "update_task", ops: [{ op: "reopen_step", step_id: "join" }] });
  h.complete("join");
  h.ok({ type: "complete_task" });
  return h;
}

const POLICY = { max_attempts: 2, initial_interval_ms: 1_000, backoff_coefficient: 2, max_interval_ms: 10_000 };

/**
 * The lifecycle beyond the plain DAG rules: a task-level approval, a pause and a resume, a step-level input action answered and
 * one that expires, a worker's failure retried by the policy, and a lease lost twice until the retries run out.
 */
function lifecycleScenario(): Harness {
  const h = new Harness();
  h.create([step("a", [], { retry_policy: POLICY }), step("b"), step("c", [], { retry_policy: POLICY })], { step_lease_timeout_ms: 60_000, objective: "Ship it" });
  const plan = h.ok({ type: "request_action", kind: "approval", prompt: "Approve the plan?" });
  h.ok({ type: "respond_action", action_id: actionId(plan), decision: "approved", comment: "go" });
  h.ok({ type: "pause_task", reason: "budget review" });
  h.ok({ type: "resume_task", reason: "budget approved" });
  const wa = h.claimWith("a");
  h.ok({ type: "update_step", step_id: "a", status: "running" }, wa);
  const ask = h.ok({ type: "request_action", step_id: "a", kind: "input", prompt: "Which region?", input_schema: { type: "object", required: ["region"] } }, wa);
  h.ok({ type: "respond_action", action_id: actionId(ask), decision: "submitted", input: { region: "eu" } });
  h.ok({ type: "update_step", step_id: "a", status: "failed", reason: "flaky" }, wa);
  expect(h.state.steps.get("a")!.retry_at).not.toBeNull();
  h.now += 1_000;
  h.ok({ type: "reconcile_leases" });
  h.complete("a");
  const wb = h.claimWith("b");
  h.ok({ type: "request_action", step_id: "b", kind: "approval", prompt: "Deploy?", timeout_ms: 5_000 }, wb);
  h.now += 5_000;
  h.ok({ type: "reconcile_leases" });
  h.ok({ type: "update_step", step_id: "b", status: "completed" }, wb);
  h.claimWith("c");
  h.now += 60_000;
  h.ok({ type: "reconcile_leases" });
  h.now += 1_000;
  h.ok({ type: "reconcile_leases" });
  h.claimWith("c");
  h.now += 60_000;
  h.ok({ type: "reconcile_leases" });
  expect(h.state.steps.get("c")).toMatchObject({ status: "failed", status_reason: "retry_exhausted" });
  h.ok({ type: "fail_task", reason: "c ran out of retries" });
  h.limits = { ...h.limits, retentionDays: 30 };
  h.ok({ type: "archive_task", reason: "done with it" });
  return h;
}

const SYSTEM = { role: "system", session_id: "sess_1", agent_id: "system", run_id: null } as const;

/**
 * Delegated steps: a child task created after one failed try and completed, an A2A peer that asks for input, is
 * answered and completes with an artifact, and a second peer whose task is cancelled with the task.
 */
function delegationScenario(): Harness {
  const h = new Harness();
  const peer = (id: string) => step(id, [], { delegate: { kind: "a2a", agent_card_url: "https://peer.example/.well-known/agent-card.json" } });
  const child = { kind: "task", task: { title: "Research", steps: [{ step_id: "find", title: "Find", summary: "", depends_on_step_ids: [] }] } };
  h.create([step("kid", [], { delegate: child }), peer("peer"), peer("slow"), step("after", ["kid", "peer"])]);
  h.ok({ type: "reconcile_leases" }, SYSTEM);
  const report = (stepId: string, r: Record<string, unknown>) => h.ok({ type: "record_delegation", delegation_id: h.state.steps.get(stepId)!.delegation_id!, report: r }, SYSTEM);
  const childId = h.state.delegations.get(h.state.steps.get("kid")!.delegation_id!)!.child_task_id!;
  report("kid", { kind: "try_failed", intent: "create_child", error: "busy", retryable: true });
  report("kid", { kind: "started", remote_task_id: childId, delivery_mechanism: "callback" });
  report("kid", { kind: "child_settled", child_task_id: childId, child_status: "completed", result_summary: "found", artifact_ids: ["sources.md"] });
  report("peer", { kind: "started", remote_task_id: "rt-1", remote_context_id: "ctx-1", remote_status: "TASK_STATE_WORKING", delivery_mechanism: "polling" });
  report("peer", { kind: "remote_status", remote_status: "TASK_STATE_INPUT_REQUIRED", status_message: "Which region?" });
  const question = h.state.delegations.get(h.state.steps.get("peer")!.delegation_id!)!.input_action_id!;
  h.ok({ type: "respond_action", action_id: question, decision: "submitted", input: "eu" });
  report("peer", { kind: "answered" });
  report("peer", { kind: "remote_status", remote_status: "TASK_STATE_COMPLETED", artifacts: [{ artifact_id: "a1", name: "report", text: "done" }] });
  report("slow", { kind: "started", remote_task_id: "rt-2", delivery_mechanism: "streaming" });
  h.ok({ type: "cancel_task", reason: "enough" });
  report("slow", { kind: "cancel_acknowledged", remote_state: "cancelled" });
  report("slow", { kind: "remote_status", remote_status: "TASK_STATE_CANCELED" });
  return h;
}

/** A child task created by a delegation: it completes and records that its parent got its result. */
function childTaskScenario(): Harness {
  const h = new Harness();
  h.create([step("find")], { delegated_from: { task_id: "task_parent", step_id: "kid", delegation_id: "dlg_1" } });
  h.complete("find");
  h.ok({ type: "complete_task" });
  h.ok({ type: "record_delivery", delivery_state: "delivered" }, SYSTEM);
  // Its events delivered to a webhook: queued, a try failed, the retry owed again, then delivered.
  const delivery = { delivery_id: "dlv_1", webhook_id: "wh_1", event_id: h.wal[0]!.event_id, event_type: "task.created", wal_seq: 1, index: 0 };
  h.ok({ type: "queue_webhook_deliveries", deliveries: [delivery] }, SYSTEM);
  h.ok({ type: "record_webhook_tries", tries: [{ delivery_id: "dlv_1", status_code: 410, error: "gone" }], max_tries: 3, retry_base_ms: 1_000 }, SYSTEM);
  h.ok({ type: "retry_webhook_delivery", delivery_id: "dlv_1" }, SYSTEM);
  h.ok({ type: "record_webhook_tries", tries: [{ delivery_id: "dlv_1", status_code: 200, error: null }], max_tries: 3, retry_base_ms: 1_000 }, SYSTEM);
  return h;
}

/** The action id of a request_action's answer. */
function actionId(d: { value: unknown }): string {
  return (d.value as { action_id: string }).action_id;
}

/** WALs that together hold every WAL event type: the scenarios above (delegated steps and a child task among them), a failed task, a cancelled task. */
function everyEventWals(): WalEvent[][] {
  const failed = new Harness();
  failed.create([step("a"), step("b")]);
  failed.ok({ type: "update_task", ops: [{ op: "add_dependency", step_id: "a", depends_on_step_id: "b" }] });
  failed.claimWith("b");
  failed.ok({ type: "fail_task", reason: "out of budget" });
  // The stopped run never answers: its cancellation times out.
  failed.now += MINUTE;
  failed.ok({ type: "reconcile_leases" });
  const cancelled = new Harness();
  cancelled.create([step("a")]);
  const stopped = cancelled.claimWith("a");
  cancelled.ok({ type: "cancel_task" });
  cancelled.ok({ type: "finish_run", run_id: stopped.run_id!, outcome: "cancelled" }, stopped);
  // The session's task graph tells a task which tasks block it.
  const linked = new Harness();
  linked.create([step("a")]);
  linked.ok({ type: "set_blockers", version: 1, blocked_by: ["blocker"] }, systemActor(SESSION));
  return [everyEventScenario().wal, lifecycleScenario().wal, failed.wal, cancelled.wal, delegationScenario().wal, childTaskScenario().wal, linked.wal];
}

describe("runtime events (the Agent Runtime draft's envelope)", () => {
  it("Should validate every projected event of the golden WAL against the published schema", () => {
    const events = expectConformingProjection(parseWalJsonl(readFileSync(GOLDEN_WAL_PATH, "utf8")));
    expect(events.length).toBeGreaterThan(0);
  });

  it("Should validate every event of scenarios that together write every WAL event type", () => {
    const wals = everyEventWals();
    const walTypes = new Set(wals.flat().map((e) => e.event_type));
    expect(walTypes.size).toBe(WalEventSchema.options.length);
    const events = wals.flatMap((wal) => expectConformingProjection(wal));
    const types = new Set(events.map((e) => e.type));
    for (const t of [
      "task.created", "task.accepted", "task.queued", "task.started", "task.updated", "task.progress", "task.waiting", "task.blocked",
      "task.resumed", "task.retrying", "task.cancel_requested", "task.timed_out", "task.lost", "task.completed", "task.failed", "task.cancelled", "task.delegated",
      "task.dependency.updated", "task.attempt.started", "task.attempt.completed", "task.attempt.failed",
      "subagent.spawned", "subagent.completed", "subagent.failed", "subagent.closed", "subagent.status",
      "task.paused", "action.required", "action.resolved",
    ]) {
      expect(types, t).toContain(t);
    }
  });

  it("Should number the k-th runtime event of WAL event N as N * SEQUENCE_STRIDE + k, and carry the session and task ids and the schema version", () => {
    for (const e of everyEventWals().flat()) {
      projectEvent(e).forEach((r, k) => {
        expect(r).toMatchObject({ sequence: e.wal_seq * SEQUENCE_STRIDE + k, sessionId: e.session_id, taskId: e.task_id, timestamp: e.created_at, schemaVersion: "0.4.0" });
        if (e.step_id !== null) expect(r.stepId).toBe(e.step_id);
      });
    }
  });

  it("Should project every WAL event type to fewer runtime events than SEQUENCE_STRIDE, so no two share a sequence", () => {
    const most = new Map<string, number>();
    for (const e of everyEventWals().flat()) most.set(e.event_type, Math.max(most.get(e.event_type) ?? 0, projectEvent(e).length));
    expect(most.size).toBe(WalEventSchema.options.length);
    for (const [type, n] of most) expect(n, type).toBeLessThan(SEQUENCE_STRIDE);
  });

  it("Should give a claim its attempt and run ids, and close the same attempt on completion", () => {
    const h = new Harness();
    h.create([step("a")]);
    const w = h.claimWith("a");
    h.ok({ type: "update_step", step_id: "a", status: "completed", result_summary: "done", artifact_ids: ["x"] }, w);
    const events = expectConformingProjection(h.wal);
    const started = events.find((e) => e.type === "task.attempt.started")!;
    const completed = events.find((e) => e.type === "task.attempt.completed")!;
    const attemptId = h.state.steps.get("a")!.attempt_ids[0];
    expect(started).toMatchObject({ attemptId, runId: w.run_id, stepId: "a", nativeStatus: "claimed", status: "running" });
    expect(completed).toMatchObject({ attemptId, runId: w.run_id, nativeStatus: "completed", status: "completed", refs: { artifactIds: ["x"] } });
  });

  it("Should report an expired lease as task.lost with the lost attempt", () => {
    const h = new Harness();
    h.create([step("a")]);
    h.claimWith("a");
    h.now += 2 * MINUTE;
    const d = h.ok({ type: "reconcile_leases" });
    const lost = d.events.flatMap(projectEvent).find((e) => e.type === "task.lost")!;
    const attempt = [...h.state.attempts.values()][0]!;
    expect(attempt.status).toBe("lost");
    expect(lost).toMatchObject({ status: ATTEMPT_STATUS_MAP[attempt.status], attemptId: attempt.attempt_id, statusReason: "lease_expired" });
  });

  it("Should report a worker timeout as a timed_out attempt and task.timed_out", () => {
    const h = new Harness();
    h.create([step("a")]);
    h.claimWith("a", { timeout_ms: 5_000 });
    h.now += 6_000;
    const d = h.ok({ type: "reconcile_leases" });
    const projected = d.events.flatMap(projectEvent);
    expect(projected.map((e) => e.type)).toEqual(["task.attempt.failed", "task.timed_out", "subagent.failed"]);
    expect(projected[0]).toMatchObject({ status: "timed_out", nativeStatus: "failed", statusReason: "worker_timeout" });
  });

  it("Should not invent an attempt for a step that failed without one", () => {
    const h = new Harness();
    h.create([step("a")]);
    const d = h.ok({ type: "fail_task", reason: "abandoned" });
    const projected = d.events.flatMap(projectEvent);
    expect(projected.map((e) => e.type)).toEqual(["task.updated", "task.failed"]);
    expect(projected[0]!.attemptId).toBeUndefined();
    expect(projected[1]).toMatchObject({ status: TASK_STATUS_MAP.failed, statusReason: "abandoned" });
  });

  it("Should give every event of one WAL event a distinct eventId", () => {
    const h = new Harness();
    h.create([step("a")]);
    const d = h.ok({ type: "dispatch_worker" });
    const projected: RuntimeEvent[] = projectEvent(d.events[0]!);
    expect(projected.map((e) => e.type)).toEqual(["task.delegated", "subagent.spawned"]);
    expect(projected[1]!.eventId).toBe(`${projected[0]!.eventId}.1`);
  });
});
