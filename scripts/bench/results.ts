/** @module What bench (all sections in one run) derives and prints from its sections: the ratios against the floor and BullMQ, the goals, the tables and the warnings. */
import { fmt, pct, type Table } from "./harness/report.js";
import type { Measured } from "./scenarios/group-commit.js";
import type { GrowthResult } from "./scenarios/growth.js";
import type { RecoverySection } from "./scenarios/recovery.js";
import { type BullmqResults, bullmqTables, problems as bullmqProblems } from "./scenarios/bullmq.js";
import type { StepsSection } from "./scenarios/steps-section.js";
import { stepProblem } from "./scenarios/steps.js";
import { round } from "./harness/meter.js";

/**
 * One row of bench/results.json's ratios, one concurrency and task count: `*_cost_vs_floor` = floor req/s ÷
 * steps/s, the per-step cost in floor round trips (goal for unbatched: ≤ UNBATCHED_COST_GOAL); `*_vs_bullmq` = our steps/s ÷
 * BullMQ's jobs/s (the better of its two worker models at the same workers and queues); socket = the same
 * group commits as frames over the command socket; batched_vs_unbatched = throughputs' and p50 latencies' ratios.
 */
export type Ratios = ReturnType<typeof computeRatios>[number];

function bullmqFor(b: BullmqResults | null, workers: number, queues: number): { concurrency: number | null; workers: number | null; best: number | null } {
  if (b === null) return { concurrency: null, workers: null, best: null };
  // A layout both models share was run once, under "concurrency".
  const conc = b.steps.find((s) => s.workers === workers && s.queues === queues && s.model === "concurrency")?.jobs_per_s ?? null;
  const wk = b.steps.find((s) => s.workers === workers && s.queues === queues && s.model === "workers")?.jobs_per_s ?? conc;
  const best = conc === null && wk === null ? null : Math.max(conc ?? 0, wk ?? 0);
  return { concurrency: conc, workers: wk, best };
}

/** The ratios of every concurrency and task count (1 and `multiTasks`). */
export function computeRatios(steps: StepsSection, bullmq: BullmqResults | null, concurrencies: number[], multiTasks: number) {
  return concurrencies.flatMap((c) => {
    const f = steps.floor.find((x) => x.concurrency === c)!;
    return [1, multiTasks].map((tasks) => {
      const [u, b, k] = [steps.unbatched, steps.batched, steps.socket].map((list) => list.find((s) => s.workers === c && s.tasks === tasks)!) as [Measured, Measured, Measured];
      const peer = bullmqFor(bullmq, c, tasks);
      const vsPeer = (x: Measured) => (peer.best === null ? null : round(x.steps_per_s / peer.best, 3));
      return {
        workers: c, tasks, floor_rps: f.rps, unbatched_steps_per_s: u.steps_per_s, batched_steps_per_s: b.steps_per_s, bullmq_jobs_per_s: peer,
        unbatched_cost_vs_floor: round(f.rps / u.steps_per_s, 2), batched_cost_vs_floor: round(f.rps / b.steps_per_s, 2), unbatched_vs_bullmq: vsPeer(u), batched_vs_bullmq: vsPeer(b),
        socket_steps_per_s: k.steps_per_s, socket_cost_vs_floor: round(f.rps / k.steps_per_s, 2), socket_vs_bullmq: vsPeer(k), socket_vs_batched_throughput: round(k.steps_per_s / b.steps_per_s, 2),
        batched_vs_unbatched_throughput: round(b.steps_per_s / u.steps_per_s, 2), batched_vs_unbatched_p50: round(b.step_call.p50_ms / u.step_call.p50_ms, 2),
      };
    });
  });
}

/** The main table: per concurrency and task count, the floor, each carrier, BullMQ and the ratios. */
function mainTable(steps: StepsSection, ratios: Ratios[]): Omit<Table, "title"> {
  const headers = ["workers", "tasks", "floor req/s", "floor p50/p99 ms", "unbatched steps/s", "p50/p99 ms", "cost÷floor", "batched steps/s", "p50/p99 ms", "cmds/req", "batched÷unbatched", "socket steps/s", "p50/p99 ms", "cmds/frame", "BullMQ jobs/s (1×W / W×1)", "unbatched÷BullMQ", "batched÷BullMQ", "socket÷BullMQ"];
  const times = (x: number | null, digits = 2) => (x === null ? "-" : `${fmt(x, digits)}×`);
  const rows = ratios.map((r) => {
    const f = steps.floor.find((x) => x.concurrency === r.workers)!;
    const [u, b, k] = [steps.unbatched, steps.batched, steps.socket].map((list) => list.find((s) => s.workers === r.workers && s.tasks === r.tasks)!) as [Measured, Measured, Measured];
    const peer = r.bullmq_jobs_per_s.best === null ? "-" : `${fmt(r.bullmq_jobs_per_s.concurrency, 0)} / ${fmt(r.bullmq_jobs_per_s.workers, 0)}`;
    const cmds = (m: Measured) => fmt(m.batching?.commands_per_request.mean, 1);
    return [String(r.workers), String(r.tasks), fmt(f.rps, 0), pct(f.latency), fmt(u.steps_per_s, 0), pct(u.step_call), times(r.unbatched_cost_vs_floor), fmt(b.steps_per_s, 0), pct(b.step_call), cmds(b), times(r.batched_vs_unbatched_throughput), fmt(k.steps_per_s, 0), pct(k.step_call), cmds(k), peer, times(r.unbatched_vs_bullmq, 3), times(r.batched_vs_bullmq), times(r.socket_vs_bullmq)];
  });
  return { headers, rows };
}

/** Everything bench measured, as its results file holds it. */
export interface Sections { steps: StepsSection | null; growth: GrowthResult[] | null; recovery: RecoverySection | null; bullmq: BullmqResults | null }

/**
 * The goal for an unbatched step's cost in floor round trips, at every concurrency and task count. Unlike the other
 * goals it is checked: a run above it fails `npm run bench` (`driftAlarms`), so a heavier per-call path shows.
 */
export const UNBATCHED_COST_GOAL = 1.25;

/** The rows whose unbatched step ÷ floor is above UNBATCHED_COST_GOAL, as loud lines (none: the run is within it). */
export function driftAlarms(rows: { workers: number; tasks: number; cost_vs_floor: number }[]): string[] {
  return rows
    .filter((r) => !(r.cost_vs_floor <= UNBATCHED_COST_GOAL))
    .map((r) => `DRIFT: unbatched step at ${r.workers} worker(s), ${r.tasks} task(s) costs ${fmt(r.cost_vs_floor, 2)}× the floor, above the goal of ${UNBATCHED_COST_GOAL}× (docs/benchmarks.md, "The per-call path, profiled")`);
}

/** Prints drift alarms (if any) on stderr between rows of "!", where nobody scrolling past a run can miss them. */
export function printDriftAlarms(alarms: string[]): void {
  if (alarms.length > 0) console.error(`\n${"!".repeat(100)}\n${alarms.join("\n")}\n${"!".repeat(100)}`);
}

/** The goals of the per-step cost; the unbatched one is also checked (driftAlarms), the others only stated. */
export function goalsOf(ratios: Ratios[], concurrencies: number[], multiTasks: number) {
  const at32 = (tasks: number) => ratios.find((r) => r.workers === Math.max(...concurrencies) && r.tasks === tasks);
  return {
    unbatched_cost_within_goal: ratios.map((r) => ({ workers: r.workers, tasks: r.tasks, cost_vs_floor: r.unbatched_cost_vs_floor, goal: UNBATCHED_COST_GOAL, met: r.unbatched_cost_vs_floor <= UNBATCHED_COST_GOAL })),
    batched_at_32_at_least_bullmq: [1, multiTasks].map((tasks) => {
      const r = at32(tasks);
      // Either carrier of the group commit counts: batch requests or socket frames.
      const best = r === undefined ? null : Math.max(r.batched_steps_per_s, r.socket_steps_per_s);
      const ratio = r === undefined || best === null || r.bullmq_jobs_per_s.best === null ? null : round(best / r.bullmq_jobs_per_s.best, 3);
      return { tasks, batched_steps_per_s: r?.batched_steps_per_s ?? null, socket_steps_per_s: r?.socket_steps_per_s ?? null, bullmq_best_jobs_per_s: r?.bullmq_jobs_per_s.best ?? null, ratio, met: ratio === null ? null : ratio >= 1 };
    }),
  };
}

/** The tables of the report: the main one, where the batched time goes, the batch anatomy, growth, recovery and BullMQ. */
export function tablesOf({ steps, growth, recovery, bullmq }: Sections, ratios: Ratios[]): Table[] {
  const tables: Table[] = [];
  if (steps !== null) {
    const t = mainTable(steps, ratios);
    tables.push({ title: "per-step cost: complete a step with claim_next (steps/s, call latency); floor = GET /health/object at the same concurrency; BullMQ = jobs/s at the same workers on 1 or 8 queues (one Worker of concurrency W / W Workers)", ...t });
    tables.push({
      title: "where the batched time goes (pooled over repeats; request = one HTTP round trip or socket frame; in client = step call p50 − request p50; CPU ms per step of this process and of the dev server's process group)",
      headers: ["carrier", "workers", "tasks", "requests/frames", "cmds/req mean/max", "request p50 ms", "step call p50 ms", "in client p50 ms", "CPU ms/step client/server", "unbatched CPU ms/step client/server (incl. set-up)", "errors"],
      rows: [...steps.batched, ...steps.socket].map((b) => {
        const u = steps!.unbatched.find((x) => x.workers === b.workers && x.tasks === b.tasks)!;
        const bt = b.batching;
        const cpu = (m: Measured) => `${fmt(m.cpu_per_step.client_ms, 3)}/${fmt(m.cpu_per_step.server_ms, 3)}`;
        const rtt = b.carrier === "socket" ? bt?.batch_rtt.p50_ms : bt?.http_rtt.p50_ms;
        return [b.carrier, String(b.workers), String(b.tasks), String(bt?.requests ?? "-"), `${fmt(bt?.commands_per_request.mean, 1)}/${bt?.commands_per_request.max ?? "-"}`, fmt(rtt, 2), fmt(b.step_call.p50_ms, 2), fmt(bt?.client_share_p50_ms, 2), cpu(b), cpu(u), String(b.errors + u.errors)];
      }),
    });
  }
  if (steps?.anatomy != null) {
    const a = steps.anatomy;
    const d = a.derived;
    tables.push({
      title: `batch anatomy (one task per shape, one request in flight, p50 after warm-up): fixed ≈ ${fmt(d.per_request_ms, 2)} ms per request; per command ≈ ${fmt(d.per_progress_command_ms, 3)} ms for progress, ≈ ${fmt(d.per_complete_command_ms, 3)} ms for complete + claim_next (${fmt(d.per_complete_command_no_key_ms, 3)} ms without Idempotency-Key)`,
      headers: ["commands", "kind", "Idempotency-Key", "tokens", "request p50/p99 ms", "ms per command"],
      rows: a.shapes.map((x) => [String(x.commands), x.kind, x.idempotency_keys ? "yes" : "no", String(x.tokens), pct(x.request), fmt(x.request.p50_ms / x.commands, 3)]),
    });
  }
  if (growth !== null) {
    tables.push({
      title: "growth (one worker, unbatched; per-step cost = step call latency; the first steps of each DAG)",
      headers: ["DAG steps", "steps measured", "steps/s", "step p50/p99 ms", "claim-next p50 ms", "create task ms", "create body KiB", "view GET ms", "view KiB", "errors"],
      rows: growth.map((g) => [String(g.dag_steps), `${g.steps_measured} (${g.tasks} task${g.tasks === 1 ? "" : "s"})`, fmt(g.steps_per_s, 0), pct(g.step_call), fmt(g.claim_next.p50_ms, 2), fmt(g.create_task_ms.p50_ms, 1), fmt(g.create_body_bytes / 1024, 0), fmt(g.view_get.p50_ms, 1), fmt(g.view_bytes / 1024, 0), String(g.errors)]),
    });
  }
  if (recovery !== null) {
    const rs = recovery.restarts;
    tables.push({
      title: `recovery (${rs.length} restart(s) of the dev server on the same storage: stop ${rs.map((r) => r.stop_ms).join("/")} ms, start ${rs.map((r) => (r.start_ms / 1000).toFixed(1)).join("/")} s; first GET = p50 over the restarts; control task of ${recovery.control.wal_events} events: first GET ${fmt(recovery.control.cold_get_ms, 1)} ms, second ${fmt(recovery.control.warm_get_ms, 1)} ms; replay ≈ first − warm − the control's difference)`,
      headers: ["WAL events", "build s", "batches of 256", "first GET ms (cold)", "each restart ms", "second GET ms", "warm p50 ms", "replay ≈ ms", "≈ events/s", "wal_seq after restart"],
      rows: recovery.wals.map((w) => [String(w.wal_events), fmt(w.build.build_seconds, 1), String(w.build.batches), fmt(w.cold_get_ms, 1), w.cold_get_samples_ms.map((x) => fmt(x, 0)).join("/"), fmt(w.second_get_ms, 1), fmt(w.warm_gets.p50_ms, 1), fmt(w.replay_ms_est, 0), fmt(w.replay_events_per_s_est, 0), String(w.verified_wal_seq ?? "?")]),
    });
  }
  if (bullmq !== null) tables.push(...bullmqTables(bullmq));
  return tables;
}

/** Prints the goals of this run (the ratios are in the first table). */
export function printGoals(goals: ReturnType<typeof goalsOf>, maxWorkers: number): void {
  const missed = goals.unbatched_cost_within_goal.filter((g) => !g.met);
  console.log(`\ngoals:\n  unbatched per-step cost within ${UNBATCHED_COST_GOAL}× the floor (checked: a miss fails the run): ${missed.length === 0 ? "met everywhere" : `missed at ${missed.map((g) => `${g.workers}w/${g.tasks}t (${fmt(g.cost_vs_floor, 2)}×)`).join(", ")}`}`);
  for (const g of goals.batched_at_32_at_least_bullmq) console.log(`  batched steps/s at ${maxWorkers} workers, ${g.tasks} task(s) ≥ BullMQ's best model: ${fmt(g.batched_steps_per_s, 0)} (requests) / ${fmt(g.socket_steps_per_s, 0)} (socket) vs ${fmt(g.bullmq_best_jobs_per_s, 0)} jobs/s → ${g.met === null ? "not measured" : g.met ? "met" : `missed (${fmt(g.ratio, 2)}×)`}`);
}

/** What went wrong or may skew the figures: scenarios with errors, failed sections, reloads of the dev server. */
export function warningsOf({ steps, growth, recovery, bullmq }: Sections, sectionErrors: Record<string, string>, reloads: number): string[] {
  const warnings: string[] = [];
  for (const s of [...(steps?.unbatched ?? []), ...(steps?.batched ?? []), ...(steps?.socket ?? [])].filter(stepProblem)) {
    warnings.push(`${s.carrier} ${s.workers} workers ${s.tasks} task(s): errors ${s.errors}, timed out ${s.timed_out}, dups ${s.duplicate_completions}, server completed ${s.verified_completed_on_server}/${s.steps_planned}`);
  }
  for (const g of growth ?? []) if (g.errors > 0) warnings.push(`growth ${g.dag_steps}: ${g.first_error}`);
  for (const w of recovery?.wals ?? []) if (w.verified_wal_seq !== w.wal_events) warnings.push(`recovery ${w.label}: the restarted server reports wal_seq ${w.verified_wal_seq}, built ${w.wal_events}`);
  if (bullmq !== null) warnings.push(...bullmqProblems(bullmq).map((p) => `bullmq ${p}`));
  for (const [k, v] of Object.entries(sectionErrors)) warnings.push(`section ${k} failed: ${v}`);
  if (reloads > 0) warnings.push(`the dev server reloaded ${reloads} time(s) during the run (a source file changed): the figures may be skewed`);
  return warnings;
}
