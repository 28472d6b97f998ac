/**
 * End to end through SELF.fetch: an orchestrator runs a fan-out/fan-in DAG with three pooled workers, closes
 * the task, and the exported WAL replays (pure core) into exactly the DAG the service serves.
 */
import { describe, expect, it } from "vitest";
import { replay, taskReadModel, taskView } from "../../../src/core/index.js";
import { call, newSession, step } from "../../support/helpers.js";
import { eventually, expectOk, parseWal, walText } from "../../support/support.js";

type Worker = { token: string; run_id: string; agent_id: string };

describe("fan-out / fan-in task, end to end", () => {
  it("Should run plan → 3 research steps → synthesis with three pooled workers and replay the WAL to the served DAG", async () => {
    const s = await newSession();
    const sessionPath = `/v1/sessions/${s.sid}`;

    // The orchestrator plans the DAG: research-c is optional and in a pool nobody serves.
    const created = expectOk(
      await call("POST", `${sessionPath}/tasks`, s.orch, {
        task_id: "report",
        wal_name: "report",
        title: "Market report",
        summary: "Plan, research three angles, write the synthesis",
        objective: "A two-page report",
        steps: [
          step("plan"),
          step("research-a", ["plan"]),
          step("research-b", ["plan"]),
          step("research-c", ["plan"], { required: false, worker_pool_id: "slow" }),
          step("synthesis", ["research-a", "research-b"]),
        ],
      }),
      201,
    );
    expect(created.task).toMatchObject({ status: "running", total_steps: 5 });
    const t = `${sessionPath}/tasks/report`;

    const workers: Worker[] = [];
    for (const name of ["w1", "w2", "w3"]) {
      const res = expectOk(await call("POST", `${t}/workers`, s.orch, { agent_id: name, max_steps: 5 }), 201);
      workers.push({ token: res.token, run_id: res.run_id, agent_id: res.agent_id });
    }

    /** Nothing left for the default pool: no pending, ready, claimed or running step in it. */
    const poolDrained = async () => {
      const page = expectOk(await call("GET", `${t}/steps?worker_pool_id=default`, s.orch));
      return page.total === 0;
    };

    // Each worker: claim-next; complete with claim_next:true while that hands it another step; when nothing
    // is claimable, wait for the others unless the pool is drained; then finish the run.
    const work = async (w: Worker): Promise<string[]> => {
      const done: string[] = [];
      for (let rounds = 0; rounds < 200; rounds++) {
        const claim = expectOk(await call("POST", `${t}/steps/claim-next`, w.token));
        if (claim.no_step_claimed === true) {
          if (await poolDrained()) break;
          await new Promise((r) => setTimeout(r, 5));
          continue;
        }
        let current: string | undefined = claim.step.step_id;
        while (current !== undefined) {
          expectOk(await call("POST", `${t}/steps/${current}/status`, w.token, { status: "running" }));
          expectOk(await call("POST", `${t}/steps/${current}/progress`, w.token, { phase: "work", summary: `working on ${current}` }));
          const update = expectOk(
            await call("POST", `${t}/steps/${current}/status`, w.token, { status: "completed", result_summary: `${current} by ${w.agent_id}`, artifact_ids: [`r2://report/${current}.md`], claim_next: true }),
          );
          done.push(current);
          expect(update.next).toBeDefined();
          current = update.next.step?.step_id;
          if (current === undefined) expect(update.next).toMatchObject({ no_step_claimed: true });
        }
      }
      expectOk(await call("POST", `${t}/runs/${w.run_id}/finish`, w.token, { outcome: "finished", result: { steps: done } }));
      return done;
    };
    const byWorker = await Promise.all(workers.map(work));
    const claimedSteps = byWorker.flat();
    expect([...claimedSteps].sort()).toEqual(["plan", "research-a", "research-b", "synthesis"]);

    const closing = expectOk(await call("POST", `${t}/complete`, s.orch, { reason: "report written" }));
    expect(closing.task).toMatchObject({ status: "completed", active_runs: 0 });

    // The served DAG: one completed attempt per claimed step; the unserved optional step was cancelled.
    const served = expectOk(await call("GET", t, s.observer));
    expect(served.task).toMatchObject({ status: "completed", status_reason: "report written", ended_at: expect.any(String), root_step_ids: ["plan"] });
    expect(served.attempts).toHaveLength(4);
    for (const id of claimedSteps) {
      const st = served.steps.find((x: any) => x.step_id === id);
      expect(st).toMatchObject({ status: "completed", attempt_ids: [expect.any(String)], artifact_ids: [`r2://report/${id}.md`], claimed_by_run_id: null });
      const attempt = served.attempts.find((a: any) => a.attempt_id === st.attempt_ids[0]);
      expect(attempt).toMatchObject({ step_id: id, status: "completed", ordinal: 1, ended_at: expect.any(String) });
      expect(st.result_summary).toBe(`${id} by ${attempt.agent_id}`);
    }
    expect(served.steps.find((x: any) => x.step_id === "research-c")).toMatchObject({ status: "cancelled", status_reason: "optional_step_cancelled_on_task_complete", attempt_ids: [] });
    expect(served.runs).toHaveLength(3);
    for (const run of served.runs) {
      expect(run).toMatchObject({ status: "finished", current_step_id: null, max_steps: 5 });
      expect(run.result).toEqual({ steps: byWorker[workers.findIndex((w) => w.run_id === run.run_id)] });
    }
    expect(served.diagnostics).toEqual({ completeable: false, stalled: false });

    // The task list shows it only once terminal tasks are asked for.
    await eventually(async () => {
      const active = expectOk(await call("GET", `${sessionPath}/tasks`, s.orch));
      expect(active.tasks.map((x: any) => x.task_id)).not.toContain("report");
      const all = expectOk(await call("GET", `${sessionPath}/tasks?include_terminal=true`, s.orch));
      expect(all.tasks).toEqual([expect.objectContaining({ task_id: "report", terminal: true, native_status: "completed", status: "completed", wal_seq: served.wal_seq })]);
    });

    // The exported WAL replays, in the pure core, into exactly the DAG the service serves.
    const wal = await walText(t, s.observer);
    expect(wal.status).toBe(200);
    expect(wal.headers.get("content-type")).toContain("application/x-ndjson");
    const events = parseWal(wal.text);
    expect(events.map((e) => e.wal_seq)).toEqual(Array.from({ length: served.wal_seq }, (_, i) => i + 1));
    const replayed = replay(events);
    const rebuilt = { ...taskView(replayed), snapshot: taskReadModel(replayed) };
    const plain = JSON.parse(JSON.stringify(rebuilt));
    expect(plain.task).toEqual(served.task);
    expect(plain.steps).toEqual(served.steps);
    expect(plain.attempts).toEqual(served.attempts);
    expect(plain.runs).toEqual(served.runs);
    expect(plain).toEqual(served);

    // Every event's actor is the token's identity: the orchestrator, a worker, or the system.
    const actors = new Set(events.map((e) => e.actor_agent_id));
    for (const a of actors) expect(["orchestrator", "w1", "w2", "w3", "system"]).toContain(a);
    expect(events.filter((e) => e.event_type === "task_step_claimed")).toHaveLength(4);
    expect(events.at(-1)).toMatchObject({ event_type: "task_completed", actor_agent_id: "orchestrator" });
  });
});
