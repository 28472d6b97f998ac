/**
 * The typed client SDK (src/client) against the real service through SELF.fetch: every operation, typed errors,
 * idempotent retries after a lost answer, group commit, the worker loop and the orchestrator helper; and the
 * SSE subscription's parser and reconnection against scripted streams.
 */
import { SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { OPERATIONS } from "../../routes/http/catalog.js";
import { projectWal, type WalEvent } from "../../src/core/index.js";
import {
  type FetchLike,
  isAfterId,
  newIdempotencyKey,
  orchestrate,
  RuntimeApiError,
  RuntimeClient,
  type RuntimeClientOptions,
  type RuntimeEvent,
  type SseFrame,
  SseParser,
} from "../../src/client/index.js";
import { ADMIN, step } from "../support/helpers.js";
import { BASE, rejection, uniqueId } from "../support/support.js";

// ---- harness ----------------------------------------------------------------------------------------

const selfFetch: FetchLike = SELF.fetch.bind(SELF);

/** One request the fetch wrapper saw. */
interface Seen {
  readonly method: string;
  readonly path: string;
  readonly headers: Headers;
  readonly body: any;
}

/** A fetch that records every request before handing it to `inner`. */
function recording(inner: FetchLike = selfFetch) {
  const seen: Seen[] = [];
  const fetch: FetchLike = async (input, init) => {
    const url = new URL(input);
    const text = typeof init?.body === "string" ? init.body : undefined;
    seen.push({ method: init?.method ?? "GET", path: url.pathname + url.search, headers: new Headers(init?.headers), body: text === undefined ? undefined : JSON.parse(text) });
    return inner(input, init);
  };
  return { seen, fetch, count: (pred: (s: Seen) => boolean = () => true) => seen.filter(pred).length };
}

/** A fetch that performs the first request `match` selects, then throws its answer away (a dropped response). */
function dropFirstAnswer(match: (method: string, path: string) => boolean, inner: FetchLike = selfFetch): FetchLike {
  let dropped = false;
  return async (input, init) => {
    const res = await inner(input, init);
    if (!dropped && match(init?.method ?? "GET", new URL(input).pathname)) {
      dropped = true;
      await res.body?.cancel();
      throw new TypeError("Network connection lost.");
    }
    return res;
  };
}

const FAST_RETRY = { baseDelayMs: 1, maxDelayMs: 5 };

function client(token: string, extra: Partial<RuntimeClientOptions> = {}): RuntimeClient {
  return new RuntimeClient({ baseUrl: BASE, token, fetch: selfFetch, retry: FAST_RETRY, ...extra });
}

interface Session {
  sid: string;
  orch: RuntimeClient;
  observer: RuntimeClient;
}

async function session(extra: Partial<RuntimeClientOptions> = {}): Promise<Session> {
  const admin = client(ADMIN, extra);
  const s = await admin.createSession();
  return { sid: s.session_id, orch: admin.withToken(s.orchestrator.token), observer: admin.withToken(s.observer.token) };
}

async function newTask(s: Session, steps: ReturnType<typeof step>[], extra: Record<string, unknown> = {}): Promise<string> {
  const id = uniqueId("c");
  await s.orch.createTask(s.sid, { task_id: id, wal_name: id, title: `Task ${id}`, steps, ...extra });
  return `/v1/sessions/${s.sid}/tasks/${id}`;
}

const letters = (n: number) => Array.from({ length: n }, (_, i) => `s${i.toString().padStart(2, "0")}`);
const countTypes = (events: readonly WalEvent[]) => events.reduce<Record<string, number>>((acc, e) => ({ ...acc, [e.event_type]: (acc[e.event_type] ?? 0) + 1 }), {});

let S: Session;
beforeAll(async () => {
  S = await session();
});

// ---- every operation --------------------------------------------------------------------------------

/** The client method of each catalog operation (the batch route is the Transport's group commit). */
const METHOD_OF: Record<string, keyof RuntimeClient | "transport"> = {
  createSession: "createSession",
  mintToken: "mintToken",
  listTokens: "listTokens",
  revokeToken: "revokeToken",
  revokeAllTokens: "revokeAllTokens",
  getSession: "getSession",
  listTasks: "listTasks",
  createTask: "createTask",
  getTaskTemplate: "taskTemplate",
  listTools: "tools",
  getTask: "getTask",
  updateTask: "updateTask",
  completeTask: "completeTask",
  failTask: "failTask",
  cancelTask: "cancelTask",
  blockTask: "blockTask",
  reopenTask: "reopenTask",
  dispatchWorker: "dispatchWorker",
  finishRun: "finishRun",
  cancelRun: "cancelRun",
  querySteps: "querySteps",
  claimStep: "claimStep",
  claimNextStep: "claimNext",
  updateStepStatus: "updateStep",
  appendProgress: "appendProgress",
  batch: "transport",
  // The group commit sends its batches over the socket with `socket: true`.
  commandSocket: "transport",
  streamTaskEvents: "subscribe",
  streamSessionEvents: "subscribeSession",
  getTaskSummary: "summary",
  exportWal: "walExport",
  pauseTask: "pauseTask",
  resumeTask: "resumeTask",
  archiveTask: "archiveTask",
  requestStepAction: "requestStepAction",
  requestTaskAction: "requestTaskAction",
  listTaskActions: "listActions",
  getTaskAction: "getAction",
  respondAction: "respondAction",
  listSessionActions: "sessionActions",
  setPeerCredential: "setPeerCredential",
  listPeers: "listPeers",
  deletePeerCredential: "deletePeerCredential",
  linkTasks: "linkTasks",
  unlinkTasks: "unlinkTasks",
  getTaskGraph: "taskGraph",
  createSchedule: "createSchedule",
  listSchedules: "listSchedules",
  getSchedule: "getSchedule",
  pauseSchedule: "pauseSchedule",
  resumeSchedule: "resumeSchedule",
  triggerSchedule: "triggerSchedule",
  deleteSchedule: "deleteSchedule",
  streamScheduleEvents: "subscribeSchedule",
  createWebhook: "createWebhook",
  listWebhooks: "listWebhooks",
  getWebhook: "getWebhook",
  deleteWebhook: "deleteWebhook",
  listWebhookDeliveries: "listWebhookDeliveries",
  retryWebhookDelivery: "retryWebhookDelivery",
};

describe("RuntimeClient: one typed method per operation", () => {
  it("Should have a client method for every operation of routes/http/catalog.ts", () => {
    expect(OPERATIONS.map((op) => op.operationId).sort()).toEqual(Object.keys(METHOD_OF).sort());
    const c = client(ADMIN);
    for (const op of OPERATIONS) expect(typeof c[METHOD_OF[op.operationId] as keyof RuntimeClient], op.operationId).not.toBe("undefined");
  });

  it("Should list the session's tokens, revoke one and then all of them", async () => {
    const admin = client(ADMIN);
    const s = await admin.createSession();
    const orch = admin.withToken(s.orchestrator.token);
    const approver = await orch.mintApproverToken(s.session_id);
    expect((await orch.listTokens(s.session_id)).tokens.map((t) => t.token_id)).toEqual([s.orchestrator.token_id, s.observer.token_id, approver.token_id]);
    expect(await orch.revokeToken(s.session_id, approver.token_id)).toMatchObject({ token_id: approver.token_id });
    const refused = await rejection(admin.withToken(approver.token).getSession(s.session_id));
    expect(refused.status).toBe(401);
    expect(refused.details).toEqual({ reason: "revoked" });
    const fresh = await orch.revokeAllTokens(s.session_id);
    expect((await admin.withToken(fresh.token).listTokens(s.session_id)).tokens.map((t) => t.token_id)).toEqual([fresh.token_id]);
    expect((await rejection(orch.getSession(s.session_id))).details).toEqual({ reason: "revoked" });
  });

  it("Should create a session, mint tokens, read the snapshot and list tasks", async () => {
    const admin = client(ADMIN);
    const created = await admin.createSession({ orchestrator_agent_id: "planner" });
    expect(created).toMatchObject({ session_id: expect.stringMatching(/^sess_/), orchestrator: { agent_id: "planner", token: expect.any(String) }, observer: { token: expect.any(String) } });
    const orch = admin.withToken(created.orchestrator.token);
    const minted = await orch.mintToken(created.session_id, { role: "observer", agent_id: "dash" });
    expect(minted).toMatchObject({ role: "observer", agent_id: "dash", run_id: null, token: expect.any(String), expires_at: expect.any(String) });
    await orch.createTask(created.session_id, { task_id: "one", wal_name: "one", title: "One", steps: [step("a")] });
    const observer = admin.withToken(minted.token);
    const snapshot = await observer.getSession(created.session_id);
    expect(snapshot.session_id).toBe(created.session_id);
    const page = await observer.listTasks(created.session_id, { include_terminal: true, limit: 10 });
    expect(page).toMatchObject({ total: 1, limit: 10, offset: 0, next_offset: null });
    expect(page.tasks[0]).toMatchObject({ task_id: "one", total_steps: 1 });
  });

  it("Should set, list and delete a peer credential by its origin (a second delete: not_found)", async () => {
    const s = await session();
    expect(await s.orch.setPeerCredential(s.sid, { origin: "https://peer.example:8443", authorization: "Bearer sdk" })).toEqual({ origin: "https://peer.example:8443" });
    expect((await s.orch.listPeers(s.sid)).peers.map((p) => p.origin)).toEqual(["https://peer.example:8443"]);
    expect(await s.orch.deletePeerCredential(s.sid, "https://peer.example:8443")).toEqual({ origin: "https://peer.example:8443" });
    expect((await s.orch.listPeers(s.sid)).peers).toEqual([]);
    expect(await rejection(s.orch.deletePeerCredential(s.sid, "https://peer.example:8443"))).toMatchObject({ status: 404, code: "not_found" });
  });

  it("Should create, read, patch, block, reopen and close tasks", async () => {
    const t = await newTask(S, [step("a"), step("b", ["a"])]);
    const view = await S.orch.getTask(t);
    expect(view.steps.map((s) => [s.step_id, s.status])).toEqual([["a", "ready"], ["b", "pending"]]);
    expect(view.diagnostics).toEqual({ completeable: false, stalled: false });
    const patched = await S.orch.updateTask(t, [{ op: "add_step", step: step("c", ["b"]) }, { op: "update_task", title: "Renamed" }]);
    expect(patched.task).toMatchObject({ title: "Renamed", total_steps: 3 });
    expect(patched.event_ids.length).toBeGreaterThan(0);
    expect((await S.orch.blockTask(t, { reason: "wait" })).task.status).toBe("blocked");
    expect((await S.orch.reopenTask(t)).task.status).not.toBe("blocked");
    expect((await S.orch.cancelTask(t, { reason: "done with it" })).task.status).toBe("cancelled");
    const t2 = await newTask(S, [step("a")]);
    expect((await S.orch.failTask(t2, { reason: "no" })).task.status).toBe("failed");
    const t3 = await newTask(S, [step("a", [], { required: false })]);
    expect((await S.orch.completeTask({ sessionId: S.sid, taskId: t3.split("/").pop()! })).task.status).toBe("completed");
  });

  it("Should dispatch a worker client and claim, report, update, claim next and finish through it", async () => {
    const t = await newTask(S, [step("a"), step("b", ["a"]), step("c")]);
    const w = await S.orch.dispatchWorker(t, { agent_id: "w1", max_steps: 3 });
    expect(w).toMatchObject({ runId: expect.stringMatching(/^run_/), agentId: "w1", maxSteps: 3, task: t });
    expect(w.dispatch?.run).toMatchObject({ max_steps: 3, status: "active" });
    expect((await w.querySteps()).steps.map((s) => s.step_id)).toEqual(["a", "c"]);
    expect((await w.querySteps({ status: "ready", limit: 1 })).steps.map((s) => s.step_id)).toEqual(["a"]);
    const claimed = await w.claimStep("a");
    expect(claimed).toMatchObject({ step: { step_id: "a", status: "claimed" }, attempt_id: expect.stringMatching(/^att_/) });
    expect((await w.appendProgress("a", { phase: "reading", counters: { pages: 3 } })).task?.step_counts.claimed).toBe(1);
    // Completing a makes b ready; claim_next takes the first ready step in creation order in the same call.
    const updated = await w.updateStep("a", { status: "completed", result_summary: "3 facts", claim_next: true });
    expect(updated.next).toMatchObject({ step: { step_id: "b" }, attempt_id: expect.any(String) });
    await w.updateStep("b", { status: "running" });
    await w.updateStep("b", { status: "completed" });
    expect(await w.claimNext()).toMatchObject({ step: { step_id: "c" } });
    await w.updateStep("c", { status: "completed" });
    expect(await w.claimNext()).toMatchObject({ no_step_claimed: true, reason: "run_budget_spent" });
    const finished = await S.orch.finishRun(t, w.runId, { outcome: "finished", result: { ok: true } });
    expect(finished.task.active_runs).toBe(0);

    const w2 = await S.orch.dispatchWorker(t);
    expect((await S.orch.cancelRun(t, w2.runId, { reason: "not needed" })).task.active_runs).toBe(0);
    // A finished run's token reads nothing more; a worker client made from a live run's token does.
    await expect(w.getTask()).rejects.toMatchObject({ code: "unauthorized", status: 401, details: { reason: "run_ended", run_id: w.runId } });
    const w3 = await S.orch.dispatchWorker(t);
    const orchWorker = S.orch.worker(t, { token: w3.token, runId: w3.runId });
    expect((await orchWorker.getTask()).runs.map((r) => r.status)).toEqual(["finished", "cancelled", "active"]);
  });

  it("Should read the prompt summary, the WAL (whole and after a seq), the task template and the tools", async () => {
    const t = await newTask(S, [step("a"), step("b")]);
    const summary = await S.observer.summary(t, { token_budget: 500 });
    expect(summary).toMatchObject({ text: expect.stringContaining("a"), token_budget: 500, truncated: expect.any(Boolean) });
    const whole = await S.observer.walExport(t);
    expect(whole.events[0]!.event_type).toBe("task_created");
    expect(whole.events.map((e) => e.wal_seq)).toEqual(whole.events.map((_, i) => i + 1));
    expect(whole.last_wal_seq).toBe(whole.events.length);
    expect(whole.text.split("\n").filter((l) => l !== "")).toHaveLength(whole.events.length);
    const page = await S.observer.walExport(t, { after_seq: 1, limit: 1 });
    expect(page.events).toEqual([whole.events[1]]);
    expect(page.last_wal_seq).toBe(whole.last_wal_seq);
    const template = await S.observer.taskTemplate();
    expect(template).toMatchObject({ role: "user", content: expect.any(String) });
    const tools = await S.observer.tools();
    expect(tools.role).toBe("observer");
    expect(tools.tools.map((tool) => tool.name)).toContain("agent.task_get");
    expect(tools.tools.map((tool) => tool.name)).not.toContain("agent.task_create");
  });
});

// ---- errors and retries -----------------------------------------------------------------------------

describe("RuntimeApiError: typed errors, thrown at once unless a retry can help", () => {
  it.each([
    ["unauthorized", 401, (c: RuntimeClient, t: string) => c.withToken("not-a-token").getTask(t)],
    ["permission_denied", 403, (c: RuntimeClient) => c.withToken(ADMIN).getSession(S.sid)],
    ["not_found", 404, (c: RuntimeClient, t: string) => c.getTask(`${t}x`)],
    ["validation_error", 400, (c: RuntimeClient) => c.createTask(S.sid, { task_id: "Bad Id", wal_name: "x", title: "x", steps: [] })],
    ["invalid_transition", 409, (c: RuntimeClient, t: string) => c.updateStep(t, "a", { status: "ready" })],
    ["task_not_completeable", 409, (c: RuntimeClient, t: string) => c.completeTask(t)],
  ] as const)("Should throw %s (%i) after exactly one request", async (code, status, act) => {
    const t = await newTask(S, [step("a")]);
    const rec = recording();
    const e = await rejection(act(client(S.orch.token!, { fetch: rec.fetch }), t));
    expect(e).toMatchObject({ name: "RuntimeApiError", code, status, retryable: false, message: expect.any(String), details: expect.any(Object) });
    expect(rec.count()).toBe(1);
  });

  it("Should throw tool_not_available to a worker calling an orchestrator operation", async () => {
    const t = await newTask(S, [step("a")]);
    const w = await S.orch.dispatchWorker(t);
    expect(await rejection(w.client.updateTask(t, [{ op: "delete_step", step_id: "a" }]))).toMatchObject({ code: "tool_not_available", status: 403 });
  });

  it("Should throw idempotency_conflict when a key is reused with another body", async () => {
    const t = await newTask(S, [step("a")]);
    await S.orch.updateTask(t, [{ op: "update_task", title: "One" }], { idempotencyKey: "same-key" });
    expect(await rejection(S.orch.updateTask(t, [{ op: "update_task", title: "Two" }], { idempotencyKey: "same-key" }))).toMatchObject({ code: "idempotency_conflict", status: 422 });
  });

  it("Should retry 503 storage_error and 429 with backoff and then succeed", async () => {
    let calls = 0;
    const flaky: FetchLike = async (input, init) => {
      calls += 1;
      if (calls === 1) return Response.json({ error: { code: "storage_error", message: "WAL append failed", details: {} } }, { status: 503 });
      if (calls === 2) return new Response("slow down", { status: 429, headers: { "retry-after": "0" } });
      return selfFetch(input, init);
    };
    const c = client(S.orch.token!, { fetch: flaky });
    expect((await c.getSession(S.sid)).session_id).toBe(S.sid);
    expect(calls).toBe(3);
  });

  it("Should give up after the configured attempts with a retryable error (503, network)", async () => {
    let calls = 0;
    const down: FetchLike = async () => {
      calls += 1;
      return Response.json({ error: { code: "storage_error", message: "down", details: {} } }, { status: 503 });
    };
    expect(await rejection(client(ADMIN, { fetch: down, retry: { ...FAST_RETRY, attempts: 4 } }).createSession())).toMatchObject({ code: "storage_error", status: 503, retryable: true });
    expect(calls).toBe(4);
    const offline: FetchLike = async () => {
      throw new TypeError("fetch failed");
    };
    expect(await rejection(client(ADMIN, { fetch: offline }).createSession())).toMatchObject({ code: "network_error", status: 0, retryable: true });
  });

  it("Should not retry 500 internal_error (a bug answers the same every time) and keep its incident_id", async () => {
    let calls = 0;
    const buggy: FetchLike = async () => {
      calls += 1;
      return Response.json({ error: { code: "internal_error", message: "bug", details: { incident_id: "inc-1" } } }, { status: 500 });
    };
    expect(await rejection(client(ADMIN, { fetch: buggy, retry: { ...FAST_RETRY, attempts: 4 } }).createSession())).toMatchObject({ code: "internal_error", status: 500, retryable: false, details: { incident_id: "inc-1" } });
    expect(calls).toBe(1);
  });

  it("Should stop retrying when the caller's signal aborts", async () => {
    const controller = new AbortController();
    const offline: FetchLike = async () => {
      controller.abort(new Error("caller gave up"));
      throw new TypeError("fetch failed");
    };
    await expect(client(ADMIN, { fetch: offline }).createSession({}, { signal: controller.signal })).rejects.toThrow("caller gave up");
  });
});

describe("Idempotency-Key format", () => {
  it("Should be a UUIDv7 whose text sorts in the order the keys were made (the service's key index grows at its end)", () => {
    const at = Date.parse("2026-11-22T12:00:00.000Z");
    const key = newIdempotencyKey(at);
    expect(key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseInt(key.replace(/-/g, "").slice(0, 12), 16)).toBe(at);
    const keys = Array.from({ length: 50 }, (_, i) => newIdempotencyKey(at + i * 7));
    expect([...keys].sort()).toEqual(keys);
    expect(new Set(Array.from({ length: 1_000 }, () => newIdempotencyKey(at))).size).toBe(1_000);
  });
});

describe("Idempotency-Key: a retry after a lost answer returns the first answer and writes once", () => {
  it("Should send one key per logical call, reuse it on the retry, and write once (single requests)", async () => {
    const t = await newTask(S, [step("a")]);
    const rec = recording(dropFirstAnswer((m, p) => m === "PATCH" && p === t));
    const c = client(S.orch.token!, { fetch: rec.fetch, batching: false });
    const answer = await c.updateTask(t, [{ op: "add_step", step: step("b") }]);
    const patches = rec.seen.filter((s) => s.method === "PATCH");
    expect(patches).toHaveLength(2);
    expect(patches[0]!.headers.get("idempotency-key")).toMatch(/^[0-9a-f-]{32,36}$/);
    expect(patches[1]!.headers.get("idempotency-key")).toBe(patches[0]!.headers.get("idempotency-key"));
    const wal = (await S.orch.walExport(t)).events;
    expect(wal.filter((e) => e.event_type === "task_updated")).toHaveLength(1);
    expect(answer.event_ids).toEqual(wal.filter((e) => e.wal_seq > wal.length - answer.event_ids.length).map((e) => e.event_id));
    // A second logical call gets a fresh key.
    await c.appendProgress(t, "a", { summary: "x" });
    const keys = rec.seen.filter((s) => s.method !== "GET").map((s) => s.headers.get("idempotency-key"));
    expect(new Set(keys).size).toBe(2);
  });

  it("Should retry a task create whose answer was lost without a task_id_conflict", async () => {
    const id = uniqueId("c");
    const c = client(S.orch.token!, { fetch: dropFirstAnswer((m, p) => m === "POST" && p.endsWith("/tasks")) });
    const answer = await c.createTask(S.sid, { task_id: id, wal_name: id, title: "Created once", steps: [step("a")] });
    expect(answer.task).toMatchObject({ task_id: id, wal_seq: answer.wal_seq });
    expect((await S.orch.walExport(`/v1/sessions/${S.sid}/tasks/${id}`)).events.filter((e) => e.event_type === "task_created")).toHaveLength(1);
  });

  it("Should retry a whole batch whose answer was lost with the same keys, writing each command once", async () => {
    const t = await newTask(S, letters(8).map((id) => step(id)));
    const rec = recording(dropFirstAnswer((_m, p) => p.endsWith("/batch")));
    const orch = client(S.orch.token!, { fetch: rec.fetch });
    const workers = await Promise.all(letters(8).map(() => orch.dispatchWorker(t)));
    const claims = await Promise.all(workers.map((w) => w.claimNext()));
    expect(new Set(claims.map((c) => c.step?.step_id)).size).toBe(8);
    const batches = rec.seen.filter((s) => s.path.endsWith("/batch"));
    // dispatch: sent, answer lost, re-sent; claims: one batch.
    expect(batches).toHaveLength(3);
    expect(batches[1]!.body.commands.map((c: any) => c.idempotency_key)).toEqual(batches[0]!.body.commands.map((c: any) => c.idempotency_key));
    const counts = countTypes((await S.orch.walExport(t)).events);
    expect(counts.worker_dispatched).toBe(8);
    expect(counts.task_step_claimed).toBe(8);
  });
});

// ---- group commit -----------------------------------------------------------------------------------

describe("Group commit: writes of one tick to one task share one batch request", () => {
  /** 16 workers dispatched, claiming, completing and finishing, each phase in one tick. */
  async function sixteenWorkers(batching: boolean) {
    const s = await session();
    const t = await newTask(s, letters(16).map((id) => step(id)));
    const rec = recording();
    const orch = client(s.orch.token!, { fetch: rec.fetch, batching });
    const workers = await Promise.all(letters(16).map((_, i) => orch.dispatchWorker(t, { agent_id: `w${i}` })));
    const claims = await Promise.all(workers.map((w) => w.claimNext()));
    const done = await Promise.all(workers.map((w, i) => w.updateStep(claims[i]!.step!.step_id, { status: "completed", result_summary: `done by w${i}` })));
    await Promise.all(workers.map((w) => w.finish()));
    const view = await s.orch.getTask(t);
    return { rec, claims, done, view, wal: (await s.orch.walExport(t)).events };
  }

  it("Should make 64 calls of 16 workers in 4 requests, with the same results as unbatched", async () => {
    const batched = await sixteenWorkers(true);
    const alone = await sixteenWorkers(false);
    expect(batched.rec.count()).toBe(4);
    expect(batched.rec.seen.every((s) => s.method === "POST" && s.path.endsWith("/batch"))).toBe(true);
    expect(batched.rec.seen.map((s) => s.body.commands.length)).toEqual([16, 16, 16, 16]);
    expect(alone.rec.count()).toBe(64);
    for (const run of [batched, alone]) {
      expect(run.claims.map((c) => c.step!.step_id).sort()).toEqual(letters(16));
      expect(new Set(run.claims.map((c) => c.attempt_id)).size).toBe(16);
      expect(run.view.steps.every((s) => s.status === "completed")).toBe(true);
      expect(run.view.runs.every((r) => r.status === "finished")).toBe(true);
      expect(run.view.diagnostics.completeable).toBe(true);
    }
    expect(countTypes(batched.wal)).toEqual(countTypes(alone.wal));
    // Each caller got its own answer: its own claimed step, its own event ids.
    expect(new Set(batched.done.flatMap((d) => d.event_ids)).size).toBe(batched.done.reduce((n, d) => n + d.event_ids.length, 0));
  });

  it("Should give each command its own typed error without failing the others", async () => {
    const t = await newTask(S, [step("a"), step("b")]);
    const rec = recording();
    const orch = client(S.orch.token!, { fetch: rec.fetch });
    const [w1, w2] = await Promise.all([orch.dispatchWorker(t), orch.dispatchWorker(t)]);
    const results = await Promise.allSettled([w1!.claimStep("a"), w2!.claimStep("a"), w2!.updateStep("b", { status: "completed" }), w1!.appendProgress("a", { summary: "working" })]);
    expect(rec.count((s) => s.path.endsWith("/batch"))).toBe(2);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "rejected", "fulfilled"]);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ code: "step_already_claimed", status: 409 });
    expect((results[2] as PromiseRejectedResult).reason).toMatchObject({ code: "permission_denied", status: 403 });
  });

  it("Should answer each command alone when the batch request itself is refused (its token is bad)", async () => {
    const t = await newTask(S, [step("a")]);
    const rec = recording();
    const orch = client(S.orch.token!, { fetch: rec.fetch });
    const forged = orch.withToken("forged.token.here");
    const results = await Promise.allSettled([forged.appendProgress(t, "a", {}), orch.appendProgress(t, "a", { summary: "ok" })]);
    expect((results[0] as PromiseRejectedResult).reason).toMatchObject({ code: "unauthorized", status: 401 });
    expect(results[1]!.status).toBe("fulfilled");
    expect(rec.seen.map((s) => s.path.endsWith("/batch"))).toEqual([true, false, false]);
  });

  it("Should split a tick's writes into batches of at most maxCommands", async () => {
    const t = await newTask(S, [step("a")]);
    const rec = recording();
    const orch = client(S.orch.token!, { fetch: rec.fetch, batching: { maxCommands: 4 } });
    await Promise.all(Array.from({ length: 10 }, (_, i) => orch.appendProgress(t, "a", { summary: `p${i}` })));
    expect(rec.seen.map((s) => s.body.commands?.length ?? 1)).toEqual([4, 4, 2]);
    expect(countTypes((await S.orch.walExport(t)).events).task_progress).toBe(10);
  });
});

// ---- worker loop and orchestrator -------------------------------------------------------------------

describe("worker.run and orchestrate", () => {
  it("Should run a pooled worker through a chain, taking each next step in the status call", async () => {
    const t = await newTask(S, [step("a"), step("b", ["a"]), step("c", ["b"])]);
    const rec = recording();
    const orch = client(S.orch.token!, { fetch: rec.fetch });
    const w = await orch.dispatchWorker(t, { max_steps: 3 });
    const phases: string[] = [];
    const report = await w.run(async (s, ctx) => {
      await ctx.progress({ phase: `working ${s.step_id}` });
      phases.push(s.step_id);
      return { result_summary: `did ${s.step_id}`, artifact_ids: [`art-${s.step_id}`] };
    });
    expect(report).toEqual({ runId: w.runId, completed: ["a", "b", "c"], failed: [], stopped: "no_step_claimed", finished: true });
    // dispatch, claim-next, 3 × (progress + status), finish: no extra claim-next calls.
    expect(rec.seen.map((s) => s.path.slice(t.length))).toEqual(["/workers", "/steps/claim-next", "/steps/a/progress", "/steps/a/status", "/steps/b/progress", "/steps/b/status", "/steps/c/progress", "/steps/c/status", `/runs/${w.runId}/finish`]);
    const view = await S.orch.getTask(t);
    expect(view.steps.map((s) => [s.status, s.result_summary, s.artifact_ids])).toEqual([
      ["completed", "did a", ["art-a"]],
      ["completed", "did b", ["art-b"]],
      ["completed", "did c", ["art-c"]],
    ]);
    expect(view.runs[0]).toMatchObject({ status: "finished" });
  });

  it("Should batch the calls of 16 pooled workers running at once", async () => {
    const t = await newTask(S, letters(32).map((id) => step(id)));
    const rec = recording();
    const orch = client(S.orch.token!, { fetch: rec.fetch });
    const workers = await Promise.all(letters(16).map(() => orch.dispatchWorker(t, { max_steps: 32 })));
    const reports = await Promise.all(workers.map((w) => w.run((s) => ({ result_summary: s.step_id }))));
    expect(reports.flatMap((r) => r.completed).sort()).toEqual(letters(32));
    const calls = 16 + reports.reduce((n, r) => n + 1 + r.completed.length + 1, 0);
    expect(rec.count()).toBeLessThan(calls / 4);
    expect((await S.orch.getTask(t)).diagnostics.completeable).toBe(true);
  });

  it("Should orchestrate to completion when a handler throws once: failed, reopened, completed on the second attempt", async () => {
    const t = await newTask(S, [step("a"), step("b", ["a"]), step("c", ["b"])]);
    let thrown = false;
    const result = await orchestrate(S.orch, t, {
      handler: (s) => {
        if (s.step_id === "b" && !thrown) {
          thrown = true;
          throw new Error("flaky tool");
        }
        return { result_summary: `ok ${s.step_id}` };
      },
    });
    expect(result.status).toBe("completed");
    expect(result.errors).toEqual([]);
    expect(result.runs.map((r) => [r.completed, r.failed])).toEqual([
      [["a"], []],
      [[], ["b"]],
      [["b"], []],
      [["c"], []],
    ]);
    const b = result.view.steps.find((s) => s.step_id === "b")!;
    expect(b).toMatchObject({ status: "completed", result_summary: "ok b" });
    expect(result.view.attempts.filter((a) => a.step_id === "b").map((a) => [a.ordinal, a.status, a.last_error])).toEqual([
      [1, "failed", "flaky tool"],
      [2, "completed", null],
    ]);
    const counts = countTypes((await S.orch.walExport(t)).events);
    expect(counts).toMatchObject({ task_step_failed: 1, task_step_reopened: 1, task_step_completed: 3, worker_dispatched: 4, task_completed: 1 });
  });

  it("Should fail the task when a step fails again after its one reopen", async () => {
    const t = await newTask(S, [step("a"), step("b")]);
    const failures: string[] = [];
    const result = await orchestrate(S.orch, t, {
      handler: (s) => {
        if (s.step_id === "b") throw new Error("always broken");
      },
      onStepFailed: (s, info) => {
        failures.push(`${s.step_id}:${info.reopened}`);
        return info.reopened === 0 ? "reopen" : "fail";
      },
    });
    expect(result.status).toBe("failed");
    expect(failures).toEqual(["b:0", "b:1"]);
    expect(result.view.task.status_reason).toContain("always broken");
  });

  it("Should orchestrate with pooled runs (workerCount) across a fan-out / fan-in DAG", async () => {
    const t = await newTask(S, [step("plan"), step("r1", ["plan"]), step("r2", ["plan"]), step("r3", ["plan"]), step("write", ["r1", "r2", "r3"])]);
    const result = await orchestrate(S.orch, t, { workerCount: 3, maxSteps: 5, handler: (s) => ({ result_summary: s.step_id }) });
    expect(result.status).toBe("completed");
    expect(result.runs.flatMap((r) => r.completed).sort()).toEqual(["plan", "r1", "r2", "r3", "write"]);
    expect(result.view.runs.length).toBeLessThanOrEqual(5);
  });

  it("Should stop on the caller's signal: the worker finishes its run as cancelled and orchestrate rejects with the reason", async () => {
    const t = await newTask(S, [step("a")]);
    const controller = new AbortController();
    const stop = new Error("operator stop");
    let handlerSaw: unknown;
    const result = orchestrate(S.orch, t, {
      signal: controller.signal,
      handler: async (_s, ctx) => {
        setTimeout(() => controller.abort(stop), 5);
        await new Promise((r) => ctx.signal.addEventListener("abort", r, { once: true }));
        handlerSaw = ctx.signal.reason;
        throw ctx.signal.reason;
      },
    });
    await expect(result).rejects.toBe(stop);
    expect(handlerSaw).toBe(stop);
    const view = await S.orch.getTask(t);
    expect(view.runs.map((r) => r.status)).toEqual(["cancelled"]);
    expect(view.steps[0]).toMatchObject({ status: "failed", status_reason: "worker_cancelled" });
  });

  it("Should abort ctx.signal when the orchestrator cancels the run, and stop without failing the step itself", async () => {
    const t = await newTask(S, [step("a")]);
    const w = await S.orch.dispatchWorker(t);
    let started!: () => void;
    const isStarted = new Promise<void>((r) => (started = r));
    let reason: unknown;
    const running = w.run(
      async (_s, ctx) => {
        started();
        await new Promise((r) => ctx.signal.addEventListener("abort", r, { once: true }));
        reason = ctx.signal.reason;
        await expect(ctx.progress({ summary: "still here?" })).rejects.toMatchObject({ code: "unauthorized", status: 401, details: { reason: "run_ended", run_id: w.runId } });
        throw ctx.signal.reason;
      },
      { watchMs: 10 },
    );
    await isStarted;
    await S.orch.cancelRun(t, w.runId, { reason: "changed my mind" });
    const report = await running;
    expect(report).toMatchObject({ stopped: "run_ended", completed: [], failed: [], finished: false });
    expect(reason).toBeInstanceOf(RuntimeApiError);
    const view = await S.orch.getTask(t);
    expect(view.steps[0]).toMatchObject({ status: "failed", status_reason: "worker_cancelled" });
  });
});

// ---- SSE: parser and reconnection against scripted streams ------------------------------------------

describe("SseParser", () => {
  const sample = ": hello\r\nid: 1\r\nevent: task.created\r\ndata: {\"a\":1}\r\n\r\nid: 1.1\nevent: task.accepted\ndata: line1\ndata: line2\n\n:hb\r\rretry: 1500\rdata:x\r\rid\nunknown: y\ndata\n\n";
  const expected: SseFrame[] = [
    { id: "1", event: "task.created", data: '{"a":1}' },
    { id: "1.1", event: "task.accepted", data: "line1\nline2" },
    { id: undefined, event: "message", data: "x" },
    { id: "", event: "message", data: "" },
  ];

  it("Should parse LF, CRLF and CR line ends, comments, multi-line data, id and retry", () => {
    const p = new SseParser();
    expect(p.push(sample)).toEqual(expected);
    expect(p.comments).toBe(2);
    expect(p.retryMs).toBe(1500);
    expect(p.lastEventId).toBe("");
  });

  it("Should give the same frames wherever the text is cut into chunks", () => {
    for (let cut = 0; cut <= sample.length; cut++) {
      const p = new SseParser();
      expect([...p.push(sample.slice(0, cut)), ...p.push(sample.slice(cut))], `cut at ${cut}`).toEqual(expected);
    }
    const p = new SseParser();
    expect([...sample].flatMap((c) => p.push(c))).toEqual(expected);
  });

  it("Should drop a leading BOM and keep an unterminated frame until its blank line", () => {
    const p = new SseParser();
    expect(p.push("\uFEFFdata: a\n")).toEqual([]);
    expect(p.push("\n")).toEqual([{ id: undefined, event: "message", data: "a" }]);
  });

  it("Should order ids by the sequence they stand for (a legacy `N.k` id as its sequence), treating other ids as always new", () => {
    expect(isAfterId("21", "20")).toBe(true);
    expect(isAfterId("100", "99")).toBe(true);
    expect(isAfterId("20", "20")).toBe(false);
    expect(isAfterId("11", "20")).toBe(false);
    // `1.2` was the id of WAL event 1's third runtime event, sequence 12.
    expect(isAfterId("13", "1.2")).toBe(true);
    expect(isAfterId("12", "1.2")).toBe(false);
    expect(isAfterId("11", "1.2")).toBe(false);
    expect(isAfterId("abc", "5")).toBe(true);
    expect(isAfterId("1", undefined)).toBe(true);
  });
});

/** One scripted connection: what it sends, then how it ends. */
interface Script {
  readonly status?: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly chunks?: readonly string[];
  readonly end?: "close" | "error" | "hang";
}

/** A fetch serving scripted SSE connections in order, recording each request's headers and URL. */
function scriptedStreams(scripts: readonly Script[]) {
  const requests: { url: URL; headers: Headers }[] = [];
  let cancelled = 0;
  const fetch: FetchLike = async (input, init) => {
    requests.push({ url: new URL(input), headers: new Headers(init?.headers) });
    const script = scripts[requests.length - 1];
    if (script === undefined) throw new Error(`no script for connection ${requests.length}`);
    if (script.status !== undefined && script.status !== 200) {
      const code = script.status === 404 ? "not_found" : script.status === 429 ? "rate_limited" : "storage_error";
      return Response.json({ error: { code, message: "scripted", details: {} } }, { status: script.status, headers: script.headers ?? {} });
    }
    const chunks = [...(script.chunks ?? [])];
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = chunks.shift();
        if (next !== undefined) return controller.enqueue(encoder.encode(next));
        if (script.end === "error") return controller.error(new TypeError("connection reset"));
        if (script.end === "hang") return new Promise<void>(() => undefined);
        controller.close();
      },
      cancel() {
        cancelled += 1;
      },
    });
    return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
  };
  return { fetch, requests, cancelled: () => cancelled };
}

const frame = (seq: number, type: string) => `id: ${seq}\nevent: ${type}\ndata: ${JSON.stringify({ type, eventId: `e${seq}`, sequence: seq, payload: {} })}\n\n`;
const TASK = "/v1/sessions/sess_x/tasks/t1";

describe("subscribe(): reconnecting SSE over fetch (scripted streams)", () => {
  it("Should deliver every event once, in order, across a mid-stream drop and a close without end", async () => {
    const server = scriptedStreams([
      // Drops in the middle of a frame after 10, 11, 20, 21 and a heartbeat (two WAL events of two runtime events each).
      { chunks: [frame(10, "task.created") + frame(11, "task.accepted"), frame(20, "task.delegated") + frame(21, "subagent.spawned"), ": heartbeat\n\n", "id: 30\nevent: task.que"], end: "error" },
      // Resumes after 21 but repeats 20 and 21 (the client drops the repeats), sends 30, closes without end.
      { chunks: [frame(20, "task.delegated"), frame(21, "subagent.spawned") + frame(30, "task.queued")], end: "close" },
      { chunks: [frame(40, "task.completed"), 'event: end\ndata: {"reason":"task_terminal","status":"completed","wal_seq":4}\n\n', frame(50, "task.updated")] },
    ]);
    const c = new RuntimeClient({ baseUrl: "http://runtime.test", token: "tok", fetch: server.fetch });
    const sub = c.subscribe(TASK, { afterSeq: 0, reconnect: { baseDelayMs: 1, maxDelayMs: 2 } });
    const ids: string[] = [];
    for await (const e of sub) ids.push(e.eventId);
    expect(ids).toEqual(["e10", "e11", "e20", "e21", "e30", "e40"]);
    expect(sub.end).toEqual({ reason: "task_terminal", status: "completed", wal_seq: 4 });
    expect(sub.lastEventId).toBe("40");
    expect(sub.reconnects).toBe(2);
    expect(server.requests.map((r) => [r.url.pathname + r.url.search, r.headers.get("last-event-id")])).toEqual([
      [`${TASK}/events?after_seq=0`, null],
      [`${TASK}/events`, "21"],
      [`${TASK}/events`, "30"],
    ]);
    for (const r of server.requests) {
      expect(r.headers.get("authorization")).toBe("Bearer tok");
      expect(r.headers.get("accept")).toBe("text/event-stream");
    }
  });

  it("Should resume from a given lastEventId (also a legacy `N.k` one) and reconnect after a retryable 503", async () => {
    // The server resumes after legacy id 7.2 (sequence 72) but repeats 72: the client drops it.
    const server = scriptedStreams([{ status: 503 }, { chunks: [frame(72, "subagent.spawned"), frame(80, "task.queued"), "event: end\ndata: {\"reason\":\"task_terminal\",\"status\":\"cancelled\",\"wal_seq\":8}\n\n"] }]);
    const c = new RuntimeClient({ baseUrl: "http://runtime.test", token: "tok", fetch: server.fetch });
    const sub = c.subscribe(TASK, { lastEventId: "7.2", afterSeq: 3, reconnect: { baseDelayMs: 1 } });
    const seen: RuntimeEvent[] = [];
    for await (const e of sub) seen.push(e);
    expect(seen.map((e) => e.sequence)).toEqual([80]);
    expect(server.requests.map((r) => [r.url.search, r.headers.get("last-event-id")])).toEqual([
      ["", "7.2"],
      ["", "7.2"],
    ]);
  });

  it("Should wait out a 429's Retry-After whole before opening the stream again, even past reconnect.maxDelayMs", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const server = scriptedStreams([{ status: 429, headers: { "retry-after": "2" } }, { chunks: [frame(10, "task.created"), 'event: end\ndata: {"reason":"task_terminal","status":"completed","wal_seq":1}\n\n'] }]);
      const c = new RuntimeClient({ baseUrl: "http://runtime.test", token: "tok", fetch: server.fetch });
      const sub = c.subscribe(TASK, { reconnect: { baseDelayMs: 1, maxDelayMs: 10 }, idleTimeoutMs: 0 });
      const ids = (async () => {
        const out: string[] = [];
        for await (const e of sub) out.push(e.eventId);
        return out;
      })();
      await vi.advanceTimersByTimeAsync(1_999);
      expect(server.requests).toHaveLength(1);
      // Retry-After (2 s) plus at most a quarter more.
      await vi.advanceTimersByTimeAsync(502);
      expect(server.requests).toHaveLength(2);
      expect(await ids).toEqual(["e10"]);
      expect(sub.reconnects).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it("Should throw a typed error when the stream cannot be opened (404, 401)", async () => {
    const c = new RuntimeClient({ baseUrl: "http://runtime.test", token: "tok", fetch: scriptedStreams([{ status: 404 }]).fetch });
    const it = c.subscribe(TASK)[Symbol.asyncIterator]();
    expect(await rejection(it.next())).toMatchObject({ code: "not_found", status: 404 });
  });

  it("Should give up after reconnect.attempts connections in a row fail", async () => {
    const server = scriptedStreams([{ end: "close" }, { end: "close" }, { end: "close" }]);
    const c = new RuntimeClient({ baseUrl: "http://runtime.test", token: "tok", fetch: server.fetch });
    const sub = c.subscribe(TASK, { reconnect: { attempts: 3, baseDelayMs: 1 } });
    const e = await rejection((async () => {
      for await (const _ of sub) void _;
    })());
    expect(e).toMatchObject({ code: "network_error", retryable: true });
    expect(server.requests).toHaveLength(3);
  });

  it("Should reconnect when nothing arrives within idleTimeoutMs", async () => {
    const server = scriptedStreams([{ chunks: [frame(10, "task.created")], end: "hang" }, { chunks: [frame(11, "task.accepted"), 'event: end\ndata: {"reason":"task_terminal","status":"failed","wal_seq":1}\n\n'] }]);
    const c = new RuntimeClient({ baseUrl: "http://runtime.test", token: "tok", fetch: server.fetch });
    const sub = c.subscribe(TASK, { idleTimeoutMs: 20, reconnect: { baseDelayMs: 1 } });
    const ids: string[] = [];
    for await (const e of sub) ids.push(e.eventId);
    expect(ids).toEqual(["e10", "e11"]);
    expect(server.requests[1]!.headers.get("last-event-id")).toBe("10");
  });

  it("Should end quietly and close the connection when the signal aborts or the consumer breaks", async () => {
    const server = scriptedStreams([{ chunks: [frame(10, "task.created")], end: "hang" }, { chunks: [frame(10, "task.created"), frame(11, "task.accepted")], end: "hang" }]);
    const c = new RuntimeClient({ baseUrl: "http://runtime.test", token: "tok", fetch: server.fetch });
    const controller = new AbortController();
    const got: string[] = [];
    for await (const e of c.subscribe(TASK, { signal: controller.signal, idleTimeoutMs: 0 })) {
      got.push(e.eventId);
      setTimeout(() => controller.abort(), 5);
    }
    expect(got).toEqual(["e10"]);
    for await (const e of c.subscribe(TASK, { idleTimeoutMs: 0 })) {
      got.push(e.eventId);
      break;
    }
    expect(got).toEqual(["e10", "e10"]);
    expect(server.cancelled()).toBe(2);
  });

  it("Should stream session events with subscribeSession, resuming with Last-Event-ID", async () => {
    const snap = (seq: number) => `id: ${seq}\nevent: snapshot.updated\ndata: ${JSON.stringify({ type: "snapshot.updated", sequence: seq, taskId: `t${seq}`, payload: { change: "created" } })}\n\n`;
    const server = scriptedStreams([{ chunks: [snap(1), snap(2)], end: "error" }, { chunks: [snap(2) + snap(3) + snap(4)], end: "hang" }]);
    const c = new RuntimeClient({ baseUrl: "http://runtime.test", token: "tok", fetch: server.fetch });
    const sub = c.subscribeSession("sess_x", { reconnect: { baseDelayMs: 1 }, idleTimeoutMs: 0 });
    const got: [number, string][] = [];
    for await (const e of sub) {
      got.push([e.sequence, e.taskId]);
      // Closing mid-chunk: frame 4, already received, is not delivered.
      if (got.length === 3) sub.close();
    }
    expect(got).toEqual([
      [1, "t1"],
      [2, "t2"],
      [3, "t3"],
    ]);
    expect(sub.lastEventId).toBe("3");
    expect(server.requests.map((r) => [r.url.pathname, r.headers.get("last-event-id")])).toEqual([
      ["/v1/sessions/sess_x/events", null],
      ["/v1/sessions/sess_x/events", "2"],
    ]);
  });
});

describe("subscribe() against the service", () => {
  it("Should stream every runtime event of a task once, in order, then end when the task is terminal", async () => {
    const t = await newTask(S, [step("a"), step("b", ["a"])]);

    const sub = S.observer.subscribe(t, { afterSeq: 0 });
    const received: RuntimeEvent[] = [];
    const reading = (async () => {
      for await (const e of sub) received.push(e);
    })();
    const viaOnEvent: string[] = [];
    const result = await orchestrate(S.orch, t, { handler: (s) => ({ result_summary: s.step_id }), onEvent: (e) => viaOnEvent.push(e.eventId) });
    expect(result.status).toBe("completed");
    await reading;
    const wal = (await S.orch.walExport(t)).events;
    const expected = projectWal(wal);
    expect(received.map((e) => e.eventId)).toEqual(expected.map((e) => e.eventId));
    // orchestrate's onEvent sees the same stream, through the terminal event.
    expect(viaOnEvent).toEqual(expected.map((e) => e.eventId));
    expect(received.map((e) => e.type)).toEqual(expected.map((e) => e.type));
    // Every event has its own sequence, and the last one is where the subscription would resume.
    expect(received.every((e, i) => i === 0 || e.sequence > received[i - 1]!.sequence)).toBe(true);
    expect(sub.lastEventId).toBe(String(expected.at(-1)!.sequence));
    expect(sub.end).toMatchObject({ reason: "task_terminal", status: "completed", wal_seq: wal.at(-1)!.wal_seq });
  });

  it("Should stream the session's snapshot.updated events as its tasks change", async () => {
    const s = await session();

    const sub = s.observer.subscribeSession(s.sid, { afterSeq: 0 });
    const t = await newTask(s, [step("a", [], { required: false })]);
    const tid = t.split("/").pop()!;
    await s.orch.completeTask(t);
    const changes: string[] = [];
    for await (const e of sub) {
      expect(e).toMatchObject({ type: "snapshot.updated", sessionId: s.sid, taskId: tid, sequence: changes.length + 1 });
      changes.push(e.payload.change);
      if (e.payload.change === "terminal") sub.close();
    }
    expect(changes[0]).toBe("created");
    expect(changes.at(-1)).toBe("terminal");
    expect(sub.lastEventId).toBe(String(changes.length));
  });
});
