/**
 * Idempotency-Keys are scoped to the caller and checked after authorization: a stored answer (a worker token,
 * a claimed step) is replayed only to the token subject and run that sent the key, on the single routes, the
 * batch route and the command socket. Another caller with the same key, method, path and body is decided
 * afresh (or refused for its role), and the first caller's retry still gets its first answer.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { expectError, expectOk, uniqueId, walOf } from "../support/support.js";
import { socketFrame } from "../support/test-socket.js";

let S: TestSession;
beforeAll(async () => {
  S = await newSession();
});

async function task(steps = [step("a"), step("b")]) {
  const id = uniqueId("i");
  return { t: await newTask(S, id, steps), id };
}

/** Sends one command the way `carrier` does: its single route, the batch route, or a socket frame. */
type Carrier = "route" | "batch" | "socket";
async function send(carrier: Carrier, t: string, token: string, method: string, path: string, body: unknown, key: string): Promise<{ status: number; body: any }> {
  if (carrier === "route") return call(method, `${t}${path}`, token, body, { "idempotency-key": key });
  const command = { token, method, path: `${t}${path}`, body, idempotency_key: key };
  // The batch request and the socket are the orchestrator's (an observer may send neither); the command still carries its own token.
  if (carrier === "batch") {
    const res = expectOk(await call("POST", `${t}/batch`, S.orch, { commands: [command] }));
    return { status: res.results[0].status, body: res.results[0].body };
  }
  const frame = await socketFrame(t, S.orch, [command]);
  return { status: frame.results[0].status, body: frame.results[0].body };
}

describe.each<Carrier>(["route", "batch", "socket"])("Idempotency-Keys over %s", (carrier) => {
  it("Should not replay the orchestrator's keyed dispatch (and its worker token) to an observer sending the same key and body", async () => {
    const { t } = await task();
    const first = await send(carrier, t, S.orch, "POST", "/workers", { agent_id: "w1" }, "dispatch-1");
    // A batch or socket result carries the status the single route answers.
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body.token).toEqual(expect.any(String));
    const walBefore = await walOf(t, S.orch);
    const stolen = await send(carrier, t, S.observer, "POST", "/workers", { agent_id: "w1" }, "dispatch-1");
    expect(stolen.status).toBe(403);
    expect(stolen.body.error.code).toBe("tool_not_available");
    expect(stolen.body.token).toBeUndefined();
    expect(await walOf(t, S.orch)).toEqual(walBefore);
    // The orchestrator's own retry still gets its first answer.
    const retried = await send(carrier, t, S.orch, "POST", "/workers", { agent_id: "w1" }, "dispatch-1");
    expect(retried.body.run_id).toBe(first.body.run_id);
    expect(await walOf(t, S.orch)).toEqual(walBefore);
  });

  it("Should not hand one worker's keyed claim-next answer (its claimed step) to another worker sending the same key", async () => {
    const { t } = await task();
    const w1 = await dispatch(S, t, { agent_id: "w1" });
    const w2 = await dispatch(S, t, { agent_id: "w2" });
    const first = await send(carrier, t, w1.token, "POST", "/steps/claim-next", {}, "claim-1");
    expect(first.body.step.step_id).toBe("a");
    const other = await send(carrier, t, w2.token, "POST", "/steps/claim-next", {}, "claim-1");
    expect(other.status).toBe(200);
    // Decided for w2 itself: it claims the other ready step, and `a` stays w1's.
    expect(other.body.step.step_id).toBe("b");
    expect(other.body.step.claimed_by_run_id).toBe(w2.run_id);
    const view = expectOk(await call("GET", t, S.orch));
    expect(view.steps.find((s: { step_id: string }) => s.step_id === "a").claimed_by_run_id).toBe(w1.run_id);
    // w1's retry replays w1's answer.
    const again = await send(carrier, t, w1.token, "POST", "/steps/claim-next", {}, "claim-1");
    expect(again.body).toEqual(first.body);
  });
});

describe("Idempotency-Keys across sessions", () => {
  it("Should refuse another session's orchestrator on this task before any replay, and keep the same key independent in its own session", async () => {
    const { t, id } = await task();
    const first = expectOk(await call("POST", `${t}/workers`, S.orch, { agent_id: "w1" }, { "idempotency-key": "shared-key" }), 201);
    const other = await newSession();
    expectError(await call("POST", `${t}/workers`, other.orch, { agent_id: "w1" }, { "idempotency-key": "shared-key" }), 403, "permission_denied");
    const otherTask = await newTask(other, id, [step("a")]);
    const own = expectOk(await call("POST", `${otherTask}/workers`, other.orch, { agent_id: "w1" }, { "idempotency-key": "shared-key" }), 201);
    expect(own.run_id).not.toBe(first.run_id);
  });

  it("Should not replay one orchestrator's keyed task create to another session's orchestrator", async () => {
    const id = uniqueId("c");
    const body = { task_id: id, wal_name: id, title: "T", summary: "", steps: [step("a")] };
    const first = expectOk(await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, body, { "idempotency-key": "create-1" }), 201);
    const other = await newSession();
    // Its own session: a create of its own, not the first session's answer.
    const created = expectOk(await call("POST", `/v1/sessions/${other.sid}/tasks`, other.orch, body, { "idempotency-key": "create-1" }), 201);
    expect(created.task.task_id).toBe(id);
    expect(created.event_ids).not.toEqual(first.event_ids);
    expectError(await call("POST", `/v1/sessions/${S.sid}/tasks`, other.orch, body, { "idempotency-key": "create-1" }), 403, "permission_denied");
  });
});
