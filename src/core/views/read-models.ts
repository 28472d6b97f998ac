/**
 * @module Read models over one task DAG, in the Agent Runtime schemas' shape: the compact task record, the task
 * graph edges, attempts with output refs, blocked steps with their blockers, and delivery state (docs/model.md).
 * Pure projections of the DAG (or of one page of it: its steps, runs and attempts) in camelCase; facts the
 * runtime does not hold are said to be unknown or not applicable.
 */
import { ATTEMPT_STATUS_MAP, normalizedStepStatus, normalizedTaskStatus, STEP_STATUS_MAP } from "../model/normalize.js";
import type { Action, Attempt, ErrorFact, Step, Task, WorkerRun } from "../model/records.js";
import { effectivePolicy } from "../model/retry-policy.js";
import { type DagState, missingRequiredArtifacts } from "../model/state.js";
import { allItems, type TaskPageItems } from "./task-page.js";
import { diagnostics } from "./views.js";

/** Attempt statuses of the snapshot schema's `statusValue` (it has no lost or timed_out: those keep nativeStatus). */
const SNAPSHOT_ATTEMPT_STATUS: Record<Attempt["status"], string> = {
  active: "running",
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled",
  blocked: "blocked",
  // The runtime cannot prove what a worker whose lease lapsed did: unknown, never inferred success.
  lost: "unknown",
  timed_out: "failed",
};

/** Most recent attempts a read model lists besides the active ones. */
export const RECENT_ATTEMPTS = 50;

const defined = <T extends Record<string, unknown>>(v: T): T => Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null && x !== undefined)) as T;

/** One attempt as the snapshot's taskAttempt. */
export function attemptRecord(state: DagState, a: Attempt) {
  const step = state.steps.get(a.step_id);
  const artifacts = a.status === "completed" && step !== undefined ? step.artifact_ids : [];
  const progress = state.progress.get(a.step_id);
  const outputRefs = [...artifacts.map((id) => ({ kind: "artifact", artifactId: id })), ...(a.status === "active" && progress !== undefined ? progress.output_refs.map((ref) => ({ kind: "output", ref })) : [])];
  return defined({
    runId: a.run_id,
    attemptId: a.attempt_id,
    stepId: a.step_id,
    status: SNAPSHOT_ATTEMPT_STATUS[a.status],
    nativeStatus: a.status,
    normalizedStatus: ATTEMPT_STATUS_MAP[a.status],
    worker: { agentId: a.agent_id, runId: a.run_id },
    outputRefs,
    startedAt: a.started_at,
    endedAt: a.ended_at,
    attemptCount: a.ordinal,
    lastError: a.last_error === null ? null : { code: a.last_error },
    completionSummary: a.result_summary,
    stepSnapshot: a.step_snapshot,
    retryPolicy: step === undefined ? null : retryPolicyRecord(state, step),
  });
}

/** The retry policy governing a step, in camelCase, with where it comes from. */
function retryPolicyRecord(state: DagState, step: Step) {
  const policy = effectivePolicy(state, step);
  if (policy === null) return null;
  return defined({
    source: step.retry_policy === null ? "task_default" : "step",
    maxAttempts: policy.max_attempts,
    initialIntervalMs: policy.initial_interval_ms,
    backoffCoefficient: policy.backoff_coefficient,
    maxIntervalMs: policy.max_interval_ms,
    nonRetryableReasons: policy.non_retryable_reasons,
    attemptsMade: step.retry_attempts,
    retryAt: step.retry_at,
  });
}

/** An action in camelCase: what a person is asked, and how it was resolved. */
export function actionRecord(a: Action) {
  return defined({
    actionId: a.action_id,
    taskId: a.task_id,
    stepId: a.step_id,
    kind: a.kind,
    prompt: a.prompt,
    inputSchema: a.input_schema,
    status: a.status,
    decision: a.decision,
    requestedBy: a.requested_by_agent_id,
    createdAt: a.created_at,
    expiresAt: a.expires_at,
    resolvedAt: a.resolved_at,
    resolvedBy: a.resolved_by === null ? null : { agentId: a.resolved_by.agent_id, role: a.resolved_by.role },
  });
}

/** Active attempts and the most recent others (of the page's attempts), newest last. */
export function attemptRecords(state: DagState, items: TaskPageItems = allItems(state)) {
  const all = items.attempts;
  const active = all.filter((a) => a.status === "active");
  const ended = all.filter((a) => a.status !== "active").slice(-RECENT_ATTEMPTS);
  return [...ended, ...active].map((a) => attemptRecord(state, a));
}

/** What keeps a step (of the page's steps) from moving: its own block or failure, or dependencies that are not completing. */
export function blockedSteps(state: DagState, items: TaskPageItems = allItems(state)) {
  const out: { stepId: string; nativeStatus: string; status: string; reason: string | null; blockers: { stepId: string; nativeStatus: string }[]; requiredAction: string; actionIds?: string[] }[] = [];
  for (const step of items.steps) {
    const actionId = state.index.stepActions.get(step.step_id);
    if (actionId !== undefined) {
      // Waiting for a person: the action to answer is the blocker (a blocked task lists the action ids it needs).
      const status = normalizedStepStatus(state, step);
      out.push({ stepId: step.step_id, nativeStatus: step.status, status, reason: "waiting_for_action", blockers: [], requiredAction: "respond_action", actionIds: [actionId] });
      continue;
    }
    if (step.status === "failed" && step.retry_at !== null) continue;
    if (step.status === "blocked" || step.status === "failed") {
      out.push({ stepId: step.step_id, nativeStatus: step.status, status: STEP_STATUS_MAP[step.status], reason: step.status_reason, blockers: [], requiredAction: "reopen_step or change the DAG" });
      continue;
    }
    if (step.status !== "pending") continue;
    // A pending step is stuck when a dependency can no longer complete without the orchestrator.
    const stuck = step.depends_on_step_ids
      .map((id) => state.steps.get(id))
      .filter((d): d is Step => d !== undefined && (d.status === "failed" || d.status === "cancelled" || d.status === "blocked"))
      .map((d) => ({ stepId: d.step_id, nativeStatus: d.status }));
    if (stuck.length > 0) out.push({ stepId: step.step_id, nativeStatus: step.status, status: "blocked", reason: "dependency_not_completing", blockers: stuck, requiredAction: "reopen the blockers, remove the dependency or add a replacement step" });
  }
  return out;
}

/** A run's cancellation request in camelCase (a run shows status cancelling while it is waited for). */
function cancelRequestRecord(run: WorkerRun) {
  const c = run.cancel_request;
  if (c === null) return null;
  return defined({ reason: c.reason, requestedAt: c.requested_at, requestedBy: c.requested_by_agent_id, deadlineAt: c.deadline_at, timedOutAt: c.timed_out_at });
}

/** Artifacts of completed steps, as graph edges. */
function producedArtifacts(steps: readonly Step[]) {
  return steps.flatMap((s) => (s.status === "completed" ? s.artifact_ids.map((id) => ({ kind: "produced_artifact", stepId: s.step_id, artifactId: id })) : []));
}

/** The task graph (of the page's steps and runs): step nodes, dependency edges, spawned worker runs, produced artifacts. */
export function taskGraph(state: DagState, items: TaskPageItems = allItems(state)) {
  const steps = items.steps;
  return {
    nodes: steps.map((s) => ({ stepId: s.step_id, title: s.title, nativeStatus: s.status, status: normalizedStepStatus(state, s), required: s.required, workerPoolId: s.worker_pool_id })),
    edges: steps.flatMap((s) => s.depends_on_step_ids.map((dep) => ({ kind: "blocked_by", from: s.step_id, to: dep }))),
    spawnedWorkers: items.runs.map((r) => defined({ kind: "spawned_subagent", runId: r.run_id, agentId: r.agent_id, workerPoolId: r.worker_pool_id, status: r.status, stepId: r.current_step_id, cancelRequest: cancelRequestRecord(r) })),
    producedArtifacts: producedArtifacts(steps),
  };
}

/** The compact task record (the snapshot schema's `task`); its relationships and artifacts are the page's steps'. */
export function taskRecord(state: DagState, items: TaskPageItems = allItems(state)) {
  const task = state.task!;
  const c = state.index.statusCounts;
  const total = state.steps.size;
  const taskProgress = state.progress.get("");
  const current = [...state.runs.values()].find((r) => r.status === "active" && r.current_step_id !== null);
  return defined({
    taskId: task.task_id,
    sessionId: task.session_id,
    threadId: task.thread_id,
    parentTaskId: task.parent_task_id,
    rootTaskId: task.root_task_id,
    title: task.title,
    objective: task.objective ?? task.summary,
    taskKind: task.task_kind,
    taskFamily: task.task_family,
    // Not said by the orchestrator: unknown, never a guess.
    visibility: task.visibility ?? "unknown",
    status: normalizedTaskStatus(state),
    nativeStatus: task.status,
    priority: task.priority === null ? null : String(task.priority),
    requestedBy: task.requested_by === null ? null : { id: task.requested_by },
    owner: task.owner === null ? { agentId: task.created_by_agent_id, runId: task.created_by_run_id } : { id: task.owner },
    assignee: task.assignee === null ? null : { id: task.assignee },
    scope: task.scope,
    constraints: task.constraints,
    taskProfile: task.task_profile,
    acceptance: acceptanceRecord(state, task),
    currentRunId: current?.run_id ?? null,
    progress: defined({
      percent: total === 0 ? 0 : Math.round((c.completed / total) * 100),
      steps: { total, ...c },
      phase: taskProgress?.phase ?? null,
      summary: taskProgress?.summary ?? null,
      counters: taskProgress?.counters ?? null,
      diagnostics: diagnostics(state),
    }),
    relationships: items.steps.map((s) => ({ kind: "child_step", targetId: s.step_id, status: normalizedStepStatus(state, s) })),
    artifacts: producedArtifacts(items.steps).map((a) => ({ artifactId: a.artifactId, stepId: a.stepId })),
    // Delivery of results to a parent or channel is not something this runtime does.
    deliveryState: { status: "not_applicable" },
    statusReason: task.status_reason,
    lastError: task.last_error === null ? null : errorRecord(task.last_error),
    createdAt: task.created_at,
    updatedAt: task.updated_at,
    startedAt: task.started_at,
    endedAt: task.ended_at,
  });
}

/** Acceptance as the snapshot's list of objects: the criteria, and each required artifact with whether a completed step produced it. */
function acceptanceRecord(state: DagState, task: Task) {
  const acceptance = task.acceptance;
  if (acceptance === null) return null;
  // The same rule `complete` checks: a required artifact is satisfied once a completed step produced it.
  const missing = new Set(missingRequiredArtifacts(state));
  return [
    ...(acceptance.criteria === undefined ? [] : [{ kind: "criteria", criteria: acceptance.criteria }]),
    ...(acceptance.required_artifacts ?? []).map((id) => ({ kind: "required_artifact", artifactId: id, satisfied: !missing.has(id) })),
  ];
}

/** A failure fact in camelCase. */
function errorRecord(e: ErrorFact) {
  return defined({ code: e.code, message: e.message, stepId: e.step_id, attemptId: e.attempt_id, at: e.at });
}

/** The read model of one task (or of one page of it): record, graph, attempts, blocked steps, delivery state. */
export function taskReadModel(state: DagState, items: TaskPageItems = allItems(state)) {
  return {
    task: taskRecord(state, items),
    taskGraph: taskGraph(state, items),
    attempts: attemptRecords(state, items),
    blockedTasks: blockedSteps(state, items),
    /** Open actions: what the task waits for people to answer. */
    openActions: [...state.index.openActions].map((id) => actionRecord(state.actions.get(id)!)),
    deliveryState: { status: "not_applicable" },
  };
}
