/**
 * The task object wakes for every outbound call it owes later, however the call before it was started. A peer
 * whose SendMessage answers while its task is still working is owed a follow read FOLLOW_MIN_MS later. When the
 * send ran from a commit (not from the alarm) and the alarm fired while it was under way (re-armed for what was
 * owed then, which left out the call in flight), nothing else would wake the object for that read: the step
 * waited for the next unrelated deadline. Here the peer is a scripted port (no network) whose send is held until
 * the alarm has run, and nothing touches the task object afterwards: only its alarm can move the step on.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { FOLLOW_MIN_MS, type OutboundCalls, type OutboundPorts } from "../../durable-objects/task/outbound-calls.js";
import type { TaskGraphObject } from "../../durable-objects/task/task-graph-object.js";
import { call, newSession } from "../support/helpers.js";
import { eventually, expectOk, taskStub } from "../support/support.js";

type PeerAnswer = Awaited<ReturnType<OutboundPorts["peerGet"]>>;

function peerTask(state: string): PeerAnswer {
  return {
    ok: true,
    streaming: false,
    task: { remote_task_id: "peer-task-1", remote_context_id: "ctx-1", remote_status: state, status_message: null, artifacts: state === "TASK_STATE_COMPLETED" ? [{ artifact_id: "a1", name: "answer", text: "done" }] : [] },
  };
}

describe("outbound calls owed later", () => {
  it("Should wake the object for the follow read a peer's working answer owes, when the send ran from a commit", async () => {
    const s = await newSession();
    const taskId = "wake";
    const calls: string[] = [];
    let releaseSend!: () => void;
    const sendHeld = new Promise<void>((resolve) => (releaseSend = resolve));
    // The object exists (empty) before the task: its peer ports are scripted before the create commits the send.
    await runInDurableObject(taskStub(s.sid, taskId), (instance: TaskGraphObject) => {
      const outbound = (instance as unknown as { shell: { outbound: OutboundCalls } }).shell.outbound;
      outbound.ports = {
        ...outbound.ports,
        peerSend: async () => {
          calls.push("send");
          await sendHeld;
          return peerTask("TASK_STATE_WORKING");
        },
        peerGet: async () => {
          calls.push("get");
          return peerTask("TASK_STATE_COMPLETED");
        },
      };
    });
    const created = await call("POST", `/v1/sessions/${s.sid}/tasks`, s.orch, {
      task_id: taskId,
      wal_name: taskId,
      title: "Delegated",
      summary: "",
      steps: [{ step_id: "remote", title: "Ask the peer", summary: "Translate", depends_on_step_ids: [], delegate: { kind: "a2a", agent_card_url: "http://127.0.0.1:9/card" } }],
    });
    expectOk(created, 201);
    await eventually(async () => expect(calls).toEqual(["send"]));
    // Alarms fire while the send is under way (the session index's push, or any deadline; alarms may also come
    // early or twice): each does its work and re-arms for what is owed, which leaves out the call in flight, until
    // only the attempt's own deadline (the delegate's timeout, an hour by default) is left.
    await runInDurableObject(taskStub(s.sid, taskId), (_instance, state) => state.storage.setAlarm(Date.now()));
    await eventually(async () => {
      await runDurableObjectAlarm(taskStub(s.sid, taskId));
      const alarm = await runInDurableObject(taskStub(s.sid, taskId), (_instance, state) => state.storage.getAlarm());
      expect(alarm === null || alarm > Date.now() + 60_000).toBe(true);
    });
    releaseSend();
    // Only the object's alarm can make the follow read: the test reads nothing through the object meanwhile.
    await eventually(async () => expect(calls).toEqual(["send", "get"]), FOLLOW_MIN_MS + 5_000);
    const dag = expectOk(await call("GET", `/v1/sessions/${s.sid}/tasks/${taskId}`, s.orch));
    expect(dag.steps[0]).toMatchObject({ step_id: "remote", status: "completed" });
    expect(dag.delegations[0]).toMatchObject({ remote_task_id: "peer-task-1", remote_status: "TASK_STATE_COMPLETED" });
  });
});
