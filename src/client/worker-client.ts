/** @module WorkerClient: a RuntimeClient bound to one worker run's token and task, with the claim/complete loop. */
import type { RuntimeClient } from "./runtime-client.js";
import { runWorker, type StepHandler, type WorkerRunOptions, type WorkerRunReport } from "./run-worker.js";
import type {
  CallOptions,
  ClaimNextAnswer,
  ClaimStepAnswer,
  DispatchAnswer,
  FinishRunInput,
  ProgressInput,
  PromptSummary,
  StepPage,
  StepQuery,
  SummaryQuery,
  TaskGetQuery,
  TaskView,
  UpdateStepAnswer,
  UpdateStepInput,
  WriteAnswer,
} from "./types.js";

/** What identifies a worker run to the client. */
export interface WorkerCredentials {
  readonly token: string;
  readonly runId: string;
  readonly agentId?: string;
  /** The run's max_steps, when known (it decides whether `run` asks for the next step with each update). */
  readonly maxSteps?: number;
}

/** The calls a worker run makes on its task, without repeating the task or the token. */
export class WorkerClient {
  readonly token: string;
  readonly runId: string;
  readonly agentId: string | undefined;
  readonly maxSteps: number | undefined;

  constructor(
    /** A client of the family calling with this worker's token. */
    readonly client: RuntimeClient,
    /** The task's path. */
    readonly task: string,
    credentials: WorkerCredentials,
    /** The dispatch answer, when this client came from `dispatchWorker`. */
    readonly dispatch?: DispatchAnswer,
  ) {
    this.token = credentials.token;
    this.runId = credentials.runId;
    this.agentId = credentials.agentId;
    this.maxSteps = credentials.maxSteps;
  }

  /** GET the task (agent.task_get), or one page of it (`limit`, `cursor`). */
  getTask(opts?: CallOptions & TaskGetQuery): Promise<TaskView> {
    return this.client.getTask(this.task, opts);
  }

  /** The whole task, its pages joined. */
  getWholeTask(opts?: CallOptions & Pick<TaskGetQuery, "limit">): Promise<TaskView> {
    return this.client.getWholeTask(this.task, opts);
  }

  /** Query steps (a worker sees ready steps in its scope, 5 at a time, by default). */
  querySteps(query?: StepQuery, opts?: CallOptions): Promise<StepPage> {
    return this.client.querySteps(this.task, query, opts);
  }

  /** The compact DAG summary for a prompt. */
  summary(query?: SummaryQuery, opts?: CallOptions): Promise<PromptSummary> {
    return this.client.summary(this.task, query, opts);
  }

  /** Claim one step under a lease. */
  claimStep(stepId: string, opts?: CallOptions): Promise<ClaimStepAnswer> {
    return this.client.claimStep(this.task, stepId, opts);
  }

  /** Claim the first claimable step, or learn there is none (`no_step_claimed`). */
  claimNext(opts?: CallOptions): Promise<ClaimNextAnswer> {
    return this.client.claimNext(this.task, opts);
  }

  /** Update the held step's status and results; `claim_next: true` takes the next step in the same call. */
  updateStep(stepId: string, body: UpdateStepInput, opts?: CallOptions): Promise<UpdateStepAnswer> {
    return this.client.updateStep(this.task, stepId, body, opts);
  }

  /** Report progress on the held step (renews its lease). */
  appendProgress(stepId: string, body: ProgressInput = {}, opts?: CallOptions): Promise<WriteAnswer> {
    return this.client.appendProgress(this.task, stepId, body, opts);
  }

  /** End this run (`outcome: "finished"` by default); a step it still holds fails with 003's fallback. */
  finish(body: FinishRunInput = { outcome: "finished" }, opts?: CallOptions): Promise<WriteAnswer> {
    return this.client.finishRun(this.task, this.runId, body, opts);
  }

  /**
   * Claims steps and runs `handler` on each until nothing is claimable, marking each completed with what the
   * handler returns, or failed with the message of what it throws; then finishes the run.
   */
  run(handler: StepHandler, opts?: WorkerRunOptions): Promise<WorkerRunReport> {
    return runWorker(this, handler, opts);
  }
}
