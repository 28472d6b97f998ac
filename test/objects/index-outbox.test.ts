/**
 * The session index never stays behind its tasks: a change committed and then lost with the task object
 * (an eviction or crash before the push) reaches the index from the object's alarm, and the object, on its
 * next start, knows from what the index acknowledged whether it is behind.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { eventually, expectOk, taskStub, uniqueId } from "../support/support.js";

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

  it("Should store the wal_seq the index acknowledged, so a restart knows whether a push is owed", async () => {
    const id = uniqueId("x");
    const t = await newTask(S, id, [step("a")]);
    const view = expectOk(await call("GET", t, S.orch));
    await eventually(async () => {
      const stored = await runInDurableObject(taskStub(S.sid, id), (_i, state) => state.storage.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'index_pushed_seq'").toArray()[0]?.value);
      expect(Number(stored)).toBe(view.wal_seq);
    });
  });
});
