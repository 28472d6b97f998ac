/**
 * @module Free-form values at the JSON bounds (task and session `metadata`, a run's `result`): a value at the
 * bounds is served back unchanged by every read, also after a restart; one level deeper or one byte bigger is
 * `400 validation_error` with nothing written, on the single route, in a batch and on the command socket; and
 * a document nested past MAX_DOCUMENT_DEPTH is refused before it is parsed.
 */
import { evictDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { MAX_DOCUMENT_DEPTH, MAX_JSON_BYTES, MAX_JSON_DEPTH, utf8Length } from "../../src/core/index.js";
import { ADMIN, call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { openSocket } from "../support/test-socket.js";
import { eventOf, openStream } from "../support/sse.js";
import { bindings, expectError, expectOk, taskStub, uniqueId, walOf, walText } from "../support/support.js";

/** JSON text of `levels` nested objects around `leaf`, built without recursion. */
const nestedText = (levels: number, leaf: string) => '{"k":'.repeat(levels) + leaf + "}".repeat(levels);

/** A JSON object `depth` levels deep whose compact JSON text is exactly `bytes` UTF-8 bytes (multi-byte characters included). */
function valueOf(depth: number, bytes: number): Record<string, unknown> {
  const skeleton = utf8Length(nestedText(depth, '"é€😀"'));
  const text = nestedText(depth, JSON.stringify(`é€😀${"x".repeat(bytes - skeleton)}`));
  expect(new TextEncoder().encode(text).length).toBe(bytes);
  return JSON.parse(text);
}

/** The largest value accepted: MAX_JSON_DEPTH levels and MAX_JSON_BYTES bytes. */
const AT_BOUNDS = valueOf(MAX_JSON_DEPTH, MAX_JSON_BYTES);
/** Values just past one bound each. */
const PAST = { "one level deeper": () => valueOf(MAX_JSON_DEPTH + 1, 1_000), "one byte bigger": () => valueOf(MAX_JSON_DEPTH, MAX_JSON_BYTES + 1) };

let S: TestSession;
beforeAll(async () => {
  S = await newSession();
});

/** The task's last wal_seq, as the WAL export reports it. */
async function lastSeq(taskPath: string): Promise<number> {
  const res = await walText(taskPath, S.orch, "?limit=1");
  expect(res.status).toBe(200);
  return Number(res.headers.get("x-last-wal-seq"));
}

/** Everything a reader gets of a task: the DAG view and the WAL export. */
async function readsOf(taskPath: string) {
  return { view: expectOk(await call("GET", taskPath, S.orch)), wal: await walOf(taskPath, S.orch) };
}

/** Cancels the task so its event stream ends, and returns every runtime event the stream sends. */
async function streamToEnd(taskPath: string): Promise<any[]> {
  expectOk(await call("POST", `${taskPath}/cancel`, S.orch, {}));
  const frames = await (await openStream(`${taskPath}/events`, S.orch)).rest();
  expect(frames.at(-1)!.event).toBe("end");
  return frames.slice(0, -1).map(eventOf);
}

type Entry = "route" | "batch" | "socket";

/** Sends one write of a worker to a task through the single route, a batch, or the command socket; returns its status and body. */
async function write(entry: Entry, taskPath: string, token: string, path: string, body: unknown): Promise<{ status: number; body: any }> {
  if (entry === "route") return call("POST", `${taskPath}${path}`, token, body);
  const command = { token, method: "POST", path: `${taskPath}${path}`, body };
  if (entry === "batch") {
    const res = expectOk(await call("POST", `${taskPath}/batch`, token, { commands: [command] }));
    return res.results[0];
  }
  const socket = await openSocket(taskPath, token);
  const answer = await socket.ask({ id: 1, commands: [command] });
  socket.ws.close();
  return answer.results[0];
}

describe("a free-form value at the bounds", () => {
  it(`Should serve task metadata of ${MAX_JSON_DEPTH} levels and ${MAX_JSON_BYTES} bytes unchanged from GET, the WAL, the event stream and after a restart`, async () => {
    const id = uniqueId("meta");
    const t = await newTask(S, id, [step("a")], { metadata: AT_BOUNDS });
    const { view, wal } = await readsOf(t);
    expect(JSON.stringify(view.task.metadata)).toBe(JSON.stringify(AT_BOUNDS));
    expect((wal[0]!.payload as any).task.metadata).toEqual(AT_BOUNDS);
    const events = await streamToEnd(t);
    expect(events.map((e) => e.type)).toContain("task.created");
    const before = await readsOf(t);
    await evictDurableObject(taskStub(S.sid, id));
    expect(await readsOf(t)).toEqual(before);
    expect(JSON.stringify((await readsOf(t)).view.task.metadata)).toBe(JSON.stringify(AT_BOUNDS));
  });

  it.each<Entry>(["route", "batch", "socket"])(
    `Should serve a run result of ${MAX_JSON_DEPTH} levels and ${MAX_JSON_BYTES} bytes written through the %s unchanged from GET, the WAL, the event stream and after a restart`,
    async (entry) => {
      const id = uniqueId("result");
      const t = await newTask(S, id, [step("a")]);
      const w = await dispatch(S, t);
      const answer = await write(entry, t, w.token, `/runs/${w.run_id}/finish`, { outcome: "finished", result: AT_BOUNDS });
      expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBe(200);
      const { view, wal } = await readsOf(t);
      expect(JSON.stringify(view.runs.find((r: any) => r.run_id === w.run_id).result)).toBe(JSON.stringify(AT_BOUNDS));
      expect((wal.find((e) => e.event_type === "worker_run_ended")!.payload as any).result).toEqual(AT_BOUNDS);
      const events = await streamToEnd(t);
      expect(events.find((e) => e.type === "subagent.completed").payload.result).toEqual(AT_BOUNDS);
      const before = await readsOf(t);
      await evictDurableObject(taskStub(S.sid, id));
      expect(await readsOf(t)).toEqual(before);
    },
  );

  it(`Should keep a session whose metadata is ${MAX_JSON_DEPTH} levels and ${MAX_JSON_BYTES} bytes readable, streamable and replayable, also after a restart`, async () => {
    // Session metadata is stored with the session record; what reads it back is a retried create.
    const key = `session-${uniqueId()}`;
    const body = { metadata: AT_BOUNDS };
    const created = await call("POST", "/v1/sessions", ADMIN, body, { "idempotency-key": key });
    const session = expectOk(created, 201);
    const sid: string = session.session_id;
    const orch: string = session.orchestrator.token;
    expectOk(await call("GET", `/v1/sessions/${sid}`, orch));
    await newTask({ sid, orch, observer: session.observer.token }, "in-session", [step("a")]);
    const stream = await openStream(`/v1/sessions/${sid}/events`, orch);
    expect((await stream.take(1))[0]!.event).toBe("snapshot.updated");
    await stream.cancel();
    await evictDurableObject(bindings.SESSIONS.get(bindings.SESSIONS.idFromName(sid)));
    expect(expectOk(await call("POST", "/v1/sessions", ADMIN, body, { "idempotency-key": key }), 201)).toEqual(session);
    expect(expectOk(await call("GET", `/v1/sessions/${sid}/tasks`, orch)).total).toBe(1);
  });
});

describe("a free-form value past the bounds", () => {
  it.each(Object.keys(PAST) as (keyof typeof PAST)[])("Should refuse task metadata %s with 400 validation_error and create no task", async (past) => {
    const id = uniqueId("meta-past");
    const listed = expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks?include_terminal=true`, S.orch)).total;
    const res = await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, { task_id: id, wal_name: id, title: "T", steps: [step("a")], metadata: PAST[past]() });
    expectError(res, 400, "validation_error");
    expect(res.body.error.details.issues.map((i: any) => i.path)).toEqual(["metadata"]);
    expectError(await call("GET", `/v1/sessions/${S.sid}/tasks/${id}`, S.orch), 404, "not_found");
    expect(expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks?include_terminal=true`, S.orch)).total).toBe(listed);
  });

  it.each(Object.keys(PAST) as (keyof typeof PAST)[])("Should refuse session metadata %s with 400 validation_error and create no session", async (past) => {
    const sid = uniqueId("sess-past");
    expectError(await call("POST", "/v1/sessions", ADMIN, { session_id: sid, metadata: PAST[past]() }), 400, "validation_error");
    expect(await bindings.SESSIONS.get(bindings.SESSIONS.idFromName(sid)).describe()).toBeNull();
  });

  it.each(
    (["route", "batch", "socket"] as Entry[]).flatMap((entry) => (Object.keys(PAST) as (keyof typeof PAST)[]).map((past) => ({ entry, past }))),
  )("Should refuse a run result $past through the $entry with 400 validation_error and write nothing", async ({ entry, past }) => {
    const t = await newTask(S, uniqueId("result-past"), [step("a")]);
    const w = await dispatch(S, t);
    const seq = await lastSeq(t);
    const answer = await write(entry, t, w.token, `/runs/${w.run_id}/finish`, { outcome: "finished", result: PAST[past]() });
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe("validation_error");
    expect(answer.body.error.details.issues.map((i: any) => i.path)).toEqual(["result"]);
    expect(await lastSeq(t)).toBe(seq);
    expect(expectOk(await call("GET", t, S.orch)).runs.find((r: any) => r.run_id === w.run_id).status).toBe("active");
  });
});

describe("a document nested past MAX_DOCUMENT_DEPTH", () => {
  // 3,000 levels used to be written and then make every read of the task fail; 100,000 used to fail the
  // commit itself. workerd's stack breaks at about 2,550 levels (structured clone).
  it.each([MAX_DOCUMENT_DEPTH + 1, 3_000, 100_000])("Should refuse a body %i levels deep with 400 validation_error on the single route, in a batch and on the socket, writing nothing", async (levels) => {
    const t = await newTask(S, uniqueId("doc-deep"), [step("a")]);
    const w = await dispatch(S, t);
    const seq = await lastSeq(t);
    const finish = `${t}/runs/${w.run_id}/finish`;
    // The value alone makes the document too deep wherever it sits.
    const deep = nestedText(levels, "1");
    expectError(await call("POST", finish, w.token, `{"outcome":"finished","result":${deep}}`), 400, "validation_error");
    expectError(await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, `{"task_id":"never","wal_name":"never","title":"T","steps":[],"metadata":${deep}}`), 400, "validation_error");
    const command = `{"token":"${w.token}","method":"POST","path":"${finish}","body":{"outcome":"finished","result":${deep}}}`;
    expectError(await call("POST", `${t}/batch`, w.token, `{"commands":[${command}]}`), 400, "validation_error");
    const socket = await openSocket(t, w.token);
    expect(await socket.ask(`{"id":9,"commands":[${command}]}`)).toMatchObject({ id: null, status: 400, error: { code: "validation_error" } });
    // The socket is still usable after the refused frame.
    expect(await socket.ask({ id: 10, commands: [{ token: w.token, method: "POST", path: `${t}/steps/a/claim` }] })).toMatchObject({ id: 10, results: [{ status: 200 }] });
    socket.ws.close();
    expect(await lastSeq(t)).toBe(seq + 1);
    expect(expectOk(await call("GET", t, S.orch)).steps[0].status).toBe("claimed");
  });
});
