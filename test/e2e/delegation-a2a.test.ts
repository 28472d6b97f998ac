/**
 * Delegated steps whose delegate is a task of an A2A peer (docs/model.md "Delegated steps"), over real HTTP against
 * `wrangler dev`: the peers are an `@a2a-js/sdk` DefaultRequestHandler scripted to complete, fail, ask for input,
 * hang, answer 500s or garbage (test/e2e/support/a2a-peer-server.ts), and this runtime's own A2A facade serving
 * another session. The runtime resolves each card, sends the step, follows the peer from its alarm, records the
 * remote refs as facts, and settles the step only when the peer is terminal and its artifacts are recorded.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, defaultAdminToken, startDevServer, stopDevServer } from "../../scripts/dev-server.js";
import { completedText, FAILURE_TEXT, INPUT_QUESTION, regionText, type ScriptedPeer, startScriptedPeer, streamedText } from "./support/a2a-peer-server.js";

let server: DevServer;
let peer: ScriptedPeer;
let workDir: string;

beforeAll(async () => {
  workDir = mkdtempSync(path.join(os.tmpdir(), "delegation-e2e-"));
  // Quick retries so the unreachable-peer cases end within the test: three tries, 200 ms then 400 ms apart.
  [server, peer] = await Promise.all([
    startDevServer({ workDir, logLevel: "warn", startupTimeoutMs: 90_000, vars: { DELEGATE_RETRY_MS: "200", DELEGATE_MAX_TRIES: "3", A2A_PEER_TIMEOUT_MS: "2000" } }),
    startScriptedPeer(),
  ]);
});

afterAll(async () => {
  await peer?.close();
  if (server !== undefined) await stopDevServer(server);
  if (workDir !== undefined) rmSync(workDir, { recursive: true, force: true });
});

async function api(method: string, route: string, token: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${server.base}${route}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? null : JSON.parse(text) };
}

async function ok(method: string, route: string, token: string, body?: unknown): Promise<any> {
  const res = await api(method, route, token, body);
  expect(res.status, `${method} ${route}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
  return res.body;
}

interface Session {
  sid: string;
  orch: string;
}

async function newSession(): Promise<Session> {
  const created = await ok("POST", "/v1/sessions", defaultAdminToken(), {});
  return { sid: created.session_id, orch: created.orchestrator.token };
}

/** Polls `read` until `done` holds (or fails after `ms`). */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, ms: number, what: string): Promise<T> {
  const deadline = Date.now() + ms;
  let last: T = await read();
  while (!done(last)) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}; last: ${JSON.stringify(last).slice(0, 1500)}`);
    await new Promise((r) => setTimeout(r, 100));
    last = await read();
  }
  return last;
}

/** Creates a task of one step delegated to `cardUrl`, and returns its path. */
async function delegatedTask(s: Session, taskId: string, cardUrl: string, extra: Record<string, unknown> = {}, delegate: Record<string, unknown> = {}): Promise<string> {
  await ok("POST", `/v1/sessions/${s.sid}/tasks`, s.orch, {
    task_id: taskId,
    wal_name: taskId,
    title: `Delegated ${taskId}`,
    steps: [{ step_id: "remote", title: "Ask the peer", summary: "Translate the brief", depends_on_step_ids: [], delegate: { kind: "a2a", agent_card_url: cardUrl, ...delegate }, ...extra }],
  });
  return `/v1/sessions/${s.sid}/tasks/${taskId}`;
}

const remoteStep = (dag: any) => dag.steps.find((x: any) => x.step_id === "remote");
const settled = (dag: any) => ["completed", "failed"].includes(remoteStep(dag).status) && remoteStep(dag).retry_at === null;
const walTypes = async (taskPath: string, token: string) =>
  (await (await fetch(`${server.base}${taskPath}/wal`, { headers: { authorization: `Bearer ${token}` } })).text())
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line).event_type as string);

describe("a step delegated to an A2A peer", { timeout: 60_000 }, () => {
  it("Should send the step to the peer, record its remote refs, and complete the step with the peer's artifacts once the peer completes", async () => {
    const s = await newSession();
    const t = await delegatedTask(s, "ok", peer.cardUrl("complete"));
    const dag = await until(() => ok("GET", t, s.orch), settled, 20_000, "the step to settle");
    const step = remoteStep(dag);
    expect(step.status).toBe("completed");
    const d = dag.delegations[0];
    expect(d).toMatchObject({
      kind: "a2a",
      native_protocol: "a2a",
      agent_card_ref: peer.cardUrl("complete"),
      delivery_mechanism: "polling",
      remote_status: "TASK_STATE_COMPLETED",
      status: "closed",
      outcome: "completed",
    });
    expect(d.remote_task_id).toEqual(expect.any(String));
    expect(d.remote_context_id).toEqual(expect.any(String));
    expect(d.remote_artifact_refs.length).toBeGreaterThan(0);
    expect(step.artifact_ids).toEqual(d.remote_artifact_refs);
    expect(step.result_summary).toContain(completedText("Ask the peer\n\nTranslate the brief"));
    expect(peer.calls.some((c) => c.method === "SendMessage" && c.taskId === undefined)).toBe(true);
    const types = await walTypes(t, s.orch);
    // The artifacts are recorded (delegation_updated) before the step settles.
    expect(types.lastIndexOf("delegation_updated")).toBeLessThan(types.indexOf("delegation_settled"));
    expect(types.indexOf("delegation_settled")).toBeLessThan(types.indexOf("task_step_completed"));
  });

  it("Should fail the step when the peer fails, and retry it with a new peer task under the step's retry policy", async () => {
    const s = await newSession();
    const t = await delegatedTask(s, "fails", peer.cardUrl("fail"), { retry_policy: { max_attempts: 2, initial_interval_ms: 100, backoff_coefficient: 1, max_interval_ms: 100 } });
    const dag = await until(() => ok("GET", t, s.orch), (v) => remoteStep(v).status === "failed" && remoteStep(v).retry_at === null, 20_000, "the retries to end");
    expect(remoteStep(dag).status_reason).toBe("retry_exhausted");
    expect(dag.delegations).toHaveLength(2);
    expect(new Set(dag.delegations.map((x: any) => x.remote_task_id)).size).toBe(2);
    for (const d of dag.delegations) expect(d).toMatchObject({ outcome: "failed", remote_status: "TASK_STATE_FAILED", status: "closed" });
    expect(dag.attempts.filter((a: any) => a.step_id === "remote").map((a: any) => a.status)).toEqual(["failed", "failed"]);
    expect(dag.attempts[0].result_summary).toContain(FAILURE_TEXT);
  });

  it("Should turn the peer's INPUT_REQUIRED into an input action on the step, send the answer back with the peer's taskId, and complete", async () => {
    const s = await newSession();
    const t = await delegatedTask(s, "asks", peer.cardUrl("input"));
    const waiting = await until(() => ok("GET", `${t}/actions?status=open`, s.orch), (v) => v.actions.length === 1, 20_000, "the peer's question");
    const action = waiting.actions[0];
    expect(action).toMatchObject({ kind: "input", step_id: "remote", prompt: INPUT_QUESTION });
    const dagWaiting = await ok("GET", t, s.orch);
    expect(dagWaiting.delegations[0].status).toBe("input_required");
    await ok("POST", `${t}/actions/${action.action_id}/respond`, s.orch, { decision: "submitted", input: "eu-west" });
    const dag = await until(() => ok("GET", t, s.orch), settled, 20_000, "the step to settle");
    expect(remoteStep(dag).status).toBe("completed");
    expect(remoteStep(dag).result_summary).toContain(regionText("eu-west"));
    const remoteId = dag.delegations[0].remote_task_id;
    expect(peer.calls.filter((c) => c.method === "SendMessage" && c.taskId === remoteId)).toHaveLength(1);
  });

  it("Should send CancelTask to a peer that is still working when the task is cancelled", async () => {
    const s = await newSession();
    const t = await delegatedTask(s, "stopped", peer.cardUrl("hang"));
    const working = await until(() => ok("GET", t, s.orch), (v) => v.delegations[0]?.remote_status === "TASK_STATE_WORKING", 20_000, "the peer to work");
    const remoteId = working.delegations[0].remote_task_id;
    await ok("POST", `${t}/cancel`, s.orch, { reason: "no longer needed" });
    const dag = await until(() => ok("GET", t, s.orch), (v) => v.delegations[0].status === "closed", 20_000, "the cancellation to be confirmed");
    expect(dag.delegations[0]).toMatchObject({ outcome: "cancelled", remote_status: "TASK_STATE_CANCELED" });
    expect(peer.calls).toContainEqual({ method: "CancelTask", taskId: remoteId });
    expect(dag.runs.every((r: any) => r.status !== "active" && r.status !== "cancelling")).toBe(true);
  });

  it("Should end an attempt timed_out when the peer hangs past the delegate's timeout, and tell the peer to stop", async () => {
    const s = await newSession();
    const t = await delegatedTask(s, "slowpoke", peer.cardUrl("hang"), {}, { timeout_ms: 2_000 });
    const dag = await until(() => ok("GET", t, s.orch), (v) => v.delegations[0]?.status === "closed", 20_000, "the timeout and its cleanup");
    expect(remoteStep(dag)).toMatchObject({ status: "failed", status_reason: "delegate_timeout" });
    expect(dag.attempts[0].status).toBe("timed_out");
    expect(peer.calls).toContainEqual({ method: "CancelTask", taskId: dag.delegations[0].remote_task_id });
  });

  it("Should retry a peer that answers 500 with backoff, then fail the attempt — never a silent success", async () => {
    const s = await newSession();
    const t = await delegatedTask(s, "broken", peer.cardUrl("http500"));
    const dag = await until(() => ok("GET", t, s.orch), settled, 20_000, "the tries to run out");
    expect(remoteStep(dag)).toMatchObject({ status: "failed", status_reason: "delegate_unreachable" });
    expect(dag.delegations[0]).toMatchObject({ outcome: "failed", tries: 0, status: "closed" });
    const types = await walTypes(t, s.orch);
    expect(types.filter((x) => x === "delegation_try_failed")).toHaveLength(2);
  });

  it("Should fail at once (not retry) on a peer that answers garbage, and on a host outside OUTBOUND_ALLOWLIST", async () => {
    const s = await newSession();
    const garbage = await delegatedTask(s, "garbage", peer.cardUrl("garbage"));
    const outside = await delegatedTask(s, "outside", "http://peer.invalid/.well-known/agent-card.json");
    for (const t of [garbage, outside]) {
      const dag = await until(() => ok("GET", t, s.orch), settled, 20_000, "the refusal");
      expect(remoteStep(dag)).toMatchObject({ status: "failed", status_reason: "delegate_refused" });
      expect(await walTypes(t, s.orch)).not.toContain("delegation_try_failed");
    }
    const outsideDag = await ok("GET", outside, s.orch);
    expect(remoteStep(outsideDag).result_summary).toContain("OUTBOUND_ALLOWLIST");
  });

  it("Should delegate to a task of another session through this runtime's own A2A facade, with the session's peer credential", async () => {
    const a = await newSession();
    const b = await newSession();
    const client = await ok("POST", `/v1/sessions/${b.sid}/tokens`, b.orch, { role: "a2a_client", agent_id: "session-a" });
    await ok("POST", `/v1/sessions/${a.sid}/peers`, a.orch, { origin: server.base, authorization: `Bearer ${client.token}` });
    const t = await delegatedTask(a, "crossing", `${server.base}/.well-known/agent-card.json`, {}, { message: "Summarise the quarter" });
    // Session B's orchestrator sees the submitted task, plans one step, runs it and completes the task.
    const listed = await until(() => ok("GET", `/v1/sessions/${b.sid}/tasks`, b.orch), (v) => v.tasks.length === 1, 20_000, "the submitted task in session B");
    const submitted = `/v1/sessions/${b.sid}/tasks/${listed.tasks[0].task_id}`;
    expect((await ok("GET", submitted, b.orch)).task.objective).toBe("Summarise the quarter");
    await ok("PATCH", submitted, b.orch, { ops: [{ op: "add_step", step: { step_id: "write", title: "Write", summary: "Write it", depends_on_step_ids: [] } }] });
    const worker = await ok("POST", `${submitted}/workers`, b.orch, {});
    await ok("POST", `${submitted}/steps/claim-next`, worker.token);
    await ok("POST", `${submitted}/steps/write/status`, worker.token, { status: "completed", result_summary: "Q3 was good", artifact_ids: ["summary.md"] });
    await ok("POST", `${submitted}/complete`, b.orch, {});
    const dag = await until(() => ok("GET", t, a.orch), settled, 30_000, "session A's step to settle");
    expect(remoteStep(dag).status).toBe("completed");
    expect(dag.delegations[0]).toMatchObject({ remote_task_id: listed.tasks[0].task_id, remote_status: "TASK_STATE_COMPLETED" });
    expect(remoteStep(dag).artifact_ids.length).toBeGreaterThan(0);
  });

  it("Should follow a peer whose card offers streaming by its SubscribeToTask stream, recorded as delivery_mechanism streaming, instead of polling", async () => {
    const s = await newSession();
    const t = await delegatedTask(s, "streamed", peer.cardUrl("stream"));
    const dag = await until(() => ok("GET", t, s.orch), settled, 20_000, "the step to settle");
    const step = remoteStep(dag);
    expect(step.status).toBe("completed");
    const d = dag.delegations[0];
    expect(d).toMatchObject({ delivery_mechanism: "streaming", remote_status: "TASK_STATE_COMPLETED", status: "closed", outcome: "completed" });
    expect(step.result_summary).toContain(streamedText("Ask the peer\n\nTranslate the brief"));
    expect(step.artifact_ids).toEqual(d.remote_artifact_refs);
    const remote = (method: string) => peer.calls.filter((c) => c.method === method && c.taskId === d.remote_task_id).length;
    expect(remote("SubscribeToTask")).toBeGreaterThanOrEqual(1);
    // The peer works for about 1.5 s: polling from 250 ms would have read it several times; the stream needs no read.
    expect(remote("GetTask")).toBeLessThanOrEqual(1);
    const wal = (await (await fetch(`${server.base}${t}/wal`, { headers: { authorization: `Bearer ${s.orch}` } })).text()).trim().split("\n").map((line) => JSON.parse(line));
    const switches = wal.filter((e: any) => e.event_type === "delegation_updated" && e.payload.delivery_mechanism !== undefined).map((e: any) => e.payload.delivery_mechanism);
    expect(switches).toEqual(["polling", "streaming"]);
    // The switch to the stream came before the step settled on what the stream reported.
    const streamed = wal.findIndex((e: any) => e.event_type === "delegation_updated" && e.payload.delivery_mechanism === "streaming");
    expect(streamed).toBeLessThan(wal.findIndex((e: any) => e.event_type === "delegation_settled"));
  });

  it("Should fall back to polling when the peer's stream stays silent past A2A_PEER_TIMEOUT_MS, record the switch back, and not fail the attempt for it", async () => {
    const s = await newSession();
    // The peer works in silence: each stream is cut after 2 s without a byte; the delegate's own timeout ends it.
    const t = await delegatedTask(s, "quiet", peer.cardUrl("streamhang"), {}, { timeout_ms: 4_500 });
    const dag = await until(() => ok("GET", t, s.orch), (v) => v.delegations[0]?.status === "closed", 20_000, "the timeout and its cleanup");
    expect(remoteStep(dag)).toMatchObject({ status: "failed", status_reason: "delegate_timeout" });
    const d = dag.delegations[0];
    const wal = (await (await fetch(`${server.base}${t}/wal`, { headers: { authorization: `Bearer ${s.orch}` } })).text()).trim().split("\n").map((line) => JSON.parse(line));
    const switches = wal.filter((e: any) => e.event_type === "delegation_updated" && e.payload.delivery_mechanism !== undefined).map((e: any) => e.payload.delivery_mechanism);
    expect(switches.slice(0, 3)).toEqual(["polling", "streaming", "polling"]);
    // A cut stream is not a failed try: the attempt ended by the delegate's timeout only.
    expect(wal.map((e: any) => e.event_type)).not.toContain("delegation_try_failed");
    const remote = (method: string) => peer.calls.filter((c) => c.method === method && c.taskId === d.remote_task_id).length;
    expect(remote("SubscribeToTask")).toBeGreaterThanOrEqual(1);
    expect(remote("GetTask")).toBeGreaterThanOrEqual(1);
    expect(peer.calls).toContainEqual({ method: "CancelTask", taskId: d.remote_task_id });
  });
});
