/**
 * The replay slider's promise: the DAG rebuilt from a WAL prefix by the core's `replay` (what TaskModel.stateAt
 * draws) is exactly the state the live model held when it had read that far.
 */
import { describe, expect, it } from "vitest";
import type { RuntimeClient } from "../../src/client/index.js";
import { type DagState, replay, type WalEvent } from "../../src/core/index.js";
import { TaskModel } from "../../dashboard/src/model/task-model.js";
import { Harness, SESSION, step, TASK } from "../core/harness.js";

const POLICY = { max_attempts: 2, initial_interval_ms: 1_000, backoff_coefficient: 2, max_interval_ms: 10_000 };
const MINUTE = 60_000;

/** A harness that keeps a copy of its live state after every accepted command, by the wal_seq it reached. */
class RecordingHarness extends Harness {
  readonly snapshots = new Map<number, DagState>();

  override run(command: Record<string, unknown>, actor?: Parameters<Harness["run"]>[1]) {
    const decision = super.run(command, actor);
    if (decision.ok && decision.events.length > 0) this.snapshots.set(this.state.last_wal_seq, structuredClone(this.state));
    return decision;
  }
}

const actionId = (d: { value: unknown }) => (d.value as { action_id: string }).action_id;

/**
 * A task that goes through most of what a DAG does: an approval, a pause, a step updated after dispatch, an input
 * action, a failure retried by the policy, progress, a lease lost until the retries run out, a step added, a
 * cancelled run, and the task completed.
 */
function scenario(): RecordingHarness {
  const h = new RecordingHarness();
  h.create([step("a", [], { retry_policy: POLICY }), step("b", ["a"]), step("c", [], { retry_policy: POLICY }), step("d", ["b"], { required: false })], { step_lease_timeout_ms: MINUTE });
  const plan = h.ok({ type: "request_action", kind: "approval", prompt: "Approve the plan?" });
  h.ok({ type: "respond_action", action_id: actionId(plan), decision: "approved", comment: "go" });
  h.ok({ type: "pause_task", reason: "budget review" });
  h.ok({ type: "resume_task", reason: "budget approved" });
  const wa = h.claimWith("a");
  h.ok({ type: "update_task", ops: [{ op: "update_step", step_id: "a", fields: { summary: "Do a, carefully" } }] });
  h.ok({ type: "update_step", step_id: "a", status: "running" }, wa);
  h.ok({ type: "append_progress", step_id: "a", phase: "fetch", summary: "half way", counters: { pages: 5 } }, wa);
  const ask = h.ok({ type: "request_action", step_id: "a", kind: "input", prompt: "Which region?", input_schema: { type: "object", required: ["region"] } }, wa);
  h.ok({ type: "respond_action", action_id: actionId(ask), decision: "submitted", input: { region: "eu" } });
  h.ok({ type: "update_step", step_id: "a", status: "failed", reason: "flaky" }, wa);
  h.now += 1_000;
  h.ok({ type: "reconcile_leases" });
  h.complete("a");
  h.claimWith("c");
  h.now += MINUTE;
  h.ok({ type: "reconcile_leases" });
  h.now += 1_000;
  h.ok({ type: "reconcile_leases" });
  h.claimWith("c");
  h.now += MINUTE;
  h.ok({ type: "reconcile_leases" });
  h.ok({ type: "update_task", ops: [{ op: "add_step", step: step("e", ["b"]) }, { op: "reopen_step", step_id: "c" }] });
  const wb = h.claimWith("b");
  h.ok({ type: "cancel_run", run_id: wb.run_id!, reason: "replan" });
  h.ok({ type: "update_task", ops: [{ op: "reopen_step", step_id: "b" }] });
  h.complete("b");
  h.complete("c");
  h.complete("e");
  h.ok({ type: "update_task", ops: [{ op: "cancel_step", step_id: "d" }] });
  h.ok({ type: "complete_task" });
  return h;
}

/** A client whose walExport serves `wal` in pages of the sizes given in turn (the last size repeats). */
function walClient(wal: readonly WalEvent[], sizes: readonly number[], until: () => number): RuntimeClient {
  let call = 0;
  return {
    async walExport(_task: unknown, query: { after_seq?: number; limit?: number }) {
      const after = query.after_seq ?? 0;
      const size = sizes[Math.min(call++, sizes.length - 1)]!;
      const events = wal.slice(after, Math.min(after + size, until()));
      return { events, text: events.map((e) => JSON.stringify(e)).join("\n"), last_wal_seq: events.at(-1)?.wal_seq ?? after };
    },
  } as unknown as RuntimeClient;
}

describe("the replay slider's DAG", () => {
  it("Should rebuild, with the core's replay of the WAL prefix, the state the core held live at every wal_seq it reached", () => {
    const h = scenario();
    expect(h.state.task?.status).toBe("completed");
    expect(h.snapshots.size).toBeGreaterThan(20);
    for (const [seq, live] of h.snapshots) {
      const rebuilt = replay(h.wal.slice(0, seq));
      expect(rebuilt.last_wal_seq).toBe(seq);
      expect(structuredClone(rebuilt), `wal_seq ${seq}`).toEqual(live);
    }
  });

  it("Should draw at an earlier wal_seq (TaskModel.stateAt) exactly what the dashboard's live model showed when it was there", async () => {
    const h = scenario();
    let served = 0;
    const model = new TaskModel(walClient(h.wal, [3, 1, 7, 2, 5], () => served), SESSION, TASK);
    const shown = new Map<number, DagState>();
    model.onChange(() => shown.set(model.walSeq, structuredClone(model.state)));
    // The WAL grows a few events at a time, as the live stream reports it; each catch-up reads what is new.
    while (served < h.wal.length) {
      served = Math.min(h.wal.length, served + 4);
      await model.catchUp();
    }
    expect(model.walSeq).toBe(h.wal.length);
    expect(shown.size).toBeGreaterThan(h.wal.length / 7);
    for (const [seq, live] of shown) {
      if (seq === model.walSeq) continue;
      const replayed = model.stateAt(seq);
      expect(replayed).not.toBe(model.state);
      expect(structuredClone(replayed), `wal_seq ${seq}`).toEqual(live);
    }
    // And the same against the core's own live state at those seqs.
    for (const seq of shown.keys()) if (h.snapshots.has(seq)) expect(structuredClone(model.stateAt(seq))).toEqual(h.snapshots.get(seq));
  });

  it("Should rebuild each wal_seq up to and including its event, and answer the live state itself at the last one", () => {
    const h = scenario();
    const model = new TaskModel(walClient(h.wal, [h.wal.length], () => h.wal.length), SESSION, TASK);
    return model.catchUp().then(() => {
      let previous = model.stateAt(0);
      expect(previous.task).toBeNull();
      for (let seq = 1; seq < h.wal.length; seq += 1) {
        const at = model.stateAt(seq);
        expect(at.last_wal_seq).toBe(seq);
        const event = h.wal[seq - 1]!;
        // The state right after an event shows that event's effect.
        if (event.event_type === "task_step_completed") expect(at.steps.get(event.step_id!)?.status).toBe("completed");
        if (event.event_type === "task_step_claimed") expect(at.steps.get(event.step_id!)?.status).toBe("claimed");
        if (event.event_type === "task_paused") expect(at.task?.status).toBe("paused");
        previous = at;
      }
      expect(previous.task?.status).not.toBe("completed");
      expect(model.stateAt(h.wal.length)).toBe(model.state);
    });
  });
});
