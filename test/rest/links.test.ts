/**
 * Service tests of the session's task graph: link_tasks / unlink_tasks (POST and DELETE /v1/sessions/{sid}/links),
 * the graph read, and blocks links holding their blocked task until the blocker completes, pushed to the task
 * object through the session's outbox.
 */
import { env, evictDurableObject, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { RuntimeClient } from "../../src/client/index.js";
import type { Env } from "../../durable-objects/shared/env.js";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { type ClientKind, connectMcp, expectToolError, toolAnswer } from "../support/mcp-clients.js";
import { BASE, expectError, expectOk, expectRefusedWritingNothing, mintRole, rejection, uniqueId, walExport, walOf } from "../support/support.js";

const bindings = env as unknown as Env;

function sessionStub(s: TestSession) {
  return bindings.SESSIONS.get(bindings.SESSIONS.idFromName(s.sid));
}

const linksPath = (s: TestSession) => `/v1/sessions/${s.sid}/links`;
const link = (s: TestSession, body: unknown, token = s.orch, headers: Record<string, string> = {}) => call("POST", linksPath(s), token, body, headers);
const unlink = (s: TestSession, linkId: string, token = s.orch) => call("DELETE", `${linksPath(s)}/${linkId}`, token);
const graph = (s: TestSession, query = "", token = s.orch) => call("GET", `/v1/sessions/${s.sid}/graph${query}`, token);

/** A session with tasks of one step each, by id. */
async function sessionWith(...taskIds: string[]): Promise<{ s: TestSession; paths: Record<string, string> }> {
  const s = await newSession();
  const paths: Record<string, string> = {};
  for (const id of taskIds) paths[id] = await newTask(s, id, [step("only")]);
  return { s, paths };
}

/** The task's blockers as its own record says (GET .../tasks/{tid}). */
async function blockedByOf(s: TestSession, taskPath: string): Promise<string[]> {
  return expectOk(await call("GET", taskPath, s.orch)).task.blocked_by;
}

/** Waits until the graph shows the task with this normalized status (index entries follow their task object's commits). */
async function untilNodeStatus(s: TestSession, taskId: string, status: string): Promise<void> {
  await vi.waitFor(async () => expect(expectOk(await graph(s)).nodes.find((n: { task_id: string }) => n.task_id === taskId)?.status).toBe(status));
}

/** Drives a one-step task to completed: a worker claims and completes its step, then the orchestrator completes it. */
async function completeTask(s: TestSession, taskPath: string): Promise<void> {
  const worker = await dispatch(s, taskPath);
  expectOk(await call("POST", `${taskPath}/steps/only/claim`, worker.token, {}));
  expectOk(await call("POST", `${taskPath}/steps/only/status`, worker.token, { status: "completed", result_summary: "done" }));
  expectOk(await call("POST", `${taskPath}/complete`, s.orch, {}));
}

describe("link_tasks and unlink_tasks", () => {
  it("Should create a link of every kind with its times, status and reason, answer a repeat with the same link, and keep a removed tombstone", async () => {
    const { s } = await sessionWith("a", "b");
    const bodies = [
      { kind: "parent_child", from_task_id: "a", to_task_id: "b" },
      { kind: "blocks", from_task_id: "a", to_task_id: "b", reason: "b needs a's outline" },
      { kind: "source_task", from_task_id: "b", to_task_id: "a" },
      { kind: "source_attempt", from_task_id: "b", to_task_id: "a", ref: "att_01jabc" },
      { kind: "produced_artifact", from_task_id: "a", ref: "r2://outline.md" },
      { kind: "consumed_artifact", from_task_id: "b", to_task_id: "a", ref: "r2://outline.md" },
      { kind: "evidence", from_task_id: "a", ref: "trace://run-1" },
    ];
    for (const body of bodies) {
      const created = expectOk(await link(s, body), 201).link;
      expect(created).toMatchObject({ kind: body.kind, from_task_id: body.from_task_id, to_task_id: body.to_task_id ?? null, ref: body.ref ?? null, status: "active", reason: body.reason ?? null, implicit: false, created_by: "orchestrator" });
      expect(created.link_id).toMatch(/^lnk_[0-9a-z]{26}$/);
      expect(created.created_at).toBe(created.updated_at);
      // The same edge again is the same link, not a second one.
      const again = expectOk(await link(s, body), 200).link;
      expect(again).toEqual(created);
      const removed = expectOk(await unlink(s, created.link_id)).link;
      expect(removed).toMatchObject({ link_id: created.link_id, kind: body.kind, status: "removed" });
      expect(Date.parse(removed.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.created_at));
      // Removing it again changes nothing; linking it again makes a new link.
      expect(expectOk(await unlink(s, created.link_id)).link).toEqual(removed);
      const relinked = expectOk(await link(s, body), 201).link;
      expect(relinked.link_id).not.toBe(created.link_id);
    }
    const edges = expectOk(await graph(s)).edges.filter((e: { implicit: boolean }) => !e.implicit);
    expect(edges).toHaveLength(bodies.length);
    expect(edges.every((e: { status: string }) => e.status === "active")).toBe(true);
  });

  it("Should refuse bodies that do not make an edge with 400 validation_error", async () => {
    const { s } = await sessionWith("a", "b");
    for (const body of [
      { kind: "blocks", from_task_id: "a" },
      { kind: "parent_child", from_task_id: "a" },
      { kind: "source_attempt", from_task_id: "a", to_task_id: "b" },
      { kind: "evidence", from_task_id: "a" },
      { kind: "blocks", from_task_id: "a", to_task_id: "a" },
      { kind: "spawned_subagent", from_task_id: "a", to_task_id: "b" },
      { kind: "blocks", from_task_id: "a", to_task_id: "b", colour: "red" },
      { kind: "evidence", from_task_id: "a", ref: "x".repeat(513) },
      { kind: "blocks", from_task_id: "A B", to_task_id: "b" },
    ]) {
      expectError(await link(s, body), 400, "validation_error");
    }
    expectError(await link(s, "not json"), 400, "validation_error");
    expectError(await unlink(s, "not-a-link"), 400, "validation_error");
    expect(expectOk(await graph(s)).edges).toEqual([]);
  });

  it("Should answer 404 not_found for a task or link the session does not have", async () => {
    const { s } = await sessionWith("a");
    expectError(await link(s, { kind: "blocks", from_task_id: "a", to_task_id: "ghost" }), 404, "not_found");
    expectError(await link(s, { kind: "blocks", from_task_id: "ghost", to_task_id: "a" }), 404, "not_found");
    expectError(await link(s, { kind: "evidence", from_task_id: "ghost", ref: "trace://1" }), 404, "not_found");
    expectError(await unlink(s, `lnk_${"0".repeat(26)}`), 404, "not_found");
    // A task of another session is not this session's.
    const other = await sessionWith("b");
    expectError(await link(s, { kind: "blocks", from_task_id: "a", to_task_id: "b" }), 404, "not_found");
    expect(expectOk(await graph(other.s)).edges).toEqual([]);
  });

  it("Should let only the orchestrator link and unlink (403), and every session token but a worker's read the graph", async () => {
    const { s, paths } = await sessionWith("a", "b");
    const made = expectOk(await link(s, { kind: "source_task", from_task_id: "b", to_task_id: "a" }), 201).link;
    const worker = (await dispatch(s, paths.a!)).token;
    const approver = await mintRole(s, "approver");
    for (const token of [worker, s.observer, approver]) {
      expectError(await link(s, { kind: "blocks", from_task_id: "a", to_task_id: "b" }, token), 403, "tool_not_available");
      expectError(await unlink(s, made.link_id, token), 403, "tool_not_available");
      if (token !== worker) expect(expectOk(await graph(s, "", token)).edges).toEqual([expect.objectContaining({ link_id: made.link_id, status: "active" })]);
    }
    // A worker's token reads only its own task: the session's graph is outside it.
    expectError(await graph(s, "", worker), 403, "permission_denied");
    // Another session's orchestrator is refused too.
    const stranger = await newSession();
    expectError(await link(s, { kind: "blocks", from_task_id: "a", to_task_id: "b" }, stranger.orch), 403, "permission_denied");
  });

  it("Should answer a repeat with the same Idempotency-Key as the first time, and the key with another body 422 idempotency_conflict", async () => {
    const { s } = await sessionWith("a", "b");
    const key = { "idempotency-key": uniqueId("key") };
    const first = await link(s, { kind: "blocks", from_task_id: "a", to_task_id: "b" }, s.orch, key);
    expect(first.status).toBe(201);
    const repeat = await link(s, { kind: "blocks", from_task_id: "a", to_task_id: "b" }, s.orch, key);
    expect(repeat.status).toBe(201);
    expect(repeat.body.link).toEqual(first.body.link);
    expectError(await link(s, { kind: "blocks", from_task_id: "b", to_task_id: "a" }, s.orch, key), 422, "idempotency_conflict");
    expect(expectOk(await graph(s)).edges).toHaveLength(1);
  });
});

describe("blocks links", () => {
  it("Should refuse a blocks link that closes a cycle with 409 dependency_cycle, writing nothing", async () => {
    const { s, paths } = await sessionWith("a", "b", "c");
    expectOk(await link(s, { kind: "blocks", from_task_id: "a", to_task_id: "b" }), 201);
    expectOk(await link(s, { kind: "blocks", from_task_id: "b", to_task_id: "c" }), 201);
    // The held tasks' index entries settle (blocked) before the graph is compared.
    for (const id of ["b", "c"]) await untilNodeStatus(s, id, "blocked");
    const before = expectOk(await graph(s));
    const walsBefore = await Promise.all(["a", "b", "c"].map((id) => walExport(paths[id]!, s.orch)));
    await expectRefusedWritingNothing(paths.a!, s.orch, () => link(s, { kind: "blocks", from_task_id: "c", to_task_id: "a" }), 409, "dependency_cycle");
    await expectRefusedWritingNothing(paths.a!, s.orch, () => link(s, { kind: "blocks", from_task_id: "b", to_task_id: "a" }), 409, "dependency_cycle");
    expect(expectOk(await graph(s))).toEqual(before);
    expect(await Promise.all(["a", "b", "c"].map((id) => walExport(paths[id]!, s.orch)))).toEqual(walsBefore);
    // Other kinds are not dependencies: a source_task edge back is fine.
    expectOk(await link(s, { kind: "source_task", from_task_id: "c", to_task_id: "a" }), 201);
  });

  it("Should hold the blocked task (no dispatch: 409 task_not_dispatchable) until its blocker completes, then let it dispatch", async () => {
    const { s, paths } = await sessionWith("a", "b");
    const made = expectOk(await link(s, { kind: "blocks", from_task_id: "a", to_task_id: "b" }), 201).link;
    expect(made.status).toBe("active");
    expect(await blockedByOf(s, paths.b!)).toEqual(["a"]);
    await expectRefusedWritingNothing(paths.b!, s.orch, () => call("POST", `${paths.b}/workers`, s.orch, {}), 409, "task_not_dispatchable");
    expect((await call("POST", `${paths.b}/workers`, s.orch, {})).body.error.details).toEqual({ blocked_by: ["a"] });
    // The blocked task shows as blocked in the graph, natively still running (its step is ready).
    await vi.waitFor(async () => expect(expectOk(await graph(s)).nodes.find((n: { task_id: string }) => n.task_id === "b")).toMatchObject({ status: "blocked", native_status: "running" }));
    await completeTask(s, paths.a!);
    await vi.waitFor(async () => expect(await blockedByOf(s, paths.b!)).toEqual([]));
    expectOk(await call("POST", `${paths.b}/workers`, s.orch, {}), 201);
    const edge = expectOk(await graph(s)).edges.find((e: { link_id: string }) => e.link_id === made.link_id);
    expect(edge.status).toBe("resolved");
    const facts = (await walOf(paths.b!, s.orch)).filter((e) => e.event_type === "task_blockers_updated");
    expect(facts.map((e) => ({ payload: e.payload, actor: e.actor_agent_id }))).toEqual([
      { payload: { version: 1, blocked_by: ["a"] }, actor: "system" },
      { payload: { version: 2, blocked_by: [] }, actor: "system" },
    ]);
  });

  it("Should refuse a claim by a worker of the blocked task, and allow it once the link is removed", async () => {
    const { s, paths } = await sessionWith("a", "b");
    const worker = await dispatch(s, paths.b!);
    const made = expectOk(await link(s, { kind: "blocks", from_task_id: "a", to_task_id: "b" }), 201).link;
    await expectRefusedWritingNothing(paths.b!, s.orch, () => call("POST", `${paths.b}/steps/only/claim`, worker.token, {}), 409, "task_not_dispatchable");
    await expectRefusedWritingNothing(paths.b!, s.orch, () => call("POST", `${paths.b}/steps/claim-next`, worker.token, {}), 409, "task_not_dispatchable");
    expectOk(await unlink(s, made.link_id));
    expect(await blockedByOf(s, paths.b!)).toEqual([]);
    expectOk(await call("POST", `${paths.b}/steps/only/claim`, worker.token, {}));
  });

  it("Should keep a blocks link active while its blocker is failed or cancelled (only completion satisfies it)", async () => {
    const { s, paths } = await sessionWith("a", "b");
    const made = expectOk(await link(s, { kind: "blocks", from_task_id: "a", to_task_id: "b" }), 201).link;
    expectOk(await call("POST", `${paths.a}/cancel`, s.orch, {}));
    await vi.waitFor(async () => expect(expectOk(await graph(s)).nodes.find((n: { task_id: string }) => n.task_id === "a").native_status).toBe("cancelled"));
    expect(expectOk(await graph(s)).edges.find((e: { link_id: string }) => e.link_id === made.link_id).status).toBe("active");
    expect(await blockedByOf(s, paths.b!)).toEqual(["a"]);
    expectError(await call("POST", `${paths.b}/workers`, s.orch, {}), 409, "task_not_dispatchable");
  });

  it("Should make a blocks link from a completed task resolved at once, holding nothing", async () => {
    const { s, paths } = await sessionWith("a", "b");
    await completeTask(s, paths.a!);
    await vi.waitFor(async () => expect(expectOk(await graph(s)).nodes.find((n: { task_id: string }) => n.task_id === "a").native_status).toBe("completed"));
    expect(expectOk(await link(s, { kind: "blocks", from_task_id: "a", to_task_id: "b" }), 201).link.status).toBe("resolved");
    expect(await blockedByOf(s, paths.b!)).toEqual([]);
    expectOk(await call("POST", `${paths.b}/workers`, s.orch, {}), 201);
    expect((await walOf(paths.b!, s.orch)).some((e) => e.event_type === "task_blockers_updated")).toBe(false);
  });

  it("Should re-send an unacknowledged blocker push from the session's alarm after the session object restarts", async () => {
    const { s, paths } = await sessionWith("a", "b");
    // A push stored but never acknowledged (the object stopped before its task object answered).
    await runInDurableObject(sessionStub(s), (_instance, state) => {
      state.storage.sql.exec("INSERT INTO blocker_pushes (task_id, version, blocked_by, acknowledged, attempts, next_attempt_ms) VALUES ('b', 7, '[\"a\"]', 0, 0, ?)", Date.now());
    });
    await evictDurableObject(sessionStub(s));
    // The restarted object armed its alarm for the push; running it delivers the push.
    expect(await runDurableObjectAlarm(sessionStub(s))).toBe(true);
    expect(await blockedByOf(s, paths.b!)).toEqual(["a"]);
    const facts = (await walOf(paths.b!, s.orch)).filter((e) => e.event_type === "task_blockers_updated");
    expect(facts.map((e) => e.payload)).toEqual([{ version: 7, blocked_by: ["a"] }]);
    const row = await runInDurableObject(sessionStub(s), (_instance, state) => state.storage.sql.exec("SELECT version, acknowledged FROM blocker_pushes WHERE task_id = 'b'").one());
    expect(row).toEqual({ version: 7, acknowledged: 1 });
    // Sending the same version again writes nothing.
    await runInDurableObject(sessionStub(s), (_instance, state) => {
      state.storage.sql.exec("UPDATE blocker_pushes SET acknowledged = 0 WHERE task_id = 'b'");
    });
    const before = await walExport(paths.b!, s.orch);
    await evictDurableObject(sessionStub(s));
    expect(await runDurableObjectAlarm(sessionStub(s))).toBe(true);
    expect(await walExport(paths.b!, s.orch)).toBe(before);
  });
});

describe("the session's task graph", () => {
  it("Should page the session's tasks by task_id with their explicit links and the implicit parent_child edges", async () => {
    const s = await newSession();
    await newTask(s, "root", [step("only")]);
    await newTask(s, "child1", [step("only")], { parent_task_id: "root", root_task_id: "root" });
    await newTask(s, "child2", [step("only")], { parent_task_id: "root", root_task_id: "root" });
    await newTask(s, "grandchild", [step("only")], { parent_task_id: "child1", root_task_id: "root" });
    await newTask(s, "other", [step("only")]);
    const made = expectOk(await link(s, { kind: "blocks", from_task_id: "child1", to_task_id: "child2" }), 201).link;
    // child2's index entry says blocked once its task object recorded the push.
    await untilNodeStatus(s, "child2", "blocked");
    const nodes: { task_id: string; parent_task_id: string | null }[] = [];
    const edges: { kind: string; from_task_id: string; to_task_id: string; implicit: boolean; link_id: string | null; status: string }[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { nodes: typeof nodes; edges: typeof edges; next_cursor: string | null } = expectOk(await graph(s, `?limit=2${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`));
      expect(page.nodes.length).toBeLessThanOrEqual(2);
      // Every edge of a page leaves one of its nodes.
      for (const e of page.edges) expect(page.nodes.map((n) => n.task_id)).toContain(e.from_task_id);
      nodes.push(...page.nodes);
      edges.push(...page.edges);
      cursor = page.next_cursor;
      pages += 1;
    } while (cursor !== null);
    expect(pages).toBe(3);
    expect(nodes.map((n) => n.task_id)).toEqual(["child1", "child2", "grandchild", "other", "root"]);
    expect(nodes.find((n) => n.task_id === "grandchild")).toMatchObject({ parent_task_id: "child1", root_task_id: "root", status: "running", native_status: "running", terminal: false });
    const implicit = edges.filter((e) => e.implicit).map((e) => `${e.kind}:${e.from_task_id}->${e.to_task_id}`).sort();
    expect(implicit).toEqual(["parent_child:child1->grandchild", "parent_child:root->child1", "parent_child:root->child2"]);
    for (const e of edges.filter((e) => e.implicit)) expect(e).toMatchObject({ link_id: null, status: expect.any(String) });
    expect(edges.filter((e) => !e.implicit)).toEqual([expect.objectContaining({ link_id: made.link_id, kind: "blocks", from_task_id: "child1", to_task_id: "child2", status: "active" })]);
    // child2 is held by child1: its implicit edge from root shows its normalized status.
    expect(edges.find((e) => e.implicit && e.to_task_id === "child2")!.status).toBe("blocked");
  });

  it("Should show a task's source_task relationships as implicit edges and refuse a cursor it did not give (400)", async () => {
    const s = await newSession();
    await newTask(s, "first", [step("only")]);
    await newTask(s, "second", [step("only")], { relationships: [{ kind: "source_task", task_id: "first" }] });
    const page = expectOk(await graph(s));
    expect(page.edges).toEqual([expect.objectContaining({ kind: "source_task", from_task_id: "second", to_task_id: "first", implicit: true, link_id: null })]);
    expect(page.next_cursor).toBeNull();
    expectError(await graph(s, "?cursor=bm90LWEtY3Vyc29y"), 400, "validation_error");
    expectError(await graph(s, "?limit=0"), 400, "validation_error");
    expectError(await graph(s, "?limit=1001"), 400, "validation_error");
  });
});

describe.each(["modern", "legacy"] as ClientKind[])("the task graph over MCP (%s client)", (kind) => {
  it("Should link, read the graph and unlink with link_tasks, task_graph and unlink_tasks, answering as REST does", async () => {
    const { s, paths } = await sessionWith("a", "b");
    const orch = await connectMcp(s.orch, kind);
    const made = toolAnswer(await orch.callTool({ name: "link_tasks", arguments: { kind: "blocks", from_task_id: "a", to_task_id: "b", reason: "b needs a" } })).link;
    expect(made).toMatchObject({ kind: "blocks", from_task_id: "a", to_task_id: "b", status: "active", reason: "b needs a" });
    expect(await blockedByOf(s, paths.b!)).toEqual(["a"]);
    expectToolError(await orch.callTool({ name: "link_tasks", arguments: { kind: "blocks", from_task_id: "b", to_task_id: "a" } }), "dependency_cycle", 409);
    const page = toolAnswer(await orch.callTool({ name: "task_graph", arguments: { limit: 1 } }));
    expect(page.nodes.map((n: { task_id: string }) => n.task_id)).toEqual(["a"]);
    expect(page.edges).toEqual([expect.objectContaining({ link_id: made.link_id })]);
    expect(toolAnswer(await orch.callTool({ name: "unlink_tasks", arguments: { link_id: made.link_id } })).link.status).toBe("removed");
    expect(await blockedByOf(s, paths.b!)).toEqual([]);
    // An observer reads the graph but has no link tools.
    const observer = await connectMcp(s.observer, kind);
    const names = (await observer.listTools()).tools.map((t) => t.name);
    expect(names).toContain("task_graph");
    expect(names).not.toContain("link_tasks");
    expectToolError(await observer.callTool({ name: "unlink_tasks", arguments: { link_id: made.link_id } }), "tool_not_available", 403);
    await Promise.all([orch.close(), observer.close()]);
  });
});

describe("the task graph in the client SDK", () => {
  it("Should link, page the graph and unlink with linkTasks, taskGraph and unlinkTasks", async () => {
    const { s, paths } = await sessionWith("a", "b", "c");
    const orch = new RuntimeClient({ baseUrl: BASE, token: s.orch, fetch: SELF.fetch.bind(SELF) });
    const { link: made } = await orch.linkTasks(s.sid, { kind: "blocks", from_task_id: "a", to_task_id: "b" });
    expect(made).toMatchObject({ kind: "blocks", status: "active" });
    expect(await blockedByOf(s, paths.b!)).toEqual(["a"]);
    const first = await orch.taskGraph(s.sid, { limit: 2 });
    expect(first.nodes.map((n) => n.task_id)).toEqual(["a", "b"]);
    const second = await orch.taskGraph(s.sid, { limit: 2, cursor: first.next_cursor! });
    expect(second).toMatchObject({ nodes: [expect.objectContaining({ task_id: "c" })], edges: [], next_cursor: null });
    expect((await orch.unlinkTasks(s.sid, made.link_id!)).link.status).toBe("removed");
    expect(await blockedByOf(s, paths.b!)).toEqual([]);
    expect((await rejection(orch.linkTasks(s.sid, { kind: "blocks", from_task_id: "a", to_task_id: "ghost" }))).code).toBe("not_found");
  });
});
