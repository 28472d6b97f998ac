/**
 * @module GET .../wal as a stream: the object reads the WAL from SQL a page (WAL_EXPORT_PAGE events) per pull and
 * the route passes the JSON Lines through, so the answer must be the WAL event by event across page boundaries,
 * page by `after_seq`/`limit` exactly as a page built at once did, end at the last wal_seq of the moment it was
 * asked, answer its errors as JSON envelopes before any line, and read nothing the client has not pulled.
 */
import { runInDurableObject, SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { loadEvents } from "../../durable-objects/task/storage/wal-store.js";
import type { TaskGraphObject } from "../../durable-objects/task/task-graph-object.js";
import { WAL_EXPORT_PAGE } from "../../durable-objects/task/task-reads.js";
import { RuntimeClient } from "../../src/client/index.js";
import type { WalEvent } from "../../src/core/index.js";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { BASE, expectError, parseWal, taskStub, uniqueId, walText } from "../support/support.js";

/** Progress commands per batch request while a WAL is built (as the recovery benchmark does). */
const PER_BATCH = 256;
/** Events in the long task: several export pages, the last one partly filled. */
const LONG_EVENTS = 3_500;

/** A task with one claimed step whose WAL is brought to exactly `events` events by progress commands through the batch route. */
async function taskWithEvents(s: TestSession, taskId: string, events: number): Promise<{ path: string; worker: string; stepId: string }> {
  const path = await newTask(s, taskId, [step("a")], { step_lease_timeout_ms: 86_400_000 });
  const w = await dispatch(s, path, { agent_id: `w-${taskId}`, max_steps: 1 });
  const claim = await call("POST", `${path}/steps/claim-next`, w.token, {});
  expect(claim.status).toBe(200);
  let seq: number = claim.body.wal_seq;
  let n = 0;
  while (seq < events) await progress(path, w.token, "a", Math.min(PER_BATCH, events - seq), () => n++).then((last) => (seq = last));
  expect(seq).toBe(events);
  return { path, worker: w.token, stepId: "a" };
}

/** `count` progress commands in one batch; the last wal_seq they wrote. */
async function progress(path: string, token: string, stepId: string, count: number, next: () => number): Promise<number> {
  const commands = Array.from({ length: count }, () => ({ token, method: "POST", path: `${path}/steps/${stepId}/progress`, body: { phase: "export", counters: { n: next() } } }));
  const res = await call("POST", `${path}/batch`, token, { commands });
  expect(res.status).toBe(200);
  for (const r of res.body.results) expect(r.ok).toBe(true);
  return res.body.results.at(-1).body.wal_seq;
}

/** The task's WAL as its object's storage holds it. */
function storedWal(s: TestSession, taskId: string): Promise<WalEvent[]> {
  return runInDurableObject(taskStub(s.sid, taskId), (_o, state) => loadEvents(state.storage.sql));
}

/** The object's WAL export counters: exports opened and pages read from SQL. */
function exportCounters(s: TestSession, taskId: string): Promise<{ opened: number; pages: number }> {
  return runInDurableObject(taskStub(s.sid, taskId), (o: TaskGraphObject) => ({ ...(o as unknown as { reads: { walExports: { opened: number; pages: number } } }).reads.walExports }));
}

/** The lines of a JSON Lines text, each exactly as sent. */
const linesOf = (text: string) => text.split("\n").filter((l) => l !== "");

describe("GET .../wal streamed a page at a time", () => {
  let s: TestSession;
  let long: { path: string; worker: string };
  let wal: WalEvent[];

  beforeAll(async () => {
    s = await newSession();
    long = await taskWithEvents(s, "long-wal", LONG_EVENTS);
    wal = await storedWal(s, "long-wal");
    expect(wal).toHaveLength(LONG_EVENTS);
  }, 120_000);

  it("Should answer limit=all with every event of the WAL, in order and as stored, across the page boundaries of the stream", async () => {
    const before = await exportCounters(s, "long-wal");
    const res = await walText(long.path, s.orch, "?limit=all");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    expect(res.headers.get("x-last-wal-seq")).toBe(String(LONG_EVENTS));
    expect(res.text.endsWith("\n")).toBe(true);
    expect(linesOf(res.text)).toEqual(wal.map((e) => JSON.stringify(e)));
    expect(parseWal(res.text)).toEqual(wal);
    const after = await exportCounters(s, "long-wal");
    // Read from SQL a page at a time, never the whole export at once.
    expect(after.opened - before.opened).toBe(1);
    expect(after.pages - before.pages).toBe(Math.ceil(LONG_EVENTS / WAL_EXPORT_PAGE));
  });

  it("Should answer limit=all after after_seq with the rest of the WAL", async () => {
    const res = await walText(long.path, s.orch, "?after_seq=1234&limit=all");
    expect(res.status).toBe(200);
    expect(parseWal(res.text)).toEqual(wal.slice(1234));
  });

  it("Should answer 1,000 events by default and the task's last wal_seq in x-last-wal-seq", async () => {
    const res = await walText(long.path, s.orch);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    expect(res.headers.get("x-last-wal-seq")).toBe(String(LONG_EVENTS));
    expect(parseWal(res.text)).toEqual(wal.slice(0, 1_000));
  });

  it("Should give every event exactly once when pages are followed by after_seq, whatever the limit", async () => {
    for (const limit of [999, 1_000, 1_001, 2_600, 10_000]) {
      const got: WalEvent[] = [];
      for (let after = 0; ; ) {
        const res = await walText(long.path, s.orch, `?after_seq=${after}&limit=${limit}`);
        expect(res.status).toBe(200);
        const page = parseWal(res.text);
        expect(page.length).toBe(Math.min(limit, LONG_EVENTS - after));
        if (page.length === 0) break;
        got.push(...page);
        after = page.at(-1)!.wal_seq;
      }
      expect(got).toEqual(wal);
    }
  }, 60_000);

  it("Should answer one event per page with limit=1", async () => {
    for (const after of [0, 1, WAL_EXPORT_PAGE - 1, WAL_EXPORT_PAGE, LONG_EVENTS - 1]) {
      expect(parseWal((await walText(long.path, s.orch, `?after_seq=${after}&limit=1`)).text)).toEqual([wal[after]]);
    }
  });

  it("Should answer a page that straddles export pages with exactly the events asked for", async () => {
    const res = await walText(long.path, s.orch, `?after_seq=${WAL_EXPORT_PAGE - 1}&limit=${2 * WAL_EXPORT_PAGE + 2}`);
    expect(parseWal(res.text)).toEqual(wal.slice(WAL_EXPORT_PAGE - 1, 3 * WAL_EXPORT_PAGE + 1));
  });

  it("Should answer the events that remain when the limit reaches past the end", async () => {
    const res = await walText(long.path, s.orch, `?after_seq=${LONG_EVENTS - 100}&limit=10000`);
    expect(res.status).toBe(200);
    expect(res.headers.get("x-last-wal-seq")).toBe(String(LONG_EVENTS));
    expect(parseWal(res.text)).toEqual(wal.slice(LONG_EVENTS - 100));
  });

  it.each([
    ["at the last wal_seq", LONG_EVENTS, "?limit=all"],
    ["at the last wal_seq, with a limit", LONG_EVENTS, "?limit=10"],
    ["past the last wal_seq", LONG_EVENTS + 50, ""],
  ])("Should answer an empty body with x-last-wal-seq when after_seq is %s", async (_case, after, extra) => {
    const res = await walText(long.path, s.orch, `?after_seq=${after}${extra === "" ? "" : `&${extra.slice(1)}`}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    expect(res.headers.get("x-last-wal-seq")).toBe(String(LONG_EVENTS));
    expect(res.text).toBe("");
  });

  it.each([
    ["limit=0", "?limit=0"],
    ["limit=10001", "?limit=10001"],
    ["limit=ALL", "?limit=ALL"],
    ["limit=-1", "?limit=-1"],
    ["after_seq=x", "?after_seq=x&limit=all"],
    ["an unknown parameter", "?limit=all&offset=3"],
  ])("Should answer 400 validation_error as a JSON envelope for %s", async (_case, query) => {
    const before = await exportCounters(s, "long-wal");
    const res = await call("GET", `${long.path}/wal${query}`, s.orch);
    expect(res.headers.get("content-type")).toContain("application/json");
    expectError(res, 400, "validation_error");
    expect(await exportCounters(s, "long-wal")).toEqual(before);
  });

  it("Should answer 401 without a token, 403 for another session's token and 404 for an unknown task, as JSON envelopes", async () => {
    expectError(await call("GET", `${long.path}/wal?limit=all`), 401, "unauthorized");
    const other = await newSession();
    expectError(await call("GET", `${long.path}/wal?limit=all`, other.orch), 403, "permission_denied");
    expectError(await call("GET", `/v1/sessions/${s.sid}/tasks/${uniqueId()}/wal?limit=all`, s.orch), 404, "not_found");
  });

  it("Should read no further page from SQL when the reader cancels after the first chunk", async () => {
    const before = await exportCounters(s, "long-wal");
    const res = await SELF.fetch(`${BASE}${long.path}/wal?limit=all`, { headers: { authorization: `Bearer ${s.orch}` } });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    expect(new TextDecoder().decode(first.value).startsWith(`${JSON.stringify(wal[0])}\n`)).toBe(true);
    await reader.cancel();
    // Let whatever the pipe would still pull happen before counting.
    await new Promise((r) => setTimeout(r, 200));
    const after = await exportCounters(s, "long-wal");
    expect(after.opened - before.opened).toBe(1);
    const read = after.pages - before.pages;
    expect(read).toBeGreaterThanOrEqual(1);
    expect(read).toBeLessThan(Math.ceil(LONG_EVENTS / WAL_EXPORT_PAGE));
  });

  it("Should end at the last wal_seq of the moment it was asked, while the task is written during the read", async () => {
    const t = await taskWithEvents(s, "growing-wal", 2_100);
    const asked = await storedWal(s, "growing-wal");
    const res = await SELF.fetch(`${BASE}${t.path}/wal?limit=all`, { headers: { authorization: `Bearer ${s.orch}` } });
    expect(res.headers.get("x-last-wal-seq")).toBe("2100");
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    const first = await reader.read();
    text += decoder.decode(first.value, { stream: true });
    let n = 0;
    expect(await progress(t.path, t.worker, t.stepId, PER_BATCH, () => n++)).toBe(2_100 + PER_BATCH);
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += decoder.decode(r.value, { stream: true });
    expect(parseWal(text)).toEqual(asked);
    expect(await storedWal(s, "growing-wal")).toHaveLength(2_100 + PER_BATCH);
  }, 60_000);

  describe("the SDK's walEvents", () => {
    /** A client whose requests to the WAL export are recorded (path and query). */
    function recordingClient(token: string) {
      const asked: string[] = [];
      const client = new RuntimeClient({
        baseUrl: BASE,
        token,
        fetch: (input, init) => {
          const url = new URL(input);
          if (url.pathname.endsWith("/wal")) asked.push(url.search);
          return SELF.fetch(input, init);
        },
      });
      return { client, asked };
    }

    it("Should give every event of the WAL in order, following pages of page_size events by after_seq", async () => {
      const { client, asked } = recordingClient(s.orch);
      const got: WalEvent[] = [];
      for await (const event of client.walEvents({ sessionId: s.sid, taskId: "long-wal" }, { page_size: 1_500 })) got.push(event);
      expect(got).toEqual(wal);
      expect(asked).toEqual(["?after_seq=0&limit=1500", "?after_seq=1500&limit=1500", "?after_seq=3000&limit=500"]);
    });

    it("Should start after after_seq and read pages of 10,000 events by default", async () => {
      const { client, asked } = recordingClient(s.orch);
      const got: WalEvent[] = [];
      for await (const event of client.walEvents({ sessionId: s.sid, taskId: "long-wal" }, { after_seq: 3_000 })) got.push(event);
      expect(got).toEqual(wal.slice(3_000));
      expect(asked).toEqual(["?after_seq=3000&limit=10000"]);
    });

    it("Should give nothing after the last wal_seq", async () => {
      const got: WalEvent[] = [];
      for await (const event of new RuntimeClient({ baseUrl: BASE, token: s.orch, fetch: SELF.fetch.bind(SELF) }).walEvents({ sessionId: s.sid, taskId: "long-wal" }, { after_seq: LONG_EVENTS })) got.push(event);
      expect(got).toEqual([]);
    });
  });
});
