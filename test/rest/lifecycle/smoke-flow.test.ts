import { describe, expect, it } from "vitest";
import { call, dispatch, newSession, newTask, step } from "../../support/helpers.js";

describe("smoke", () => {
  it("Should run a small DAG end to end", async () => {
    const s = await newSession();
    const t = await newTask(s, "t1", [step("a"), step("b", ["a"])]);
    const w = await dispatch(s, t, { max_steps: 2 });
    const c1 = await call("POST", `${t}/steps/claim-next`, w.token);
    expect(c1.status, JSON.stringify(c1.body)).toBe(200);
    expect(c1.body.step.step_id).toBe("a");
    const u = await call("POST", `${t}/steps/a/status`, w.token, { status: "completed", result_summary: "ok", claim_next: true });
    expect(u.status, JSON.stringify(u.body)).toBe(200);
    expect(u.body.next.step.step_id).toBe("b");
    await call("POST", `${t}/steps/b/status`, w.token, { status: "completed" });
    const done = await call("POST", `${t}/complete`, s.orch, {});
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.task.status).toBe("completed");
    const list = await call("GET", `/v1/sessions/${s.sid}/tasks?include_terminal=true`, s.orch);
    expect(list.status).toBe(200);
    const wal = await call("GET", `${t}/wal`, s.observer);
    expect(wal.status).toBe(200);
    console.log(list.body, String(wal.body).split("\n").length);
  });
});
