/**
 * @module The worker loop: claim-next, run the handler, mark the step completed (or failed with the error's
 * message) while taking the next step in the same call, until nothing is claimable; then finish the run.
 * The handler's `ctx.signal` aborts when the run loses its step (cancelled, lease expired, task closed); its
 * `ctx.ask` asks a person and waits for the answer.
 * It knows its worker only by the calls it makes (WorkerLoopCalls), not as the WorkerClient that runs it.
 */
import { MAX_STEP_QUERY_LIMIT } from "../contract/limits.js";
import { MAX_TEXT } from "../core/browser.js";
import { isRuntimeApiError, RuntimeApiError } from "./errors.js";
import { resend, type WaitForActionOptions } from "./action-wait.js";
import { DEFAULT_RETRY, linkedController } from "./retry.js";
import type {
  Action,
  ActionAnswer,
  CallOptions,
  ClaimNextAnswer,
  Claimed,
  FinishRunInput,
  NextClaim,
  ProgressInput,
  RequestActionInput,
  Step,
  StepPage,
  StepQuery,
  UpdateStepAnswer,
  UpdateStepInput,
} from "./types.js";

/** What the loop calls on its worker (a WorkerClient has all of it). */
export interface WorkerLoopCalls {
  readonly runId: string;
  readonly agentId: string | undefined;
  readonly maxSteps: number | undefined;
  claimNext(opts?: CallOptions): Promise<ClaimNextAnswer>;
  updateStep(stepId: string, body: UpdateStepInput, opts?: CallOptions): Promise<UpdateStepAnswer>;
  appendProgress(stepId: string, body?: ProgressInput, opts?: CallOptions): Promise<unknown>;
  querySteps(query?: StepQuery, opts?: CallOptions): Promise<StepPage>;
  finish(body?: FinishRunInput, opts?: CallOptions): Promise<unknown>;
  requestAction(stepId: string, body: RequestActionInput, opts?: CallOptions): Promise<ActionAnswer>;
  waitForAction(actionId: string, opts?: WaitForActionOptions): Promise<Action>;
}

/** What a handler may hand back for its step. */
export interface StepResult {
  readonly result_summary?: string;
  readonly artifact_ids?: string[];
}

/** What a handler gets besides its step, `worker` being the worker `W` running the loop (StepContext for a WorkerClient). */
export interface StepContextOf<W> {
  readonly step: Step;
  readonly attemptId: string;
  /** Aborts when the run no longer holds the step (run cancelled, lease expired, task terminal) or the caller aborts. */
  readonly signal: AbortSignal;
  readonly worker: W;
  /** Reports progress and renews the lease; throws (and aborts `signal`) once the step is no longer the run's. */
  progress(progress: ProgressInput): Promise<void>;
  /**
   * Asks a person about this step (an approval, or input checked against `input_schema`) and resolves with the
   * resolved action: its `decision` (approved, rejected, submitted, or expired / withdrawn by the runtime),
   * `input` and `comment`. The step's lease holds meanwhile. A request retried after a lost answer returns the
   * same action, never a second one; the wait outlives dropped connections. Rejects (and aborts `signal`)
   * once the step is no longer the run's.
   */
  ask(request: RequestActionInput): Promise<Action>;
}

/** Works one step of worker `W`: return to complete it, throw to fail it (StepHandler for a WorkerClient). */
export type StepHandlerOf<W> = (step: Step, ctx: StepContextOf<W>) => StepResult | void | Promise<StepResult | void>;

/** Options of `worker.run`. */
export interface WorkerRunOptions {
  /** Stops the loop: the held step is left to `finish` (outcome cancelled), which fails it with worker_cancelled. */
  readonly signal?: AbortSignal;
  /** How often to check that the run still holds its step while the handler works (default 5,000 ms; 0: never). */
  readonly watchMs?: number;
  /** Ask for the next step with each status update (default true; never when the run's max_steps is known to be spent). */
  readonly claimNext?: boolean;
  /** Finish the run when the loop ends (default true). */
  readonly finish?: boolean;
}

/** Why the loop stopped (`run_ended`: the run was ended for it, cancelled, timed out or by the task's completion, and its token is spent). */
export type WorkerStopReason = "no_step_claimed" | "claim_lost" | "task_terminal" | "task_not_dispatchable" | "run_ended" | "aborted";

/** What a run did. */
export interface WorkerRunReport {
  readonly runId: string;
  readonly completed: string[];
  readonly failed: string[];
  readonly stopped: WorkerStopReason;
  /** True when this loop finished the run itself. */
  readonly finished: boolean;
}

/** The service's answer to the token of a run that has ended: 401 with `details.reason` run_ended. */
function isRunEnded(e: unknown): boolean {
  return e instanceof RuntimeApiError && e.code === "unauthorized" && e.details.reason === "run_ended";
}

/** Errors that mean the run no longer holds its step or may not claim: the loop stops instead of throwing. */
function stopReasonOf(e: unknown): WorkerStopReason | undefined {
  if (!(e instanceof RuntimeApiError)) return undefined;
  if (isRunEnded(e)) return "run_ended";
  switch (e.code) {
    case "task_terminal":
      return "task_terminal";
    case "task_not_dispatchable":
      return "task_not_dispatchable";
    case "permission_denied":
      return "claim_lost";
    default:
      return undefined;
  }
}

type StepOutcome = { readonly kind: "done"; readonly status: "completed" | "failed"; readonly next: NextClaim | undefined } | { readonly kind: "stopped"; readonly reason: WorkerStopReason };

type Next = { readonly claim: Claimed } | { readonly stop: WorkerStopReason };

/** A claim outcome as what to do next: work a step, or stop (errors that are not a reason to stop are thrown). */
function nextOf(next: NextClaim | undefined): Next {
  if (next === undefined) return { stop: "no_step_claimed" };
  if ("error" in next) {
    // Carried inside a 200 answer's `next`: the update itself succeeded.
    const error = new RuntimeApiError({ code: next.error.code, status: 200, message: next.error.message, details: next.error.details ?? {} });
    const stop = stopReasonOf(error);
    if (stop === undefined) throw error;
    return { stop };
  }
  return next.no_step_claimed === true ? { stop: "no_step_claimed" } : { claim: next };
}

/** The loop behind `WorkerClient.run`. */
export async function runWorker<W extends WorkerLoopCalls>(worker: W, handler: StepHandlerOf<W>, opts: WorkerRunOptions = {}): Promise<WorkerRunReport> {
  const completed: string[] = [];
  const failed: string[] = [];
  const claimNext = opts.claimNext ?? true;
  const claimAgain = async (): Promise<Next> => {
    try {
      return nextOf(await worker.claimNext(opts.signal === undefined ? {} : { signal: opts.signal }));
    } catch (e) {
      if (opts.signal?.aborted === true) return { stop: "aborted" };
      const stop = stopReasonOf(e);
      if (stop === undefined) throw e;
      return { stop };
    }
  };
  let finished = false;
  const finish = async (outcome: "finished" | "cancelled"): Promise<void> => {
    try {
      await worker.finish({ outcome });
      finished = true;
    } catch (e) {
      // The run already ended (cancelled, timed out, its task closed): nothing left to finish.
      if (!isRunEnded(e) && !isRuntimeApiError(e, "invalid_transition", "permission_denied", "task_terminal")) throw e;
    }
  };

  let next: Next;
  try {
    next = await claimAgain();
    while ("claim" in next) {
      const { step } = next.claim;
      const budgetLeft = worker.maxSteps === undefined || completed.length + failed.length + 1 < worker.maxSteps;
      const outcome = await workStep(worker, next.claim, handler, opts, claimNext && budgetLeft);
      if (outcome.kind === "stopped") {
        next = { stop: outcome.reason };
        break;
      }
      (outcome.status === "completed" ? completed : failed).push(step.step_id);
      // A run known to have spent its claims does not ask again (claim-next would answer run_budget_spent).
      if (!budgetLeft) next = { stop: "no_step_claimed" };
      else next = claimNext ? nextOf(outcome.next) : await claimAgain();
    }
  } catch (e) {
    // An unexpected failure: end the run so a step it holds fails now rather than when its lease runs out.
    if (opts.finish !== false) await finish("finished").catch(() => undefined);
    throw e;
  }
  const stopped = next.stop;
  // A terminal task may be waiting for this run to acknowledge its cancellation (a fail or cancel asked it):
  // finishing ends the run now rather than at the service's cancellation timeout; a run already ended answers
  // run_ended (its token is spent), which `finish` ignores, and is not finished again.
  if (opts.finish !== false && stopped !== "run_ended") await finish(stopped === "aborted" || stopped === "task_terminal" ? "cancelled" : "finished");
  return { runId: worker.runId, completed, failed, stopped, finished };
}

/** Runs the handler on one claimed step and records its outcome (taking the next step when asked). */
async function workStep<W extends WorkerLoopCalls>(worker: W, claim: Claimed, handler: StepHandlerOf<W>, opts: WorkerRunOptions, claimNext: boolean): Promise<StepOutcome> {
  const { step } = claim;
  const { controller, unlink } = linkedController(opts.signal);
  let lost: WorkerStopReason | undefined;
  const lose = (e: unknown): boolean => {
    const reason = stopReasonOf(e);
    if (reason === undefined) return false;
    lost ??= reason;
    controller.abort(e);
    return true;
  };
  let asks = 0;
  const ctx: StepContextOf<W> = {
    step,
    attemptId: claim.attempt_id,
    signal: controller.signal,
    worker,
    progress: async (progress) => {
      try {
        await worker.appendProgress(step.step_id, progress, opts.signal === undefined ? {} : { signal: opts.signal });
      } catch (e) {
        lose(e);
        throw e;
      }
    },
    ask: async (request) => {
      asks += 1;
      const idempotencyKey = askKey(worker.runId, claim.attempt_id, step.step_id, asks);
      try {
        // Sent again with the same key after failures the transport's own tries did not overcome: one action, however often sent.
        const answer = await resend(() => worker.requestAction(step.step_id, request, { idempotencyKey, signal: controller.signal }), DEFAULT_RETRY, controller.signal);
        // A replayed request answers with the action as it was first opened: wait for it either way.
        return answer.action.status === "resolved" ? answer.action : await worker.waitForAction(answer.action_id, { signal: controller.signal });
      } catch (e) {
        lose(e);
        throw e;
      }
    },
  };

  // Polls whether the run still holds the step, so a cancelled run's handler hears of it without reporting.
  let watching = true;
  let checking = false;
  const check = async (): Promise<void> => {
    if (checking) return;
    checking = true;
    try {
      const page = await worker.querySteps({ status: ["claimed", "running"], limit: MAX_STEP_QUERY_LIMIT, ...(worker.agentId === undefined ? {} : { claimed_by_agent_id: worker.agentId }) });
      if (watching && !page.steps.some((s) => s.step_id === step.step_id && s.claimed_by_run_id === worker.runId)) {
        lose(new RuntimeApiError({ code: "permission_denied", status: 403, message: `step ${step.step_id} is no longer held by run ${worker.runId}` }));
      }
    } catch (e) {
      if (watching) lose(e);
    } finally {
      checking = false;
    }
  };
  const watchMs = opts.watchMs ?? 5_000;
  const timer = watchMs > 0 ? setInterval(() => void check(), watchMs) : undefined;

  let result: unknown;
  let error: unknown;
  let threw = false;
  try {
    result = await handler(step, ctx);
  } catch (e) {
    threw = true;
    error = e;
  } finally {
    watching = false;
    if (timer !== undefined) clearInterval(timer);
    unlink();
  }
  if (lost !== undefined) return { kind: "stopped", reason: lost };
  if (opts.signal?.aborted === true) return { kind: "stopped", reason: "aborted" };

  const body: UpdateStepInput = threw ? { status: "failed", reason: messageOf(error).slice(0, MAX_TEXT) } : { status: "completed", ...resultFields(result) };
  try {
    const answer = await worker.updateStep(step.step_id, claimNext ? { ...body, claim_next: true } : body);
    return { kind: "done", status: body.status as "completed" | "failed", next: answer.next };
  } catch (e) {
    const reason = stopReasonOf(e);
    if (reason === undefined) throw e;
    return { kind: "stopped", reason };
  }
}

/**
 * The Idempotency-Key of a handler's `ask` number `ordinal` on one claim: the same ask of the same claim always
 * sends the same key, so the service answers a repeat with the action it opened the first time.
 */
export function askKey(runId: string, attemptId: string, stepId: string, ordinal: number): string {
  return `ask:${runId}:${attemptId}:${stepId}:${ordinal}`;
}

function resultFields(result: unknown): StepResult {
  if (typeof result !== "object" || result === null) return {};
  const r = result as StepResult;
  return { ...(r.result_summary === undefined ? {} : { result_summary: r.result_summary }), ...(r.artifact_ids === undefined ? {} : { artifact_ids: r.artifact_ids }) };
}

function messageOf(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  return text === "" ? "the step handler failed" : text;
}
