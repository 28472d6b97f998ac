/**
 * @module A scripted A2A (v1.0) peer for tests: a Node HTTP server on 127.0.0.1 serving, per named behaviour, an
 * Agent Card at `/<name>/.well-known/agent-card.json` and JSON-RPC at `/<name>/a2a`, built on `@a2a-js/sdk/server`
 * (DefaultRequestHandler, JsonRpcTransportHandler, InMemoryTaskStore) with a scripted AgentExecutor. It records
 * every request, so a test can assert what reached the peer (a CancelTask, an Authorization header, nothing).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { AgentCard, type Message, type Part, Role, type Task, TaskState } from "@a2a-js/sdk";
import {
  type AgentExecutor,
  AgentEvent,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  type RequestContext,
  ServerCallContext,
  UnauthenticatedUser,
} from "@a2a-js/sdk/server";

/**
 * The behaviours:
 * - `complete`: WORKING, then (~100 ms later) an artifact with a text part, then COMPLETED;
 * - `fail`: FAILED with a status message;
 * - `input`: INPUT_REQUIRED asking "Which region?"; a message with the taskId completes it with an artifact echoing the answer;
 * - `hang`: WORKING until CancelTask (then CANCELED);
 * - `http500`: every JSON-RPC call answers HTTP 500; `garbage`: 200 with a body that is not JSON;
 * - `slow`: as `complete`, each JSON-RPC answer after `slowMs`;
 * - `big`: every JSON-RPC answer is 64 KiB, sent in chunks without a Content-Length;
 * - `foreign`: a card whose JSON-RPC interface is on another host (peer.invalid);
 * - `redirect`: every JSON-RPC call answers 307 to the `complete` behaviour's endpoint;
 * - `stream`: a card with `capabilities.streaming: true` whose endpoint serves SubscribeToTask as SSE; the task works
 *   for about 1.5 s (STREAM_STEPS: two status updates with a message, an artifact and a part appended to it), then
 *   COMPLETED;
 * - `streamhang`: streaming as `stream`, WORKING in silence until CancelTask;
 * - `streambig`: streaming as `stream`; after 300 ms an artifact update of 64 KiB of text, then COMPLETED.
 * The non-streaming behaviours answer a streaming call with a JSON-RPC error (-32004).
 */
export const PEER_BEHAVIOURS = ["complete", "fail", "input", "hang", "http500", "garbage", "slow", "big", "foreign", "redirect", "stream", "streamhang", "streambig"] as const;
export type PeerBehaviour = (typeof PEER_BEHAVIOURS)[number];

/** The behaviours whose card offers streaming. */
const STREAMING: ReadonlySet<PeerBehaviour> = new Set(["stream", "streamhang", "streambig"]);

export interface ScriptedPeerOptions {
  /** How long `slow` waits before each JSON-RPC answer (default 5 s). */
  slowMs?: number;
  /** When set, every request without exactly this Authorization header is answered 401. */
  authorization?: string;
}

export interface ScriptedPeer {
  /** The Agent Card URL of a behaviour. */
  cardUrl(name: PeerBehaviour): string;
  port: number;
  /** Every JSON-RPC call received, in order: its method and the task it names (params.id or message.taskId). */
  calls: { method: string; taskId?: string }[];
  /** Every HTTP request received, cards included, with its Authorization header. */
  requests: { path: string; authorization: string | null }[];
  close(): Promise<void>;
}

/** The artifact text of `complete` for a message text. */
export const completedText = (text: string) => `done: ${text}`;
/** The artifact text of `input` for an answer. */
export const regionText = (answer: string) => `region: ${answer}`;
export const INPUT_QUESTION = "Which region?";
export const FAILURE_TEXT = "The peer cannot do this: no capacity";
/** What `stream` does for a message text, in order: the status message or artifact text of each update. */
export const STREAM_STEPS = (text: string) =>
  [
    { status: "Reading the brief" },
    { artifact: `draft: ${text}` },
    { status: "Checking the draft" },
    { append: "checked" },
  ] as const;
/** The artifact text of `stream` once completed (its appended part joined as a GetTask answer's parts are). */
export const streamedText = (text: string) => `draft: ${text}\nchecked`;
/** The artifact text of `streambig` (64 KiB). */
export const BIG_ARTIFACT_TEXT = "y".repeat(65_536);

const textPart = (value: string): Part => ({ content: { $case: "text", value }, mediaType: "text/plain", filename: "", metadata: undefined });
const agentMessage = (rc: { taskId: string; contextId: string }, text: string): Message => ({
  messageId: crypto.randomUUID(),
  contextId: rc.contextId,
  taskId: rc.taskId,
  role: Role.ROLE_AGENT,
  parts: [textPart(text)],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});
const textOfMessage = (m: Message) => m.parts.flatMap((p) => (p.content?.$case === "text" ? [p.content.value] : [])).join("\n");
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function taskOf(rc: RequestContext, state: TaskState, statusText?: string): Task {
  return {
    id: rc.taskId,
    contextId: rc.contextId,
    status: { state, message: statusText === undefined ? undefined : agentMessage(rc, statusText), timestamp: new Date().toISOString() },
    artifacts: [],
    history: [...(rc.task?.history ?? []), rc.userMessage],
    metadata: undefined,
  };
}

function status(bus: ExecutionEventBus, rc: { taskId: string; contextId: string }, state: TaskState, statusText?: string): void {
  bus.publish(
    AgentEvent.statusUpdate({
      taskId: rc.taskId,
      contextId: rc.contextId,
      status: { state, message: statusText === undefined ? undefined : agentMessage(rc, statusText), timestamp: new Date().toISOString() },
      metadata: undefined,
    }),
  );
}

function artifact(bus: ExecutionEventBus, rc: RequestContext, text: string, append = false): void {
  bus.publish(
    AgentEvent.artifactUpdate({
      taskId: rc.taskId,
      contextId: rc.contextId,
      artifact: { artifactId: "result", name: "result", description: "", parts: [textPart(text)], metadata: undefined, extensions: [] },
      append,
      lastChunk: true,
      metadata: undefined,
    }),
  );
}

/** The scripted executor of one behaviour. */
class ScriptedExecutor implements AgentExecutor {
  /** Hanging tasks, released by CancelTask. */
  private readonly hanging = new Map<string, () => void>();

  constructor(private readonly behaviour: PeerBehaviour) {}

  async execute(rc: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const text = textOfMessage(rc.userMessage);
    switch (this.behaviour) {
      case "fail":
        bus.publish(AgentEvent.task(taskOf(rc, TaskState.TASK_STATE_WORKING)));
        status(bus, rc, TaskState.TASK_STATE_FAILED, FAILURE_TEXT);
        bus.finished();
        return;
      case "input":
        if (rc.task === undefined) {
          // Interrupted: the bus stays for the answer (DefaultRequestHandler keeps it at INPUT_REQUIRED).
          bus.publish(AgentEvent.task(taskOf(rc, TaskState.TASK_STATE_INPUT_REQUIRED, INPUT_QUESTION)));
          return;
        }
        bus.publish(AgentEvent.task(taskOf(rc, TaskState.TASK_STATE_WORKING)));
        await sleep(50);
        artifact(bus, rc, regionText(text));
        status(bus, rc, TaskState.TASK_STATE_COMPLETED);
        bus.finished();
        return;
      case "stream":
        bus.publish(AgentEvent.task(taskOf(rc, TaskState.TASK_STATE_WORKING)));
        for (const next of STREAM_STEPS(text)) {
          await sleep(300);
          if ("status" in next) status(bus, rc, TaskState.TASK_STATE_WORKING, next.status);
          else if ("artifact" in next) artifact(bus, rc, next.artifact);
          else artifact(bus, rc, next.append, true);
        }
        await sleep(300);
        status(bus, rc, TaskState.TASK_STATE_COMPLETED);
        bus.finished();
        return;
      case "streambig":
        bus.publish(AgentEvent.task(taskOf(rc, TaskState.TASK_STATE_WORKING)));
        await sleep(300);
        artifact(bus, rc, BIG_ARTIFACT_TEXT);
        status(bus, rc, TaskState.TASK_STATE_COMPLETED);
        bus.finished();
        return;
      case "streamhang":
      case "hang": {
        bus.publish(AgentEvent.task(taskOf(rc, TaskState.TASK_STATE_WORKING)));
        await new Promise<void>((release) => this.hanging.set(rc.taskId, release));
        return;
      }
      default:
        bus.publish(AgentEvent.task(taskOf(rc, TaskState.TASK_STATE_WORKING)));
        await sleep(100);
        artifact(bus, rc, completedText(text));
        status(bus, rc, TaskState.TASK_STATE_COMPLETED);
        bus.finished();
    }
  }

  async cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
    const release = this.hanging.get(taskId);
    this.hanging.delete(taskId);
    status(bus, { taskId, contextId: "" }, TaskState.TASK_STATE_CANCELED, "cancelled on request");
    bus.finished();
    release?.();
  }

  /** Lets every hanging execution end (the server is closing). */
  releaseAll(): void {
    for (const release of this.hanging.values()) release();
    this.hanging.clear();
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/**
 * Serves a streaming answer as SSE, one `data:` frame per JSON-RPC response. An error before the first event (an
 * unknown or terminal task) is a plain JSON-RPC error answer, as the SDK's own adapters send it. The stream stops
 * when the client goes away.
 */
async function serveStream(res: ServerResponse, events: AsyncGenerator<unknown, void, undefined>, id: unknown): Promise<void> {
  let first: IteratorResult<unknown, void>;
  try {
    first = await events.next();
  } catch (e) {
    json(res, 200, { jsonrpc: "2.0", id, error: JsonRpcTransportHandler.mapToJSONRPCError(e) });
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  res.on("close", () => void events.return(undefined).catch(() => undefined));
  for (let next = first; !next.done && !res.destroyed; next = await events.next()) res.write(`data: ${JSON.stringify(next.value)}\n\n`);
  res.end();
}

/** Starts the scripted peer on a free loopback port. */
export async function startScriptedPeer(opts: ScriptedPeerOptions = {}): Promise<ScriptedPeer> {
  const slowMs = opts.slowMs ?? 5_000;
  const calls: ScriptedPeer["calls"] = [];
  const requests: ScriptedPeer["requests"] = [];
  const timers = new Set<NodeJS.Timeout>();
  let base = "";
  const executors = new Map<PeerBehaviour, ScriptedExecutor>();
  const transports = new Map<PeerBehaviour, JsonRpcTransportHandler>();

  const cardOf = (name: PeerBehaviour) =>
    AgentCard.fromJSON({
      name: `scripted ${name}`,
      description: `A scripted A2A peer that behaves as "${name}".`,
      version: "1.0.0",
      supportedInterfaces: [{ url: name === "foreign" ? "http://peer.invalid:9/a2a" : `${base}/${name}/a2a`, protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
      capabilities: { streaming: STREAMING.has(name), pushNotifications: false },
      defaultInputModes: ["text/plain"],
      defaultOutputModes: ["text/plain"],
      skills: [{ id: name, name, description: `behaves as ${name}`, tags: ["test"] }],
    });

  const transportOf = (name: PeerBehaviour): JsonRpcTransportHandler => {
    let transport = transports.get(name);
    if (transport === undefined) {
      const executor = new ScriptedExecutor(name);
      executors.set(name, executor);
      transport = new JsonRpcTransportHandler(new DefaultRequestHandler(cardOf(name), new InMemoryTaskStore(), executor));
      transports.set(name, transport);
    }
    return transport;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? "/", "http://peer").pathname;
    const authorization = req.headers.authorization ?? null;
    requests.push({ path, authorization });
    const body = await readBody(req);
    if (opts.authorization !== undefined && authorization !== opts.authorization) {
      res.writeHead(401, { "content-type": "text/plain", "www-authenticate": 'Bearer realm="scripted-peer"' });
      res.end("unauthorized");
      return;
    }
    const match = /^\/([a-z0-9]+)\/(\.well-known\/agent-card\.json|a2a)$/.exec(path);
    const name = match?.[1] as PeerBehaviour | undefined;
    if (match === null || name === undefined || !PEER_BEHAVIOURS.includes(name)) {
      json(res, 404, { error: "no such behaviour" });
      return;
    }
    if (match[2] !== "a2a") {
      json(res, 200, AgentCard.toJSON(cardOf(name)));
      return;
    }
    if (req.method !== "POST") {
      json(res, 405, { error: "POST only" });
      return;
    }
    let rpc: { id?: unknown; method?: unknown; params?: { id?: unknown; message?: { taskId?: unknown } } } = {};
    try {
      rpc = JSON.parse(body) as typeof rpc;
    } catch {
      // The transport handler answers it.
    }
    const taskId = typeof rpc.params?.id === "string" ? rpc.params.id : typeof rpc.params?.message?.taskId === "string" ? rpc.params.message.taskId : undefined;
    calls.push({ method: String(rpc.method ?? ""), ...(taskId === undefined ? {} : { taskId }) });
    switch (name) {
      case "http500":
        res.writeHead(500, { "content-type": "text/plain" });
        res.end("Internal Server Error");
        return;
      case "redirect":
        res.writeHead(307, { location: `${base}/complete/a2a` });
        res.end();
        return;
      case "garbage":
        res.writeHead(200, { "content-type": "application/json" });
        res.end("<html>this is not JSON</html>");
        return;
      case "big": {
        res.writeHead(200, { "content-type": "application/json" });
        const chunk = "x".repeat(4_096);
        res.write(`{"jsonrpc":"2.0","id":${JSON.stringify(rpc.id ?? null)},"result":{"task":{"id":"big","metadata":{"padding":"`);
        for (let i = 0; i < 16; i++) res.write(chunk);
        res.end(`"}}}}`);
        return;
      }
      case "slow":
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            timers.delete(timer);
            resolve();
          }, slowMs);
          timers.add(timer);
        });
        if (res.destroyed) return;
        break;
      default:
        break;
    }
    const answer = await transportOf(name).handle(body, new ServerCallContext({ user: new UnauthenticatedUser(), requestedVersion: req.headers["a2a-version"] as string | undefined }));
    if (Symbol.asyncIterator in (answer as object)) {
      if (!STREAMING.has(name)) {
        json(res, 200, { jsonrpc: "2.0", id: rpc.id ?? null, error: { code: -32004, message: "streaming is not supported by this peer" } });
        return;
      }
      await serveStream(res, answer as AsyncGenerator<unknown, void, undefined>, rpc.id ?? null);
      return;
    }
    json(res, 200, answer);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) json(res, 500, { error: e instanceof Error ? e.message : String(e) });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
  return {
    cardUrl: (name) => `${base}/${name}/.well-known/agent-card.json`,
    port,
    calls,
    requests,
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const executor of executors.values()) executor.releaseAll();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
