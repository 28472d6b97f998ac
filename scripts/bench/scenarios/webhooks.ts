/**
 * @module The webhook scenarios (`npm run bench:webhooks`): a session's subscriptions, all pointing at the bench's
 * receiver, and one task of independent steps worked by concurrent worker runs (dispatch, claim-next, then `status`
 * completed with `claim_next`); then the task is completed. Every write answer's `event_ids` is stamped with the time
 * this process read it, so each delivery the receiver verifies is matched to the answer of the call that committed
 * its event, by event id.
 */
import { performance } from "node:perf_hooks";
import { type Client, type Session, stepsOf } from "../harness/http-client.js";
import { cpuSnap, cpuUse, errorCount, groupCpuMs, round } from "../harness/meter.js";
import { errorText } from "../harness/report.js";
import { latencyOf, type Latency, median } from "../harness/rounds.js";
import { type Arrival, type GroupCounts, standardVerifier, type WebhookReceiver } from "../harness/webhook-receiver.js";
import { claimedStep } from "./steps.js";

/** The runtime events every subscription of the scenarios takes: one per completed step, one for the task. */
export const SUBSCRIBED_EVENTS = ["task.attempt.completed", "task.completed"] as const;

/** One run of the scenario: the session's subscriptions and the task's size. */
export interface HookPlan { readonly subscriptions: number; readonly steps: number; readonly workers: number; readonly timeoutMs: number; readonly stallMs: number }

/** What a write committed, by event id: when this process read the answer, and the step it completed (null for the task's completion). */
interface Commit { readonly at: number; readonly sentAt: number; readonly stepId: string | null }

/** One run: the worked task (its steps/s and calls) and what the receiver got of it. */
export type HookRun = Awaited<ReturnType<typeof hookRun>>;

/** `count` subscriptions of `s` to the receiver's paths `<group>/<i>`, each to SUBSCRIBED_EVENTS; their secrets registered with it. */
async function subscribe(client: Client, s: Session, receiver: WebhookReceiver, group: string, count: number): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < count; i++) {
    const name = `s${i}`;
    const a = await client.must(201, "POST", `/v1/sessions/${s.sid}/webhooks`, s.orch, { url: receiver.url(group, name), events: [...SUBSCRIBED_EVENTS], description: `bench subscriber ${i}` });
    receiver.register(group, name, standardVerifier(a.body.secret as string));
    ms.push(a.ms);
  }
  return ms;
}

/** The runtime event id a WAL event id leads to (a WAL event projected to several runtime events numbers the others `<id>.k`). */
const walEventOf = (eventId: string) => eventId.split(".")[0]!;

/**
 * A fresh session with `plan.subscriptions` subscriptions (group `group` of the receiver), one task of `plan.steps`
 * independent steps, `plan.workers` worker runs completing them (the measured window: the first claim's send → the
 * last step's answer), the runs finished and the task completed; then waits until every delivery owed arrived (or
 * none came for `plan.stallMs`). `serverGroup`: the dev server's process group, whose CPU is measured.
 */
export async function hookRun(client: Client, adminToken: string, receiver: WebhookReceiver, group: string, plan: HookPlan, serverGroup: number | null) {
  const s = await client.session(adminToken);
  const subscribeMs = await subscribe(client, s, receiver, group, plan.subscriptions);
  const { path: taskPath } = await client.task(s, `hooks-${group}`, { title: "Webhook bench task", steps: stepsOf(plan.steps, "compact") });
  const runs: { token: string; runId: string }[] = [];
  for (let w = 0; w < plan.workers; w++) {
    const d = await client.must(201, "POST", `${taskPath}/workers`, s.orch, { agent_id: `hooks-w${w}`, max_steps: plan.steps });
    runs.push({ token: d.body.token, runId: d.body.run_id });
  }
  const commits = new Map<string, Commit>();
  const stepCall: number[] = [];
  const completed = new Set<string>();
  let duplicateCompletions = 0;
  const errors = errorCount();
  const connections0 = receiver.connectionsAccepted;
  let maxOpen = receiver.connectionsOpen;
  const sampleOpen = setInterval(() => (maxOpen = Math.max(maxOpen, receiver.connectionsOpen)), 100);
  const cpu0 = cpuSnap(null, groupCpuMs(serverGroup)?.ms);
  const t0 = performance.now();
  const deadline = t0 + plan.timeoutMs;
  let lastStepAt = t0;
  let timedOut = false;
  /** One worker call; its answer's event ids stamped. */
  const write = async (path: string, token: string, body: object, stepId: string | null) => {
    const sentAt = performance.now();
    const a = await client.call("POST", path, token, body);
    const at = performance.now();
    if (a.status !== 200) throw new Error(`POST ${path} answered ${a.status}: ${JSON.stringify(a.body).slice(0, 200)}`);
    for (const id of (a.body.event_ids as string[] | undefined) ?? []) commits.set(id, { at, sentAt, stepId });
    return { answer: a, at };
  };
  await Promise.all(
    runs.map(async (run) => {
      try {
        const claim = await write(`${taskPath}/steps/claim-next`, run.token, {}, null);
        let current = claimedStep(claim.answer.body).stepId;
        while (current !== null) {
          if (performance.now() > deadline) return void (timedOut = true);
          const done = await write(`${taskPath}/steps/${current}/status`, run.token, { status: "completed", result_summary: "done", claim_next: true }, current);
          stepCall.push(done.answer.ms);
          lastStepAt = done.at;
          if (completed.has(current)) duplicateCompletions++;
          completed.add(current);
          current = claimedStep(done.answer.body.next).stepId;
        }
      } catch (e) {
        errors.note(errorText(e));
      }
    }),
  );
  const seconds = (lastStepAt - t0) / 1000;
  const cpuSteps = cpuUse(cpu0, cpuSnap(serverGroup));
  // Outside the measured window: end the runs, complete the task (its task.completed is delivered too).
  for (const run of runs) {
    const f = await client.call("POST", `${taskPath}/runs/${run.runId}/finish`, run.token, { outcome: "finished" });
    if (f.status !== 200) errors.note(`finish ${f.status}: ${JSON.stringify(f.body).slice(0, 200)}`);
  }
  let completeError: string | null = null;
  try {
    await write(`${taskPath}/complete`, s.orch, { reason: "bench done" }, null);
  } catch (e) {
    completeError = errorText(e);
    errors.note(completeError);
  }
  const lastCommitAt = performance.now();
  const verifiedOnServer = await client.completedOnServer(taskPath, s.orch);
  const expected = plan.subscriptions * (completed.size + (completeError === null ? 1 : 0));
  const wait = await receiver.waitFor(group, expected, plan.stallMs);
  clearInterval(sampleOpen);
  const cpuAll = cpuUse(cpu0, cpuSnap(serverGroup));
  const delivery = deliveryFigures(receiver.arrivals.filter((a) => a.group === group), commits, receiver.countsOf(group), expected, wait.stalled, lastCommitAt);
  const steps = stepCall.length;
  return {
    subscriptions: plan.subscriptions,
    steps_planned: plan.steps,
    steps_completed: steps,
    workers: plan.workers,
    seconds: round(seconds),
    steps_per_s: round(steps / seconds, 1),
    step_call: latencyOf(stepCall),
    /** The step calls' latencies, for pooling rounds (left out of the results file). */
    step_call_samples: stepCall,
    subscribe_call_p50_ms: latencyOf(subscribeMs).p50_ms,
    server_cpu_ms_per_step: {
      window: cpuSteps.server_ms === null ? null : round(cpuSteps.server_ms / Math.max(1, steps), 3),
      incl_deliveries: cpuAll.server_ms === null ? null : round(cpuAll.server_ms / Math.max(1, steps), 3),
    },
    other_share: cpuSteps.other_share,
    delivery,
    /** Connections the receiver accepted from the first claim until the last delivery, and the most open at once (sampled every 100 ms). */
    receiver_connections: { accepted: receiver.connectionsAccepted - connections0, max_open: maxOpen },
    verified_completed_on_server: verifiedOnServer,
    duplicate_completions: duplicateCompletions,
    timed_out: timedOut,
    ...errors.fields(),
  };
}

/**
 * Commit → delivery with nothing queued: one subscription, one worker completing `samples` steps one at a time, each
 * step's delivery awaited before the next step is completed.
 */
export async function unloadedLatency(client: Client, adminToken: string, receiver: WebhookReceiver, group: string, samples: number, stallMs: number) {
  const s = await client.session(adminToken);
  await subscribe(client, s, receiver, group, 1);
  const { path: taskPath } = await client.task(s, `hooks-${group}`, { title: "Webhook bench task, one step at a time", steps: stepsOf(samples, "compact") });
  const run = (await client.must(201, "POST", `${taskPath}/workers`, s.orch, { agent_id: "hooks-unloaded", max_steps: samples })).body;
  const afterAnswer: number[] = [];
  const afterSend: number[] = [];
  const errors = errorCount();
  let current = claimedStep((await client.must(200, "POST", `${taskPath}/steps/claim-next`, run.token, {})).body).stepId;
  while (current !== null) {
    const sentAt = performance.now();
    const a = await client.must(200, "POST", `${taskPath}/steps/${current}/status`, run.token, { status: "completed", result_summary: "done", claim_next: true });
    const at = performance.now();
    const eventIds = new Set(a.body.event_ids as string[]);
    const wait = await receiver.waitFor(group, afterAnswer.length + errors.count + 1, stallMs);
    const arrival = receiver.arrivals.filter((x) => x.group === group).at(-1);
    if (wait.stalled || arrival === undefined || !eventIds.has(walEventOf(arrival.eventId))) errors.note(`no delivery of ${current}'s completion within ${stallMs} ms`);
    else {
      afterAnswer.push(arrival.at - at);
      afterSend.push(arrival.at - sentAt);
    }
    current = claimedStep(a.body.next).stepId;
  }
  return { samples, after_answer_ms: latencyOf(afterAnswer), after_send_ms: latencyOf(afterSend), ...errors.fields() };
}

/** What the receiver got of one run: counts against what was owed, and commit → delivery latency. */
function deliveryFigures(arrivals: Arrival[], commits: ReadonlyMap<string, Commit>, counts: GroupCounts, expected: number, stalled: boolean, lastCommitAt: number) {
  const afterAnswer: number[] = [];
  const afterSend: number[] = [];
  const byType: Record<string, number[]> = {};
  let unmatched = 0;
  let wrongStep = 0;
  let last = -Infinity;
  for (const a of arrivals) {
    last = Math.max(last, a.at);
    const commit = commits.get(walEventOf(a.eventId));
    if (commit === undefined) {
      unmatched++;
      continue;
    }
    if (a.type === "task.attempt.completed" && a.stepId !== commit.stepId) wrongStep++;
    afterAnswer.push(a.at - commit.at);
    afterSend.push(a.at - commit.sentAt);
    (byType[a.type] ??= []).push(a.at - commit.at);
  }
  const first = Math.min(...[...commits.values()].map((c) => c.at));
  const drainSeconds = arrivals.length === 0 ? null : (last - first) / 1000;
  return {
    expected,
    ...counts,
    missing: Math.max(0, expected - counts.received),
    stalled,
    unmatched,
    wrong_step: wrongStep,
    after_answer_ms: latencyOf(afterAnswer) as Latency,
    after_send_ms: latencyOf(afterSend) as Latency,
    after_answer_by_type_ms: Object.fromEntries(Object.entries(byType).map(([t, xs]) => [t, latencyOf(xs)])),
    /** The last delivery's arrival − the last commit's answer (the task's completion). */
    tail_ms: arrivals.length === 0 ? null : round(last - lastCommitAt, 1),
    /** Deliveries received ÷ (the last arrival − the first answer read). */
    deliveries_per_s: drainSeconds === null ? null : round(counts.received / drainSeconds, 1),
  };
}

/** A run with errors, a time-out, duplicate completions, a server count short of the plan, or deliveries missing, duplicated, rejected or unmatched. */
export const runProblem = (r: HookRun): boolean =>
  r.errors > 0 || r.timed_out || r.duplicate_completions > 0 || r.verified_completed_on_server !== r.steps_planned || r.delivery.missing > 0 || r.delivery.duplicate_webhook_ids > 0 || r.delivery.duplicate_events > 0 || r.delivery.rejected > 0 || r.delivery.unmatched > 0 || r.delivery.wrong_step > 0;

/** The cost rounds pooled per subscription count (steps and seconds summed, step calls pooled) and their ratios to the rounds without subscriptions. */
export function pooledCost(cost: ReadonlyMap<number, readonly HookRun[]>) {
  const pooled = [...cost].filter(([, rs]) => rs.length > 0).map(([v, rs]) => {
    const stepsDone = rs.reduce((a, x) => a + x.steps_completed, 0);
    const seconds = rs.reduce((a, x) => a + x.seconds, 0);
    const cpu = (f: (x: HookRun) => number | null) => (rs.some((x) => f(x) === null) ? null : round(median(rs.map((x) => f(x)!)), 3));
    return {
      subscriptions: v,
      rounds: rs.length,
      steps: stepsDone,
      seconds: round(seconds),
      steps_per_s: round(stepsDone / seconds, 1),
      steps_per_s_each: rs.map((x) => x.steps_per_s),
      step_call: latencyOf(rs.flatMap((x) => x.step_call_samples)),
      server_cpu_ms_per_step_median: { window: cpu((x) => x.server_cpu_ms_per_step.window), incl_deliveries: cpu((x) => x.server_cpu_ms_per_step.incl_deliveries) },
      deliveries: { expected: rs.reduce((a, x) => a + x.delivery.expected, 0), received: rs.reduce((a, x) => a + x.delivery.received, 0) },
      tail_ms_each: rs.map((x) => x.delivery.tail_ms),
      errors: rs.reduce((a, x) => a + x.errors, 0),
    };
  });
  const none = pooled.find((p) => p.subscriptions === 0);
  const noneRounds = cost.get(0) ?? [];
  const ratios = none === undefined ? [] : pooled.filter((p) => p.subscriptions > 0).map((p) => ({
    subscriptions: p.subscriptions,
    steps_per_s_vs_none: round(p.steps_per_s / none.steps_per_s, 3),
    // Round by round: each round's variants ran back to back.
    steps_per_s_vs_none_each_round: cost.get(p.subscriptions)!.flatMap((x, i) => (noneRounds[i] === undefined ? [] : [round(x.steps_per_s / noneRounds[i]!.steps_per_s, 3)])),
    step_p50_vs_none: round(p.step_call.p50_ms / none.step_call.p50_ms, 3),
    step_p99_vs_none: round(p.step_call.p99_ms / none.step_call.p99_ms, 3),
  }));
  return { pooled, ratios };
}

/** The pooled cost rounds of one subscription count. */
export type PooledCost = ReturnType<typeof pooledCost>["pooled"][number];
/** The ratio of one subscription count's pooled rounds to those without subscriptions. */
export type CostRatio = ReturnType<typeof pooledCost>["ratios"][number];
