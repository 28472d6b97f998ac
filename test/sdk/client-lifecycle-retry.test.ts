/**
 * Retry policies and the task record through the SDK against the real service: the fields createTask
 * takes come back in the DAG, and `orchestrate` leaves a step its policy retries to the runtime.
 */
import { SELF } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { type FetchLike, orchestrate, RuntimeClient } from "../../src/client/index.js";
import { ADMIN, step } from "../support/helpers.js";
import { BASE, uniqueId } from "../support/support.js";

const selfFetch: FetchLike = SELF.fetch.bind(SELF);

let sid: string;
let orch: RuntimeClient;
beforeAll(async () => {
  const admin = new RuntimeClient({ baseUrl: BASE, token: ADMIN, fetch: selfFetch, retry: { baseDelayMs: 1, maxDelayMs: 5 } });
  const created = await admin.createSession();
  sid = created.session_id;
  orch = admin.withToken(created.orchestrator.token);
});

async function newTask(steps: ReturnType<typeof step>[], extra: Record<string, unknown> = {}): Promise<string> {
  const id = uniqueId("r");
  await orch.createTask(sid, { task_id: id, wal_name: id, title: `Task ${id}`, steps, ...extra });
  return `/v1/sessions/${sid}/tasks/${id}`;
}

describe("retry policies and the task record through the SDK", () => {
  it("Should store the record fields and policies given to createTask and return them in the DAG", async () => {
    const policy = { max_attempts: 3, initial_interval_ms: 500, backoff_coefficient: 2, max_interval_ms: 2_000 };
    const t = await newTask([step("a", [], { retry_policy: policy })], {
      objective: "Ship the report",
      visibility: "background",
      priority: 2,
      acceptance: { criteria: "two pages" },
      metadata: { team: "research" },
      default_retry_policy: { ...policy, max_attempts: 2 },
    });
    const view = await orch.getTask(t);
    expect(view.task).toMatchObject({ objective: "Ship the report", visibility: "background", priority: 2, acceptance: { criteria: "two pages" }, metadata: { team: "research" }, default_retry_policy: { max_attempts: 2 } });
    expect(view.steps[0]).toMatchObject({ retry_policy: policy, retry_attempts: 0, retry_at: null });
  });

  it("Should let the runtime retry a failed attempt under orchestrate, which neither reopens it nor calls the task stalled", async () => {
    const t = await newTask([step("a", [], { retry_policy: { max_attempts: 3, initial_interval_ms: 300, backoff_coefficient: 2, max_interval_ms: 300 } })]);
    let attempts = 0;
    const result = await orchestrate(orch, t, {
      handler: () => {
        attempts += 1;
        if (attempts === 1) throw new Error("flaky source");
        return { result_summary: "second time lucky" };
      },
      pollMs: 20,
    });
    expect(result.status).toBe("completed");
    const wal = (await orch.walExport(t)).events;
    const reopens = wal.filter((e) => e.event_type === "task_step_reopened");
    expect(reopens).toHaveLength(1);
    expect(reopens[0]!.payload).toMatchObject({ by_retry_policy: true });
    expect(result.view.steps[0]).toMatchObject({ status: "completed", attempt_ids: [expect.any(String), expect.any(String)] });
  });

  it("Should fail the task under orchestrate's default once the step's retries are used up (retry_exhausted), reopening nothing itself", async () => {
    const t = await newTask([step("a", [], { retry_policy: { max_attempts: 2, initial_interval_ms: 0, backoff_coefficient: 1, max_interval_ms: 0 } })]);
    const result = await orchestrate(orch, t, {
      handler: () => {
        throw new Error("always broken");
      },
      pollMs: 20,
    });
    expect(result.status).toBe("failed");
    expect(result.view.steps[0]).toMatchObject({ status: "failed", status_reason: "retry_exhausted", attempt_ids: [expect.any(String), expect.any(String)] });
    const wal = (await orch.walExport(t)).events;
    expect(wal.filter((e) => e.event_type === "task_step_reopened").map((e) => e.payload)).toEqual([expect.objectContaining({ by_retry_policy: true })]);
  });
});
