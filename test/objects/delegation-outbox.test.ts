/**
 * The delegation outbox across crashes: a task object evicted between any two steps of a child delegation (the
 * intent, the child's creation, its acknowledgement, the child's end, its report, the report's acknowledgement; and
 * on the cancel path the cancellation, its acknowledgement, the child's final report) loses nothing and duplicates
 * nothing. An outbound port is replaced by one that never answers (before the call reaches the other object, or
 * after it acted), the object crashes (the hung call dies with it), and the restarted object performs what its
 * WAL says is still owed.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { OutboundCalls } from "../../durable-objects/task/outbound-calls.js";
import type { TaskGraphObject } from "../../durable-objects/task/task-graph-object.js";
import type { ChildTaskRequest, WalEvent } from "../../src/core/index.js";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { eventually, expectOk, taskStub, walOf } from "../support/support.js";

type Port = "createChild" | "cancelChild" | "deliver";

/** A gated port: the arguments of every call it took, and the answers the real port gave (gate "after" only). */
interface Gate {
  readonly seen: unknown[][];
  readonly answered: unknown[];
}

/**
 * Replaces one outbound port of a task object with one that never answers: "before" the call reaches its target,
 * or "after" the target acted on it (its answer is then lost, as in a crash before the outcome is recorded).
 */
async function gate(stub: ReturnType<typeof taskStub>, port: Port, when: "before" | "after"): Promise<Gate> {
  const g: Gate = { seen: [], answered: [] };
  await runInDurableObject(stub, (instance: TaskGraphObject) => {
    const outbound = (instance as unknown as { shell: { outbound: OutboundCalls } }).shell.outbound;
    const real = outbound.ports;
    const call = real[port] as (...args: unknown[]) => Promise<unknown>;
    outbound.ports = {
      ...real,
      [port]: async (...args: unknown[]) => {
        g.seen.push(args);
        if (when === "after") g.answered.push(await call(...args));
        return new Promise(() => {});
      },
    };
  });
  return g;
}

/**
 * Crashes the task object (the platform's reset: the instance, its gate and the call it holds die) and runs the
 * alarm its restart armed for the owed call. Not evictDurableObject: when the alarm made the held call, eviction
 * waits for that alarm, which never ends. A reset object's stubs are dead, so fresh ones are made.
 */
async function crashAndRecover(s: TestSession, taskId: string): Promise<void> {
  const crashed = await runInDurableObject(taskStub(s.sid, taskId), (_instance, state) => state.abort("crash")).then(
    () => null,
    (e: unknown) => e,
  );
  expect(String(crashed)).toContain("crash");
  // The alarm may already have fired on its own; either way the owed call is made by the restarted object.
  await runDurableObjectAlarm(taskStub(s.sid, taskId));
}

/** A step delegated to a child task of one step "x". */
function childStep(id: string, deps: string[]) {
  return step(id, deps, { delegate: { kind: "task", task: { title: `Child of ${id}`, summary: `Sub-plan for ${id}`, steps: [step("x")] } } });
}

async function getTask(s: TestSession, taskId: string): Promise<any> {
  return expectOk(await call("GET", `/v1/sessions/${s.sid}/tasks/${taskId}`, s.orch));
}

/** The parent's one delegation, as GET task shows it. */
async function delegationOf(s: TestSession): Promise<any> {
  const dag = await getTask(s, "plan");
  expect(dag.delegations, JSON.stringify(dag.delegations)).toHaveLength(1);
  return dag.delegations[0];
}

/** The parent task "plan": step "a" for a worker, then "sub" delegated to a child task. */
async function newParent(s: TestSession): Promise<{ path: string; stub: ReturnType<typeof taskStub> }> {
  const path = await newTask(s, "plan", [step("a"), childStep("sub", ["a"])]);
  return { path, stub: taskStub(s.sid, "plan") };
}

/** Completes "a" with a worker, then reads the parent: the read's reconciliation takes up "sub" (step_delegated). */
async function readySub(s: TestSession, path: string): Promise<void> {
  const w = await dispatch(s, path);
  expectOk(await call("POST", `${path}/steps/claim-next`, w.token));
  expectOk(await call("POST", `${path}/steps/a/status`, w.token, { status: "completed" }));
  await getTask(s, "plan");
}

/** The child task's id once the parent's delegation is active. */
async function activeChild(s: TestSession): Promise<string> {
  return eventually(async () => {
    const d = await delegationOf(s);
    expect(d.status).toBe("active");
    return d.child_task_id as string;
  }, 5_000);
}

/** Runs the child's step "x" with a worker and completes the child. */
async function runChild(s: TestSession, childId: string): Promise<void> {
  const path = `/v1/sessions/${s.sid}/tasks/${childId}`;
  const w = await dispatch(s, path);
  expectOk(await call("POST", `${path}/steps/claim-next`, w.token));
  expectOk(await call("POST", `${path}/steps/x/status`, w.token, { status: "completed", result_summary: "did x", artifact_ids: ["x.md"] }));
  expectOk(await call("POST", `${path}/complete`, s.orch, { reason: "child done" }));
}

/** The delegation's run (the runtime's own, holding the step) has ended. */
function expectRunEnded(dag: any, runId: string): void {
  const run = dag.runs.find((r: any) => r.run_id === runId);
  expect(run, JSON.stringify(dag.runs)).toBeDefined();
  expect(["active", "cancelling"]).not.toContain(run.status);
}

const countOf = (wal: WalEvent[], type: string, stepId?: string) => wal.filter((e) => e.event_type === type && (stepId === undefined || e.step_id === stepId)).length;

/** The session's tasks, terminal ones included (each test has a session of its own). */
async function sessionTaskIds(s: TestSession): Promise<string[]> {
  const page = expectOk(await call("GET", `/v1/sessions/${s.sid}/tasks?include_terminal=true&limit=200`, s.orch));
  return page.tasks.map((t: { task_id: string }) => t.task_id).sort();
}

/** Once each: the delegation, the child, its report, and the step's completion with the child's result. */
async function expectCompletedOnce(s: TestSession, childId: string): Promise<void> {
  const sub = await eventually(async () => {
    const found = (await getTask(s, "plan")).steps.find((x: any) => x.step_id === "sub");
    expect(found.status).toBe("completed");
    return found;
  }, 5_000);
  expect(sub).toMatchObject({ result_summary: "child done", artifact_ids: ["x.md"] });
  await eventually(async () => expect((await getTask(s, childId)).task.delivery_state).toBe("delivered"), 5_000);
  expect(await delegationOf(s)).toMatchObject({ status: "closed", outcome: "completed", child_task_id: childId });

  const parentWal = await walOf(`/v1/sessions/${s.sid}/tasks/plan`, s.orch);
  expect(countOf(parentWal, "step_delegated")).toBe(1);
  expect(parentWal.filter((e) => e.event_type === "delegation_updated" && (e.payload as { status?: string }).status === "active")).toHaveLength(1);
  expect(countOf(parentWal, "delegation_settled")).toBe(1);
  expect(countOf(parentWal, "task_step_completed", "sub")).toBe(1);
  const childWal = await walOf(`/v1/sessions/${s.sid}/tasks/${childId}`, s.orch);
  expect(countOf(childWal, "task_created")).toBe(1);
  expect(countOf(childWal, "task_completed")).toBe(1);
  expect(childWal.filter((e) => e.event_type === "task_delivery_recorded").map((e) => (e.payload as { delivery_state: string }).delivery_state)).toEqual(["delivered"]);
  await eventually(async () => expect(await sessionTaskIds(s)).toEqual([childId, "plan"].sort()));
}

/**
 * Once each: the cancellation requested, the child cancelled, its report, the delegation closed; no run left open.
 * `acks`: how many acknowledgements of the cancellation the parent recorded (none when the child's report closed
 * the delegation first; never two).
 */
async function expectCancelledOnce(s: TestSession, childId: string, acks: number | "at most one"): Promise<void> {
  const d = await eventually(async () => {
    const found = await delegationOf(s);
    expect(found.status).toBe("closed");
    return found;
  }, 5_000);
  expect(d.child_task_id).toBe(childId);
  const parent = await getTask(s, "plan");
  expect(parent.task.status).toBe("cancelled");
  expectRunEnded(parent, d.run_id);
  const child = await eventually(async () => {
    const view = await getTask(s, childId);
    expect(view.task.delivery_state).toBe("delivered");
    return view;
  }, 5_000);
  expect(child.task.status).toBe("cancelled");

  const parentWal = await walOf(`/v1/sessions/${s.sid}/tasks/plan`, s.orch);
  expect(countOf(parentWal, "step_delegated")).toBe(1);
  expect(countOf(parentWal, "delegation_cancel_requested")).toBe(1);
  expect(countOf(parentWal, "delegation_closed")).toBe(1);
  expect(countOf(parentWal, "delegation_settled")).toBe(0);
  const acknowledged = parentWal.filter((e) => e.event_type === "delegation_updated" && (e.payload as { cancel_sent?: boolean }).cancel_sent === true).length;
  if (acks === "at most one") expect(acknowledged).toBeLessThanOrEqual(1);
  else expect(acknowledged).toBe(acks);
  const childWal = await walOf(`/v1/sessions/${s.sid}/tasks/${childId}`, s.orch);
  expect(countOf(childWal, "task_created")).toBe(1);
  expect(countOf(childWal, "task_cancelled")).toBe(1);
  expect(childWal.filter((e) => e.event_type === "task_delivery_recorded").map((e) => (e.payload as { delivery_state: string }).delivery_state)).toEqual(["delivered"]);
  await eventually(async () => expect(await sessionTaskIds(s)).toEqual([childId, "plan"].sort()));
}

describe("a crash between two steps of a child delegation that completes", { timeout: 20_000 }, () => {
  it("Should create the child once when the parent crashes after step_delegated, before the create call reached the child (1→2)", async () => {
    const s = await newSession();
    const { path, stub } = await newParent(s);
    const create = await gate(stub, "createChild", "before");
    await readySub(s, path);
    await eventually(async () => expect(create.seen).toHaveLength(1));
    const request = create.seen[0]![0] as ChildTaskRequest;
    expect(await delegationOf(s)).toMatchObject({ status: "starting", child_task_id: request.task_id });
    expect((await call("GET", `/v1/sessions/${s.sid}/tasks/${request.task_id}`, s.orch)).status).toBe(404);

    await crashAndRecover(s, "plan");
    const childId = await activeChild(s);
    expect(childId).toBe(request.task_id);
    await runChild(s, childId);
    await expectCompletedOnce(s, childId);
  });

  it("Should not create a second child when the parent crashes after the child was created, before the parent recorded it (2→3)", async () => {
    const s = await newSession();
    const { path, stub } = await newParent(s);
    const create = await gate(stub, "createChild", "after");
    await readySub(s, path);
    await eventually(async () => expect(create.answered).toEqual([{ ok: true }]));
    const request = create.seen[0]![0] as ChildTaskRequest;
    expect(countOf(await walOf(`/v1/sessions/${s.sid}/tasks/${request.task_id}`, s.orch), "task_created")).toBe(1);
    expect(await delegationOf(s)).toMatchObject({ status: "starting" });

    await crashAndRecover(s, "plan");
    const childId = await activeChild(s);
    expect(childId).toBe(request.task_id);
    await runChild(s, childId);
    await expectCompletedOnce(s, childId);
  });

  it("Should deliver the child's result once when the child crashes after it ended, before its report reached the parent (4→5)", async () => {
    const s = await newSession();
    const { path } = await newParent(s);
    await readySub(s, path);
    const childId = await activeChild(s);
    const deliver = await gate(taskStub(s.sid, childId), "deliver", "before");
    await runChild(s, childId);
    await eventually(async () => expect(deliver.seen).toHaveLength(1));
    expect((await getTask(s, childId)).task).toMatchObject({ status: "completed", delivery_state: "pending" });
    expect((await getTask(s, "plan")).steps.find((x: any) => x.step_id === "sub").status).toBe("running");

    await crashAndRecover(s, childId);
    await expectCompletedOnce(s, childId);
  });

  it("Should settle the parent's step once when the child crashes after the parent took its report, before the child recorded it delivered (5→6)", async () => {
    const s = await newSession();
    const { path } = await newParent(s);
    await readySub(s, path);
    const childId = await activeChild(s);
    const deliver = await gate(taskStub(s.sid, childId), "deliver", "after");
    await runChild(s, childId);
    await eventually(async () => expect(deliver.answered).toEqual(["delivered"]));
    expect((await getTask(s, "plan")).steps.find((x: any) => x.step_id === "sub").status).toBe("completed");
    expect((await getTask(s, childId)).task.delivery_state).toBe("pending");

    await crashAndRecover(s, childId);
    await expectCompletedOnce(s, childId);
  });
});

describe("a crash between two steps of a child delegation that is cancelled", { timeout: 20_000 }, () => {
  /** A parent with an active child, the child's report to it held by a gate (so the parent's side can be stopped first). */
  async function cancellableChild(s: TestSession, deliverGate: "before" | "after"): Promise<{ parentStub: ReturnType<typeof taskStub>; childId: string; deliver: Gate }> {
    const { path, stub } = await newParent(s);
    await readySub(s, path);
    const childId = await activeChild(s);
    const childStub = taskStub(s.sid, childId);
    return { parentStub: stub, childId, deliver: await gate(taskStub(s.sid, childId), "deliver", deliverGate) };
  }

  const cancelParent = async (s: TestSession) => expectOk(await call("POST", `/v1/sessions/${s.sid}/tasks/plan/cancel`, s.orch, { reason: "stop" }));

  it("Should cancel the child once when the parent crashes after the child took the cancellation, before the parent recorded its acknowledgement (cancel→ack)", async () => {
    const s = await newSession();
    const { parentStub, childId, deliver } = await cancellableChild(s, "before");
    const cancel = await gate(parentStub, "cancelChild", "after");
    await cancelParent(s);
    await eventually(async () => expect(cancel.answered).toEqual(["cancelled"]));
    expect((await getTask(s, childId)).task.status).toBe("cancelled");
    expect(await delegationOf(s)).toMatchObject({ status: "cancelling", cancel_sent_at: null });

    await crashAndRecover(s, "plan");
    // The restarted parent asks again; the child, already cancelled, acknowledges without cancelling twice.
    await eventually(async () => expect(await delegationOf(s)).toMatchObject({ status: "cancelling", cancel_sent_at: expect.any(String) }), 5_000);
    // The child's report was held meanwhile; its own restart sends it and closes the delegation.
    expect(deliver.seen).toHaveLength(1);
    await crashAndRecover(s, childId);
    await expectCancelledOnce(s, childId, 1);
  });

  it("Should close the delegation once when the child crashes after its cancellation was acknowledged, before its report reached the parent (ack→report)", async () => {
    const s = await newSession();
    const { childId, deliver } = await cancellableChild(s, "before");
    await cancelParent(s);
    await eventually(async () => expect(deliver.seen).toHaveLength(1));
    await eventually(async () => expect(await delegationOf(s)).toMatchObject({ status: "cancelling", cancel_sent_at: expect.any(String) }));
    expect((await getTask(s, childId)).task).toMatchObject({ status: "cancelled", delivery_state: "pending" });

    await crashAndRecover(s, childId);
    await expectCancelledOnce(s, childId, 1);
  });

  it("Should close the delegation once when the child crashes after the parent took its final report, before the child recorded it delivered (report→recorded)", async () => {
    const s = await newSession();
    const { childId, deliver } = await cancellableChild(s, "after");
    await cancelParent(s);
    await eventually(async () => expect(deliver.answered).toEqual(["delivered"]));
    expect(await delegationOf(s)).toMatchObject({ status: "closed" });
    expect((await getTask(s, childId)).task.delivery_state).toBe("pending");

    await crashAndRecover(s, childId);
    await expectCancelledOnce(s, childId, "at most one");
  });

  it("Should close the delegation without ever creating the child when the parent is cancelled and crashes while the create call was held, and refuse that create when it arrives late", async () => {
    const s = await newSession();
    const { path, stub } = await newParent(s);
    const create = await gate(stub, "createChild", "before");
    await readySub(s, path);
    await eventually(async () => expect(create.seen).toHaveLength(1));
    const [request, createdBy] = create.seen[0]! as [ChildTaskRequest, string];
    await cancelParent(s);
    expect(await delegationOf(s)).toMatchObject({ status: "cancelling" });

    await crashAndRecover(s, "plan");
    const d = await eventually(async () => {
      const found = await delegationOf(s);
      expect(found.status).toBe("closed");
      return found;
    }, 5_000);
    expect(d.child_task_id).toBe(request.task_id);
    expectRunEnded(await getTask(s, "plan"), d.run_id);
    const childPath = `/v1/sessions/${s.sid}/tasks/${request.task_id}`;
    expect((await call("GET", childPath, s.orch)).status).toBe(404);

    // The create the dead parent had under way reaches the child after all: it is refused and creates nothing.
    const childStub = taskStub(s.sid, request.task_id);
    const late = await (childStub as unknown as TaskGraphObject).createChildTask(s.sid, request, createdBy);
    expect(late).toMatchObject({ ok: false, retryable: false });
    expect((await call("GET", childPath, s.orch)).status).toBe(404);
    expect(await runInDurableObject(childStub, (instance: TaskGraphObject) => instance.indexEntry())).toEqual({ ok: true, value: null });
    await eventually(async () => expect(await sessionTaskIds(s)).toEqual(["plan"]));

    const parentWal = await walOf(path, s.orch);
    expect(countOf(parentWal, "step_delegated")).toBe(1);
    expect(countOf(parentWal, "delegation_cancel_requested")).toBe(1);
    expect(parentWal.filter((e) => e.event_type === "delegation_closed").map((e) => (e.payload as { reason: string }).reason)).toEqual(["the delegate was never created"]);
  });

  it("Should refuse a create the crashed parent had under way at the child when the child's cancellation arrives while that create waits for the session", async () => {
    const s = await newSession();
    const { path, stub } = await newParent(s);
    const create = await gate(stub, "createChild", "before");
    await readySub(s, path);
    await eventually(async () => expect(create.seen).toHaveLength(1));
    const [request, createdBy] = create.seen[0]! as [ChildTaskRequest, string];
    // The dead parent's create reached the child and waits there for the session to reserve the child's id.
    const childStub = taskStub(s.sid, request.task_id);
    const reserving = { reached: false, release: () => {} };
    await runInDurableObject(childStub, (instance: TaskGraphObject) => {
      const children = (instance as unknown as { children: { session: (id: string) => any } }).children;
      const session = children.session;
      const latch = new Promise<void>((resolve) => {
        reserving.release = resolve;
      });
      children.session = (id: string) => {
        const real = session(id);
        return {
          reserveChild: async (...args: unknown[]) => {
            reserving.reached = true;
            await latch;
            return real.reserveChild(...args);
          },
          release: (...args: unknown[]) => real.release(...args),
        };
      };
    });
    const late = (childStub as unknown as TaskGraphObject).createChildTask(s.sid, request, createdBy);
    await eventually(async () => expect(reserving.reached).toBe(true));

    await cancelParent(s);
    await crashAndRecover(s, "plan");
    await eventually(async () => expect((await delegationOf(s)).status).toBe("closed"), 5_000);
    // Released from inside the child: a promise of the object is settled in the object's own context.
    await runInDurableObject(childStub, () => reserving.release());

    // The parent closed the delegation as never created: the child must not come to exist behind it.
    const answer = await late;
    const childPath = `/v1/sessions/${s.sid}/tasks/${request.task_id}`;
    expect((await call("GET", childPath, s.orch)).status).toBe(404);
    expect(answer).toMatchObject({ ok: false, retryable: false });
    await eventually(async () => expect(await sessionTaskIds(s)).toEqual(["plan"]));
  });
});
