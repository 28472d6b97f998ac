/**
 * @module The task record over HTTP: its fields round-trip through create, GET and the update_task patch
 * op; bad values write nothing; acceptance.required_artifacts holds complete back.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../../support/helpers.js";
import { expectError, expectOk, uniqueId, walExport } from "../../support/support.js";

let S: TestSession;
beforeAll(async () => {
  S = await newSession();
});

const RECORD = {
  objective: "Ship the quarterly report",
  task_kind: "report",
  task_family: "finance",
  visibility: "background",
  priority: 3,
  requested_by: "user:ana",
  owner: "team:finance",
  assignee: "agent:writer",
  scope: { region: "eu" },
  constraints: { budget_usd: 40 },
  task_profile: { tier: "standard" },
  acceptance: { criteria: "Numbers reconcile", required_artifacts: ["report.pdf"] },
  metadata: { source: "test" },
  thread_id: "thread-1",
  parent_task_id: "parent-1",
  root_task_id: "root-1",
  default_retry_policy: { max_attempts: 2, initial_interval_ms: 1_000, backoff_coefficient: 2, max_interval_ms: 5_000 },
};

describe("the task record", () => {
  it("Should round-trip every record field through create, GET and update_task", async () => {
    const id = uniqueId("rec");
    const t = await newTask(S, id, [step("a")], RECORD);
    expect(expectOk(await call("GET", t, S.observer)).task).toMatchObject(RECORD);

    const patch = { objective: "Ship it sooner", visibility: "foreground", priority: -1, scope: { region: "us" }, acceptance: { criteria: "Signed off" }, owner: null, thread_id: null };
    expectOk(await call("PATCH", t, S.orch, { ops: [{ op: "update_task", ...patch }] }));
    const after = expectOk(await call("GET", t, S.orch)).task;
    expect(after).toMatchObject({ ...RECORD, ...patch });
    expect(after.owner).toBeNull();
    expect(after.thread_id).toBeNull();
  });

  it.each([
    ["an unknown visibility", { visibility: "secret" }],
    ["a fractional priority", { priority: 1.5 }],
    ["an empty requested_by", { requested_by: "" }],
    ["a scope that is not an object", { scope: ["eu"] }],
    ["an acceptance with unknown fields", { acceptance: { criteria: "x", must: true } }],
    ["a retry policy without max_attempts", { default_retry_policy: { initial_interval_ms: 0, backoff_coefficient: 1, max_interval_ms: 0 } }],
  ])("Should refuse %s in update_task with 400 validation_error, writing nothing", async (_name, fields) => {
    const id = uniqueId("rec");
    const t = await newTask(S, id, [step("a")]);
    const before = await walExport(t, S.orch);
    expectError(await call("PATCH", t, S.orch, { ops: [{ op: "update_task", ...fields }] }), 400, "validation_error");
    expect(await walExport(t, S.orch)).toBe(before);
    const create = uniqueId("rec");
    expectError(await call("POST", `/v1/sessions/${S.sid}/tasks`, S.orch, { task_id: create, wal_name: create, title: "T", steps: [], ...fields }), 400, "validation_error");
  });

  it("Should refuse complete with 409 task_not_completeable while a required artifact is missing, writing nothing", async () => {
    const id = uniqueId("rec");
    const t = await newTask(S, id, [step("a")], { acceptance: { required_artifacts: ["report.pdf"] } });
    const w = await dispatch(S, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "completed", artifact_ids: ["draft.md"] }));
    const before = await walExport(t, S.orch);
    expectError(await call("POST", `${t}/complete`, S.orch, {}), 409, "task_not_completeable");
    expect(await walExport(t, S.orch)).toBe(before);
  });

  it("Should complete once the required artifacts are among the steps' artifacts", async () => {
    const id = uniqueId("rec");
    const t = await newTask(S, id, [step("a")], { acceptance: { required_artifacts: ["report.pdf"] } });
    const w = await dispatch(S, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    expectOk(await call("POST", `${t}/steps/a/status`, w.token, { status: "completed", artifact_ids: ["report.pdf"] }));
    expect(expectOk(await call("POST", `${t}/complete`, S.orch, {})).task.status).toBe("completed");
  });
});
