/**
 * @module RuntimeClient and WorkerClient. A RuntimeClient has every operation (RuntimeCalls) and makes the
 * other clients of its family: `withToken` and the workers of `worker` and `dispatchWorker` share its
 * Transport, so their task writes of one tick are group-committed together. A WorkerClient is a RuntimeClient
 * bound to one worker run's token and task, with the claim/complete loop (run-worker.ts). The two classes name
 * each other, so they share this module.
 */
import type { WaitForActionOptions } from "./action-wait.js";
import { taskPath } from "./paths.js";
import { RuntimeCalls } from "./runtime-calls.js";
import { runWorker, type StepContextOf, type StepResult, type WorkerRunOptions, type WorkerRunReport } from "./run-worker.js";
import type {
  Action,
  ActionAnswer,
  ActionListQuery,
  ActionPage,
  CallOptions,
  ClaimNextAnswer,
  ClaimStepAnswer,
  DispatchAnswer,
  DispatchWorkerInput,
  FinishRunInput,
  GetActionQuery,
  ProgressInput,
  PromptSummary,
  RequestActionInput,
  Step,
  StepPage,
  StepQuery,
  SummaryQuery,
  TaskGetQuery,
  TaskRef,
  TaskView,
  UpdateStepAnswer,
  UpdateStepInput,
  StepWriteAnswer,
  WriteAnswer,
} from "./types.js";

/** The typed client of the agent task runtime's HTTP API. */
export class RuntimeClient extends RuntimeCalls {
  /** A client of the same family (same Transport: shared batching and retries) calling with another token. */
  withToken(token: string): RuntimeClient {
    return new RuntimeClient({ transport: this.transport, token });
  }

  /** A worker client for a run whose token you already hold (`dispatchWorker` makes one for you). */
  worker(task: TaskRef, credentials: WorkerCredentials): WorkerClient {
    return new WorkerClient(this.withToken(credentials.token), taskPath(task), credentials);
  }

  /** POST .../workers (agent.dispatch_worker): a worker client bound to the new run's token. */
  async dispatchWorker(task: TaskRef, body: DispatchWorkerInput = {}, opts?: CallOptions): Promise<WorkerClient> {
    const path = taskPath(task);
    const answer = await this.write<DispatchAnswer>("POST", `${path}/workers`, body, opts);
    return new WorkerClient(this.withToken(answer.token), path, { token: answer.token, runId: answer.run_id, agentId: answer.agent_id, maxSteps: answer.run.max_steps }, answer);
  }
}

/** What identifies a worker run to the client. */
export interface WorkerCredentials {
  readonly token: string;
  readonly runId: string;
  readonly agentId?: string;
  /** The run's max_steps, when known (it decides whether `run` asks for the next step with each update). */
  readonly maxSteps?: number;
}

/** What a handler gets besides its step (`worker` is the WorkerClient running it). */
export interface StepContext extends StepContextOf<WorkerClient> {}

/** Works one step: return to complete it, throw to fail it. */
export type StepHandler = (step: Step, ctx: StepContext) => StepResult | void | Promise<StepResult | void>;

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
  appendProgress(stepId: string, body: ProgressInput = {}, opts?: CallOptions): Promise<StepWriteAnswer> {
    return this.client.appendProgress(this.task, stepId, body, opts);
  }

  /** Ask a person about the held step: its lease holds until the action is resolved (in a handler, `ctx.ask` does this and waits). */
  requestAction(stepId: string, body: RequestActionInput, opts?: CallOptions): Promise<ActionAnswer> {
    return this.client.requestStepAction(this.task, stepId, body, opts);
  }

  /** One action of the task; with `waitMs` (≤ 30,000) the answer waits until it is resolved or the wait ends. */
  getAction(actionId: string, opts?: CallOptions & GetActionQuery): Promise<Action> {
    return this.client.getAction(this.task, actionId, opts);
  }

  /** The action once a person (or its expiry) resolved it, long-polling through dropped connections. */
  waitForAction(actionId: string, opts?: WaitForActionOptions): Promise<Action> {
    return this.client.waitForAction(this.task, actionId, opts);
  }

  /** The task's actions, oldest first. */
  listActions(query?: ActionListQuery, opts?: CallOptions): Promise<ActionPage> {
    return this.client.listActions(this.task, query, opts);
  }

  /** End this run (`outcome: "finished"` by default); a step it still holds fails with the run-end fallback reason. */
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
