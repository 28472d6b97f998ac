/**
 * The live streams through SELF.fetch: GET .../tasks/{tid}/events (runtime events, resumable by Last-Event-ID
 * or after_seq, ending with `end`) and GET /v1/sessions/{sid}/events (snapshot.updated per index change).
 * Every expectation on the task stream is derived from the exported WAL: the frames must be exactly its
 * projection, in order, from the resume point on.
 */
import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { projectEvent, SEQUENCE_STRIDE, type WalEvent } from "../../src/core/index.js";
import type { TaskGraphObject } from "../../durable-objects/task/task-graph-object.js";
import type { SessionObject } from "../../durable-objects/session/session-object.js";
import { OPERATIONS } from "../../routes/http/catalog.js";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { eventOf, openStream, type SseFrame, type SseReader } from "../support/sse.js";
import { bindings, eventually, expectError, expectOk, mintRole, sleep, taskStub, uniqueId, walOf } from "../support/support.js";

/** The frames the task stream must send for these WAL events: id (the event's sequence), event type, the runtime event. */
function framesOf(wal: readonly WalEvent[]): { id: string; event: string; data: unknown }[] {
  return wal.flatMap((e) => projectEvent(e).map((ev) => ({ id: String(ev.sequence), event: ev.type, data: ev })));
}

/** Every frame's id is its event's `sequence`, and the ids strictly increase. */
function expectSequenceIds(frames: readonly SseFrame[]): void {
  const ids = frames.map((f) => Number(f.id));
  expect(frames.map((f) => f.id)).toEqual(frames.map((f) => String((JSON.parse(f.data) as { sequence: number }).sequence)));
  for (let i = 1; i < ids.length; i++) expect(ids[i], `id ${ids[i]} after ${ids[i - 1]}`).toBeGreaterThan(ids[i - 1]!);
}

/** Frames as comparable values (data parsed). */
function plain(frames: readonly SseFrame[]) {
  return frames.map((f) => ({ id: f.id, event: f.event, data: JSON.parse(f.data) as unknown }));
}

/** The frames strictly after `id` in the stream order of `all`. */
function after(all: ReturnType<typeof framesOf>, id: string) {
  const i = all.findIndex((f) => f.id === id);
  expect(i, `frame ${id} exists`).toBeGreaterThanOrEqual(0);
  return all.slice(i + 1);
}

/** A worker claims the next ready step and completes it; returns the step id. */
async function workOne(token: string, taskPath: string): Promise<string> {
  const claim = expectOk(await call("POST", `${taskPath}/steps/claim-next`, token));
  const stepId: string = claim.step.step_id;
  expectOk(await call("POST", `${taskPath}/steps/${stepId}/status`, token, { status: "completed", result_summary: `did ${stepId}` }));
  return stepId;
}

/** A fresh session and a task a → (b, c) → d with a pooled worker. */
async function fanTask(): Promise<{ s: TestSession; t: string; tid: string; w: { token: string; run_id: string } }> {
  const s = await newSession();
  const tid = uniqueId("ev");
  const t = await newTask(s, tid, [step("a"), step("b", ["a"]), step("c", ["a"]), step("d", ["b", "c"])]);
  const w = await dispatch(s, t, { max_steps: 4 });
  return { s, t, tid, w };
}

describe("GET .../tasks/{tid}/events", () => {
  it("Should send the WAL's runtime events as frames `id: <sequence>`, `event: <type>`, `data: <event>`, then live ones", async () => {
    const { s, t, w } = await fanTask();
    const stream = await openStream(`${t}/events`, s.observer);
    const history = framesOf(await walOf(t, s.orch));
    const first = await stream.take(history.length);
    expect(plain(first)).toEqual(history);
    // The task_created event (wal_seq 1) has two runtime events: sequences 10 and 11, not one shared sequence.
    expect(first.slice(0, 2).map((f) => [f.id, f.event])).toEqual([[String(SEQUENCE_STRIDE), "task.created"], [String(SEQUENCE_STRIDE + 1), "task.accepted"]]);

    await workOne(w.token, t);
    const wal = await walOf(t, s.orch);
    const live = framesOf(wal).slice(history.length);
    expect(live.length).toBeGreaterThan(0);
    const rest = await stream.take(live.length);
    expect(plain(rest)).toEqual(live);
    expectSequenceIds([...first, ...rest]);
    await stream.cancel();
  });

  it("Should carry a live commit larger than SSE_MAX_QUEUED_BYTES to a subscriber that keeps up, on the same stream", async () => {
    const s = await newSession();
    const t = await newTask(s, "large-live-commit", [step("a")]);
    const stream = await openStream(`${t}/events`, s.observer);
    const history = framesOf(await walOf(t, s.orch));
    await stream.take(history.length);
    const ops = Array.from({ length: 2_000 }, (_, i) => ({ op: "add_step", step: { step_id: `s${i}`, title: "t".repeat(200), summary: "", depends_on_step_ids: [] } }));
    expectOk(await call("PATCH", t, s.orch, { ops }));
    const live = framesOf(await walOf(t, s.orch)).slice(history.length);
    const bytes = live.reduce((n, f) => n + JSON.stringify(f.data).length, 0);
    expect(bytes).toBeGreaterThan(Number(bindings.SSE_MAX_QUEUED_BYTES));
    expect(plain(await stream.take(live.length, 15_000))).toEqual(live);
    await stream.cancel();
  });

  it("Should resume after a drop with Last-Event-ID: exactly the missing events in order, then live ones", async () => {
    const { s, t, w } = await fanTask();
    const first = await openStream(`${t}/events`, s.observer);
    const seen = await first.take(3);
    await first.cancel();
    // Written while nobody listens.
    await workOne(w.token, t);
    await workOne(w.token, t);
    const lastId = seen[seen.length - 1]!.id!;
    const again = await openStream(`${t}/events`, s.observer, { "last-event-id": lastId });
    const missing = after(framesOf(await walOf(t, s.orch)), lastId);
    expect(plain(await again.take(missing.length))).toEqual(missing);
    // Then live, with no gap and no duplicate at the seam.
    const before = (await walOf(t, s.orch)).length;
    await workOne(w.token, t);
    const live = framesOf((await walOf(t, s.orch)).slice(before));
    expect(plain(await again.take(live.length))).toEqual(live);
    await again.cancel();
  });

  it("Should resume exactly from an id inside a WAL event's runtime events (after task.created, before task.accepted)", async () => {
    const { s, t } = await fanTask();
    const all = framesOf(await walOf(t, s.orch));
    // task_created and worker_dispatched each project to two runtime events: resume between the two, and after both.
    const created = all.find((f) => f.event === "task.created")!;
    const delegated = all.find((f) => f.event === "task.delegated")!;
    for (const { id, next } of [
      { id: created.id, next: "task.accepted" },
      { id: after(all, created.id)[0]!.id, next: all[2]!.event },
      { id: delegated.id, next: "subagent.spawned" },
    ]) {
      const stream = await openStream(`${t}/events`, s.orch, { "last-event-id": id });
      const expected = after(all, id);
      const frames = await stream.take(expected.length);
      expect(frames[0]!.event, `after ${id}`).toBe(next);
      expect(plain(frames)).toEqual(expected);
      expectSequenceIds(frames);
      await stream.expectQuiet(150);
      await stream.cancel();
    }
  });

  it("Should still resume exactly from a legacy `<wal_seq>.<k>` id, sending only sequence ids", async () => {
    const { s, t } = await fanTask();
    const all = framesOf(await walOf(t, s.orch));
    // `1.1` was the old id of task.accepted (k = 1 of wal_seq 1): the stream goes on after it, with new ids.
    const stream = await openStream(`${t}/events`, s.orch, { "last-event-id": "1.1" });
    const expected = after(all, String(SEQUENCE_STRIDE + 1));
    const frames = await stream.take(expected.length);
    expect(plain(frames)).toEqual(expected);
    expectSequenceIds(frames);
    await stream.expectQuiet(150);
    await stream.cancel();
  });

  it("Should resume with ?after_seq=N from WAL event N+1 (after all of WAL event N's runtime events), and let Last-Event-ID win over after_seq", async () => {
    const { s, t, w } = await fanTask();
    await workOne(w.token, t);
    const wal = await walOf(t, s.orch);
    const all = framesOf(wal);
    // 1 is task_created (task.created, task.accepted); the dispatch's two events come from one WAL event too.
    const dispatched = wal.find((e) => e.event_type === "worker_dispatched")!.wal_seq;
    for (const n of [1, 3, dispatched]) {
      const stream = await openStream(`${t}/events?after_seq=${n}`, s.observer);
      const expected = framesOf(wal.filter((e) => e.wal_seq > n));
      expect(plain(await stream.take(expected.length)), `after_seq=${n}`).toEqual(expected);
      await stream.cancel();
    }

    // EventSource resumes with the URL it first used plus the header: the header is the resume point.
    const resumed = await openStream(`${t}/events?after_seq=0`, s.observer, { "last-event-id": all[4]!.id });
    const rest = after(all, all[4]!.id);
    expect(plain(await resumed.take(rest.length))).toEqual(rest);
    await resumed.cancel();

    const atEnd = await openStream(`${t}/events?after_seq=${wal.length}`, s.observer);
    await atEnd.expectQuiet(200);
    await atEnd.cancel();
  });

  it("Should send the remaining events, then `end` with the native status, and close when the task turns terminal", async () => {
    const { s, t, w } = await fanTask();
    const stream = await openStream(`${t}/events`, s.observer);
    for (let i = 0; i < 4; i++) await workOne(w.token, t);
    expectOk(await call("POST", `${t}/runs/${w.run_id}/finish`, w.token, { outcome: "finished" }));
    expectOk(await call("POST", `${t}/complete`, s.orch, { reason: "all done" }));
    const wal = await walOf(t, s.orch);
    const frames = await stream.rest();
    const events = frames.slice(0, -1);
    expect(plain(events)).toEqual(framesOf(wal));
    const end = frames[frames.length - 1]!;
    expect(end.id).toBeUndefined();
    expect(end.event).toBe("end");
    expect(JSON.parse(end.data)).toEqual({ reason: "task_terminal", status: "completed", wal_seq: wal.length });
    expect(stream.raw.endsWith(`event: end\ndata: {"reason":"task_terminal","status":"completed","wal_seq":${wal.length}}\n\n`)).toBe(true);
  });

  it("Should send an already terminal task's history and `end`, and just `end` when resuming at its last id", async () => {
    const { s, t } = await fanTask();
    expectOk(await call("POST", `${t}/cancel`, s.orch, { reason: "changed plans" }));
    const wal = await walOf(t, s.orch);
    const all = framesOf(wal);
    const full = await (await openStream(`${t}/events`, s.observer)).rest();
    expect(plain(full.slice(0, -1))).toEqual(all);
    expect(full[full.length - 1]).toEqual({ event: "end", data: JSON.stringify({ reason: "task_terminal", status: "cancelled", wal_seq: wal.length }) });
    const tail = await (await openStream(`${t}/events`, s.observer, { "last-event-id": all[all.length - 1]!.id })).rest();
    expect(tail).toEqual([{ event: "end", data: JSON.stringify({ reason: "task_terminal", status: "cancelled", wal_seq: wal.length }) }]);
  });

  it("Should send `: heartbeat` comments every SSE_HEARTBEAT_MS while nothing happens", async () => {
    const { s, t } = await fanTask();
    const stream = await openStream(`${t}/events?after_seq=${(await walOf(t, s.orch)).length}`, s.observer);
    await stream.expectQuiet(900); // SSE_HEARTBEAT_MS is 250 in the test configuration
    expect(stream.heartbeats).toBeGreaterThanOrEqual(2);
    expect(stream.raw).toContain(": heartbeat\n\n");
    await stream.cancel();
  });

  it("Should give two concurrent subscribers the same sequence while workers write concurrently", async () => {
    const { s, t, w } = await fanTask();
    const w2 = await dispatch(s, t, { max_steps: 4 });
    const one = await openStream(`${t}/events`, s.observer);
    const two = await openStream(`${t}/events`, s.orch);
    const drive = async (token: string) => {
      for (let i = 0; i < 6; i++) {
        const claim = expectOk(await call("POST", `${t}/steps/claim-next`, token));
        if (claim.no_step_claimed === true) {
          await sleep(10);
          continue;
        }
        expectOk(await call("POST", `${t}/steps/${claim.step.step_id}/progress`, token, { summary: "half way" }));
        expectOk(await call("POST", `${t}/steps/${claim.step.step_id}/status`, token, { status: "completed" }));
      }
    };
    await Promise.all([drive(w.token), drive(w2.token)]);
    expectOk(await call("POST", `${t}/complete`, s.orch, {}));
    const [a, b] = await Promise.all([one.rest(), two.rest()]);
    expect(a.length).toBeGreaterThan(10);
    expect(b).toEqual(a);
    expect(plain(a.slice(0, -1))).toEqual(framesOf(await walOf(t, s.orch)));
    expectSequenceIds(a.slice(0, -1));
    expect(a[a.length - 1]!.event).toBe("end");
  });

  it("Should let an observer stream (also with ?access_token=) but not write", async () => {
    const { s, t } = await fanTask();
    const stream = await openStream(`${t}/events?access_token=${encodeURIComponent(s.observer)}`, null);
    expect((await stream.next())!.event).toBe("task.created");
    await stream.cancel();
    const write = await call("POST", `${t}/block`, s.observer, {});
    expect(write.status).toBe(403);
    expect(["permission_denied", "tool_not_available"]).toContain(write.body.error.code);
  });

  it("Should let the task's own worker stream and answer 403 to a worker of another task", async () => {
    const { s, t, tid, w } = await fanTask();
    const own = await openStream(`${t}/events`, w.token);
    expect((await own.next())!.id).toBe(String(SEQUENCE_STRIDE));
    await own.cancel();
    const other = await newTask(s, `${tid}-other`, [step("x")]);
    const stranger = await dispatch(s, other);
    expectError(await call("GET", `${t}/events`, stranger.token), 403, "permission_denied");
    expectError(await call("GET", `${t}/events`, undefined), 401, "unauthorized");
    const foreign = await newSession();
    expectError(await call("GET", `${t}/events`, foreign.observer), 403, "permission_denied");
  });

  it.each([
    ["?after_seq=abc", {}],
    ["?after_seq=-1", {}],
    ["?after_seq=1.5", {}],
    ["?after_seq=999", {}],
    ["?since=1", {}],
    ["", { "last-event-id": "abc" }],
    ["", { "last-event-id": "1.0" }],
    ["", { "last-event-id": "1.2.3" }],
    ["", { "last-event-id": "010" }],
    ["", { "last-event-id": "-3" }],
    ["", { "last-event-id": "999" }],
  ])("Should answer 400 validation_error (JSON envelope, nothing streamed) for %s %j", async (query, headers) => {
    const { s, t } = await fanTask();
    const res = await call("GET", `${t}/events${query}`, s.observer, undefined, headers as Record<string, string>);
    expectError(res, 400, "validation_error");
    expect(res.headers.get("content-type")).toContain("application/json");
  });

  it("Should answer 404 for a task that does not exist", async () => {
    const s = await newSession();
    expectError(await call("GET", `/v1/sessions/${s.sid}/tasks/nothing-here/events`, s.observer), 404, "not_found");
  });

  it("Should drop a subscriber whose client went away (cancel, or the next heartbeat write failing)", async () => {
    const { s, t, tid } = await fanTask();
    const stream = await openStream(`${t}/events`, s.observer);
    await stream.take(2);
    const stub = taskStub(s.sid, tid);
    const open = () => runInDurableObject(stub, (o: TaskGraphObject) => (o as unknown as { hub: { stats: { open: number } } }).hub.stats.open);
    expect(await open()).toBe(1);
    await stream.cancel();
    await eventually(async () => expect(await open()).toBe(0), 3_000);
    const closed = await runInDurableObject(stub, (o: TaskGraphObject) => (o as unknown as { hub: { stats: { closed: { cancelled: number; gone: number } } } }).hub.stats.closed);
    expect(closed.cancelled + closed.gone).toBe(1);
  });
});

describe("GET .../tasks/{tid}/events across a restart of the task object", () => {
  // A graceful eviction (evictDurableObject) waits for in-flight requests, and an open stream is one: it
  // times out after 30 s with "it still has active references". SSE_MAX_STREAM_MS bounds that wait in
  // production; here the object is aborted, as a crash or a deploy would.
  it("Should break the stream when the object is aborted and resume exactly where the client was", async () => {
    const { s, t, w } = await fanTask();
    const stream = await openStream(`${t}/events`, s.observer);
    const seen = await stream.take(4);
    await abortAllDurableObjects();
    // The stream errors ("ReadableStream received over RPC disconnected prematurely"), never hangs: the
    // client resumes with the last id it saw.
    const tail = await stream.rest().catch(() => []);
    const received = [...seen, ...tail];
    await workOne(w.token, t);
    const again = await openStream(`${t}/events`, s.observer, { "last-event-id": received[received.length - 1]!.id! });
    const missing = after(framesOf(await walOf(t, s.orch)), received[received.length - 1]!.id!);
    expect(plain(await again.take(missing.length))).toEqual(missing);
    await again.cancel();
  });
});

describe("GET /v1/sessions/{sid}/events", () => {
  /** The snapshot.updated events a session stream sent. */
  const data = (frames: readonly SseFrame[]) => frames.map(eventOf);

  it("Should stream created, updated and terminal changes of the session's tasks as snapshot.updated envelopes", async () => {
    const s = await newSession();
    const stream = await openStream(`/v1/sessions/${s.sid}/events`, s.observer);
    await stream.expectQuiet(100);
    const t = await newTask(s, "sess-a", [step("a")]);
    const created = eventOf((await stream.next())!);
    expect(created).toMatchObject({
      type: "snapshot.updated",
      eventId: expect.any(String),
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      sequence: 1,
      schemaVersion: "0.4.0",
      sessionId: s.sid,
      taskId: "sess-a",
      nativeStatus: expect.any(String),
      status: expect.any(String),
      payload: { change: "created", task: { task_id: "sess-a", wal_name: "sess-a", total_steps: 1 } },
    });
    const w = await dispatch(s, t);
    await workOne(w.token, t);
    expectOk(await call("POST", `${t}/complete`, s.orch, {}));
    const frames = await stream.until((f) => eventOf(f).payload.change === "terminal");
    const events = [created, ...data(frames)];
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
    expect(frames.map((f) => f.id)).toEqual(events.slice(1).map((e) => String(e.sequence)));
    expect(frames.every((f) => f.event === "snapshot.updated")).toBe(true);
    expect(events.slice(1, -1).every((e) => e.payload.change === "updated")).toBe(true);
    const terminal = events[events.length - 1];
    expect(terminal).toMatchObject({ nativeStatus: "completed", status: "completed", payload: { change: "terminal", task: { terminal: true } } });
    // It never closes on its own: heartbeats keep coming.
    await stream.expectQuiet(600);
    expect(stream.heartbeats).toBeGreaterThan(0);
    await stream.cancel();
  });

  it("Should resume by Last-Event-ID and by ?after_seq=, and reject a bad resume point with 400", async () => {
    const s = await newSession();
    const a = await newTask(s, "sess-r1", [step("a")]);
    await newTask(s, "sess-r2", [step("a")]);
    expectOk(await call("POST", `${a}/cancel`, s.orch, {}));
    const first = await openStream(`/v1/sessions/${s.sid}/events`, s.orch);
    const all = await first.take(3);
    expect(data(all).map((e) => [e.taskId, e.payload.change])).toEqual([
      ["sess-r1", "created"],
      ["sess-r2", "created"],
      ["sess-r1", "terminal"],
    ]);
    await first.cancel();
    const byHeader = await openStream(`/v1/sessions/${s.sid}/events?after_seq=0`, s.observer, { "last-event-id": "1" });
    expect(await byHeader.take(2)).toEqual(all.slice(1));
    await byHeader.expectQuiet(100);
    await newTask(s, "sess-r3", [step("a")]);
    expect(eventOf((await byHeader.next())!)).toMatchObject({ sequence: 4, taskId: "sess-r3", payload: { change: "created" } });
    await byHeader.cancel();
    const byQuery = await openStream(`/v1/sessions/${s.sid}/events?after_seq=2`, s.observer);
    expect((await byQuery.take(2)).map((f) => f.id)).toEqual(["3", "4"]);
    await byQuery.cancel();
    expectError(await call("GET", `/v1/sessions/${s.sid}/events`, s.observer, undefined, { "last-event-id": "1.1" }), 400, "validation_error");
    expectError(await call("GET", `/v1/sessions/${s.sid}/events?after_seq=99`, s.observer), 400, "validation_error");
    expectError(await call("GET", `/v1/sessions/${s.sid}/events`, (await newSession()).observer), 403, "permission_denied");
  });

  it("Should keep only the newest log rows and start an older resume at the oldest kept row", async () => {
    const s = await newSession();
    const stub = bindings.SESSIONS.get(bindings.SESSIONS.idFromName(s.sid));
    const kept = await runInDurableObject(stub, async (o: SessionObject) => {
      const sql = (o as unknown as { ctx: DurableObjectState }).ctx.storage.sql;
      // 10,005 index changes of one task, in order, 500 at a time (a batch of pushes the object writes in one turn).
      const entry = { task_id: "many", wal_name: "many", title: "Many", native_status: "running", status: "running", step_counts: {}, total_steps: 1, active_runs: 0, lost_attempts: 0, terminal: false, created_at: "2026-01-01T00:00:00.000Z", updated_at: "2026-01-01T00:00:00.000Z", next_deadline_at: null };
      for (let from = 1; from <= 10_005; from += 500) {
        await Promise.all(Array.from({ length: Math.min(500, 10_006 - from) }, (_, i) => o.upsertTask({ ...entry, wal_seq: from + i } as never)));
      }
      return sql.exec<{ n: number; lo: number; hi: number }>("SELECT COUNT(*) AS n, MIN(seq) AS lo, MAX(seq) AS hi FROM session_events").one();
    });
    expect(kept).toEqual({ n: 10_000, lo: 6, hi: 10_005 });
    const stream = await openStream(`/v1/sessions/${s.sid}/events`, s.observer, { "last-event-id": "2" });
    expect((await stream.next())!.id).toBe("6");
    await stream.cancel();
  });
});

describe("Subscribers per object (SSE_MAX_SUBSCRIBERS=8 in the test configuration)", () => {
  const MAX = 8;

  it.each(["task", "session"])("Should answer the %s stream's subscriber past the cap with 429 rate_limited and Retry-After, and take one again after one closes", async (kind) => {
    const { s, t } = await fanTask();
    const path = kind === "task" ? `${t}/events` : `/v1/sessions/${s.sid}/events`;
    // Four tokens: each holds its share (a quarter of the pool), together the whole pool.
    const tokens = [s.observer, s.orch, await mintRole(s, "observer", "watcher-3"), await mintRole(s, "observer", "watcher-4")];
    const fifth = await mintRole(s, "observer", "watcher-5");
    const streams: SseReader[] = [];
    for (let i = 0; i < MAX; i++) streams.push(await openStream(path, tokens[i % 4]!));
    const refused = await call("GET", path, fifth);
    expectError(refused, 429, "rate_limited");
    expect(refused.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
    expect(refused.body.error.details).toMatchObject({ limit: "sse_subscribers", max: MAX });
    // Those already open are untouched by the refusal.
    expect((await streams[0]!.next())).not.toBeNull();
    await streams.pop()!.cancel();
    // The object hears of the cancel asynchronously (or at the next heartbeat): then a new subscriber gets in.
    const again = await eventually(() => openStream(path, fifth));
    expectError(await call("GET", path, s.orch), 429, "rate_limited");
    await Promise.all([again, ...streams].map((x) => x.cancel()));
  });
});

describe("CORS on /v1/* (CORS_ORIGINS=https://dash.example in the test configuration)", () => {
  it("Should answer a preflight from an allowed origin, allowing Authorization, Last-Event-ID and Idempotency-Key", async () => {
    const res = await call("OPTIONS", "/v1/sessions/x/tasks/y/events", undefined, undefined, {
      origin: "https://dash.example",
      "access-control-request-method": "GET",
      "access-control-request-headers": "last-event-id, authorization",
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("https://dash.example");
    const allowed = res.headers.get("access-control-allow-headers")!.toLowerCase();
    for (const h of ["authorization", "last-event-id", "idempotency-key", "content-type"]) expect(allowed).toContain(h);
  });

  it("Should allow every method of the route catalog in a preflight, DELETE (unlink_tasks) among them", async () => {
    const res = await call("OPTIONS", "/v1/sessions/x/links/l", undefined, undefined, {
      origin: "https://dash.example",
      "access-control-request-method": "DELETE",
      "access-control-request-headers": "authorization",
    });
    expect(res.status).toBe(204);
    const allowed = res.headers.get("access-control-allow-methods")!.split(",").map((m) => m.trim());
    const catalogMethods = new Set(OPERATIONS.map((op) => op.method.toUpperCase()));
    expect(catalogMethods.has("DELETE")).toBe(true);
    for (const method of catalogMethods) expect(allowed).toContain(method);
  });

  it("Should add the CORS header to answers for an allowed origin (errors too) and none for another origin", async () => {
    const ok = await call("GET", "/v1/task-template", (await newSession()).observer, undefined, { origin: "https://dash.example" });
    expect(ok.headers.get("access-control-allow-origin")).toBe("https://dash.example");
    const unauthorized = await call("GET", "/v1/task-template", undefined, undefined, { origin: "https://dash.example" });
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers.get("access-control-allow-origin")).toBe("https://dash.example");
    const other = await call("GET", "/v1/task-template", undefined, undefined, { origin: "https://evil.example" });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
  });
});
