/**
 * The SDK's lifecycle calls against the real service through SELF.fetch: `ctx.ask` in a worker handler answered
 * by an approver, the long-poll wait through dropped requests, pause and resume, and the approver's inbox
 * (retry policies: client-lifecycle-retry.test.ts).
 */
import { SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { type Action, type FetchLike, orchestrate, RuntimeClient, type RuntimeClientOptions, type TaskRef } from "../../src/client/index.js";
import { ADMIN, step } from "../support/helpers.js";
import { BASE, eventually, rejection, uniqueId } from "../support/support.js";

const selfFetch: FetchLike = SELF.fetch.bind(SELF);
const FAST_RETRY = { baseDelayMs: 1, maxDelayMs: 5 };

function client(token: string, extra: Partial<RuntimeClientOptions> = {}): RuntimeClient {
  return new RuntimeClient({ baseUrl: BASE, token, fetch: selfFetch, retry: FAST_RETRY, ...extra });
}

/** A session with its orchestrator and an approver the orchestrator minted. */
interface Session {
  readonly sid: string;
  readonly orch: RuntimeClient;
  readonly approver: RuntimeClient;
}

async function session(): Promise<Session> {
  const admin = client(ADMIN);
  const created = await admin.createSession();
  const orch = admin.withToken(created.orchestrator.token);
  const minted = await orch.mintApproverToken(created.session_id, { agent_id: "reviewer" });
  expect(minted).toMatchObject({ role: "approver", agent_id: "reviewer", token: expect.any(String) });
  return { sid: created.session_id, orch, approver: admin.withToken(minted.token) };
}

async function newTask(s: Session, steps: ReturnType<typeof step>[], extra: Record<string, unknown> = {}): Promise<{ path: string; id: string }> {
  const id = uniqueId("l");
  await s.orch.createTask(s.sid, { task_id: id, wal_name: id, title: `Task ${id}`, steps, ...extra });
  return { path: `/v1/sessions/${s.sid}/tasks/${id}`, id };
}

/** The first open action of the task, once there is one (the worker opens it concurrently). */
async function openActionOf(s: Session, task: TaskRef): Promise<Action> {
  return eventually(async () => {
    const page = await s.approver.listActions(task, { status: "open" });
    expect(page.actions.length).toBeGreaterThan(0);
    return page.actions[0]!;
  }, 10_000);
}

/** A fetch that throws a network error instead of sending the first `times` requests `match` selects. */
function failing(match: (method: string, url: URL, body: string) => boolean, times: number): { fetch: FetchLike; failed: () => number; seen: () => number } {
  let failed = 0;
  let seen = 0;
  const fetch: FetchLike = async (input, init) => {
    const url = new URL(input);
    if (match(init?.method ?? "GET", url, typeof init?.body === "string" ? init.body : "")) {
      seen += 1;
      if (failed < times) {
        failed += 1;
        throw new TypeError("Network connection lost.");
      }
    }
    return selfFetch(input, init);
  };
  return { fetch, failed: () => failed, seen: () => seen };
}

/** A fetch that sends the first `times` requests `match` selects but throws their answers away (dropped responses). */
function droppingAnswers(match: (method: string, body: string) => boolean, times: number): FetchLike {
  let dropped = 0;
  return async (input, init) => {
    const res = await selfFetch(input, init);
    if (dropped < times && match(init?.method ?? "GET", typeof init?.body === "string" ? init.body : "")) {
      dropped += 1;
      await res.body?.cancel();
      throw new TypeError("Network connection lost.");
    }
    return res;
  };
}

let S: Session;
beforeAll(async () => {
  S = await session();
});

describe("ctx.ask: a worker handler asks a person", () => {
  it("Should open one approval on the held step and resolve with the approver's decision and comment", async () => {
    const t = await newTask(S, [step("deploy")]);
    // The answers to the request that opens the action are lost four times, more than one call's three tries:
    // ask sends it again, and none of the five sends opens a second action.
    const orch = client(S.orch.token!, { fetch: droppingAnswers((m, body) => m === "POST" && body.includes("Deploy?"), 4), retry: { ...FAST_RETRY, attempts: 3 } });
    const worker = await orch.dispatchWorker(t.path, { agent_id: "deployer" });
    const asked: Action[] = [];
    const running = worker.run(async (_step, ctx) => {
      const answer = await ctx.ask({ kind: "approval", prompt: "Deploy?" });
      asked.push(answer);
      return { result_summary: `deploy ${answer.decision}` };
    });

    const open = await openActionOf(S, t.path);
    expect(open).toMatchObject({ kind: "approval", prompt: "Deploy?", status: "open", step_id: "deploy", run_id: worker.runId, decision: null });
    const responded = await S.approver.respondAction(t.path, open.action_id, { decision: "approved", comment: "ship it" });
    expect(responded).toMatchObject({ action_id: open.action_id, status: "resolved", action: { decision: "approved" } });

    const report = await running;
    expect(report.completed).toEqual(["deploy"]);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ action_id: open.action_id, status: "resolved", decision: "approved", comment: "ship it", resolved_by: { agent_id: "reviewer", role: "approver" } });
    const all = await S.approver.listActions(t.path);
    expect(all).toMatchObject({ total: 1, next_offset: null });
    const view = await S.orch.getTask(t.path);
    expect(view.steps[0]).toMatchObject({ status: "completed", result_summary: "deploy approved" });
  });

  it("Should hand the handler a rejection, with the input of an input action", async () => {
    const t = await newTask(S, [step("a"), step("b")]);
    const worker = await S.orch.dispatchWorker(t.path, { max_steps: 2 });
    const running = worker.run(async (s, ctx) => {
      const answer = await ctx.ask(s.step_id === "a" ? { kind: "approval", prompt: "Go on?" } : { kind: "input", prompt: "Which region?", input_schema: { type: "object" } });
      if (answer.decision === "rejected") throw new Error("the reviewer said no");
      return { result_summary: JSON.stringify(answer.input) };
    });
    const first = await openActionOf(S, t.path);
    await S.approver.respondAction(t.path, first.action_id, { decision: "rejected" });
    const second = await eventually(async () => {
      const action = await openActionOf(S, t.path);
      expect(action.action_id).not.toBe(first.action_id);
      return action;
    }, 10_000);
    await S.orch.respondAction(t.path, second.action_id, { decision: "submitted", input: { region: "eu" } });
    const report = await running;
    expect(report).toMatchObject({ failed: ["a"], completed: ["b"] });
    const view = await S.orch.getTask(t.path);
    expect(view.steps.map((s) => [s.step_id, s.status, s.status === "failed" ? s.status_reason : s.result_summary])).toEqual([
      ["a", "failed", "the reviewer said no"],
      ["b", "completed", '{"region":"eu"}'],
    ]);
  });
});

describe("waitForAction: the long-poll wait", () => {
  it("Should answer getAction at once with the open action, and 404 not_found for an unknown one", async () => {
    const t = await newTask(S, [step("a")]);
    const opened = await S.orch.requestTaskAction(t.path, { kind: "approval", prompt: "Approve the plan?", timeout_ms: 60_000 });
    expect(opened).toMatchObject({ status: "open", expires_at: expect.any(String), action: { step_id: null, kind: "approval" } });
    expect(await S.approver.getAction(t.path, opened.action_id)).toMatchObject({ action_id: opened.action_id, status: "open" });
    expect(await rejection(S.approver.getAction(t.path, "act_unknown"))).toMatchObject({ code: "not_found", status: 404 });
  });

  it("Should keep waiting on the same action after dropped polls, more of them than one call's retries", async () => {
    const t = await newTask(S, [step("a")]);
    const opened = await S.orch.requestTaskAction(t.path, { kind: "approval", prompt: "Approve the plan?" });
    // Four polls in a row fail: the transport's three tries of one poll, then one more of the next poll.
    const net = failing((m, url) => m === "GET" && url.pathname.endsWith(`/actions/${opened.action_id}`), 4);
    const watcher = client(S.orch.token!, { fetch: net.fetch, retry: { ...FAST_RETRY, attempts: 3 } });
    const waiting = watcher.waitForAction(t.path, opened.action_id, { pollMs: 200 });
    await S.approver.respondAction(t.path, opened.action_id, { decision: "approved" });
    const resolved = await waiting;
    expect(resolved).toMatchObject({ action_id: opened.action_id, status: "resolved", decision: "approved" });
    expect(net.failed()).toBe(4);
    expect(net.seen()).toBeGreaterThan(4);
  });

  it("Should give up when every poll fails, with the retryable network error", async () => {
    const t = await newTask(S, [step("a")]);
    const opened = await S.orch.requestTaskAction(t.path, { kind: "approval", prompt: "Approve?" });
    const net = failing((m, url) => m === "GET" && url.pathname.includes("/actions/"), Number.MAX_SAFE_INTEGER);
    const watcher = client(S.orch.token!, { fetch: net.fetch, retry: { ...FAST_RETRY, attempts: 2 } });
    expect(await rejection(watcher.waitForAction(t.path, opened.action_id))).toMatchObject({ code: "network_error", retryable: true });
    // Two polls, two tries each.
    expect(net.failed()).toBe(4);
  });

  it("Should refuse a second answer with 409 action_resolved", async () => {
    const t = await newTask(S, [step("a")]);
    const opened = await S.orch.requestTaskAction(t.path, { kind: "approval", prompt: "Approve?" });
    await S.approver.respondAction(t.path, opened.action_id, { decision: "rejected" });
    expect(await rejection(S.approver.respondAction(t.path, opened.action_id, { decision: "approved" }))).toMatchObject({ code: "action_resolved", status: 409 });
    expect(await S.approver.getAction(t.path, opened.action_id, { waitMs: 1_000 })).toMatchObject({ decision: "rejected" });
  });
});

describe("pauseTask / resumeTask", () => {
  it("Should refuse claims while paused and let the run claim again once resumed", async () => {
    const t = await newTask(S, [step("a")]);
    const worker = await S.orch.dispatchWorker(t.path);
    expect((await S.orch.pauseTask(t.path, { reason: "hold on" })).task.status).toBe("paused");
    expect(await rejection(worker.claimNext())).toMatchObject({ code: "task_not_dispatchable", status: 409 });
    expect(await rejection(S.orch.dispatchWorker(t.path))).toMatchObject({ code: "task_not_dispatchable", status: 409 });
    expect((await S.orch.resumeTask(t.path, { reason: "go" })).task.status).not.toBe("paused");
    expect(await worker.claimNext()).toMatchObject({ step: { step_id: "a" } });
  });

  it("Should let orchestrate wait out a pause, dispatching nobody until the task is resumed", async () => {
    const t = await newTask(S, [step("a")]);
    await S.orch.pauseTask(t.path);
    let reads = 0;
    let dispatches = 0;
    const counting: FetchLike = (input, init) => {
      const path = new URL(input).pathname;
      if ((init?.method ?? "GET") === "GET" && path === t.path) reads += 1;
      // A dispatch goes alone or inside a group-committed batch.
      if (path === `${t.path}/workers` || (typeof init?.body === "string" && init.body.includes(`${t.path}/workers`))) dispatches += 1;
      return selfFetch(input, init);
    };
    const done = orchestrate(client(S.orch.token!, { fetch: counting }), t.path, { handler: () => ({ result_summary: "done" }), pollMs: 20 });
    // Several reads of the paused task: orchestrate saw it paused and kept waiting, without dispatching.
    await eventually(async () => expect(reads).toBeGreaterThan(3), 10_000);
    expect(dispatches).toBe(0);
    await S.orch.resumeTask(t.path);
    const result = await done;
    expect(result.status).toBe("completed");
    expect(dispatches).toBe(1);
  });
});

describe("an approver client", () => {
  it("Should read the session inbox, newest first with task titles, and nothing but open actions", async () => {
    const s = await session();
    const first = await newTask(s, [step("a")]);
    const second = await newTask(s, [step("a")]);
    const older = await s.orch.requestTaskAction(first.path, { kind: "approval", prompt: "First?" });
    const newer = await s.orch.requestTaskAction(second.path, { kind: "input", prompt: "Second?" });
    const inbox = await eventually(async () => {
      const page = await s.approver.sessionActions(s.sid, { status: "open" });
      expect(page.total).toBe(2);
      return page;
    }, 10_000);
    expect(inbox.actions.map((a) => [a.action_id, a.task_title])).toEqual([
      [newer.action_id, `Task ${second.id}`],
      [older.action_id, `Task ${first.id}`],
    ]);
    expect(inbox).toMatchObject({ offset: 0, next_offset: null });
    const onePage = await s.approver.sessionActions(s.sid, { limit: 1 });
    expect(onePage).toMatchObject({ limit: 1, next_offset: 1, actions: [{ action_id: newer.action_id }] });
    expect(await rejection(s.approver.sessionActions(s.sid, { status: "resolved" }))).toMatchObject({ code: "validation_error", status: 400 });

    await s.approver.respondAction(first.path, older.action_id, { decision: "approved" });
    await eventually(async () => {
      const page = await s.approver.sessionActions(s.sid);
      expect(page.actions.map((a) => a.action_id)).toEqual([newer.action_id]);
    }, 10_000);
  });

  it("Should read the session and its tasks, and be refused everything else with tool_not_available", async () => {
    const s = await session();
    const t = await newTask(s, [step("a")]);
    expect((await s.approver.getSession(s.sid)).session_id).toBe(s.sid);
    expect((await s.approver.getTask(t.path)).steps).toHaveLength(1);
    expect(await rejection(s.approver.pauseTask(t.path))).toMatchObject({ code: "tool_not_available", status: 403 });
    expect(await rejection(s.approver.requestTaskAction(t.path, { kind: "approval", prompt: "Mine?" }))).toMatchObject({ code: "tool_not_available", status: 403 });
    expect(await rejection(s.approver.createTask(s.sid, { task_id: "x", wal_name: "x", title: "x", steps: [] }))).toMatchObject({ code: "tool_not_available", status: 403 });
  });
});
