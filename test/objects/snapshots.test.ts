/**
 * Snapshots of a task object's state (durable-objects/task/storage/snapshot-store.ts): written with the commit that crosses
 * SNAPSHOT_EVERY_EVENTS (40 in this pool), restored on start with the WAL after them; a snapshot that is corrupt,
 * of another format or ahead of the WAL is ignored and the whole WAL replayed.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { expectOk, taskStub, walExport } from "../support/support.js";

/** A task whose WAL runs well past a few snapshot intervals: 30 steps completed one by one by one pooled worker. */
async function busyTask(s: TestSession, taskId: string): Promise<string> {
  const path = await newTask(s, taskId, Array.from({ length: 30 }, (_, i) => step(`s${i}`)));
  const w = await dispatch(s, path, { max_steps: 30 });
  for (let i = 0; i < 30; i++) {
    const claimed = expectOk(await call("POST", `${path}/steps/claim-next`, w.token));
    expectOk(await call("POST", `${path}/steps/${claimed.step.step_id}/status`, w.token, { status: "completed", result_summary: `done ${i}` }));
  }
  return path;
}

type Row = Record<string, SqlStorageValue>;
async function rows(sid: string, tid: string, query: string): Promise<Row[]> {
  return runInDurableObject(taskStub(sid, tid), async (_i, state) => state.storage.sql.exec<Row>(query).toArray());
}

/** The DAG as GET answers it, without what changes with time alone. */
async function dagOf(path: string, token: string): Promise<unknown> {
  const view = expectOk(await call("GET", path, token));
  return { ...view, snapshot: undefined };
}

describe("task snapshots", () => {
  it("Should write a snapshot with the commit that crosses the interval, at that commit's wal_seq, and restore the same DAG from it", async () => {
    const s = await newSession();
    const path = await busyTask(s, "snap");
    const [snap] = await rows(s.sid, "snap", "SELECT wal_seq, format, parts FROM snapshots");
    const last = (await rows(s.sid, "snap", "SELECT MAX(seq_key) AS n FROM wal_commits"))[0]!.n as number;
    expect(snap).toBeDefined();
    expect(snap!.wal_seq as number).toBeGreaterThanOrEqual(40);
    expect(snap!.wal_seq as number).toBeLessThanOrEqual(last);
    const before = await dagOf(path, s.orch);
    const wal = await walExport(path, s.orch);
    await evictDurableObject(taskStub(s.sid, "snap"));
    expect(await dagOf(path, s.orch)).toEqual(before);
    // The WAL is exported whole, as before: a snapshot shortens recovery only.
    expect(await walExport(path, s.orch)).toBe(wal);
  });

  it("Should restore from the snapshot without reading the WAL before it (its rows there made unreadable)", async () => {
    const s = await newSession();
    const path = await busyTask(s, "used");
    const before = await dagOf(path, s.orch);
    await runInDurableObject(taskStub(s.sid, "used"), async (_i, state) => {
      state.storage.sql.exec("UPDATE wal_commits SET events = 'not json' WHERE seq_key > 0 AND seq_key <= (SELECT wal_seq FROM snapshots)");
    });
    await evictDurableObject(taskStub(s.sid, "used"));
    expect(await dagOf(path, s.orch)).toEqual(before);
  });

  it("Should keep a commit whose snapshot cannot be written, and start from the WAL alone afterwards", async () => {
    const s = await newSession();
    const path = await newTask(s, "torn", Array.from({ length: 30 }, (_, i) => step(`s${i}`)));
    const w = await dispatch(s, path, { max_steps: 30 });
    // The snapshot's last row (its header) fails: the parts written before it are left torn.
    await runInDurableObject(taskStub(s.sid, "torn"), (instance) => {
      const shell = (instance as unknown as { shell: { storage: { sql: { exec: (q: string, ...b: unknown[]) => unknown } } } }).shell;
      const real = shell.storage.sql;
      shell.storage = {
        ...shell.storage,
        sql: { exec: (q: string, ...b: unknown[]) => (q.startsWith("INSERT INTO snapshots") ? (() => { throw new Error("injected: snapshot write failed"); })() : real.exec(q, ...b)) },
      } as never;
    });
    for (let i = 0; i < 30; i++) {
      const claimed = expectOk(await call("POST", `${path}/steps/claim-next`, w.token));
      expectOk(await call("POST", `${path}/steps/${claimed.step.step_id}/status`, w.token, { status: "completed" }));
    }
    expect(await rows(s.sid, "torn", "SELECT wal_seq FROM snapshots")).toEqual([]);
    expect((await rows(s.sid, "torn", "SELECT COUNT(*) AS n FROM snapshot_parts"))[0]!.n as number).toBeGreaterThan(0);
    const before = await dagOf(path, s.orch);
    await evictDurableObject(taskStub(s.sid, "torn"));
    expect(await dagOf(path, s.orch)).toEqual(before);
  });

  it.each([
    ["a corrupt snapshot (checksum mismatch)", "UPDATE snapshot_parts SET data = substr(data, 1, length(data) - 2) || '0}'"],
    ["a snapshot of another format", "UPDATE snapshots SET format = 999"],
    ["a snapshot ahead of its WAL", "UPDATE snapshots SET wal_seq = wal_seq + 100000"],
    ["a snapshot with a part missing", "DELETE FROM snapshot_parts WHERE part = 0"],
  ])("Should ignore %s and replay the whole WAL to the same DAG", async (_name, damage) => {
    const s = await newSession();
    const path = await busyTask(s, "bad");
    const before = await dagOf(path, s.orch);
    await runInDurableObject(taskStub(s.sid, "bad"), async (_i, state) => {
      state.storage.sql.exec(damage);
    });
    await evictDurableObject(taskStub(s.sid, "bad"));
    expect(await dagOf(path, s.orch)).toEqual(before);
    // It goes on working, and its next snapshot is a good one.
    const w = await dispatch(s, path);
    expect((await call("POST", `${path}/steps/claim-next`, w.token)).status).toBe(200);
  });
});
