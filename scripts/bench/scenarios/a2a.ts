/**
 * @module The A2A scenarios, against a running server.
 *
 * Submit: a task created by A2A `SendMessage` (returnImmediately: the answer is the new Task, SUBMITTED) from the
 * official client (@a2a-js/sdk 1.3.0, JSON-RPC), against the REST create-task call the orchestrator makes
 * (POST /v1/sessions/{sid}/tasks with `steps: []`, the same fields) and the floor (GET /health/object), by C
 * concurrent clients in rounds of a fixed number of calls, so rounds of each carrier can be interleaved.
 *
 * Follow: S SubscribeToTask streams of the official client on one task submitted over A2A while the session's
 * orchestrator plans N steps over REST and W workers complete them (claim-next, then complete with claim_next).
 * Each stream's artifactUpdate for a step is matched (artifactId = step id) with the acknowledgement of the call
 * that completed the step, on the worker's side: lag = receipt − ack, both performance.now() of this process. The
 * task's completion (orchestrator) is matched with its `result` artifact and terminal status.
 */
import { type Message, type Part, Role, type SendMessageRequest, type StreamResponse, type Task, TaskState } from "@a2a-js/sdk";
import type { Client as A2aClient } from "@a2a-js/sdk/client";
import { performance } from "node:perf_hooks";
import { monotonicFactory } from "ulid";
import { projectWal, WalEventSchema } from "../../../src/core/index.js";
import { connectA2aClient } from "../../a2a-client.js";
import { type Client, type Session, stepsOf } from "../harness/http-client.js";
import { errorCount, groupCpuMs, type LatencyStats, round, stats } from "../harness/meter.js";
import { errorText } from "../harness/report.js";
import { type Latency, latencyOf, pooledRounds, type TimedRound, timeCalls } from "../harness/rounds.js";
import { within } from "../harness/waits.js";

const newId = monotonicFactory();
const lowerId = () => newId().toLowerCase();

/** How a submit round's calls travel. */
export type Carrier = "floor" | "rest" | "a2a";
export const CARRIERS: readonly Carrier[] = ["floor", "rest", "a2a"];

const textPart = (value: string): Part => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "text/plain" });

/** A new-task SendMessage of one text part; `returnImmediately` answers the Task as soon as it exists. */
function submission(text: string, returnImmediately: boolean): SendMessageRequest {
  const message: Message = { messageId: crypto.randomUUID(), taskId: "", contextId: "", role: Role.ROLE_USER, parts: [textPart(text)], metadata: undefined, extensions: [], referenceTaskIds: [] };
  return { tenant: "", message, configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, historyLength: undefined, returnImmediately }, metadata: undefined };
}

/** The request's text: a title line and an objective, as an A2A client would write it. */
const requestText = (seq: number) => `Bench request ${seq}\nSummarise the figures of region ${seq % 7} for the board.`;

/** Mints a token of role a2a_client for `agentId` with the session's orchestrator. */
async function a2aToken(client: Client, session: Session, agentId: string): Promise<string> {
  return (await client.must(201, "POST", `/v1/sessions/${session.sid}/tokens`, session.orch, { role: "a2a_client", agent_id: agentId })).body.token;
}

type Call = (seq: number) => Promise<void>;

/** One concurrency's clients: a session, per client an a2a_client token and its own official client, and one caller per carrier and client. */
export interface SubmitBlock { concurrency: number; callers: Map<Carrier, Call[]>; answerBytes: { rest: number; a2a: number } }

/** Sets up a block of `concurrency` clients (connections and card discovery outside any measured window). */
export async function setupSubmitBlock(client: Client, adminToken: string, concurrency: number): Promise<SubmitBlock> {
  const session = await client.session(adminToken);
  const callers = new Map<Carrier, Call[]>(CARRIERS.map((k) => [k, []]));
  const restBody = (seq: number) => {
    const taskId = `rest-${lowerId()}`;
    // What SendMessage's handler sends the task object for the same message (routes/a2a/a2a-handler.ts `submit`).
    return { task_id: taskId, wal_name: taskId, title: `Bench request ${seq}`, summary: "", objective: requestText(seq), thread_id: `ctx-${lowerId()}`, steps: [] };
  };
  const rest = async (seq: number): Promise<string> => {
    const a = await client.call("POST", `/v1/sessions/${session.sid}/tasks`, session.orch, restBody(seq), false);
    if (a.status !== 201) throw new Error(`REST create ${a.status}: ${String(a.body).slice(0, 300)}`);
    return a.body as string;
  };
  const a2aClients: A2aClient[] = [];
  for (let i = 0; i < concurrency; i++) {
    const a2a = await connectA2aClient(client.base, await a2aToken(client, session, `bench-client-${i}`));
    a2aClients.push(a2a);
    callers.get("floor")!.push(async () => {
      const a = await client.call("GET", "/health/object", undefined, undefined, false);
      if (a.status !== 200) throw new Error(`GET /health/object ${a.status}`);
    });
    callers.get("rest")!.push(async (seq) => void (await rest(seq)));
    callers.get("a2a")!.push(async (seq) => {
      const r = await a2a.sendMessage(submission(requestText(seq), true));
      if (!("id" in r) || (r as Task).status?.state !== TaskState.TASK_STATE_SUBMITTED) throw new Error(`SendMessage answered ${JSON.stringify(r).slice(0, 300)}`);
    });
  }
  // What one call carries back (the A2A answer as the wire JSON-RPC body the client decoded).
  const restBytes = Buffer.byteLength(await rest(-1));
  const tokenForBytes = await a2aToken(client, session, "bench-bytes");
  const wire = await fetch(`${client.base}/a2a`, {
    method: "POST",
    headers: { authorization: `Bearer ${tokenForBytes}`, "content-type": "application/json", "a2a-version": "1.0" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: requestText(-1) }] }, configuration: { returnImmediately: true } } }),
  });
  const wireText = await wire.text();
  if (wire.status !== 200 || !wireText.includes('"task"')) throw new Error(`raw SendMessage ${wire.status}: ${wireText.slice(0, 300)}`);
  return { concurrency, callers, answerBytes: { rest: restBytes, a2a: Buffer.byteLength(wireText) } };
}

/** One round: one carrier, `callsPerClient` calls by each client of the block back to back. */
export interface Round extends TimedRound {
  carrier: Carrier;
  concurrency: number;
  pair: number;
}

/** Runs one round; `serverGroup` is the dev server's process group (its CPU is measured when given). */
export async function runRound(block: SubmitBlock, carrier: Carrier, callsPerClient: number, pair: number, serverGroup: number | null | undefined): Promise<Round> {
  // Each call's number is unique across the run (pair, client, call), for the ids it makes.
  const calls = block.callers.get(carrier)!.map((call) => (i: number, c: number) => call(pair * 100_000 + c * 1_000 + i));
  return { carrier, concurrency: block.concurrency, pair, ...(await timeCalls(calls, callsPerClient, serverGroup)) };
}

/** Rounds of one carrier as one: calls and time summed, latencies pooled, CPU summed. */
export function pooled(rounds: Round[]) {
  return pooledRounds(rounds);
}

// ---------------------------------------------------------------------------------------------------------------
// Follow: S SubscribeToTask streams while workers complete the task's steps.

/** The follow scenario's sizes. */
export interface FollowConfig { streams: number; steps: number; workers: number; adminToken: string; serverGroup: number | null | undefined }

/** One update a stream received: what it was and when (performance.now()). */
interface Received { kind: "task" | "statusUpdate" | "artifactUpdate" | "message"; artifactId?: string; state?: TaskState; at: number }

/** One SubscribeToTask stream of its own official client. */
class Stream {
  readonly received: Received[] = [];
  error: string | null = null;
  ended = false;
  readonly abort = new AbortController();
  constructor(readonly client: A2aClient) {}

  async run(taskId: string): Promise<void> {
    try {
      for await (const event of this.client.resubscribeTask({ tenant: "", id: taskId }, { signal: this.abort.signal })) this.received.push(receivedOf(event, performance.now()));
      this.ended = true;
    } catch (e) {
      if (!this.abort.signal.aborted) this.error = errorText(e);
    }
  }

  get artifacts(): number {
    return this.received.filter((r) => r.kind === "artifactUpdate" && r.artifactId !== "result").length;
  }
}

function receivedOf(event: StreamResponse, at: number): Received {
  const p = event.payload;
  switch (p?.$case) {
    case "task":
      return { kind: "task", state: p.value.status?.state, at };
    case "statusUpdate":
      return { kind: "statusUpdate", state: p.value.status?.state, at };
    case "artifactUpdate":
      return { kind: "artifactUpdate", artifactId: p.value.artifact?.artifactId ?? "", at };
    default:
      return { kind: "message", at };
  }
}

/**
 * How many subscribers the task object's event stream holds: GET .../events (REST SSE, observer) opened again and
 * again until it is refused (429 "this stream already has N subscribers"); `held_by_others` = N minus the probe's
 * own streams, which are then closed. Needs the server's SSE_MAX_SUBSCRIBERS to be above the streams held.
 */
async function probeHeld(client: Client, taskPath: string, token: string, limit: number, earlierProbes: number): Promise<Held> {
  const opened: AbortController[] = [];
  let open: number | null = null;
  try {
    for (let i = 0; i <= limit; i++) {
      const ctrl = new AbortController();
      const res = await fetch(`${client.base}${taskPath}/events`, { headers: { authorization: `Bearer ${token}` }, signal: ctrl.signal });
      if (res.status === 200) {
        opened.push(ctrl);
        // Its history read, so the stream is live and waiting: a reader that leaves then is noticed and its slot freed.
        await res.body?.getReader().read();
        continue;
      }
      const text = await res.text();
      const m = /already has (\d+) subscribers/.exec(text);
      if (res.status !== 429 || m === null) throw new Error(`probe GET ${taskPath}/events answered ${res.status}: ${text.slice(0, 200)}`);
      open = Number(m[1]);
      break;
    }
  } finally {
    for (const c of opened) c.abort();
  }
  return { open_at_refusal: open, probe_streams: opened.length, earlier_probe_streams: earlierProbes, held_by_others: open === null ? null : open - opened.length, streams_held_at_least: open === null ? null : Math.max(0, open - opened.length - earlierProbes) };
}

/**
 * A count of the task event stream's subscribers. A probe stream the probe leaves may keep its slot a while (it
 * was still counted seconds later under wrangler dev), so the streams held are between `streams_held_at_least`
 * (every earlier probe stream assumed still counted) and `held_by_others` (none).
 */
interface Held { open_at_refusal: number | null; probe_streams: number; earlier_probe_streams: number; held_by_others: number | null; streams_held_at_least: number | null }

/** The follow scenario's result. */
export interface FollowResult {
  streams: number; steps: number; workers: number;
  subscribe_s: number; steps_s: number; steps_per_s: number; complete_call: LatencyStats;
  /** receipt − ack of the step's completion call, every stream's artifactUpdate of every step. */
  artifact_lag_ms: Latency;
  /** receipt − the moment the completion call was sent (never negative: an upper bound of the delivery). */
  artifact_lag_from_send_ms: Latency;
  /** receipt − ack of the orchestrator's complete call: the `result` artifact and the terminal status. */
  completion_lag_ms: Latency;
  /** The orchestrator's complete call, sent to answer read. */
  complete_task_call_ms: number;
  /** Updates received before their write was acknowledged (negative lag: the event was published before the answer reached the worker). */
  before_ack: number;
  events_per_stream: { min: number; max: number; by_kind: Record<string, { min: number; max: number }> };
  other_status_updates_per_stream: { min: number; max: number };
  streams_exact: number; violations: string[]; stream_errors: string[];
  held: { after_subscribe: Held; after_last_step: Held };
  cpu_s: { client: number; server: number | null };
  errors: number; first_error?: string;
}

/** The follow scenario. */
export async function follow(client: Client, cfg: FollowConfig, log: (line: string) => void = console.log): Promise<FollowResult> {
  const session = await client.session(cfg.adminToken);
  const token = await a2aToken(client, session, "bench-follower");
  const sender = await connectA2aClient(client.base, token);
  const task = (await sender.sendMessage(submission("Bench followed task\nRun the benchmark's steps.", true))) as Task;
  const taskPath = `/v1/sessions/${session.sid}/tasks/${task.id}`;
  const probeLimit = 1_000;

  // Streams: each its own client (card discovery outside the window), all holding their Task before any write.
  const clients: A2aClient[] = [];
  for (let i = 0; i < cfg.streams; i++) clients.push(await connectA2aClient(client.base, token));
  const streams = clients.map((c) => new Stream(c));
  const tSub = performance.now();
  const reading = streams.map((s) => s.run(task.id));
  while (streams.some((s) => s.received.length === 0 && s.error === null)) {
    if (performance.now() - tSub > 60_000) throw new Error(`${streams.filter((s) => s.received.length === 0).length} of ${cfg.streams} streams had no Task after 60 s`);
    await new Promise((r) => setTimeout(r, 10));
  }
  const subscribeS = (performance.now() - tSub) / 1000;
  const startErrors = streams.filter((s) => s.error !== null);
  if (startErrors.length > 0) throw new Error(`${startErrors.length} streams failed to start: ${startErrors[0]!.error}`);
  // The Task is sent before the object's event stream is opened: wait until every stream holds a slot (or 5 s).
  let probes = 0;
  let heldAfterSubscribe = await probeHeld(client, taskPath, session.observer, probeLimit, probes);
  probes += heldAfterSubscribe.probe_streams;
  for (let i = 0; i < 50 && (heldAfterSubscribe.streams_held_at_least ?? 0) < cfg.streams; i++) {
    await new Promise((r) => setTimeout(r, 100));
    heldAfterSubscribe = await probeHeld(client, taskPath, session.observer, probeLimit, probes);
    probes += heldAfterSubscribe.probe_streams;
  }
  log(`  ${cfg.streams} streams open in ${round(subscribeS, 2)} s; the task's event stream holds at least ${heldAfterSubscribe.streams_held_at_least} of them (probe refused at ${heldAfterSubscribe.open_at_refusal})`);

  const cpuClient0 = process.cpuUsage();
  const cpuServer0 = groupCpuMs(cfg.serverGroup)?.ms ?? null;
  const errors = errorCount();
  // The orchestrator plans the steps and dispatches the workers.
  const steps = stepsOf(cfg.steps, "A2A bench step");
  await client.must(200, "PATCH", taskPath, session.orch, { ops: steps.map((step) => ({ op: "add_step", step })) });
  const runs: { token: string; runId: string }[] = [];
  for (let w = 0; w < cfg.workers; w++) {
    const d = await client.must(201, "POST", `${taskPath}/workers`, session.orch, { agent_id: `a2a-bench-w${w}`, max_steps: cfg.steps });
    runs.push({ token: d.body.token, runId: d.body.run_id });
  }
  const sentAt = new Map<string, number>();
  const ackAt = new Map<string, number>();
  const completeMs: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    runs.map(async (run) => {
      const claim = await client.call("POST", `${taskPath}/steps/claim-next`, run.token, {});
      if (claim.status !== 200) return errors.note(`claim-next ${claim.status}`);
      let current: string | null = claim.body.step?.step_id ?? null;
      for (let calls = 0; current !== null && calls <= cfg.steps; calls++) {
        const sent = performance.now();
        const a = await client.call("POST", `${taskPath}/steps/${current}/status`, run.token, { status: "completed", result_summary: `done ${current}`, claim_next: true });
        const ack = performance.now();
        if (a.status !== 200) return errors.note(`status ${a.status}: ${JSON.stringify(a.body).slice(0, 200)}`);
        sentAt.set(current, sent);
        ackAt.set(current, ack);
        completeMs.push(a.ms);
        current = a.body.next?.step?.step_id ?? null;
      }
    }),
  );
  const stepsS = (performance.now() - t0) / 1000;

  // Every stream has every step's artifact (or 60 s), then the slots are counted again while the streams are open.
  const until = performance.now() + 60_000;
  while (streams.some((s) => s.artifacts < ackAt.size && s.error === null && !s.ended) && performance.now() < until) await new Promise((r) => setTimeout(r, 20));
  const heldAfterLast = await probeHeld(client, taskPath, session.observer, probeLimit, probes);
  for (const run of runs) await client.call("POST", `${taskPath}/runs/${run.runId}/finish`, run.token, { outcome: "finished" });
  const completeSent = performance.now();
  await client.must(200, "POST", `${taskPath}/complete`, session.orch, { reason: "benchmark done" });
  const completeAck = performance.now();
  const ended = await within(Promise.all(reading), 60_000);
  if (ended === "timeout") for (const s of streams) s.abort.abort();
  const cpuUsed = process.cpuUsage(cpuClient0);
  const cpuServer1 = groupCpuMs(cfg.serverGroup)?.ms ?? null;

  // The order the WAL gives the step completions: every stream must send exactly this.
  const walRes = await client.call("GET", `${taskPath}/wal?limit=10000`, session.orch, undefined, false);
  if (walRes.status !== 200) throw new Error(`GET wal answered ${walRes.status}`);
  const wal = String(walRes.body).split("\n").filter((l) => l !== "").map((l) => WalEventSchema.parse(JSON.parse(l)));
  const expected = projectWal(wal).filter((e) => e.stepId !== undefined && e.nativeStatus === "completed" && (e.type === "task.attempt.completed" || e.type === "task.updated")).map((e) => e.stepId!);

  const lags: number[] = [];
  const fromSend: number[] = [];
  const completionLags: number[] = [];
  let beforeAck = 0;
  const violations: string[] = [];
  const byKind = new Map<string, number[]>();
  const otherStatus: number[] = [];
  let exact = 0;
  streams.forEach((s, i) => {
    const order: string[] = [];
    const counts: Record<string, number> = { task: 0, statusUpdate: 0, artifactUpdate: 0, message: 0 };
    let others = 0;
    for (const r of s.received) {
      counts[r.kind] = (counts[r.kind] ?? 0) + 1;
      if (r.kind === "artifactUpdate" && r.artifactId === "result") completionLags.push(r.at - completeAck);
      else if (r.kind === "artifactUpdate") {
        order.push(r.artifactId!);
        const ack = ackAt.get(r.artifactId!);
        if (ack === undefined) continue;
        lags.push(r.at - ack);
        fromSend.push(r.at - sentAt.get(r.artifactId!)!);
        if (r.at < ack) beforeAck++;
      } else if (r.kind === "statusUpdate" && r.state === TaskState.TASK_STATE_COMPLETED) completionLags.push(r.at - completeAck);
      else if (r.kind === "statusUpdate") others++;
    }
    for (const [k, n] of Object.entries(counts)) byKind.set(k, [...(byKind.get(k) ?? []), n]);
    otherStatus.push(others);
    const problems: string[] = [];
    if (s.error !== null) problems.push(`error: ${s.error}`);
    if (!s.ended) problems.push("did not end");
    if (s.received.at(-1)?.state !== TaskState.TASK_STATE_COMPLETED) problems.push(`last update is not COMPLETED (${s.received.at(-1)?.kind} ${s.received.at(-1)?.state})`);
    const seen = new Set<string>();
    const dups = order.filter((id) => (seen.has(id) ? true : (seen.add(id), false)));
    if (dups.length > 0) problems.push(`${dups.length} duplicate artifacts (first ${dups[0]})`);
    const missing = expected.filter((id) => !seen.has(id));
    if (missing.length > 0) problems.push(`${missing.length} artifacts missing (first ${missing[0]})`);
    if (dups.length === 0 && missing.length === 0 && order.join(",") !== expected.join(",")) {
      const at = order.findIndex((id, k) => id !== expected[k]);
      problems.push(`artifacts out of WAL order from position ${at} (${order[at]} instead of ${expected[at]})`);
    }
    if (problems.length === 0) exact++;
    else violations.push(`stream ${i}: ${problems.join("; ")}`);
  });
  if (expected.length !== cfg.steps) violations.unshift(`the WAL has ${expected.length} step completions, not ${cfg.steps}`);
  const span = (xs: number[]) => ({ min: xs.length === 0 ? 0 : Math.min(...xs), max: xs.length === 0 ? 0 : Math.max(...xs) });
  const totals = streams.map((s) => s.received.length);
  await Promise.allSettled(reading);
  return {
    streams: cfg.streams, steps: cfg.steps, workers: cfg.workers,
    subscribe_s: round(subscribeS, 3), steps_s: round(stepsS, 3), steps_per_s: round(completeMs.length / stepsS, 1), complete_call: stats(completeMs),
    artifact_lag_ms: latencyOf(lags), artifact_lag_from_send_ms: latencyOf(fromSend), completion_lag_ms: latencyOf(completionLags), complete_task_call_ms: round(completeAck - completeSent), before_ack: beforeAck,
    events_per_stream: { ...span(totals), by_kind: Object.fromEntries([...byKind].map(([k, xs]) => [k, span(xs)])) }, other_status_updates_per_stream: span(otherStatus),
    streams_exact: exact, violations: violations.slice(0, 20), stream_errors: [...new Set(streams.map((s) => s.error).filter((e): e is string => e !== null))].slice(0, 5),
    held: { after_subscribe: heldAfterSubscribe, after_last_step: heldAfterLast },
    cpu_s: { client: round((cpuUsed.user + cpuUsed.system) / 1e6, 2), server: cpuServer0 === null || cpuServer1 === null ? null : round((cpuServer1 - cpuServer0) / 1000, 2) },
    ...errors.fields(),
  };
}
