/**
 * Commits of any size the contract admits (docs/limits.md, "Commits and snapshots of any size"): a 10,000-step task
 * with the longest titles a 1 MiB body holds, a PATCH of 10,000 `add_step` ops, 256 keyed batch commands with maximal
 * bodies, maximal metadata and run results — through REST, a batch, the command socket and MCP — are answered 2xx, stored
 * in rows no larger than a deployed object's SQLite takes, and read back the same after a restart, after a replay of
 * the whole WAL, and in the WAL export. One past each limit is refused for what it is, never `503 storage_error`.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { MAX_BATCH_COMMANDS } from "../../src/contract/index.js";
import { MAX_JSON_BYTES, MAX_TITLE, replay, utf8Length } from "../../src/core/index.js";
import { textParts } from "../../durable-objects/task/storage/row-text.js";
import { ADMIN, call, dispatch, newSession, type TestSession } from "../support/helpers.js";
import { openSocket } from "../support/test-socket.js";
import { connectMcp } from "../support/mcp-clients.js";
import { bindings, expectOk, parseWal, sleep, taskStub, uniqueId, walText } from "../support/support.js";

const MAX_BODY_BYTES = 1_048_576;
const MAX_STEPS = 10_000;
/** The largest row a deployed Durable Object's SQLite documents (`wrangler dev`'s workerd refused 2,200,000 bytes). */
const DEPLOYED_ROW_BYTES = 2_000_000;
/** A case here writes and reads back several MB a few times over. */
const TIMEOUT_MS = 60_000;

let S: TestSession;
beforeAll(async () => {
  S = await newSession();
});

const bytesOf = (body: unknown) => utf8Length(typeof body === "string" ? body : JSON.stringify(body));

/** A title of exactly `length` UTF-16 units: `prefix`, then 1-, 2-, 3- and 4-byte characters, so parts are cut among them. */
function titleOf(prefix: string, length: number): string {
  let title = prefix;
  for (let i = 0; title.length < length; i++) {
    const next = ["a", "é", "€", "😀"][i % 4]!;
    title += title.length + next.length <= length ? next : "a";
  }
  return title;
}

/** The body `make(n)` for the largest n ≤ `max` whose JSON fits MAX_BODY_BYTES (less `reserve` bytes). */
function largestFitting<T>(make: (n: number) => T, max: number, reserve = 0): T {
  let lo = 1;
  let hi = max;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (bytesOf(make(mid)) + reserve <= MAX_BODY_BYTES) lo = mid;
    else hi = mid - 1;
  }
  const body = make(lo);
  expect(bytesOf(body) + reserve).toBeLessThanOrEqual(MAX_BODY_BYTES);
  return body;
}

/** `count` add_step ops with titles of `titleLength` units. */
const addSteps = (from: number, count: number, titleLength: number) =>
  Array.from({ length: count }, (_, i) => ({ op: "add_step", step: { step_id: `s${from + i}`, title: titleOf(`${from + i}:`, titleLength), summary: "", depends_on_step_ids: [] } }));

async function emptyTask(): Promise<{ id: string; path: string }> {
  const id = uniqueId("big");
  expectOk(await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, { task_id: id, wal_name: id, title: "Large", steps: [] }), 201);
  return { id, path: `/v1/sessions/${S.sid}/tasks/${id}` };
}

/** Every page of GET .../tasks/{tid} (1,000 steps, runs and attempts each), without the time-dependent `snapshot`. */
async function pagesOf(path: string): Promise<unknown[]> {
  const pages: unknown[] = [];
  for (let cursor: string | null = ""; cursor !== null; ) {
    const url = `${path}?limit=1000${cursor === "" ? "" : `&cursor=${encodeURIComponent(cursor)}`}`;
    // A large page holds one of the task's few large-read slots until its stream is done, which the object may hear
    // of just after the client: a 429 here is retried, as a client does.
    let res = await call("GET", url, S.orch);
    for (let tries = 0; res.status === 429 && tries < 100; tries++) {
      await sleep(50);
      res = await call("GET", url, S.orch);
    }
    const page: any = expectOk(res);
    pages.push({ ...page, snapshot: undefined });
    cursor = page.page?.next_cursor ?? null;
  }
  return pages;
}

async function exportOf(path: string): Promise<string> {
  const res = await walText(path, S.orch, "?limit=all");
  expect(res.status, res.text.slice(0, 300)).toBe(200);
  return res.text;
}

/** The task's last wal_seq, as the WAL export reports it (what a refused request must leave as it was). */
async function lastSeqOf(path: string): Promise<number> {
  const res = await walText(path, S.orch, "?limit=1");
  expect(res.status).toBe(200);
  return Number(res.headers.get("x-last-wal-seq"));
}

/** The largest row of the task object's WAL, WAL parts and snapshot parts, in bytes, and how many commits are in parts. */
async function storedRows(id: string): Promise<{ largest: number; partedCommits: number }> {
  return runInDurableObject(taskStub(S.sid, id), (_i, state) => {
    const sql = state.storage.sql;
    const largest = sql.exec<{ n: number }>(
      `SELECT MAX(n) AS n FROM (
        SELECT length(CAST(events AS BLOB)) + IFNULL(length(CAST(answers AS BLOB)), 0) + IFNULL(length(CAST(keys AS BLOB)), 0) AS n FROM wal_commits
        UNION ALL SELECT length(CAST(data AS BLOB)) FROM wal_commit_parts
        UNION ALL SELECT length(CAST(data AS BLOB)) FROM snapshot_parts)`,
    ).one().n;
    return { largest, partedCommits: sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM wal_commits WHERE parts IS NOT NULL").one().n };
  });
}

/**
 * The task as stored: every row within the deployed limit, at least one commit in parts; the same pages after a
 * restart (snapshot and WAL after it) and after a replay of the whole WAL (snapshot removed); then the WAL export,
 * every event in order (it reads the WAL's rows, not memory: once is enough). Returns its events and their replay.
 */
async function expectStoredAndReadBack(id: string, path: string) {
  const rows = await storedRows(id);
  expect(rows.largest).toBeLessThanOrEqual(DEPLOYED_ROW_BYTES);
  expect(rows.partedCommits).toBeGreaterThan(0);
  const pages = await pagesOf(path);
  await evictDurableObject(taskStub(S.sid, id));
  expect(await pagesOf(path)).toEqual(pages);
  await runInDurableObject(taskStub(S.sid, id), (_i, state) => {
    state.storage.sql.exec("DELETE FROM snapshots");
  });
  await evictDurableObject(taskStub(S.sid, id));
  expect(await pagesOf(path)).toEqual(pages);
  const events = parseWal(await exportOf(path));
  expect(events.map((e) => e.wal_seq)).toEqual(events.map((_, i) => i + 1));
  return { events, state: replay(events) };
}

type Entry = "route" | "batch" | "socket";
const ENTRIES: Entry[] = ["route", "batch", "socket"];

/** One orchestrator write to `path` through the single route, a batch or the command socket: its status and body. */
async function write(entry: Entry, taskPath: string, method: string, path: string, body: unknown): Promise<{ status: number; body: any }> {
  if (entry === "route") return call(method, path, S.orch, body);
  const commands = [{ token: S.orch, method, path, body }];
  const results = await send(entry, taskPath, commands);
  if (!Array.isArray(results)) return results;
  return results[0];
}

/** A batch through POST .../batch or one socket frame: its results, or the status and error of a refusal of the whole. */
async function send(entry: Exclude<Entry, "route">, taskPath: string, commands: unknown[], summary = true): Promise<any[] | { status: number; body: any }> {
  if (entry === "batch") {
    const res = await call("POST", `${taskPath}/batch`, S.orch, { commands });
    return res.status === 200 ? res.body.results : res;
  }
  const socket = await openSocket(taskPath, S.orch);
  try {
    const answer = await socket.ask({ id: 1, commands, summary });
    return answer.results ?? { status: answer.status, body: { error: answer.error } };
  } finally {
    socket.ws.close();
  }
}

/** A batch body or socket frame sent as this exact text: its results, or the status and error of a refusal of the whole. */
async function sendText(entry: Exclude<Entry, "route">, taskPath: string, text: string): Promise<any[] | { status: number; body: any }> {
  if (entry === "batch") {
    const res = await call("POST", `${taskPath}/batch`, S.orch, text);
    return res.status === 200 ? res.body.results : res;
  }
  const socket = await openSocket(taskPath, S.orch);
  try {
    const answer = await socket.ask(text);
    return answer.results ?? { status: answer.status, body: { error: answer.error } };
  } finally {
    socket.ws.close();
  }
}

/** `count` steps titled as long as a 1 MiB body (less `reserve` bytes) holds through `entry`, as add_step ops. */
function maximalPatch(count: number, reserve: number) {
  const envelope = 600; // a batch or frame's command: token, method, path
  return largestFitting((length) => ({ ops: addSteps(0, count, length) }), MAX_TITLE, reserve + envelope);
}

describe("a task of 10,000 steps", { timeout: TIMEOUT_MS }, () => {
  it("Should create one of 10,000 steps with the longest titles a 1 MiB body holds through REST, store it within a row's limit, and read it back after a restart and a replay; 10,001 steps and MAX_BODY_BYTES + 1 are refused as such", async () => {
    const id = uniqueId("create");
    const body = largestFitting((length) => ({ task_id: id, wal_name: id, title: "Large", steps: Array.from({ length: MAX_STEPS }, (_, i) => ({ step_id: `s${i}`, title: titleOf(`${i}:`, length), summary: "", depends_on_step_ids: [] })) }), MAX_TITLE);
    const path = `/v1/sessions/${S.sid}/tasks/${id}`;
    const created = expectOk(await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, body), 201);
    expect(created.task.total_steps).toBe(MAX_STEPS);
    const { state } = await expectStoredAndReadBack(id, path);
    expect([...state.steps.values()].map((s) => s.title)).toEqual(body.steps.map((s) => s.title));

    const other = uniqueId("past");
    const tooMany = { task_id: other, wal_name: other, title: "Past", steps: Array.from({ length: MAX_STEPS + 1 }, (_, i) => ({ step_id: `s${i}`, title: "t" })) };
    const refused = await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, tooMany);
    // A size the contract refuses: validation_error (or limit_exceeded, should the cap become a counted one), never storage_error.
    expect([400, 409]).toContain(refused.status);
    expect(["validation_error", "limit_exceeded"]).toContain(refused.body.error.code);
    const exact = JSON.stringify({ ...body, task_id: other, wal_name: other });
    const padded = exact + " ".repeat(MAX_BODY_BYTES - bytesOf(exact));
    expect(bytesOf(padded)).toBe(MAX_BODY_BYTES);
    expect((await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, `${padded} `)).status).toBe(413);
    expectOk(await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, padded), 201);
  });

  it.each(ENTRIES)("Should take a PATCH of 10,000 add_step ops with the longest titles a 1 MiB body holds through the %s, and read it back after a restart and a replay; one op past 10,000 steps is refused, never storage_error", async (entry) => {
    const { id, path } = await emptyTask();
    const body = maximalPatch(MAX_STEPS, 0);
    const answer = await write(entry, path, "PATCH", path, body);
    expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBe(200);
    const { events, state } = await expectStoredAndReadBack(id, path);
    expect([...state.steps.values()].map((s) => s.title)).toEqual(body.ops.map((o) => o.step.title));
    expect(answer.body.wal_seq).toBe(events.length);

    const past = await write(entry, path, "PATCH", path, { ops: addSteps(MAX_STEPS, 1, 10) });
    expect([400, 409]).toContain(past.status);
    expect(["validation_error", "limit_exceeded"]).toContain(past.body.error.code);
    expect(await lastSeqOf(path)).toBe(events.length);
  });
});

describe("a task of 10,000 steps over MCP", { timeout: TIMEOUT_MS }, () => {
  /** What the JSON-RPC envelope of a tools/call adds around the tool's arguments, with room to spare. */
  const ENVELOPE = 200;

  it("Should create one of 10,000 steps with the longest titles a 1 MiB body holds through agent.task_create, and read it back after a restart and a replay", async () => {
    const client = await connectMcp(S.orch);
    const id = uniqueId("mcp-create");
    const args = largestFitting((length) => ({ task_id: id, wal_name: id, title: "Large", steps: Array.from({ length: MAX_STEPS }, (_, i) => ({ step_id: `s${i}`, title: titleOf(`${i}:`, length), summary: "", depends_on_step_ids: [] })) }), MAX_TITLE, ENVELOPE);
    const result: any = await client.callTool({ name: "agent.task_create", arguments: args });
    expect(result.isError, JSON.stringify(result.content).slice(0, 300)).not.toBe(true);
    const { state } = await expectStoredAndReadBack(id, `/v1/sessions/${S.sid}/tasks/${id}`);
    expect([...state.steps.values()].map((s) => s.title)).toEqual(args.steps.map((s) => s.title));
    await client.close();
  });

  it("Should take 10,000 add_step ops with the longest titles a 1 MiB body holds through agent.task_update, and read them back after a restart and a replay", async () => {
    const client = await connectMcp(S.orch);
    const { id, path } = await emptyTask();
    const body = maximalPatch(MAX_STEPS, ENVELOPE + id.length + 20);
    const result: any = await client.callTool({ name: "agent.task_update", arguments: { task_id: id, ...body } });
    expect(result.isError, JSON.stringify(result.content).slice(0, 300)).not.toBe(true);
    const { state } = await expectStoredAndReadBack(id, path);
    expect([...state.steps.values()].map((s) => s.title)).toEqual(body.ops.map((o) => o.step.title));
    await client.close();
  });
});

describe("256 batch commands", { timeout: TIMEOUT_MS }, () => {
  it.each(["batch", "socket"] as const)("Should commit 256 keyed commands with maximal bodies in one %s, replay their answers after a restart, and refuse 257", async (entry) => {
    const { id, path } = await emptyTask();
    const key = (i: number) => `${i}-`.padEnd(255, "k");
    // As many add_step ops per command (titles of 24 units) as 256 commands with the longest keys hold in 1 MiB.
    const commands = (perCommand: number) =>
      Array.from({ length: MAX_BATCH_COMMANDS }, (_, i) => ({ token: S.orch, method: "PATCH", path, body: { ops: addSteps(i * perCommand, perCommand, 24) }, idempotency_key: key(i) }));
    const batch = largestFitting((perCommand) => ({ id: 1, summary: true, commands: commands(perCommand) }), Math.floor(MAX_STEPS / MAX_BATCH_COMMANDS));
    const perCommand = batch.commands[0]!.body.ops.length;
    const first = await send(entry, path, batch.commands);
    expect(Array.isArray(first), JSON.stringify(first).slice(0, 300)).toBe(true);
    expect((first as any[]).every((r) => r.ok && r.status === 200)).toBe(true);
    const { events, state } = await expectStoredAndReadBack(id, path);
    expect(state.steps.size).toBe(perCommand * MAX_BATCH_COMMANDS);
    // The answers were stored with the commit, in parts: a retry after a restart gets each one back, writing nothing.
    await evictDurableObject(taskStub(S.sid, id));
    expect(await send(entry, path, batch.commands)).toEqual(first);
    expect(await lastSeqOf(path)).toBe(events.length);

    const past = await send(entry, path, [...batch.commands.slice(0, 1), ...Array.from({ length: MAX_BATCH_COMMANDS }, () => ({ token: S.orch, method: "PATCH", path, body: { ops: [] } }))]);
    expect(past).toMatchObject({ status: 400, body: { error: { code: "validation_error" } } });
    // The same commands in a body of exactly MAX_BODY_BYTES replay their answers; one byte more is refused whole
    // (a frame's bytes are counted where frames are read: test/socket/).
    const exact = JSON.stringify(entry === "batch" ? { commands: batch.commands } : batch);
    const padded = exact + " ".repeat(MAX_BODY_BYTES - bytesOf(exact));
    expect(await sendText(entry, path, padded)).toEqual(first);
    if (entry === "batch") expect(await sendText(entry, path, `${padded} `)).toMatchObject({ status: 413, body: { error: { code: "payload_too_large" } } });
    expect(await lastSeqOf(path)).toBe(events.length);
  });
});

describe("maximal metadata and run results", { timeout: TIMEOUT_MS }, () => {
  /** A JSON object whose compact text is exactly MAX_JSON_BYTES UTF-8 bytes. */
  const maximalValue = (tag: string) => {
    const skeleton = bytesOf({ tag, fill: "é€😀" });
    const value = { tag, fill: `é€😀${"x".repeat(MAX_JSON_BYTES - skeleton)}` };
    expect(bytesOf(value)).toBe(MAX_JSON_BYTES);
    return value;
  };

  it.each(["batch", "socket"] as const)("Should keep a session's and a 10,000-step task's maximal metadata and 15 maximal run results sent in one %s, after restarts of both objects", async (entry) => {
    // Session metadata is stored with the session record; what reads it back is a retried create.
    const sessionKey = uniqueId("session");
    const sessionBody = { metadata: maximalValue("session") };
    const session = expectOk(await call("POST", "/v1/sessions", ADMIN, sessionBody, { "idempotency-key": sessionKey }), 201);
    const s: TestSession = { sid: session.session_id, orch: session.orchestrator.token, observer: session.observer.token };
    const id = uniqueId("meta");
    const path = `/v1/sessions/${s.sid}/tasks/${id}`;
    const metadata = maximalValue("task");
    const body = largestFitting((length) => ({ task_id: id, wal_name: id, title: "Large", metadata, steps: Array.from({ length: MAX_STEPS }, (_, i) => ({ step_id: `s${i}`, title: titleOf(`${i}:`, length), summary: "", depends_on_step_ids: [] })) }), MAX_TITLE);
    expectOk(await call("POST", `/v1/sessions/${s.sid}/tasks`, s.orch, body), 201);

    // 15 runs each finish with a maximal result in one batch of about 1 MiB.
    const runs = [];
    for (let i = 0; i < 15; i++) runs.push(await dispatch(s, path, { agent_id: `w${i}` }));
    const results = runs.map((_, i) => maximalValue(`run ${i}`));
    const commands = runs.map((w, i) => ({ token: w.token, method: "POST", path: `${path}/runs/${w.run_id}/finish`, body: { outcome: "finished", result: results[i] } }));
    expect(bytesOf({ id: 1, commands })).toBeLessThanOrEqual(MAX_BODY_BYTES);
    const previous = S;
    S = s;
    try {
      const answers = await send(entry, path, commands);
      expect((answers as any[]).map((r) => r.status)).toEqual(runs.map(() => 200));
      const { state } = await expectStoredAndReadBack(id, path);
      expect(state.task!.metadata).toEqual(metadata);
      expect(runs.map((w) => state.runs.get(w.run_id)!.result)).toEqual(results);
    } finally {
      S = previous;
    }
    const sessionStub = bindings.SESSIONS.get(bindings.SESSIONS.idFromName(s.sid));
    await evictDurableObject(sessionStub);
    expect(expectOk(await call("POST", "/v1/sessions", ADMIN, sessionBody, { "idempotency-key": sessionKey }), 201)).toEqual(session);
    expect(expectOk(await call("GET", `/v1/sessions/${s.sid}/tasks`, s.orch)).total).toBe(1);
  });
});

/** A high surrogate not followed by a low one, or a low one not after a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

describe("text in parts", () => {
  it("Should cut text into parts of at most the given length that join back to it, never between the halves of a surrogate pair", () => {
    const text = "a😀".repeat(1_000) + "😀".repeat(1_000) + "é€";
    for (const max of [2, 3, 7, 64]) {
      const parts = textParts(text, max);
      expect(parts.join("")).toBe(text);
      for (const part of parts) {
        expect(part.length).toBeLessThanOrEqual(max);
        expect(part.length).toBeGreaterThan(0);
        expect(part).not.toMatch(LONE_SURROGATE);
      }
    }
    expect(textParts("short", 64)).toEqual(["short"]);
  });
});
