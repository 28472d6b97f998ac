/**
 * The session's reads cost their page, not the session: the rows SQLite reads for a task list page (with and
 * without terminal tasks), a graph page, an A2A ListTasks page and the snapshot are the same in a session of 3,000
 * tasks as in one of 300. Measured with the storage cursor's own count of rows read, so a query that starts walking
 * the whole table (a lost index, a plan that sorts every row) fails here.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object.js";
import { call, newSession, newTask, step } from "../support/helpers.js";
import { bindings, eventually } from "../support/support.js";

const sessionStub = (sid: string) => bindings.SESSIONS.get(bindings.SESSIONS.idFromName(sid));

type Reads = Record<"list" | "listWithTerminal" | "listLastPage" | "graph" | "submitted" | "snapshot", number>;

/** A session of one real task (live, an A2A client's) and one completed task, and `seeded` index rows copied from the live one. */
async function sessionOf(seeded: number): Promise<string> {
  const s = await newSession();
  await newTask(s, "live", [step("a")]);
  const done = await newTask(s, "done", [step("a")]);
  expect((await call("POST", `${done}/cancel`, s.orch, { reason: "not needed" })).status).toBe(200);
  await eventually(async () => expect((await call("GET", `/v1/sessions/${s.sid}/tasks?include_terminal=true&limit=5`, s.orch)).body.total).toBe(2));
  await runInDurableObject(sessionStub(s.sid), async (o: SessionObject, state) => {
    // The seeded rows are one client's, so ListTasks has many to page through.
    state.storage.sql.exec("UPDATE tasks SET origin_client_agent_id = 'client-a' WHERE task_id = 'live'");
    const result = await o.benchSeed("live", seeded, "seeded-");
    expect(result.ok).toBe(true);
    state.storage.sql.exec("UPDATE tasks SET origin_client_agent_id = 'client-a' WHERE task_id LIKE 'seeded-%'");
  });
  return s.sid;
}

/** The rows each read of the session object made SQLite read. */
async function readsOf(sid: string): Promise<Reads> {
  return runInDurableObject(sessionStub(sid), async (o: SessionObject, state) => {
    const sql = state.storage.sql as SqlStorage & { exec: SqlStorage["exec"] };
    const exec = sql.exec.bind(sql);
    let cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
    sql.exec = ((query: string, ...args: unknown[]) => {
      const cursor = exec(query, ...args);
      cursors.push(cursor);
      return cursor;
    }) as SqlStorage["exec"];
    const rowsRead = async (read: () => Promise<unknown>) => {
      cursors = [];
      await read();
      return cursors.reduce((n, c) => n + c.rowsRead, 0);
    };
    try {
      const total = (await o.listTasks({ include_terminal: true, limit: 1 })).total;
      return {
        list: await rowsRead(() => o.listTasks({ limit: 50 })),
        listWithTerminal: await rowsRead(() => o.listTasks({ include_terminal: true, limit: 50 })),
        listLastPage: await rowsRead(() => o.listTasks({ include_terminal: true, limit: 1, offset: total - 1 })),
        graph: await rowsRead(() => o.taskGraph({ limit: 100 })),
        submitted: await rowsRead(() => o.listSubmittedTasks({ client_agent_id: "client-a", page_size: 50 })),
        snapshot: await rowsRead(() => o.snapshot()),
      };
    } finally {
      sql.exec = exec;
    }
  });
}

describe("the cost of the session's reads", () => {
  it("Should read as many rows for a page of a 3,000-task session as for one of 300", async () => {
    const small = await readsOf(await sessionOf(300));
    const large = await readsOf(await sessionOf(3_000));
    for (const read of ["list", "listWithTerminal", "graph", "snapshot"] as const) {
      expect(large[read], `${read}: ${JSON.stringify({ small: small[read], large: large[read] })}`).toBeLessThanOrEqual(small[read] + 5);
      expect(large[read], read).toBeLessThan(600);
    }
    // The last page by offset reads its row; ListTasks reads its page by keyset and counts the client's tasks on the
    // tasks_by_origin index (its total_size), never the session's other rows.
    expect(large.listLastPage).toBeLessThanOrEqual(small.listLastPage + 5);
    expect(large.submitted).toBeLessThan(3_000 + 100);
  });
});
