/** @module bench's growth section: one worker, unbatched, the first steps of DAGs of growing size, and a GET of the view. */
import { performance } from "node:perf_hooks";
import { type Client, stepsOf } from "../harness/http-client.js";
import { errorCount, round, stats } from "../harness/meter.js";

/** One DAG size: one worker, so the per-step cost is the step call's latency; view_get = warm GETs of the task view after the steps. */
export type GrowthResult = Awaited<ReturnType<typeof growthScenario>>;

/** `measured` steps of one worker on DAGs of `size` steps (tasks of fewer steps are repeated until that many). */
export async function growthScenario(client: Client, adminToken: string, size: number, measured: number, timeoutMs: number, viewGets: number) {
  const session = await client.session(adminToken);
  const orch = session.orch;
  const perTask = Math.min(size, measured);
  const taskCount = Math.ceil(measured / perTask);
  const stepLat: number[] = [];
  const claimLat: number[] = [];
  const createLat: number[] = [];
  let bodyBytes = 0;
  let seconds = 0;
  const errors = errorCount();
  const deadline = performance.now() + timeoutMs;
  const taskPaths: string[] = [];
  for (let t = 0; t < taskCount && performance.now() < deadline; t++) {
    const tid = `grow-${size}-${t}`;
    const fields = { title: `Growth ${size}`, steps: stepsOf(size, "compact") };
    // The create request's body as Client.task sends it.
    bodyBytes = JSON.stringify({ task_id: tid, wal_name: tid, summary: "", ...fields }).length;
    const { path: taskPath, created } = await client.task(session, tid, fields);
    createLat.push(created.ms);
    taskPaths.push(taskPath);
    const d = await client.must(201, "POST", `${taskPath}/workers`, orch, { agent_id: `grow-w${t}`, max_steps: perTask });
    const token: string = d.body.token;
    const t0 = performance.now();
    const claim = await client.call("POST", `${taskPath}/steps/claim-next`, token, {});
    if (claim.status !== 200 || claim.body.step === undefined) {
      errors.note(`claim-next ${claim.status}: ${JSON.stringify(claim.body).slice(0, 200)}`);
      continue;
    }
    claimLat.push(claim.ms);
    let current: string | null = claim.body.step.step_id;
    let done = 0;
    let last = t0;
    while (current !== null && done < perTask && performance.now() < deadline) {
      const a = await client.call("POST", `${taskPath}/steps/${current}/status`, token, { status: "completed", result_summary: "done", claim_next: done + 1 < perTask });
      if (a.status !== 200) {
        errors.note(`status ${a.status}: ${JSON.stringify(a.body).slice(0, 200)}`);
        break;
      }
      stepLat.push(a.ms);
      last = performance.now();
      done++;
      current = a.body.next?.step?.step_id ?? null;
    }
    seconds += (last - t0) / 1000;
    const f = await client.call("POST", `${taskPath}/runs/${d.body.run_id}/finish`, token, { outcome: "finished" });
    if (f.status !== 200) errors.note(`finish ${f.status}: ${JSON.stringify(f.body).slice(0, 200)}`);
  }
  const viewLat: number[] = [];
  let viewBytes = 0;
  let verified = 0;
  for (const [i, taskPath] of taskPaths.entries()) {
    verified += await client.completedOnServer(taskPath, orch);
    if (i === 0) {
      const view = await client.must(200, "GET", taskPath, orch);
      viewBytes = JSON.stringify(view.body).length;
      for (let g = 0; g < viewGets; g++) viewLat.push((await client.must(200, "GET", taskPath, orch)).ms);
    }
  }
  return {
    dag_steps: size, tasks: taskPaths.length, steps_measured: stepLat.length, seconds: round(seconds), steps_per_s: round(stepLat.length / seconds, 1), step_call: stats(stepLat), claim_next: stats(claimLat),
    create_task_ms: stats(createLat), create_body_bytes: bodyBytes, view_get: stats(viewLat), view_bytes: viewBytes, ...errors.fields(), verified_completed_on_server: verified,
  };
}

