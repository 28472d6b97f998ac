/**
 * @module `npm run bench:mcp`: the per-call cost of an MCP `tools/call` against the same REST call, a read
 * (agent.task_get ↔ GET .../tasks/{tid}) and a write (agent.task_progress ↔ POST .../steps/{step}/progress), at 1
 * and 8 concurrent clients, each client with its own token. Rounds of every carrier (REST, the 2026 client back to
 * back with it, then the 2025 client, the 2026 request sent without SDK and the floor) are interleaved on one
 * server, their order reversed every other pair, so machine drift falls on all alike; ratios compare rounds of the
 * same pair only. With `--baseline <rev or checkout>`, its dev server too, in the same pairs (each pair's
 * rounds on one server, then on the other, the order swapped every pair): before and after side by side. Writes
 * bench/mcp-results.json.
 */
import os from "node:os";
import { performance } from "node:perf_hooks";
import { type DevServer, defaultAdminToken, reloadCount, stopDevServer, withBenchServer } from "../dev-server.js";
import { parseCli, run, wholeOption } from "./harness/cli.js";
import { Client } from "./harness/http-client.js";
import { idleBefore, round, runHeader, sourceState } from "./harness/meter.js";
import { fmt, printTables, writeResults } from "./harness/report.js";
import { median } from "./harness/rounds.js";
import { type Block, CARRIERS, type Carrier, type McpOp, pooled, type Round, runRound, setupBlock } from "./scenarios/mcp.js";
import { baselineTree, startBaselineServer, treeState } from "./harness/baseline.js";

/** The goal: an MCP call (the 2026 client) costs at most this many REST calls. */
const GOAL_RATIO = 1.2;

/** Which code a round ran on: this checkout, or the `--baseline` one. */
type Code = "after" | "before";

/** A dev server the rounds run on: its code, a client of it, its process group (for its CPU) and its tree. */
interface Target { code: Code; client: Client; pgid: number | null | undefined; tree: string }

run(async () => {
  const usage = [
    "usage: npm run bench:mcp -- [--quick] [--pairs 12] [--calls 96] [--url http://127.0.0.1:<port>] [--baseline <rev or checkout>]",
    "  --pairs: interleaved rounds of each carrier per operation and concurrency; --calls: calls per round, shared by the clients",
    "  --baseline: also a dev server of that revision or checkout, its rounds in the same pairs (before and after side by side)",
  ].join("\n");
  const cli = parseCli(usage, { quick: false, pairs: null as string | null, calls: null as string | null, url: null as string | null, baseline: null as string | null });
  const baselineDir = cli.baseline === null ? null : baselineTree(cli.baseline).dir;
  const plan = { pairs: wholeOption(cli.pairs, "pairs", cli.quick ? 3 : 12), calls: wholeOption(cli.calls, "calls", cli.quick ? 48 : 96), warmupCalls: cli.quick ? 16 : 40, concurrencies: [1, 8], ops: ["read", "write"] as McpOp[], carriers: CARRIERS };
  const adminToken = defaultAdminToken();
  const loadStart = os.loadavg();
  const source = sourceState();
  const wallStart = performance.now();
  const idle = await idleBefore();
  await withBenchServer(cli.url, {}, async (base, server) => {
    const client = new Client(base);
    const pgid = server?.child?.pid;
    const rounds: (Round & { code: Code })[] = [];
    const answerBytes: { op: McpOp; concurrency: number; rest: number; mcp: number }[] = [];
    let before: DevServer | null = null;
    try {
      const targets: Target[] = [{ code: "after", client, pgid, tree: treeState(process.cwd()) }];
      if (baselineDir !== null) {
        before = await startBaselineServer(baselineDir);
        targets.push({ code: "before", client: new Client(before.base), pgid: before.child?.pid, tree: treeState(baselineDir) });
      }
      for (const c of plan.concurrencies) {
        for (const op of plan.ops) {
          const blocks = new Map<Code, Block>();
          try {
            for (const t of targets) {
              const block = await setupBlock(t.client, adminToken, c, op, plan.carriers);
              blocks.set(t.code, block);
              if (t.code === "after") answerBytes.push({ op, concurrency: c, ...block.answerBytes });
            }
            const perClient = Math.ceil(plan.calls / c);
            // Warm the isolate, the objects, the connection pool and each client library's code paths.
            for (const t of targets) for (const k of plan.carriers) await runRound(blocks.get(t.code)!, k, Math.ceil(plan.warmupCalls / c), -1, t.pgid);
            const others = plan.carriers.filter((k) => k !== "rest" && k !== "mcp");
            for (let pair = 0; pair < plan.pairs; pair++) {
              // REST and MCP back to back (the goal's ratio compares the closest rounds), the others after them rotated;
              // every other pair in reverse, so neither of the two always runs first or on a fresher machine; with a
              // baseline, each pair on one server and then the other, which one first swapped every pair.
              const order: Carrier[] = ["rest", "mcp", ...others.map((_, i) => others[(i + Math.floor(pair / 2)) % others.length]!)];
              for (const t of pair % 2 === 0 ? targets : [...targets].reverse()) {
                for (const k of pair % 2 === 0 ? order : [...order].reverse()) {
                  const r = await runRound(blocks.get(t.code)!, k, perClient, pair, t.pgid);
                  rounds.push({ ...r, code: t.code });
                  console.log(`  ${targets.length > 1 ? `[${t.code}] ` : ""}${op.padEnd(5)} c=${c} pair ${pair + 1}/${plan.pairs} ${k.padEnd(8)} ${fmt(r.calls_per_s).padStart(7)} calls/s  p50 ${fmt(r.latency.p50_ms, 2)} p95 ${fmt(r.latency.p95_ms, 2)} ms  CPU ms/call client ${fmt(r.cpu_ms_per_call.client, 2)} server ${fmt(r.cpu_ms_per_call.server, 2)}${r.errors > 0 ? `  errors ${r.errors}: ${r.first_error}` : ""}`);
                }
              }
            }
          } finally {
            for (const b of blocks.values()) await b.close();
          }
        }
      }
    } finally {
      if (before !== null) await stopDevServer(before);
    }

    // Per operation and concurrency: each carrier's rounds pooled, and its cost against REST's pair by pair.
    const summarize = (code: Code) => plan.ops.flatMap((op) =>
      plan.concurrencies.map((c) => {
        const of = (k: Carrier) => rounds.filter((r) => r.code === code && r.op === op && r.concurrency === c && r.carrier === k);
        const rest = pooled(of("rest"));
        const floor = pooled(of("floor"));
        const carriers = Object.fromEntries(
          plan.carriers.map((k) => {
            const mine = of(k);
            const p = pooled(mine);
            // cost = 1 / throughput: an MCP round's cost over the REST round of the same pair.
            const perPair = mine.map((r) => of("rest").find((x) => x.pair === r.pair)!.calls_per_s / r.calls_per_s);
            const vsRest = { cost_ratio_median: round(median(perPair), 3), cost_ratio_pooled: round(rest.calls_per_s / p.calls_per_s, 3), cost_ratio_by_pair: perPair.map((x) => round(x, 3)), p50_ratio: round(p.latency.p50_ms / rest.latency.p50_ms, 3), p95_ratio: round(p.latency.p95_ms / rest.latency.p95_ms, 3), server_cpu_ratio: p.cpu_ms_per_call.server === null || rest.cpu_ms_per_call.server === null ? null : round(p.cpu_ms_per_call.server / rest.cpu_ms_per_call.server, 3) };
            return [k, { ...p, cost_ms: round(1000 / p.calls_per_s, 3), cost_vs_floor: round(floor.calls_per_s / p.calls_per_s, 3), vs_rest: vsRest }];
          }),
        ) as Record<Carrier, ReturnType<typeof pooled> & { cost_ms: number; cost_vs_floor: number; vs_rest: { cost_ratio_median: number; cost_ratio_pooled: number; cost_ratio_by_pair: number[]; p50_ratio: number; p95_ratio: number; server_cpu_ratio: number | null } }>;
        const bytes = answerBytes.find((b) => b.op === op && b.concurrency === c)!;
        return { op, concurrency: c, answer_bytes: { rest: bytes.rest, mcp: bytes.mcp }, carriers };
      }),
    );
    const summary = summarize("after");
    const baselineSummary = baselineDir === null ? null : summarize("before");
    const goal = summary.map((s) => {
      const ratio = s.carriers.mcp.vs_rest.cost_ratio_median;
      return { op: s.op, concurrency: s.concurrency, mcp_cost_vs_rest: ratio, p50_ratio: s.carriers.mcp.vs_rest.p50_ratio, met: ratio <= GOAL_RATIO };
    });
    const reloads = reloadCount(server);
    const results = {
      ...runHeader(cli.quick, loadStart, idle, source),
      server: { url: base, started_by_script: server !== null, startup_ms: server?.startupMs ?? null, log_level: "warn", reloads },
      plan,
      definitions: {
        cost: "1 / calls per second of a round (all clients together); cost ratio = REST calls/s ÷ the carrier's calls/s in the same pair, median over pairs (cost_ratio_pooled: of all rounds' calls and time)",
        answer_bytes: "bytes of one answer: the REST body, and the MCP tools/call's JSON-RPC answer (structuredContent = the REST answer, plus its text)",
        other_share: "share of the machine's CPU time used by processes other than this one and the dev server during the rounds (median of rounds)",
        floor: "GET /health/object: an empty Worker → Durable Object round trip, no token",
        cpu_ms_per_call: "CPU of this process (client) and of the dev server's process group (server: npx, wrangler, workerd) over a round, per call",
        carriers: { rest: "fetch (keep-alive)", mcp: "@modelcontextprotocol/client 2.4.0, versionNegotiation auto → 2026-07-28", "mcp-2025": "@modelcontextprotocol/sdk 1.32.2 → 2025-11-25 (stateless fallback, answers as SSE)", "mcp-raw": "the 2026 client's request sent with fetch, no SDK" },
      },
      goal: { statement: `an MCP tools/call (2026 client) costs at most ${GOAL_RATIO}× the same REST call`, results: goal },
      summary,
      baseline:
        baselineSummary === null
          ? null
          : {
              dir: baselineDir,
              tree: treeState(baselineDir!),
              this_tree: treeState(process.cwd()),
              summary: baselineSummary,
              before_after: beforeAfter(summary, baselineSummary),
            },
      rounds: rounds.map(({ samples: _s, ...r }) => r),
      wall_seconds: round((performance.now() - wallStart) / 1000, 1),
    };

    console.log(`\nMCP benchmark (${results.mode}) — ${results.machine.cpus} CPUs, node ${process.version}, load ${results.machine.loadavg_start.join(" ")} → ${results.machine.loadavg_end.join(" ")}; ${plan.pairs} pairs × ${plan.calls} calls a round`);
    const times = (x: number | null) => (x === null || !Number.isFinite(x) ? "-" : `${fmt(x, 2)}×`);
    printTables([
      {
        title: "per call (rounds pooled); cost÷REST = REST calls/s ÷ calls/s, median of the interleaved pairs [min..max]; CPU ms/call of this process / of the dev server; others' CPU = median share of the machine's CPU that other processes used during the rounds",
        headers: ["op", "conc", "carrier", "calls/s", "p50/p95 ms", "cost÷REST", "p50÷REST", "cost÷floor", "HTTP req/call", "CPU ms/call client/server", "server CPU÷REST", "others' CPU", "errors"],
        rows: summary.flatMap((s) =>
          plan.carriers.map((k) => {
            const x = s.carriers[k];
            const byPair = x.vs_rest.cost_ratio_by_pair;
            return [s.op, String(s.concurrency), k, fmt(x.calls_per_s), `${fmt(x.latency.p50_ms, 2)}/${fmt(x.latency.p95_ms, 2)}`, k === "rest" ? "1" : `${times(x.vs_rest.cost_ratio_median)} [${fmt(Math.min(...byPair), 2)}..${fmt(Math.max(...byPair), 2)}]`, k === "rest" ? "1" : times(x.vs_rest.p50_ratio), times(x.cost_vs_floor), fmt(x.http_requests_per_call, 2), `${fmt(x.cpu_ms_per_call.client, 2)}/${fmt(x.cpu_ms_per_call.server, 2)}`, times(x.vs_rest.server_cpu_ratio), Number.isFinite(x.other_share_median) ? `${fmt(x.other_share_median * 100, 0)}%` : "-", String(x.errors)];
          }),
        ),
      },
    ]);
    if (results.baseline !== null) {
      printTables([
        {
          title: `before (${results.baseline.tree}) and after (${results.baseline.this_tree}), the same pairs: MCP (2026 client) cost ÷ REST, the dev server's CPU per MCP call, REST calls/s`,
          headers: ["op", "conc", "MCP÷REST before → after", "server CPU ms/MCP call before → after", "REST calls/s before → after"],
          rows: results.baseline.before_after.map((x) => [x.op, String(x.concurrency), `${fmt(x.mcp_vs_rest.before, 2)} → ${fmt(x.mcp_vs_rest.after, 2)}`, `${fmt(x.server_ms_per_mcp_call.before, 2)} → ${fmt(x.server_ms_per_mcp_call.after, 2)}`, `${fmt(x.rest_calls_per_s.before)} → ${fmt(x.rest_calls_per_s.after)}`]),
        },
      ]);
    }
    console.log(`\nanswer bytes REST → MCP: ${summary.filter((s) => s.concurrency === plan.concurrencies[0]).map((s) => `${s.op} ${s.answer_bytes.rest} → ${s.answer_bytes.mcp}`).join(", ")}`);
    console.log(`\ngoal (stated, not asserted): ${results.goal.statement}`);
    for (const g of goal) console.log(`  ${g.op.padEnd(5)} c=${g.concurrency}: ${fmt(g.mcp_cost_vs_rest, 2)}× (p50 ${fmt(g.p50_ratio, 2)}×) → ${g.met ? "met" : "missed"}`);
    if (reloads > 0) console.log(`\nnote: the dev server reloaded ${reloads} time(s) during the run (a source file changed): the figures may be skewed`);
    writeResults("bench/mcp-results.json", results, results.wall_seconds);
    if (rounds.some((r) => r.errors > 0)) {
      console.log("\nwarning: some rounds had errors (first_error in the JSON)");
      process.exitCode = 1;
    }
  });
});

type Summary = { op: McpOp; concurrency: number; carriers: Record<Carrier, { calls_per_s: number; cpu_ms_per_call: { server: number | null }; vs_rest: { cost_ratio_median: number } }> }[];

/** Per operation and concurrency, the goal's figures on the baseline's code and on this one. */
function beforeAfter(after: Summary, before: Summary) {
  return after.map((a) => {
    const b = before.find((x) => x.op === a.op && x.concurrency === a.concurrency)!;
    return {
      op: a.op,
      concurrency: a.concurrency,
      mcp_vs_rest: { before: b.carriers.mcp.vs_rest.cost_ratio_median, after: a.carriers.mcp.vs_rest.cost_ratio_median },
      server_ms_per_mcp_call: { before: b.carriers.mcp.cpu_ms_per_call.server, after: a.carriers.mcp.cpu_ms_per_call.server },
      rest_calls_per_s: { before: b.carriers.rest.calls_per_s, after: a.carriers.rest.calls_per_s },
    };
  });
}
