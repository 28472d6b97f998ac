/**
 * The session index never stays behind its tasks: a change committed and then lost with the task object
 * (an eviction or crash before the push) reaches the index from the object's alarm, and the object, on its
 * next start, knows from what the index acknowledged whether it is behind.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { eventually, expectOk, taskStub, uniqueId } from "../support/support.js";
import { INDEX_PUSH_INTERVAL_MS } from "../../durable-objects/task/index-outbox.js";
import type { TaskGraphObject } from "../../durable-objects/task/task-graph-object.js";
import type { IndexEntry } from "../../src/contract/index.js";

let S: TestSession;
beforeAll(async () => {
  S = await newSession();
});
afterEach(() => vi.useRealTimers());

/** The session's index entry of a task (as agent.task_list lists it). */
async function listed(taskId: string) {
  const page = expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks?include_terminal=true&limit=200`, S.orch));
  return page.tasks.find((t: { task_id: string }) => t.task_id === taskId);
}

describe("the session index after a crash between a commit and its push", () => {
  it("Should catch up on a count-only change when the task object is evicted inside the push window", async () => {
    const id = uniqueId("x");
    const t = await newTask(S, id, [step("a"), step("b")]);
    const w = await dispatch(S, t, { agent_id: "w1" });
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    await eventually(async () => expect((await listed(id)).step_counts.claimed).toBe(1));
    // A step completes (the task stays running: a count-only change), and the object dies at once. The
    // objects share this isolate, so a crash is modelled by timers that never fire: whatever the object
    // left in memory for later is lost with it, as it would be with the process.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const done = expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "completed" }));
    await evictDurableObject(taskStub(S.sid, id));
    vi.useRealTimers();
    // Nobody touches the task again: the index must still catch up.
    await eventually(async () => {
      const entry = await listed(id);
      expect(entry.step_counts.completed).toBe(1);
      expect(entry.wal_seq).toBe(done.wal_seq);
    }, 5_000);
  });

  it("Should catch up on a status change (the task blocked) when the object is evicted right after the commit", async () => {
    const id = uniqueId("x");
    const t = await newTask(S, id, [step("a")]);
    await eventually(async () => expect((await listed(id)).native_status).toBe("running"));
    const blocked = expectOk(await call("POST", `${t}/block`, S.orch, { reason: "night" }));
    await evictDurableObject(taskStub(S.sid, id));
    await eventually(async () => {
      const entry = await listed(id);
      expect(entry.native_status).toBe("blocked");
      expect(entry.wal_seq).toBe(blocked.wal_seq);
    }, 5_000);
  });

  it("Should store the wal_seq the index acknowledged with the task's next commit, so a restart knows whether a push is owed", async () => {
    const id = uniqueId("x");
    const t = await newTask(S, id, [step("a")]);
    const created = expectOk(await call("GET", t, S.orch)).wal_seq;
    const storedSeq = () => runInDurableObject(taskStub(S.sid, id), (_i, state) => state.storage.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'index_pushed_seq'").toArray()[0]?.value);
    await eventually(async () => expect((await listed(id)).wal_seq).toBe(created));
    // Acknowledged, but no write of its own: the create's commit was its last.
    expect(await storedSeq()).toBeUndefined();
    const renamed = expectOk(await call("PATCH", t, S.orch, { ops: [{ op: "update_task", title: "Renamed" }] }));
    expect(Number(await storedSeq())).toBe(created);
    await eventually(async () => expect((await listed(id)).wal_seq).toBe(renamed.wal_seq));
    // A restart after an acknowledgement no commit followed pushes that entry once more; the index keeps it as it was.
    await evictDurableObject(taskStub(S.sid, id));
    expectOk(await call("GET", t, S.orch));
    await eventually(async () => expect((await listed(id)).title).toBe("Renamed"));
    expect((await listed(id)).wal_seq).toBe(renamed.wal_seq);
  });
});

describe("the pushes of a busy task", () => {
  it("Should arm no alarm of the task object for a new task's first push (the session's reservation check covers it)", async () => {
    const id = uniqueId("new");
    await newTask(S, id, [step("a")]);
    await eventually(async () => expect((await listed(id))?.task_id).toBe(id));
    expect(await runInDurableObject(taskStub(S.sid, id), (_i, state) => state.storage.getAlarm())).toBeNull();
  });


  it("Should push step progress at most once per INDEX_PUSH_INTERVAL_MS, the last change always arriving", async () => {
    const id = uniqueId("busy");
    const steps = Array.from({ length: 40 }, (_, i) => step(`s${i}`));
    const t = await newTask(S, id, steps);
    const w = await dispatch(S, t, { agent_id: "w1", max_steps: 40 });
    await eventually(async () => expect((await listed(id)).active_runs).toBe(1));
    // Record what the task object pushes from here on (its outbox's sender, wrapped).
    const pushes: { at: number; entry: IndexEntry }[] = [];
    await runInDurableObject(taskStub(S.sid, id), (o: TaskGraphObject) => {
      const outbox = (o as unknown as { shell: { index: { send: (entry: IndexEntry, deliveries: unknown[]) => Promise<void> } } }).shell.index;
      const send = outbox.send;
      outbox.send = (entry, deliveries) => {
        pushes.push({ at: Date.now(), entry });
        return send(entry, deliveries);
      };
    });
    // Steps completed one after another for a while: each a commit that changes only the step counts.
    const started = Date.now();
    let last = 0;
    for (let i = 0; i < 40 && Date.now() - started < 2.5 * INDEX_PUSH_INTERVAL_MS; i++) {
      expectOk(await call("POST", `${t}/steps/s${i}/claim`, w.token));
      last = expectOk(await call("POST", `${t}/steps/s${i}/status`, w.token, { status: "completed" })).wal_seq;
    }
    const elapsed = Date.now() - started;
    await eventually(async () => expect((await listed(id)).wal_seq).toBe(last));
    const during = pushes.filter((p) => p.at <= started + elapsed);
    expect(last).toBeGreaterThan(20);
    // Dozens of commits, and no more pushes than intervals (plus the one a quiet task sends at once).
    expect(during.length).toBeLessThanOrEqual(Math.floor(elapsed / INDEX_PUSH_INTERVAL_MS) + 1);
    for (let i = 1; i < pushes.length; i++) expect(pushes[i]!.at - pushes[i - 1]!.at).toBeGreaterThanOrEqual(INDEX_PUSH_INTERVAL_MS - 5);
  });
});
