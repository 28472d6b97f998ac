/**
 * A live client against a real `wrangler dev`: a plain EventSource (the `eventsource` package, token in
 * `?access_token=`) follows a task while an orchestrator and three workers drive a fan-out/fan-in DAG to
 * completion over HTTP. The server is started with a short SSE_MAX_STREAM_MS so the stream is closed under
 * the client mid-run and EventSource resumes by itself with Last-Event-ID. Every runtime event must arrive
 * exactly once, in order, validate against the published schema, and equal the projection of the exported WAL.
 * Then the client SDK's command socket from Node (the `ws` package), with the connection cut under it. Last, a
 * person in the loop: the EventSource sees action.required and action.resolved while a worker's long-poll waits
 * for the approver's answer.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { EventSource } from "eventsource";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { type FetchLike, RuntimeClient, type WebSocketConstructor } from "../../src/client/index.js";
import { projectWal, RUNTIME_EVENT_TYPES, WalEventSchema } from "../../src/core/index.js";
import { type DevServer, defaultAdminToken, sleep, startDevServer, stopDevServer } from "../../scripts/dev-server.js";
import { validateRuntimeEvent } from "../core/runtime-event-contract.js";
import { mustAnswer } from "./support/json-call.js";

/** The stream closes under the client this often (the server's SSE_MAX_STREAM_MS). */
const MAX_STREAM_MS = 2_500;

let server: DevServer;
let workDir: string;

beforeAll(async () => {
  workDir = mkdtempSync(path.join(os.tmpdir(), "sse-e2e-"));
  server = await startDevServer({ workDir, logLevel: "warn", vars: { SSE_MAX_STREAM_MS: String(MAX_STREAM_MS), SSE_HEARTBEAT_MS: "1000" }, startupTimeoutMs: 90_000 });
});

afterAll(async () => {
  if (server !== undefined) await stopDevServer(server);
  if (workDir !== undefined) rmSync(workDir, { recursive: true, force: true });
});

/** A JSON call that must answer `status`. */
const must = (status: number, method: string, p: string, token: string, body?: unknown): Promise<any> => mustAnswer(server.base, status, method, p, token, body);

/** What an EventSource heard. */
interface Heard {
  frames: { id: string; type: string; data: any }[];
  opens: number;
  errors: number;
}

/** Listens to every event type of `types` on a new EventSource; resolves `ended` on the `end` event. */
function listen(url: string, types: readonly string[]): { es: EventSource; heard: Heard; ended: Promise<any> } {
  const es = new EventSource(url);
  const heard: Heard = { frames: [], opens: 0, errors: 0 };
  es.addEventListener("open", () => (heard.opens += 1));
  es.addEventListener("error", () => (heard.errors += 1));
  for (const type of types) es.addEventListener(type, (e) => heard.frames.push({ id: e.lastEventId, type, data: JSON.parse(e.data) }));
  const ended = new Promise<any>((resolve) =>
    es.addEventListener("end", (e) => {
      es.close();
      resolve(JSON.parse(e.data));
    }),
  );
  return { es, heard, ended };
}

/** Rejects after `ms` with `what`. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms))]);
}

describe("a browser-style EventSource against wrangler dev", () => {
  it("Should receive every runtime event of a fan-out/fan-in run exactly once, in order, across server-side stream closes", async () => {
    const admin = defaultAdminToken();
    const session = await must(201, "POST", "/v1/sessions", admin, {});
    const sid: string = session.session_id;
    const orch: string = session.orchestrator.token;
    const observer: string = session.observer.token;
    const t = `/v1/sessions/${sid}/tasks/fan`;

    // The session stream first, so it sees the task's creation live.
    const sessionStream = listen(`${server.base}/v1/sessions/${sid}/events?access_token=${encodeURIComponent(observer)}`, ["snapshot.updated"]);
    await must(201, "POST", `/v1/sessions/${sid}/tasks`, orch, {
      task_id: "fan",
      wal_name: "fan",
      title: "Fan out, fan in",
      summary: "plan, three research steps in parallel, synthesis",
      steps: [
        { step_id: "plan", title: "Plan", summary: "Plan it", depends_on_step_ids: [] },
        ...["r1", "r2", "r3"].map((id) => ({ step_id: id, title: `Research ${id}`, summary: "Look it up", depends_on_step_ids: ["plan"] })),
        { step_id: "synth", title: "Synthesis", summary: "Write it up", depends_on_step_ids: ["r1", "r2", "r3"] },
      ],
    });
    const taskStream = listen(`${server.base}${t}/events?access_token=${encodeURIComponent(observer)}`, [...RUNTIME_EVENT_TYPES]);

    // Three pooled workers, each: claim-next, report progress, complete, until the pool is drained.
    const workers = await Promise.all(["w1", "w2", "w3"].map((agent) => must(201, "POST", `${t}/workers`, orch, { agent_id: agent, max_steps: 5 })));
    const started = Date.now();
    const work = async (w: { token: string; run_id: string }) => {
      for (let round = 0; round < 200; round++) {
        const claim = await must(200, "POST", `${t}/steps/claim-next`, w.token, {});
        if (claim.no_step_claimed === true) {
          const open = await must(200, "GET", `${t}/steps?worker_pool_id=default`, orch);
          if (open.total === 0) break;
          await sleep(100);
          continue;
        }
        const step = claim.step.step_id;
        await must(200, "POST", `${t}/steps/${step}/progress`, w.token, { phase: "working", summary: `${step} half way` });
        // Slow enough that the run outlives SSE_MAX_STREAM_MS and the client has to resume at least once.
        await sleep(1_200);
        await must(200, "POST", `${t}/steps/${step}/status`, w.token, { status: "completed", result_summary: `${step} done` });
      }
      await must(200, "POST", `${t}/runs/${w.run_id}/finish`, w.token, { outcome: "finished" });
    };
    await Promise.all(workers.map(work));
    await must(200, "POST", `${t}/complete`, orch, { reason: "report written" });
    const runMs = Date.now() - started;

    const end = await within(taskStream.ended, 20_000, "the task stream's end frame");
    const walText = await (await fetch(`${server.base}${t}/wal?limit=10000`, { headers: { authorization: `Bearer ${orch}` } })).text();
    const wal = walText.split("\n").filter((l) => l !== "").map((l) => WalEventSchema.parse(JSON.parse(l)));
    const expected = projectWal(wal);
    const { frames, opens } = taskStream.heard;

    expect(runMs).toBeGreaterThan(MAX_STREAM_MS);
    expect(opens, "the client reconnected after a server-side close").toBeGreaterThanOrEqual(2);
    expect(end).toEqual({ reason: "task_terminal", status: "completed", wal_seq: wal[wal.length - 1]!.wal_seq });
    // Exactly once and in order: ids are the events' sequences, strictly increasing, each event as projected.
    for (let i = 1; i < frames.length; i++) {
      expect(frames[i]!.data.sequence, `sequence ${frames[i]!.data.sequence} after ${frames[i - 1]!.data.sequence}`).toBeGreaterThan(frames[i - 1]!.data.sequence);
    }
    for (const f of frames) {
      const valid: boolean = validateRuntimeEvent(f.data);
      if (!valid) expect.fail(`${f.type} ${f.id} breaks the published schema: ${JSON.stringify(validateRuntimeEvent.errors)}`);
      expect(f.type).toBe(f.data.type);
      expect(f.id).toBe(String(f.data.sequence));
    }
    expect(frames.map((f) => f.data)).toEqual(expected);

    // The session stream saw the task created, updated and terminal, each a valid envelope.
    await within(
      (async () => {
        while (!sessionStream.heard.frames.some((f) => f.data.payload.change === "terminal")) await sleep(50);
      })(),
      10_000,
      "the session stream's terminal change",
    );
    sessionStream.es.close();
    const changes = sessionStream.heard.frames.map((f) => f.data);
    expect(changes[0]).toMatchObject({ type: "snapshot.updated", taskId: "fan", payload: { change: "created" } });
    expect(changes[changes.length - 1]).toMatchObject({ nativeStatus: "completed", payload: { change: "terminal", task: { task_id: "fan", terminal: true } } });
    expect(changes.map((c) => c.sequence)).toEqual(changes.map((_, i) => i + 1));
    for (const c of changes) expect(validateRuntimeEvent(c)).toBe(true);
  });
});

describe("the client SDK's command socket from Node (ws) against wrangler dev", () => {
  it("Should run pooled workers to the end over one socket, and survive the connection dropping under frames in flight", async () => {
    const admin = new RuntimeClient({ baseUrl: server.base, token: defaultAdminToken(), batching: false });
    const session = await admin.createSession({});
    const orch = admin.withToken(session.orchestrator.token);
    const steps = Array.from({ length: 60 }, (_, i) => ({ step_id: `s${i}`, title: `Step ${i}`, summary: "work", depends_on_step_ids: [] }));
    await orch.createTask(session.session_id, { task_id: "sock", wal_name: "sock", title: "Socket", summary: "", steps });
    const task = { sessionId: session.session_id, taskId: "sock" };
    const dispatched = await Promise.all(Array.from({ length: 6 }, (_, i) => orch.dispatchWorker(task, { agent_id: `w${i}`, max_steps: 60 })));

    // ws's WebSocket, counting frames and commands; the first socket is cut (TCP reset) after its 5th frame.
    const seen = { sockets: 0, frames: 0, commands: 0, httpBatches: 0, extensions: [] as string[] };
    class CountingWebSocket extends WebSocket {
      private readonly serial = ++seen.sockets;
      private sent = 0;
      constructor(...args: ConstructorParameters<typeof WebSocket>) {
        super(...args);
        this.once("open", () => seen.extensions.push(this.extensions));
      }
      override send(data: string): void {
        seen.frames++;
        seen.commands += (JSON.parse(data) as { commands: unknown[] }).commands.length;
        super.send(data);
        if (this.serial === 1 && ++this.sent === 5) this.terminate();
      }
    }
    const fetchCounting: FetchLike = (input, init) => {
      if (new URL(input).pathname.endsWith("/batch")) seen.httpBatches++;
      return fetch(input, init);
    };
    const family = new RuntimeClient({ baseUrl: server.base, fetch: fetchCounting, socket: { WebSocket: CountingWebSocket as unknown as WebSocketConstructor }, retry: { attempts: 5, baseDelayMs: 20, maxDelayMs: 200 } });
    const workers = dispatched.map((w) => family.worker(task, { token: w.token, runId: w.runId, agentId: w.agentId ?? "w" }));
    const reports = await within(Promise.all(workers.map((w) => w.run(async (step, ctx) => {
      await ctx.progress({ phase: "working", summary: step.step_id });
      return { result_summary: `${step.step_id} done` };
    }))), 60_000, "the workers over the socket");
    family.close();

    expect(reports.flatMap((r) => r.completed).sort()).toEqual(steps.map((s) => s.step_id).sort());
    expect(seen.sockets, "a new socket after the cut").toBeGreaterThanOrEqual(2);
    expect(seen.commands / seen.frames, "frames carried several workers' commands").toBeGreaterThan(1);
    expect(seen.httpBatches).toBe(0);
    expect(seen.extensions, "no permessage-deflate: it cost more CPU than the frames' work").toEqual(seen.extensions.map(() => ""));
    expect(seen.extensions.length).toBe(seen.sockets);
    const wal = await orch.walExport(task, { limit: 10_000 });
    const completions = wal.events.filter((e) => e.event_type === "task_step_completed").map((e) => e.step_id);
    expect(completions.sort()).toEqual(steps.map((s) => s.step_id).sort());
  });
});

describe("a person in the loop, seen by a plain EventSource against wrangler dev", () => {
  it("Should stream action.required and action.resolved while a worker's long-poll waits, and answer the poll with the approver's decision", async () => {
    const admin = defaultAdminToken();
    const session = await must(201, "POST", "/v1/sessions", admin, {});
    const sid: string = session.session_id;
    const orch: string = session.orchestrator.token;
    const approver: string = (await must(201, "POST", `/v1/sessions/${sid}/tokens`, orch, { role: "approver", agent_id: "alice" })).token;
    const t = `/v1/sessions/${sid}/tasks/ship`;
    await must(201, "POST", `/v1/sessions/${sid}/tasks`, orch, {
      task_id: "ship",
      wal_name: "ship",
      title: "Ship",
      steps: [{ step_id: "deploy", title: "Deploy", summary: "Ship it", depends_on_step_ids: [] }],
    });
    const stream = listen(`${server.base}${t}/events?access_token=${encodeURIComponent(approver)}`, [...RUNTIME_EVENT_TYPES]);
    const w = await must(201, "POST", `${t}/workers`, orch, {});
    await must(200, "POST", `${t}/steps/claim-next`, w.token, {});
    const asked = await must(201, "POST", `${t}/steps/deploy/actions`, w.token, { kind: "approval", prompt: "Deploy?" });
    const poll = must(200, "GET", `${t}/actions/${asked.action_id}?wait_ms=10000`, w.token);

    const inbox = await must(200, "GET", `/v1/sessions/${sid}/actions?status=open`, approver);
    expect(inbox.actions.map((a: { action_id: string }) => a.action_id)).toEqual([asked.action_id]);
    await must(200, "POST", `${t}/actions/${asked.action_id}/respond`, approver, { decision: "approved", comment: "go" });
    const answered = await within(poll, 10_000, "the worker's long-poll");
    expect(answered.action).toMatchObject({ action_id: asked.action_id, status: "resolved", decision: "approved", comment: "go", resolved_by: { agent_id: "alice", role: "approver" } });

    await must(200, "POST", `${t}/steps/deploy/status`, w.token, { status: "completed", result_summary: "deployed" });
    await must(200, "POST", `${t}/complete`, orch, {});
    await within(stream.ended, 20_000, "the task stream's end frame");
    const heard = stream.heard.frames.map((f) => f.data);
    for (const event of heard) expect(validateRuntimeEvent(event), `${event.type} breaks the published schema`).toBe(true);
    const required = heard.find((e) => e.type === "action.required");
    const resolved = heard.find((e) => e.type === "action.resolved");
    expect(required).toMatchObject({ actionId: asked.action_id, stepId: "deploy", payload: { kind: "approval", prompt: "Deploy?" } });
    expect(heard.find((e) => e.type === "task.waiting" && e.actionId === asked.action_id)).toMatchObject({ status: "waiting_permission" });
    expect(resolved).toMatchObject({ actionId: asked.action_id, statusReason: "approved", payload: { decision: "approved", resolvedBy: { actorAgentId: "alice", role: "approver" } } });
    expect(heard.indexOf(resolved)).toBeGreaterThan(heard.indexOf(required));
  });
});
