/**
 * The counted caps a task object decides (docs/limits.md "Counted caps"): actions open at once in a task
 * (MAX_OPEN_ACTIONS_PER_TASK, at its default 1,000), actions one attempt asks (MAX_ACTIONS_PER_ATTEMPT, 4 in the test
 * pool) and child tasks one delegated step creates (MAX_CHILDREN_PER_STEP, 2 in the test pool). Each is accepted
 * at its limit and refused one past it with 409 limit_exceeded {limit, value, setting}, writing nothing, through
 * REST, a batch command, a socket frame and MCP.
 */
import { describe, expect, it } from "vitest";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { eventually, expectOk, walExport } from "../support/support.js";
import { COMMAND_SURFACES, expectLimitExceeded, through, type Write } from "../support/surfaces.js";

/** The test pool's settings (vitest.config.ts). */
const ACTIONS_PER_ATTEMPT = 4;
const CHILDREN_PER_STEP = 2;
const OPEN_ACTIONS_PER_TASK = 1_000;

/** An approval request: on the task, or on `stepId` when given. */
function ask(taskPath: string, prompt: string, stepId?: string): Write {
  const body = { kind: "approval", prompt };
  const taskId = taskPath.split("/").at(-1)!;
  return {
    method: "POST",
    path: stepId === undefined ? `${taskPath}/actions` : `${taskPath}/steps/${stepId}/actions`,
    body,
    tool: "agent.request_action",
    args: { task_id: taskId, ...(stepId === undefined ? {} : { step_id: stepId }), ...body },
  };
}

/** The orchestrator approves an action. */
async function approve(s: TestSession, taskPath: string, actionId: string): Promise<void> {
  expectOk(await call("POST", `${taskPath}/actions/${actionId}/respond`, s.orch, { decision: "approved" }));
}

describe("actions open at once in a task (MAX_OPEN_ACTIONS_PER_TASK, default 1,000)", { timeout: 120_000 }, () => {
  it("Should open the 1,000th action and refuse the next through REST, batch, socket and MCP, writing nothing", async () => {
    const s = await newSession();
    const t = await newTask(s, "asks", [step("a")]);
    // 999 open actions, in batches of the most commands one holds.
    for (let from = 0; from < OPEN_ACTIONS_PER_TASK - 1; from += 256) {
      const count = Math.min(256, OPEN_ACTIONS_PER_TASK - 1 - from);
      const commands = Array.from({ length: count }, (_, i) => ({ token: s.orch, method: "POST", path: `${t}/actions`, body: { kind: "approval", prompt: `filler ${from + i}` } }));
      const res = expectOk(await call("POST", `${t}/batch`, s.orch, { commands }));
      expect(res.results.every((r: { ok: boolean }) => r.ok)).toBe(true);
    }
    for (const surface of COMMAND_SURFACES) {
      const last = await through(surface, t, s.orch, ask(t, `last via ${surface}`));
      expect(last.ok, `${surface}: ${JSON.stringify(last.body)}`).toBe(true);
      const before = await walExport(t, s.orch);
      expectLimitExceeded(await through(surface, t, s.orch, ask(t, `over via ${surface}`)), { limit: OPEN_ACTIONS_PER_TASK, value: OPEN_ACTIONS_PER_TASK + 1, setting: "MAX_OPEN_ACTIONS_PER_TASK" });
      expect(await walExport(t, s.orch)).toBe(before);
      // Answering one frees its place for the next surface.
      await approve(s, t, last.body.action_id);
    }
    expect(expectOk(await call("GET", `${t}/actions?status=open&limit=1`, s.orch)).total).toBe(OPEN_ACTIONS_PER_TASK - 1);
  });
});

describe("actions one attempt asks (MAX_ACTIONS_PER_ATTEMPT)", { timeout: 60_000 }, () => {
  it.each(COMMAND_SURFACES)("Should let a claim ask its last action and refuse the next, answered ones counted (%s)", async (surface) => {
    const s = await newSession();
    const t = await newTask(s, `attempt-${surface}`, [step("a")]);
    const w = await dispatch(s, t);
    expectOk(await call("POST", `${t}/steps/a/claim`, w.token));
    for (let i = 1; i < ACTIONS_PER_ATTEMPT; i++) {
      const asked = expectOk(await call("POST", `${t}/steps/a/actions`, w.token, { kind: "approval", prompt: `question ${i}` }), 201);
      await approve(s, t, asked.action_id);
    }
    const last = await through(surface, t, w.token, ask(t, "the last question", "a"));
    expect(last.ok, JSON.stringify(last.body)).toBe(true);
    await approve(s, t, last.body.action_id);
    const before = await walExport(t, s.orch);
    expectLimitExceeded(await through(surface, t, w.token, ask(t, "one too many", "a")), { limit: ACTIONS_PER_ATTEMPT, value: ACTIONS_PER_ATTEMPT + 1, setting: "MAX_ACTIONS_PER_ATTEMPT" });
    expect(await walExport(t, s.orch)).toBe(before);
  });
});

describe("child tasks one delegated step creates (MAX_CHILDREN_PER_STEP)", { timeout: 60_000 }, () => {
  /** The step's live delegation's child, once it exists. */
  async function liveChild(s: TestSession, taskPath: string, known: readonly string[]): Promise<string> {
    return eventually(async () => {
      const dag = expectOk(await call("GET", taskPath, s.orch));
      const d = dag.delegations.find((x: any) => x.step_id === "sub" && x.status === "active" && !known.includes(x.child_task_id));
      expect(d, JSON.stringify(dag.delegations)).toBeDefined();
      return d.child_task_id as string;
    }, 5_000);
  }
  /** Cancels the child and waits for the parent's step to fail with it. */
  async function cancelChild(s: TestSession, taskPath: string, childId: string): Promise<void> {
    expectOk(await call("POST", `/v1/sessions/${s.sid}/tasks/${childId}/cancel`, s.orch, { reason: "not this way" }));
    await eventually(async () => {
      const dag = expectOk(await call("GET", taskPath, s.orch));
      expect(dag.steps.find((x: any) => x.step_id === "sub").status).toBe("failed");
    }, 5_000);
  }
  const reopen = (taskPath: string): Write => {
    const body = { ops: [{ op: "reopen_step", step_id: "sub" }] };
    return { method: "PATCH", path: taskPath, body, tool: "agent.task_update", args: { task_id: taskPath.split("/").at(-1)!, ...body } };
  };

  it.each(COMMAND_SURFACES)("Should reopen a failed delegated step for its last child and refuse the reopen past it (%s)", async (surface) => {
    const s = await newSession();
    const t = await newTask(s, `deleg-${surface}`, [step("sub", [], { delegate: { kind: "task", task: { title: "Child", summary: "", steps: [step("x")] } } })]);
    const children = [await liveChild(s, t, [])];
    await cancelChild(s, t, children[0]!);
    const again = await through(surface, t, s.orch, reopen(t));
    expect(again.ok, JSON.stringify(again.body)).toBe(true);
    children.push(await liveChild(s, t, children));
    expect(children).toHaveLength(CHILDREN_PER_STEP);
    await cancelChild(s, t, children[1]!);
    const before = await walExport(t, s.orch);
    expectLimitExceeded(await through(surface, t, s.orch, reopen(t)), { limit: CHILDREN_PER_STEP, value: CHILDREN_PER_STEP + 1, setting: "MAX_CHILDREN_PER_STEP", op_index: 0 });
    expect(await walExport(t, s.orch)).toBe(before);
  });
});
