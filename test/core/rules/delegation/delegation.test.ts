/**
 * @module Delegated steps (docs/model.md "Delegated steps": a child task, or a task of an A2A peer kept as remote refs): the runtime takes
 * up a ready delegated step itself (never a worker), records what its delegate's outbound calls found, settles the
 * step only when the delegate is terminal, retries by the step's policy with a new delegation and child, tells a
 * live delegate to stop when the step's claim ends otherwise, carries a peer's question to a person and back, and
 * derives every outbound call it owes (outboundWork), a child's report to its parent included.
 */
import { describe, expect, it } from "vitest";
import {
  type Actor,
  childReport,
  type Delegation,
  DEFAULT_LIMITS,
  nextDeadline,
  outboundWork,
  type RetryPolicy,
} from "../../../../src/core/index.js";
import { Harness, observer, orchestrator, SESSION, step, T0, TASK } from "../../harness.js";
import { attemptsOf, consistent, ids, iso, LEASE_MS, payload, q, rejectsAs, st, systemCaller, types } from "../support.js";

const PEER_CARD = "https://peer.example/.well-known/agent-card.json";
/** A child task of two steps, the second after the first. */
const CHILD_TASK = {
  title: "Research",
  summary: "Find the sources",
  steps: [
    { step_id: "find", title: "Find", summary: "", depends_on_step_ids: [] },
    { step_id: "read", title: "Read", summary: "", depends_on_step_ids: ["find"] },
  ],
};
const TASK_DELEGATE = { kind: "task", task: CHILD_TASK };
const PEER_DELEGATE = { kind: "a2a", agent_card_url: PEER_CARD };
const POLICY: RetryPolicy = { max_attempts: 2, initial_interval_ms: 1_000, backoff_coefficient: 2, max_interval_ms: 5_000 };

/** A task whose step `kid` delegates to a child task and `peer` to an A2A peer, with `after` depending on both. */
function task(kid: Record<string, unknown> = {}, peer: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): Harness {
  const h = new Harness();
  h.create([step("kid", [], { delegate: TASK_DELEGATE, ...kid }), step("peer", [], { delegate: PEER_DELEGATE, ...peer }), step("after", ["kid", "peer"]), step("w")], extra);
  return h;
}

/** Lease reconciliation as the runtime's alarm runs it. */
const reconcile = (h: Harness) => h.ok({ type: "reconcile_leases" }, systemCaller);
/** The delegation of the step's current or latest attempt. */
function dlg(h: Harness, stepId: string): Delegation {
  const id = st(h, stepId).delegation_id;
  if (id === null) throw new Error(`step ${stepId} has no delegation`);
  return h.state.delegations.get(id)!;
}
/** record_delegation of the step's latest delegation, as the runtime. */
const report = (h: Harness, stepId: string, r: Record<string, unknown>) =>
  h.ok({ type: "record_delegation", delegation_id: dlg(h, stepId).delegation_id, report: r }, systemCaller);
/** A started report as the outbox sends it: the child's id, or the peer's task id. */
const started = (h: Harness, stepId: string, extra: Record<string, unknown> = {}) =>
  report(h, stepId, { kind: "started", remote_task_id: dlg(h, stepId).child_task_id ?? "rt-1", delivery_mechanism: dlg(h, stepId).kind === "task" ? "callback" : "polling", ...extra });
const remote = (h: Harness, status: string, extra: Record<string, unknown> = {}) => report(h, "peer", { kind: "remote_status", remote_status: `TASK_STATE_${status}`, ...extra });
const childSettled = (h: Harness, status: string, extra: Record<string, unknown> = {}) =>
  report(h, "kid", { kind: "child_settled", child_task_id: dlg(h, "kid").child_task_id, child_status: status, result_summary: `child ${status}`, artifact_ids: [], ...extra });
const tryFailed = (h: Harness, stepId: string, intent: string, retryable = true) => report(h, stepId, { kind: "try_failed", intent, error: "connection reset", retryable });
/** The intents outboundWork owes, by step. */
const owed = (h: Harness) => outboundWork(h.state).map((w) => ("delegation" in w ? `${w.delegation.step_id}:${w.intent}` : w.intent));
/** A task taken up: both delegated steps started (the child created, the peer's task accepted). */
function running(kid: Record<string, unknown> = {}, peer: Record<string, unknown> = {}): Harness {
  const h = task(kid, peer);
  reconcile(h);
  started(h, "kid");
  started(h, "peer", { remote_status: "TASK_STATE_WORKING" });
  return h;
}

describe("taking up a ready delegated step", () => {
  it("Should take up every ready delegated step at reconciliation: a runtime run and attempt, the step running, a starting delegation", () => {
    const h = task({}, { summary: "" });
    const d = reconcile(h);
    expect(types(d)).toEqual(["step_delegated", "step_delegated"]);
    expect(d.events.map((e) => e.step_id)).toEqual(["kid", "peer"]);
    expect(d.events[0]).toMatchObject({ actor_agent_id: "system" });
    const kid = dlg(h, "kid");
    expect(st(h, "kid")).toMatchObject({ status: "running", claimed_by_agent_id: "runtime", claimed_by_run_id: kid.run_id, current_attempt_id: kid.attempt_id, lease_expires_at: null });
    expect(h.state.runs.get(kid.run_id)).toMatchObject({ agent_id: "runtime", status: "active", current_step_id: "kid", allowed_step_ids: ["kid"], max_steps: 1, claims_used: 1 });
    expect(attemptsOf(h, "kid")).toMatchObject([{ agent_id: "runtime", status: "active", ordinal: 1, run_id: kid.run_id }]);
    expect(kid).toMatchObject({ kind: "task", native_protocol: "agent-task", status: "starting", tries: 0, remote_task_id: null, agent_card_ref: null, message: null, deadline_at: null });
    // The child's id is fixed before it exists, derived from the step, so every retry of create_child names it.
    expect(kid.child_task_id).toMatch(/^kid-/);
    expect(dlg(h, "peer")).toMatchObject({ kind: "a2a", native_protocol: "a2a", child_task_id: null, agent_card_ref: PEER_CARD, message: "Step peer", status: "starting" });
    expect(h.state.index.readyDelegated.size).toBe(0);
    expect(h.state.index.openDelegations).toEqual(new Set([kid.delegation_id, dlg(h, "peer").delegation_id]));
    consistent(h);
  });

  it("Should send the peer the step's title and summary unless the delegate names a message", () => {
    const h = task({}, { summary: "In French" });
    reconcile(h);
    expect(dlg(h, "peer").message).toBe("Step peer\n\nIn French");
    const other = task({}, { delegate: { ...PEER_DELEGATE, message: "Translate this" } });
    reconcile(other);
    expect(dlg(other, "peer").message).toBe("Translate this");
  });

  it("Should give a peer the default delegate timeout, a child none, and either the delegate's own timeout_ms", () => {
    const h = task();
    h.now += 5_000;
    reconcile(h);
    expect(dlg(h, "peer").deadline_at).toBe(iso(h.now + DEFAULT_LIMITS.delegateTimeoutMs));
    expect(dlg(h, "kid").deadline_at).toBeNull();
    const own = task({ delegate: { ...TASK_DELEGATE, timeout_ms: 10_000 } }, { delegate: { ...PEER_DELEGATE, timeout_ms: 20_000 } });
    reconcile(own);
    expect(dlg(own, "kid").deadline_at).toBe(iso(T0 + 10_000));
    expect(dlg(own, "peer").deadline_at).toBe(iso(T0 + 20_000));
  });

  it("Should be due at once for the alarm while ready, and take nothing up on a paused or blocked task until it goes on", () => {
    for (const [stop, resume] of [["pause_task", "resume_task"], ["block_task", "reopen_task"]] as const) {
      const h = task();
      expect(nextDeadline(h.state)).toBe(T0);
      h.ok({ type: stop, reason: "hold on" });
      expect(nextDeadline(h.state)).toBeNull();
      h.now += 1_000;
      expect(reconcile(h).events).toEqual([]);
      expect(st(h, "kid").status).toBe("ready");
      h.ok({ type: resume });
      expect(types(reconcile(h))).toEqual(["step_delegated", "step_delegated"]);
      consistent(h);
    }
  });

  it("Should not take up a step whose dependencies are unfinished, and take it up once they completed", () => {
    const h = new Harness();
    h.create([step("a"), step("kid", ["a"], { delegate: TASK_DELEGATE })]);
    expect(reconcile(h).events).toEqual([]);
    expect(st(h, "kid").status).toBe("pending");
    h.complete("a");
    expect(st(h, "kid").status).toBe("ready");
    expect(h.state.index.readyDelegated).toEqual(new Set(["kid"]));
    expect(types(reconcile(h))).toEqual(["step_delegated"]);
    consistent(h);
  });

  it("Should move the task from pending to running when a delegated step is its first step taken up", () => {
    const h = new Harness();
    h.create([step("kid", [], { delegate: TASK_DELEGATE })]);
    h.ok({ type: "pause_task" });
    h.ok({ type: "resume_task" });
    expect(h.state.task!.status).toBe("running");
    reconcile(h);
    expect(st(h, "kid").status).toBe("running");
    consistent(h);
  });
});

describe("a delegated step and workers", () => {
  it("Should refuse a worker's claim_step of a delegated step with permission_denied, writing nothing", () => {
    const h = task();
    const w = h.dispatch();
    const error = rejectsAs(h, { type: "claim_step", step_id: "kid" }, w, "permission_denied");
    expect(error.details).toMatchObject({ step_id: "kid", delegate: "task" });
    rejectsAs(h, { type: "claim_step", step_id: "peer" }, w, "permission_denied");
  });

  it("Should skip delegated steps in claim_next and tell a run with nothing else ready no_step_claimed", () => {
    const h = task();
    const w = h.dispatch({ max_steps: 2 });
    expect(h.ok({ type: "claim_next" }, w).value).toMatchObject({ kind: "claimed", step_id: "w" });
    h.ok({ type: "update_step", step_id: "w", status: "completed" }, w);
    const none = h.ok({ type: "claim_next" }, w);
    expect(none.value).toEqual({ kind: "no_step_claimed", reason: "no_ready_step" });
    expect(none.events).toEqual([]);
    expect(st(h, "kid").status).toBe("ready");
  });

  it("Should list a ready delegated step in the orchestrator's ready query of its pool, as any other query of its status does", () => {
    const h = task();
    const byStatus = q(h, orchestrator, { statuses: ["ready"] });
    expect(ids(byStatus)).toEqual(["kid", "peer", "w"]);
    const byPool = q(h, orchestrator, { statuses: ["ready"], worker_pool_id: "default" });
    expect(ids(byPool)).toEqual(["kid", "peer", "w"]);
    // A worker's default query lists only what it may claim.
    expect(ids(q(h, h.dispatch(), {}))).toEqual(["w"]);
  });

  it("Should refuse record_delegation and record_delivery from every token role with tool_not_available", () => {
    const h = task();
    reconcile(h);
    const w = h.dispatch();
    const approver: Actor = { role: "approver", session_id: SESSION, agent_id: "human", run_id: null };
    const cmd = { type: "record_delegation", delegation_id: dlg(h, "kid").delegation_id, report: { kind: "answered" } };
    for (const actor of [orchestrator, w, approver, observer]) {
      rejectsAs(h, cmd, actor, "tool_not_available");
      rejectsAs(h, { type: "record_delivery", delivery_state: "delivered" }, actor, "tool_not_available");
    }
  });

  it("Should refuse a report on an unknown delegation (not_found) and a child report naming another child (validation_error)", () => {
    const h = task();
    reconcile(h);
    rejectsAs(h, { type: "record_delegation", delegation_id: "dlg_missing", report: { kind: "answered" } }, systemCaller, "not_found");
    const wrong = { kind: "child_settled", child_task_id: "someone-else", child_status: "completed", result_summary: null, artifact_ids: [] };
    rejectsAs(h, { type: "record_delegation", delegation_id: dlg(h, "kid").delegation_id, report: wrong }, systemCaller, "validation_error");
  });
});

describe("reports of a child task", () => {
  it("Should record the child as started (active, callback) once; a repeated or stale started writes nothing", () => {
    const h = task();
    reconcile(h);
    const d = started(h, "kid");
    expect(types(d)).toEqual(["delegation_updated"]);
    expect(dlg(h, "kid")).toMatchObject({ status: "active", remote_task_id: dlg(h, "kid").child_task_id, delivery_mechanism: "callback" });
    expect(started(h, "kid").events).toEqual([]);
    // A child has no A2A status: a remote_status report for it changes nothing.
    expect(report(h, "kid", { kind: "remote_status", remote_status: "TASK_STATE_COMPLETED" }).events).toEqual([]);
    consistent(h);
  });

  it("Should complete the step with the child's result and artifacts, end its run finished and make dependants ready", () => {
    const h = running();
    remote(h, "COMPLETED");
    const d = childSettled(h, "completed", { result_summary: "three sources", artifact_ids: ["r2://sources.md"] });
    expect(types(d)).toEqual(["delegation_settled", "task_step_completed", "task_step_ready", "worker_run_ended"]);
    expect(payload(d.events[0])).toEqual({ delegation_id: dlg(h, "kid").delegation_id, outcome: "completed", reason: null, remote_status: "completed", cleanup: false });
    expect(st(h, "kid")).toMatchObject({ status: "completed", result_summary: "three sources", artifact_ids: ["r2://sources.md"], claimed_by_run_id: null });
    expect(attemptsOf(h, "kid")[0]).toMatchObject({ status: "completed" });
    expect(h.state.runs.get(dlg(h, "kid").run_id)).toMatchObject({ status: "finished", status_reason: "delegate_completed", current_step_id: null });
    expect(dlg(h, "kid")).toMatchObject({ status: "closed", outcome: "completed", remote_status: "completed" });
    expect(st(h, "after").status).toBe("ready");
    expect(h.state.index.openDelegations.has(dlg(h, "kid").delegation_id)).toBe(false);
    expect(childSettled(h, "completed").events).toEqual([]);
    consistent(h);
  });

  it.each([
    ["failed", "delegate_failed", "failed"],
    ["cancelled", "delegate_cancelled", "cancelled"],
  ])("Should fail the step when the child ended %s (reason %s), keeping none of its artifacts", (status, reason, runStatus) => {
    const h = running();
    const d = childSettled(h, status, { artifact_ids: ["half.md"] });
    expect(types(d)).toEqual(["delegation_settled", "task_step_failed", "worker_run_ended"]);
    expect(st(h, "kid")).toMatchObject({ status: "failed", status_reason: reason, artifact_ids: [] });
    expect(attemptsOf(h, "kid")[0]!.status).toBe("failed");
    expect(h.state.runs.get(dlg(h, "kid").run_id)).toMatchObject({ status: runStatus === "failed" ? "finished" : "cancelled", status_reason: reason });
    expect(dlg(h, "kid")).toMatchObject({ status: "closed", outcome: status, last_error: reason });
    consistent(h);
  });

  it("Should settle a child that reports before the started report arrived", () => {
    const h = task();
    reconcile(h);
    expect(types(childSettled(h, "completed"))).toEqual(["delegation_settled", "task_step_completed", "worker_run_ended"]);
    expect(started(h, "kid").events).toEqual([]);
    consistent(h);
  });
});

describe("reports of an A2A peer", () => {
  it("Should record the peer's task (active, its refs) and each change of its state once", () => {
    const h = task();
    reconcile(h);
    // Before the send got through, a status report belongs to nothing.
    expect(remote(h, "WORKING").events).toEqual([]);
    started(h, "peer", { remote_context_id: "ctx-9", remote_status: "TASK_STATE_SUBMITTED", delivery_mechanism: "streaming" });
    expect(dlg(h, "peer")).toMatchObject({ status: "active", remote_task_id: "rt-1", remote_context_id: "ctx-9", remote_status: "TASK_STATE_SUBMITTED", delivery_mechanism: "streaming" });
    expect(types(remote(h, "WORKING"))).toEqual(["delegation_updated"]);
    expect(remote(h, "WORKING").events).toEqual([]);
    // New artifacts on a working task are a change too.
    const withArtifact = remote(h, "WORKING", { artifacts: [{ artifact_id: "draft", name: null, text: "..." }] });
    expect(payload(withArtifact.events[0])).toMatchObject({ remote_artifact_refs: ["a2a:rt-1/draft"] });
    expect(st(h, "peer").status).toBe("running");
    consistent(h);
  });

  it("Should complete the step on COMPLETED, recording the artifacts as a2a:<task>/<artifact> refs first", () => {
    const h = running();
    const d = remote(h, "COMPLETED", { artifacts: [{ artifact_id: "a1", name: "report", text: "All good" }, { artifact_id: "a2", name: null, text: null }] });
    expect(types(d)).toEqual(["delegation_updated", "delegation_settled", "task_step_completed", "worker_run_ended"]);
    expect(payload(d.events[0])).toMatchObject({ remote_status: "TASK_STATE_COMPLETED", remote_artifact_refs: ["a2a:rt-1/a1", "a2a:rt-1/a2"] });
    expect(st(h, "peer")).toMatchObject({ status: "completed", result_summary: "All good", artifact_ids: ["a2a:rt-1/a1", "a2a:rt-1/a2"] });
    expect(dlg(h, "peer")).toMatchObject({ status: "closed", outcome: "completed", remote_artifact_refs: ["a2a:rt-1/a1", "a2a:rt-1/a2"] });
    expect(remote(h, "COMPLETED").events).toEqual([]);
    consistent(h);
  });

  it("Should summarize a completed peer task by its status message first, else by its state", () => {
    const h = running();
    remote(h, "COMPLETED", { status_message: "Done, see report" });
    expect(st(h, "peer").result_summary).toBe("Done, see report");
    const bare = running();
    remote(bare, "COMPLETED");
    expect(st(bare, "peer")).toMatchObject({ result_summary: "peer task rt-1 TASK_STATE_COMPLETED", artifact_ids: [] });
  });

  it.each([
    ["FAILED", "delegate_failed", "finished"],
    ["REJECTED", "delegate_failed", "finished"],
    ["CANCELED", "delegate_cancelled", "cancelled"],
  ])("Should fail the step on %s with reason %s", (state, reason, runStatus) => {
    const h = running();
    const d = remote(h, state, { status_message: "no can do", artifacts: [{ artifact_id: "partial", name: null, text: null }] });
    expect(types(d)).toEqual(["delegation_updated", "delegation_settled", "task_step_failed", "worker_run_ended"]);
    expect(st(h, "peer")).toMatchObject({ status: "failed", status_reason: reason, result_summary: "no can do", artifact_ids: [] });
    expect(h.state.runs.get(dlg(h, "peer").run_id)).toMatchObject({ status: runStatus, status_reason: reason });
    expect(dlg(h, "peer")).toMatchObject({ status: "closed", remote_status: `TASK_STATE_${state}` });
    consistent(h);
  });
});

describe("failed outbound calls", () => {
  it("Should try again after delegateRetryMs, doubling, until delegateMaxTries, then fail the attempt delegate_unreachable", () => {
    const h = task();
    reconcile(h);
    const waits: number[] = [];
    for (let tries = 1; tries < DEFAULT_LIMITS.delegateMaxTries; tries++) {
      const d = tryFailed(h, "kid", "create_child");
      expect(types(d)).toEqual(["delegation_try_failed"]);
      expect(payload(d.events[0])).toMatchObject({ intent: "create_child", error: "connection reset", tries });
      waits.push(Date.parse(dlg(h, "kid").next_try_at!) - h.now);
      // The outbox holds the call back until its next try is due.
      expect(outboundWork(h.state).find((w) => w.intent === "create_child")?.due_at).toBe(Date.parse(dlg(h, "kid").next_try_at!));
      h.now += 10;
    }
    expect(waits).toEqual([1_000, 2_000, 4_000, 8_000, 16_000]);
    expect(dlg(h, "kid")).toMatchObject({ status: "starting", tries: DEFAULT_LIMITS.delegateMaxTries - 1, last_error: "connection reset" });
    const last = tryFailed(h, "kid", "create_child");
    expect(types(last)).toEqual(["delegation_settled", "task_step_failed", "worker_run_ended"]);
    expect(st(h, "kid")).toMatchObject({ status: "failed", status_reason: "delegate_unreachable", result_summary: "create_child: connection reset" });
    expect(dlg(h, "kid")).toMatchObject({ status: "closed", outcome: "failed" });
    expect(owed(h)).not.toContain("kid:create_child");
    consistent(h);
  });

  it("Should cap the wait between tries at a minute", () => {
    const h = task();
    h.limits = { ...DEFAULT_LIMITS, delegateRetryMs: 40_000, delegateMaxTries: 4 };
    reconcile(h);
    const waits = [1, 2, 3].map(() => {
      tryFailed(h, "peer", "a2a_send");
      return Date.parse(dlg(h, "peer").next_try_at!) - h.now;
    });
    expect(waits).toEqual([40_000, 60_000, 60_000]);
  });

  it("Should start counting tries again after a call got through", () => {
    const h = task();
    reconcile(h);
    tryFailed(h, "peer", "a2a_send");
    tryFailed(h, "peer", "a2a_send");
    started(h, "peer");
    expect(dlg(h, "peer")).toMatchObject({ tries: 0, next_try_at: null });
    expect(payload(tryFailed(h, "peer", "a2a_follow").events[0])).toMatchObject({ tries: 1 });
  });

  it("Should fail the attempt at once (delegate_refused) when trying again cannot help", () => {
    const h = task();
    reconcile(h);
    expect(types(tryFailed(h, "peer", "a2a_send", false))).toEqual(["delegation_settled", "task_step_failed", "worker_run_ended"]);
    expect(st(h, "peer")).toMatchObject({ status: "failed", status_reason: "delegate_refused" });
    consistent(h);
  });

  it("Should lose the attempt when following the peer keeps failing (delegate_lost, attempt lost)", () => {
    const h = running();
    h.limits = { ...DEFAULT_LIMITS, delegateMaxTries: 2 };
    tryFailed(h, "peer", "a2a_follow");
    const d = tryFailed(h, "peer", "a2a_follow");
    expect(payload(d.events[0])).toMatchObject({ outcome: "lost", reason: "delegate_lost", cleanup: false });
    expect(st(h, "peer")).toMatchObject({ status: "failed", status_reason: "delegate_lost" });
    expect(attemptsOf(h, "peer")[0]!.status).toBe("lost");
    consistent(h);
  });

  it("Should write nothing for a failure of a call the delegation does not owe in its status", () => {
    const h = task();
    reconcile(h);
    for (const intent of ["a2a_follow", "a2a_answer", "a2a_cancel", "cancel_child"]) expect(tryFailed(h, "peer", intent).events).toEqual([]);
    started(h, "peer");
    for (const intent of ["a2a_send", "a2a_answer", "create_child"]) expect(tryFailed(h, "peer", intent).events).toEqual([]);
    expect(dlg(h, "peer").tries).toBe(0);
    consistent(h);
  });
});

describe("retry policy of a delegated step", () => {
  it("Should retry a failed delegation as a new attempt with a new delegation and a new child id, keeping the prior one", () => {
    const h = running({ retry_policy: POLICY });
    const first = dlg(h, "kid");
    const failed = childSettled(h, "failed");
    expect(payload(failed.events[1]).retry).toMatchObject({ attempts: 1, max_attempts: 2, retry_at: iso(h.now + 1_000) });
    h.now += 1_000;
    expect(types(reconcile(h))).toEqual(["task_step_reopened", "task_step_ready"]);
    const again = reconcile(h);
    expect(types(again)).toEqual(["step_delegated"]);
    expect(payload(again.events[0])).toMatchObject({ attempt_ordinal: 2 });
    const second = dlg(h, "kid");
    expect(second.delegation_id).not.toBe(first.delegation_id);
    expect(second.child_task_id).not.toBe(first.child_task_id);
    expect(second.run_id).not.toBe(first.run_id);
    expect(h.state.delegations.get(first.delegation_id)).toMatchObject({ status: "closed", outcome: "failed" });
    expect(h.state.delegations.size).toBe(3);
    expect(attemptsOf(h, "kid").map((a) => a.status)).toEqual(["failed", "active"]);
    // A late report of the first child changes nothing now.
    expect(h.ok({ type: "record_delegation", delegation_id: first.delegation_id, report: { kind: "child_settled", child_task_id: first.child_task_id, child_status: "completed", result_summary: null, artifact_ids: [] } }, systemCaller).events).toEqual([]);
    expect(owed(h)).toContain("kid:create_child");
    consistent(h);
  });

  it("Should retry a timed-out peer task and tell the old one to stop", () => {
    const h = running({}, { retry_policy: POLICY });
    const first = dlg(h, "peer");
    h.now = Date.parse(first.deadline_at!);
    reconcile(h);
    h.now += 1_000;
    reconcile(h);
    reconcile(h);
    expect(dlg(h, "peer").delegation_id).not.toBe(first.delegation_id);
    expect(h.state.delegations.get(first.delegation_id)!.status).toBe("cancelling");
    expect(owed(h).filter((i) => i.startsWith("peer:"))).toEqual(["peer:a2a_cancel", "peer:a2a_send"]);
    consistent(h);
  });
});

describe("a step's claim that ends while its delegate is live", () => {
  it.each(["cancel_task", "fail_task"] as const)("Should ask the child to stop on %s, the run cancelling until the child's report ends it", (stop) => {
    const h = running();
    const d = h.ok({ type: stop, reason: "no longer needed" });
    const reason = stop === "cancel_task" ? "task_cancelled" : "task_failed";
    expect(types(d).slice(-3)).toEqual([stop === "cancel_task" ? "task_cancelled" : "task_failed", "delegation_cancel_requested", "delegation_cancel_requested"]);
    expect(d.events.filter((e) => e.event_type === "delegation_cancel_requested").map((e) => [e.step_id, payload(e).reason])).toEqual([
      ["kid", reason],
      ["peer", reason],
    ]);
    const kid = dlg(h, "kid");
    expect(kid).toMatchObject({ status: "cancelling", outcome: "cancelled" });
    expect(h.state.runs.get(kid.run_id)).toMatchObject({ status: "cancelling", cancel_request: { reason } });
    expect(owed(h)).toEqual(["kid:cancel_child", "peer:a2a_cancel"]);
    expect(types(report(h, "kid", { kind: "cancel_acknowledged", remote_state: "cancelled" }))).toEqual(["delegation_updated"]);
    expect(dlg(h, "kid").cancel_sent_at).toBe(iso(h.now));
    expect(report(h, "kid", { kind: "cancel_acknowledged", remote_state: "cancelled" }).events).toEqual([]);
    expect(owed(h)).toEqual(["peer:a2a_cancel"]);
    expect(h.state.runs.get(kid.run_id)!.status).toBe("cancelling");
    const end = childSettled(h, "cancelled");
    expect(types(end)).toEqual(["delegation_updated", "delegation_closed", "worker_run_ended"]);
    expect(payload(end.events[2])).toMatchObject({ status: "cancelled", reason, cancel_requested: true });
    expect(dlg(h, "kid").status).toBe("closed");
    consistent(h);
  });

  it("Should end an A2A cancellation when the peer reports its task terminal, after the cancel was sent", () => {
    const h = running();
    h.ok({ type: "cancel_task" });
    report(h, "peer", { kind: "cancel_acknowledged", remote_state: "cancelled" });
    expect(owed(h)).toContain("peer:a2a_follow");
    expect(types(remote(h, "WORKING"))).toEqual([]);
    expect(types(remote(h, "CANCELED"))).toEqual(["delegation_updated", "delegation_closed", "worker_run_ended"]);
    expect(dlg(h, "peer")).toMatchObject({ status: "closed", remote_status: "TASK_STATE_CANCELED" });
    expect(h.state.runs.get(dlg(h, "peer").run_id)!.status).toBe("cancelled");
    consistent(h);
  });

  it("Should time the cancellation out (child_agent_cancel_timeout) if the delegate never reports, still owing the cancel", () => {
    const h = running();
    h.ok({ type: "fail_task", reason: "budget" });
    h.now += DEFAULT_LIMITS.childCancelTimeoutMs;
    const d = reconcile(h);
    expect(types(d)).toEqual(["child_agent_cancel_timeout", "worker_run_ended", "child_agent_cancel_timeout", "worker_run_ended"]);
    expect(h.state.runs.get(dlg(h, "kid").run_id)).toMatchObject({ status: "cancelled", status_reason: "child_agent_cancel_timeout" });
    expect(dlg(h, "kid").status).toBe("cancelling");
    expect(owed(h)).toEqual(["kid:cancel_child", "peer:a2a_cancel"]);
    // The child's late report only closes the delegation: its run is over.
    expect(types(childSettled(h, "cancelled"))).toEqual(["delegation_updated", "delegation_closed"]);
    consistent(h);
  });

  it("Should close a delegation whose delegate was never created when the cancellation says so", () => {
    const h = task();
    reconcile(h);
    h.ok({ type: "cancel_task" });
    expect(owed(h)).toEqual(["kid:cancel_child", "peer:a2a_cancel"]);
    const d = report(h, "peer", { kind: "cancel_acknowledged", remote_state: "not_created" });
    expect(types(d)).toEqual(["delegation_closed", "worker_run_ended"]);
    expect(dlg(h, "peer").status).toBe("closed");
    consistent(h);
  });

  it("Should record the refs of a peer task that started while its cancellation was pending, keeping it cancelling", () => {
    const h = task();
    reconcile(h);
    h.ok({ type: "cancel_task" });
    started(h, "peer");
    expect(dlg(h, "peer")).toMatchObject({ status: "cancelling", remote_task_id: "rt-1" });
    expect(started(h, "peer").events).toEqual([]);
    consistent(h);
  });

  it("Should give the cancellation up once its tries run out, closing the delegation", () => {
    const h = running();
    h.limits = { ...DEFAULT_LIMITS, delegateMaxTries: 2 };
    h.ok({ type: "cancel_task" });
    tryFailed(h, "peer", "a2a_cancel");
    const d = tryFailed(h, "peer", "a2a_cancel");
    expect(types(d)).toEqual(["delegation_closed", "worker_run_ended"]);
    expect(payload(d.events[0]).reason).toMatch(/^cancellation not confirmed: a2a_cancel/);
    consistent(h);
  });

  it("Should ask the delegate to stop when the orchestrator cancels the runtime's run, ending the run at once", () => {
    const h = running();
    const d = h.ok({ type: "cancel_run", run_id: dlg(h, "kid").run_id, reason: "replan" });
    expect(types(d)).toEqual(["task_step_failed", "worker_run_ended", "delegation_cancel_requested"]);
    expect(st(h, "kid").status).toBe("failed");
    expect(dlg(h, "kid")).toMatchObject({ status: "cancelling" });
    expect(owed(h)).toContain("kid:cancel_child");
    expect(types(childSettled(h, "cancelled"))).toEqual(["delegation_updated", "delegation_closed"]);
    consistent(h);
  });

  it("Should ask the delegate to stop when the orchestrator settles the delegated step itself", () => {
    const h = running();
    const d = h.ok({ type: "update_step", step_id: "peer", status: "completed", result_summary: "did it by hand" });
    expect(types(d)).toEqual(["task_step_completed", "delegation_cancel_requested"]);
    expect(payload(d.events[1]).reason).toBe("task_step_completed");
    expect(dlg(h, "peer").status).toBe("cancelling");
    // The peer's late completion does not change the step the orchestrator completed.
    remote(h, "COMPLETED", { status_message: "too late" });
    expect(st(h, "peer")).toMatchObject({ status: "completed", result_summary: "did it by hand" });
    expect(dlg(h, "peer").status).toBe("closed");
    consistent(h);
  });
});

describe("a peer that asks for input", () => {
  /** A peer task waiting for input (the delegate's own timeout beyond the action's). */
  function asking(): Harness {
    const h = running({}, { delegate: { ...PEER_DELEGATE, timeout_ms: 2 * DEFAULT_LIMITS.actionTimeoutMs } });
    remote(h, "INPUT_REQUIRED", { status_message: "Which region?" });
    return h;
  }

  it("Should open an input action on the step for the peer's question, the delegation input_required", () => {
    const h = asking();
    const d = dlg(h, "peer");
    expect(d).toMatchObject({ status: "input_required", remote_status: "TASK_STATE_INPUT_REQUIRED" });
    expect(h.state.actions.get(d.input_action_id!)).toMatchObject({
      kind: "input",
      status: "open",
      step_id: "peer",
      prompt: "Which region?",
      attempt_id: d.attempt_id,
      run_id: d.run_id,
      expires_at: iso(h.now + DEFAULT_LIMITS.actionTimeoutMs),
    });
    // Asking again while the question is open opens nothing new.
    expect(types(remote(h, "INPUT_REQUIRED"))).toEqual([]);
    expect(owed(h)).toContain("peer:a2a_follow");
    consistent(h);
  });

  it("Should send a submitted answer back (answering, a2a_answer with its text), then go on when it was delivered", () => {
    const h = asking();
    const action = dlg(h, "peer").input_action_id!;
    const d = h.ok({ type: "respond_action", action_id: action, decision: "submitted", input: { region: "eu" } });
    expect(types(d)).toEqual(["action_resolved", "delegation_updated"]);
    expect(dlg(h, "peer").status).toBe("answering");
    const answer = outboundWork(h.state).find((w) => w.intent === "a2a_answer");
    expect(answer).toMatchObject({ message_id: `${dlg(h, "peer").delegation_id}-${action}`, text: '{"region":"eu"}' });
    expect(types(report(h, "peer", { kind: "answered" }))).toEqual(["delegation_updated"]);
    expect(dlg(h, "peer")).toMatchObject({ status: "active", input_action_id: null });
    expect(report(h, "peer", { kind: "answered" }).events).toEqual([]);
    expect(owed(h)).toContain("peer:a2a_follow");
    consistent(h);
  });

  it("Should keep the step lease-free when its question is answered, so the runtime's hold never expires as a worker's would", () => {
    const h = asking();
    h.ok({ type: "respond_action", action_id: dlg(h, "peer").input_action_id!, decision: "submitted", input: "eu" });
    expect(st(h, "peer").lease_expires_at).toBeNull();
    h.now += 2 * LEASE_MS;
    expect(reconcile(h).events).toEqual([]);
    expect(dlg(h, "peer").status).toBe("answering");
    expect(st(h, "peer")).toMatchObject({ status: "running", claimed_by_agent_id: "runtime" });
    consistent(h);
  });

  it("Should keep the step lease-free when the orchestrator records a result on it while it runs", () => {
    const h = running();
    h.ok({ type: "update_step", step_id: "kid", status: "running", result_summary: "halfway, says the child" });
    expect(st(h, "kid")).toMatchObject({ status: "running", result_summary: "halfway, says the child", lease_expires_at: null });
    h.now += 2 * LEASE_MS;
    expect(reconcile(h).events).toEqual([]);
    expect(dlg(h, "kid").status).toBe("active");
    consistent(h);
  });

  it("Should keep the step lease-free when the orchestrator's own action on it is answered", () => {
    const h = running();
    const asked = h.ok({ type: "request_action", step_id: "kid", kind: "approval", prompt: "Keep the child going?" }).value as { action_id: string };
    h.ok({ type: "respond_action", action_id: asked.action_id, decision: "approved" });
    expect(st(h, "kid").lease_expires_at).toBeNull();
    h.now += 2 * LEASE_MS;
    expect(reconcile(h).events).toEqual([]);
    expect(dlg(h, "kid").status).toBe("active");
    consistent(h);
  });

  it("Should end the attempt and tell the peer to stop when the answer cannot be delivered", () => {
    const h = asking();
    h.ok({ type: "respond_action", action_id: dlg(h, "peer").input_action_id!, decision: "submitted", input: "eu" });
    const d = tryFailed(h, "peer", "a2a_answer", false);
    expect(payload(d.events[0])).toMatchObject({ outcome: "failed", reason: "delegate_refused", cleanup: true });
    expect(dlg(h, "peer").status).toBe("cancelling");
    expect(owed(h)).toContain("peer:a2a_cancel");
    consistent(h);
  });

  it("Should not open a second action on a step that already waits for one, and ask once that one is answered", () => {
    const h = running();
    const approval = h.ok({ type: "request_action", step_id: "peer", kind: "approval", prompt: "Keep going?" }).value as { action_id: string };
    const d = remote(h, "INPUT_REQUIRED", { status_message: "Which region?" });
    expect(types(d)).toEqual(["delegation_updated"]);
    expect(dlg(h, "peer")).toMatchObject({ status: "active", input_action_id: null, remote_status: "TASK_STATE_INPUT_REQUIRED" });
    expect([...h.state.actions.values()].filter((a) => a.status === "open").map((a) => a.action_id)).toEqual([approval.action_id]);
    h.ok({ type: "respond_action", action_id: approval.action_id, decision: "approved" });
    // The next poll still finds the peer waiting: now its question is asked.
    expect(types(remote(h, "INPUT_REQUIRED", { status_message: "Which region?" }))).toEqual(["delegation_updated", "action_requested"]);
    h.ok({ type: "respond_action", action_id: dlg(h, "peer").input_action_id!, decision: "submitted", input: "eu" });
    expect(dlg(h, "peer").status).toBe("answering");
    consistent(h);
  });

  it.each(["rejected", "expired"] as const)("Should fail the step when the question is %s and tell the peer to stop", (decision) => {
    const h = asking();
    const d =
      decision === "rejected"
        ? h.ok({ type: "respond_action", action_id: dlg(h, "peer").input_action_id!, decision: "rejected" })
        : ((h.now += DEFAULT_LIMITS.actionTimeoutMs), reconcile(h));
    expect(types(d)).toEqual(["action_resolved", "delegation_settled", "task_step_failed", "worker_run_ended"]);
    expect(payload(d.events[1])).toMatchObject({ outcome: "failed", reason: `delegate_input_${decision}`, cleanup: true });
    expect(st(h, "peer")).toMatchObject({ status: "failed", status_reason: `delegate_input_${decision}` });
    expect(dlg(h, "peer")).toMatchObject({ status: "cancelling", outcome: "failed" });
    expect(owed(h)).toContain("peer:a2a_cancel");
    consistent(h);
  });
});

describe("a delegate's deadline", () => {
  it("Should end the attempt timed_out at the deadline, not before, and tell the delegate to stop", () => {
    const h = running({ delegate: { ...TASK_DELEGATE, timeout_ms: 10_000 } });
    expect(nextDeadline(h.state)).toBe(T0 + 10_000);
    h.now = T0 + 9_999;
    expect(reconcile(h).events).toEqual([]);
    h.now += 1;
    const d = reconcile(h);
    expect(types(d)).toEqual(["delegation_settled", "task_step_failed", "worker_run_ended"]);
    expect(payload(d.events[0])).toMatchObject({ outcome: "timed_out", reason: "delegate_timeout", cleanup: true });
    expect(st(h, "kid")).toMatchObject({ status: "failed", status_reason: "delegate_timeout" });
    expect(attemptsOf(h, "kid")[0]!.status).toBe("timed_out");
    expect(h.state.runs.get(dlg(h, "kid").run_id)!.status).toBe("timed_out");
    expect(dlg(h, "kid")).toMatchObject({ status: "cancelling", outcome: "timed_out" });
    expect(owed(h)).toContain("kid:cancel_child");
    // Once cancelling, the deadline is over: nothing more is due for it.
    expect(reconcile(h).events).toEqual([]);
    consistent(h);
  });

  it("Should reopen at once, in the same pass, a timed-out step whose policy retries without backoff (as a lost lease is)", () => {
    const now = { max_attempts: 2, initial_interval_ms: 0, backoff_coefficient: 1, max_interval_ms: 0 };
    const h = running({ delegate: { ...TASK_DELEGATE, timeout_ms: 10_000 }, retry_policy: now });
    h.now = T0 + 10_000;
    const d = reconcile(h);
    expect(types(d)).toEqual(["delegation_settled", "task_step_failed", "worker_run_ended", "task_step_reopened", "task_step_ready"]);
    expect(st(h, "kid")).toMatchObject({ status: "ready", retry_at: null });
    consistent(h);
  });

  it("Should time a peer out after delegateTimeoutMs by default, and never a child without timeout_ms", () => {
    const h = running();
    h.now = T0 + DEFAULT_LIMITS.delegateTimeoutMs;
    const d = reconcile(h);
    expect(d.events.filter((e) => e.event_type === "delegation_settled").map((e) => e.step_id)).toEqual(["peer"]);
    expect(dlg(h, "kid").status).toBe("active");
    h.now += 30 * 86_400_000;
    expect(reconcile(h).events).toEqual([]);
    consistent(h);
  });
});

describe("outboundWork", () => {
  it("Should owe create_child with the child task's full request while a child delegation is starting", () => {
    const h = task();
    reconcile(h);
    const kid = dlg(h, "kid");
    const work = outboundWork(h.state).find((w) => w.intent === "create_child");
    expect(work).toEqual({
      intent: "create_child",
      delegation: kid,
      due_at: 0,
      child: {
        task_id: kid.child_task_id,
        wal_name: kid.child_task_id,
        title: "Research",
        summary: "Find the sources",
        objective: null,
        steps: CHILD_TASK.steps,
        parent_task_id: TASK,
        root_task_id: TASK,
        delegated_from: { task_id: TASK, step_id: "kid", delegation_id: kid.delegation_id },
      },
    });
    expect(outboundWork(h.state).find((w) => w.intent === "a2a_send")).toMatchObject({ message_id: `${dlg(h, "peer").delegation_id}-send`, text: "Step peer\n\nDo peer", due_at: 0 });
  });

  it("Should owe each status's call: starting send, active/input_required follow, answering answer, cancelling cancel then follow, closed nothing", () => {
    const h = task();
    expect(owed(h)).toEqual([]);
    reconcile(h);
    expect(owed(h)).toEqual(["kid:create_child", "peer:a2a_send"]);
    started(h, "kid");
    started(h, "peer");
    // A child reports by itself: an active child delegation owes nothing.
    expect(owed(h)).toEqual(["peer:a2a_follow"]);
    remote(h, "INPUT_REQUIRED");
    expect(owed(h)).toEqual(["peer:a2a_follow"]);
    h.ok({ type: "respond_action", action_id: dlg(h, "peer").input_action_id!, decision: "submitted", input: "yes" });
    expect(owed(h)).toEqual(["peer:a2a_answer"]);
    report(h, "peer", { kind: "answered" });
    h.ok({ type: "cancel_task" });
    expect(owed(h)).toEqual(["kid:cancel_child", "peer:a2a_cancel"]);
    report(h, "kid", { kind: "cancel_acknowledged", remote_state: "already_terminal" });
    report(h, "peer", { kind: "cancel_acknowledged", remote_state: "cancelled" });
    expect(owed(h)).toEqual(["peer:a2a_follow"]);
    childSettled(h, "completed");
    remote(h, "CANCELED");
    expect(owed(h)).toEqual([]);
    expect(h.state.index.openDelegations.size).toBe(0);
    consistent(h);
  });
});

describe("a child task and its parent", () => {
  const FROM = { task_id: "task_parent", step_id: "kid", delegation_id: "dlg_parent" };
  /** A child task as its parent's create_child creates it. */
  function child(): Harness {
    const h = new Harness();
    h.create([step("a"), step("b"), step("c", [], { required: false })], { delegated_from: FROM });
    return h;
  }

  it("Should record its parent link, owe nothing while it runs, and refuse no delivery report yet", () => {
    const h = child();
    expect(h.state.task).toMatchObject({ delegated_from: FROM, delivery_state: null });
    expect(childReport(h.state)).toBeNull();
    expect(outboundWork(h.state)).toEqual([]);
    expect(h.ok({ type: "record_delivery", delivery_state: "delivered" }, systemCaller).events).toEqual([]);
    expect(h.state.task!.delivery_state).toBeNull();
  });

  it("Should owe its parent a report when it completes: completed steps' results in order and their artifacts once each", () => {
    const h = child();
    const wb = h.claimWith("b");
    h.ok({ type: "update_step", step_id: "b", status: "completed", result_summary: "b found", artifact_ids: ["x.md", "y.md"] }, wb);
    const wa = h.claimWith("a");
    h.ok({ type: "update_step", step_id: "a", status: "completed", result_summary: "a found", artifact_ids: ["y.md", "z.md"] }, wa);
    h.ok({ type: "complete_task" });
    expect(h.state.task!.delivery_state).toBe("pending");
    const expected = { parent_task_id: "task_parent", step_id: "kid", delegation_id: "dlg_parent", child_task_id: TASK, child_status: "completed", result_summary: "Step a: a found\nStep b: b found", artifact_ids: ["y.md", "z.md", "x.md"] };
    expect(childReport(h.state)).toEqual(expected);
    expect(outboundWork(h.state)).toEqual([{ intent: "deliver", due_at: 0, report: expected }]);
    consistent(h);
  });

  it("Should report a failed or cancelled child by the reason it ended with, or by its status", () => {
    const failed = child();
    failed.ok({ type: "fail_task", reason: "sources are gone" });
    expect(childReport(failed.state)).toMatchObject({ child_status: "failed", result_summary: "sources are gone", artifact_ids: [] });
    const cancelled = child();
    cancelled.ok({ type: "cancel_task" });
    expect(childReport(cancelled.state)).toMatchObject({ child_status: "cancelled", result_summary: `child task ${TASK} cancelled` });
  });

  it("Should record the delivery once: a later report writes nothing and nothing more is owed", () => {
    const h = child();
    h.ok({ type: "cancel_task" });
    const d = h.ok({ type: "record_delivery", delivery_state: "parent_missing", detail: "the parent is gone" }, systemCaller);
    expect(types(d)).toEqual(["task_delivery_recorded"]);
    expect(payload(d.events[0])).toEqual({ delivery_state: "parent_missing", detail: "the parent is gone" });
    expect(h.state.task!.delivery_state).toBe("parent_missing");
    expect(outboundWork(h.state)).toEqual([]);
    expect(h.ok({ type: "record_delivery", delivery_state: "delivered" }, systemCaller).events).toEqual([]);
    expect(h.state.task!.delivery_state).toBe("parent_missing");
    consistent(h);
  });

  it("Should refuse a delivery report on a task that is nobody's child (invalid_transition), writing nothing", () => {
    const h = new Harness();
    h.create([step("a")]);
    h.ok({ type: "cancel_task" });
    rejectsAs(h, { type: "record_delivery", delivery_state: "delivered" }, systemCaller, "invalid_transition");
    expect(h.state.task!.delivery_state).toBeNull();
    expect(childReport(h.state)).toBeNull();
  });

  it("Should refuse a pending delivery state in a report (validation_error)", () => {
    const h = child();
    h.ok({ type: "cancel_task" });
    rejectsAs(h, { type: "record_delivery", delivery_state: "pending" }, systemCaller, "validation_error");
  });
});
