/**
 * @module Pause and resume over HTTP: a paused task takes no dispatch and no claim while its held steps go on;
 * resume brings it back; who may do it, and refusals that write nothing.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../../support/helpers.js";
import { expectOk, expectRefusedWritingNothing, expectWriteAnswer, mintRole, uniqueId, walOf } from "../../support/support.js";

let S: TestSession;
beforeAll(async () => {
  S = await newSession();
});

async function task() {
  const id = uniqueId("pause");
  const t = await newTask(S, id, [step("a"), step("b"), step("c", ["a", "b"])]);
  return { id, t };
}

describe("POST .../pause and .../resume", () => {
  it("Should refuse claims and dispatch while paused, let the held step settle, and take claims again once resumed", async () => {
    const { id, t } = await task();
    const holder = await dispatch(S, t);
    const idle = await dispatch(S, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, holder.token));

    const paused = expectOk(await call("POST", `${t}/pause`, S.orch, { reason: "budget review" }));
    expectWriteAnswer(paused, id);
    expect(paused.task.status).toBe("paused");
    const view = expectOk(await call("GET", t, S.observer));
    expect(view.task).toMatchObject({ status: "paused" });

    await expectRefusedWritingNothing(t, S.orch, () => call("POST", `${t}/steps/b/claim`, idle.token), 409, "task_not_dispatchable");
    await expectRefusedWritingNothing(t, S.orch, () => call("POST", `${t}/steps/claim-next`, idle.token), 409, "task_not_dispatchable");
    await expectRefusedWritingNothing(t, S.orch, () => call("POST", `${t}/workers`, S.orch, {}), 409, "task_not_dispatchable");
    await expectRefusedWritingNothing(t, S.orch, () => call("POST", `${t}/pause`, S.orch, {}), 409, "invalid_transition");
    // The held step goes on: progress and completion by its holder are taken.
    expectOk(await call("POST", `${t}/steps/a/progress`, holder.token, { summary: "still working" }));
    expectOk(await call("POST", `${t}/steps/a/status`, holder.token, { status: "completed" }));

    const resumed = expectOk(await call("POST", `${t}/resume`, S.orch, { reason: "approved" }));
    expectWriteAnswer(resumed, id);
    expect(resumed.task.status).not.toBe("paused");
    const claim = expectOk(await call("POST", `${t}/steps/b/claim`, idle.token));
    expect(claim.step).toMatchObject({ step_id: "b", claimed_by_run_id: idle.run_id });
    const types = (await walOf(t, S.orch, `?after_seq=${paused.wal_seq - 1}`)).map((e) => e.event_type);
    expect(types).toEqual(expect.arrayContaining(["task_paused", "task_resumed"]));
    expect(types.indexOf("task_paused")).toBeLessThan(types.indexOf("task_resumed"));
  });

  it("Should refuse pause and resume from every role but the orchestrator with 403 tool_not_available, writing nothing", async () => {
    const { t } = await task();
    const worker = await dispatch(S, t);
    const approver = await mintRole(S, "approver");
    for (const token of [worker.token, S.observer, approver]) {
      await expectRefusedWritingNothing(t, S.orch, () => call("POST", `${t}/pause`, token, {}), 403, "tool_not_available");
    }
    expectOk(await call("POST", `${t}/pause`, S.orch));
    for (const token of [worker.token, S.observer, approver]) {
      await expectRefusedWritingNothing(t, S.orch, () => call("POST", `${t}/resume`, token, {}), 403, "tool_not_available");
    }
  });

  it("Should refuse resuming a task that is not paused, and pausing a finished one, with 409, writing nothing", async () => {
    const { t } = await task();
    await expectRefusedWritingNothing(t, S.orch, () => call("POST", `${t}/resume`, S.orch, {}), 409, "invalid_transition");
    expectOk(await call("POST", `${t}/cancel`, S.orch, {}));
    await expectRefusedWritingNothing(t, S.orch, () => call("POST", `${t}/pause`, S.orch, {}), 409, "task_terminal");
  });

  it("Should refuse a bad body with 400 validation_error, writing nothing", async () => {
    const { t } = await task();
    await expectRefusedWritingNothing(t, S.orch, () => call("POST", `${t}/pause`, S.orch, { reason: 5 }), 400, "validation_error");
    await expectRefusedWritingNothing(t, S.orch, () => call("POST", `${t}/pause`, S.orch, { why: "x" }), 400, "validation_error");
  });
});
