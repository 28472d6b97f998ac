/**
 * A keyed write's route answer is the text its idempotency record holds (encoded once, not again by the route):
 * the first answer and a retry's are the same bytes, and that text is the whole answer — the update, the next
 * step claim_next took, the task view — never an earlier form of it. An unkeyed write answers the same shape.
 */
import { SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";

const BASE = "http://runtime.test";
import { uniqueId, walOf } from "../support/support.js";

let S: TestSession;
beforeAll(async () => {
  S = await newSession();
});

async function post(path: string, token: string, body: unknown, key?: string): Promise<{ status: number; text: string }> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, "content-type": "application/json", ...(key === undefined ? {} : { "idempotency-key": key }) };
  const res = await SELF.fetch(`${BASE}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
  return { status: res.status, text: await res.text() };
}

describe("a keyed write's answer text", () => {
  it("is the same bytes first and on retry, and holds the whole answer (update, next claim, task)", async () => {
    const t = await newTask(S, uniqueId("k"), [step("a"), step("b")]);
    const w = await dispatch(S, t, { agent_id: "w1", max_steps: 2 });
    const claimed = await post(`${t}/steps/claim-next`, w.token, {}, "claim-1");
    expect(claimed.status, claimed.text).toBe(200);
    expect(JSON.parse(claimed.text).step.step_id).toBe("a");

    const body = { status: "completed", result_summary: "done", claim_next: true };
    const first = await post(`${t}/steps/a/status`, w.token, body, "done-a");
    expect(first.status, first.text).toBe(200);
    const answer = JSON.parse(first.text);
    expect(answer.next.step.step_id).toBe("b");
    expect(answer.task.step_counts.completed).toBe(1);
    const wal = await walOf(t, S.orch);

    const retried = await post(`${t}/steps/a/status`, w.token, body, "done-a");
    expect(retried.status).toBe(200);
    expect(retried.text).toBe(first.text);
    expect(await walOf(t, S.orch)).toEqual(wal);

    // The same write unkeyed, on a fresh task, answers the same shape.
    const u = await newTask(S, uniqueId("k"), [step("a"), step("b")]);
    const uw = await dispatch(S, u, { agent_id: "w1", max_steps: 2 });
    await post(`${u}/steps/claim-next`, uw.token, {});
    const unkeyed = JSON.parse((await post(`${u}/steps/a/status`, uw.token, body)).text);
    expect(Object.keys(unkeyed).sort()).toEqual(Object.keys(answer).sort());
    expect(unkeyed.next.step.step_id).toBe("b");
  });
});
