/**
 * @module `npm run bench:a2a`: the A2A facade on one server (`wrangler dev`).
 * 1. Submit: A2A SendMessage (returnImmediately) from the official client against the REST create-task call
 *    (`steps: []`, as the orchestrator) and the floor (GET /health/object), at 1 and 8 concurrent clients; rounds
 *    interleaved (order reversed every other pair), ratios of rounds of the same pair.
 * 2. Follow: S SubscribeToTask streams (official client) on one task while W workers complete its N steps; lag of
 *    each stream's artifactUpdate behind the acknowledgement of the call that completed the step; every stream
 *    must carry every step's artifact once, in the WAL's order. Writes bench/a2a-results.json.
 */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { defaultAdminToken, reloadCount, withBenchServer } from "../dev-server.js";
import { parseCli, run, wholeOption } from "./harness/cli.js";
import { Client } from "./harness/http-client.js";
import { idleBefore, round, runHeader, sourceState } from "./harness/meter.js";
import { fmt, printTables, writeResults } from "./harness/report.js";
import { CARRIERS, type Carrier, follow, pooled, type Round, runRound, setupSubmitBlock } from "./scenarios/a2a.js";
import { median } from "./harness/rounds.js";

run(async () => {
  const usage = "usage: npm run bench:a2a -- [--quick] [--pairs 12] [--calls 96] [--streams 100] [--steps 200] [--workers 8] [--url http://127.0.0.1:<port>]\n  --pairs: interleaved rounds of each carrier per concurrency; --calls: calls per round, shared by the clients; --streams/--steps/--workers: the follow scenario";
  const cli = parseCli(usage, { quick: false, pairs: null as string | null, calls: null as string | null, streams: null as string | null, steps: null as string | null, workers: null as string | null, url: null as string | null });
  const plan = {
    pairs: wholeOption(cli.pairs, "pairs", cli.quick ? 3 : 12),
    calls: wholeOption(cli.calls, "calls", cli.quick ? 48 : 96),
    warmupCalls: cli.quick ? 16 : 40,
    concurrencies: [1, 8],
    carriers: CARRIERS,
    follow: { streams: wholeOption(cli.streams, "streams", 100), steps: wholeOption(cli.steps, "steps", cli.quick ? 40 : 200), workers: wholeOption(cli.workers, "workers", 8) },
  };
  // Every stream holds a slot of the task's event stream, and the probe that counts them needs room above them.
  const maxSubscribers = Math.max(128, plan.follow.streams + 28);
  const vars = { SSE_MAX_SUBSCRIBERS: String(maxSubscribers) };
  const adminToken = defaultAdminToken();
  const loadStart = os.loadavg();
  const source = sourceState();
  const wallStart = performance.now();
  const idle = await idleBefore();
  await withBenchServer(cli.url, vars, async (base, server) => {
    const client = new Client(base);
    const pgid = server?.child?.pid;

    // 1. Submit.
    const rounds: Round[] = [];
    const answerBytes: { concurrency: number; rest: number; a2a: number }[] = [];
    for (const c of plan.concurrencies) {
      const block = await setupSubmitBlock(client, adminToken, c);
      answerBytes.push({ concurrency: c, ...block.answerBytes });
      const perClient = Math.ceil(plan.calls / c);
      for (const k of plan.carriers) await runRound(block, k, Math.ceil(plan.warmupCalls / c), -1, pgid);
      for (let pair = 0; pair < plan.pairs; pair++) {
        // REST and A2A back to back (the ratio compares them), the floor on either side; reversed every other pair.
        const order: Carrier[] = ["floor", "rest", "a2a"];
        for (const k of pair % 2 === 0 ? order : order.reverse()) {
          const r = await runRound(block, k, perClient, pair, pgid);
          rounds.push(r);
          console.log(`  submit c=${c} pair ${pair + 1}/${plan.pairs} ${k.padEnd(5)} ${fmt(r.calls_per_s).padStart(7)} calls/s  p50 ${fmt(r.latency.p50_ms, 2)} p99 ${fmt(r.latency.p99_ms, 2)} ms${r.errors > 0 ? `  errors ${r.errors}: ${r.first_error}` : ""}`);
        }
      }
    }
    const submit = plan.concurrencies.map((c) => {
      const of = (k: Carrier) => rounds.filter((r) => r.concurrency === c && r.carrier === k);
      const rest = pooled(of("rest"));
      const floor = pooled(of("floor"));
      const summaryOf = (k: Carrier) => {
        const p = pooled(of(k));
        const byPair = of(k).map((r) => {
          const restRound = of("rest").find((x) => x.pair === r.pair)!;
          return { p50: r.latency.p50_ms / restRound.latency.p50_ms, cost: restRound.calls_per_s / r.calls_per_s };
        });
        const vsRest = { p50_ratio: round(p.latency.p50_ms / rest.latency.p50_ms, 3), p99_ratio: round(p.latency.p99_ms / rest.latency.p99_ms, 3), p50_ratio_median_of_pairs: round(median(byPair.map((x) => x.p50)), 3), cost_ratio_median_of_pairs: round(median(byPair.map((x) => x.cost)), 3), server_cpu_ratio: p.cpu_ms_per_call.server === null || rest.cpu_ms_per_call.server === null ? null : round(p.cpu_ms_per_call.server / rest.cpu_ms_per_call.server, 3) };
        return { ...p, vs_rest: vsRest, vs_floor: { p50_ratio: round(p.latency.p50_ms / floor.latency.p50_ms, 3), p99_ratio: round(p.latency.p99_ms / floor.latency.p99_ms, 3) } };
      };
      const carriers: Record<Carrier, ReturnType<typeof summaryOf>> = { floor: summaryOf("floor"), rest: summaryOf("rest"), a2a: summaryOf("a2a") };
      const bytes = answerBytes.find((b) => b.concurrency === c)!;
      return { concurrency: c, answer_bytes: { rest: bytes.rest, a2a: bytes.a2a }, carriers };
    });

    // 2. Follow.
    console.log(`\n  follow: ${plan.follow.streams} SubscribeToTask streams, ${plan.follow.steps} steps, ${plan.follow.workers} workers`);
    // Warm the code paths of the streams and the step load on a small task first.
    await follow(client, { streams: Math.min(10, plan.follow.streams), steps: 20, workers: Math.min(4, plan.follow.workers), adminToken, serverGroup: pgid }, () => undefined);
    const f = await follow(client, { ...plan.follow, adminToken, serverGroup: pgid });

    const reloads = reloadCount(server);
    const results = {
      ...runHeader(cli.quick, loadStart, idle, source),
      server: { url: base, started_by_script: server !== null, startup_ms: server?.startupMs ?? null, log_level: "warn", vars: server === null ? null : vars, reloads },
      plan,
      definitions: {
        submit: "a2a: @a2a-js/sdk 1.3.0 client.sendMessage with configuration.returnImmediately (JSON-RPC SendMessage; the answer is the new Task, SUBMITTED); rest: POST /v1/sessions/{sid}/tasks with steps: [] and the same fields, orchestrator token, fetch keep-alive; floor: GET /health/object (Worker → Durable Object, no token). Each client its own token and A2A client.",
        ratios: "vs_rest: pooled p50 (p99) over REST's pooled p50 (p99); *_median_of_pairs: per interleaved pair, median; cost = 1 / calls per second of a round",
        artifact_lag: "per stream and step: receipt of its artifactUpdate (artifactId = step id) − the acknowledgement (answer read) of the worker's call that completed the step, both performance.now() of this process; negative when the event arrived before the answer",
        artifact_lag_from_send: "receipt − the moment the completing call was sent",
        completion_lag: "receipt of the result artifact and of the COMPLETED status − the acknowledgement of the orchestrator's complete call",
        held: "subscribers of the task object's event stream, counted by opening REST SSE streams (observer) on it until one is refused (429 names the count): held_by_others = count − the probe's own streams; streams_held_at_least = that minus every probe stream opened earlier in the scenario (a left probe stream may still be counted)",
      },
      submit,
      follow: f,
      rounds: rounds.map(({ samples: _s, ...r }) => r),
      wall_seconds: round((performance.now() - wallStart) / 1000, 1),
    };

    console.log(`\nA2A benchmark (${results.mode}) — ${results.machine.cpus} CPUs, node ${process.version}, load ${results.machine.loadavg_start.join(" ")} → ${results.machine.loadavg_end.join(" ")}; ${plan.pairs} pairs × ${plan.calls} calls a round`);
    const times = (x: number | null | undefined) => (x === null || x === undefined || !Number.isFinite(x) ? "-" : `${fmt(x, 2)}×`);
    printTables([
      {
        title: "task created: per call, rounds pooled; ÷REST = pooled p50 over REST's (median of pairs in brackets); CPU ms/call of this process / of the dev server",
        headers: ["conc", "carrier", "calls/s", "p50 ms", "p99 ms", "p50÷REST", "p99÷REST", "p50÷floor", "CPU ms/call client/server", "server CPU÷REST", "errors"],
        rows: submit.flatMap((s) =>
          plan.carriers.map((k) => {
            const x = s.carriers[k];
            return [String(s.concurrency), k, fmt(x.calls_per_s), fmt(x.latency.p50_ms, 2), fmt(x.latency.p99_ms, 2), k === "rest" ? "1" : `${times(x.vs_rest.p50_ratio)} [${times(x.vs_rest.p50_ratio_median_of_pairs)}]`, k === "rest" ? "1" : times(x.vs_rest.p99_ratio), times(x.vs_floor.p50_ratio), `${fmt(x.cpu_ms_per_call.client, 2)}/${fmt(x.cpu_ms_per_call.server, 2)}`, times(x.vs_rest.server_cpu_ratio), String(x.errors)];
          }),
        ),
      },
    ]);
    console.log(`answer bytes REST → A2A: ${answerBytes[0]!.rest} → ${answerBytes[0]!.a2a}`);
    const l = f.artifact_lag_ms;
    console.log(`\nfollow: ${f.streams} streams, ${f.steps} steps by ${f.workers} workers in ${f.steps_s} s (${f.steps_per_s} steps/s, completing call p50 ${f.complete_call.p50_ms} ms, p99 ${f.complete_call.p99_ms} ms)`);
    console.log(`  artifact lag behind the completing call's ack: p50 ${fmt(l.p50_ms, 2)} p95 ${fmt(l.p95_ms, 2)} p99 ${fmt(l.p99_ms, 2)} max ${fmt(l.max_ms, 2)} ms over ${l.count} updates (${f.before_ack} arrived before the ack); from the call's send: p50 ${fmt(f.artifact_lag_from_send_ms.p50_ms, 2)} p99 ${fmt(f.artifact_lag_from_send_ms.p99_ms, 2)} ms`);
    console.log(`  completion (result artifact + COMPLETED) behind the complete call's ack: p50 ${fmt(f.completion_lag_ms.p50_ms, 2)} p99 ${fmt(f.completion_lag_ms.p99_ms, 2)} ms (the call itself took ${fmt(f.complete_task_call_ms, 2)} ms)`);
    console.log(`  events per stream ${f.events_per_stream.min}..${f.events_per_stream.max} (${Object.entries(f.events_per_stream.by_kind).map(([k, v]) => `${k} ${v.min === v.max ? v.min : `${v.min}..${v.max}`}`).join(", ")}); ${f.streams_exact}/${f.streams} streams carried every step's artifact once in the WAL's order`);
    const held = (h: typeof f.held.after_subscribe) => (h.streams_held_at_least === h.held_by_others ? `${h.held_by_others}` : `at least ${h.streams_held_at_least} (${h.held_by_others} counting the probes left earlier)`);
    console.log(`  A2A streams the task's event stream held: ${held(f.held.after_subscribe)} after subscribing, ${held(f.held.after_last_step)} after the last step (of ${f.streams}; SSE_MAX_SUBSCRIBERS ${maxSubscribers})`);
    for (const v of f.violations) console.log(`  violation: ${v}`);
    if (reloads > 0) console.log(`\nnote: the dev server reloaded ${reloads} time(s) during the run (a source file changed): the figures may be skewed`);
    writeResults("bench/a2a-results.json", results, results.wall_seconds);
    if (rounds.some((r) => r.errors > 0) || f.errors > 0 || f.violations.length > 0 || f.streams_exact !== f.streams) {
      console.log("\nwarning: errors or violations (see the JSON)");
      process.exitCode = 1;
    }
  });
});
