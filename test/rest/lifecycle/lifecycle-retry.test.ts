/**
 * @module Retry policies over HTTP: a failed attempt waits for its retry and is reopened by the object's alarm;
 * a step that loses every worker stops at retry_exhausted; the orchestrator's own fail is final; the task's
 * default policy applies to steps without one.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../../support/helpers.js";
import { eventually, expectError, expectOk, holdAlarm, sleep, taskStub, uniqueId, walOf } from "../../support/support.js";

let S: TestSession;
beforeAll(async () => {
  S = await newSession();
});

interface StepView {
  step_id: string;
  status: string;
  status_reason: string | null;
  retry_at: string | null;
  retry_attempts: number;
}
interface AttemptView {
  attempt_id: string;
  status: string;
}

async function task(steps: ReturnType<typeof step>[], extra: Record<string, unknown> = {}) {
  const id = uniqueId("retry");
  return { id, t: await newTask(S, id, steps, extra), stub: taskStub(S.sid, id) };
}

async function view(t: string): Promise<{ steps: StepView[]; attempts: AttemptView[] }> {
  return expectOk(await call("GET", t, S.orch));
}
const stepOf = async (t: string, id: string) => (await view(t)).steps.find((s) => s.step_id === id)!;

describe("a retry policy", () => {
  it("Should retry a step the worker failed: it waits until retry_at, then the alarm reopens it and it is claimable again", async () => {
    const policy = { max_attempts: 3, initial_interval_ms: 1_000, backoff_coefficient: 2, max_interval_ms: 10_000 };
    const { t, stub } = await task([step("a", [], { retry_policy: policy })]);
    const w1 = await dispatch(S, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, w1.token));
    const failed = expectOk(await call("POST", `${t}/steps/a/status`, w1.token, { status: "failed", reason: "flaky upstream" }));
    await holdAlarm(stub);
    const waiting = await stepOf(t, "a");
    expect(waiting.retry_at).not.toBeNull();
    const failEvent = (await walOf(t, S.orch, `?after_seq=${failed.wal_seq - 1}`)).find((e) => e.event_type === "task_step_failed")!;
    expect(failEvent.payload).toMatchObject({ retry: { attempts: 1, max_attempts: 3, retry_at: waiting.retry_at } });
    expect(Date.parse(waiting.retry_at!)).toBe(Date.parse(failEvent.created_at) + 1_000);
    // Not claimable while it waits.
    const w2 = await dispatch(S, t);
    expect((await call("POST", `${t}/steps/a/claim`, w2.token)).status).toBe(409);

    await sleep(1_200);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const reopened = (await walOf(t, S.orch, `?after_seq=${failed.wal_seq}`)).filter((e) => e.step_id === "a");
    expect(reopened.map((e) => e.event_type)).toEqual(["task_step_reopened", "task_step_ready"]);
    expect(reopened[0]!.payload).toMatchObject({ reason: "retry_policy", by_retry_policy: true });

    const claim = expectOk(await call("POST", `${t}/steps/a/claim`, w2.token));
    expectOk(await call("POST", `${t}/steps/a/status`, w2.token, { status: "completed" }));
    const end = await view(t);
    expect(end.steps[0]).toMatchObject({ status: "completed", retry_at: null });
    expect(end.attempts.map((a) => a.status)).toEqual(["failed", "completed"]);
    expect(end.attempts[1]!.attempt_id).toBe(claim.attempt_id);
  });

  it("Should stop a step that loses every worker at failed / retry_exhausted once max_attempts are used", async () => {
    const { t, stub } = await task([step("a", [], { retry_policy: { max_attempts: 2, initial_interval_ms: 0, backoff_coefficient: 1, max_interval_ms: 0 } })], { step_lease_timeout_ms: 1_000 });
    // First attempt: claimed, lease lapses, the alarm expires it and schedules the retry.
    const w1 = await dispatch(S, t);
    const first = expectOk(await call("POST", `${t}/steps/a/claim`, w1.token));
    await holdAlarm(stub);
    await sleep(1_200);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    // The retry is due at once: the same alarm or the next one the object arms reopens the step.
    await runDurableObjectAlarm(stub);
    await eventually(async () => {
      const types = (await walOf(t, S.orch, `?after_seq=${first.wal_seq}`)).map((e) => e.event_type);
      expect(types).toEqual(["task_step_lease_expired", "task_step_reopened", "task_step_ready"]);
    });
    const expired = (await walOf(t, S.orch, `?after_seq=${first.wal_seq}`))[0]!;
    expect(expired.payload).toMatchObject({ retry: { attempts: 1, max_attempts: 2 } });

    // Second attempt: lost the same way, and the policy is used up.
    const w2 = await dispatch(S, t);
    const second = expectOk(await call("POST", `${t}/steps/a/claim`, w2.token));
    await holdAlarm(stub);
    await sleep(1_200);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const last = await walOf(t, S.orch, `?after_seq=${second.wal_seq}`);
    expect(last[0]).toMatchObject({ event_type: "task_step_lease_expired", payload: { retry: { attempts: 2, max_attempts: 2, retry_at: null } } });
    const end = await view(t);
    expect(end.steps[0]).toMatchObject({ status: "failed", status_reason: "retry_exhausted", retry_at: null });
    expect(end.attempts.map((a) => a.status)).toEqual(["lost", "lost"]);
    const w3 = await dispatch(S, t);
    expect((await call("POST", `${t}/steps/a/claim`, w3.token)).status).toBe(409);
  });

  it("Should not retry the orchestrator's own fail of a step", async () => {
    const { t } = await task([step("a", [], { retry_policy: { max_attempts: 5, initial_interval_ms: 0, backoff_coefficient: 1, max_interval_ms: 0 } })]);
    const w = await dispatch(S, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    expectOk(await call("POST", `${t}/steps/a/status`, S.orch, { status: "failed", reason: "wrong approach" }));
    const a = await stepOf(t, "a");
    expect(a).toMatchObject({ status: "failed", retry_at: null });
    const types = (await walOf(t, S.orch)).map((e) => e.event_type);
    expect(types).not.toContain("task_step_reopened");
  });

  it("Should apply the task's default_retry_policy to a step without its own", async () => {
    const { t } = await task([step("a")], { default_retry_policy: { max_attempts: 2, initial_interval_ms: 60_000, backoff_coefficient: 1, max_interval_ms: 60_000 } });
    const w = await dispatch(S, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "failed", reason: "flaky" }));
    const a = await stepOf(t, "a");
    expect(a.retry_at).not.toBeNull();
  });

  it("Should refuse a malformed retry policy with 400 validation_error and create nothing", async () => {
    const id = uniqueId("retry");
    const res = await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, { task_id: id, wal_name: id, title: "T", steps: [step("a", [], { retry_policy: { max_attempts: 0, initial_interval_ms: 0, backoff_coefficient: 1, max_interval_ms: 0 } })] });
    expectError(res, 400, "validation_error");
    expectError(await call("GET", `/v1/sessions/${S.sid}/tasks/${id}`, S.orch), 404, "not_found");
  });
});
