/**
 * The sockets and streams a token opened end with it (docs/protocols/socket.md, sse.md): a command socket closes
 * with 4401 `run_ended` within a second of the commit that ends its worker run (after the answer to a frame in
 * flight) and with 4401 `expired` when its token expires (the object's alarm, also while it hibernates; a frame
 * sent past the expiry is not run); the run's event stream ends with an `end` frame saying `run_ended`.
 */
import { describe, expect, it } from "vitest";
import { call, dispatch, newSession, newTask, step } from "../support/helpers.js";
import { openStream } from "../support/sse.js";
import { expectOk, holdAlarm, signClaims, taskStub, walExport } from "../support/support.js";
import { openSocket, type TestSocket } from "../support/test-socket.js";

/** The close of `socket`, or a failure when it stays open longer than `ms`. */
async function closedWithin(socket: TestSocket, ms: number): Promise<{ code: number; reason: string }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`the socket was still open after ${ms} ms`)), ms)));
  try {
    return await Promise.race([socket.closed, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** An orchestrator token of the session that expires `seconds` from now. */
function shortLivedOrchestrator(sid: string, seconds: number): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return signClaims({ role: "orchestrator", sid, sub: "orchestrator", run: null, iat: now, exp: now + seconds });
}

describe("a command socket whose token ends", () => {
  it("Should close the sockets of a run the orchestrator cancels within a second (4401 run_ended), and no others", async () => {
    const s = await newSession();
    const t = await newTask(s, "cancelled", [step("a")]);
    const w = await dispatch(s, t, { agent_id: "w-cancelled" });
    const workerSocket = await openSocket(t, w.token);
    const orchestratorSocket = await openSocket(t, s.orch);
    const claim = await workerSocket.ask({ id: 1, commands: [{ token: w.token, method: "POST", path: `${t}/steps/claim-next`, body: {} }] });
    expect(claim.results[0]).toMatchObject({ ok: true, status: 200 });
    expectOk(await call("POST", `${t}/runs/${w.run_id}/cancel`, s.orch, { reason: "changed my mind" }));
    expect(await closedWithin(workerSocket, 1_000)).toEqual({ code: 4401, reason: "run_ended" });
    // The orchestrator's socket is its own token's: it goes on.
    const summary = await orchestratorSocket.ask({ id: 2, commands: [{ token: s.orch, method: "POST", path: `${t}/actions`, body: { kind: "approval", prompt: "still here?" } }] });
    expect(summary.results[0]).toMatchObject({ ok: true, status: 201 });
    orchestratorSocket.ws.close(1000);
  });

  it("Should answer a run's own finish on its socket, then close it (4401 run_ended)", async () => {
    const s = await newSession();
    const t = await newTask(s, "finished", [step("a")]);
    const w = await dispatch(s, t, { agent_id: "w-finished" });
    const socket = await openSocket(t, w.token);
    const finish = await socket.ask({ id: 1, commands: [{ token: w.token, method: "POST", path: `${t}/runs/${w.run_id}/finish`, body: { outcome: "finished" } }] });
    expect(finish.results[0]).toMatchObject({ ok: true, status: 200 });
    expect(await closedWithin(socket, 1_000)).toEqual({ code: 4401, reason: "run_ended" });
  });

  it("Should close a socket when its token expires (4401 expired)", async () => {
    const s = await newSession();
    const t = await newTask(s, "expiring", [step("a")]);
    const token = await shortLivedOrchestrator(s.sid, 2);
    const socket = await openSocket(t, token);
    const live = await socket.ask({ id: 1, commands: [{ token: s.orch, method: "POST", path: `${t}/actions`, body: { kind: "approval", prompt: "before" } }] });
    expect(live.results[0]).toMatchObject({ ok: true });
    expect(await closedWithin(socket, 4_000)).toEqual({ code: 4401, reason: "expired" });
  });

  it("Should not run a frame on a socket whose token has expired, whatever woke the object (4401 expired)", async () => {
    const s = await newSession();
    const t = await newTask(s, "late-frame", [step("a")]);
    const socket = await openSocket(t, await shortLivedOrchestrator(s.sid, 1));
    // No alarm comes: only the frame finds that the token expired.
    await holdAlarm(taskStub(s.sid, "late-frame"));
    await new Promise((r) => setTimeout(r, 2_100));
    const before = await walExport(t, s.orch);
    socket.send({ id: 1, commands: [{ token: s.orch, method: "POST", path: `${t}/actions`, body: { kind: "approval", prompt: "after" } }] });
    expect(await closedWithin(socket, 1_000)).toEqual({ code: 4401, reason: "expired" });
    expect(await walExport(t, s.orch)).toBe(before);
  });
});

describe("the event stream of a run that ends", () => {
  it("Should end with the run's events and an `end` frame saying run_ended, and leave other streams open", async () => {
    const s = await newSession();
    const t = await newTask(s, "stream", [step("a")]);
    const w = await dispatch(s, t, { agent_id: "w-stream" });
    const workerStream = await openStream(`${t}/events`, w.token);
    const observerStream = await openStream(`${t}/events`, s.observer);
    expectOk(await call("POST", `${t}/runs/${w.run_id}/cancel`, s.orch, { reason: "changed my mind" }));
    const frames = [];
    for (let frame = await workerStream.next(1_000); frame !== null; frame = await workerStream.next(1_000)) frames.push(frame);
    const last = frames.at(-1)!;
    expect(last.event).toBe("end");
    expect(JSON.parse(last.data)).toMatchObject({ reason: "run_ended", run_id: w.run_id, status: "running" });
    // The run's own end was delivered before it.
    expect(frames.some((f) => f.event === "subagent.closed")).toBe(true);
    // Another token's stream goes on: it sees the next change.
    expectOk(await call("POST", `${t}/actions`, s.orch, { kind: "approval", prompt: "next" }), 201);
    let seen = false;
    for (let n = 0; n < 20 && !seen; n++) seen = (await observerStream.next(1_000))?.event === "action.required";
    expect(seen).toBe(true);
  });
});
