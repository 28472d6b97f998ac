/**
 * @module A small in-process orchestrator: dispatches workers for ready steps and runs them with
 * `worker.run`, handles failed steps (default: reopen once, then fail the task), and completes the task when
 * it is completeable. It re-reads the task whenever one of its workers ends, an event arrives on the task's
 * stream, or `pollMs` passes (so it works, more slowly to notice others' changes, without the stream).
 * A step its retry policy will retry is left to the runtime; a paused task is waited on, not given up.
 */
import { MAX_TEXT, RETRY_EXHAUSTED, TERMINAL_TASK_STATUSES } from "../core/browser.js";
import { isRuntimeApiError } from "./errors.js";
import { taskPath } from "./paths.js";
import { abortReason, linkedController, sleep } from "./retry.js";
import type { RuntimeClient, StepHandler, WorkerClient } from "./runtime-client.js";
import type { WorkerRunOptions, WorkerRunReport } from "./run-worker.js";
import type { RuntimeEvent, Step, TaskRef, TaskStatus, TaskView } from "./types.js";

/** What to do with a failed step: reopen it, fail the task, or leave it (an optional step, say). */
export type StepFailureAction = "reopen" | "fail" | "ignore";

/** Decides about a failed step; `reopened` counts the times this orchestrator reopened it before. */
export type StepFailedHandler = (step: Step, info: { readonly reopened: number; readonly view: TaskView }) => StepFailureAction | Promise<StepFailureAction>;

/** Options of `orchestrate`. */
export interface OrchestrateOptions {
  /** Works each step (see `worker.run`). */
  readonly handler: StepHandler;
  /** Pooled runs per worker pool with ready steps; unset: one run per ready step with max_steps 1 (the default: a run works one step). */
  readonly workerCount?: number;
  /** max_steps of each pooled run (default: the task's step count). */
  readonly maxSteps?: number;
  /** Every runtime event of the task, in order (needs the task's event stream). */
  readonly onEvent?: (event: RuntimeEvent) => void;
  /** Default: reopen a step the first time it fails, fail the task the second time. */
  readonly onStepFailed?: StepFailedHandler;
  /** Stops orchestrating: `orchestrate` rejects with the signal's reason once its workers have stopped; the task is left as it is. */
  readonly signal?: AbortSignal;
  /** Re-read the task at least this often (default 1,000 ms). */
  readonly pollMs?: number;
  /** Options of every worker loop. */
  readonly worker?: Omit<WorkerRunOptions, "signal">;
}

/** How orchestration ended. */
export interface OrchestrateResult {
  /** The task's final status, or `stalled` when nothing can move without someone else (blocked steps, a blocked task). */
  readonly status: TaskStatus | "stalled";
  readonly view: TaskView;
  readonly runs: WorkerRunReport[];
  /** Worker loops that threw (their runs were finished), and errors thrown by onEvent. */
  readonly errors: unknown[];
}

/** The default failure policy: reopen once, then fail the task; a step whose retry policy is used up fails the task at once. */
export const reopenOnce: StepFailedHandler = (step, { reopened }) => (reopened === 0 && step.status_reason !== RETRY_EXHAUSTED ? "reopen" : "fail");

/** Resolves a waiter now, or the next one if none waits. */
class Wakeup {
  private pending = false;
  private resolve: (() => void) | undefined;

  wake(): void {
    if (this.resolve === undefined) this.pending = true;
    else this.resolve();
  }

  async wait(ms: number, signal: AbortSignal): Promise<void> {
    if (this.pending || signal.aborted) {
      this.pending = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        this.resolve = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done, { once: true });
      this.resolve = done;
    });
  }
}

/** Runs a task to the end with in-process workers; see the module comment. */
export async function orchestrate(client: RuntimeClient, task: TaskRef, opts: OrchestrateOptions): Promise<OrchestrateResult> {
  const path = taskPath(task);
  const { controller, unlink } = linkedController(opts.signal);
  const signal = controller.signal;
  const wakeup = new Wakeup();
  const onStepFailed = opts.onStepFailed ?? reopenOnce;
  /** Worker loops in flight: by step id (one run per step) or by run id (pooled), with their pool. */
  const running = new Map<string, { pool: string; done: Promise<void> }>();
  const reopened = new Map<string, number>();
  /** Failures already decided, as `step#attempts`, so "ignore" is not asked again. */
  const decided = new Set<string>();
  const runs: WorkerRunReport[] = [];
  const errors: unknown[] = [];

  const watcher = (async () => {
    try {
      for await (const event of client.subscribe(path, { afterSeq: 0, signal })) {
        try {
          opts.onEvent?.(event);
        } catch (e) {
          errors.push(e);
        }
        wakeup.wake();
      }
    } catch {
      // No stream (an older server, a proxy that drops it): polling and the workers' ends still drive the loop.
    }
  })();

  const launch = (key: string, pool: string, worker: WorkerClient): void => {
    const done = worker
      .run(opts.handler, { ...opts.worker, signal })
      .then(
        (report) => void runs.push(report),
        (e) => void errors.push(e),
      )
      .finally(() => {
        running.delete(key);
        wakeup.wake();
      });
    running.set(key, { pool, done });
  };
  /** Dispatches, tolerating a task that closed or got blocked meanwhile (the next read sees it). */
  const dispatch = (body: Parameters<RuntimeClient["dispatchWorker"]>[1]) =>
    client.dispatchWorker(path, body, { signal }).catch((e: unknown) => {
      if (isRuntimeApiError(e, "task_terminal", "task_not_dispatchable")) return undefined;
      throw e;
    });

  let view: TaskView;
  let status: TaskStatus | "stalled";
  try {
    for (;;) {
      if (signal.aborted) throw abortReason(signal);
      // Whole: a task larger than one page still has its ready and failed steps past the first page.
      view = await client.getWholeTask(path, { signal });
      if (TERMINAL_TASK_STATUSES.has(view.task.status)) {
        status = view.task.status;
        break;
      }
      if (await handleFailures(view)) continue;
      if (view.diagnostics.completeable) {
        try {
          await client.completeTask(path, {}, { signal });
          continue;
        } catch (e) {
          // A worker claimed an optional step meanwhile: wait for it.
          if (!isRuntimeApiError(e, "task_not_completeable")) throw e;
        }
      }
      const held = view.task.status === "blocked" || view.task.status === "paused";
      const ready = held ? [] : view.steps.filter((s) => s.status === "ready");
      if (opts.workerCount === undefined) {
        const fresh = ready.filter((s) => !running.has(s.step_id));
        const workers = await Promise.all(fresh.map((s) => dispatch({ worker_pool_id: s.worker_pool_id, allowed_step_ids: [s.step_id], max_steps: 1 })));
        workers.forEach((w, i) => w !== undefined && launch(fresh[i]!.step_id, fresh[i]!.worker_pool_id, w));
      } else {
        const readyByPool = new Map<string, number>();
        for (const s of ready) readyByPool.set(s.worker_pool_id, (readyByPool.get(s.worker_pool_id) ?? 0) + 1);
        const wanted = [...readyByPool].flatMap(([pool, n]) => {
          const busy = [...running.values()].filter((r) => r.pool === pool).length;
          return Array.from({ length: Math.max(0, Math.min(n, opts.workerCount! - busy)) }, () => pool);
        });
        const workers = await Promise.all(wanted.map((pool) => dispatch({ worker_pool_id: pool, max_steps: opts.maxSteps ?? Math.max(1, view.steps.length) })));
        workers.forEach((w, i) => w !== undefined && launch(w.runId, wanted[i]!, w));
      }
      // A paused task waits for its resume, and a step waiting for its retry will be reopened by the runtime.
      const waiting = view.task.status === "paused" || view.steps.some((s) => s.retry_at !== null);
      if (running.size === 0 && ready.length === 0 && !waiting && (view.diagnostics.stalled || view.task.status === "blocked")) {
        status = "stalled";
        break;
      }
      await wakeup.wait(opts.pollMs ?? 1_000, signal);
    }
    // The stream ends by itself once the task is terminal: give onEvent the last events.
    if (status !== "stalled") await Promise.race([watcher, sleep(2_000, signal).catch(() => undefined)]);
  } finally {
    controller.abort();
    unlink();
    await Promise.allSettled([...running.values()].map((r) => r.done));
    await watcher;
  }
  return { status, view, runs, errors };

  /** Decides each newly failed step; true when the task changed (re-read it). */
  async function handleFailures(current: TaskView): Promise<boolean> {
    for (const step of current.steps) {
      // A failure its retry policy will retry is not the orchestrator's to decide (retry_at: the runtime reopens it).
      if (step.status !== "failed" || step.retry_at !== null) continue;
      const key = `${step.step_id}#${step.attempt_ids.length}`;
      if (decided.has(key)) continue;
      decided.add(key);
      const times = reopened.get(step.step_id) ?? 0;
      const action = await onStepFailed(step, { reopened: times, view: current });
      if (action === "reopen") {
        reopened.set(step.step_id, times + 1);
        await client.updateTask(path, [{ op: "reopen_step", step_id: step.step_id, reason: `reopened by orchestrate (${times + 1})` }], { signal });
        return true;
      }
      if (action === "fail") {
        await client.failTask(path, { reason: `step ${step.step_id} failed: ${step.status_reason ?? "no reason given"}`.slice(0, MAX_TEXT) }, { signal });
        return true;
      }
    }
    return false;
  }
}
