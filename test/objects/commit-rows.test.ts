/**
 * One WAL row per commit: a batch of many commands is one row holding its events and the answers of its keyed
 * commands; the export, after_seq paging and replay see one event per line as before; an Idempotency-Key's answer
 * is found in its commit's row after a restart, for 24 hours, also for a command that wrote no event.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { IdempotencyStore, keyFingerprint } from "../../durable-objects/task/storage/idempotency-store.js";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { expectError, expectOk, storedEventCount, taskStub, uniqueId, walOf } from "../support/support.js";

let S: TestSession;
beforeAll(async () => {
  S = await newSession();
});

/** The task object's commit rows: key, range and whether it holds answers. */
async function commitRows(id: string) {
  return runInDurableObject(taskStub(S.sid, id), (_i, state) =>
    state.storage.sql.exec<{ seq_key: number; first_seq: number; keyed: number }>("SELECT seq_key, first_seq, keys IS NOT NULL AS keyed FROM wal_commits ORDER BY seq_key").toArray(),
  );
}

async function claimedTask(steps = 3) {
  const id = uniqueId("c");
  const t = await newTask(S, id, Array.from({ length: steps }, (_, i) => step(`s${i}`)));
  const w = await dispatch(S, t, { max_steps: steps });
  expectOk(await call("POST", `${t}/steps/s0/claim`, w.token));
  return { id, t, w };
}

describe("one WAL row per commit", () => {
  it("Should write a batch of 32 keyed commands as one row, and export, page and replay its events one by one as before", async () => {
    const { id, t, w } = await claimedTask();
    const before = await commitRows(id);
    const walBefore = await walOf(t, S.orch);
    const commands = Array.from({ length: 32 }, (_, i) => ({ token: w.token, method: "POST", path: `${t}/steps/s0/progress`, body: { phase: `p${i}` }, idempotency_key: `p${i}` }));
    const res = expectOk(await call("POST", `${t}/batch`, S.orch, { commands }));
    expect(res.results.every((r: { ok: boolean }) => r.ok)).toBe(true);
    const after = await commitRows(id);
    expect(after).toHaveLength(before.length + 1);
    const row = after.at(-1)!;
    expect(row).toEqual({ seq_key: walBefore.length + 32, first_seq: walBefore.length + 1, keyed: 1 });

    const wal = await walOf(t, S.orch);
    expect(wal.map((e) => e.wal_seq)).toEqual(Array.from({ length: walBefore.length + 32 }, (_, i) => i + 1));
    expect(wal.slice(walBefore.length).map((e) => (e.payload as { phase: string }).phase)).toEqual(commands.map((c) => c.body.phase));
    // Pages that start and end inside the row.
    const from = walBefore.length + 5;
    expect(await walOf(t, S.orch, `?after_seq=${from}&limit=7`)).toEqual(wal.slice(from, from + 7));
    expect(await walOf(t, S.orch, `?after_seq=${wal.length - 1}`)).toEqual(wal.slice(-1));
    expect(await walOf(t, S.orch, `?after_seq=${wal.length}`)).toEqual([]);

    const view = expectOk(await call("GET", t, S.orch));
    await evictDurableObject(taskStub(S.sid, id));
    expect(expectOk(await call("GET", t, S.orch))).toEqual(view);
    expect(await walOf(t, S.orch)).toEqual(wal);
  });
});

describe("Idempotency-Key answers in their commit's row", () => {
  it("Should replay a keyed batch command's first answer after a restart, and refuse the key with another body", async () => {
    const { id, t, w } = await claimedTask();
    const commands = [
      { token: w.token, method: "POST", path: `${t}/steps/s0/progress`, body: { phase: "a" }, idempotency_key: "k-a" },
      { token: w.token, method: "POST", path: `${t}/steps/s0/status`, body: { status: "completed", result_summary: "done", claim_next: true }, idempotency_key: "k-done" },
    ];
    const first = expectOk(await call("POST", `${t}/batch`, S.orch, { commands }));
    const count = await runInDurableObject(taskStub(S.sid, id), (_i, state) => storedEventCount(state.storage.sql));
    await evictDurableObject(taskStub(S.sid, id));
    expect(expectOk(await call("POST", `${t}/batch`, S.orch, { commands }))).toEqual(first);
    expect(await runInDurableObject(taskStub(S.sid, id), (_i, state) => storedEventCount(state.storage.sql))).toBe(count);
    const changed = expectOk(await call("POST", `${t}/batch`, S.orch, { commands: [{ ...commands[0]!, body: { phase: "b" } }] }));
    expect(changed.results[0]).toMatchObject({ ok: false, status: 422, body: { error: { code: "idempotency_conflict" } } });
  });

  it("Should keep the answer of a keyed command that wrote no event in a row no WAL read sees, and replay it after a restart", async () => {
    const { id, t } = await claimedTask(1);
    // s0 is claimed and nothing else is ready: a second worker's claim-next answers no_step_claimed and writes no event.
    const w = await dispatch(S, t, { agent_id: "w2" });
    const walBefore = await walOf(t, S.orch);
    const nothing = expectOk(await call("POST", `${t}/steps/claim-next`, w.token, {}, { "idempotency-key": "k-none" }));
    expect(nothing.no_step_claimed).toBe(true);
    expect(await walOf(t, S.orch)).toEqual(walBefore);
    const rows = await commitRows(id);
    expect(rows.filter((r) => r.seq_key < 0)).toEqual([{ seq_key: -1, first_seq: 0, keyed: 1 }]);
    await evictDurableObject(taskStub(S.sid, id));
    expect(expectOk(await call("POST", `${t}/steps/claim-next`, w.token, {}, { "idempotency-key": "k-none" }))).toEqual(nothing);
    expect(await walOf(t, S.orch)).toEqual(walBefore);
    expectError(await call("POST", `${t}/steps/s0/progress`, w.token, { phase: "x" }, { "idempotency-key": "k-none" }), 422, "idempotency_conflict");
    // The next such answer gets the next key down.
    expectOk(await call("POST", `${t}/steps/claim-next`, w.token, {}, { "idempotency-key": "k-none-2" }));
    expect((await commitRows(id)).filter((r) => r.seq_key < 0).map((r) => r.seq_key)).toEqual([-2, -1]);
  });

  it("Should decide a key again once its answer is older than 24 hours, also when that is found on start", async () => {
    const { id, t, w } = await claimedTask();
    const body = { phase: "x" };
    const first = expectOk(await call("POST", `${t}/steps/s0/progress`, w.token, body, { "idempotency-key": "k-old" }));
    await runInDurableObject(taskStub(S.sid, id), (_i, state) => {
      state.storage.sql.exec("UPDATE wal_commits SET at_ms = at_ms - 25 * 3600 * 1000 WHERE keys IS NOT NULL");
    });
    await evictDurableObject(taskStub(S.sid, id));
    const again = expectOk(await call("POST", `${t}/steps/s0/progress`, w.token, body, { "idempotency-key": "k-old" }));
    expect(again.wal_seq).toBe(first.wal_seq + 1);
    // And the new answer is the one replayed from now on.
    expect(expectOk(await call("POST", `${t}/steps/s0/progress`, w.token, body, { "idempotency-key": "k-old" }))).toEqual(again);
  });

  it("Should answer every key of the last 24 hours when memory holds fewer, the older ones through the spill table, also after a restart", async () => {
    // The pool runs task objects with IDEMPOTENCY_INDEX_KEYS 16: 40 keyed commits push 24 keys out of memory.
    const { id, t, w } = await claimedTask();
    const send = (i: number, phase = `p${i}`) => call("POST", `${t}/steps/s0/progress`, w.token, { phase }, { "idempotency-key": `spill-${i}` });
    const first = [];
    for (let i = 0; i < 40; i++) first.push(expectOk(await send(i)));
    const spilled = await runInDurableObject(taskStub(S.sid, id), (_i, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM idempotency_spill").one().n);
    expect(spilled).toBeGreaterThanOrEqual(24);
    const wal = await walOf(t, S.orch);
    for (let i = 0; i < 40; i++) expect(expectOk(await send(i))).toEqual(first[i]);
    await evictDurableObject(taskStub(S.sid, id));
    for (let i = 0; i < 40; i += 3) expect(expectOk(await send(i))).toEqual(first[i]);
    expectError(await send(0, "another body"), 422, "idempotency_conflict");
    expect(await walOf(t, S.orch)).toEqual(wal);
  });

  it("Should put the keys that do not fit in memory into the spill table when it builds its index, and purge the spill table of keys past 24 hours", async () => {
    const { id, t, w } = await claimedTask();
    for (let i = 0; i < 5; i++) expectOk(await call("POST", `${t}/steps/s0/progress`, w.token, { phase: `p${i}` }, { "idempotency-key": `bound-${i}` }));
    const scoped = (i: number) => `worker:${w.agent_id}:${w.run_id}\nbound-${i}`;
    const found = await runInDurableObject(taskStub(S.sid, id), (_i, state) => {
      const sql = state.storage.sql;
      sql.exec("DELETE FROM idempotency_spill");
      const keys = Array.from({ length: 5 }, (_, i) => scoped(i));
      // Built from storage with room for three keys: the two oldest go to the spill table, and all five are found.
      const store = new IdempotencyStore(() => sql, 3);
      const all = [...store.read(keys).keys()].sort();
      const spill = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM idempotency_spill").one().n;
      sql.exec("UPDATE idempotency_spill SET at_ms = at_ms - 25 * 3600 * 1000");
      store.expire(Date.now());
      return { all, spill, afterPurge: sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM idempotency_spill").one().n };
    });
    expect(found).toEqual({ all: Array.from({ length: 5 }, (_, i) => scoped(i)), spill: 2, afterPurge: 0 });
  });

  it("Should fingerprint keys deterministically, in 52 bits, differently for different keys", () => {
    const a = keyFingerprint("worker:w1:run_1\\nkey-1");
    expect(keyFingerprint("worker:w1:run_1\\nkey-1")).toBe(a);
    expect(Number.isSafeInteger(a) && a >= 0 && a < 2 ** 52).toBe(true);
    const many = new Set(Array.from({ length: 10_000 }, (_, i) => keyFingerprint(`worker:w1:run_1\\nkey-${i}`)));
    expect(many.size).toBe(10_000);
  });
});
