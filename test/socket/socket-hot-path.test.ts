/**
 * The command socket's cheap path: a token several commands share is verified once, a socket remembers the
 * tokens it verified (but never a forged one, and never past its expiry), and a frame's answers leave out the
 * task summary unless the frame sends `"summary": true`; `POST .../batch` still answers in full. The SDK sends
 * lean frames for the worker calls and asks for the summary when a call's answer type has it.
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { RuntimeClient } from "../../src/client/index.js";
import { call, dispatch, newSession, newTask, step } from "../support/helpers.js";
import { BASE, expectOk, expectWriteAnswer, signClaims, sleep, socketFrameRecorder, uniqueId } from "../support/support.js";
import { openSocket } from "../support/test-socket.js";

/** The claims a token carries (its payload, not verified). */
function claimsOf(token: string): Record<string, unknown> {
  const part = token.split(".")[1]!.replace(/-/g, "+").replace(/_/g, "/");
  return JSON.parse(atob(part)) as Record<string, unknown>;
}

describe("command socket tokens", () => {
  it("Should answer a frame of 32 commands that all carry the same token, each with its own answer", async () => {
    const s = await newSession();
    const t = await newTask(s, uniqueId("shared"), [step("a")]);
    const w = await dispatch(s, t);
    const sock = await openSocket(t, w.token);
    const progress = Array.from({ length: 30 }, (_, i) => ({ token: w.token, method: "POST", path: `${t}/steps/a/progress`, body: { phase: `p${i}` } }));
    const answer = await sock.ask({
      id: 1,
      commands: [{ token: w.token, method: "POST", path: `${t}/steps/a/claim` }, ...progress, { token: w.token, method: "POST", path: `${t}/steps/a/status`, body: { status: "completed", result_summary: "done" } }],
    });
    expect(answer.results).toHaveLength(32);
    expect(answer.results.map((r: any) => r.status)).toEqual(Array(32).fill(200));
    const walSeqs = answer.results.map((r: any) => r.body.wal_seq);
    expect([...walSeqs].sort((a, b) => a - b)).toEqual(walSeqs);
    expect(new Set(walSeqs).size).toBe(32);
    sock.ws.close();
  });

  it("Should refuse a token that expired while the socket stayed open, though an earlier frame took it", async () => {
    const s = await newSession();
    const t = await newTask(s, uniqueId("expiry"), [step("a")]);
    const w = await dispatch(s, t);
    const exp = Math.floor(Date.now() / 1000) + 2;
    const shortLived = await signClaims({ ...claimsOf(w.token), exp });
    const sock = await openSocket(t, w.token);
    const frame = (id: number, phase: string) => ({ id, commands: [{ token: shortLived, method: "POST", path: `${t}/steps/a/progress`, body: { phase } }] });
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    expect((await sock.ask(frame(1, "before"))).results[0].status).toBe(200);
    await sleep(exp * 1000 - Date.now() + 100);
    expect((await sock.ask(frame(2, "after"))).results[0]).toMatchObject({ ok: false, status: 401, body: { error: { code: "unauthorized" } } });
    // The socket's own token (a long-lived one) still works on it.
    expect((await sock.ask({ id: 3, commands: [{ token: w.token, method: "POST", path: `${t}/steps/a/progress`, body: { phase: "still" } }] })).results[0].status).toBe(200);
    sock.ws.close();
  });

  it("Should refuse a forged token every time, in the frame that carries its genuine twin and in later frames", async () => {
    const s = await newSession();
    const t = await newTask(s, uniqueId("forged"), [step("a")]);
    const w = await dispatch(s, t);
    // The same claims signed with another secret: only the signature differs from the genuine token's.
    const forged = await signClaims(claimsOf(w.token), "not-the-token-secret");
    expect(forged.split(".")[1]).toBe(w.token.split(".")[1]);
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    const sock = await openSocket(t, w.token);
    const progress = (token: string) => ({ token, method: "POST", path: `${t}/steps/a/progress`, body: { phase: "x" } });
    const first = await sock.ask({ id: 1, commands: [progress(w.token), progress(forged), progress(w.token), progress(forged)] });
    expect(first.results.map((r: any) => r.status)).toEqual([200, 401, 200, 401]);
    for (const id of [2, 3]) {
      const again = await sock.ask({ id, commands: [progress(forged), progress(w.token)] });
      expect(again.results.map((r: any) => r.status)).toEqual([401, 200]);
    }
    sock.ws.close();
  });
});

describe("lean socket answers", () => {
  it("Should answer a frame's commands without the task summary, keeping wal_seq, event_ids, the claim and next", async () => {
    const s = await newSession();
    const t = await newTask(s, uniqueId("lean"), [step("a"), step("b", ["a"])]);
    const w = await dispatch(s, t, { max_steps: 2 });
    const idle = await dispatch(s, t);
    const sock = await openSocket(t, w.token);
    const answer = await sock.ask({
      id: 1,
      commands: [
        { token: w.token, method: "POST", path: `${t}/steps/claim-next` },
        { token: w.token, method: "POST", path: `${t}/steps/a/progress`, body: { phase: "reading" } },
        { token: w.token, method: "POST", path: `${t}/steps/a/status`, body: { status: "completed", result_summary: "done", claim_next: true } },
        { token: idle.token, method: "POST", path: `${t}/steps/claim-next` },
      ],
    });
    expect(answer.results.map((r: any) => r.status), JSON.stringify(answer.results)).toEqual([200, 200, 200, 200]);
    const [claimed, progressed, completed, nothing] = answer.results.map((r: any) => r.body);
    for (const body of [claimed, progressed, completed, nothing]) {
      expect(body).not.toHaveProperty("task");
      expect(body.event_ids).toEqual(expect.any(Array));
      expect(body.wal_seq).toEqual(expect.any(Number));
    }
    expect(claimed).toMatchObject({ step: { step_id: "a", status: "claimed" }, attempt_id: expect.stringMatching(/^att_/) });
    expect(completed.next).toMatchObject({ step: { step_id: "b" }, attempt_id: expect.any(String) });
    expect(nothing.no_step_claimed).toBe(true);
    sock.ws.close();
  });

  it("Should answer in full a frame that sends summary: true, and keep the summary and worker token of a dispatch in a lean frame", async () => {
    const s = await newSession();
    const t = await newTask(s, uniqueId("full"), [step("a")]);
    const w = await dispatch(s, t);
    const sock = await openSocket(t, s.orch);
    const full = await sock.ask({ id: 1, summary: true, commands: [{ token: w.token, method: "POST", path: `${t}/steps/a/claim` }] });
    expectWriteAnswer(full.results[0].body, t.split("/").pop()!);
    expect(full.results[0].body.step.step_id).toBe("a");
    const dispatched = await sock.ask({ id: 2, commands: [{ token: s.orch, method: "POST", path: `${t}/workers`, body: { agent_id: "w2" } }] });
    expect(dispatched.results[0].status).toBe(201);
    expect(dispatched.results[0].body).toMatchObject({ run_id: expect.any(String), token: expect.any(String), task: { task_id: t.split("/").pop() } });
    expect((await sock.ask({ id: 3, summary: "yes", commands: [] })).status).toBe(400);
    sock.ws.close();
  });

  it("Should keep answering POST .../batch commands with the task summary", async () => {
    const s = await newSession();
    const t = await newTask(s, uniqueId("batch-full"), [step("a")]);
    const w = await dispatch(s, t);
    const res = expectOk(await call("POST", `${t}/batch`, w.token, { commands: [{ token: w.token, method: "POST", path: `${t}/steps/a/claim` }] }));
    expectWriteAnswer(res.results[0].body, t.split("/").pop()!);
    expectOk(await call("POST", `${t}/batch`, w.token, { summary: true, commands: [] }), 400);
  });
});

describe("RuntimeClient over a command socket: lean answers", () => {
  /** A fetch through SELF whose sockets record each frame they send, parsed. */
  function frameRecording() {
    return socketFrameRecorder((frame: { summary?: boolean; commands: { path: string }[] }) => frame);
  }

  async function readyTask(id: string) {
    const admin = new RuntimeClient({ baseUrl: BASE, token: "test-admin-token", fetch: SELF.fetch.bind(SELF) });
    const session = await admin.createSession({});
    const orch = admin.withToken(session.orchestrator.token);
    await orch.createTask(session.session_id, { task_id: id, wal_name: id, title: id, summary: "", steps: [step("a"), step("b")] });
    const task = { sessionId: session.session_id, taskId: id };
    const w = await orch.dispatchWorker(task, { agent_id: "w1", max_steps: 2 });
    return { session, task, w };
  }

  it("Should send a worker's calls as lean frames and get their claims without the task summary", async () => {
    const { frames, fetch } = frameRecording();
    const { task, w } = await readyTask(uniqueId("sdk-lean"));
    const family = new RuntimeClient({ baseUrl: BASE, fetch, socket: true });
    const worker = family.worker(task, { token: w.token, runId: w.runId, agentId: "w1" });
    const claimed = await worker.claimNext();
    expect(claimed).toMatchObject({ step: { step_id: "a" }, wal_seq: expect.any(Number) });
    expect(claimed.task).toBeUndefined();
    const progressed = await worker.appendProgress("a", { phase: "reading" });
    expect(progressed.task).toBeUndefined();
    expect(frames.map((f) => f.summary)).toEqual([undefined, undefined]);
    family.close();
  });

  it("Should ask for the summary in a frame that carries a call whose answer type has it, and in every frame with socket.summaries", async () => {
    const { frames, fetch } = frameRecording();
    const { session, task, w } = await readyTask(uniqueId("sdk-full"));
    const orch = new RuntimeClient({ baseUrl: BASE, token: session.orchestrator.token, fetch, socket: true });
    const paused = await orch.pauseTask(task);
    expect(paused.task.status).toBe("paused");
    expect((await orch.resumeTask(task)).task.status).not.toBe("paused");
    expect(frames.map((f) => f.summary)).toEqual([true, true]);
    orch.close();
    frames.length = 0;
    const family = new RuntimeClient({ baseUrl: BASE, fetch, socket: { summaries: true } });
    const worker = family.worker(task, { token: w.token, runId: w.runId, agentId: "w1" });
    const claimed = await worker.claimNext();
    expect(claimed.task?.task_id).toBe(task.taskId);
    expect(frames.map((f) => f.summary)).toEqual([true]);
    family.close();
  });
});
