/**
 * The task object wakes for every outbound call it owes later, however the call before it was started. A call
 * started outside the alarm (by a commit, or by a stream that ended) may be under way while the alarm runs and is
 * re-armed for what is owed then, which leaves that call out; when it settles, the object must still wake for what
 * its delegation owes next, even when its outcome commits nothing. Here the peer is a scripted port (no network)
 * whose answer is held until the alarm has run, and nothing touches the task object afterwards: only its alarm can
 * move the step on.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { FOLLOW_MIN_MS, type OutboundCalls, type OutboundPorts, type PeerSubscribe } from "../../durable-objects/task/outbound-calls.js";
import type { TaskGraphObject } from "../../durable-objects/task/task-graph-object.js";
import { call, newSession } from "../support/helpers.js";
import { eventually, expectOk, taskStub } from "../support/support.js";

type PeerAnswer = Awaited<ReturnType<OutboundPorts["peerGet"]>>;

function peerTask(state: string, subscribe?: PeerSubscribe): PeerAnswer {
  return {
    ok: true,
    streaming: subscribe !== undefined,
    ...(subscribe === undefined ? {} : { subscribe }),
    task: { remote_task_id: "peer-task-1", remote_context_id: "ctx-1", remote_status: state, status_message: null, artifacts: state === "TASK_STATE_COMPLETED" ? [{ artifact_id: "a1", name: "answer", text: "done" }] : [] },
  };
}

/**
 * Alarms fire while a call is under way (the session index's push, or any deadline; alarms may also come early or
 * twice): each does its work and re-arms for what is owed, which leaves out the call in flight, until only the
 * attempt's own deadline (the delegate's timeout, an hour by default) is left.
 */
async function alarmsRunUntilOnlyTheDeadlineIsLeft(stub: DurableObjectStub): Promise<void> {
  await runInDurableObject(stub, (_instance, state) => state.storage.setAlarm(Date.now()));
  await eventually(async () => {
    await runDurableObjectAlarm(stub);
    const alarm = await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());
    expect(alarm === null || alarm > Date.now() + 60_000).toBe(true);
  });
}

/** A task of one step delegated to a scripted peer. */
async function delegatedTask(s: { sid: string; orch: string }, taskId: string): Promise<void> {
  const created = await call("POST", `/v1/sessions/${s.sid}/tasks`, s.orch, {
    task_id: taskId,
    wal_name: taskId,
    title: "Delegated",
    summary: "",
    steps: [{ step_id: "remote", title: "Ask the peer", summary: "Translate", depends_on_step_ids: [], delegate: { kind: "a2a", agent_card_url: "http://127.0.0.1:9/card" } }],
  });
  expectOk(created, 201);
}

/** Replaces the object's peer ports (the object exists, empty, before its task: they are scripted before the create commits). */
async function scriptPeer(stub: DurableObjectStub, ports: Partial<OutboundPorts>): Promise<void> {
  await runInDurableObject(stub, (instance: TaskGraphObject) => {
    const outbound = (instance as unknown as { shell: { outbound: OutboundCalls } }).shell.outbound;
    outbound.ports = { ...outbound.ports, ...ports };
  });
}

describe("outbound calls owed later", () => {
  it("Should wake the object for the follow read a peer's working answer owes, when the send ran from a commit", async () => {
    const s = await newSession();
    const taskId = "wake";
    const calls: string[] = [];
    let releaseSend!: () => void;
    const sendHeld = new Promise<void>((resolve) => (releaseSend = resolve));
    await scriptPeer(taskStub(s.sid, taskId), {
      peerSend: async () => {
        calls.push("send");
        await sendHeld;
        return peerTask("TASK_STATE_WORKING");
      },
      peerGet: async () => {
        calls.push("get");
        return peerTask("TASK_STATE_COMPLETED");
      },
    });
    await delegatedTask(s, taskId);
    await eventually(async () => expect(calls).toEqual(["send"]));
    await alarmsRunUntilOnlyTheDeadlineIsLeft(taskStub(s.sid, taskId));
    releaseSend();
    // Only the object's alarm can make the follow read: the test reads nothing through the object meanwhile.
    await eventually(async () => expect(calls).toEqual(["send", "get"]), FOLLOW_MIN_MS + 5_000);
    const dag = expectOk(await call("GET", `/v1/sessions/${s.sid}/tasks/${taskId}`, s.orch));
    expect(dag.steps[0]).toMatchObject({ step_id: "remote", status: "completed" });
    expect(dag.delegations[0]).toMatchObject({ remote_task_id: "peer-task-1", remote_status: "TASK_STATE_COMPLETED" });
  });

  it("Should wake the object for the next read when a read started outside the alarm finds the peer's task unchanged", { timeout: 20_000 }, async () => {
    const s = await newSession();
    const taskId = "unchanged";
    const calls: string[] = [];
    let endStream!: () => void;
    const streamEnds = new Promise<void>((resolve) => (endStream = resolve));
    let releaseGet!: () => void;
    const getHeld = new Promise<void>((resolve) => (releaseGet = resolve));
    // A peer that streams: its stream ends before the task does, so the stream's reader polls at once (outside the
    // alarm). That read is held, and answers that the task still works: unchanged, it commits nothing.
    const subscribe: PeerSubscribe = async () => {
      calls.push("subscribe");
      await streamEnds;
      return { ok: false, code: "stream_ended", message: "the peer closed the stream", retryable: true };
    };
    await scriptPeer(taskStub(s.sid, taskId), {
      peerSend: async () => {
        calls.push("send");
        return peerTask("TASK_STATE_WORKING", subscribe);
      },
      peerGet: async () => {
        calls.push("get");
        if (calls.filter((c) => c === "get").length === 1) {
          await getHeld;
          return peerTask("TASK_STATE_WORKING");
        }
        return peerTask("TASK_STATE_COMPLETED");
      },
    });
    await delegatedTask(s, taskId);
    await eventually(async () => expect(calls).toEqual(["send", "subscribe"]), FOLLOW_MIN_MS + 5_000);
    endStream();
    await eventually(async () => expect(calls).toEqual(["send", "subscribe", "get"]));
    await alarmsRunUntilOnlyTheDeadlineIsLeft(taskStub(s.sid, taskId));
    releaseGet();
    // Only the object's alarm can make the next read: the test reads nothing through the object meanwhile.
    await eventually(async () => expect(calls).toEqual(["send", "subscribe", "get", "get"]), 4 * FOLLOW_MIN_MS + 5_000);
    const dag = expectOk(await call("GET", `/v1/sessions/${s.sid}/tasks/${taskId}`, s.orch));
    expect(dag.steps[0]).toMatchObject({ step_id: "remote", status: "completed" });
    expect(dag.delegations[0]).toMatchObject({ remote_task_id: "peer-task-1", remote_status: "TASK_STATE_COMPLETED" });
  });
});
