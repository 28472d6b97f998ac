/** @module The reads scenario: one fresh `wrangler dev` in a given checkout (a fresh workerd, so every run's RSS starts from the same place), one task of N independent steps, and one load of R concurrent observers: `get` (one plain GET each, retried after Retry-After on a 429) or `whole` (each follows `page.next_cursor` to the end). */
// workerd's RSS (VmRSS of every workerd of the server's process group) is sampled every 10 ms: before (median of the second before the load), peak
// during it, and 2 s after it. Linux only.
import { performance } from "node:perf_hooks";
import { defaultAdminToken, type DevServer, sleep, startDevServer, stopDevServer } from "../../dev-server.js";
import { Client, stepsOf } from "../harness/http-client.js";
import { round, rssMiB, stats, workerdPids } from "../harness/meter.js";

/** The two loads. */
export type ReadLoad = "get" | "whole";

/** One observer: GET the task (retrying 429s after Retry-After); with `whole`, follow page.next_cursor to the end. */
async function readTask(url: string, token: string, whole: boolean) {
  const t0 = performance.now();
  const result = { ms: 0, bytes: 0, requests: 0, limited: 0, steps: 0, runs: 0 };
  let cursor: string | null = null;
  for (;;) {
    result.requests += 1;
    const res = await fetch(cursor === null ? url : `${url}?cursor=${encodeURIComponent(cursor)}`, { headers: { authorization: `Bearer ${token}` } });
    const buf = await res.arrayBuffer();
    if (res.status === 429) {
      result.limited += 1;
      const after = Number(res.headers.get("retry-after") ?? "1");
      // A quarter more at random, as the SDK waits: readers refused together do not come back together.
      await sleep((Number.isFinite(after) ? after : 1) * 1000 * (1 + Math.random() / 4));
      continue;
    }
    if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}: ${new TextDecoder().decode(buf).slice(0, 300)}`);
    result.bytes += buf.byteLength;
    const body = JSON.parse(new TextDecoder().decode(buf)) as { steps: unknown[]; runs: unknown[]; page?: { next_cursor: string | null } };
    result.steps += body.steps.length;
    result.runs += body.runs.length;
    cursor = whole ? (body.page?.next_cursor ?? null) : null;
    if (cursor === null) break;
  }
  result.ms = performance.now() - t0;
  return result;
}

/** The server of the run in progress, stopped on Ctrl-C. */
export const current: { server: DevServer | null } = { server: null };

/** One run: a fresh server in `tree`, one task, one load; the RSS before, during and after it. */
export async function readsRun(tree: string, scenario: ReadLoad, opts: { steps: number; readers: number }) {
  const server: DevServer = await startDevServer({ cwd: tree, logLevel: "warn" });
  current.server = server;
  try {
    const pids = workerdPids(server.child!.pid!);
    if (pids.length === 0) throw new Error(`no workerd process in the dev server's process group (log: ${server.logFile})`);
    const client = new Client(server.base);
    const session = await client.session(defaultAdminToken());
    const url = server.base + (await client.task(session, "reads", { title: "Read benchmark", steps: stepsOf(opts.steps) })).path;
    // One read to load the object (replay) before the baseline, so the load measures reads only.
    await readTask(url, session.observer, false);
    await sleep(1_500);

    // RSS every 10 ms, from a second before the load to 2 s after it.
    const samples: { at: number; mib: number }[] = [];
    const timer = setInterval(() => samples.push({ at: performance.now(), mib: rssMiB(pids) }), 10);
    await sleep(1_000);
    const loadStart = performance.now();
    const readers = await Promise.all(Array.from({ length: opts.readers }, () => readTask(url, session.observer, scenario === "whole")));
    const loadEnd = performance.now();
    await sleep(2_000);
    clearInterval(timer);
    const between = (from: number, to: number) => samples.filter((s) => s.at >= from && s.at < to).map((s) => s.mib);
    const before = between(loadStart - 1_000, loadStart);
    const during = between(loadStart, loadEnd + 20);
    const median = [...before].sort((a, b) => a - b)[Math.floor(before.length / 2)] ?? NaN;
    const sum = (f: (r: (typeof readers)[number]) => number) => readers.reduce((a, r) => a + f(r), 0);
    return {
      tree, scenario, rss_before_mib: round(median, 1), rss_peak_mib: round(Math.max(...during, ...before), 1), rss_after_mib: round(samples.at(-1)?.mib ?? NaN, 1), load_s: round((loadEnd - loadStart) / 1000, 2),
      answer_bytes_per_reader: round(sum((r) => r.bytes) / readers.length, 0), requests: sum((r) => r.requests), rate_limited: sum((r) => r.limited), steps_per_reader: [...new Set(readers.map((r) => r.steps))], reader_ms: stats(readers.map((r) => r.ms)),
    };
  } finally {
    current.server = null;
    await stopDevServer(server);
  }
}
