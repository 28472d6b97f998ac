/**
 * @module `npm run bench:webhooks`: signed webhook deliveries (docs/api.md "Delivery and notifications") against one
 * `wrangler dev`, received by a node:http receiver on loopback in this process that verifies each with the
 * `standardwebhooks` library.
 * 0. Unloaded: one subscription, one step completed at a time, its delivery awaited: commit → delivery, nothing queued.
 * 1. Latency: a session with 100 subscriptions (each to task.attempt.completed and task.completed), one task of N
 *    steps worked by 8 concurrent worker runs, then completed; per delivery, its arrival at the receiver − when this
 *    process read the answer of the call that committed its event; every delivery owed must arrive, verified, once.
 * 2. Write-path cost: the same run in sessions with 0, 1 and 100 subscriptions, in interleaved rounds; steps/s and
 *    step call latency of each, and the ratio with ÷ without subscriptions.
 * Writes bench/webhooks-results.json.
 */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { defaultAdminToken, serverErrors, reloadCount, withBenchServer } from "../dev-server.js";
import { parseCli, run, wholeOption } from "./harness/cli.js";
import { Client } from "./harness/http-client.js";
import { idleBefore, round, runHeader, sourceState } from "./harness/meter.js";
import { errorText, fmt, printTables, writeResults } from "./harness/report.js";
import { WebhookReceiver } from "./harness/webhook-receiver.js";
import { costTable, latencyTable } from "./scenarios/webhook-tables.js";
import { type HookPlan, type HookRun, hookRun, pooledCost, runProblem, SUBSCRIBED_EVENTS, unloadedLatency } from "./scenarios/webhooks.js";

const USAGE =
  "usage: npm run bench:webhooks -- [--quick] [--steps 400] [--subscriptions 100] [--workers 8] [--rounds 3] [--url http://127.0.0.1:<port>]\n" +
  "  --steps: steps of each run's task; --subscriptions: of the latency run and of the cost rounds' busiest variant (at most 100, a session's cap); --rounds: of each cost variant";

run(async () => {
  const cli = parseCli(USAGE, { quick: false, steps: null as string | null, subscriptions: null as string | null, workers: null as string | null, rounds: null as string | null, url: null as string | null });
  const steps = wholeOption(cli.steps, "steps", cli.quick ? 100 : 400);
  const subscriptions = wholeOption(cli.subscriptions, "subscriptions", 100);
  const workers = wholeOption(cli.workers, "workers", 8);
  const rounds = wholeOption(cli.rounds, "rounds", cli.quick ? 1 : 3);
  const variants = [...new Set([0, 1, subscriptions])];
  const plan = { steps, subscriptions, workers, rounds, variants, events: SUBSCRIBED_EVENTS, warmup_steps: 40, unloaded_samples: cli.quick ? 20 : 50, timeout_ms: 600_000, stall_ms: 30_000 };
  const adminToken = defaultAdminToken();
  const loadStart = os.loadavg();
  const source = sourceState();
  const wallStart = performance.now();
  const idle = await idleBefore();
  const receiver = await WebhookReceiver.start();
  try {
    await withBenchServer(cli.url, {}, async (base, server) => {
      const client = new Client(base);
      const pgid = server?.child?.pid ?? null;
      const runPlan = (subs: number, n = steps): HookPlan => ({ subscriptions: subs, steps: n, workers, timeoutMs: plan.timeout_ms, stallMs: plan.stall_ms });
      const say = (what: string, r: HookRun) =>
        console.log(
          `  ${what}: ${r.steps_completed}/${r.steps_planned} steps in ${fmt(r.seconds, 2)} s = ${fmt(r.steps_per_s)} steps/s, step p50/p99 ${fmt(r.step_call.p50_ms, 2)}/${fmt(r.step_call.p99_ms, 2)} ms; ` +
            `deliveries ${r.delivery.received}/${r.delivery.expected}${r.subscriptions > 0 ? ` (p50 ${fmt(r.delivery.after_answer_ms.p50_ms, 1)} ms, p99 ${fmt(r.delivery.after_answer_ms.p99_ms, 1)} ms behind the answer, tail ${fmt(r.delivery.tail_ms, 0)} ms)` : ""}` +
            `${r.subscriptions > 0 ? `; ${r.receiver_connections.accepted} connections (${r.receiver_connections.max_open} open at most)` : ""}${r.errors > 0 ? `  errors ${r.errors}: ${r.first_error}` : ""}${r.delivery.stalled ? "  STALLED" : ""}`,
        );

      /** A run that throws (a call refused or timed out) is recorded, and no further run starts: the server may be stuck. */
      const failures: { run: string; error: string }[] = [];
      const attempt = async (what: string, group: string, p: HookPlan): Promise<HookRun | null> => {
        if (failures.length > 0) return null;
        try {
          const r = await hookRun(client, adminToken, receiver, group, p, pgid);
          say(what, r);
          return r;
        } catch (e) {
          failures.push({ run: group, error: errorText(e) });
          console.log(`  ${what}: FAILED: ${errorText(e)}; no further run starts`);
          return null;
        }
      };

      // Warm the isolate, the objects' code paths, the connection pools and the receiver; dropped.
      await attempt("warm-up", "warm", runPlan(2, plan.warmup_steps));
      console.log(`unloaded: 1 subscription, ${plan.unloaded_samples} steps one at a time, each delivery awaited`);
      let unloaded: Awaited<ReturnType<typeof unloadedLatency>> | null = null;
      try {
        unloaded = await unloadedLatency(client, adminToken, receiver, "unloaded", plan.unloaded_samples, plan.stall_ms);
        console.log(`  delivery behind the answer p50 ${fmt(unloaded.after_answer_ms.p50_ms, 1)} ms, p99 ${fmt(unloaded.after_answer_ms.p99_ms, 1)} ms${unloaded.errors > 0 ? `  errors ${unloaded.errors}: ${unloaded.first_error}` : ""}`);
      } catch (e) {
        failures.push({ run: "unloaded", error: errorText(e) });
      }
      console.log(`latency: ${subscriptions} subscriptions, one task of ${steps} steps, ${workers} workers`);
      const latency = await attempt(`${subscriptions} subscriptions`, "latency", runPlan(subscriptions));
      // A run whose deliveries stalled may have left the server stuck: the cost rounds would measure that.
      if (latency?.delivery.stalled === true) failures.push({ run: "latency", error: `deliveries stalled: ${latency.delivery.received}/${latency.delivery.expected} arrived, then none for ${plan.stall_ms / 1000} s` });

      console.log(`write-path cost: ${variants.join(" / ")} subscriptions, ${rounds} interleaved round(s)`);
      const cost = new Map<number, HookRun[]>(variants.map((v) => [v, []]));
      for (let r = 0; r < rounds; r++) {
        for (const v of variants) {
          const res = await attempt(`round ${r + 1}, ${String(v).padStart(3)} subscriptions`, `cost-${r}-${v}`, runPlan(v));
          if (res !== null) cost.get(v)!.push(res);
          if (res?.delivery.stalled === true) failures.push({ run: `cost-${r}-${v}`, error: `deliveries stalled: ${res.delivery.received}/${res.delivery.expected} arrived, then none for ${plan.stall_ms / 1000} s` });
        }
      }
      const { pooled, ratios } = pooledCost(cost);
      const all = [latency, ...[...cost.values()].flat()].filter((r): r is HookRun => r !== null);
      const problems = all.filter(runProblem);
      const incidents = await serverErrors(server);
      const reloads = reloadCount(server);
      const strip = ({ step_call_samples: _, ...r }: HookRun) => r;
      const results = {
        ...runHeader(cli.quick, loadStart, idle, source),
        server: { url: base, started_by_script: server !== null, startup_ms: server?.startupMs ?? null, log_level: "warn", reloads },
        receiver: { url: receiver.base, in_process: true, verifier: "standardwebhooks Webhook.verify, one instance per subscription's secret; answers 204" },
        plan,
        definitions: {
          commit_to_delivery: "per verified delivery: performance.now() when the receiver (node:http in this process) had read the delivery's whole body − performance.now() when this process had read the whole answer of the write that committed its event; the event is matched to the write by id: the delivery's data.eventId (up to a `.k` suffix) is one of that answer's event_ids. The write of a task.attempt.completed is the worker's POST .../steps/{step}/status (completed, claim_next); of task.completed the orchestrator's POST .../complete. Negative when a delivery arrived before its answer was read (a commit sends a delivery due at once from its own path)",
          commit_to_delivery_from_send: "the same from when that write was sent",
          unloaded: "commit_to_delivery with nothing queued: one subscription, one worker run completing one step at a time (status completed, claim_next), the step's delivery awaited before the next step",
          expected: "subscriptions × (steps completed + 1): each subscription takes every task.attempt.completed and the task.completed of the run's task",
          received: "verified deliveries, the first of each webhook-id; duplicate_webhook_ids = verified deliveries of a webhook-id seen before; duplicate_events = a subscription's event received under a second webhook-id; out_of_order = a delivery whose data.sequence is lower than one its subscription received before; rejected = answered 400 (not verified) or 404",
          unmatched: "verified deliveries whose event id was in no answer this process read; wrong_step: a task.attempt.completed whose stepId is not the step its write completed",
          tail_ms: "the last delivery's arrival − the task's complete answer read (when the runtime had finished sending what the run owed)",
          deliveries_per_s: "deliveries received ÷ (the last arrival − the run's first answer read)",
          steps_per_s: "steps completed ÷ (the first claim's send → the last status answer read), the runs' dispatch and finish and the task's create and complete outside the window; in the cost rounds every delivery owed by one run arrived (or stalled 30 s) before the next run started",
          receiver_connections: "TCP connections the receiver accepted during a run (the runtime's reuse of connections: deliveries ÷ accepted), and the most open at once, sampled every 100 ms",
          server_cpu_ms_per_step: "the dev server process group's CPU (/proc) ÷ steps: over the measured window, and until the last delivery arrived",
          ratio: "pooled steps/s (steps ÷ seconds over the rounds) with subscriptions ÷ without; each round's too; step call p50 and p99 with ÷ without",
        },
        unloaded,
        latency: latency === null ? null : strip(latency),
        cost: { rounds: Object.fromEntries([...cost].map(([v, rs]) => [String(v), rs.map(strip)])), pooled, ratios },
        problems: problems.length,
        failures,
        /** Error lines in the dev server's log (the runtime's incidents, workerd's errors), by kind. */
        server_errors: incidents,
        wall_seconds: round((performance.now() - wallStart) / 1000, 1),
      };

      console.log(`\nWebhook benchmark (${results.mode}) — ${results.machine.cpus} CPUs (${results.machine.cpu_model}), node ${process.version}, load ${results.machine.loadavg_start.join(" ")} → ${results.machine.loadavg_end.join(" ")}, idle before ${fmt(idle * 100, 0)}%`);
      printTables([...(latency === null ? [] : [latencyTable(latency, unloaded)]), ...(pooled.length === 0 ? [] : [costTable(pooled, ratios, steps, workers, rounds)])]);
      for (const f of failures) console.log(`\nFAILED ${f.run}: ${f.error}`);
      for (const i of incidents) console.log(`server log: ${i.count} × ${i.error}`);
      if (reloads > 0) console.log(`\nnote: the dev server reloaded ${reloads} time(s) during the run (a source file changed): the figures may be skewed`);
      writeResults("bench/webhooks-results.json", results, results.wall_seconds);
      if (problems.length > 0) console.log(`\nwarning: ${problems.length} run(s) with errors, missing, duplicated, rejected or unmatched deliveries (see the JSON)`);
      if (problems.length > 0 || failures.length > 0 || incidents.length > 0 || (unloaded?.errors ?? 0) > 0) process.exitCode = 1;
    });
  } finally {
    await receiver.close();
  }
}, true);
