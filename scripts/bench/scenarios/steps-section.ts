/** @module bench's steps section: at each concurrency the floor (GET /health/object) interleaved with the unbatched, batch-request and socket step scenarios; then the batch anatomy. */
import type { Client } from "../harness/http-client.js";
import { type CpuUse, cpuSnap, cpuUse } from "../harness/meter.js";
import { errorText, fmt } from "../harness/report.js";
import { type BatchAnatomy, batchAnatomy } from "./anatomy.js";
import { closedLoop, interleaved, type LoadResult } from "./floor.js";
import { type Carrier, type Measured, measuredScenario, mergeMeasured, stepLine } from "./group-commit.js";
import { type Plan, stepScenario } from "./steps.js";

/** The steps section of bench/results.json; socket = batched over the command socket instead of batch requests. */
export interface StepsSection { floor: LoadResult[]; unbatched: Measured[]; batched: Measured[]; socket: Measured[]; anatomy: BatchAnatomy | null; cpu: CpuUse }

/** What runSteps needs of bench's plan; `carriers` (default: all three) and `anatomy` (default: on) narrow the section. */
export interface StepsPlan { http: Plan; groupCommitStepsPerWorker: number; concurrencies: number[]; carriers?: readonly Carrier[]; anatomy?: boolean }

/** Runs the section against `client`'s server (whose process group is `pgid`, for its CPU; null: not measured). */
export async function runSteps(client: Client, adminToken: string, plan: StepsPlan, pgid: number | null): Promise<StepsSection> {
  const http = plan.http;
  const floorRoute = { name: "GET /health/object", op: () => client.call("GET", "/health/object", undefined, undefined, false) };
  const cpu0 = cpuSnap(pgid);
  // Warm the isolate, the objects, the connection pool and the JIT of both paths before measuring.
  const maxC = Math.max(...plan.concurrencies);
  await closedLoop(floorRoute.name, maxC, http.warmupMs, http.maxRequestsPerLevel, floorRoute.op);
  await stepScenario(client, adminToken, Math.min(4, maxC), 1, { ...http, stepsPerWorker: 5, minSteps: 20 });
  const carriers: readonly Carrier[] = plan.carriers ?? ["unbatched", "batched", "socket"];
  for (const carrier of (["batched", "socket"] as const).filter((k) => carriers.includes(k))) await measuredScenario(client, adminToken, Math.min(8, maxC), 1, { ...http, stepsPerWorker: 5, minSteps: 40 }, pgid, carrier);
  const section: StepsSection = { floor: [], unbatched: [], batched: [], socket: [], anatomy: null, cpu: cpuUse(cpu0, cpu0) };
  for (const c of plan.concurrencies) {
    const scenario = (carrier: Carrier) => async (tasks: number) => {
      const m = await measuredScenario(client, adminToken, c, tasks, carrier === "unbatched" ? http : { ...http, stepsPerWorker: plan.groupCommitStepsPerWorker }, pgid, carrier);
      console.log(stepLine(carrier, m));
      return m;
    };
    const { loads, runs } = await interleaved(c, [floorRoute], http, Object.fromEntries(carriers.map((k) => [k, scenario(k)])));
    section.floor.push(...loads);
    for (const tasks of [1, http.multiTasks]) for (const k of carriers) section[k].push(mergeMeasured(runs.get(`${k}${tasks}`)!));
  }
  section.cpu = cpuUse(cpu0, cpuSnap(pgid));
  if (plan.anatomy === false) return section;
  try {
    section.anatomy = await batchAnatomy(client, adminToken, http.repeats > 1 ? 40 : 20);
    const d = section.anatomy.derived;
    console.log(`  batch anatomy (p50 of one batch request): fixed ≈ ${fmt(d.per_request_ms, 2)} ms per request; per command ≈ ${fmt(d.per_progress_command_ms, 3)} ms (progress), ${fmt(d.per_complete_command_ms, 3)} ms (complete + claim_next), of which Idempotency-Key ≈ ${fmt(d.idempotency_key_ms_per_command, 3)} ms`);
  } catch (e) {
    console.log(`  batch anatomy failed: ${errorText(e)}`);
  }
  return section;
}
