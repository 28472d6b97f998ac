/**
 * Many requests of one session that meet an outdated revocation state at the same moment, against a real
 * `wrangler dev`: every one is answered, writes with bodies and reads alike. Each request reads the session's state
 * itself: a read in flight is never shared between requests, since a Worker request that awaits another request's
 * I/O may resume in that request's context ("Cannot perform I/O on behalf of a different request" on its own body)
 * or be cancelled with it (workerd then reports code that "had hung"). That failure was seen under bench:session's
 * 1,000 busy tasks; this test holds the property at a smaller load the test pool (one context for every request)
 * cannot show.
 */
import { beforeAll, describe, expect, it, inject } from "vitest";
import { defaultAdminToken } from "../../scripts/dev-server.js";

let base: string;

async function send(method: string, path: string, token: string, body?: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, text: await res.text() };
}

beforeAll(() => {
  base = inject("sharedDevServerBase");
});

describe("requests meeting an outdated revocation state together", () => {
  it("Should answer every one of 64 concurrent requests of one session, round after round", { timeout: 120_000 }, async () => {
    const created = await send("POST", "/v1/sessions", defaultAdminToken(), {});
    expect(created.status, created.text).toBe(201);
    const session = JSON.parse(created.text);
    const orch: string = session.orchestrator.token;
    const tasks = `/v1/sessions/${session.session_id}/tasks`;
    const task = await send("POST", tasks, orch, { task_id: "t1", wal_name: "t1", title: "Read me", summary: "", steps: [{ step_id: "a", title: "A", summary: "", depends_on_step_ids: [] }] });
    expect(task.status, task.text).toBe(201);
    for (let round = 0; round < 3; round++) {
      // REVOCATION_CHECK_MS (500 ms) passes: the next requests all find the session's state outdated.
      await new Promise((r) => setTimeout(r, 600));
      // Writes with bodies (read after the token check) and reads.
      const answers = await Promise.all(Array.from({ length: 64 }, (_, i) =>
        i % 2 === 0 ? send("PATCH", `${tasks}/t1`, orch, { ops: [{ op: "update_task", title: `Round ${round} write ${i}` }] }) : send("GET", `${tasks}?limit=1`, i % 4 === 1 ? session.observer.token : orch)));
      expect(answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.text.slice(0, 120)}`)).toEqual([]);
    }
  });
});
