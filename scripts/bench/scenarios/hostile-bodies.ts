/**
 * @module The hostile-bodies scenario: one fresh `wrangler dev` in a given checkout, then, target after target, N
 * clients at once each streaming a chunked body of B bytes (no Content-Length) as fast as the server takes it,
 * until the server answers or the body is sent; workerd's RSS (VmRSS of every workerd of the server's process
 * group) sampled every 10 ms: idle (median of the second before the load) and the peak under it.
 * Linux only.
 */
import { performance } from "node:perf_hooks";
import { defaultAdminToken, type DevServer, sleep, startDevServer, stopDevServer } from "../../dev-server.js";
import { Client, stepsOf } from "../harness/http-client.js";
import { round, rssMiB, workerdPids } from "../harness/meter.js";
import { streamUpload } from "../harness/upload.js";

/** Where the bodies go, and with which token. */
export type HostileTarget = "complete (observer)" | "complete (orchestrator)" | "/mcp (observer)" | "/a2a (a2a_client)";
export const HOSTILE_TARGETS: readonly HostileTarget[] = ["complete (observer)", "complete (orchestrator)", "/mcp (observer)", "/a2a (a2a_client)"];

/** The server of the run in progress, stopped on Ctrl-C. */
export const current: { server: DevServer | null } = { server: null };

/** Where each target sends its bodies, and with which token, on a server with one session and one task. */
async function targetsOf(base: string): Promise<Record<HostileTarget, { path: string; token: string; headers: Record<string, string> }>> {
  const client = new Client(base);
  const session = await client.session(defaultAdminToken());
  const task = (await client.task(session, "hostile", { title: "Hostile bodies", steps: stepsOf(1) })).path;
  const a2a = (await client.must(201, "POST", `/v1/sessions/${session.sid}/tokens`, session.orch, { role: "a2a_client" })).body.token as string;
  const mcpHeaders = { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" };
  return {
    "complete (observer)": { path: `${task}/complete`, token: session.observer, headers: {} },
    "complete (orchestrator)": { path: `${task}/complete`, token: session.orch, headers: {} },
    "/mcp (observer)": { path: "/mcp", token: session.observer, headers: mcpHeaders },
    "/a2a (a2a_client)": { path: "/a2a", token: a2a, headers: {} },
  };
}

/**
 * One run: a fresh server in `tree` (RSS never gives back what a load took, so each target gets its own), its idle
 * RSS after one small request to the target, then the target's load and the peak RSS until a second after it.
 */
export async function hostileBodiesRun(tree: string, name: HostileTarget, opts: { clients: number; mib: number }) {
  const server: DevServer = await startDevServer({ cwd: tree, logLevel: "warn" });
  current.server = server;
  try {
    const pids = workerdPids(server.child!.pid!);
    if (pids.length === 0) throw new Error(`no workerd process in the dev server's process group (log: ${server.logFile})`);
    const t = (await targetsOf(server.base))[name];
    // One small request first, so the load measures bodies, not the first load of a module or an object.
    await streamUpload(server.base + t.path, t.token, 2, t.headers);
    await sleep(1_500);
    const samples: { at: number; mib: number }[] = [];
    const timer = setInterval(() => samples.push({ at: performance.now(), mib: rssMiB(pids) }), 10);
    try {
      await sleep(1_000);
      const idleSamples = samples.map((s) => s.mib).sort((a, b) => a - b);
      const idle = idleSamples[Math.floor(idleSamples.length / 2)] ?? NaN;
      const start = performance.now();
      const sent = await Promise.all(Array.from({ length: opts.clients }, () => streamUpload(server.base + t.path, t.token, opts.mib * 2 ** 20, t.headers)));
      const end = performance.now();
      await sleep(1_000);
      const peak = Math.max(...samples.filter((s) => s.at >= start).map((s) => s.mib));
      return {
        tree,
        target: name,
        answers: [...new Set(sent.map((s) => String(s.status ?? s.error ?? "no answer")))],
        idle_mib: round(idle, 1),
        peak_mib: round(peak, 1),
        delta_mib: round(peak - idle, 1),
        sent_mib_per_client_max: round(Math.max(...sent.map((s) => s.sentBytes)) / 2 ** 20, 1),
        answer_ms_max: round(Math.max(...sent.map((s) => s.ms)), 0),
        load_s: round((end - start) / 1000, 2),
      };
    } finally {
      clearInterval(timer);
    }
  } finally {
    current.server = null;
    await stopDevServer(server);
  }
}
