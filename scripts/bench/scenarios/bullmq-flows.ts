/** @module BullMQ's flows (FlowProducer, fan-in): one parent and 100 children, and many small flows; children and parent share one queue and its workers. */
import { performance } from "node:perf_hooks";
import { FlowProducer } from "bullmq";
import { sleep } from "../../dev-server.js";
import { errorCount, round, stats } from "../harness/meter.js";
import { latch, within } from "../harness/waits.js";
import type { WorkerModel } from "./bullmq.js";
import { connection, type Ctx, newWorker, stepData } from "./bullmq-jobs.js";

/** Workers of one queue that holds both the children and the parents of the flows. */
function flowWorkers(ctx: Ctx, model: WorkerModel, queueName: string, prefix: string, autorun: boolean) {
  const errors = errorCount();
  const fw = { workers: [] as ReturnType<typeof newWorker>[], takeLat: [] as number[], parentTake: [] as number[], childTake: [] as number[], childrenDone: new Map<number, { count: number; lastAt: number }>(), parentDone: new Map<number, number>(), onParent: (_flow: number) => {}, errors: errors.fields };
  const concs = model === "concurrency" ? [ctx.plan.flowWorkers] : Array.from({ length: ctx.plan.flowWorkers }, () => 1);
  for (const concurrency of concs) {
    const w = newWorker(ctx, queueName, prefix, concurrency, autorun, errors, (job, now, t) => {
      const flow = (job.data as { flow: number }).flow;
      if (t !== undefined) {
        fw.takeLat.push(now - t);
        (job.name === "parent" ? fw.parentTake : fw.childTake).push(now - t);
      }
      if (job.name === "parent") {
        fw.parentDone.set(flow, now);
        fw.onParent(flow);
      } else {
        const c = fw.childrenDone.get(flow) ?? { count: 0, lastAt: 0 };
        c.count++;
        c.lastAt = now;
        fw.childrenDone.set(flow, c);
      }
    });
    fw.workers.push(w);
  }
  return fw;
}

function flowOf(queueName: string, flow: number, children: number) {
  const opts = { removeOnComplete: false };
  return { name: "parent", queueName, data: { flow, title: `Fan-in ${flow}`, summary: "Parent of the flow" }, opts, children: Array.from({ length: children }, (_, i) => ({ name: "child", queueName, data: { flow, ...stepData(i) }, opts })) };
}

/** Flows of 1 + bigFlowChildren at flowWorkers workers, one at a time: per run the FlowProducer.add round trip, add start → parent completed, last child → parent completed. */
export async function bigFlows(ctx: Ctx, model: WorkerModel) {
  const { plan } = ctx;
  const prefix = ctx.nextPrefix();
  const producer = ctx.track(new FlowProducer(connection(ctx, prefix)));
  await producer.waitUntilReady();
  const fw = flowWorkers(ctx, model, "flow-big", prefix, true);
  await Promise.all(fw.workers.map((w) => w.waitUntilReady()));
  await sleep(50);
  const runs: { add_ms: number; total_ms: number; fan_in_ms: number; children_completed: number }[] = [];
  let timedOut = false;
  // Flow 0 is a small warm-up (scripts loaded, connections and JIT warm); flows 1..R are measured.
  for (let flow = 0; flow <= plan.bigFlowRepeats; flow++) {
    const done = latch();
    fw.onParent = (f) => {
      if (f === flow) done.open();
    };
    const t = performance.now();
    await producer.add(flowOf("flow-big", flow, flow === 0 ? 4 : plan.bigFlowChildren));
    const added = performance.now();
    if ((timedOut = (await within(done.promise, plan.scenarioTimeoutMs)) === "timeout")) break;
    const end = fw.parentDone.get(flow)!;
    const c = fw.childrenDone.get(flow);
    if (flow > 0) runs.push({ add_ms: round(added - t), total_ms: round(end - t), fan_in_ms: round(end - (c?.lastAt ?? end)), children_completed: c?.count ?? 0 });
    await sleep(20);
  }
  await Promise.all(fw.workers.map((w) => w.close()));
  await producer.close();
  await ctx.admin.flushall();
  const of = (k: "total_ms" | "add_ms" | "fan_in_ms") => stats(runs.map((r) => r[k]));
  // take_to_ack: per job, processor → completed event, children and parents pooled.
  return { workers: plan.flowWorkers, children: plan.bigFlowChildren, runs, total: of("total_ms"), add: of("add_ms"), fan_in: of("fan_in_ms"), take_to_ack: stats(fw.takeLat), timed_out: timedOut, ...fw.errors() };
}

/** smallFlows flows of 1 + smallFlowChildren pre-added, then flowWorkers workers: flows/s. */
export async function smallFlows(ctx: Ctx, model: WorkerModel) {
  const { plan } = ctx;
  const prefix = ctx.nextPrefix();
  const producer = ctx.track(new FlowProducer(connection(ctx, prefix)));
  await producer.waitUntilReady();
  const t = performance.now();
  // Added in chunks of 100 flows (one MULTI each), like a user adding a batch.
  for (let start = 0; start < plan.smallFlows; start += 100) {
    await producer.addBulk(Array.from({ length: Math.min(100, plan.smallFlows - start) }, (_, i) => flowOf("flow-small", start + i, plan.smallFlowChildren)));
  }
  const addMs = performance.now() - t;
  const fw = flowWorkers(ctx, model, "flow-small", prefix, false);
  await Promise.all(fw.workers.map((w) => w.waitUntilReady()));
  const all = latch();
  let lastParentAt = 0;
  fw.onParent = () => {
    lastParentAt = performance.now();
    if (fw.parentDone.size >= plan.smallFlows) all.open();
  };
  const t0 = performance.now();
  const runs = fw.workers.map((w) => w.run().catch(() => {}));
  const timedOut = (await within(all.promise, plan.scenarioTimeoutMs)) === "timeout";
  const seconds = ((lastParentAt || performance.now()) - t0) / 1000;
  await Promise.all(fw.workers.map((w) => w.close()));
  await Promise.all(runs);
  await producer.close();
  await ctx.admin.flushall();
  const jobs = fw.takeLat.length;
  return {
    workers: plan.flowWorkers, flows: plan.smallFlows, children_per_flow: plan.smallFlowChildren, add_bulk_ms: round(addMs, 1), flows_completed: fw.parentDone.size, jobs_completed: jobs, seconds: round(seconds),
    flows_per_s: round(fw.parentDone.size / seconds, 1), jobs_per_s: round(jobs / seconds, 1), take_to_ack_children: stats(fw.childTake), take_to_ack_parents: stats(fw.parentTake), timed_out: timedOut, ...fw.errors(),
  };
}
