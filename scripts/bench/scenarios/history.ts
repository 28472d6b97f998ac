/**
 * @module The history scenario: one task whose WAL grows to N events of `task.progress` (256 progress commands per
 * batch request, on one claimed step with a day-long lease), with steady complete + claim_next steps of a second
 * worker measured at the start and after every quarter of the history; then the dev server restarted on the same
 * storage and the first GET of the task (against a task of a handful of events), and the whole WAL exported in
 * one streamed request (`?limit=all`) while workerd's RSS is sampled.
 */
import { performance } from "node:perf_hooks";
import { startDevServer, stopDevServer } from "../../dev-server.js";
import { Client, stepsOf } from "../harness/http-client.js";
import { round, rssMiB, stats, workerdPids } from "../harness/meter.js";
import { fmt } from "../harness/report.js";
import { progressUntil, type ServerSlot } from "./recovery.js";

/** What runHistory needs. */
export interface HistoryPlan {
  /** WAL events the history task reaches. */
  readonly events: number;
  /** complete + claim_next steps timed at each checkpoint. */
  readonly steps: number;
  /** Progress commands per batch request. */
  readonly perBatch: number;
}

/** The history task: its path, the progress worker (token, step) and the stepping worker (token, current step). */
async function setUp(client: Client, adminToken: string, label: string, steps: number) {
  const session = await client.session(adminToken);
  // A day-long lease: no lease expiry wakes the object while the history is built or the server is down.
  const path = (await client.task(session, label, { title: `History ${label}`, steps: stepsOf(steps, "compact"), step_lease_timeout_ms: 86_400_000 })).path;
  const p = await client.must(201, "POST", `${path}/workers`, session.orch, { agent_id: `${label}-progress`, max_steps: 1 });
  const progressToken: string = p.body.token;
  const claimed = await client.must(200, "POST", `${path}/steps/claim-next`, progressToken, {});
  const s = await client.must(201, "POST", `${path}/workers`, session.orch, { agent_id: `${label}-stepper`, max_steps: steps });
  const stepper = { token: s.body.token as string, current: null as string | null };
  return { orch: session.orch, path, progressToken, progressStep: claimed.body.step.step_id as string, walSeq: claimed.body.wal_seq as number, stepper, n: 0 };
}
type HistoryTask = Awaited<ReturnType<typeof setUp>>;

/** Progress commands through the batch route until the task's WAL holds `events` events; the build rate. */
async function growTo(client: Client, t: HistoryTask, events: number, perBatch: number) {
  const t0 = performance.now();
  const from = t.walSeq;
  const counter = { n: t.n };
  const { seq, batchMs } = await progressUntil(client, { path: t.path, token: t.progressToken, stepId: t.progressStep }, t.walSeq, events, perBatch, counter, "history");
  t.walSeq = seq;
  t.n = counter.n;
  const seconds = (performance.now() - t0) / 1000;
  return { to_wal_seq: t.walSeq, build_seconds: round(seconds, 1), batches: batchMs.length, events_per_s: seconds > 0 ? round((t.walSeq - from) / seconds, 0) : null, batch_ms: stats(batchMs) };
}

/** `steps` complete + claim_next calls of the stepping worker, one after another: steps/s and their latency. */
async function stepAlong(client: Client, t: HistoryTask, steps: number) {
  if (t.stepper.current === null) t.stepper.current = (await client.must(200, "POST", `${t.path}/steps/claim-next`, t.stepper.token, {})).body.step?.step_id ?? null;
  const ms: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < steps; i++) {
    if (t.stepper.current === null) throw new Error("the history task ran out of steps to claim");
    const a = await client.must(200, "POST", `${t.path}/steps/${t.stepper.current}/status`, t.stepper.token, { status: "completed", result_summary: "done", claim_next: true });
    ms.push(a.ms);
    t.stepper.current = a.body.next?.step?.step_id ?? null;
    t.walSeq = Math.max(t.walSeq, a.body.wal_seq as number);
  }
  const seconds = (performance.now() - t0) / 1000;
  return { at_wal_seq: t.walSeq, steps, steps_per_s: round(steps / seconds, 1), step_ms: stats(ms) };
}

/** GET .../wal?limit=all read to the end: duration, bytes, lines, the last wal_seq, and workerd's RSS every 10 ms meanwhile. */
async function exportWal(base: string, pgid: number, t: { path: string; orch: string }) {
  const rss: number[] = [];
  const sample = () => {
    const mib = rssMiB(workerdPids(pgid));
    if (mib !== null) rss.push(mib);
  };
  sample();
  const rssBefore = rss[0] ?? null;
  const timer = setInterval(sample, 10);
  const t0 = performance.now();
  let bytes = 0;
  let lines = 0;
  let tail = "";
  let firstByteMs = 0;
  try {
    const res = await fetch(`${base}${t.path}/wal?limit=all`, { headers: { authorization: `Bearer ${t.orch}` } });
    if (res.status !== 200) throw new Error(`the WAL export answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    const header = Number(res.headers.get("x-last-wal-seq"));
    const decoder = new TextDecoder();
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      if (bytes === 0) firstByteMs = performance.now() - t0;
      bytes += chunk.byteLength;
      for (const b of chunk) if (b === 10) lines += 1;
      tail = (tail + decoder.decode(chunk, { stream: true })).slice(-4_096);
    }
    const seconds = (performance.now() - t0) / 1000;
    clearInterval(timer);
    sample();
    const lastLine = tail.trimEnd().split("\n").at(-1) ?? "";
    const lastSeq = lastLine === "" ? null : (JSON.parse(lastLine) as { wal_seq: number }).wal_seq;
    return {
      seconds: round(seconds, 2), first_byte_ms: round(firstByteMs, 1), bytes, mib: round(bytes / 1024 / 1024, 1), events: lines, events_per_s: round(lines / seconds, 0), mib_per_s: round(bytes / 1024 / 1024 / seconds, 1),
      x_last_wal_seq: header, last_line_wal_seq: lastSeq, complete: lines === header && lastSeq === header,
      workerd_rss_mib: { before: rssBefore === null ? null : round(rssBefore, 1), peak: rss.length === 0 ? null : round(Math.max(...rss), 1), after: rss.length === 0 ? null : round(rss.at(-1)!, 1), samples: rss.length },
    };
  } finally {
    clearInterval(timer);
  }
}

/**
 * The history section: steady steps at 0, ¼, ½, ¾ and all of the history; the first GET after a restart (history
 * task and the control); the whole WAL in one streamed request. The server in `slot` is replaced by the restart.
 */
export async function runHistory(slot: ServerSlot, adminToken: string, plan: HistoryPlan, log: (line: string) => void = console.log) {
  let client = new Client(slot.server!.base);
  const control = await setUp(client, adminToken, "history-control", 2);
  await growTo(client, control, 10, plan.perBatch);
  const t = await setUp(client, adminToken, "history", 6 * plan.steps + 10);
  const checkpoints: (Awaited<ReturnType<typeof stepAlong>> & { quarter: number })[] = [];
  const builds: Awaited<ReturnType<typeof growTo>>[] = [];
  for (let quarter = 0; quarter <= 4; quarter++) {
    if (quarter > 0) {
      const b = await growTo(client, t, Math.round((plan.events * quarter) / 4), plan.perBatch);
      builds.push(b);
      log(`  built to wal_seq ${b.to_wal_seq} in ${fmt(b.build_seconds, 1)} s (${fmt(b.events_per_s, 0)} events/s, batch p50 ${fmt(b.batch_ms.p50_ms, 1)} ms)`);
    }
    const c = { quarter, ...(await stepAlong(client, t, plan.steps)) };
    checkpoints.push(c);
    log(`  ${quarter}/4 of the history (wal_seq ${c.at_wal_seq}): ${fmt(c.steps_per_s, 1)} steps/s, step p50 ${fmt(c.step_ms.p50_ms, 2)} ms, p99 ${fmt(c.step_ms.p99_ms, 2)} ms`);
  }
  // A task object pushes its index entry 200 ms after its last write (by alarm); let that happen before the stop, or the alarm would start the object by itself after the restart.
  await new Promise((r) => setTimeout(r, 1_000));
  const persistDir = slot.server!.persistDir;
  await stopDevServer(slot.server!, { keepPersistDir: true });
  slot.server = null;
  slot.server = await startDevServer(persistDir === null ? {} : { persistDir });
  client = new Client(slot.server.base);
  log(`  restarted on the same storage in ${fmt(slot.server.startupMs / 1000, 1)} s`);
  for (let i = 0; i < 3; i++) await client.must(200, "GET", "/health/object");
  const controlCold = (await client.must(200, "GET", control.path, control.orch)).ms;
  const historyCold = (await client.must(200, "GET", t.path, t.orch)).ms;
  const controlWarm = (await client.must(200, "GET", control.path, control.orch)).ms;
  const historyWarm = (await client.must(200, "GET", t.path, t.orch)).ms;
  log(`  first GET after the restart: history (wal_seq ${t.walSeq}) ${fmt(historyCold, 1)} ms, control ${fmt(controlCold, 1)} ms; second GET ${fmt(historyWarm, 1)} / ${fmt(controlWarm, 1)} ms`);
  const exported = await exportWal(slot.server.base, slot.server.child!.pid!, t);
  log(`  WAL export (limit=all): ${exported.events} events, ${fmt(exported.mib, 1)} MiB in ${fmt(exported.seconds, 2)} s (${fmt(exported.events_per_s, 0)} events/s, first byte ${fmt(exported.first_byte_ms, 1)} ms); workerd RSS ${fmt(exported.workerd_rss_mib.before)} → peak ${fmt(exported.workerd_rss_mib.peak)} MiB; complete: ${exported.complete}`);
  const after = { quarter: 4, ...(await stepAlong(client, t, plan.steps)) };
  log(`  after the restart and the export (wal_seq ${after.at_wal_seq}): ${fmt(after.steps_per_s, 1)} steps/s`);
  const first = checkpoints[0]!.steps_per_s;
  return {
    wal_events: t.walSeq,
    builds,
    checkpoints,
    steps_per_s_last_to_first: round(checkpoints.at(-1)!.steps_per_s / first, 2),
    steps_after_restart: after,
    first_get_after_restart_ms: { history: round(historyCold, 1), control: round(controlCold, 1), history_second: round(historyWarm, 1), control_second: round(controlWarm, 1) },
    export: exported,
  };
}
