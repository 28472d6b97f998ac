/**
 * @module bench:session's measurements of one server: a session grown to each size (created through the API up to
 * the plan's `createUpTo`, the rest seeded as index rows through the bench routes, BENCH_SEED=1), its reads' p50 at
 * each size; task creates/s at several numbers in flight; and, with many tasks each completing steps, the index
 * pushes the session object took per second and the server's CPU. Also the goals' arithmetic over both servers.
 */
import { performance } from "node:perf_hooks";
import type { DevServer } from "../../dev-server.js";
import type { Client, Session } from "../harness/http-client.js";
import { stepsOf } from "../harness/http-client.js";
import { groupCpuMs, round } from "../harness/meter.js";
import { median } from "../harness/rounds.js";

/** Sizes and counts of one run. */
export interface SessionPlan {
  /** Session sizes measured, ascending; the first ≥ 1,000 is the reference of the snapshot goal. */
  sizes: number[];
  /** Tasks created through the API at most; past it the session is seeded (where the server has the bench routes). */
  createUpTo: number;
  /** Reads of each kind per size, after one unmeasured read. */
  reads: number;
  /** Creates measured per number in flight, each level in a fresh session. */
  creates: Record<number, number>;
  /** Tasks active at once in the progress phase, and how long it runs. */
  activeTasks: number;
  activeMs: number;
  activeInFlight: number;
}

export const SESSION_PLANS: Record<"full" | "quick", SessionPlan> = {
  full: { sizes: [1_000, 10_000, 100_000], createUpTo: 10_000, reads: 15, creates: { 1: 300, 16: 2_000, 64: 2_000 }, activeTasks: 1_000, activeMs: 30_000, activeInFlight: 64 },
  quick: { sizes: [100, 1_000, 5_000], createUpTo: 1_000, reads: 7, creates: { 1: 40, 16: 200, 64: 200 }, activeTasks: 100, activeMs: 6_000, activeInFlight: 16 },
};

/** Runs `fn(i)` for i = 0 … total-1 with `inFlight` calls at a time. */
export async function pool(total: number, inFlight: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(inFlight, total) }, async () => {
    while (next < total) await fn(next++);
  }));
}

/** Creates that met a 503 (the dev server restarted mid-request) and were sent again, over the run. */
export const retried = { creates: 0 };

/**
 * A one-step task `tid` (small tasks, as a fan-out creates them). A 503 (wrangler dev restarted its Worker under the
 * request) is sent again, at most 3 times; a task_id_conflict after one means the first try had created it.
 */
async function createOne(client: Client, s: Session, tid: string): Promise<void> {
  const body = { task_id: tid, wal_name: tid, summary: "", title: `Bench task ${tid}`, steps: stepsOf(1) };
  for (let attempt = 0; ; attempt++) {
    const a = await client.call("POST", `/v1/sessions/${s.sid}/tasks`, s.orch, body);
    if (a.status === 201 || (attempt > 0 && a.status === 409 && a.body?.error?.code === "task_id_conflict")) return;
    if (a.status !== 503 || attempt === 3) throw new Error(`POST /v1/sessions/${s.sid}/tasks answered ${a.status}: ${JSON.stringify(a.body).slice(0, 300)}`);
    retried.creates++;
  }
}

/** Creates tasks `${prefix}${from}` … up to `to` (exclusive), `inFlight` at a time; creates/s. */
export async function createTasks(client: Client, s: Session, prefix: string, from: number, to: number, inFlight: number): Promise<{ creates: number; seconds: number; per_s: number }> {
  const t0 = performance.now();
  await pool(to - from, inFlight, (i) => createOne(client, s, `${prefix}${String(from + i).padStart(6, "0")}`));
  const seconds = (performance.now() - t0) / 1000;
  return { creates: to - from, seconds: round(seconds, 2), per_s: round((to - from) / seconds, 1) };
}

/** Waits until the session's index lists `total` active tasks (pushes land after the creates answer). */
async function indexHolds(client: Client, s: Session, total: number): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const page = await client.must(200, "GET", `/v1/sessions/${s.sid}/tasks?limit=1`, s.observer);
    if (page.body.total >= total) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the session's index never reached ${total} tasks`);
}

/** p50 (ms) of `n` sequential calls of GET `path`, and the body's size of the last (bytes). */
async function readP50(client: Client, path: string, token: string, n: number): Promise<{ p50_ms: number; bytes: number }> {
  const ms: number[] = [];
  let bytes = 0;
  for (let i = 0; i < n; i++) {
    const a = await client.call("GET", path, token, undefined, false);
    if (a.status !== 200) throw new Error(`GET ${path} answered ${a.status}: ${String(a.body).slice(0, 300)}`);
    ms.push(a.ms);
    bytes = Buffer.byteLength(a.body as string);
  }
  return { p50_ms: round(median(ms), 2), bytes };
}

/** One read's p50 and body size (NaN and the error when it failed). */
type ReadFigure = { p50_ms: number; bytes: number; error?: string };

/** One size's figures; `errors` names the reads that failed at that size (their figures NaN). */
export interface SizeFigures { tasks: number; seeded: number; snapshot_p50_ms: number; snapshot_bytes: number; list_p50_ms: number; graph_p50_ms: number; errors?: Record<string, string> }

/**
 * Grows one session through `plan.sizes`, measuring its reads at each; stops (noting why) at a size the server cannot
 * reach: past `createUpTo` without the bench routes (a baseline older than them). `build` records the API creates.
 */
export async function sessionSizes(client: Client, adminToken: string, plan: SessionPlan, log: (line: string) => void) {
  const s = await client.session(adminToken);
  const sizes: SizeFigures[] = [];
  let created = 0;
  let seeded = 0;
  let build: { creates: number; seconds: number; per_s: number } | null = null;
  let stoppedAt: string | null = null;
  for (const size of plan.sizes) {
    const toCreate = Math.min(size, plan.createUpTo) - created;
    if (toCreate > 0) {
      const made = await createTasks(client, s, "t", created, created + toCreate, 16);
      build = build === null ? made : { creates: build.creates + made.creates, seconds: round(build.seconds + made.seconds, 2), per_s: round((build.creates + made.creates) / (build.seconds + made.seconds), 1) };
      created += toCreate;
      log(`    created ${created} tasks through the API (${made.per_s}/s at 16 in flight)`);
    }
    await indexHolds(client, s, created + seeded);
    while (created + seeded < size) {
      const count = Math.min(20_000, size - created - seeded);
      const a = await client.call("POST", `/_bench/sessions/${s.sid}/seed`, adminToken, { template_task_id: "t000000", count, prefix: `seed${seeded}-` });
      if (a.status !== 201) {
        stoppedAt = `${size} tasks: the server did not seed (${a.status}; a checkout without the bench routes, or BENCH_SEED unset)`;
        break;
      }
      seeded += count;
    }
    if (stoppedAt !== null) break;
    if (seeded > 0) log(`    seeded ${seeded} index rows (test-only bench route)`);
    const n = plan.reads;
    // A read that fails (a snapshot of 100,000 tasks that reads every task is past the 32 MiB an RPC answer may hold)
    // is recorded, and the others are still measured. One unmeasured read first: the first after seeding tens of
    // thousands of rows meets cold caches.
    const read = async (path: string) => {
      await client.call("GET", path, s.observer, undefined, false).catch(() => undefined);
      return readP50(client, path, s.observer, n).catch((e: unknown) => ({ p50_ms: NaN, bytes: NaN, error: e instanceof Error ? e.message.slice(0, 400) : String(e) }));
    };
    const snap: ReadFigure = await read(`/v1/sessions/${s.sid}`);
    const list: ReadFigure = await read(`/v1/sessions/${s.sid}/tasks?limit=50`);
    const graph: ReadFigure = await read(`/v1/sessions/${s.sid}/graph?limit=100`);
    const errors = Object.fromEntries(Object.entries({ snapshot: snap, list, graph }).flatMap(([k, r]) => (r.error === undefined ? [] : [[k, r.error]])));
    sizes.push({ tasks: size, seeded, snapshot_p50_ms: snap.p50_ms, snapshot_bytes: snap.bytes, list_p50_ms: list.p50_ms, graph_p50_ms: graph.p50_ms, ...(Object.keys(errors).length === 0 ? {} : { errors }) });
    log(`    ${size} tasks: snapshot ${snap.p50_ms} ms (${round(snap.bytes / 1024, 1)} KiB), list ${list.p50_ms} ms, graph ${graph.p50_ms} ms${Object.keys(errors).length === 0 ? "" : `; failed: ${JSON.stringify(errors)}`}`);
  }
  return { session_id: s.sid, sizes, build_through_api: build, stopped_at: stoppedAt };
}

/** Creates/s at `inFlight` in flight, `count` creates in a fresh session. */
export async function createRate(client: Client, adminToken: string, inFlight: number, count: number) {
  const s = await client.session(adminToken);
  return { in_flight: inFlight, ...(await createTasks(client, s, "c", 0, count, inFlight)) };
}

/**
 * The floor under a create: calls/s at `inFlight` in flight, each to a task object never used before (its start and
 * empty schema, no task; the bench route `POST /_bench/objects/{name}/touch`). Null on a server without the route.
 */
export async function newObjectRate(client: Client, adminToken: string, inFlight: number, count: number, prefix: string): Promise<{ in_flight: number; calls: number; seconds: number; per_s: number } | null> {
  const probe = await client.call("POST", `/_bench/objects/${prefix}-probe/touch`, adminToken);
  if (probe.status !== 200) return null;
  const t0 = performance.now();
  await pool(count, inFlight, async (i) => {
    await client.must(200, "POST", `/_bench/objects/${prefix}-${i}/touch`, adminToken);
  });
  const seconds = (performance.now() - t0) / 1000;
  return { in_flight: inFlight, calls: count, seconds: round(seconds, 2), per_s: round(count / seconds, 1) };
}

/** Index pushes the session object counted since it started (bench routes), and when it started; null when the server has none. */
async function indexPushes(client: Client, sid: string, adminToken: string): Promise<{ since: string; pushes: number } | null> {
  const a = await client.call("GET", `/_bench/sessions/${sid}/counters`, adminToken);
  return a.status === 200 ? { since: String(a.body.since), pushes: Number(a.body.counts?.index_push ?? 0) } : null;
}

/**
 * `plan.activeTasks` tasks of many steps, a worker run each, every task completing steps (status completed +
 * claim_next) round robin, `plan.activeInFlight` calls at a time, for `plan.activeMs`: the session object's index
 * pushes per second (its counter; null without the bench routes) and the server's process group CPU over the window.
 */
export async function activeProgress(client: Client, adminToken: string, plan: SessionPlan, server: DevServer) {
  const s = await client.session(adminToken);
  const runs: { path: string; token: string; stepId: string | null }[] = [];
  await pool(plan.activeTasks, 16, async (i) => {
    const tid = `a${String(i).padStart(6, "0")}`;
    const { path } = await client.task(s, tid, { title: `Active ${tid}`, steps: stepsOf(200, "compact") });
    const token: string = (await client.must(201, "POST", `${path}/workers`, s.orch, { agent_id: `w-${tid}` })).body.token;
    runs.push({ path, token, stepId: null });
  });
  await indexHolds(client, s, plan.activeTasks);
  const pushes0 = await indexPushes(client, s.sid, adminToken);
  const cpu0 = groupCpuMs(server.child?.pid);
  const t0 = performance.now();
  let calls = 0;
  let next = 0;
  const until = t0 + plan.activeMs;
  await Promise.all(Array.from({ length: plan.activeInFlight }, async () => {
    while (performance.now() < until) {
      const run = runs[next++ % runs.length]!;
      const a = run.stepId === null
        ? await client.call("POST", `${run.path}/steps/claim-next`, run.token, {})
        : await client.call("POST", `${run.path}/steps/${run.stepId}/status`, run.token, { status: "completed", result_summary: "done", claim_next: true });
      if (a.status !== 200) throw new Error(`progress call answered ${a.status}: ${JSON.stringify(a.body).slice(0, 300)}`);
      const held = run.stepId === null ? a.body : a.body?.next;
      run.stepId = typeof held?.step?.step_id === "string" ? held.step.step_id : null;
      calls++;
    }
  }));
  const seconds = (performance.now() - t0) / 1000;
  const cpu1 = groupCpuMs(server.child?.pid);
  // Pushes of the window land a little after it: read the counter once the last writes settled.
  await new Promise((r) => setTimeout(r, 500));
  const pushes1 = await indexPushes(client, s.sid, adminToken);
  // The counter lives in the object's memory: an object that restarted within the window (another `since`) counted only part of it.
  const pushes = pushes0 === null || pushes1 === null || pushes0.since !== pushes1.since ? null : pushes1.pushes - pushes0.pushes;
  return {
    active_tasks: plan.activeTasks, in_flight: plan.activeInFlight, seconds: round(seconds, 2), task_writes_per_s: round(calls / seconds, 1),
    session_requests: pushes, session_requests_per_s: pushes === null ? null : round(pushes / seconds, 1),
    server_cpu_share: cpu0 === null || cpu1 === null ? null : round((cpu1.ms - cpu0.ms) / 1000 / seconds, 3),
  };
}

/** A goal of the issue, computed from one run. */
export interface Goal { name: string; value: number | null; op: "≤" | "≥"; target: number; met: boolean | null }

/** One server's results, as the goals read them. */
export interface SideResults { sizes: SizeFigures[]; creates: { in_flight: number; per_s: number }[]; new_objects: { per_s: number } | null; active: { active_tasks: number; session_requests_per_s: number | null } }

/**
 * The goals: snapshot p50 at the largest size ÷ at the reference size (the first of at least 1,000) ≤ 1.5 and the
 * largest snapshot's body < 64 KiB; creates/s at 16 in flight ≥ 3× the baseline's; the session object's requests/s
 * with the active tasks ≤ active tasks ÷ `intervalS` (one push per task per interval at most); and, ours, creates/s at 16
 * in flight ≥ 0.8× the rate at which the same server makes new task objects that do nothing.
 */
export function sessionGoals(now: SideResults, baseline: SideResults | null, intervalS: number): Goal[] {
  const goal = (name: string, value: number | null, op: Goal["op"], target: number): Goal => ({ name, value: value === null ? null : round(value, 3), op, target, met: value === null ? null : op === "≤" ? value <= target : value >= target });
  const reference = now.sizes.find((s) => s.tasks >= 1_000) ?? null;
  const largest = now.sizes.at(-1) ?? null;
  const at16 = (r: SideResults | null) => r?.creates.find((c) => c.in_flight === 16)?.per_s ?? null;
  const creates = at16(now);
  const before = at16(baseline);
  return [
    goal(`snapshot p50 at ${largest?.tasks ?? "-"} ÷ at ${reference?.tasks ?? "-"} tasks`, reference === null || largest === null || largest === reference ? null : largest.snapshot_p50_ms / reference.snapshot_p50_ms, "≤", 1.5),
    goal(`snapshot body at ${largest?.tasks ?? "-"} tasks, KiB`, largest === null ? null : largest.snapshot_bytes / 1024, "≤", 64),
    goal("creates/s at 16 in flight ÷ baseline's", creates === null || before === null ? null : creates / before, "≥", 3),
    goal(`session requests/s with ${now.active.active_tasks} active tasks`, now.active.session_requests_per_s, "≤", now.active.active_tasks / intervalS),
    // A create must make its task object: how close it comes to that cost alone (1.0: nothing else), same server.
    goal("creates/s at 16 in flight ÷ new task objects touched/s at 16 (same server)", creates === null || now.new_objects === null ? null : creates / now.new_objects.per_s, "≥", 0.8),
  ];
}
