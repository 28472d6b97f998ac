/**
 * How a delegation records the way its peer is followed (docs/model.md "Delegated steps"): polling GetTask from the
 * alarm, or the peer's SubscribeToTask stream where its Agent Card offers one. Each switch, to the stream and back
 * to polling after a stream failed, is a fact on the delegation (delegation_updated carries delivery_mechanism);
 * a report that only repeats the current mechanism and status writes nothing.
 */
import { describe, expect, it } from "vitest";
import { replay } from "../../../../src/core/index.js";
import { Harness, step } from "../../harness.js";
import { payload, systemCaller, types } from "../support.js";

const CARD = "https://peer.example/.well-known/agent-card.json";

/** A task whose one step is delegated to an A2A peer, taken up and started (the peer accepted the message). */
function delegated(): { h: Harness; delegationId: string } {
  const h = new Harness();
  h.create([step("remote", [], { delegate: { kind: "a2a", agent_card_url: CARD } })]);
  h.ok({ type: "reconcile_leases" }, systemCaller);
  const [delegationId] = [...h.state.delegations.keys()];
  if (delegationId === undefined) throw new Error("the step was not delegated");
  h.ok(record(delegationId, { kind: "started", remote_task_id: "peer-task-1", remote_context_id: "ctx-1", remote_status: "TASK_STATE_SUBMITTED", delivery_mechanism: "polling" }), systemCaller);
  return { h, delegationId };
}

const record = (delegationId: string, report: Record<string, unknown>) => ({ type: "record_delegation", delegation_id: delegationId, report });
const seen = (delegationId: string, remoteStatus: string, extra: Record<string, unknown> = {}) =>
  record(delegationId, { kind: "remote_status", remote_status: remoteStatus, status_message: null, artifacts: [], ...extra });

describe("delegation delivery_mechanism (peer followed by polling or by its stream)", () => {
  it("Should record the switch to streaming as a delegation_updated, even when the peer's status did not change", () => {
    const { h, delegationId } = delegated();
    expect(h.state.delegations.get(delegationId)!.delivery_mechanism).toBe("polling");
    const d = h.ok(seen(delegationId, "TASK_STATE_SUBMITTED", { delivery_mechanism: "streaming" }), systemCaller);
    expect(types(d)).toEqual(["delegation_updated"]);
    expect(payload(d.events[0])).toEqual({ delegation_id: delegationId, remote_status: "TASK_STATE_SUBMITTED", delivery_mechanism: "streaming" });
    expect(h.state.delegations.get(delegationId)!.delivery_mechanism).toBe("streaming");
    expect(replay(h.wal)).toEqual(h.state);
  });

  it("Should write nothing for a streamed view that repeats the status, and record only the status change of the next one", () => {
    const { h, delegationId } = delegated();
    h.ok(seen(delegationId, "TASK_STATE_WORKING", { delivery_mechanism: "streaming" }), systemCaller);
    expect(h.ok(seen(delegationId, "TASK_STATE_WORKING", { delivery_mechanism: "streaming" }), systemCaller).events).toEqual([]);
    const next = h.ok(seen(delegationId, "TASK_STATE_INPUT_REQUIRED", { delivery_mechanism: "streaming", status_message: "Which region?" }), systemCaller);
    expect(types(next)).toEqual(["delegation_updated", "action_requested"]);
    expect(payload(next.events[0])).not.toHaveProperty("delivery_mechanism");
  });

  it("Should record the fall back to polling after a stream failed, and keep the mechanism when a report names none", () => {
    const { h, delegationId } = delegated();
    h.ok(seen(delegationId, "TASK_STATE_WORKING", { delivery_mechanism: "streaming" }), systemCaller);
    // A report without a mechanism (e.g. the answer of a CancelTask) changes nothing about how the peer is followed.
    expect(h.ok(seen(delegationId, "TASK_STATE_WORKING"), systemCaller).events).toEqual([]);
    expect(h.state.delegations.get(delegationId)!.delivery_mechanism).toBe("streaming");
    const back = h.ok(seen(delegationId, "TASK_STATE_WORKING", { delivery_mechanism: "polling" }), systemCaller);
    expect(types(back)).toEqual(["delegation_updated"]);
    expect(payload(back.events[0])).toMatchObject({ delivery_mechanism: "polling" });
    expect(h.state.delegations.get(delegationId)!.delivery_mechanism).toBe("polling");
  });

  it("Should carry the mechanism on the update that records the terminal state, before the step settles", () => {
    const { h, delegationId } = delegated();
    const artifacts = [{ artifact_id: "result", name: "result", text: "done" }];
    const d = h.ok(seen(delegationId, "TASK_STATE_COMPLETED", { delivery_mechanism: "streaming", artifacts }), systemCaller);
    expect(types(d).slice(0, 3)).toEqual(["delegation_updated", "delegation_settled", "task_step_completed"]);
    expect(payload(d.events[0])).toMatchObject({ delivery_mechanism: "streaming", remote_artifact_refs: ["a2a:peer-task-1/result"] });
    expect(h.state.delegations.get(delegationId)).toMatchObject({ delivery_mechanism: "streaming", status: "closed", outcome: "completed" });
  });

  it("Should refuse a mechanism that is not polling or streaming in a remote_status report", () => {
    const { h, delegationId } = delegated();
    const before = h.wal.length;
    expect(h.err(seen(delegationId, "TASK_STATE_WORKING", { delivery_mechanism: "callback" }), systemCaller).code).toBe("validation_error");
    expect(h.wal.length).toBe(before);
  });
});
