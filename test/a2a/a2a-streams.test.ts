/**
 * @module A2A streams read from the task's WAL (its runtime events mapped to A2A updates, so a stream and GetTask agree), driven by the official @a2a-js/sdk client: a
 * SubscribeToTask after a dropped stream starts from a Task holding everything done meanwhile; concurrent
 * subscribers see the same updates in the same order; no stream goes back in state; a stream ends exactly at its
 * terminal status. And the runtime-event → A2A-update mapper on its own, checked against GetTask's mapping at
 * every point of a real WAL.
 */
import { type StreamResponse, type Task, TaskState } from "@a2a-js/sdk";
import type { Client } from "@a2a-js/sdk/client";
import { env, runInDurableObject } from "cloudflare:test";
import { ServerCallContext } from "@a2a-js/sdk/server";
import { beforeAll, describe, expect, it } from "vitest";
import { agentCard } from "../../routes/a2a/a2a.js";
import { RuntimeA2AHandler, STREAM_GONE } from "../../routes/a2a/a2a-handler.js";
import { actorOf } from "../../durable-objects/shared/tokens.js";
import { verifyToken } from "../../durable-objects/shared/tokens.js";
import type { Env } from "../../durable-objects/shared/env.js";
import { a2aStateOf, a2aTaskOf, type TaskViewJson } from "../../routes/a2a/a2a-map.js";
import { isTerminalA2a } from "../../durable-objects/peers/a2a-status.js";
import { a2aStateRank, a2aStreamStateOf, a2aUpdatesOf } from "../../routes/a2a/a2a-stream-map.js";
import { projectEvent, replay, taskGetAnswer, taskGetPage, type WalEvent } from "../../src/core/index.js";
import { connectA2a, data, send } from "../support/a2a-clients.js";
import { call, newSession, step, type TestSession } from "../support/helpers.js";
import { BASE, eventually, expectOk, mintRole, TOKEN_SECRET, taskStub, walOf } from "../support/support.js";

let S: TestSession;
let client: Client;
let clientToken: string;

beforeAll(async () => {
  S = await newSession();
  clientToken = await mintRole(S, "a2a_client", "stream-partner");
  client = await connectA2a(clientToken);
});

const taskPath = (id: string) => `/v1/sessions/${S.sid}/tasks/${id}`;

/** A task the client submits, answered at once (SUBMITTED). */
async function submit(what = "Compile the regional report"): Promise<Task> {
  return (await client.sendMessage(send(what, {}, { returnImmediately: true }))) as Task;
}

/** The orchestrator adds steps to the task. */
async function plan(id: string, ...steps: ReturnType<typeof step>[]): Promise<void> {
  expectOk(await call("PATCH", taskPath(id), S.orch, { ops: steps.map((s) => ({ op: "add_step", step: s })) }));
}

/** A fresh worker run claims the step; its token. */
async function claim(id: string, stepId: string): Promise<string> {
  const worker = expectOk(await call("POST", `${taskPath(id)}/workers`, S.orch, {}), 201);
  expectOk(await call("POST", `${taskPath(id)}/steps/${stepId}/claim`, worker.token, {}));
  return worker.token as string;
}

/** The worker holding the step reports progress and then completes it with a result. */
async function finish(id: string, stepId: string, token: string): Promise<void> {
  expectOk(await call("POST", `${taskPath(id)}/steps/${stepId}/progress`, token, { summary: `${stepId} half done` }));
  expectOk(await call("POST", `${taskPath(id)}/steps/${stepId}/status`, token, { status: "completed", result_summary: `${stepId} done`, artifact_ids: [`r2://out/${stepId}`] }));
}

/** A SubscribeToTask whose first event (the Task) has arrived: the rest on demand, or all of it once the stream closes. */
interface Subscription {
  readonly first: Task;
  next(): Promise<StreamResponse>;
  rest(): Promise<StreamResponse[]>;
  readonly abort: AbortController;
}

async function subscribe(id: string): Promise<Subscription> {
  const abort = new AbortController();
  const it = client.resubscribeTask({ tenant: "", id }, { signal: abort.signal })[Symbol.asyncIterator]();
  const first = await it.next();
  expect(first.done).toBe(false);
  const event = first.value as StreamResponse;
  expect(event.payload?.$case).toBe("task");
  return {
    first: (event.payload as { value: Task }).value,
    abort,
    async next() {
      const n = await it.next();
      expect(n.done, "the stream closed early").toBe(false);
      return n.value as StreamResponse;
    },
    async rest() {
      const out: StreamResponse[] = [];
      for (let n = await it.next(); !n.done; n = await it.next()) out.push(n.value);
      return out;
    },
  };
}

/** An update as (state or artifact id): what the order checks compare. */
function label(e: StreamResponse): string {
  const p = e.payload;
  if (p?.$case === "task") return `task:${TaskState[p.value.status!.state]}`;
  if (p?.$case === "statusUpdate") return TaskState[p.value.status!.state]!;
  if (p?.$case === "artifactUpdate") return `artifact:${p.value.artifact!.artifactId}`;
  return `?${JSON.stringify(e)}`;
}

/** The states a stream said, in order (the first Task's and every statusUpdate's). */
function statesOf(first: Task, events: StreamResponse[]): TaskState[] {
  const out = [first.status!.state];
  for (const e of events) if (e.payload?.$case === "statusUpdate") out.push(e.payload.value.status!.state);
  return out;
}

/** Asserts that the states never go back (SUBMITTED < WORKING = INPUT_REQUIRED < terminal). */
function expectNoRegression(states: TaskState[]): void {
  for (let i = 1; i < states.length; i++) {
    expect(a2aStateRank(states[i]!), `${TaskState[states[i - 1]!]} then ${TaskState[states[i]!]} at ${i}`).toBeGreaterThanOrEqual(a2aStateRank(states[i - 1]!));
  }
}

/** Asserts that the stream's last event is its only terminal status. */
function expectEndsAtTerminal(events: StreamResponse[], terminal: TaskState): void {
  const last = events.at(-1)!;
  expect(last.payload?.$case).toBe("statusUpdate");
  expect((last.payload as { value: { status: { state: TaskState } } }).value.status.state).toBe(terminal);
  const terminals = events.filter((e) => e.payload?.$case === "statusUpdate" && isTerminalA2a(e.payload.value.status!.state));
  expect(terminals).toHaveLength(1);
}

/** The task view GET .../tasks/{tid} answers after the first `n` WAL events. */
function viewAt(wal: WalEvent[], n: number): TaskViewJson {
  const state = replay(wal.slice(0, n));
  const page = taskGetPage(state, {});
  if (!page.ok) throw new Error(page.error.message);
  return JSON.parse(JSON.stringify(taskGetAnswer(state, page.value))) as TaskViewJson;
}

/** The updates a stream opened after the first `n` WAL events sends: the mapper folded over the rest, stopping at the end. */
function updatesAfter(wal: WalEvent[], n: number): StreamResponse[] {
  const view = viewAt(wal, n);
  const mapped = a2aStreamStateOf(view, a2aTaskOf(view));
  const out: StreamResponse[] = [];
  for (const e of wal.slice(n)) {
    for (const event of projectEvent(e)) {
      out.push(...a2aUpdatesOf(mapped, event));
      if (isTerminalA2a(mapped.sent)) return out;
    }
  }
  return out;
}

/** How many event streams the task object serves now. */
async function openEventStreams(taskId: string): Promise<number> {
  return runInDurableObject(taskStub(S.sid, taskId), async (instance) => (instance as unknown as { hub: { stats: { open: number } } }).hub.stats.open);
}

/** Ends the task object's event streams as their lifetime (SSE_MAX_STREAM_MS) would; how many it ended. */
async function endEventStreams(taskId: string): Promise<number> {
  return runInDurableObject(taskStub(S.sid, taskId), async (instance) => {
    // The hub is the object's own; closing with "lifetime" is what its timer does.
    const hub = (instance as unknown as { hub: { subscribers: Set<unknown>; close(sub: unknown, reason: string): void } }).hub;
    const subs = [...hub.subscribers];
    for (const sub of subs) hub.close(sub, "lifetime");
    return subs.length;
  });
}

describe("SubscribeToTask after a dropped stream", () => {
  it("Should start the new stream with a Task holding everything done while the client was away, then the later updates to the end", async () => {
    const task = await submit();
    await plan(task.id, step("gather"), step("write", ["gather"]));
    const gatherer = await claim(task.id, "gather");
    const before = await subscribe(task.id);
    expect(before.first.status!.state).toBe(TaskState.TASK_STATE_WORKING);
    await finish(task.id, "gather", gatherer);
    // Read until the first step's artifact, then drop the stream.
    const seen: string[] = [];
    while (!seen.includes("artifact:gather")) seen.push(label(await before.next()));
    before.abort.abort();

    // While away: the second step is claimed, reported on and completed; then the orchestrator asks something.
    const writer = await claim(task.id, "write");
    await finish(task.id, "write", writer);
    expectOk(await call("POST", `${taskPath(task.id)}/actions`, S.orch, { kind: "input", prompt: "Which currency?" }), 201);

    const after = await subscribe(task.id);
    expect(after.first.status!.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(after.first.status!.message!.parts[0]!.content).toEqual({ $case: "text", value: "Which currency?" });
    expect(after.first.artifacts.map((a) => a.artifactId)).toEqual(["gather", "write"]);
    expect(after.first.artifacts[1]!.parts.map((p) => p.content)).toEqual([
      { $case: "text", value: "write done" },
      { $case: "data", value: { artifactIds: ["r2://out/write"] } },
    ]);
    expect(after.first).toEqual(await client.getTask({ tenant: "", id: task.id }));

    await client.sendMessage(send([data({ currency: "EUR" })], { taskId: task.id }));
    expectOk(await call("POST", `${taskPath(task.id)}/complete`, S.orch, { reason: "Report delivered" }));
    const later = await after.rest();
    expect(later.map(label)).toEqual(["TASK_STATE_WORKING", "artifact:result", "TASK_STATE_COMPLETED"]);
    expectNoRegression(statesOf(after.first, later));
  });
});

describe("task event streams that end before the task", () => {
  it("Should reopen the task's event stream after its last runtime event, so the client gets each update once, as the WAL says", async () => {
    const task = await submit();
    await plan(task.id, step("one"), step("two", ["one"]));
    const sub = await subscribe(task.id);
    const openedAt = (await walOf(taskPath(task.id), S.orch)).length;
    const events = sub.rest();
    await finish(task.id, "one", await claim(task.id, "one"));
    await eventually(async () => expect(await endEventStreams(task.id)).toBe(1));
    // A WAL event of two runtime events (action.required, task.waiting), then the stream ends again.
    expectOk(await call("POST", `${taskPath(task.id)}/actions`, S.orch, { kind: "input", prompt: "Which format?" }), 201);
    await eventually(async () => expect(await endEventStreams(task.id)).toBe(1));
    await client.sendMessage(send("PDF", { taskId: task.id }, { returnImmediately: true }));
    await finish(task.id, "two", await claim(task.id, "two"));
    expectOk(await call("POST", `${taskPath(task.id)}/complete`, S.orch, { reason: "Both parts done" }));
    const got = await events;
    expect(got).toEqual(updatesAfter(await walOf(taskPath(task.id), S.orch), openedAt));
    expect(got.map(label)).toEqual([
      "TASK_STATE_WORKING", "artifact:one", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_WORKING", "TASK_STATE_WORKING", "artifact:two", "artifact:result", "TASK_STATE_COMPLETED",
    ]);
  });
});

describe("a client that goes away", () => {
  it("Should stop the handler's stream and free the task's event stream when the route signals the client gone", async () => {
    const task = await submit();
    await plan(task.id, step("idle"));
    const claims = (await verifyToken(TOKEN_SECRET, clientToken))!;
    const gone = new AbortController();
    const ctx = new ServerCallContext({ requestedVersion: "1.0", state: new Map<string, unknown>([["actor", actorOf(claims)], [STREAM_GONE, gone.signal]]) });
    const handler = new RuntimeA2AHandler(env as unknown as Env, agentCard(BASE), actorOf(claims), "a2a-test-holder");
    const stream = handler.resubscribe({ tenant: "", id: task.id }, ctx);
    expect((await stream.next()).value?.payload?.$case).toBe("task");
    const pending = stream.next();
    await eventually(async () => expect(await openEventStreams(task.id)).toBe(1));
    gone.abort();
    // Nothing happens on the task: the stream ends because the client left, not because an event came.
    expect((await pending).done).toBe(true);
    await eventually(async () => expect(await openEventStreams(task.id)).toBe(0));
  });

  it("Should free the task's event stream when the official client aborts its SubscribeToTask, with the task idle", async () => {
    const task = await submit();
    await plan(task.id, step("idle"));
    const sub = await subscribe(task.id);
    await eventually(async () => expect(await openEventStreams(task.id)).toBe(1));
    // The route cancels the SSE body; it must also abort the handler's STREAM_GONE signal.
    sub.abort.abort();
    await eventually(async () => expect(await openEventStreams(task.id)).toBe(0));
  });
});

describe("concurrent subscribers", () => {
  // Ten is more than one task event stream serves in this pool (SSE_MAX_SUBSCRIBERS 8): the last ones read the WAL.
  it.each([2, 10])("Should give %i SubscribeToTask streams on one task the same updates in the same order while workers run it", async (n) => {
    const task = await submit();
    await plan(task.id, step("north"), step("south"), step("merge", ["north", "south"]));
    const subs = await Promise.all(Array.from({ length: n }, () => subscribe(task.id)));
    const all = Promise.all(subs.map((s) => s.rest()));
    // Two workers at once, then a third on the step that waited for both.
    await Promise.all(["north", "south"].map(async (s) => finish(task.id, s, await claim(task.id, s))));
    await finish(task.id, "merge", await claim(task.id, "merge"));
    expectOk(await call("POST", `${taskPath(task.id)}/complete`, S.orch, { reason: "Merged" }));
    const streams = await all;

    for (const s of subs) expect(s.first).toEqual(subs[0]!.first);
    const labels = streams[0]!.map(label);
    for (const events of streams) expect(events.map(label)).toEqual(labels);
    for (const events of streams) expect(events).toEqual(streams[0]);
    expect(labels.filter((l) => l.startsWith("artifact:")).sort()).toEqual(["artifact:merge", "artifact:north", "artifact:result", "artifact:south"]);
    expect(labels.indexOf("artifact:merge")).toBeGreaterThan(Math.max(labels.indexOf("artifact:north"), labels.indexOf("artifact:south")));
    expectEndsAtTerminal(streams[0]!, TaskState.TASK_STATE_COMPLETED);
  });
});

/** A task taken through a failed step reopened, a block and reopen of the task once its steps are done, and a question. */
async function winding(id: string): Promise<void> {
  await plan(id, step("draft"), step("review", ["draft"]));
  await finish(id, "draft", await claim(id, "draft"));
  const reviewer = await claim(id, "review");
  expectOk(await call("POST", `${taskPath(id)}/steps/review/status`, reviewer, { status: "failed", reason: "sources missing", result_summary: "half a review" }));
  expectOk(await call("PATCH", taskPath(id), S.orch, { ops: [{ op: "reopen_step", step_id: "review", reason: "sources found" }] }));
  await finish(id, "review", await claim(id, "review"));
  // Every step done: reopened, the task is pending again, with nothing left to run.
  expectOk(await call("POST", `${taskPath(id)}/block`, S.orch, { reason: "waiting for the legal check" }));
  expectOk(await call("POST", `${taskPath(id)}/reopen`, S.orch, { reason: "legal check passed" }));
  expect(expectOk(await call("GET", taskPath(id), S.orch)).task.status).toBe("pending");
  expectOk(await call("POST", `${taskPath(id)}/actions`, S.orch, { kind: "approval", prompt: "Publish now?" }), 201);
  await eventually(async () => expect((await client.getTask({ tenant: "", id })).status!.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED));
  await client.sendMessage(send("approve", { taskId: id }, { returnImmediately: true }));
  expectOk(await call("POST", `${taskPath(id)}/complete`, S.orch, { reason: "Published" }));
}

describe("stream order", () => {
  it("Should never go back in state, through a failed step reopened, a task pending again after its work, INPUT_REQUIRED and back", async () => {
    const task = await submit();
    const sub = await subscribe(task.id);
    expect(sub.first.status!.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    const events = sub.rest();
    await winding(task.id);
    const states = statesOf(sub.first, await events);
    expectNoRegression(states);
    const names = states.map((s) => TaskState[s]);
    expect(names).toContain("TASK_STATE_INPUT_REQUIRED");
    expect(names.slice(names.indexOf("TASK_STATE_INPUT_REQUIRED"))).toContain("TASK_STATE_WORKING");
    expect((await events).map(label).filter((l) => l.startsWith("artifact:"))).toEqual(["artifact:draft", "artifact:review", "artifact:result"]);
  });

  it("Should close the stream right after the terminal status, with that status as its last event", async () => {
    const task = await submit();
    await plan(task.id, step("only"));
    const sub = await subscribe(task.id);
    const events = sub.rest();
    await finish(task.id, "only", await claim(task.id, "only"));
    expectOk(await call("POST", `${taskPath(task.id)}/complete`, S.orch, { reason: "Done" }));
    expectEndsAtTerminal(await events, TaskState.TASK_STATE_COMPLETED);
    expect((await events).map(label).slice(-2)).toEqual(["artifact:result", "TASK_STATE_COMPLETED"]);
  });

  it("Should end a cancelled task's stream with CANCELED last, and SendStreamingMessage's at INPUT_REQUIRED", async () => {
    const task = await submit();
    await plan(task.id, step("only"));
    const sub = await subscribe(task.id);
    const events = sub.rest();
    await client.cancelTask({ tenant: "", id: task.id, metadata: undefined });
    expectEndsAtTerminal(await events, TaskState.TASK_STATE_CANCELED);

    const streamed: StreamResponse[] = [];
    const stream = client.sendMessageStream(send("Ask me first"));
    for await (const e of stream) {
      streamed.push(e);
      if (streamed.length === 1) {
        const id = (e.payload as { value: Task }).value.id;
        await plan(id, step("a"));
        expectOk(await call("POST", `${taskPath(id)}/actions`, S.orch, { kind: "input", prompt: "Which region?" }), 201);
      }
    }
    expect(streamed.map(label).at(-1)).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(streamed.map(label).filter((l) => l === "TASK_STATE_INPUT_REQUIRED")).toHaveLength(1);
  });
});

describe("the runtime event mapper", () => {
  const textOfStatus = (t: Task | { status?: Task["status"] }) => JSON.stringify(t.status?.message?.parts ?? []);

  it("Should, from a snapshot at any point of a real WAL, say after each later event the state, status text and artifacts GetTask says then", async () => {
    const task = await submit();
    await winding(task.id);
    const wal = await walOf(taskPath(task.id), S.orch);
    expect(wal.length).toBeGreaterThan(20);
    for (let from = 1; from < wal.length; from++) {
      const snapshot = a2aTaskOf(viewAt(wal, from));
      const mapped = a2aStreamStateOf(viewAt(wal, from), snapshot);
      let said: Pick<Task, "status"> = snapshot;
      let reached = snapshot.status!.state;
      const artifacts = new Map(snapshot.artifacts.map((a) => [a.artifactId, a]));
      for (let at = from + 1; at <= wal.length; at++) {
        for (const event of projectEvent(wal[at - 1]!)) {
          for (const u of a2aUpdatesOf(mapped, event)) {
            if (u.payload?.$case === "artifactUpdate") artifacts.set(u.payload.value.artifact!.artifactId, u.payload.value.artifact!);
            // Progress reports are news between changes, not the status GetTask keeps.
            if (u.payload?.$case === "statusUpdate" && !u.payload.value.status!.message?.messageId.includes("-progress-")) said = u.payload.value;
          }
        }
        const view = viewAt(wal, at);
        const truth = a2aTaskOf(view);
        const where = `snapshot after ${from}, then through ${at} (${wal[at - 1]!.event_type})`;
        // The stream never says SUBMITTED again once it said more: GetTask's pending-again task is WORKING to it.
        const expected = a2aStateOf(view) === TaskState.TASK_STATE_SUBMITTED && a2aStateRank(reached) > 0 ? TaskState.TASK_STATE_WORKING : a2aStateOf(view);
        expect(TaskState[said.status!.state], where).toBe(TaskState[expected]);
        expect(textOfStatus(said), where).toBe(textOfStatus(truth));
        reached = said.status!.state;
        // Every artifact GetTask lists has reached the stream as it is now.
        for (const a of truth.artifacts) expect(artifacts.get(a.artifactId), `${where}: ${a.artifactId}`).toEqual(a);
      }
    }
  });

  it("Should learn a step the snapshot did not list from its events, its title from its claim (a very large task's view is a page)", async () => {
    const task = await submit();
    await plan(task.id, step("late"));
    const planned = (await walOf(taskPath(task.id), S.orch)).length;
    await finish(task.id, "late", await claim(task.id, "late"));
    const wal = await walOf(taskPath(task.id), S.orch);
    const paged = { ...viewAt(wal, planned), steps: [] };
    const mapped = a2aStreamStateOf(paged, a2aTaskOf(paged));
    const updates = wal.slice(planned).flatMap((e) => projectEvent(e).flatMap((event) => a2aUpdatesOf(mapped, event)));
    const artifacts = updates.flatMap((u) => (u.payload?.$case === "artifactUpdate" ? [u.payload.value.artifact] : []));
    expect(artifacts).toEqual(a2aTaskOf(viewAt(wal, wal.length)).artifacts);
    expect(artifacts[0]!.name).toBe("Step late");
  });

  it("Should say a task progress report's summary as a WORKING status update, and nothing for a heartbeat of the same state", async () => {
    const task = await submit();
    await plan(task.id, step("only"));
    await claim(task.id, "only");
    const wal = await walOf(taskPath(task.id), S.orch);
    const view = viewAt(wal, wal.length);
    const mapped = a2aStreamStateOf(view, a2aTaskOf(view));
    const base = { timestamp: "2026-01-01T00:00:00.000Z", payload: {} };
    expect(a2aUpdatesOf(mapped, { ...base, type: "task.progress", sequence: 9990, taskProgress: { summary: "a third done" } }).map((u) => [label(u), JSON.stringify((u.payload as any).value.status.message.parts)])).toEqual([
      ["TASK_STATE_WORKING", JSON.stringify([{ content: { $case: "text", value: "a third done" }, metadata: undefined, filename: "", mediaType: "text/plain" }])],
    ]);
    expect(a2aUpdatesOf(mapped, { ...base, type: "task.attempt.started", sequence: 10000, stepId: "only" })).toEqual([]);
  });
});
