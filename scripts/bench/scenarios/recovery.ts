/** @module bench's recovery section: WALs of many events built through the batch route, the dev server stopped and started again on the same storage, then each task's first GET (object start + replay + view) against a second and further warm GETs, with a task of 10 events as the control. */
import { performance } from "node:perf_hooks";
import { type DevServer, reloadCount, sleep, startDevServer, stopDevServer } from "../../dev-server.js";
import { Client, stepsOf } from "../harness/http-client.js";
import { round, stats } from "../harness/meter.js";
import { fmt } from "../harness/report.js";

/** The claimed step progress commands go to: its task, its worker's token, its id. */
export interface ProgressTarget {
  readonly path: string;
  readonly token: string;
  readonly stepId: string;
}

/**
 * Progress commands (`{phase, counters: {n}}`, `counter.n` counting on) through the batch route, `perBatch` a request,
 * from the task's wal_seq `fromSeq` until its WAL holds `events` events: the last wal_seq and each request's ms.
 */
export async function progressUntil(client: Client, target: ProgressTarget, fromSeq: number, events: number, perBatch: number, counter: { n: number }, phase: string, deadline = Number.POSITIVE_INFINITY): Promise<{ seq: number; batchMs: number[] }> {
  const batchMs: number[] = [];
  let seq = fromSeq;
  while (seq < events) {
    if (performance.now() > deadline) throw new Error(`building a WAL of ${events} events took too long (at ${seq} events)`);
    const count = Math.min(perBatch, events - seq);
    const commands = Array.from({ length: count }, () => ({ token: target.token, method: "POST", path: `${target.path}/steps/${target.stepId}/progress`, body: { phase, counters: { n: counter.n++ } } }));
    const a = await client.must(200, "POST", `${target.path}/batch`, target.token, { commands });
    batchMs.push(a.ms);
    const results = a.body.results as { ok: boolean; status: number; body: { wal_seq?: number } }[];
    const bad = results.find((r) => !r.ok);
    if (bad !== undefined) throw new Error(`a progress command was refused at wal_seq ${seq}: ${JSON.stringify(bad).slice(0, 300)}`);
    const last = results.at(-1)?.body.wal_seq;
    if (typeof last !== "number" || last <= seq) throw new Error(`the batch answered no higher wal_seq (${String(last)} after ${seq})`);
    seq = last;
  }
  return { seq, batchMs };
}

/** A task whose WAL was built for the section. */
type BuiltWal = Awaited<ReturnType<typeof buildWal>>;

/** A task whose WAL holds `events` events: one claimed step, then progress commands through the batch route. */
async function buildWal(client: Client, adminToken: string, label: string, events: number, perBatch: number, timeoutMs: number) {
  const session = await client.session(adminToken);
  const orch = session.orch;
  // A day-long lease: no lease-expiry alarm may wake the object (and replay it) before the measured GET.
  const taskPath = (await client.task(session, `wal-${label}`, { title: `Recovery ${label}`, steps: stepsOf(1, "compact"), step_lease_timeout_ms: 86_400_000 })).path;
  const d = await client.must(201, "POST", `${taskPath}/workers`, orch, { agent_id: `wal-${label}`, max_steps: 1 });
  const token: string = d.body.token;
  const claim = await client.must(200, "POST", `${taskPath}/steps/claim-next`, token, {});
  const stepId: string = claim.body.step.step_id;
  const t0 = performance.now();
  const { seq, batchMs } = await progressUntil(client, { path: taskPath, token, stepId }, claim.body.wal_seq, events, perBatch, { n: 0 }, "bench", t0 + timeoutMs);
  const seconds = (performance.now() - t0) / 1000;
  return { label, events, task_path: taskPath, orch, wal_seq: seq, build_seconds: round(seconds, 2), batches: batchMs.length, events_per_s: round((seq - claim.body.wal_seq) / seconds, 0), batch_ms: stats(batchMs) };
}

/**
 * The recovery section of bench/results.json. Per WAL: cold_get_ms = the first GET after each restart (object
 * start + WAL replay + the view; p50 over the restarts, and each); second_get_ms = the GET right after it (the
 * object in memory); warm_gets = further GETs, pooled; replay_ms_est = cold p50 − warm p50 − (the control's
 * cold − warm): this WAL's replay alone, approximately; verified_wal_seq = the task's last wal_seq as the
 * restarted server reports it (x-last-wal-seq). health_object_after_restart_ms: the GETs that warm the isolate first.
 */
export type RecoverySection = Awaited<ReturnType<typeof runRecovery>>;

/** The dev server a section runs against, which the recovery section replaces on each restart; reloads counted across them. */
export interface ServerSlot { server: DevServer | null; reloads: number }

/** What runRecovery needs of bench's plan. */
export type RecoveryPlan = { recoveryEvents: number[] } & Record<"recoveryBatch" | "recoveryWarmGets" | "recoveryRestarts", number>;

/** Builds the WALs on `slot`'s server, restarts it `plan.recoveryRestarts` times on the same storage and measures each restart's GETs. */
export async function runRecovery(slot: ServerSlot, adminToken: string, plan: RecoveryPlan) {
  let server = slot.server!;
  const client = new Client(server.base);
  // The control: a task with a handful of events (object start without much to replay).
  const control = await buildWal(client, adminToken, "control", 10, plan.recoveryBatch, 60_000);
  const built: BuiltWal[] = [];
  for (const events of plan.recoveryEvents) {
    const w = await buildWal(client, adminToken, `e${events}`, events, plan.recoveryBatch, 180_000);
    built.push(w);
    console.log(`  built a ${w.wal_seq}-event WAL in ${fmt(w.build_seconds, 1)} s (${w.batches} batch requests, ${fmt(w.events_per_s, 0)} events/s, batch p50 ${fmt(w.batch_ms.p50_ms, 1)} ms)`);
  }
  const persistDir = server.persistDir;
  const median = (xs: number[]) => stats(xs).p50_ms;
  const restarts: { stop_ms: number; start_ms: number }[] = [];
  const health: number[][] = [];
  const controlCold: number[] = [];
  const controlWarm: number[] = [];
  const samples = built.map(() => ({ cold: [] as number[], second: [] as number[], warm: [] as number[], walSeq: null as number | null }));
  // A task object's push to its session index is due (by its alarm) 200 ms after its last write; an alarm
  // still due at the stop would start the object, and replay its WAL, by itself after the restart, before
  // the GET that is meant to measure that. Let the pushes happen first.
  await sleep(1_000);
  for (let r = 0; r < plan.recoveryRestarts; r++) {
    slot.reloads += reloadCount(server);
    const ts = performance.now();
    await stopDevServer(server, { keepPersistDir: true });
    const stopMs = performance.now() - ts;
    slot.server = null;
    server = slot.server = await startDevServer(persistDir === null ? {} : { persistDir });
    restarts.push({ stop_ms: round(stopMs, 0), start_ms: server.startupMs });
    console.log(`  restart ${r + 1}/${plan.recoveryRestarts}: stopped in ${fmt(stopMs, 0)} ms, up again on the same storage (${persistDir}) at ${server.base} after ${(server.startupMs / 1000).toFixed(1)} s`);
    const c2 = new Client(server.base);
    // Start the isolate and the health object first, so the task GETs below hold only the task object's start.
    const h: number[] = [];
    for (let i = 0; i < 3; i++) h.push(round((await c2.must(200, "GET", "/health/object")).ms, 2));
    health.push(h);
    controlCold.push((await c2.must(200, "GET", control.task_path, control.orch)).ms);
    controlWarm.push((await c2.must(200, "GET", control.task_path, control.orch)).ms);
    for (const [i, w] of built.entries()) {
      const sm = samples[i]!;
      sm.cold.push((await c2.must(200, "GET", w.task_path, w.orch)).ms);
      sm.second.push((await c2.must(200, "GET", w.task_path, w.orch)).ms);
      for (let g = 0; g < plan.recoveryWarmGets; g++) sm.warm.push((await c2.must(200, "GET", w.task_path, w.orch)).ms);
      const tail = await fetch(`${server.base}${w.task_path}/wal?after_seq=${Math.max(0, w.wal_seq - 1)}&limit=1`, { headers: { authorization: `Bearer ${w.orch}` }, signal: AbortSignal.timeout(30_000) });
      await tail.arrayBuffer();
      const header = Number(tail.headers.get("x-last-wal-seq"));
      sm.walSeq = tail.status === 200 && Number.isFinite(header) ? header : null;
      console.log(`    ${String(w.wal_seq).padStart(6)}-event WAL: first GET ${fmt(sm.cold.at(-1), 1)} ms, second ${fmt(sm.second.at(-1), 1)} ms, warm p50 ${fmt(median(sm.warm.slice(-plan.recoveryWarmGets)), 1)} ms; last wal_seq ${sm.walSeq ?? "?"} (control: first ${fmt(controlCold.at(-1), 1)} ms, second ${fmt(controlWarm.at(-1), 1)} ms)`);
    }
  }
  const controlExtra = Math.max(0, median(controlCold) - median(controlWarm));
  const wals = built.map((w, i) => {
    const sm = samples[i]!;
    const warm = stats(sm.warm);
    const replay = Math.max(0, median(sm.cold) - warm.p50_ms - controlExtra);
    const { label, events, wal_seq, build_seconds, batches, events_per_s, batch_ms } = w;
    return {
      label, wal_events: wal_seq, build: { events, wal_seq, build_seconds, batches, events_per_s, batch_ms }, cold_get_ms: round(median(sm.cold), 1), cold_get_samples_ms: sm.cold.map((x) => round(x, 1)),
      second_get_ms: round(median(sm.second), 2), warm_gets: warm, replay_ms_est: round(replay, 1), replay_events_per_s_est: replay > 0 ? round((wal_seq / replay) * 1000, 0) : NaN, verified_wal_seq: sm.walSeq,
    };
  });
  return {
    restarts,
    persist_dir: persistDir,
    health_object_after_restart_ms: health,
    control: { wal_events: control.wal_seq, cold_get_ms: round(median(controlCold), 1), cold_get_samples_ms: controlCold.map((x) => round(x, 1)), warm_get_ms: round(median(controlWarm), 2) },
    wals,
  };
}
