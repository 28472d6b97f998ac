/**
 * @module A task with one step delegated to an A2A peer, whose object calls the peer through `client` (a PeerClient
 * over a scripted fetch) instead of the network: for the tests of what our outbound calls send and where.
 */
import { runInDurableObject } from "cloudflare:test";
import type { OutboundCalls } from "../../durable-objects/task/outbound-calls.js";
import type { PeerClient } from "../../durable-objects/peers/a2a-peer.js";
import type { TaskGraphObject } from "../../durable-objects/task/task-graph-object.js";
import { call, type TestSession } from "./helpers.js";
import { expectOk, taskStub } from "./support.js";

/** Creates task `taskId` whose step `remote` is delegated to the peer at `cardUrl`; answers the task's path. */
export async function delegatedTask(s: TestSession, taskId: string, client: PeerClient, cardUrl: string, summary: string): Promise<string> {
  // The object exists, empty, before its task: its peer ports are set before the create commits.
  await runInDurableObject(taskStub(s.sid, taskId), (instance: TaskGraphObject) => {
    const outbound = (instance as unknown as { shell: { outbound: OutboundCalls } }).shell.outbound;
    outbound.ports = { ...outbound.ports, peerSend: (url, message) => client.send(url, message), peerGet: (url, id) => client.get(url, id), peerCancel: (url, id) => client.cancel(url, id) };
  });
  const delegate = { kind: "a2a", agent_card_url: cardUrl };
  const steps = [{ step_id: "remote", title: "Ask the peer", summary, depends_on_step_ids: [], delegate }];
  expectOk(await call("POST", `/v1/sessions/${s.sid}/tasks`, s.orch, { task_id: taskId, wal_name: taskId, title: "Delegated", steps }), 201);
  return `/v1/sessions/${s.sid}/tasks/${taskId}`;
}
