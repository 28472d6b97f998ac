/**
 * A worker token lives as long as its run (docs/api.md "Auth"): once the run has ended (finished, cancelled, timed
 * out) every read and write of its task with it is `401 unauthorized`, `details.reason` run_ended, with the
 * WWW-Authenticate challenge, on every surface (REST, batch, socket frame, MCP), writing nothing; the orchestrator
 * goes on as before.
 */
import { describe, expect, it } from "vitest";
import { call, dispatch, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { expectOk, walExport } from "../support/support.js";
import { COMMAND_SURFACES, through } from "../support/surfaces.js";
import { openSocket } from "../support/test-socket.js";

/** Every read of a task a worker token may make, as paths under the task. */
const READS = ["", "/steps", "/wal", "/summary", "/actions", "/events"];

/** A task whose step `a` a worker run claimed and the orchestrator then cancelled. */
async function cancelledRun(s: TestSession, taskId: string): Promise<{ t: string; w: { token: string; run_id: string } }> {
  const t = await newTask(s, taskId, [step("a"), step("b")]);
  const w = await dispatch(s, t, { agent_id: `w-${taskId}` });
  expectOk(await call("POST", `${t}/steps/claim-next`, w.token, {}));
  // Live, the run reads its WAL.
  expect((await call("GET", `${t}/wal`, w.token)).status).toBe(200);
  expectOk(await call("POST", `${t}/runs/${w.run_id}/cancel`, s.orch, { reason: "changed my mind" }));
  return { t, w };
}

/** The 401 of a spent run token, with its challenge and what it says of the run. */
function expectRunEnded(answer: { status: number | null; body: any; headers?: Headers }, runId: string): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(401);
  expect(answer.body.error).toMatchObject({ code: "unauthorized", details: { reason: "run_ended", run_id: runId, run_status: "cancelled", status_reason: "changed my mind" } });
  if (answer.headers !== undefined) expect(answer.headers.get("www-authenticate")).toBe('Bearer realm="agent-task-runtime"');
}

describe("the token of a worker run that has ended", () => {
  it("Should answer every read of its task with 401 run_ended, and go on serving the orchestrator", async () => {
    const s = await newSession();
    const { t, w } = await cancelledRun(s, "reads");
    for (const read of READS) expectRunEnded(await call("GET", `${t}${read}`, w.token), w.run_id);
    expectRunEnded(await call("GET", `${t}/steps?status=claimed`, w.token), w.run_id);
    expect((await call("GET", `${t}/wal`, s.orch)).status).toBe(200);
  });

  it.each(COMMAND_SURFACES)("Should refuse its commands with 401 run_ended through %s, writing nothing", async (surface) => {
    const s = await newSession();
    const { t, w } = await cancelledRun(s, `writes-${surface}`);
    const before = await walExport(t, s.orch);
    const writes = [
      { method: "POST", path: `${t}/steps/claim-next`, body: {}, tool: "agent.task_claim_next", args: { task_id: `writes-${surface}` } },
      { method: "POST", path: `${t}/steps/a/progress`, body: { summary: "still here" }, tool: "agent.task_progress", args: { task_id: `writes-${surface}`, step_id: "a", summary: "still here" } },
      { method: "POST", path: `${t}/runs/${w.run_id}/finish`, body: { outcome: "finished" }, tool: "finish_worker_run", args: { task_id: `writes-${surface}`, run_id: w.run_id, outcome: "finished" } },
    ];
    for (const write of writes) {
      // A socket of its own cannot be opened with the spent token (see below); the orchestrator's carries its frames.
      const answer = surface === "socket" ? await socketCommand(t, s.orch, w.token, write) : await through(surface, t, w.token, write);
      expectRunEnded(answer, w.run_id);
    }
    expect(await walExport(t, s.orch)).toBe(before);
  });

  it("Should refuse a command socket to it (401 run_ended) and a retry of its own earlier command", async () => {
    const s = await newSession();
    const t = await newTask(s, "retry", [step("a")]);
    const w = await dispatch(s, t, { agent_id: "w-retry" });
    const claim = await call("POST", `${t}/steps/claim-next`, w.token, {}, { "idempotency-key": "claim-1" });
    expectOk(claim);
    expectOk(await call("POST", `${t}/runs/${w.run_id}/cancel`, s.orch, { reason: "changed my mind" }));
    // A spent token gets nothing, a stored answer included (as an expired one gets nothing).
    expectRunEnded(await call("POST", `${t}/steps/claim-next`, w.token, {}, { "idempotency-key": "claim-1" }), w.run_id);
    const upgrade = await call("GET", `${t}/socket`, w.token, undefined, { upgrade: "websocket" });
    expectRunEnded(upgrade, w.run_id);
  });
});

/** One command of `workerToken` in a frame over a socket the orchestrator opened. */
async function socketCommand(t: string, socketToken: string, workerToken: string, write: { method: string; path: string; body: unknown }) {
  const socket = await openSocket(t, socketToken);
  const frame = await socket.ask({ id: 1, commands: [{ token: workerToken, method: write.method, path: write.path, body: write.body }] });
  socket.ws.close(1000);
  const r = frame.results[0];
  return { status: r.status as number, body: r.body };
}
