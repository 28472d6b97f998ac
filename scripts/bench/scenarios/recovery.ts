/**
 * @module bench's recovery section: WALs of many events built through the batch route, the dev server
 * stopped and started again on the same storage, then each task's first GET (object start + replay + view)
 * against a second and further warm GETs, with a task of 10 events as the control.
 */
import { performance } from "node:perf_hooks";
import { type DevServer, reloadCount, sleep, startDevServer, stopDevServer } from "../../dev-server.js";
import { Client, stepsOf } from "../harness/http-client.js";
import { type LatencyStats, round, stats } from "../harness/meter.js";
import { fmt } from "../harness/report.js";

/** A task whose WAL was built for the section. */
interface BuiltWal {
  label: string;
  events: number;
  task_path: string;
  orch: string;
  wal_seq: number;
  build_seconds: number;
  batches: number;
  events_per_s: number;
  batch_ms: LatencyStats;
}

/** A task whose WAL holds `events` events: one claimed step, then progress commands through the batch route. */
async function buildWal(client: Client, adminToken: string, label: string, events: number, perBatch: number, timeoutMs: number): Promise<BuiltWal> {
  const session = await client.session(adminToken);
  const orch = session.orch;
  // A day-long lease: no lease-expiry alarm may wake the object (and replay it) before the measured GET.
  const taskPath = (await client.task(session, `wal-${label}`, { title: `Recovery ${label}`, steps: stepsOf(1, "compact"), step_lease_timeout_ms: 86_400_000 })).path;
  const d = await client.must(201, "POST", `${taskPath}/workers`, orch, { agent_id: `wal-${label}`, max_steps: 1 });
  const token: string = d.body.token;
  const claim = await client.must(200, "POST", `${taskPath}/steps/claim-next`, token, {});
  const stepId: string = claim.body.step.step_id;
  let seq: number = claim.body.wal_seq;
  const batchMs: number[] = [];
  const t0 = performance.now();
  const deadline = t0 + timeoutMs;
  let n = 0;
  while (seq < events) {
    if (performance.now() > deadline) throw new Error(`building the ${label} WAL took over ${timeoutMs / 1000} s (at ${seq} events)`);
    const count = Math.min(perBatch, events - seq);
    const commands = Array.from({ length: count }, () => ({ token, method: "POST", path: `${taskPath}/steps/${stepId}/progress`, body: { phase: "bench", counters: { n: n++ } } }));
    const a = await client.must(200, "POST", `${taskPath}/batch`, token, { commands });
    batchMs.push(a.ms);
    const results = a.body.results as { ok: boolean; status: number; body: { wal_seq?: number } }[];
    const bad = results.find((r) => !r.ok);
    if (bad !== undefined) throw new Error(`a progress command was refused while building the ${label} WAL: ${JSON.stringify(bad).slice(0, 300)}`);
    const last = results.at(-1)?.body.wal_seq;
    if (typeof last !== "number" || last <= seq) throw new Error(`the batch answered no higher wal_seq (${String(last)} after ${seq})`);
    seq = last;
  }
  const seconds = (performance.now() - t0) / 1000;
  return { label, events, task_path: taskPath, orch, wal_seq: seq, build_seconds: round(seconds, 2), batches: batchMs.length, events_per_s: round((seq - claim.body.wal_seq) / seconds, 0), batch_ms: stats(batchMs) };
}

/** One WAL size. */
export interface RecoveryResult {
  label: string;
  wal_events: number;
  build: Omit<BuiltWal, "task_path" | "orch" | "label">;
  /** First GET after each restart: object start + WAL replay + the view (p50 over the restarts, and each). */
  cold_get_ms: number;
  cold_get_samples_ms: number[];
  /** The GET right after the first one (the object in memory), p50 over the restarts. */
  second_get_ms: number;
  /** Further warm GETs, pooled over the restarts. */
  warm_gets: LatencyStats;
  /** cold p50 − warm p50 − (control cold p50 − control warm p50): the replay of this WAL alone, approximately. */
  replay_ms_est: number;
  replay_events_per_s_est: number;
  /** The task's last wal_seq as the restarted server reports it (x-last-wal-seq). */
  verified_wal_seq: number | null;
}

/** The recovery section of bench/results.json. */
export interface RecoverySection {
  restarts: { stop_ms: number; start_ms: number }[];
  persist_dir: string | null;
  /** After each restart the Worker is warmed first (these GETs start the isolate and the health object). */
  health_object_after_restart_ms: number[][];
  control: { wal_events: number; cold_get_ms: number; cold_get_samples_ms: number[]; warm_get_ms: number };
  wals: RecoveryResult[];
}

/** The dev server a section runs against, which the recovery section replaces on each restart; reloads counted across them. */
export interface ServerSlot {
  server: DevServer | null;
  reloads: number;
}

/** What runRecovery needs of bench's plan. */
export interface RecoveryPlan {
  recoveryEvents: number[];
  recoveryBatch: number;
  recoveryWarmGets: number;
  recoveryRestarts: number;
}

/** Builds the WALs on `slot`'s server, restarts it `plan.recoveryRestarts` times on the same storage and measures each restart's GETs. */
export async function runRecovery(slot: ServerSlot, adminToken: string, logLevel: string, plan: RecoveryPlan): Promise<RecoverySection> {
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
  const restarts: RecoverySection["restarts"] = [];
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
    server = slot.server = await startDevServer({ logLevel, ...(persistDir === null ? {} : { persistDir }) });
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
  const wals: RecoveryResult[] = built.map((w, i) => {
    const sm = samples[i]!;
    const warm = stats(sm.warm);
    const replay = Math.max(0, median(sm.cold) - warm.p50_ms - controlExtra);
    return {
      label: w.label,
      wal_events: w.wal_seq,
      build: { events: w.events, wal_seq: w.wal_seq, build_seconds: w.build_seconds, batches: w.batches, events_per_s: w.events_per_s, batch_ms: w.batch_ms },
      cold_get_ms: round(median(sm.cold), 1),
      cold_get_samples_ms: sm.cold.map((x) => round(x, 1)),
      second_get_ms: round(median(sm.second), 2),
      warm_gets: warm,
      replay_ms_est: round(replay, 1),
      replay_events_per_s_est: replay > 0 ? round((w.wal_seq / replay) * 1000, 0) : NaN,
      verified_wal_seq: sm.walSeq,
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
