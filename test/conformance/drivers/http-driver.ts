/**
 * @module The conformance suite's HTTP driver: every tool through `SELF.fetch` with the session's and the
 * runs' bearer tokens. Besides normalising answers it checks the HTTP contract of each one: a write answers
 * the task summary with event_ids and wal_seq, a rejection the error envelope with its code's status.
 */
import { runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { expect } from "vitest";
import { call, type JsonAnswer, newSession, type TestSession } from "../../support/helpers.js";
import { BASE, expectError, expectWriteAnswer, holdAlarm, mintRole, parseWal, sleep, taskStub, uniqueId } from "../../support/support.js";
import { type ActionOpened, actionView, type Answer, type Caller, type ClaimView, type MakeDriver, type StepFilter, type StepPageView, stateView, type TaskRuntimeDriver, type WorkerRun } from "./driver.js";

/** The error table (docs/api.md "Errors"): each code's HTTP status, written out here rather than imported from durable-objects/shared/http-errors.ts, so a change there fails here. */
const STATUS: Record<string, number> = {
  validation_error: 400,
  unauthorized: 401,
  permission_denied: 403,
  tool_not_available: 403,
  not_found: 404,
  path_conflict: 409,
  task_id_conflict: 409,
  dependency_cycle: 409,
  unknown_dependency: 409,
  duplicate_step: 409,
  step_has_dependents: 409,
  invalid_transition: 409,
  task_terminal: 409,
  task_not_dispatchable: 409,
  step_already_claimed: 409,
  step_already_claimed_by_run: 409,
  task_not_completeable: 409,
  action_resolved: 409,
  payload_too_large: 413,
};

/** The alarm re-arms for the next deadline; a handful of runs brings any task in these rules to rest. */
const MAX_ALARM_ROUNDS = 8;

/** A worker run with the token it calls with. */
interface HttpRun extends WorkerRun {
  readonly token: string;
}

/** Checks the HTTP side of an answer and normalises it. A write also carries the task summary. */
function answer<T>(res: JsonAnswer, taskId: string, okStatus: number, value: (body: any) => T = (b) => b as T, write = true): Answer<T> {
  if (res.status >= 200 && res.status < 300) {
    expect(res.status, JSON.stringify(res.body)).toBe(okStatus);
    if (write) expectWriteAnswer(res.body, taskId);
    return { ok: true, value: value(res.body) };
  }
  const code = res.body?.error?.code;
  expect(STATUS[code], `unexpected error answer ${res.status} ${JSON.stringify(res.body)}`).toBeDefined();
  expectError(res, STATUS[code]!, code);
  return { ok: false, code, details: res.body.error.details };
}

function claimView(b: any): ClaimView {
  return b.no_step_claimed === true ? { step_id: null, reason: b.reason } : { step_id: b.step.step_id, attempt_id: b.attempt_id };
}

/** The file's session with an approver token minted in it. */
interface SharedSession {
  readonly s: TestSession;
  readonly approver: string;
}

let shared: Promise<SharedSession> | undefined;

async function sharedSession(): Promise<SharedSession> {
  const s = await newSession();
  return { s, approver: await mintRole(s, "approver", "approver") };
}

/** A driver over one task in the file's session. */
export class HttpDriver implements TaskRuntimeDriver {
  readonly name = "http";
  readonly taskId = uniqueId("c");
  constructor(
    readonly s: TestSession,
    readonly orchestratorAgentId: string,
    private readonly approverToken: string,
  ) {}

  get path(): string {
    return `/v1/sessions/${this.s.sid}/tasks/${this.taskId}`;
  }

  private token(by: Caller): string {
    if (by === "orchestrator") return this.s.orch;
    if (by === "observer") return this.s.observer;
    if (by === "approver") return this.approverToken;
    return (by as HttpRun).token;
  }

  private async post<T>(by: Caller, rest: string, body: unknown, value?: (b: any) => T, okStatus = 200): Promise<Answer<T>> {
    return answer(await call("POST", `${this.path}${rest}`, this.token(by), body), this.taskId, okStatus, value);
  }

  async createTask(steps: Record<string, unknown>[], extra: Record<string, unknown> = {}, by: Caller = "orchestrator") {
    const res = await call("POST", `/v1/sessions/${this.s.sid}/tasks`, this.token(by), { task_id: this.taskId, wal_name: this.taskId, title: "Plan", summary: "A plan", steps, ...extra });
    return answer(res, String(extra.task_id ?? this.taskId), 201);
  }
  async patchTask(ops: Record<string, unknown>[], by: Caller = "orchestrator") {
    return answer(await call("PATCH", this.path, this.token(by), { ops }), this.taskId, 200);
  }
  async dispatch(opts: Record<string, unknown> = {}, by: Caller = "orchestrator"): Promise<Answer<WorkerRun>> {
    return this.post(by, "/workers", opts, (b): HttpRun => ({ run_id: b.run_id, agent_id: b.agent_id, token: b.token }), 201);
  }
  async claim(by: Caller, stepId: string) {
    return this.post(by, `/steps/${stepId}/claim`, undefined, claimView);
  }
  async claimNext(by: Caller) {
    return this.post(by, "/steps/claim-next", undefined, claimView);
  }
  async updateStep(by: Caller, stepId: string, body: Record<string, unknown>) {
    return this.post(by, `/steps/${stepId}/status`, body);
  }
  async progress(by: Caller, stepId: string, body: Record<string, unknown>) {
    return this.post(by, `/steps/${stepId}/progress`, body);
  }
  async task(action: string, body: Record<string, unknown> = {}, by: Caller = "orchestrator") {
    return this.post(by, `/${action}`, body);
  }
  async requestAction(by: Caller, stepId: string | null, body: Record<string, unknown>): Promise<Answer<ActionOpened>> {
    const rest = stepId === null ? "/actions" : `/steps/${stepId}/actions`;
    return this.post(by, rest, body, (b): ActionOpened => ({ action_id: b.action_id, status: b.status, expires_at: b.expires_at }), 201);
  }
  async respondAction(by: Caller, actionId: string, body: Record<string, unknown>) {
    return this.post(by, `/actions/${actionId}/respond`, body);
  }
  async action(actionId: string) {
    const res = await call("GET", `${this.path}/actions/${actionId}`, this.s.orch);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return actionView(res.body.action);
  }
  /**
   * Really sleeps (the service's clock cannot be moved), with the task object's alarm held off so that it runs
   * only when the rule asks, then runs the alarm, and again while it re-armed itself for something already due
   * (a retry due at once), as the core driver reconciles in rounds. Nothing else reconciles here: the WAL the
   * rules read next shows what the alarm alone wrote.
   */
  async elapse(ms: number) {
    const stub = taskStub(this.s.sid, this.taskId);
    await holdAlarm(stub);
    await sleep(ms);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    for (let round = 1; round < MAX_ALARM_ROUNDS; round++) {
      const due = await runInDurableObject(stub, async (_instance, state) => {
        const at = await state.storage.getAlarm();
        return at !== null && at <= Date.now();
      });
      if (!due) return;
      await runDurableObjectAlarm(stub);
    }
    throw new Error(`the task object's alarm was still due after ${MAX_ALARM_ROUNDS} runs`);
  }
  async finishRun(by: Caller, runId: string, outcome: string, result?: unknown) {
    return this.post(by, `/runs/${runId}/finish`, result === undefined ? { outcome } : { outcome, result });
  }
  async cancelRun(runId: string, reason?: string, by: Caller = "orchestrator") {
    return this.post(by, `/runs/${runId}/cancel`, reason === undefined ? {} : { reason });
  }
  async querySteps(by: Caller, filter: StepFilter = {}): Promise<Answer<StepPageView>> {
    const q = new URLSearchParams();
    if (filter.statuses !== undefined) q.set("status", filter.statuses.join(","));
    for (const key of ["worker_pool_id", "claimed_by_agent_id", "include_terminal_steps", "limit", "offset"] as const) {
      if (filter[key] !== undefined) q.set(key, String(filter[key]));
    }
    const query = q.size === 0 ? "" : `?${q}`;
    const res = await call("GET", `${this.path}/steps${query}`, this.token(by));
    return answer(res, this.taskId, 200, (b) => ({ step_ids: b.steps.map((x: any) => x.step_id), statuses: b.steps.map((x: any) => x.status), total: b.total, limit: b.limit, offset: b.offset, next_offset: b.next_offset }), false);
  }
  async view() {
    const res = await call("GET", this.path, this.s.orch);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return stateView(res.body.task, res.body.steps, res.body.runs, res.body.attempts, res.body.snapshot);
  }
  async walTypes() {
    return (await this.walEvents()).map((e) => e.event_type);
  }
  async walEvents() {
    // Read as bytes: the export is NDJSON, not a text/* body.
    const res = await SELF.fetch(`${BASE}${this.path}/wal`, { headers: { authorization: `Bearer ${this.s.orch}` } });
    const text = new TextDecoder().decode(await res.arrayBuffer());
    expect(res.status, text).toBe(200);
    return parseWal(text).map((e) => ({ event_type: e.event_type, step_id: e.step_id }));
  }
}

/** A driver over a fresh task; the tasks of one test file share a session (creating one costs ~100 ms). */
export const makeHttpDriver: MakeDriver = async () => {
  shared ??= sharedSession();
  const { s, approver } = await shared;
  // A session's orchestrator token acts as agent "orchestrator" unless the session names another.
  return new HttpDriver(s, "orchestrator", approver);
};
