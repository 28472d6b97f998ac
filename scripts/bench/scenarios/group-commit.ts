/** @module The step scenario with the SDK's group commit as its carrier (batch requests or command-socket frames), and the unbatched one, both metered. */
// Metered: requests or frames, commands per request, round trips, and CPU of this process and the dev server over the measured window.
import { performance } from "node:perf_hooks";
import WebSocket from "ws";
import { type FetchLike, RuntimeApiError, RuntimeClient, type WebSocketConstructor } from "../../../src/client/index.js";
import type { Client } from "../harness/http-client.js";
import { type CpuUse, cpuSnap, cpuUse, type LatencyStats, perStep, round, stats, sumCpu } from "../harness/meter.js";
import { fmt } from "../harness/report.js";
import { claimedStep, mergeSteps, type Plan, type StepCall, type StepCarrier, type StepResult, stepScenario } from "./steps.js";

/** Counts what the group commit actually sends: requests, commands per request, HTTP round trips. */
class FetchMeter {
  active = false;
  commandsPerRequest: number[] = [];
  rttMs: number[] = [];
  batchRttMs: number[] = [];
  statuses: Record<string, number> = {};

  readonly fetch: FetchLike = async (input, init) => {
    const t0 = performance.now();
    const res = await fetch(input, init);
    const buf = await res.arrayBuffer();
    const ms = performance.now() - t0;
    if (this.active) {
      this.rttMs.push(ms);
      this.statuses[res.status] = (this.statuses[res.status] ?? 0) + 1;
      let n = 1;
      if (new URL(input).pathname.endsWith("/batch") && typeof init?.body === "string") {
        n = (JSON.parse(init.body) as { commands: unknown[] }).commands.length;
        this.batchRttMs.push(ms);
      }
      this.commandsPerRequest.push(n);
    }
    const empty = buf.byteLength === 0 && [204, 205, 304].includes(res.status);
    return new Response(empty ? null : buf, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

/**
 * Counts the command socket's frames like FetchMeter counts requests: commands per frame (from the frame's
 * text, without parsing it) and each frame's round trip, matched by the `id` the frame starts with.
 */
class SocketMeter {
  active = false;
  commandsPerFrame: number[] = [];
  rttMs: number[] = [];

  /** ws's WebSocket, metered (frame ids are per socket, so each socket keeps its own send times). */
  readonly WebSocket: WebSocketConstructor = (() => {
    const meter = this;
    return class MeteredWebSocket extends WebSocket {
      private readonly sentAt = new Map<string, number>();
      constructor(url: string, protocols?: string | string[], options?: WebSocket.ClientOptions) {
        super(url, protocols, options);
        this.addEventListener("message", (event) => {
          const id = frameId(String(event.data));
          const at = id === null ? undefined : this.sentAt.get(id);
          if (at === undefined) return;
          this.sentAt.delete(id!);
          if (meter.active) meter.rttMs.push(performance.now() - at);
        });
      }
      override send(data: string): void {
        if (meter.active) {
          const id = frameId(data);
          if (id !== null) this.sentAt.set(id, performance.now());
          meter.commandsPerFrame.push(data.split('"token":').length - 1);
        }
        super.send(data);
      }
    } as unknown as WebSocketConstructor;
  })();
}

/** The `id` a frame of the client starts with (`{"id":12,...`), or null. */
function frameId(text: string): string | null {
  return /^\{"id":(\d+)/.exec(text)?.[1] ?? null;
}

/** What the group commit did during one batched scenario (socket: frames for requests). */
export type BatchingStats = ReturnType<typeof batchingStats>;

/**
 * http_rtt: every request, fetch called → body read (network + server); batch_rtt: batch requests (or frames) only;
 * client_share_p50_ms: step call p50 − request p50, the time a call spends in the client (the tick, queued, answered).
 */
function batchingStats(perRequest: number[], rtt: number[], batchRtt: number[], statuses: Record<string, number>, stepP50: number) {
  const sorted = [...perRequest].sort((a, b) => a - b);
  const commands = perRequest.reduce((a, b) => a + b, 0);
  const httpRtt = stats(rtt);
  return {
    requests: perRequest.length, batch_requests: batchRtt.length, single_requests: perRequest.length - batchRtt.length, commands,
    commands_per_request: { mean: round(commands / Math.max(1, perRequest.length), 2), p50: sorted[Math.floor(sorted.length / 2)] ?? 0, max: sorted.at(-1) ?? 0 },
    http_rtt: httpRtt, batch_rtt: stats(batchRtt), statuses, client_share_p50_ms: round(stepP50 - httpRtt.p50_ms),
    samples: { perRequest, rtt, batchRtt },
  };
}

/** How a scenario's writes travel: a request each, group commits as batch requests, or as socket frames. */
export type Carrier = "unbatched" | "batched" | "socket";

/** A step scenario with its CPU use (and, batched, what the group commit did: requests or frames). */
export type Measured = StepResult & { cpu: CpuUse; cpu_per_step: ReturnType<typeof perStep>; batching?: BatchingStats; batched: boolean; carrier: Carrier };

/** The client SDK as a carrier: each run a WorkerClient of `family`; a refusal becomes an error naming its code; `window` hears the measured window open and close. */
export function sdkCarrier(family: RuntimeClient, label: string, window: { start?(): void; stop?(): void } = {}): StepCarrier {
  const timed = async <A>(call: () => Promise<A>, held: (answer: A) => unknown): Promise<StepCall> => {
    const t = performance.now();
    let answer: A;
    try {
      answer = await call();
    } catch (e) {
      throw e instanceof RuntimeApiError ? new Error(`${e.code} ${e.status}: ${e.message}`) : e;
    }
    return { ms: performance.now() - t, ...claimedStep(held(answer) as Parameters<typeof claimedStep>[0]) };
  };
  return {
    label,
    ...window,
    drive: (run, maxSteps) => {
      const worker = family.worker(run.taskPath, { token: run.token, runId: run.runId, agentId: run.agentId, maxSteps });
      return {
        claimNext: () => timed(() => worker.claimNext(), (a) => a),
        completeAndClaim: (stepId) => timed(() => worker.updateStep(stepId, { status: "completed", result_summary: "done", claim_next: true }), (a) => a.next),
      };
    },
  };
}

/**
 * stepScenario through `carrier`, with its CPU use. Unbatched: one request per call, the CPU snapshot spanning set-up and
 * verification too (its per-step figures are upper bounds). Batched: the workers as WorkerClients of one RuntimeClient
 * (group commit on), metered over the measured window; "socket" sends the commits as frames over each task's command socket (ws),
 * `framesPerTick` of them at most (the SDK's default when not given).
 */
export async function measuredScenario(client: Client, adminToken: string, workers: number, tasks: number, plan: Plan, pgid: number | null, carrier: Carrier, framesPerTick?: number): Promise<Measured> {
  if (carrier === "unbatched") {
    const a = cpuSnap(pgid);
    const res = await stepScenario(client, adminToken, workers, tasks, plan);
    const cpu = cpuUse(a, cpuSnap(pgid));
    return { ...res, cpu, cpu_per_step: perStep(cpu, res.steps_completed), batched: false, carrier };
  }
  const meter = new FetchMeter();
  const frames = new SocketMeter();
  const family = new RuntimeClient({ baseUrl: client.base, fetch: meter.fetch, batching: true, ...(carrier === "socket" ? { socket: { WebSocket: frames.WebSocket, ...(framesPerTick === undefined ? {} : { framesPerTick }) } } : {}) });
  let cpu0 = cpuSnap(pgid);
  let cpu = cpuUse(cpu0, cpu0);
  const window = {
    start: () => {
      cpu0 = cpuSnap(pgid);
      meter.active = frames.active = true;
    },
    stop: () => {
      meter.active = frames.active = false;
      cpu = cpuUse(cpu0, cpuSnap(pgid));
    },
  };
  const res = await stepScenario(client, adminToken, workers, tasks, plan, sdkCarrier(family, "b", window));
  family.close();
  const p50 = res.step_call.p50_ms;
  const batching =
    carrier === "socket"
      ? batchingStats([...frames.commandsPerFrame, ...meter.commandsPerRequest], [...frames.rttMs, ...meter.rttMs], frames.rttMs, meter.statuses, p50)
      : batchingStats(meter.commandsPerRequest, meter.rttMs, meter.batchRttMs, meter.statuses, p50);
  return { ...res, cpu, cpu_per_step: perStep(cpu, res.steps_completed), batching, batched: true, carrier };
}

/** Repeats of one scenario as one result (mergeSteps), CPU summed, batching samples pooled. */
export function mergeMeasured(parts: Measured[]): Measured {
  const merged = mergeSteps(parts);
  const cpu = sumCpu(parts.map((p) => p.cpu));
  const out: Measured = { ...merged, cpu, cpu_per_step: perStep(cpu, merged.steps_completed), batched: parts[0]!.batched, carrier: parts[0]!.carrier };
  if (parts[0]!.batching !== undefined) {
    const pool = (k: "perRequest" | "rtt" | "batchRtt") => parts.flatMap((p) => p.batching?.samples[k] ?? []);
    const statuses: Record<string, number> = {};
    for (const p of parts) for (const [k, v] of Object.entries(p.batching?.statuses ?? {})) statuses[k] = (statuses[k] ?? 0) + v;
    out.batching = batchingStats(pool("perRequest"), pool("rtt"), pool("batchRtt"), statuses, merged.step_call.p50_ms);
  }
  return out;
}

/** The progress line of one scenario. */
export function stepLine(label: string, r: Measured): string {
  const b = r.batching;
  return (
    `  ${label.padEnd(9)} ${String(r.tasks)} task(s) ${String(r.workers).padStart(2)} workers  ${r.steps_completed}/${r.steps_planned} steps in ${fmt(r.seconds, 2)} s = ${fmt(r.steps_per_s).padStart(7)} steps/s  p50 ${fmt(r.step_call.p50_ms, 2)} ms  p99 ${fmt(r.step_call.p99_ms, 2)} ms` +
    (b === undefined ? "" : r.carrier === "socket" ? `  (${b.batch_requests} frames, ${fmt(b.commands_per_request.mean, 1)} commands/frame, frame p50 ${fmt(b.batch_rtt.p50_ms, 2)} ms)` : `  (${b.requests} requests, ${fmt(b.commands_per_request.mean, 1)} commands/request, request p50 ${fmt(b.http_rtt.p50_ms, 2)} ms)`) +
    `  CPU/step client ${fmt(r.cpu_per_step.client_ms, 2)} server ${fmt(r.cpu_per_step.server_ms, 2)} ms` +
    (r.errors > 0 ? `  errors ${r.errors}: ${r.first_error}` : "") +
    (r.timed_out ? "  TIMED OUT" : "")
  );
}

