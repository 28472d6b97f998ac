/** @module The conformance suite's core driver: decide/apply over the test harness, with its fixed clock. */
import { expect } from "vitest";
import { type Actor, type Decision, type DecisionValue, querySteps, rebuildIndex, replay, systemActor, taskReadModel } from "../../../src/core/index.js";
import { Harness, observer, orchestrator, SESSION, TASK } from "../../core/harness.js";
import { type ActionOpened, actionView, type Answer, type Caller, type ClaimView, type MakeDriver, type StepPageView, stateView, type TaskRuntimeDriver, type WorkerRun } from "./driver.js";

const ACTIONS = { complete: "complete_task", fail: "fail_task", cancel: "cancel_task", block: "block_task", reopen: "reopen_task", pause: "pause_task", resume: "resume_task" } as const;

/** A person who answers the session's actions. */
const approver: Actor = { role: "approver", session_id: SESSION, agent_id: "approver", run_id: null };

/** The service's alarm re-arms for the next deadline; a handful of rounds brings any task in these rules to rest. */
const MAX_RECONCILE_ROUNDS = 8;

function actor(by: Caller): Actor {
  if (by === "orchestrator") return orchestrator;
  if (by === "observer") return observer;
  if (by === "approver") return approver;
  return { role: "worker", session_id: SESSION, task_id: TASK, agent_id: by.agent_id, run_id: by.run_id };
}

function answer<T>(d: Decision, value: (v: DecisionValue) => T = (v) => v as T): Answer<T> {
  return d.ok ? { ok: true, value: value(d.value) } : { ok: false, code: d.error.code, details: d.error.details ?? {} };
}

function claimView(v: DecisionValue): ClaimView {
  if (v.kind === "claimed") return { step_id: v.step_id, attempt_id: v.attempt_id };
  if (v.kind === "no_step_claimed") return { step_id: null, reason: v.reason };
  throw new Error(`a claim decided ${v.kind}`);
}

/** A driver over one harness task. */
export class CoreDriver implements TaskRuntimeDriver {
  readonly name = "core";
  readonly orchestratorAgentId = orchestrator.agent_id;
  readonly h = new Harness();

  private run<T>(command: Record<string, unknown>, by: Caller, value?: (v: DecisionValue) => T): Answer<T> {
    return answer(this.h.run(command, actor(by)), value);
  }

  async createTask(steps: Record<string, unknown>[], extra: Record<string, unknown> = {}, by: Caller = "orchestrator") {
    return this.run({ type: "create_task", task_id: TASK, wal_name: "plan", title: "Plan", summary: "A plan", steps, ...extra }, by);
  }
  async patchTask(ops: Record<string, unknown>[], by: Caller = "orchestrator") {
    return this.run({ type: "update_task", ops }, by);
  }
  async dispatch(opts: Record<string, unknown> = {}, by: Caller = "orchestrator"): Promise<Answer<WorkerRun>> {
    return this.run({ type: "dispatch_worker", ...opts }, by, (v) => {
      if (v.kind !== "dispatched") throw new Error(`dispatch_worker decided ${v.kind}`);
      return { run_id: v.run_id, agent_id: v.agent_id };
    });
  }
  async claim(by: Caller, stepId: string) {
    return this.run({ type: "claim_step", step_id: stepId }, by, claimView);
  }
  async claimNext(by: Caller) {
    return this.run({ type: "claim_next" }, by, claimView);
  }
  async updateStep(by: Caller, stepId: string, body: Record<string, unknown>) {
    return this.run({ type: "update_step", step_id: stepId, ...body }, by);
  }
  async progress(by: Caller, stepId: string, body: Record<string, unknown>) {
    return this.run({ type: "append_progress", step_id: stepId, ...body }, by);
  }
  async task(action: keyof typeof ACTIONS, body: Record<string, unknown> = {}, by: Caller = "orchestrator") {
    return this.run({ type: ACTIONS[action], ...body }, by);
  }
  async requestAction(by: Caller, stepId: string | null, body: Record<string, unknown>): Promise<Answer<ActionOpened>> {
    return this.run({ type: "request_action", ...(stepId === null ? {} : { step_id: stepId }), ...body }, by, (v) => {
      if (v.kind !== "action") throw new Error(`request_action decided ${v.kind}`);
      const a = this.h.state.actions.get(v.action_id)!;
      return { action_id: a.action_id, status: a.status, expires_at: a.expires_at };
    });
  }
  async respondAction(by: Caller, actionId: string, body: Record<string, unknown>) {
    return this.run({ type: "respond_action", action_id: actionId, ...body }, by);
  }
  async action(actionId: string) {
    const a = this.h.state.actions.get(actionId);
    if (a === undefined) throw new Error(`no action ${actionId}`);
    return actionView(a);
  }
  /** Moves the fixed clock, then reconciles as the service's alarm does, until a round writes nothing. */
  async elapse(ms: number) {
    this.h.now += ms;
    for (let round = 0; round < MAX_RECONCILE_ROUNDS; round++) {
      const d = this.h.run({ type: "reconcile_leases" }, systemActor(SESSION));
      if (!d.ok) throw new Error(`reconcile_leases refused: ${d.error.code}`);
      if (d.events.length === 0) return;
    }
    throw new Error(`reconcile_leases still wrote events after ${MAX_RECONCILE_ROUNDS} rounds`);
  }
  async finishRun(by: Caller, runId: string, outcome: string, result?: unknown) {
    return this.run({ type: "finish_run", run_id: runId, outcome, ...(result === undefined ? {} : { result }) }, by);
  }
  async cancelRun(runId: string, reason?: string, by: Caller = "orchestrator") {
    return this.run({ type: "cancel_run", run_id: runId, ...(reason === undefined ? {} : { reason }) }, by);
  }
  async querySteps(by: Caller, filter: Record<string, unknown> = {}): Promise<Answer<StepPageView>> {
    const r = querySteps(this.h.state, actor(by), filter);
    if (!r.ok) return { ok: false, code: r.error.code, details: r.error.details ?? {} };
    return { ok: true, value: { step_ids: r.value.steps.map((s) => s.step_id), statuses: r.value.steps.map((s) => s.status), total: r.value.total, limit: r.value.limit, offset: r.value.offset, next_offset: r.value.next_offset } };
  }
  /** The state; every read also checks that the WAL replays to the live DAG and the indexes match a rebuild. */
  async view() {
    const s = this.h.state;
    expect(replay(this.h.wal)).toEqual(s);
    expect(rebuildIndex(s)).toEqual(s.index);
    return stateView(s.task, s.steps.values(), s.runs.values(), s.attempts.values(), taskReadModel(s));
  }
  async walTypes() {
    return this.h.wal.map((e) => e.event_type);
  }
  async walEvents() {
    return this.h.wal.map((e) => ({ event_type: e.event_type, step_id: e.step_id }));
  }
}

/** A fresh core driver per case. */
export const makeCoreDriver: MakeDriver = async () => new CoreDriver();
