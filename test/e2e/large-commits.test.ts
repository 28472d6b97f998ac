/**
 * Commits larger than one SQLite row against a real `wrangler dev`, whose workerd refuses a row past 2,200,000 bytes
 * (SQLITE_TOOBIG) as a deployed object refuses one past 2 MB, while the test pool's newer workerd takes 8 MiB: a task
 * created with 10,000 steps and a PATCH of 10,000 `add_step` ops, each in a body of about 1 MiB, are answered 2xx,
 * and the WAL export gives back every event. The restart and replay cases are test/objects/large-commits.test.ts.
 */
import { beforeAll, describe, expect, it, inject } from "vitest";
import { defaultAdminToken } from "../../scripts/dev-server.js";

/** The e2e project's shared dev server (test/e2e/support/shared-server.ts). */
let base: string;
let sessionPath: string;
let orchestrator: string;

async function send(method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${orchestrator}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(60_000),
  });
  return { status: res.status, text: await res.text() };
}

beforeAll(async () => {
  base = inject("sharedDevServerBase");
  orchestrator = defaultAdminToken();
  const session = await send("POST", "/v1/sessions", {});
  expect(session.status, session.text).toBe(201);
  const body = JSON.parse(session.text);
  sessionPath = `/v1/sessions/${body.session_id}`;
  orchestrator = body.orchestrator.token;
});

const MAX_BODY_BYTES = 1_048_576;
const bytesOf = (body: unknown) => new TextEncoder().encode(JSON.stringify(body)).length;

/** A title of `length` units or a little more: the step's number, then 1-, 2-, 3- and 4-byte characters. */
const titleOf = (i: number, length: number) => {
  let title = `${i}:`;
  while (title.length < length) title += ["a", "é", "€", "😀"][title.length % 4];
  return title;
};
/** 10,000 steps with titles of `length` units. */
const steps = (length: number) => Array.from({ length: 10_000 }, (_, i) => ({ step_id: `s${i}`, title: titleOf(i, length), summary: "", depends_on_step_ids: [] }));

/** `make(length)` with the longest titles whose body still fits MAX_BODY_BYTES. */
function longestFitting(make: (length: number) => unknown): unknown {
  let lo = 1;
  let hi = 200;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (bytesOf(make(mid)) <= MAX_BODY_BYTES) lo = mid;
    else hi = mid - 1;
  }
  const body = make(lo);
  expect(bytesOf(body)).toBeLessThanOrEqual(MAX_BODY_BYTES);
  return body;
}

/** Every event of the task's WAL export, in order from 1. */
async function exportedSeqs(taskPath: string): Promise<number[]> {
  const res = await send("GET", `${taskPath}/wal?limit=all`);
  expect(res.status, res.text.slice(0, 300)).toBe(200);
  return res.text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line).wal_seq);
}

describe("commits larger than one SQLite row under wrangler dev", () => {
  it("Should create a task of 10,000 steps and take a PATCH of 10,000 add_step ops, and export every event", async () => {
    const created = await send("POST", `${sessionPath}/tasks`, longestFitting((length) => ({ task_id: "created", wal_name: "created", title: "Large", steps: steps(length) })));
    expect(created.status, created.text.slice(0, 300)).toBe(201);
    expect(JSON.parse(created.text).task.total_steps).toBe(10_000);
    const createdSeqs = await exportedSeqs(`${sessionPath}/tasks/created`);
    expect(createdSeqs).toEqual(createdSeqs.map((_, i) => i + 1));
    expect(createdSeqs.length).toBeGreaterThanOrEqual(1);

    expect((await send("POST", `${sessionPath}/tasks`, { task_id: "patched", wal_name: "patched", title: "Large", steps: [] })).status).toBe(201);
    const patched = await send("PATCH", `${sessionPath}/tasks/patched`, longestFitting((length) => ({ ops: steps(length).map((step) => ({ op: "add_step", step })) })));
    expect(patched.status, patched.text.slice(0, 300)).toBe(200);
    const answer = JSON.parse(patched.text);
    expect(answer.task.total_steps).toBe(10_000);
    const patchedSeqs = await exportedSeqs(`${sessionPath}/tasks/patched`);
    expect(patchedSeqs).toEqual(patchedSeqs.map((_, i) => i + 1));
    expect(patchedSeqs.at(-1)).toBe(answer.wal_seq);
  });
});
