/**
 * @module `npm run bench:delegation`: delegated steps whose delegate is a child task, on one server (`wrangler dev`).
 * 1. Settle: N parents, each with one delegated step, one at a time; per sample the child's one step is completed by
 *    a worker and the child is completed; measured from the complete call's answer to the parent's
 *    `task.attempt.completed` for the step, read off the parent's SSE stream. Interleaved with as many plain tasks
 *    whose one step a worker completes, timed the same way (the baseline of the ratio).
 * 2. Fan-out: one parent with W delegated root steps: the create's answer → every child exists; then P drivers
 *    complete the children (dispatch, claim, complete the step, complete the child) → every parent step settled.
 * Writes bench/delegation-results.json.
 */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { defaultAdminToken, reloadCount, withBenchServer } from "../dev-server.js";
import { parseCli, run, wholeOption } from "./harness/cli.js";
import { Client } from "./harness/http-client.js";
import { idleBefore, round, runHeader, sourceState } from "./harness/meter.js";
import { fmt, printTables, writeResults } from "./harness/report.js";
import { fanOutScenario, settleScenario } from "./scenarios/delegation.js";

/** Longest wait for one event on a stream before the sample counts as an error. */
const EVENT_TIMEOUT_MS = 30_000;

run(async () => {
  const usage = "usage: npm run bench:delegation -- [--quick] [--samples 40] [--width 100] [--pool 8] [--url http://127.0.0.1:<port>]\n  --samples: delegated parents (and as many plain tasks) of the settle scenario; --width: delegated steps of the fan-out parent; --pool: its concurrent drivers";
  const cli = parseCli(usage, { quick: false, samples: null as string | null, width: null as string | null, pool: null as string | null, url: null as string | null });
  const plan = {
    samples: wholeOption(cli.samples, "samples", cli.quick ? 10 : 40),
    warmupSamples: cli.quick ? 2 : 5,
    width: wholeOption(cli.width, "width", cli.quick ? 20 : 100),
    pool: wholeOption(cli.pool, "pool", 8),
  };
  const adminToken = defaultAdminToken();
  const loadStart = os.loadavg();
  const source = sourceState();
  const wallStart = performance.now();
  const idle = await idleBefore();
  await withBenchServer(cli.url, {}, async (base, server) => {
    const client = new Client(base);
    const session = await client.session(adminToken);
    const label = `dlg-${Date.now().toString(36)}`;

    // Warm the isolate, the objects' code paths and the connection pool; these samples are dropped.
    await settleScenario(client, session, plan.warmupSamples, `${label}-warm`, EVENT_TIMEOUT_MS);
    console.log(`  settle: ${plan.samples} delegated parents and ${plan.samples} plain tasks, interleaved`);
    const settle = await settleScenario(client, session, plan.samples, label, EVENT_TIMEOUT_MS);
    console.log(`  fan-out: one parent with ${plan.width} delegated steps, ${plan.pool} drivers`);
    // A fresh session: the fan-out's children are the only tasks its index gains meanwhile.
    const fanSession = await client.session(adminToken);
    const fan = await fanOutScenario(client, fanSession, plan.width, plan.pool, label, EVENT_TIMEOUT_MS * 4);

    const reloads = reloadCount(server);
    const results = {
      ...runHeader(cli.quick, loadStart, idle, source),
      server: { url: base, started_by_script: server !== null, startup_ms: server?.startupMs ?? null, log_level: "warn", reloads },
      plan,
      definitions: {
        settle_after_answer: "per delegated parent: performance.now() when this process read the parent's task.attempt.completed event of the delegated step off its SSE stream (GET .../tasks/{tid}/events, opened before the parent was created) − when the child's POST .../complete answer was read; the child's one step was completed by a worker just before",
        plain_after_answer: "per plain task (interleaved with the delegated ones, order swapped every other pair): the same event of its one step − when the worker's POST .../steps/{step}/status (completed) answer was read; the stream had delivered the step's claim first",
        after_answer_negative: "an event read before the answer of the call that caused it counts negative: the server sends both at about the same time (the child reports to its parent from its commit path, before its answer leaves)",
        ratio: "settle_after_send ÷ plain_after_send, percentile by percentile (the after-answer figures hover around zero, so their quotient says nothing)",
        child_created: "the parent's create answered → its delegation's task.dependency.updated event with status active (the child task exists) read off the stream",
        fan_out: "one parent with `width` delegated root steps (each child: one step): all_children_created = the create's answer → the last child's active event; then `pool` drivers each take the next child (dispatch a worker, claim-next, complete the step, complete the child); driver = start → the last complete answered; all_settled = start → the last parent step's task.attempt.completed on the stream; tail = the last complete answered → all settled",
      },
      settle,
      fan_out: fan,
      wall_seconds: round((performance.now() - wallStart) / 1000, 1),
    };

    console.log(`\nDelegation benchmark (${results.mode}) — ${results.machine.cpus} CPUs (${results.machine.cpu_model}), node ${process.version}, load ${results.machine.loadavg_start.join(" ")} → ${results.machine.loadavg_end.join(" ")}`);
    const l = (x: { p50_ms: number; p95_ms: number; p99_ms: number; max_ms: number }) => [fmt(x.p50_ms, 2), fmt(x.p95_ms, 2), fmt(x.p99_ms, 2), fmt(x.max_ms, 2)];
    printTables([
      {
        title: `settle: event read off the parent's stream behind the answer of the call that caused it (${settle.samples} samples each)`,
        headers: ["what", "p50 ms", "p95 ms", "p99 ms", "max ms"],
        rows: [
          ["delegated step settled ← child complete answered", ...l(settle.settle_after_answer_ms)],
          ["  from the complete call's send", ...l(settle.settle_after_send_ms)],
          ["plain step completed ← status call answered", ...l(settle.plain_after_answer_ms)],
          ["  from the status call's send", ...l(settle.plain_after_send_ms)],
          ["the child's complete call itself", ...l(settle.complete_call_ms)],
          ["the plain status call itself", ...l(settle.plain_call_ms)],
          ["child created ← parent create answered", ...l(settle.child_created_ms)],
        ],
      },
    ]);
    console.log(`  settle ÷ plain (from the causing call's send): p50 ${fmt(settle.ratio.p50, 2)}×, p95 ${fmt(settle.ratio.p95, 2)}×, p99 ${fmt(settle.ratio.p99, 2)}×${settle.errors > 0 ? `  errors ${settle.errors}: ${settle.first_error}` : ""}`);
    console.log(`\nfan-out: ${fan.width} delegated steps; all children created ${fmt(fan.all_children_created_ms, 0)} ms after the create (${fmt(fan.children_created_per_s)} children/s; each p50 ${fmt(fan.child_created_ms.p50_ms, 0)} ms); ${fan.delegations_active}/${fan.width} delegations active, ${fan.children_listed}/${fan.width} children in the session's list then`);
    console.log(`  ${fan.pool} drivers completed the children in ${fmt(fan.driver_ms, 0)} ms; all ${fan.width} parent steps settled ${fmt(fan.all_settled_ms, 0)} ms after the start (${fmt(fan.settled_per_s)} settled/s), ${fmt(fan.tail_ms, 1)} ms after the last complete; per child settle behind its complete p50 ${fmt(fan.settle_after_answer_ms.p50_ms, 2)} p95 ${fmt(fan.settle_after_answer_ms.p95_ms, 2)} p99 ${fmt(fan.settle_after_answer_ms.p99_ms, 2)} ms${fan.errors > 0 ? `  errors ${fan.errors}: ${fan.first_error}` : ""}`);
    if (reloads > 0) console.log(`\nnote: the dev server reloaded ${reloads} time(s) during the run (a source file changed): the figures may be skewed`);
    writeResults("bench/delegation-results.json", results, results.wall_seconds);
    if (settle.errors > 0 || fan.errors > 0 || fan.delegations_active !== fan.width) {
      console.log("\nwarning: errors (see the JSON)");
      process.exitCode = 1;
    }
  });
});
