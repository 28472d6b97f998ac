/**
 * @module The operations the task model's rules need, at the level of the task tools, so one suite of rules runs
 * against every way the runtime is reached: the pure core (decide/apply) and the HTTP service. Answers are
 * normalised to accepted-with-a-value or rejected-with-a-code; state is read back as plain views.
 */
import type { Action, Attempt, Step, Task, taskReadModel, WorkerRun as CoreWorkerRun } from "../../../src/core/index.js";

/** A tool's answer: accepted with its value, or rejected with an error code (and the error's details). */
export type Answer<T = unknown> = { ok: true; value: T } | { ok: false; code: string; details: Record<string, unknown> };

/** A dispatched worker run, as a caller of the worker tools. Drivers may carry what they need to act as it. */
export interface WorkerRun {
  readonly run_id: string;
  readonly agent_id: string;
}

/** Who calls a tool: the task's orchestrator, its observer, a person who answers actions (approver), or a worker run. */
export type Caller = "orchestrator" | "observer" | "approver" | WorkerRun;

/** A step input of agent.task_create / add_step. */
export type StepInput = Record<string, unknown> & { step_id: string };

/** agent.task_query_steps filters. */
export interface StepFilter {
  statuses?: string[];
  worker_pool_id?: string;
  claimed_by_agent_id?: string;
  include_terminal_steps?: boolean;
  limit?: number;
  offset?: number;
}

/** One page of agent.task_query_steps. */
export interface StepPageView {
  step_ids: string[];
  /** The statuses of the page's steps, in the same order. */
  statuses: string[];
  total: number;
  limit: number;
  offset: number;
  next_offset: number | null;
}

/** What a claim answers: the claimed step, or no step with the reason. */
export type ClaimView = { step_id: string; attempt_id: string } | { step_id: null; reason: string };

/** The machine fields of a step that the rules check. */
export interface StepView {
  status: string;
  status_reason: string | null;
  title: string;
  summary: string;
  depends_on_step_ids: string[];
  required: boolean;
  worker_pool_id: string;
  claimed_by_agent_id: string | null;
  claimed_by_run_id: string | null;
  lease_expires_at: string | null;
  result_summary: string | null;
  artifact_ids: string[];
  /** When a retry its policy scheduled reopens it; null when none is pending. */
  retry_at: string | null;
  /** The normalized status, from the task's snapshot: waiting_permission / waiting_input, retrying, or the native one's. */
  normalized_status: string;
}

/** A worker run as the rules see it. */
export interface RunView {
  status: string;
  status_reason: string | null;
  current_step_id: string | null;
  claims_used: number;
  result: unknown;
  cancel_request: { reason: string | null; requested_by_agent_id: string } | null;
  ended_at: string | null;
}

/** The task, its steps, its runs and its attempts as the rules see them. */
export interface TaskStateView {
  task: { status: string; normalized_status: string; status_reason: string | null; title: string; summary: string; ended_at: string | null };
  /** Steps by id, in DAG order. */
  steps: Record<string, StepView>;
  /** Runs by run id. */
  runs: Record<string, RunView>;
  /** Attempts in creation order. */
  attempts: { step_id: string; run_id: string; status: string; last_error: string | null; result_summary: string | null; ended_at: string | null }[];
}

/** The task closing and pausing tools (agent.task_complete, _fail, _cancel, block, reopen, agent.task_pause, _resume). */
export type TaskAction = "complete" | "fail" | "cancel" | "block" | "reopen" | "pause" | "resume";

/** What agent.request_action answers: the new action, open until answered, expired or withdrawn. */
export interface ActionOpened {
  action_id: string;
  status: string;
  expires_at: string;
}

/** A human action as the rules see it. */
export interface ActionView {
  action_id: string;
  /** The step it holds up; null for a task-level action. */
  step_id: string | null;
  kind: string;
  status: string;
  decision: string | null;
  input: unknown;
  /** The role of whoever resolved it (orchestrator, approver, or system for expiry and withdrawal). */
  resolved_by_role: string | null;
  resolved_at: string | null;
  expires_at: string;
}

/** One task in a fresh session, driven through the task tools. */
export interface TaskRuntimeDriver {
  /** The driver's name, for test titles. */
  readonly name: string;
  /** The agent id the task's orchestrator acts under. */
  readonly orchestratorAgentId: string;
  /** agent.task_create of this driver's task with these steps (extra task fields may name another task). */
  createTask(steps: StepInput[], extra?: Record<string, unknown>, by?: Caller): Promise<Answer>;
  /** agent.task_update: structured patch ops, applied atomically. */
  patchTask(ops: Record<string, unknown>[], by?: Caller): Promise<Answer>;
  /** agent.dispatch_worker. */
  dispatch(opts?: Record<string, unknown>, by?: Caller): Promise<Answer<WorkerRun>>;
  /** agent.task_claim_step. */
  claim(by: Caller, stepId: string): Promise<Answer<ClaimView>>;
  /** Claim the first claimable step in the run's scope. */
  claimNext(by: Caller): Promise<Answer<ClaimView>>;
  /** agent.task_update_step: status and results. */
  updateStep(by: Caller, stepId: string, body: Record<string, unknown>): Promise<Answer>;
  /** agent.task_progress on a step. */
  progress(by: Caller, stepId: string, body: Record<string, unknown>): Promise<Answer>;
  /** complete / fail / cancel / block / reopen / pause / resume the task. */
  task(action: TaskAction, body?: Record<string, unknown>, by?: Caller): Promise<Answer>;
  /** agent.request_action: `{kind, prompt, input_schema?, timeout_ms?}` on a step, or on the task when `stepId` is null. */
  requestAction(by: Caller, stepId: string | null, body: Record<string, unknown>): Promise<Answer<ActionOpened>>;
  /** agent.respond_action: `{decision, input?, comment?}`. */
  respondAction(by: Caller, actionId: string, body: Record<string, unknown>): Promise<Answer>;
  /** One action of the task, as the orchestrator reads it. */
  action(actionId: string): Promise<ActionView>;
  /**
   * Lets `ms` pass and then runs the runtime's deadline handling (leases, run deadlines, action expiry, retries
   * due) until it has nothing more to do. Keep `ms` small: over HTTP the time really passes.
   */
  elapse(ms: number): Promise<void>;
  /** A worker run ends with this outcome. */
  finishRun(by: Caller, runId: string, outcome: string, result?: unknown): Promise<Answer>;
  /** The orchestrator cancels a worker run. */
  cancelRun(runId: string, reason?: string, by?: Caller): Promise<Answer>;
  /** agent.task_query_steps. */
  querySteps(by: Caller, filter?: StepFilter): Promise<Answer<StepPageView>>;
  /** The task's current state. */
  view(): Promise<TaskStateView>;
  /** The event types of the task's WAL, in order. */
  walTypes(): Promise<string[]>;
  /** The task's WAL events (type and step), in order. */
  walEvents(): Promise<{ event_type: string; step_id: string | null }[]>;
}

/** Makes a driver over a fresh task (its session may be shared). */
export type MakeDriver = () => Promise<TaskRuntimeDriver>;

/** A step input with defaults. */
export function step(id: string, deps: string[] = [], extra: Record<string, unknown> = {}): StepInput {
  return { step_id: id, title: `Step ${id}`, summary: `Do ${id}`, depends_on_step_ids: deps, ...extra };
}

/** A task with roots a, c and d; b after a. */
export const BASE = (): StepInput[] => [step("a"), step("b", ["a"]), step("c"), step("d")];

/** A task with roots a and d, b and c after a, e after b and c. */
export const DIAMOND = (): StepInput[] => [step("a"), step("b", ["a"]), step("c", ["a"]), step("d"), step("e", ["b", "c"])];

/** Steps r0..r6 ready in the default pool, g ready in pool gpu, p pending after r0. */
export const POOLS = (): StepInput[] => [...Array.from({ length: 7 }, (_, i) => step(`r${i}`)), step("g", [], { worker_pool_id: "gpu" }), step("p", ["r0"])];

/** The snapshot of a task (the read model agent.task_get carries as `snapshot`). */
export type TaskSnapshot = Pick<ReturnType<typeof taskReadModel>, "task" | "taskGraph">;

/** The rules' view of a step record, as both the core and the service hold it, with its normalized status. */
export function stepView(s: Step, normalized: string): StepView {
  return {
    status: s.status,
    status_reason: s.status_reason ?? null,
    title: s.title,
    summary: s.summary,
    depends_on_step_ids: [...s.depends_on_step_ids],
    required: s.required,
    worker_pool_id: s.worker_pool_id,
    claimed_by_agent_id: s.claimed_by_agent_id ?? null,
    claimed_by_run_id: s.claimed_by_run_id ?? null,
    lease_expires_at: s.lease_expires_at ?? null,
    result_summary: s.result_summary ?? null,
    artifact_ids: [...s.artifact_ids],
    retry_at: s.retry_at ?? null,
    normalized_status: normalized,
  };
}

/** The rules' view of an action record, as both the core and the service hold it. */
export function actionView(a: Action): ActionView {
  return {
    action_id: a.action_id,
    step_id: a.step_id,
    kind: a.kind,
    status: a.status,
    decision: a.decision,
    input: a.input,
    resolved_by_role: a.resolved_by?.role ?? null,
    resolved_at: a.resolved_at,
    expires_at: a.expires_at,
  };
}

/** The rules' view of a task with its steps, runs and attempts, from the records and the snapshot both drivers read. */
export function stateView(task: Task | null, steps: Iterable<Step>, runs: Iterable<CoreWorkerRun>, attempts: Iterable<Attempt>, snapshot: TaskSnapshot): TaskStateView {
  if (task === null) throw new Error("the driver holds no task yet");
  const normalized = new Map(snapshot.taskGraph.nodes.map((n) => [n.stepId, n.status]));
  const normalizedOf = (id: string): string => {
    const status = normalized.get(id);
    if (status === undefined) throw new Error(`the snapshot has no node for step ${id}`);
    return status;
  };
  return {
    task: { status: task.status, normalized_status: snapshot.task.status, status_reason: task.status_reason ?? null, title: task.title, summary: task.summary, ended_at: task.ended_at ?? null },
    steps: Object.fromEntries([...steps].map((s) => [s.step_id, stepView(s, normalizedOf(s.step_id))])),
    runs: Object.fromEntries(
      [...runs].map((r) => [
        r.run_id,
        {
          status: r.status,
          status_reason: r.status_reason ?? null,
          current_step_id: r.current_step_id ?? null,
          claims_used: r.claims_used,
          result: r.result ?? null,
          cancel_request: r.cancel_request == null ? null : { reason: r.cancel_request.reason ?? null, requested_by_agent_id: r.cancel_request.requested_by_agent_id },
          ended_at: r.ended_at ?? null,
        },
      ]),
    ),
    attempts: [...attempts].map((a) => ({ step_id: a.step_id, run_id: a.run_id, status: a.status, last_error: a.last_error ?? null, result_summary: a.result_summary ?? null, ended_at: a.ended_at ?? null })),
  };
}
