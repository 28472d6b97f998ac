/**
 * The session snapshot stays small and its reads flat however many tasks the session holds: a session of
 * 2,000 tasks seeded in the session object's storage answers under 64 KiB, every list within its cap, each
 * with the request that pages on to the rest, and reading it touches as many rows at 2,000 tasks as at 1,000.
 */
import { runInDurableObject, SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.js";
import { RECENT_TERMINAL, SNAPSHOT_ACTION_IDS, SNAPSHOT_BLOCKED_TASKS, SNAPSHOT_TASKS } from "../../durable-objects/session/session-snapshot.js";
import type { IndexEntry, SessionSnapshot } from "../../src/contract/index.js";
import { STEP_STATUSES, type TaskStatus } from "../../src/core/index.js";
import { type FetchLike, RuntimeClient } from "../../src/client/index.js";
import { call } from "../support/helpers.js";
import { BASE, bindings, expectOk, signClaims, uniqueId } from "../support/support.js";

const sid = uniqueId("big");
const stub = bindings.SESSIONS.get(bindings.SESSIONS.idFromName(sid));
/** Statuses of the seeded tasks in turn: a quarter each running with open actions, blocked, completed, pending. */
const MIX: TaskStatus[] = ["running", "blocked", "completed", "pending"];
const OPEN_ACTIONS = 12;
let observer = "";

/** Adds `count` tasks after the first `from`, with the longest titles, through the object's own index write. */
async function seed(from: number, count: number): Promise<void> {
  await runInDurableObject(stub, async (o: SessionObject, state) => {
    const stepCounts = Object.fromEntries(STEP_STATUSES.map((s) => [s, 0])) as IndexEntry["step_counts"];
    const pushes: Promise<void>[] = [];
    for (let i = from; i < from + count; i++) {
      const native = MIX[i % MIX.length]!;
      const taskId = `task_${String(i).padStart(6, "0")}`;
      const at = new Date(Date.parse("2026-01-01T00:00:00.000Z") + i * 1000).toISOString();
      const open = native === "running" ? OPEN_ACTIONS : 0;
      // Not awaited one by one: pushes that arrive together are written in one turn, as a busy session takes them.
      pushes.push(o.upsertTask({
        task_id: taskId, wal_name: `wal-${taskId}`, title: `${taskId} `.padEnd(200, "x"), native_status: native, status: native === "pending" ? "queued" : native,
        step_counts: { ...stepCounts, running: 2, pending: 3 }, total_steps: 5, active_runs: 2, lost_attempts: 0, terminal: native === "completed",
        created_at: at, updated_at: at, wal_seq: 3, next_deadline_at: null, open_action_count: open,
      }));
      for (let a = 0; a < open; a++) {
        state.storage.sql.exec("INSERT INTO actions (action_id, task_id, created_at, data) VALUES (?, ?, ?, '{}')", `act_${taskId}_${String(a).padStart(2, "0")}`, taskId, at);
      }
    }
    await Promise.all(pushes);
  });
}

/** Rows the snapshot read in the object's storage, and its body. */
async function measuredSnapshot(): Promise<{ rowsRead: number; body: SessionSnapshot }> {
  return runInDurableObject(stub, async (o: SessionObject, state) => {
    const sql = state.storage.sql;
    const exec = sql.exec;
    const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
    sql.exec = ((query: string, ...bindings: unknown[]) => {
      const cursor = exec.call(sql, query, ...bindings);
      cursors.push(cursor);
      return cursor;
    }) as typeof sql.exec;
    try {
      const body = (await o.snapshot())!;
      return { rowsRead: cursors.reduce((n, c) => n + c.rowsRead, 0), body };
    } finally {
      sql.exec = exec;
    }
  });
}

beforeAll(async () => {
  await runInDurableObject(stub, (o: SessionObject) => o.create(sid, "2026-01-01T00:00:00.000Z", {}, { agent_id: "orch", run_id: "orun_1" }, 3600, null));
  const now = Math.floor(Date.now() / 1000);
  observer = await signClaims({ role: "observer", sid, sub: "observer", run: null, iat: now, exp: now + 3600 });
}, 60_000);

describe("the session snapshot of a large session", () => {
  it("Should read as many rows at 2,000 tasks as at 1,000, answer under 64 KiB and keep every list within its cap", async () => {
    await seed(0, 1_000);
    const atThousand = await measuredSnapshot();
    await seed(1_000, 1_000);
    const atTwoThousand = await measuredSnapshot();
    expect(atTwoThousand.rowsRead).toBe(atThousand.rowsRead);
    expect(atTwoThousand.rowsRead).toBeLessThan(1_000);

    const res = await call("GET", `/v1/sessions/${sid}`, observer);
    const body = expectOk<SessionSnapshot>(res);
    expect(new TextEncoder().encode(JSON.stringify(body)).length).toBeLessThan(64 * 1024);
    expect(body.task_summary).toMatchObject({ active: 1_500, terminal: 500, blocked: 500, waiting: 1_000, open_actions: 500 * OPEN_ACTIONS });
    expect(body.tasks).toHaveLength(SNAPSHOT_TASKS);
    expect(body.tasks.map((t) => t.taskId)).toEqual(atTwoThousand.body.tasks.map((t) => t.taskId));
    expect(body.blockedTasks).toHaveLength(SNAPSHOT_BLOCKED_TASKS);
    expect(body.blockedTasks.every((b) => b.actionIds.length <= SNAPSHOT_ACTION_IDS)).toBe(true);
    expect(body.blockedTasks[0]!.actionIds).toHaveLength(SNAPSHOT_ACTION_IDS);
    expect(body.task_summary.recent_terminal).toHaveLength(RECENT_TERMINAL);
    expect(body.taskSummary.recentTerminal.map((t) => t.taskId)).toEqual(["task_001998", "task_001994", "task_001990", "task_001986", "task_001982", "task_001978", "task_001974", "task_001970", "task_001966", "task_001962"]);
    expect(body.pages.tasks).toMatchObject({ listed: SNAPSHOT_TASKS, total: 1_500 });
    expect(body.pages.recentTerminal).toMatchObject({ listed: RECENT_TERMINAL, total: 500 });
  });

  it("Should page on through the live tasks and the terminal ones with the task list route its pages name", async () => {
    const body = expectOk<SessionSnapshot>(await call("GET", `/v1/sessions/${sid}`, observer));
    const live = expectOk(await call("GET", body.pages.tasks.next!, observer));
    expect(live.tasks[0].task_id).toBe("task_000067"); // the 51st live task (every fourth one is terminal)
    const terminal = expectOk(await call("GET", body.pages.recentTerminal.next!, observer));
    expect(terminal.tasks[0].task_id).toBe("task_001958");
  });

  it("Should page on through every held-up task with blocked_after, each once", async () => {
    const seen: string[] = [];
    let path: string | null = `/v1/sessions/${sid}`;
    let pages = 0;
    while (path !== null) {
      const body: SessionSnapshot = expectOk<SessionSnapshot>(await call("GET", path, observer));
      expect(body.blockedTasks.length).toBeLessThanOrEqual(SNAPSHOT_BLOCKED_TASKS);
      expect(body.pages.blockedTasks.total).toBe(1_000);
      seen.push(...body.blockedTasks.map((b) => b.taskId));
      path = body.pages.blockedTasks.next;
      pages += 1;
    }
    expect(pages).toBe(1_000 / SNAPSHOT_BLOCKED_TASKS);
    expect(new Set(seen).size).toBe(1_000);
    expect(seen).toEqual([...seen].sort());
  });

  it("Should read the next page of held-up tasks through the SDK's getSession with blocked_after", async () => {
    const sdk = new RuntimeClient({ baseUrl: BASE, token: observer, fetch: SELF.fetch.bind(SELF) as FetchLike });
    const first = await sdk.getSession(sid);
    const next = new URL(first.pages.blockedTasks.next!, BASE);
    const second = await sdk.getSession(sid, { blocked_after: Number(next.searchParams.get("blocked_after")) });
    expect(second.blockedTasks).toHaveLength(SNAPSHOT_BLOCKED_TASKS);
    expect(second.blockedTasks[0]!.taskId > first.blockedTasks.at(-1)!.taskId).toBe(true);
    expect(second.blockedTasks.map((b) => b.taskId)).toEqual(expectOk<SessionSnapshot>(await call("GET", next.pathname + next.search, observer)).blockedTasks.map((b) => b.taskId));
  });
});
