/** @module bench's steps section: at each concurrency the floor (GET /health/object, half before and half after) and the unbatched, batch-request and socket step scenarios in turn, repeated with their order rotated, so each comparison sees the same machine load; then the batch anatomy. */
import type { Answer, Client } from "../harness/http-client.js";
import { type CpuUse, cpuSnap, cpuUse } from "../harness/meter.js";
import { errorText, fmt } from "../harness/report.js";
import { type BatchAnatomy, batchAnatomy } from "./anatomy.js";
import { closedLoop, type LoadResult, loadLine, mergeLoads } from "./floor.js";
import { batchedScenario, type Carrier, type Measured, mergeMeasured, stepLine, strip, unbatchedScenario } from "./group-commit.js";
import { type Plan, stepScenario } from "./steps.js";

/** The steps section of bench/results.json. */
export interface StepsSection {
  floor: LoadResult[];
  unbatched: Omit<Measured, "samples">[];
  batched: Omit<Measured, "samples">[];
  /** Batched over the command socket instead of batch requests. */
  socket: Omit<Measured, "samples">[];
  anatomy: BatchAnatomy | null;
  cpu: CpuUse;
}

/** What runSteps needs of bench's plan. */
export interface StepsPlan { http: Plan; groupCommitStepsPerWorker: number; concurrencies: number[] }

/** Runs the section against `client`'s server (whose process group is `pgid`, for its CPU; null: not measured). */
export async function runSteps(client: Client, adminToken: string, plan: StepsPlan, pgid: number | null): Promise<StepsSection> {
  const http = plan.http;
  const base = client.base;
  const floorOp = (): Promise<Answer> => client.call("GET", "/health/object", undefined, undefined, false);
  const cpu0 = cpuSnap(pgid);
  // Warm the isolate, the objects, the connection pool and the JIT of both paths before measuring.
  const maxC = Math.max(...plan.concurrencies);
  await closedLoop("GET /health/object", maxC, http.warmupMs, http.maxRequestsPerLevel, floorOp);
  await stepScenario(client, adminToken, Math.min(4, maxC), 1, { ...http, stepsPerWorker: 5, minSteps: 20 });
  await batchedScenario(client, base, adminToken, Math.min(8, maxC), 1, { ...http, stepsPerWorker: 5, minSteps: 40 }, pgid);
  await batchedScenario(client, base, adminToken, Math.min(8, maxC), 1, { ...http, stepsPerWorker: 5, minSteps: 40 }, pgid, "socket");

  const floor: LoadResult[] = [];
  const unbatched: Measured[] = [];
  const batched: Measured[] = [];
  const socket: Measured[] = [];
  const carriers: readonly Carrier[] = ["unbatched", "batched", "socket"];
  for (const c of plan.concurrencies) {
    // Interleaved: the floor half before and half after, the step scenarios in turn within each repeat,
    // so each comparison sees the same machine load.
    const halves: LoadResult[] = [];
    const measureFloor = async () => {
      const res = await closedLoop("GET /health/object", c, http.floorMs / 2, http.maxRequestsPerLevel / 2, floorOp);
      halves.push(res);
      console.log(loadLine("floor     GET /health/object", res));
    };
    await measureFloor();
    const parts = new Map<string, Measured[]>();
    const push = (k: string, m: Measured) => parts.set(k, [...(parts.get(k) ?? []), m]);
    for (let repeat = 0; repeat < http.repeats; repeat++) {
      for (const tasks of [1, http.multiTasks]) {
        // The order of the carriers rotates between repeats, so none always runs on a fresher machine.
        for (let k = 0; k < carriers.length; k++) {
          const carrier = carriers[(k + repeat) % carriers.length]!;
          const m =
            carrier === "unbatched"
              ? await unbatchedScenario(client, adminToken, c, tasks, http, pgid)
              : await batchedScenario(client, base, adminToken, c, tasks, { ...http, stepsPerWorker: plan.groupCommitStepsPerWorker }, pgid, carrier);
          console.log(stepLine(carrier, m));
          push(`${carrier}${tasks}`, m);
        }
      }
    }
    await measureFloor();
    const f = mergeLoads(halves);
    delete f.samples;
    floor.push(f);
    for (const tasks of [1, http.multiTasks]) {
      unbatched.push(mergeMeasured(parts.get(`unbatched${tasks}`)!));
      batched.push(mergeMeasured(parts.get(`batched${tasks}`)!));
      socket.push(mergeMeasured(parts.get(`socket${tasks}`)!));
    }
  }
  const cpu = cpuUse(cpu0, cpuSnap(pgid));
  let anatomy: BatchAnatomy | null = null;
  try {
    anatomy = await batchAnatomy(client, adminToken, http.repeats > 1 ? 40 : 20);
    const d = anatomy.derived;
    console.log(`  batch anatomy (p50 of one batch request): fixed ≈ ${fmt(d.per_request_ms, 2)} ms per request; per command ≈ ${fmt(d.per_progress_command_ms, 3)} ms (progress), ${fmt(d.per_complete_command_ms, 3)} ms (complete + claim_next), of which Idempotency-Key ≈ ${fmt(d.idempotency_key_ms_per_command, 3)} ms`);
  } catch (e) {
    console.log(`  batch anatomy failed: ${errorText(e)}`);
  }
  return { floor, unbatched: unbatched.map(strip), batched: batched.map(strip), socket: socket.map(strip), anatomy, cpu };
}

