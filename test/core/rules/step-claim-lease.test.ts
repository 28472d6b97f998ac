/**
 * Claims and leases (docs/model.md "Claims and leases"): one test (or table row) per rule. Every rejected command is checked to write nothing.
 */
import { describe, expect, it } from "vitest";
import { type Actor, nextDeadline, replay } from "../../../src/core/index.js";
import { Harness, observer, orchestrator, step, T0 } from "../harness.js";
import { types, payload, LEASE_MS, iso, rejectsAs, typesOf, q, ids, st, runOf, attemptsOf, base, byType } from "./support.js";

describe("Step Claim Lease", () => {
  it("a claim is held under a lease that lapses unless renewed", () => {
    const h = base();
    const w = h.claimWith("a");
    expect(st(h, "a").lease_expires_at).toBe(iso(T0 + LEASE_MS));
    expect(nextDeadline(h.state)).toBe(T0 + LEASE_MS);
    h.now = T0 + LEASE_MS;
    h.ok({ type: "reconcile_leases" });
    expect(st(h, "a")).toMatchObject({ status: "ready", claimed_by_run_id: null });
    rejectsAs(h, { type: "update_step", step_id: "a", status: "completed" }, w, "permission_denied");
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
    rejectsAs(h, { type: "claim_step", step_id: "a" }, w2, "step_already_claimed");
    h.now = T0 + LEASE_MS - 1;
    expect(h.ok({ type: "reconcile_leases" }).events).toEqual([]);
    rejectsAs(h, { type: "claim_step", step_id: "a" }, w2, "step_already_claimed");
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
    rejectsAs(h, { type: "update_step", step_id: "a", status: "completed" }, w1, "permission_denied");
    rejectsAs(h, { type: "claim_step", step_id: "c" }, w1, "step_already_claimed_by_run");
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

  it("a lease and its run's deadline due at the same instant: the lease expires first, so the run ends timed_out without failing the step", () => {
    const h = base();
    const w = h.claimWith("a", { timeout_ms: LEASE_MS });
    expect(runOf(h, w).deadline_at).toBe(st(h, "a").lease_expires_at);
    h.now = T0 + LEASE_MS;
    const d = h.ok({ type: "reconcile_leases" });
    expect(h.types(d)).toEqual(["task_step_lease_expired", "task_step_ready", "worker_run_ended"]);
    expect(st(h, "a")).toMatchObject({ status: "ready", claimed_by_run_id: null });
    expect(runOf(h, w)).toMatchObject({ status: "timed_out", status_reason: "worker_timeout" });
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
