/**
 * The task object's alarm, re-armed from inside its own run, is always set for a later time than the one that run
 * is for. workerd (the one `wrangler dev` runs, 1.20260426) takes an alarm set during its run for that very time as
 * no change and retires it when the run ends: the stored alarm then names a past time that nothing will run, and
 * memory, believing it pending, never arms an earlier one, so the task sleeps until something else commits. A run
 * leaves work due at once when a retry reopens a delegated step (its take-up is due from that moment), and re-arms
 * for "now": that very time whenever the run falls within the millisecond it was scheduled for. Here the clock the
 * object reads stands still at the alarm's time while the alarm runs, so it does every time; the peer is a scripted
 * port, and nothing touches the task object afterwards: only its alarm can take the step up again.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { OutboundCalls, OutboundPorts } from "../../durable-objects/task/outbound-calls.js";
import type { TaskGraphObject } from "../../durable-objects/task/task-graph-object.js";
import type { DagState } from "../../src/core/index.js";
import { call, newSession } from "../support/helpers.js";
import { eventually, expectOk, sleep, taskStub } from "../support/support.js";

type PeerAnswer = Awaited<ReturnType<OutboundPorts["peerSend"]>>;

const failedPeerTask = (n: number): PeerAnswer => ({
  ok: true,
  streaming: false,
  task: { remote_task_id: `peer-task-${n}`, remote_context_id: "ctx-1", remote_status: "TASK_STATE_FAILED", status_message: "no capacity", artifacts: [] },
});

type Shell = { outbound: OutboundCalls; state: DagState };
const shellOf = (instance: TaskGraphObject) => (instance as unknown as { shell: Shell }).shell;

describe("the alarm re-armed from its own run", () => {
  it("Should run again when the alarm's run leaves work due within the millisecond it was scheduled for", async () => {
    const s = await newSession();
    const taskId = "rearm";
    const stub = taskStub(s.sid, taskId);
    const sends: number[] = [];
    // The object exists (empty) before the task: its peer ports are scripted before the create commits.
    await runInDurableObject(stub, (instance: TaskGraphObject) => {
      const outbound = shellOf(instance).outbound;
      outbound.ports = {
        ...outbound.ports,
        peerSend: async () => {
          sends.push(sends.length + 1);
          return failedPeerTask(sends.length);
        },
      };
    });
    const created = await call("POST", `/v1/sessions/${s.sid}/tasks`, s.orch, {
      task_id: taskId,
      wal_name: taskId,
      title: "Delegated",
      summary: "",
      steps: [
        {
          step_id: "remote",
          title: "Ask the peer",
          summary: "Translate",
          depends_on_step_ids: [],
          delegate: { kind: "a2a", agent_card_url: "http://127.0.0.1:9/card" },
          retry_policy: { max_attempts: 2, initial_interval_ms: 1_500, backoff_coefficient: 1, max_interval_ms: 1_500 },
        },
      ],
    });
    expectOk(created, 201);
    // The first attempt failed at the peer; the retry is due at `retryAt`, and the object's alarm is set for it
    // (once the session index's push, due sooner, has had its run).
    const retryAt = await eventually(async () => {
      const retry = await runInDurableObject(stub, (instance: TaskGraphObject) => shellOf(instance).state.steps.get("remote")!.retry_at);
      expect(sends).toEqual([1]);
      expect(retry).not.toBeNull();
      return Date.parse(retry!);
    });
    await eventually(async () => expect(await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm())).toBe(retryAt));
    expect(Date.now()).toBeLessThan(retryAt);
    // Every time the object sets its alarm for from here on.
    const armed: number[] = [];
    await runInDurableObject(stub, (_instance, state) => {
      const setAlarm = state.storage.setAlarm.bind(state.storage);
      state.storage.setAlarm = (at, options) => {
        armed.push(typeof at === "number" ? at : at.getTime());
        return setAlarm(at, options);
      };
    });
    // The alarm runs within the millisecond it was scheduled for: it reopens the step, whose take-up is then due.
    const realNow = Date.now;
    Date.now = () => retryAt;
    try {
      for (let polls = 0; ; polls++) {
        const retry = await runInDurableObject(stub, (instance: TaskGraphObject) => shellOf(instance).state.steps.get("remote")!.retry_at);
        if (retry === null) break;
        expect(polls, "the alarm never ran for the retry").toBeLessThan(500);
        await sleep(10);
      }
      // Let the run end (it re-arms the alarm on its way out).
      await sleep(100);
    } finally {
      Date.now = realNow;
    }
    // It re-armed for later than the time it ran for, or the platform would never run it again.
    expect(armed.length).toBeGreaterThan(0);
    expect(armed.filter((at) => at <= retryAt)).toEqual([]);
    // Only the object's alarm can take the step up again: the test sends nothing to the object meanwhile.
    await eventually(async () => expect(sends).toEqual([1, 2]), 3_000);
    const dag = expectOk(await call("GET", `/v1/sessions/${s.sid}/tasks/${taskId}`, s.orch));
    expect(dag.delegations.map((d: { remote_task_id: string }) => d.remote_task_id)).toEqual(["peer-task-1", "peer-task-2"]);
  });
});
