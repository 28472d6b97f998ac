/**
 * @module The scratch DAG an agent.task_update patch is applied to, op by op, before anything is written: the
 * steps as the patch leaves them, their dependants, and what the events after the patch must say.
 */
import { runtimeError } from "../model/errors.js";
import { HELD_STEP_STATUSES, type StepStatus } from "../model/records.js";
import { err, ok, type Result } from "../model/result.js";
import type { DagState } from "../model/state.js";

/** A step of the scratch DAG. */
export interface ScratchStep {
  step_id: string;
  status: StepStatus;
  depends_on_step_ids: string[];
  required: boolean;
  worker_pool_id: string;
  claimed_by_run_id: string | null;
  ordinal: number;
  /** A retry its policy scheduled is pending: the step waits for it, not for readiness. */
  awaiting_retry: boolean;
}

/** A status change a cancel_step or reopen_step op causes, emitted after task_updated unless the step is deleted later. */
export interface StatusMark {
  readonly index: number;
  readonly op: "cancel_step" | "reopen_step";
  readonly step_id: string;
  readonly reason: string | null;
}

/** The DAG as the ops so far leave it; the recorded state is never touched. */
export class PatchScratch {
  /** The steps after the ops so far, by id. */
  readonly steps = new Map<string, ScratchStep>();
  /** Status changes to emit after task_updated, in op order. */
  readonly statusMarks: StatusMark[] = [];
  /** The index of the last op that deleted each step. */
  readonly lastDelete = new Map<string, number>();
  /** Steps a live run holds whose content changed, with that run (task_updated's updated_after_dispatch). */
  readonly afterDispatch = new Map<string, string>();
  /** Steps whose dependency list this patch set or changed: only they can name unknown steps afterwards. */
  readonly depsChanged = new Set<string>();
  private readonly dependants = new Map<string, Set<string>>();
  private nextOrdinal: number;

  /** `state`: the recorded DAG the patch starts from, never changed here. */
  constructor(readonly recorded: DagState) {
    const state = recorded;
    for (const s of state.steps.values()) {
      this.steps.set(s.step_id, {
        step_id: s.step_id,
        status: s.status,
        // Shared with the record until this patch changes it (ownDeps): copying every list up front would cost
        // O(edges) for a patch that touches one step.
        depends_on_step_ids: s.depends_on_step_ids,
        required: s.required,
        worker_pool_id: s.worker_pool_id,
        claimed_by_run_id: s.claimed_by_run_id,
        ordinal: s.ordinal,
        awaiting_retry: s.retry_at !== null,
      });
    }
    for (const [id, set] of state.index.dependents) this.dependants.set(id, new Set(set));
    this.nextOrdinal = state.next_ordinal;
  }

  /** The step an op names, or not_found. */
  existing(stepId: string): Result<ScratchStep> {
    const step = this.steps.get(stepId);
    return step === undefined ? err(runtimeError("not_found", `no step ${stepId}`, { step_id: stepId })) : ok(step);
  }

  /** Adds a new pending step with the next ordinal; its dependency list is its own. */
  add(step: Omit<ScratchStep, "status" | "claimed_by_run_id" | "ordinal" | "awaiting_retry">): void {
    this.steps.set(step.step_id, { ...step, depends_on_step_ids: [...step.depends_on_step_ids], status: "pending", claimed_by_run_id: null, ordinal: this.nextOrdinal++, awaiting_retry: false });
    this.depsChanged.add(step.step_id);
    for (const dep of step.depends_on_step_ids) this.link(dep, step.step_id);
  }

  /** Deletes a step at op `index`: it no longer depends on anything, and nothing said about it before stands. */
  delete(step: ScratchStep, index: number): void {
    for (const dep of step.depends_on_step_ids) this.unlink(dep, step.step_id);
    this.steps.delete(step.step_id);
    this.depsChanged.delete(step.step_id);
    this.afterDispatch.delete(step.step_id);
    this.lastDelete.set(step.step_id, index);
  }

  /** Sets a step's status at op `index` (cancel_step, reopen_step); its event follows task_updated. */
  setStatus(step: ScratchStep, status: "cancelled" | "pending", mark: Omit<StatusMark, "step_id">): void {
    step.status = status;
    // The orchestrator's cancel or reopen supersedes a scheduled retry.
    step.awaiting_retry = false;
    this.statusMarks.push({ ...mark, step_id: step.step_id });
  }

  /** Replaces a step's dependency list. */
  setDependencies(step: ScratchStep, deps: string[]): void {
    this.ownDeps(step);
    for (const dep of step.depends_on_step_ids) this.unlink(dep, step.step_id);
    step.depends_on_step_ids = deps;
    for (const dep of step.depends_on_step_ids) this.link(dep, step.step_id);
  }

  /** Adds one dependency (the caller checked it is new). */
  addDependency(step: ScratchStep, dep: string): void {
    this.ownDeps(step);
    step.depends_on_step_ids.push(dep);
    this.link(dep, step.step_id);
  }

  /** Removes one dependency. */
  removeDependency(step: ScratchStep, dep: string): void {
    this.ownDeps(step);
    step.depends_on_step_ids = step.depends_on_step_ids.filter((d) => d !== dep);
    this.unlink(dep, step.step_id);
  }

  /** The steps that depend on `stepId` now. */
  dependantsOf(stepId: string): ReadonlySet<string> | undefined {
    return this.dependants.get(stepId);
  }

  /** Records that a step a live run holds changed, so the run can learn it (updated_after_dispatch). */
  markDispatched(step: ScratchStep): void {
    if (HELD_STEP_STATUSES.has(step.status) && step.claimed_by_run_id !== null) this.afterDispatch.set(step.step_id, step.claimed_by_run_id);
  }

  /** Gives a step its own dependency list before the first change, so the recorded step keeps its list. */
  private ownDeps(step: ScratchStep): void {
    if (!this.depsChanged.has(step.step_id)) {
      step.depends_on_step_ids = [...step.depends_on_step_ids];
      this.depsChanged.add(step.step_id);
    }
  }

  private link(dep: string, on: string): void {
    let set = this.dependants.get(dep);
    if (set === undefined) this.dependants.set(dep, (set = new Set()));
    set.add(on);
  }

  private unlink(dep: string, on: string): void {
    this.dependants.get(dep)?.delete(on);
  }
}
