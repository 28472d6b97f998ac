/**
 * @module What the step panel shows of one step, read from the DAG the core rebuilt (live or at a replayed
 * wal_seq): its status, attempts and how each ended, open actions, retry, delegation, and what changed since the
 * latest attempt's dispatch-time snapshot.
 */
import { ATTEMPT_STATUS_MAP, type DagState, type NormalizedStatus, normalizedStepStatus, type Step, type StepSnapshot } from "../../../src/core/browser.js";

export interface AttemptDetails {
  readonly attemptId: string;
  readonly ordinal: number;
  readonly runId: string;
  readonly agentId: string;
  readonly startedAt: string;
  readonly endedAt: string | null;
  /** How it ended (native attempt status: completed, failed, lost, timed_out, cancelled, blocked); null while active. */
  readonly ended: string | null;
  readonly normalized: NormalizedStatus;
  readonly resultSummary: string | null;
  readonly lastError: string | null;
  /** True for the step's current attempt. */
  readonly current: boolean;
}

export interface ActionDetails {
  readonly actionId: string;
  readonly kind: "approval" | "input";
  readonly prompt: string;
  readonly createdAt: string;
  readonly expiresAt: string;
}

export interface RetryDetails {
  /** When a scheduled retry reopens the step; null when none is scheduled. */
  readonly retryAt: string | null;
  /** Attempts made under the policy since the step was last reopened. */
  readonly attempts: number;
  /** The policy's limit (the step's, else the task's default); null without a policy. */
  readonly maxAttempts: number | null;
}

export interface DelegationDetails {
  readonly kind: "task" | "a2a";
  /** The child task (kind task): the view to open. */
  readonly childTaskId: string | null;
  readonly agentCardRef: string | null;
  readonly remoteTaskId: string | null;
  readonly remoteContextId: string | null;
  readonly remoteStatus: string | null;
  readonly remoteArtifactRefs: readonly string[];
  /** Where the delegation stands (starting, active, …, closed), and how it ended once closed. */
  readonly status: string | null;
  readonly outcome: string | null;
}

/** A step field whose current value differs from what the worker saw when it claimed the step. */
export interface ChangedField {
  readonly field: keyof StepSnapshot;
  readonly atDispatch: string;
  readonly now: string;
}

export interface StepDetails {
  readonly stepId: string;
  readonly title: string;
  readonly summary: string;
  readonly status: NormalizedStatus;
  readonly nativeStatus: string;
  readonly statusReason: string | null;
  readonly required: boolean;
  readonly pool: string;
  readonly dependsOn: readonly string[];
  readonly claimedBy: { readonly agentId: string; readonly runId: string | null; readonly leaseExpiresAt: string | null } | null;
  readonly resultSummary: string | null;
  readonly artifacts: readonly string[];
  readonly attempts: readonly AttemptDetails[];
  readonly openActions: readonly ActionDetails[];
  readonly retry: RetryDetails | null;
  readonly delegation: DelegationDetails | null;
  /** The step's own flag: the orchestrator changed it while a run held it. */
  readonly updatedAfterDispatch: boolean;
  /** Fields that differ between the latest attempt's dispatch-time snapshot and the step now. */
  readonly changedSinceDispatch: readonly ChangedField[];
}

const SNAPSHOT_FIELDS: readonly (keyof StepSnapshot)[] = ["title", "summary", "depends_on_step_ids", "required", "worker_pool_id"];

/** The panel's data for `stepId` in `state`, or null when the step does not exist there. */
export function stepDetails(state: DagState, stepId: string): StepDetails | null {
  const step = state.steps.get(stepId);
  if (step === undefined) return null;
  const attempts: AttemptDetails[] = [];
  for (const id of step.attempt_ids) {
    const a = state.attempts.get(id);
    if (a === undefined) continue;
    attempts.push({
      attemptId: a.attempt_id,
      ordinal: a.ordinal,
      runId: a.run_id,
      agentId: a.agent_id,
      startedAt: a.started_at,
      endedAt: a.ended_at,
      ended: a.status === "active" ? null : a.status,
      normalized: ATTEMPT_STATUS_MAP[a.status],
      resultSummary: a.result_summary,
      lastError: a.last_error,
      current: a.attempt_id === step.current_attempt_id,
    });
  }
  const openActions: ActionDetails[] = [];
  for (const a of state.actions.values()) {
    if (a.step_id !== stepId || a.status !== "open") continue;
    openActions.push({ actionId: a.action_id, kind: a.kind, prompt: a.prompt, createdAt: a.created_at, expiresAt: a.expires_at });
  }
  const latest = step.attempt_ids.length === 0 ? undefined : state.attempts.get(step.current_attempt_id ?? step.attempt_ids[step.attempt_ids.length - 1]!);
  return {
    stepId,
    title: step.title,
    summary: step.summary,
    status: normalizedStepStatus(state, step),
    nativeStatus: step.status,
    statusReason: step.status_reason,
    required: step.required,
    pool: step.worker_pool_id,
    dependsOn: step.depends_on_step_ids,
    claimedBy: step.claimed_by_agent_id === null ? null : { agentId: step.claimed_by_agent_id, runId: step.claimed_by_run_id, leaseExpiresAt: step.lease_expires_at },
    resultSummary: step.result_summary,
    artifacts: step.artifact_ids,
    attempts,
    openActions,
    retry: retryOf(state, step),
    delegation: delegationOf(state, step),
    updatedAfterDispatch: step.updated_after_dispatch,
    changedSinceDispatch: latest === undefined ? [] : changedFields(latest.step_snapshot, step),
  };
}

/** The fields of `step` that differ from `snapshot` (dependencies compared as sets). */
export function changedFields(snapshot: StepSnapshot, step: Step): ChangedField[] {
  const out: ChangedField[] = [];
  for (const field of SNAPSHOT_FIELDS) {
    const before = snapshot[field];
    const now = step[field];
    const same = Array.isArray(before) && Array.isArray(now) ? sameSet(before, now) : before === now;
    if (!same) out.push({ field, atDispatch: show(before), now: show(now) });
  }
  return out;
}

function retryOf(state: DagState, step: Step): RetryDetails | null {
  const policy = step.retry_policy ?? state.task?.default_retry_policy ?? null;
  // Without a policy nothing is retried: the attempt count alone says nothing the attempts list does not.
  if (policy === null && step.retry_at === null) return null;
  return { retryAt: step.retry_at, attempts: step.retry_attempts, maxAttempts: policy?.max_attempts ?? null };
}

function delegationOf(state: DagState, step: Step): DelegationDetails | null {
  if (step.delegate === null) return null;
  const d = step.delegation_id === null ? undefined : state.delegations.get(step.delegation_id);
  return {
    kind: step.delegate.kind,
    childTaskId: d?.child_task_id ?? null,
    agentCardRef: d?.agent_card_ref ?? (step.delegate.kind === "a2a" ? step.delegate.agent_card_url : null),
    remoteTaskId: d?.remote_task_id ?? null,
    remoteContextId: d?.remote_context_id ?? null,
    remoteStatus: d?.remote_status ?? null,
    remoteArtifactRefs: d?.remote_artifact_refs ?? [],
    status: d?.status ?? null,
    outcome: d?.outcome ?? null,
  };
}

/** The badge a delegated step's node carries. */
export function delegateBadge(step: Pick<Step, "delegate">): string | null {
  if (step.delegate === null) return null;
  return step.delegate.kind === "task" ? "child task" : "A2A";
}

function sameSet(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  const set = new Set(a);
  return b.every((x) => set.has(x));
}

function show(value: unknown): string {
  if (Array.isArray(value)) return value.length === 0 ? "(none)" : value.join(", ");
  return String(value);
}
