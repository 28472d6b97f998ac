/**
 * The task's command socket (`GET .../socket`, WebSocket): frames are batches answered in order with the same
 * results as `POST .../batch`; frames refused whole say why; the client SDK sends its group commits over it,
 * falls back to HTTP where it cannot open one, and retries a frame lost with its connection without writing
 * anything twice.
 */
import { runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { type FetchLike, RuntimeClient } from "../../src/client/index.js";
import { call, dispatch, newSession, newTask, step } from "../support/helpers.js";
import { MAX_QUEUED_FRAMES } from "../../durable-objects/task/command-sockets.js";
import type { TaskGraphObject } from "../../durable-objects/task/task-graph-object.js";
import { BASE, bindings, eventually, expectError, mintRole, socketFrameRecorder, taskStub, walOf } from "../support/support.js";
import { openSocket } from "../support/test-socket.js";

describe("GET .../socket (command socket)", () => {
  it("Should answer each frame with the results POST .../batch gives, in order, each command with its own actor", async () => {
    const s = await newSession();
    const t = await newTask(s, "sock-order", [step("a"), step("b", ["a"])]);
    const w = await dispatch(s, t, { max_steps: 2 });
    const sock = await openSocket(t, w.token);
    sock.send({
      id: 1,
      commands: [
        { token: w.token, method: "POST", path: `${t}/steps/claim-next` },
        { token: w.token, method: "POST", path: `${t}/steps/a/status`, body: { status: "completed", result_summary: "done", claim_next: true } },
      ],
    });
    sock.send({ id: "two", commands: [{ token: s.orch, method: "POST", path: `${t}/steps/b/progress`, body: { phase: "watching" } }] });
    const first = await sock.next();
    const second = await sock.next();
    expect(first.id).toBe(1);
    expect(first.results.map((r: any) => r.status)).toEqual([200, 200]);
    expect(first.results[0].body.step.step_id).toBe("a");
    expect(first.results[1].body.next.step.step_id).toBe("b");
    expect(second).toMatchObject({ id: "two", results: [{ ok: true, status: 200 }] });
    const wal = await walOf(t, s.orch);
    expect(wal.slice(-5).map((e) => [e.event_type, e.actor_agent_id])).toEqual([
      ["task_step_claimed", w.agent_id],
      ["task_step_completed", w.agent_id],
      ["task_step_ready", w.agent_id],
      ["task_step_claimed", w.agent_id],
      ["task_progress", "orchestrator"],
    ]);
    sock.ws.close(1000, "done");
    expect((await sock.closed).code).toBe(1000);
  });

  it("Should answer a rejected command in place, and replay a repeated Idempotency-Key instead of writing twice", async () => {
    const s = await newSession();
    const t = await newTask(s, "sock-reject", [step("a"), step("b")]);
    const w1 = await dispatch(s, t);
    const w2 = await dispatch(s, t);
    const sock = await openSocket(t, w1.token, "query");
    const claim = { token: w1.token, method: "POST", path: `${t}/steps/a/claim`, idempotency_key: "sock-claim-a" };
    sock.send({ id: 7, commands: [claim, { token: w2.token, method: "POST", path: `${t}/steps/a/claim` }, { token: "forged.token.value", method: "POST", path: `${t}/steps/b/claim` }] });
    const answer = await sock.next();
    expect(answer.results.map((r: any) => [r.status, r.body.error?.code ?? "ok"])).toEqual([
      [200, "ok"],
      [409, "step_already_claimed"],
      [401, "unauthorized"],
    ]);
    const walBefore = (await walOf(t, s.orch)).length;
    sock.send({ id: 8, commands: [claim] });
    const again = await sock.next();
    expect(again.results[0]).toEqual(answer.results[0]);
    expect((await walOf(t, s.orch)).length).toBe(walBefore);
    sock.ws.close();
  });

  it("Should refuse a frame whole with its id, status and error when it is not JSON, not a batch, or too big", async () => {
    const s = await newSession();
    const t = await newTask(s, "sock-bad", [step("a")]);
    const w = await dispatch(s, t);
    const sock = await openSocket(t, w.token);
    sock.send("{not json");
    expect(await sock.next()).toMatchObject({ id: null, status: 400, error: { code: "validation_error" } });
    sock.send({ id: 3, commands: [] });
    expect(await sock.next()).toMatchObject({ id: 3, status: 400, error: { code: "validation_error" } });
    sock.send({ id: 4, commands: [{ token: w.token, method: "DELETE", path: `${t}/steps/a/claim` }] });
    expect(await sock.next()).toMatchObject({ id: 4, status: 400, error: { code: "validation_error" } });
    sock.send({ id: 5, commands: [{ token: w.token, method: "POST", path: `${t}/steps/a/claim`, body: { note: "x".repeat(1_100_000) } }] });
    expect(await sock.next()).toMatchObject({ id: null, status: 413, error: { code: "payload_too_large" } });
    // The connection is still usable after refused frames.
    sock.send({ id: 6, commands: [{ token: w.token, method: "POST", path: `${t}/steps/a/claim` }] });
    expect(await sock.next()).toMatchObject({ id: 6, results: [{ ok: true, status: 200 }] });
    expect((await walOf(t, s.orch)).filter((e) => e.event_type === "task_step_claimed")).toHaveLength(1);
    sock.ws.close();
  });

  it("Should count a frame in UTF-8 bytes: exactly MAX_BODY_BYTES is taken, one byte past it is 413 even in fewer characters", async () => {
    const max = Number(bindings.MAX_BODY_BYTES);
    const s = await newSession();
    const t = await newTask(s, "sock-bytes", [step("a")]);
    const w = await dispatch(s, t);
    const sock = await openSocket(t, w.token);
    const claim = JSON.stringify({ id: 1, commands: [{ token: w.token, method: "POST", path: `${t}/steps/a/claim` }] });
    sock.send(claim + " ".repeat(max - claim.length));
    expect(await sock.next()).toMatchObject({ id: 1, results: [{ ok: true, status: 200 }] });
    // "é" is one UTF-16 unit and two bytes: the frame is under the limit in characters, one byte past it on the wire.
    const base = JSON.stringify({ id: 2, commands: [{ token: w.token, method: "POST", path: `${t}/steps/a/progress`, body: { phase: "" } }] });
    const wide = base.replace('"phase":""', `"phase":"${"é".repeat(Math.ceil((max - base.length + 1) / 2))}"`);
    const bytes = new TextEncoder().encode(wide).length;
    expect(wide.length).toBeLessThan(max);
    expect(bytes === max + 1 || bytes === max + 2).toBe(true);
    sock.send(wide);
    expect(await sock.next()).toMatchObject({ id: null, status: 413, error: { code: "payload_too_large", details: { limit: max } } });
    sock.ws.close();
  });

  it("Should refuse the upgrade without a token in the task's scope, and a GET that is not an upgrade", async () => {
    const s = await newSession();
    const t = await newTask(s, "sock-auth", [step("a")]);
    const other = await newTask(s, "sock-auth-other", [step("a")]);
    const w = await dispatch(s, other);
    const upgrade = (token?: string) => SELF.fetch(`${BASE}${t}/socket`, { headers: { upgrade: "websocket", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) } });
    const none = await upgrade();
    expect(none.status).toBe(401);
    expect(none.webSocket ?? null).toBeNull();
    expect((await upgrade(w.token)).status).toBe(403);
    expectError(await call("GET", `${t}/socket`, s.orch), 400, "validation_error");
    // An observer sends no commands, so it may not hold a socket (and one of the object's slots); an approver may.
    const observed = await upgrade(s.observer);
    expect(observed.webSocket ?? null).toBeNull();
    expectError({ status: observed.status, body: await observed.json(), headers: observed.headers }, 403, "permission_denied");
    const held = await openSocket(t, await mintRole(s, "approver"));
    held.ws.close(1000, "done");
    expect((await held.closed).code).toBe(1000);
    // A task that does not exist has no object to hold the socket.
    const missing = await SELF.fetch(`${BASE}/v1/sessions/${s.sid}/tasks/no-such-task/socket`, { headers: { upgrade: "websocket", authorization: `Bearer ${s.orch}` } });
    expect(missing.status).toBe(404);
    expect((await missing.json<{ error: { code: string } }>()).error.code).toBe("not_found");
  });
});

describe("the task object's socket lanes", () => {
  /** A stand-in for an accepted socket: what the object sends and how it closes it. */
  function fakeSocket(scope: { sid: string; tid: string }) {
    const sent: any[] = [];
    const closed: { code: number; reason: string }[] = [];
    const socket = {
      deserializeAttachment: () => scope,
      send: (data: string) => sent.push(JSON.parse(data)),
      close: (code: number, reason: string) => closed.push({ code, reason }),
    } as unknown as WebSocket;
    return { socket, sent, closed };
  }

  it("Should run and answer the frames of one socket in arrival order, even when a later frame is quicker to prepare", async () => {
    const s = await newSession();
    const t = await newTask(s, "lane-order", [step("a")]);
    // A token this isolate has not verified yet: the first frame waits for its signature check, while the
    // orchestrator's token (verified by the calls above) makes the later frames quicker to prepare.
    const w = await dispatch(s, t);
    const fake = fakeSocket({ sid: s.sid, tid: "lane-order" });
    const frames = [
      { id: 1, commands: [{ token: w.token, method: "POST", path: `${t}/steps/a/claim` }] },
      { id: 2, commands: [{ token: s.orch, method: "POST", path: `${t}/steps/a/progress`, body: { phase: "second" } }] },
      { id: 3, commands: [{ token: s.orch, method: "POST", path: `${t}/steps/a/progress`, body: { phase: "third" } }] },
    ];
    await runInDurableObject(taskStub(s.sid, "lane-order"), async (object: TaskGraphObject) => {
      await Promise.all(frames.map((f) => object.webSocketMessage(fake.socket, JSON.stringify(f))));
    });
    expect(fake.sent.map((f) => [f.id, f.results[0].ok])).toEqual([
      [1, true],
      [2, true],
      [3, true],
    ]);
    const wal = await walOf(t, s.orch);
    expect(wal.slice(-3).map((e) => [e.event_type, (e.payload as { phase?: string }).phase ?? null])).toEqual([
      ["task_step_claimed", null],
      ["task_progress", "second"],
      ["task_progress", "third"],
    ]);
  });

  it(`Should close a socket with 1013 when more than ${MAX_QUEUED_FRAMES} frames are waiting, and still answer the ones it took`, async () => {
    const s = await newSession();
    const t = await newTask(s, "lane-cap", [step("a")]);
    const w = await dispatch(s, t);
    const fake = fakeSocket({ sid: s.sid, tid: "lane-cap" });
    await runInDurableObject(taskStub(s.sid, "lane-cap"), async (object: TaskGraphObject) => {
      const frame = (id: number) => JSON.stringify({ id, commands: [{ token: w.token, method: "POST", path: `${t}/steps/a/progress`, body: { phase: `p${id}` } }] });
      await Promise.all(Array.from({ length: MAX_QUEUED_FRAMES + 1 }, (_, i) => object.webSocketMessage(fake.socket, frame(i + 1))));
    });
    expect(fake.closed).toEqual([{ code: 1013, reason: `more than ${MAX_QUEUED_FRAMES} frames waiting` }]);
    expect(fake.sent.map((f) => f.id)).toEqual(Array.from({ length: MAX_QUEUED_FRAMES }, (_, i) => i + 1));
  });

  it("Should close the socket whose frame would put more than SOCKET_MAX_QUEUED_BYTES (16 MiB) of frames waiting on the task, and answer the ones it took", async () => {
    const s = await newSession();
    const t = await newTask(s, "bytes-cap", [step("a")]);
    const fake = fakeSocket({ sid: s.sid, tid: "bytes-cap" });
    // 18 frames of 0.9 MB fit in 16 MiB, the 19th does not (each is refused whole when its turn comes: not a batch).
    const frame = (id: number) => JSON.stringify({ id, commands: [{ token: s.orch, method: "POST", path: `${t}/steps/a/progress` }], pad: "x".repeat(900_000) });
    await runInDurableObject(taskStub(s.sid, "bytes-cap"), async (object: TaskGraphObject) => {
      await Promise.all(Array.from({ length: 19 }, (_, i) => object.webSocketMessage(fake.socket, frame(i + 1))));
      expect((object as unknown as { sockets: { queuedBytes: number } }).sockets.queuedBytes).toBe(0);
    });
    expect(fake.closed).toEqual([{ code: 1013, reason: "more than 16777216 bytes of frames waiting on this task" }]);
    expect(fake.sent.map((f) => [f.id, f.status])).toEqual(Array.from({ length: 18 }, (_, i) => [i + 1, 400]));
  });

  it("Should answer an upgrade past SOCKET_MAX_CONNECTIONS (4 in the test configuration) 429 rate_limited with Retry-After, and take one again once one closes", async () => {
    const s = await newSession();
    const t = await newTask(s, "socket-cap", [step("a")]);
    // One socket per token (a token's share is a quarter of the pool): four orchestrator tokens fill it.
    const tokens = [s.orch, ...(await Promise.all([1, 2, 3, 4].map(() => mintRole(s, "orchestrator"))))];
    const socks = [];
    for (let i = 0; i < 4; i++) socks.push(await openSocket(t, tokens[i]!));
    const refused = await SELF.fetch(`${BASE}${t}/socket`, { headers: { upgrade: "websocket", authorization: `Bearer ${tokens[4]}` } });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("30");
    expect(await refused.json()).toEqual({ error: { code: "rate_limited", message: expect.any(String), details: { limit: "sockets", max: 4, retry_after_ms: 30_000 } } });
    // The open ones still work.
    socks[0]!.send({ id: 1, commands: [{ token: s.orch, method: "POST", path: `${t}/steps/a/progress`, body: { phase: "still here" } }] });
    expect((await socks[0]!.next()).results[0].status).toBe(200);
    const leaving = socks.pop()!;
    leaving.ws.close(1000, "done");
    await leaving.closed;
    const again = await eventually(() => openSocket(t, tokens[4]!));
    again.ws.close(1000, "done");
    for (const sock of socks) sock.ws.close(1000, "done");
  });
});

describe("RuntimeClient with socket: true", () => {
  /** A fetch through SELF that counts requests per path suffix. */
  function counting() {
    const counts = { batch: 0, socket: 0, other: 0 };
    const fetch: FetchLike = (input, init) => {
      const path = new URL(input).pathname;
      if (path.endsWith("/batch")) counts.batch++;
      else if (path.endsWith("/socket")) counts.socket++;
      else counts.other++;
      return SELF.fetch(input, init);
    };
    return { counts, fetch };
  }

  it("Should run pooled workers to the end with their group commits as frames over one socket", async () => {
    const { counts, fetch } = counting();
    const admin = new RuntimeClient({ baseUrl: BASE, token: "test-admin-token", fetch, socket: true });
    const session = await admin.createSession({});
    const orch = admin.withToken(session.orchestrator.token);
    const steps = Array.from({ length: 12 }, (_, i) => step(`s${i}`));
    await orch.createTask(session.session_id, { task_id: "sock-client", wal_name: "sock-client", title: "Socket client", summary: "", steps });
    const task = { sessionId: session.session_id, taskId: "sock-client" };
    const workers = await Promise.all([1, 2, 3].map((n) => orch.dispatchWorker(task, { agent_id: `w${n}`, max_steps: 12 })));
    counts.batch = counts.other = 0;
    const reports = await Promise.all(workers.map((w) => w.run(async () => ({ status: "completed", result_summary: "ok" }))));
    expect(reports.flatMap((r) => r.completed).sort()).toEqual(steps.map((x) => x.step_id).sort());
    expect(counts.socket).toBe(1);
    expect(counts.batch).toBe(0);
    const view = await orch.getTask(task);
    expect(view.steps.every((x: { status: string }) => x.status === "completed")).toBe(true);
    admin.close();
  });

  /** A fetch through SELF whose sockets record the commands ("token path") of each frame they send. */
  function frameRecording() {
    const { frames, fetch } = socketFrameRecorder((frame: { commands: { token: string; path: string }[] }) => frame.commands.map((c) => `${c.token} ${c.path}`));
    return { frames, sizes: () => frames.map((f) => f.length), fetch };
  }

  /** A task of `count` ready steps and `count` dispatched runs. */
  async function readyTask(id: string, count: number) {
    const admin = new RuntimeClient({ baseUrl: BASE, token: "test-admin-token", fetch: SELF.fetch.bind(SELF) });
    const session = await admin.createSession({});
    const orch = admin.withToken(session.orchestrator.token);
    await orch.createTask(session.session_id, { task_id: id, wal_name: id, title: id, summary: "", steps: Array.from({ length: count }, (_, i) => step(`s${i}`)) });
    const task = { sessionId: session.session_id, taskId: id };
    const dispatched = await Promise.all(Array.from({ length: count }, (_, i) => orch.dispatchWorker(task, { agent_id: `w${i}` })));
    return { orch, task, dispatched };
  }

  it("Should split one tick's writes to a task into up to 3 frames of at least 8 commands, sent back to back", async () => {
    const { frames, sizes, fetch } = frameRecording();
    const { orch, task, dispatched } = await readyTask("sock-split", 60);
    const family = new RuntimeClient({ baseUrl: BASE, fetch, socket: true });
    const workers = dispatched.map((w) => family.worker(task, { token: w.token, runId: w.runId, agentId: w.agentId ?? "w" }));
    for (const [from, to, expected] of [[0, 32, [11, 11, 10]], [32, 48, [8, 8]], [48, 60, [12]]] as const) {
      frames.length = 0;
      const claims = await Promise.all(workers.slice(from, to).map((w) => w.claimNext()));
      expect(claims.every((c) => "step" in c && c.step !== undefined)).toBe(true);
      expect(sizes()).toEqual(expected);
    }
    const wal = await orch.walExport(task);
    expect(wal.events.filter((e) => e.event_type === "task_step_claimed")).toHaveLength(60);
    family.close();
  });

  it("Should keep one worker's writes of a tick in one frame, in order, when the tick is split", async () => {
    const { frames: sent, fetch } = frameRecording();
    const { orch, task, dispatched } = await readyTask("sock-together", 31);
    const family = new RuntimeClient({ baseUrl: BASE, fetch, socket: true });
    const workers = dispatched.map((w) => family.worker(task, { token: w.token, runId: w.runId, agentId: w.agentId ?? "w" }));
    const steps = (await Promise.all(workers.map((w) => w.claimNext()))).map((c) => ("step" in c && c.step !== undefined ? c.step.step_id : "none"));
    sent.length = 0;
    // One tick: ten workers report progress, the eleventh reports progress and completes its step, the rest
    // report progress: 32 commands, whose even split into 3 frames would fall between the eleventh's two.
    const writes: Promise<unknown>[] = [];
    workers.forEach((w, i) => {
      writes.push(w.appendProgress(steps[i]!, { summary: "working" }));
      if (i === 10) writes.push(w.updateStep(steps[i]!, { status: "completed", result_summary: "done" }));
    });
    await Promise.all(writes);
    expect(sent.map((f) => f.length).reduce((a, b) => a + b, 0)).toBe(32);
    expect(sent.length).toBe(3);
    const eleventh = dispatched[10]!.token;
    const frame = sent.find((f) => f.some((c) => c.startsWith(eleventh)))!;
    expect(frame.filter((c) => c.startsWith(eleventh)).map((c) => c.split("/").slice(-2).join("/"))).toEqual([`${steps[10]}/progress`, `${steps[10]}/status`]);
    const view = await orch.getTask(task);
    expect(view.steps.find((x: { step_id: string }) => x.step_id === steps[10])!.status).toBe("completed");
    family.close();
  });

  it("Should send one tick's writes as one frame with framesPerTick: 1", async () => {
    const { sizes, fetch } = frameRecording();
    const { task, dispatched } = await readyTask("sock-one-frame", 32);
    const family = new RuntimeClient({ baseUrl: BASE, fetch, socket: { framesPerTick: 1 } });
    const claims = await Promise.all(dispatched.map((w) => family.worker(task, { token: w.token, runId: w.runId, agentId: w.agentId ?? "w" }).claimNext()));
    expect(claims.every((c) => "step" in c && c.step !== undefined)).toBe(true);
    expect(sizes()).toEqual([32]);
    family.close();
  });

  it("Should send its batches over HTTP where the socket cannot be opened", async () => {
    const { counts, fetch: inner } = counting();
    // A server without the socket route: the upgrade is answered 404.
    const fetch: FetchLike = (input, init) => (new URL(input).pathname.endsWith("/socket") ? Promise.resolve(Response.json({ error: { code: "not_found", message: "no route", details: {} } }, { status: 404 })) : inner(input, init));
    const admin = new RuntimeClient({ baseUrl: BASE, token: "test-admin-token", fetch, socket: true });
    const session = await admin.createSession({});
    const orch = admin.withToken(session.orchestrator.token);
    await orch.createTask(session.session_id, { task_id: "sock-fallback", wal_name: "sock-fallback", title: "Fallback", summary: "", steps: [step("a"), step("b")] });
    const task = { sessionId: session.session_id, taskId: "sock-fallback" };
    const [w1, w2] = await Promise.all([orch.dispatchWorker(task), orch.dispatchWorker(task)]);
    const [c1, c2] = await Promise.all([w1!.claimNext(), w2!.claimNext()]);
    expect([c1, c2].map((c) => ("step" in c && c.step !== undefined ? c.step.step_id : null)).sort()).toEqual(["a", "b"]);
    expect(counts.batch).toBeGreaterThanOrEqual(1);
    admin.close();
  });

  it("Should retry a frame whose connection dropped with the same Idempotency-Keys, so nothing is written twice", async () => {
    // The first socket the client opens loses the answer to its first frame: the "network" swallows it and
    // the connection drops. The frame was written; the retry must get the same answers and write nothing.
    let sockets = 0;
    const fetch: FetchLike = async (input, init) => {
      const res = await SELF.fetch(input, init);
      const ws = (res as Response & { webSocket?: WebSocket | null }).webSocket;
      if (ws === undefined || ws === null || sockets++ > 0) return res;
      const add = ws.addEventListener.bind(ws) as (type: string, listener: (event: unknown) => void) => void;
      (ws as unknown as { addEventListener: typeof add }).addEventListener = (type, listener) => (type === "message" ? add("message", () => ws.close(1011, "answer lost")) : add(type, listener));
      return res;
    };
    const admin = new RuntimeClient({ baseUrl: BASE, token: "test-admin-token", fetch: SELF.fetch.bind(SELF), socket: true });
    const session = await admin.createSession({});
    const orch = admin.withToken(session.orchestrator.token);
    await orch.createTask(session.session_id, { task_id: "sock-drop", wal_name: "sock-drop", title: "Drop", summary: "", steps: [step("a"), step("b")] });
    const task = { sessionId: session.session_id, taskId: "sock-drop" };
    const dispatched = await Promise.all([orch.dispatchWorker(task), orch.dispatchWorker(task)]);
    const flaky = new RuntimeClient({ baseUrl: BASE, fetch, socket: true, retry: { attempts: 4, baseDelayMs: 5, maxDelayMs: 20 } });
    const workers = dispatched.map((w) => flaky.worker(task, { token: w.token, runId: w.runId, agentId: w.agentId ?? "w" }));
    const claims = await Promise.all(workers.map((w) => w.claimNext()));
    expect(sockets).toBeGreaterThanOrEqual(2);
    expect(claims.map((c) => ("step" in c && c.step !== undefined ? c.step.step_id : null)).sort()).toEqual(["a", "b"]);
    const wal = await orch.walExport(task);
    expect(wal.events.filter((e) => e.event_type === "task_step_claimed")).toHaveLength(2);
    flaky.close();
    admin.close();
  });
});
