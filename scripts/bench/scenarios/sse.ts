/** @module The SSE scenario: S subscribers on one task's event stream, connected and caught up on its history before the first step, while W workers drive its N steps (claim-next once, then complete with claim_next); the runs finish and the task completes, which ends every stream with `end`. */
// Subscribers are plain fetch streams parsed here (an EventSource per subscriber costs the client more CPU than the server). A stream that ends without
// `end` resumes with Last-Event-ID and counts as a reconnect. Delivery lag = receipt time (client Date.now()) − the event's `timestamp` (the commit's
// `now`); both are this machine's wall clock (ms); workerd's Date.now() does not advance while a request computes, so the lag includes the command's own
// decide+commit time; client and server share the CPUs (an upper bound).
import { performance } from "node:perf_hooks";
import { projectWal, sequencePosition, WalEventSchema } from "../../../src/core/index.js";
import { type Client, stepsOf } from "../harness/http-client.js";
import { errorCount, groupCpuMs, type LatencyStats, round, stats } from "../harness/meter.js";

/** The scenario's sizes; `serverGroup` is the server's process group when the benchmark started it (for the CPU split). */
export interface SseConfig { steps: number; workers: number; adminToken: string; serverGroup: number | undefined }

/** A fetch-based SSE reader that resumes with Last-Event-ID until it sees `end`. */
class Subscriber {
  frames = 0;
  liveFrames = 0;
  reconnects = 0;
  outOfOrder = 0;
  lastId: string | null = null;
  lastOrder = -1;
  ended = false;
  error: string | null = null;
  /** Frames with wal_seq above this are live: their lag is measured. */
  liveAfterSeq = Number.POSITIVE_INFINITY;
  /** Receipt time of the `end` frame (performance.now()). */
  endedAt = 0;
  private controller: AbortController | null = null;

  constructor(
    private readonly url: string,
    private readonly token: string,
    private readonly lags: number[],
  ) {}

  /** Reads until `end`, resuming after a stream that ends without it; bounded by `deadline` (performance.now()). */
  async run(deadline: number): Promise<void> {
    while (!this.ended && performance.now() < deadline) {
      this.controller = new AbortController();
      const timer = setTimeout(() => this.controller?.abort(), Math.max(0, deadline - performance.now()));
      try {
        const headers: Record<string, string> = { authorization: `Bearer ${this.token}` };
        if (this.lastId !== null) headers["last-event-id"] = this.lastId;
        const res = await fetch(this.url, { headers, signal: this.controller.signal });
        if (res.status !== 200 || res.body === null) throw new Error(`HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`);
        await this.consume(res.body);
      } catch (e) {
        if (this.ended) break;
        // undici's "fetch failed" says why only in its cause (a reset, a timeout, a refused connection).
        const cause = e instanceof Error && e.cause instanceof Error ? `: ${(e.cause as Error & { code?: string }).code ?? ""} ${e.cause.message}` : "";
        this.error ??= `${e instanceof Error ? e.message : String(e)}${cause}`;
      } finally {
        clearTimeout(timer);
      }
      if (!this.ended) this.reconnects += 1;
    }
  }

  /** Stops reading. */
  stop(): void {
    this.controller?.abort();
  }

  private async consume(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of body) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (block.startsWith(":")) continue; // heartbeat
        this.frame(block);
        if (this.ended) return;
      }
    }
  }

  private frame(block: string): void {
    const now = Date.now();
    if (block.startsWith("event: end\n")) {
      this.ended = true;
      this.endedAt = performance.now();
      this.controller?.abort();
      return;
    }
    const idEnd = block.indexOf("\n");
    const id = block.slice(4, idEnd); // "id: "
    const order = Number(id); // the event's sequence
    if (order <= this.lastOrder) this.outOfOrder += 1;
    this.lastOrder = order;
    this.lastId = id;
    this.frames += 1;
    if (sequencePosition(order).walSeq > this.liveAfterSeq) {
      this.liveFrames += 1;
      // `"timestamp":"…"` of the runtime event, without parsing the whole JSON.
      const at = block.indexOf('"timestamp":"');
      if (at >= 0) this.lags.push(now - Date.parse(block.slice(at + 13, block.indexOf('"', at + 13))));
    }
  }
}

/** One scenario: the step load (cpu_s: CPU seconds of this client and of the server over it and the delivery after it), and with subscribers what they received. */
export type ScenarioResult = StepLoad & { cpu_s: { client: number; server: number | null } } & Partial<ReturnType<typeof delivery> & { subscribe_and_catch_up_s: number; history_frames_per_subscriber: number }>;

/** The step load's figures. */
interface StepLoad { subscribers: number; steps: number; workers: number; steps_completed: number; seconds: number; steps_per_s: number; step_call: LatencyStats; errors: number; first_error?: string }

/** CPU seconds of the server's process group so far, or null. */
function groupCpuSeconds(pgid: number | undefined): number | null {
  const ms = groupCpuMs(pgid)?.ms;
  return ms === undefined ? null : ms / 1000;
}

/** One scenario with `subscribers` subscribers (0: the step load alone). */
export async function scenario(client: Client, opts: SseConfig, subscribers: number): Promise<ScenarioResult> {
  const session = await client.session(opts.adminToken);
  const { orch, observer } = session;
  const taskPath = (await client.task(session, `sse-bench-${subscribers}`, { title: "SSE bench", steps: stepsOf(opts.steps, "SSE bench step") })).path;
  const runs: { token: string; runId: string }[] = [];
  for (let w = 0; w < opts.workers; w++) {
    const d = await client.must(201, "POST", `${taskPath}/workers`, orch, { agent_id: `sse-w${w}`, max_steps: opts.steps });
    runs.push({ token: d.body.token, runId: d.body.run_id });
  }
  const history = await walOf(client, taskPath, orch);
  const startSeq = history[history.length - 1]!.wal_seq;

  // Subscribers: connected and caught up on the history before the first step.
  const lags: number[] = [];
  const subs = Array.from({ length: subscribers }, () => new Subscriber(`${client.base}${taskPath}/events`, observer, lags));
  for (const s of subs) s.liveAfterSeq = startSeq;
  const deadline = performance.now() + 300_000;
  const tSub = performance.now();
  const reading = subs.map((s) => s.run(deadline));
  const historyFrames = projectWal(history).length;
  while (subs.some((s) => s.frames < historyFrames && s.error === null)) {
    if (performance.now() - tSub > 120_000) {
      const behind = subs.filter((s) => s.frames < historyFrames && s.error === null);
      throw new Error(`${behind.length} of ${subscribers} subscribers did not catch up on the ${historyFrames} history frames within 120 s (frames received: ${behind.slice(0, 10).map((s) => s.frames).join(", ")})`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  const caughtUpS = (performance.now() - tSub) / 1000;

  // The step load.
  const stepMs: number[] = [];
  const errors = errorCount();
  const note = errors.note;
  const cpuClient0 = process.cpuUsage();
  const cpuServer0 = groupCpuSeconds(opts.serverGroup);
  const t0 = performance.now();
  await Promise.all(
    runs.map(async (run) => {
      const claim = await client.call("POST", `${taskPath}/steps/claim-next`, run.token, {});
      if (claim.status !== 200) return note(`claim-next ${claim.status}`);
      let current: string | null = claim.body.step?.step_id ?? null;
      for (let calls = 0; current !== null && calls <= opts.steps; calls++) {
        const a = await client.call("POST", `${taskPath}/steps/${current}/status`, run.token, { status: "completed", result_summary: "done", claim_next: true });
        if (a.status !== 200) return note(`status ${a.status}: ${JSON.stringify(a.body).slice(0, 200)}`);
        stepMs.push(a.ms);
        current = a.body.next?.step?.step_id ?? null;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  for (const run of runs) await client.call("POST", `${taskPath}/runs/${run.runId}/finish`, run.token, { outcome: "finished" });
  await client.must(200, "POST", `${taskPath}/complete`, orch, {});

  const cpuSplit = () => {
    const c = process.cpuUsage(cpuClient0);
    const server = groupCpuSeconds(opts.serverGroup);
    return { client: round((c.user + c.system) / 1e6, 2), server: server === null || cpuServer0 === null ? null : round(server - cpuServer0, 2) };
  };
  const base: StepLoad = { subscribers, steps: opts.steps, workers: opts.workers, steps_completed: stepMs.length, seconds: round(seconds), steps_per_s: round(stepMs.length / seconds, 1), step_call: stats(stepMs), ...errors.fields() };
  if (subscribers === 0) return { ...base, cpu_s: cpuSplit() };
  const endWait = performance.now() + 120_000;
  while (subs.some((s) => !s.ended && s.error === null) && performance.now() < endWait) await new Promise((r) => setTimeout(r, 50));
  const cpu = cpuSplit();
  for (const s of subs) s.stop();
  await Promise.allSettled(reading);
  const total = projectWal(await walOf(client, taskPath, orch)).length;
  return { ...base, cpu_s: cpu, subscribe_and_catch_up_s: round(caughtUpS, 2), history_frames_per_subscriber: historyFrames, ...delivery(subs, total, t0, lags) };
}

/** What the subscribers received of the task's `total` runtime events, live since `t0`. */
function delivery(subs: Subscriber[], total: number, t0: number, lags: number[]) {
  const live = subs.reduce((a, s) => a + s.liveFrames, 0);
  const deliverySeconds = (Math.max(...subs.map((s) => s.endedAt)) - t0) / 1000;
  const subscriberErrors = [...new Set(subs.map((s) => s.error).filter((e): e is string => e !== null))];
  const sum = (f: (s: Subscriber) => number) => subs.reduce((a, s) => a + f(s), 0);
  return {
    runtime_events_in_wal: total, frames_delivered_live: live, delivery_seconds: round(deliverySeconds), events_per_s_delivered: round(live / deliverySeconds, 0), lag_ms: stats(lags), reconnects: sum((s) => s.reconnects),
    out_of_order: sum((s) => s.outOfOrder), subscribers_with_exact_sequence: subs.filter((s) => s.ended && s.frames === total && s.outOfOrder === 0).length, ...(subscriberErrors.length === 0 ? {} : { subscriber_errors: subscriberErrors.slice(0, 5) }),
  };
}

/** The task's WAL, every event parsed. */
async function walOf(client: Client, taskPath: string, token: string) {
  const res = await client.call("GET", `${taskPath}/wal?limit=10000`, token, undefined, false);
  if (res.status !== 200) throw new Error(`GET wal answered ${res.status}`);
  return String(res.body).split("\n").filter((l) => l !== "").map((l) => WalEventSchema.parse(JSON.parse(l)));
}
