/** Delegated steps whose delegate is a child task in the same session (docs/model.md "Delegated steps"), through the service. */
import { describe, expect, it } from "vitest";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { eventually, expectOk, walOf } from "../support/support.js";

/** A step delegated to a child task of `steps`. */
function childStep(id: string, deps: string[], steps: ReturnType<typeof step>[], extra: Record<string, unknown> = {}) {
  return step(id, deps, { delegate: { kind: "task", task: { title: `Child of ${id}`, summary: `Sub-plan for ${id}`, steps } }, ...extra });
}

async function getTask(s: TestSession, taskId: string): Promise<any> {
  return expectOk(await call("GET", `/v1/sessions/${s.sid}/tasks/${taskId}`, s.orch));
}

/** The delegation record of the parent's step, once the child exists. */
async function childOf(s: TestSession, parentId: string, stepId: string): Promise<string> {
  return eventually(async () => {
    const dag = await getTask(s, parentId);
    const d = dag.delegations?.find((x: any) => x.step_id === stepId && x.status === "active");
    expect(d, JSON.stringify(dag.delegations)).toBeDefined();
    return d.child_task_id as string;
  }, 5_000);
}

/** Runs every step of a child task with one worker, then completes it. */
async function runChild(s: TestSession, childId: string, stepIds: string[], artifacts: Record<string, string[]> = {}): Promise<void> {
  const path = `/v1/sessions/${s.sid}/tasks/${childId}`;
  const w = await dispatch(s, path, { max_steps: stepIds.length });
  for (const id of stepIds) {
    expectOk(await call("POST", `${path}/steps/claim-next`, w.token));
    expectOk(await call("POST", `${path}/steps/${id}/status`, w.token, { status: "completed", result_summary: `did ${id}`, artifact_ids: artifacts[id] ?? [] }));
  }
  expectOk(await call("POST", `${path}/complete`, s.orch, { reason: "all parts done" }));
}

describe("a step delegated to a child task", { timeout: 30_000 }, () => {
  it("Should create the child with its parent links, settle the step with the child's result and artifacts when the child completes, and ready the dependants", async () => {
    const s = await newSession();
    await newTask(s, "plan", [step("a"), childStep("sub", ["a"], [step("x"), step("y", ["x"])]), step("after", ["sub"])]);
    const path = `/v1/sessions/${s.sid}/tasks/plan`;
    const w = await dispatch(s, path);
    expectOk(await call("POST", `${path}/steps/claim-next`, w.token));
    expectOk(await call("POST", `${path}/steps/a/status`, w.token, { status: "completed" }));
    const childId = await childOf(s, "plan", "sub");
    const child = await getTask(s, childId);
    expect(child.task).toMatchObject({ parent_task_id: "plan", root_task_id: "plan", delegated_from: { task_id: "plan", step_id: "sub" } });
    expect(child.steps.map((x: any) => x.step_id)).toEqual(["x", "y"]);
    const parentStep = (await getTask(s, "plan")).steps.find((x: any) => x.step_id === "sub");
    expect(parentStep).toMatchObject({ status: "running", claimed_by_agent_id: "runtime" });

    await runChild(s, childId, ["x", "y"], { y: ["report.md"] });
    const settled = await eventually(async () => {
      const dag = await getTask(s, "plan");
      const sub = dag.steps.find((x: any) => x.step_id === "sub");
      expect(sub.status).toBe("completed");
      return dag;
    }, 5_000);
    const sub = settled.steps.find((x: any) => x.step_id === "sub");
    expect(sub.result_summary).toBe("all parts done");
    expect(sub.artifact_ids).toEqual(["report.md"]);
    expect(settled.steps.find((x: any) => x.step_id === "after").status).toBe("ready");
    await eventually(async () => expect((await getTask(s, childId)).task.delivery_state).toBe("delivered"), 5_000);
    const types = (await walOf(path, s.orch)).map((e) => e.event_type);
    expect(types).toEqual(expect.arrayContaining(["step_delegated", "delegation_updated", "delegation_settled", "task_step_completed", "worker_run_ended"]));
  });

  it("Should refuse a worker's claim of a delegated step", async () => {
    const s = await newSession();
    await newTask(s, "p2", [childStep("sub", [], [step("x")])]);
    const path = `/v1/sessions/${s.sid}/tasks/p2`;
    await childOf(s, "p2", "sub");
    const w = await dispatch(s, path);
    const res = await call("POST", `${path}/steps/claim-next`, w.token);
    expect(res.body.no_step_claimed).toBe(true);
  });

  it("Should fail the step when the child fails, retry with a new child under the retry policy, and keep the first child linked", async () => {
    const s = await newSession();
    const policy = { max_attempts: 2, initial_interval_ms: 0, backoff_coefficient: 1, max_interval_ms: 0 };
    await newTask(s, "p3", [childStep("sub", [], [step("x")], { retry_policy: policy })]);
    const first = await childOf(s, "p3", "sub");
    expectOk(await call("POST", `/v1/sessions/${s.sid}/tasks/${first}/fail`, s.orch, { reason: "bad data" }));
    const second = await eventually(async () => {
      const dag = await getTask(s, "p3");
      const live = dag.delegations.find((x: any) => x.status === "active" && x.child_task_id !== first);
      expect(live).toBeDefined();
      return live.child_task_id as string;
    }, 8_000);
    expect(second).not.toBe(first);
    const dag = await getTask(s, "p3");
    expect(dag.delegations.find((x: any) => x.child_task_id === first)).toMatchObject({ status: "closed", outcome: "failed" });
    expect(dag.steps[0].attempt_ids).toHaveLength(2);
    await runChild(s, second, ["x"]);
    await eventually(async () => expect((await getTask(s, "p3")).steps[0].status).toBe("completed"), 5_000);
  });

  it("Should cancel unfinished children three levels deep when the root is cancelled, and create no new child under it", async () => {
    const s = await newSession();
    const leaf = [step("work")];
    const middle = [childStep("deeper", [], leaf)];
    await newTask(s, "root", [childStep("mid", [], middle), childStep("later", ["mid"], [step("z")])]);
    const mid = await childOf(s, "root", "mid");
    const deep = await childOf(s, mid, "deeper");
    expectOk(await call("POST", `/v1/sessions/${s.sid}/tasks/root/cancel`, s.orch, { reason: "stop everything" }));
    for (const id of [mid, deep]) {
      await eventually(async () => expect((await getTask(s, id)).task.status).toBe("cancelled"), 8_000);
    }
    const root = await eventually(async () => {
      const dag = await getTask(s, "root");
      expect(dag.delegations.every((d: any) => d.status === "closed")).toBe(true);
      return dag;
    }, 8_000);
    expect(root.delegations).toHaveLength(1);
    expect(root.runs.every((r: any) => r.status !== "active" && r.status !== "cancelling")).toBe(true);
  });
});

describe("a delegated step's child task as written", () => {
  it.each([
    ["a cycle", [step("x", ["y"]), step("y", ["x"])], "dependency_cycle"],
    ["an unknown dependency", [step("x", ["nope"])], "unknown_dependency"],
    ["a step twice", [step("x"), step("x")], "duplicate_step"],
  ])("Should refuse a child task with %s when the parent is created, and when the step is added", async (_name, steps, code) => {
    const s = await newSession();
    const created = await call("POST", `/v1/sessions/${s.sid}/tasks`, s.orch, { task_id: "bad", wal_name: "bad", title: "Bad", steps: [childStep("sub", [], steps)] });
    expect(created.status, JSON.stringify(created.body)).toBeGreaterThanOrEqual(400);
    expect(created.status).toBeLessThan(500);
    expect(created.body.error.code).toBe(code);
    expect((await call("GET", `/v1/sessions/${s.sid}/tasks/bad`, s.orch)).status).toBe(404);
    await newTask(s, "fine", [step("a")]);
    const added = await call("PATCH", `/v1/sessions/${s.sid}/tasks/fine`, s.orch, { ops: [{ op: "add_step", step: childStep("sub", [], steps) }] });
    expect(added.body.error.code).toBe(code);
  });
});

describe("a delegated child in the session's task graph", { timeout: 30_000 }, () => {
  it("Should show the parent_child edge with the delegating step, its delegation and the child's delivery", async () => {
    const s = await newSession();
    await newTask(s, "gp", [childStep("sub", [], [step("x")])]);
    const childId = await childOf(s, "gp", "sub");
    await runChild(s, childId, ["x"]);
    const graph = await eventually(async () => {
      const page = expectOk(await call("GET", `/v1/sessions/${s.sid}/graph`, s.observer));
      const node = page.nodes.find((n: any) => n.task_id === childId);
      expect(node?.delivery_state).toBe("delivered");
      return page;
    }, 8_000);
    const dag = await getTask(s, "gp");
    const edge = graph.edges.find((e: any) => e.kind === "parent_child" && e.to_task_id === childId);
    expect(edge).toMatchObject({
      from_task_id: "gp",
      implicit: true,
      ref: dag.delegations[0].delegation_id,
      reason: "delegated by step sub",
      metadata: { step_id: "sub", delegation_id: dag.delegations[0].delegation_id, delivery_state: "delivered" },
    });
    expect(graph.nodes.find((n: any) => n.task_id === "gp")).toMatchObject({ delivery_state: null, parent_task_id: null });
  });
});
