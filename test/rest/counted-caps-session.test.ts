/**
 * The counted caps a session object holds (docs/limits.md "Counted caps"), at their defaults: tasks per session
 * (MAX_TASKS_PER_SESSION, 100,000), tasks per A2A client (MAX_TASKS_PER_A2A_CLIENT, 10,000) and links per task
 * (MAX_LINKS_PER_TASK, 1,000). Each is accepted at its limit and refused one past it with 409 limit_exceeded
 * {limit, value, setting}, writing nothing, through every surface that reaches it. The session's rows are filled
 * to one below the limit first (see fillTaskRows).
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { call, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { rpc } from "../support/a2a-clients.js";
import { mintRole } from "../support/support.js";
import { expectLimitExceeded, fillTaskRows, sessionStub, type SurfaceAnswer, through, type Write } from "../support/surfaces.js";

const TASKS_PER_SESSION = 100_000;
const TASKS_PER_A2A_CLIENT = 10_000;
const LINKS_PER_TASK = 1_000;

/** agent.task_create of a one-step task `taskId`, by REST or MCP. */
function createTask(s: TestSession, taskId: string): Write {
  const body = { task_id: taskId, wal_name: taskId, title: `Task ${taskId}`, summary: "", steps: [step("a")] };
  return { method: "POST", path: `/v1/sessions/${s.sid}/tasks`, body, tool: "agent.task_create", args: body };
}

/** A2A SendMessage of a new message (a new task), answered at once. */
function sendMessage(token: string, words: string) {
  return rpc(token, { jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: words }] }, configuration: { returnImmediately: true } } });
}

/** An A2A refusal of a counted cap: -32602 with reason LIMIT_EXCEEDED and the details as metadata. */
function expectA2aLimit(answer: { status: number; body: any }, details: { limit: number; value: number; setting: string }): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  expect(answer.body.error.code).toBe(-32602);
  const info = answer.body.error.data.find((d: any) => d.reason === "LIMIT_EXCEEDED");
  expect(info, JSON.stringify(answer.body.error)).toBeDefined();
  expect(info.metadata).toEqual({ limit: String(details.limit), value: String(details.value), setting: details.setting });
}

/** Rows in the session's task index. */
async function taskRows(sid: string): Promise<number> {
  return runInDurableObject(sessionStub(sid), (_i, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM tasks").one().n);
}

describe("tasks per session (MAX_TASKS_PER_SESSION, default 100,000)", { timeout: 60_000 }, () => {
  it.each(["rest", "mcp"] as const)("Should create the 100,000th task and refuse the next through %s, writing nothing", async (surface) => {
    const s = await newSession();
    await fillTaskRows(s.sid, TASKS_PER_SESSION - 1);
    const last: SurfaceAnswer = await through(surface, "", s.orch, createTask(s, "last"));
    expect(last.ok, JSON.stringify(last.body)).toBe(true);
    expect(await taskRows(s.sid)).toBe(TASKS_PER_SESSION);
    expectLimitExceeded(await through(surface, "", s.orch, createTask(s, "over")), { limit: TASKS_PER_SESSION, value: TASKS_PER_SESSION + 1, setting: "MAX_TASKS_PER_SESSION" });
    expect(await taskRows(s.sid)).toBe(TASKS_PER_SESSION);
    expect((await call("GET", `/v1/sessions/${s.sid}/tasks/over`, s.orch)).status).toBe(404);
  });

  it("Should submit the 100,000th task over A2A and refuse the next, writing nothing", async () => {
    const s = await newSession();
    const client = await mintRole(s, "a2a_client", "partner");
    await fillTaskRows(s.sid, TASKS_PER_SESSION - 1);
    const last = await sendMessage(client, "The last one");
    expect(last.body.result?.task?.id, JSON.stringify(last.body)).toEqual(expect.any(String));
    expectA2aLimit(await sendMessage(client, "One too many"), { limit: TASKS_PER_SESSION, value: TASKS_PER_SESSION + 1, setting: "MAX_TASKS_PER_SESSION" });
    expect(await taskRows(s.sid)).toBe(TASKS_PER_SESSION);
  });

  it("Should count again after a refused create freed its reservation", async () => {
    const s = await newSession();
    await fillTaskRows(s.sid, TASKS_PER_SESSION - 2);
    // A create the task object refuses (a dependency on no step) releases the id it reserved.
    const bad = { ...createTask(s, "bad"), body: { task_id: "bad", wal_name: "bad", title: "Bad", summary: "", steps: [step("a", ["nowhere"])] } };
    expect((await through("rest", "", s.orch, bad)).ok).toBe(false);
    expect((await through("rest", "", s.orch, createTask(s, "one"))).ok).toBe(true);
    expect((await through("rest", "", s.orch, createTask(s, "two"))).ok).toBe(true);
    expectLimitExceeded(await through("rest", "", s.orch, createTask(s, "three")), { limit: TASKS_PER_SESSION, value: TASKS_PER_SESSION + 1, setting: "MAX_TASKS_PER_SESSION" });
  });
});

describe("tasks per A2A client (MAX_TASKS_PER_A2A_CLIENT, default 10,000)", { timeout: 60_000 }, () => {
  // An a2a_client token speaks A2A only (REST and MCP refuse it), so A2A is the one surface that reaches this cap.
  it("Should take the client's 10,000th task over A2A and refuse its next, while another client and the orchestrator go on", async () => {
    const s = await newSession();
    const client = await mintRole(s, "a2a_client", "partner");
    await fillTaskRows(s.sid, TASKS_PER_A2A_CLIENT - 1, "partner");
    const last = await sendMessage(client, "The last one");
    expect(last.body.result?.task?.id, JSON.stringify(last.body)).toEqual(expect.any(String));
    const rows = await taskRows(s.sid);
    expectA2aLimit(await sendMessage(client, "One too many"), { limit: TASKS_PER_A2A_CLIENT, value: TASKS_PER_A2A_CLIENT + 1, setting: "MAX_TASKS_PER_A2A_CLIENT" });
    expect(await taskRows(s.sid)).toBe(rows);
    const other = await mintRole(s, "a2a_client", "someone-else");
    expect((await sendMessage(other, "Mine")).body.result?.task?.id).toEqual(expect.any(String));
    expect((await through("rest", "", s.orch, createTask(s, "orchestrated"))).ok).toBe(true);
  });
});

describe("links per task (MAX_LINKS_PER_TASK, default 1,000)", { timeout: 60_000 }, () => {
  /** Puts `count` stand-in evidence links from `from` (ids `lnk_fill_…`), the first `removed` of them removed. */
  async function fillLinks(sid: string, from: string, count: number, removed = 0): Promise<void> {
    await runInDurableObject(sessionStub(sid), (_i, state) => {
      state.storage.sql.exec(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
         INSERT INTO links (link_id, kind, from_task_id, to_task_id, ref, status, reason, created_at, updated_at, created_by, metadata)
         SELECT 'lnk_fill_' || i, 'evidence', ?, NULL, 'ref-' || i, CASE WHEN i <= ? THEN 'removed' ELSE 'active' END, NULL, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 'orchestrator', NULL FROM n`,
        count, from, removed,
      );
    });
  }
  const link = (s: TestSession, body: Record<string, unknown>): Write => ({ method: "POST", path: `/v1/sessions/${s.sid}/links`, body, tool: "link_tasks", args: body });
  async function linkCount(sid: string): Promise<number> {
    return runInDurableObject(sessionStub(sid), (_i, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM links").one().n);
  }

  it.each(["rest", "mcp"] as const)("Should make a task's 1,000th link and refuse the next through %s, removed links counted, writing nothing", async (surface) => {
    const s = await newSession();
    for (const id of ["a", "b", "c"]) await newTask(s, id, [step("x")]);
    await fillLinks(s.sid, "a", LINKS_PER_TASK - 1, 10);
    const last = await through(surface, "", s.orch, link(s, { kind: "source_task", from_task_id: "a", to_task_id: "b" }));
    expect(last.ok, JSON.stringify(last.body)).toBe(true);
    const count = await linkCount(s.sid);
    const details = { limit: LINKS_PER_TASK, value: LINKS_PER_TASK + 1, setting: "MAX_LINKS_PER_TASK" };
    expectLimitExceeded(await through(surface, "", s.orch, link(s, { kind: "source_task", from_task_id: "a", to_task_id: "c" })), details);
    // Its other end counts too: a link into a full task is refused.
    expectLimitExceeded(await through(surface, "", s.orch, link(s, { kind: "blocks", from_task_id: "c", to_task_id: "a" })), details);
    expect(await linkCount(s.sid)).toBe(count);
    // The same live link again is answered as it is, not counted.
    expect((await through(surface, "", s.orch, link(s, { kind: "source_task", from_task_id: "a", to_task_id: "b" }))).ok).toBe(true);
    // Links between other tasks are not held up.
    expect((await through(surface, "", s.orch, link(s, { kind: "source_task", from_task_id: "b", to_task_id: "c" }))).ok).toBe(true);
  });
});
