/** @module The step scenario every service benchmark shares: independent steps completed with `claim_next` by W pooled worker runs, through a carrier; per-step cost = elapsed / steps completed. */
import { performance } from "node:perf_hooks";
import { type Client, stepsOf } from "../harness/http-client.js";
import { errorCount, mergeRuns, round, stats } from "../harness/meter.js";

/** Sizes of one run of the HTTP step scenarios (bench:http's plan; bench's `http` plan); `repeats`: runs of each scenario (fresh session each), pooled. */
export type Plan = Record<"floorMs" | "warmupMs" | "maxRequestsPerLevel" | "stepsPerWorker" | "minSteps" | "scenarioTimeoutMs" | "multiTasks" | "repeats", number>;

/** The full plan (stays well under ~5 minutes on a 2-core machine) and the quick one, a smoke check of the benchmark itself. */
export const PLANS: Record<"full" | "quick", Plan> = {
  full: { floorMs: 5_000, warmupMs: 1_000, maxRequestsPerLevel: 500_000, stepsPerWorker: 40, minSteps: 320, scenarioTimeoutMs: 120_000, multiTasks: 8, repeats: 3 },
  quick: { floorMs: 1_500, warmupMs: 300, maxRequestsPerLevel: 100_000, stepsPerWorker: 10, minSteps: 80, scenarioTimeoutMs: 60_000, multiTasks: 8, repeats: 1 },
};

/**
 * One step scenario (or its repeats pooled): step_call = the per-step call (status completed + claim_next);
 * claim_next = the first claim of each run; dispatch, finish and create_task_ms = set-up calls outside the
 * measured window; verified_completed_on_server = the server's own count; samples stay in memory (not in the JSON).
 */
export type StepResult = Awaited<ReturnType<typeof stepScenario>> & { server_reloaded?: boolean; repeats?: { steps_per_s: number; seconds: number; p50_ms: number; p99_ms: number; server_reloaded: boolean }[] };

/** A dispatched worker run of a scenario. */
export interface ScenarioRun { readonly taskPath: string; readonly token: string; readonly runId: string; readonly agentId: string }

/** Where a call left a run: the step it holds now, or none and why; and how long the call took. */
export interface StepCall { readonly ms: number; readonly stepId: string | null; readonly reason?: unknown }

/** One run's calls. Each throws on an answer it does not expect (the run stops, the error is counted). */
export interface RunDriver {
  claimNext(): Promise<StepCall>;
  /** Completes `stepId` with `claim_next: true`. */
  completeAndClaim(stepId: string): Promise<StepCall>;
}

/** How a scenario's worker runs call the service; `start`/`stop` bracket the measured window. */
export interface StepCarrier {
  /** Names the scenario's tasks and runs: `bench-<label>t0`, `bench-<label>w0`. */
  readonly label: string;
  drive(run: ScenarioRun, maxSteps: number): RunDriver;
  start?(): void;
  stop?(): void;
}

/** The step a claim answer (or a completion's `next`) holds, or none and why; throws on anything else. */
export function claimedStep(answer: { step?: { step_id?: unknown }; no_step_claimed?: unknown; reason?: unknown } | undefined): { stepId: string | null; reason?: unknown } {
  if (typeof answer?.step?.step_id === "string") return { stepId: answer.step.step_id };
  if (answer?.no_step_claimed === true) return { stepId: null, reason: answer.reason };
  throw new Error(`unexpected next: ${JSON.stringify(answer).slice(0, 200)}`);
}

/** The raw client, one request per call: the unbatched worker loop. */
export function requestCarrier(client: Client): StepCarrier {
  const call = async (what: string, path: string, token: string, body: object, next: (b: { next?: never }) => unknown): Promise<StepCall> => {
    const a = await client.call("POST", path, token, body);
    if (a.status !== 200) throw new Error(`${what} ${a.status}: ${JSON.stringify(a.body).slice(0, 200)}`);
    return { ms: a.ms, ...claimedStep(next(a.body) as Parameters<typeof claimedStep>[0]) };
  };
  return {
    label: "",
    drive: (run) => ({
      claimNext: () => call("claim-next", `${run.taskPath}/steps/claim-next`, run.token, {}, (b) => b),
      completeAndClaim: (stepId) => call("status", `${run.taskPath}/steps/${stepId}/status`, run.token, { status: "completed", result_summary: "done", claim_next: true }, (b) => b?.next),
    }),
  };
}

/**
 * One task (or several) of independent steps, `workers` concurrent loops, each claiming and completing
 * with `claim_next` through `carrier` (by default one raw request per call). With fewer workers than tasks,
 * each loop works through its runs one after the other, so the concurrency stays `workers`. Set-up, the
 * runs' finish and the server-side verification go through the raw client, outside the measured window.
 */
export async function stepScenario(client: Client, adminToken: string, workers: number, tasks: number, plan: Plan, carrier: StepCarrier = requestCarrier(client)) {
  const perTask = Math.ceil(Math.max(plan.stepsPerWorker * workers, plan.minSteps) / tasks);
  const samples = { step_call: [] as number[], claim_next: [] as number[], dispatch: [] as number[], finish: [] as number[] };
  const session = await client.session(adminToken);
  const createMs: number[] = [];
  const taskPaths: string[] = [];
  for (let t = 0; t < tasks; t++) {
    const { path, created } = await client.task(session, `bench-${carrier.label}t${t}`, { title: `Bench task ${t}`, summary: "HTTP benchmark", steps: stepsOf(perTask) });
    createMs.push(round(created.ms));
    taskPaths.push(path);
  }
  const runs: { run: ScenarioRun; driver: RunDriver }[] = [];
  for (let r = 0; r < Math.max(workers, tasks); r++) {
    const taskPath = taskPaths[r % tasks]!;
    const d = await client.must(201, "POST", `${taskPath}/workers`, session.orch, { agent_id: `bench-${carrier.label}w${r}`, max_steps: perTask });
    samples.dispatch.push(d.ms);
    const run: ScenarioRun = { taskPath, token: d.body.token, runId: d.body.run_id, agentId: d.body.agent_id };
    runs.push({ run, driver: carrier.drive(run, perTask) });
  }
  const completed = new Set<string>();
  const reasons: Record<string, number> = {};
  let duplicates = 0;
  let timedOut = false;
  const errors = errorCount();
  const noteReason = (reason: unknown) => {
    const k = String(reason ?? "no_step_claimed");
    reasons[k] = (reasons[k] ?? 0) + 1;
  };
  carrier.start?.();
  const t0 = performance.now();
  const deadline = t0 + plan.scenarioTimeoutMs;
  let lastStepAt = t0;

  const workRun = async ({ run, driver }: (typeof runs)[number]) => {
    const claim = await driver.claimNext();
    samples.claim_next.push(claim.ms);
    let current = claim.stepId;
    if (current === null) noteReason(claim.reason);
    let calls = 0;
    while (current !== null) {
      if (performance.now() > deadline) {
        timedOut = true;
        return;
      }
      if (++calls > perTask + 1) return errors.note("a run completed more steps than its task has");
      const a = await driver.completeAndClaim(current);
      samples.step_call.push(a.ms);
      lastStepAt = performance.now();
      const key = `${run.taskPath}#${current}`;
      if (completed.has(key)) duplicates++;
      completed.add(key);
      current = a.stepId;
      if (current === null) noteReason(a.reason);
    }
  };
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      for (let r = w; r < runs.length; r += workers) {
        try {
          await workRun(runs[r]!);
        } catch (e) {
          errors.note(e instanceof Error ? e.message : String(e)); // e.g. the 30 s request time-out
        }
      }
    }),
  );
  carrier.stop?.();
  const seconds = (lastStepAt - t0) / 1000;

  // Not part of the measured window: end the runs, then check the server's own count of completed steps.
  for (const { run } of runs) {
    const f = await client.call("POST", `${run.taskPath}/runs/${run.runId}/finish`, run.token, { outcome: "finished" });
    if (f.status === 200) samples.finish.push(f.ms);
    else errors.note(`finish ${f.status}: ${JSON.stringify(f.body).slice(0, 200)}`);
  }
  let verified = 0;
  for (const taskPath of taskPaths) verified += await client.completedOnServer(taskPath, session.orch);
  const completedSteps = samples.step_call.length;
  return {
    tasks, workers, runs: runs.length, steps_planned: perTask * tasks, steps_completed: completedSteps, seconds: round(seconds), steps_per_s: round(completedSteps / seconds, 1),
    step_call: stats(samples.step_call), claim_next: stats(samples.claim_next), dispatch: stats(samples.dispatch), finish: stats(samples.finish), create_task_ms: createMs,
    ...errors.fields(), duplicate_completions: duplicates, no_step_reasons: reasons, verified_completed_on_server: verified, timed_out: timedOut, samples,
  };
}

/** Repeats of one scenario as one result: steps and time summed, latencies pooled (one run stays as it is). */
export function mergeSteps<T extends StepResult>(parts: T[]): T {
  if (parts.length === 1) return parts[0]!;
  const m = mergeRuns(parts, ["tasks", "workers"]);
  const repeats = parts.map((p) => ({ steps_per_s: p.steps_per_s, seconds: p.seconds, p50_ms: p.step_call.p50_ms, p99_ms: p.step_call.p99_ms, server_reloaded: p.server_reloaded === true }));
  return { ...m, seconds: round(m.seconds), steps_per_s: round(m.steps_completed / m.seconds, 1), server_reloaded: repeats.some((r) => r.server_reloaded), repeats };
}

/** A scenario with errors, a time-out, duplicates or a server count that differs from the plan. */
export const stepProblem = (s: StepResult): boolean => s.errors > 0 || s.timed_out || s.duplicate_completions > 0 || s.verified_completed_on_server !== s.steps_planned;
