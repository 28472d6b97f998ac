/**
 * A token's share of a task's (or session's) slots: SLOT_SHARE_PER_TOKEN_PERCENT (25 by default) of each pool.
 * In the test configuration: 2 of 8 SSE subscribers, 1 of 4 command sockets, 16 of 64 action long-polls and
 * 1 of 4 large reads. At its share a token is served; one more is 429 rate_limited naming the bound, while
 * another token is still served.
 */
import { runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { TaskGraphObject } from "../../durable-objects/task/task-graph-object.js";
import { call, newSession, newTask, step } from "../support/helpers.js";
import { BASE, eventually, expectError, expectOk, mintRole, taskStub, uniqueId } from "../support/support.js";
import { openStream, type SseReader } from "../support/sse.js";
import { openSocket } from "../support/test-socket.js";

/** Asserts a 429 for a token past its share of `pool`: Retry-After, and details naming the bound and the share. */
function expectShareReached(res: { status: number; body: any; headers: Headers }, pool: string, share: number): void {
  expectError(res as never, 429, "rate_limited");
  expect(res.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
  expect(res.body.error.details).toMatchObject({ limit: `${pool}_per_token`, max: share, retry_after_ms: expect.any(Number) });
}

describe("A token's share of the SSE subscribers (2 of SSE_MAX_SUBSCRIBERS=8)", () => {
  it.each(["task", "session"])("Should serve a token its share of the %s stream, refuse it one more, and still serve another token", async (kind) => {
    const s = await newSession();
    const t = await newTask(s, uniqueId("share"), [step("a")]);
    const path = kind === "task" ? `${t}/events` : `/v1/sessions/${s.sid}/events`;
    const mine: SseReader[] = [await openStream(path, s.observer), await openStream(path, s.observer)];
    expectShareReached(await call("GET", path, s.observer), "sse_subscribers", 2);
    const other = await openStream(path, s.orch);
    // The token's own streams are untouched by the refusal.
    expect(await mine[0]!.next()).not.toBeNull();
    await Promise.all([...mine, other].map((r) => r.cancel()));
  });
});

describe("A token's share of the command sockets (1 of SOCKET_MAX_CONNECTIONS=4)", () => {
  it("Should give a token one socket, refuse it a second, and still give another orchestrator token one", async () => {
    const s = await newSession();
    const t = await newTask(s, uniqueId("share"), [step("a")]);
    const first = await openSocket(t, s.orch);
    const refused = await SELF.fetch(`${BASE}${t}/socket`, { headers: { upgrade: "websocket", authorization: `Bearer ${s.orch}` } });
    expectShareReached({ status: refused.status, body: await refused.json(), headers: refused.headers }, "sockets", 1);
    const other = await openSocket(t, await mintRole(s, "orchestrator"));
    first.ws.close(1000, "done");
    other.ws.close(1000, "done");
  });
});

describe("A token's share of the action long-polls (16 of 64)", () => {
  it("Should let a token hold 16 waits, refuse its 17th, still let another token wait, and answer them all when the action resolves", async () => {
    const s = await newSession();
    const tid = uniqueId("share");
    const t = await newTask(s, tid, [step("a")]);
    const asked = expectOk(await call("POST", `${t}/actions`, s.orch, { kind: "approval", prompt: "May the task go on?" }), 201);
    const poll = (token: string) => call("GET", `${t}/actions/${asked.action_id}?wait_ms=30000`, token);
    const waiting = () => runInDurableObject(taskStub(s.sid, tid), (o: TaskGraphObject) => (o as unknown as { waiters: { size: number } }).waiters.size);
    const polls = Array.from({ length: 16 }, () => poll(s.observer));
    await eventually(async () => expect(await waiting()).toBe(16));
    expectShareReached(await poll(s.observer), "action_waiters", 16);
    const other = poll(s.orch);
    await eventually(async () => expect(await waiting()).toBe(17));
    expectOk(await call("POST", `${t}/actions/${asked.action_id}/respond`, s.orch, { decision: "approved" }));
    for (const answer of await Promise.all([...polls, other])) expect(expectOk(answer).action.status).toBe("resolved");
  });
});

describe("A token's share of the large reads (1 of TASK_MAX_LARGE_READS=4)", () => {
  it("Should serve a token one large read at a time, refuse it a second while the first is unread, and still serve another token", async () => {
    const s = await newSession();
    const t = await newTask(s, uniqueId("share"), Array.from({ length: 300 }, (_, i) => step(`s${i}`)));
    // A large answer held, not read yet (a reader that is slow, or gone).
    const held = await SELF.fetch(`${BASE}${t}`, { headers: { authorization: `Bearer ${s.observer}` } });
    expect(held.status).toBe(200);
    expectShareReached(await call("GET", t, s.observer), "large_reads", 1);
    expect(expectOk(await call("GET", t, s.orch)).steps).toHaveLength(300);
    // Read to its end, the held answer frees the token's slot.
    expect(JSON.parse(await held.text()).steps).toHaveLength(300);
    expect(expectOk(await call("GET", t, s.observer)).steps).toHaveLength(300);
  });
});
