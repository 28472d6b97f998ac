/**
 * @module The outbound A2A (v1.0) client of delegated steps: SendMessage, GetTask and CancelTask on a peer agent
 * through `@a2a-js/sdk`'s JSON-RPC client, with a fetch of ours under it that enforces the host allowlist, a
 * timeout and a response size limit on every request, and sends a stored credential only to its own origin.
 * Runs inside workerd (a task object's alarm): no Node APIs. Never throws: every failure is a PeerResult.
 */
import { type AgentCard, type Message, Role, type Task, TaskState } from "@a2a-js/sdk";
import { type Client, ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { A2AError, isJsonRpcError } from "@a2a-js/sdk/errors";

/** Where and how the runtime may call peers (A2A_PEER_ALLOWLIST, A2A_PEER_TIMEOUT_MS, A2A_PEER_MAX_RESPONSE_BYTES). */
export interface PeerLimits {
  /** `host` or `host:port` (case-insensitive), `loopback` (127.0.0.0/8, ::1, localhost) or `*`; empty: nothing. */
  allowlist: readonly string[];
  /** Each HTTP call (the card's or a JSON-RPC call), body included, is aborted after this long. */
  timeoutMs: number;
  /** Bytes of one response body past which it is abandoned. */
  maxResponseBytes: number;
}

/** What we record of the peer's task. */
export interface PeerTask {
  remote_task_id: string;
  remote_context_id: string | null;
  /** The A2A v1.0 TaskState as the peer says it, e.g. "TASK_STATE_WORKING". */
  remote_status: string;
  /** The text parts of the status message (e.g. the INPUT_REQUIRED question), at most TEXT_LIMIT characters. */
  status_message: string | null;
  /** Each artifact with its text parts joined (at most TEXT_LIMIT characters), or null when it has none. */
  artifacts: { artifact_id: string; name: string | null; text: string | null }[];
}

/** Why a peer call failed. */
export type PeerFailureCode = "not_allowed" | "unreachable" | "timeout" | "http_error" | "malformed" | "too_large" | "rpc_error" | "no_task";

export type PeerResult =
  | { ok: true; task: PeerTask; streaming: boolean }
  | { ok: false; code: PeerFailureCode; message: string; retryable: boolean };

/** Characters kept of a status message or of one artifact's text. */
export const PEER_TEXT_LIMIT = 4_000;
/** How long a fetched Agent Card (and the client built from it) is used before it is fetched again. */
export const CARD_TTL_MS = 5 * 60_000;
/** Characters of a peer's error body quoted in a failure message. */
const EXCERPT = 200;

type Failure = Extract<PeerResult, { ok: false }>;

/** A failure found by our fetch; thrown through the SDK and recognised on the way out (also as an error's cause). */
class PeerFailure extends Error {
  constructor(readonly failure: Failure) {
    super(failure.message);
  }
}

const failure = (code: PeerFailureCode, message: string, retryable: boolean): Failure => ({ ok: false, code, message, retryable });

// Retryable or not, and why:
// - not_allowed: our own configuration refuses the host; a retry asks the same allowlist.
const notAllowed = (url: string) => failure("not_allowed", `the host of ${url.slice(0, EXCERPT)} is not in A2A_PEER_ALLOWLIST`, false);
// - unreachable: DNS, a refused or reset connection: usually passing (a peer restarting, a network blip).
const unreachable = (url: string, e: unknown) => failure("unreachable", `${url.slice(0, EXCERPT)} could not be reached: ${messageOf(e)}`, true);
// - timeout: a slow peer may well answer the next time.
const timedOut = (url: string, ms: number) => failure("timeout", `${url.slice(0, EXCERPT)} did not answer within ${ms} ms`, true);
// - too_large: the same request gets the same oversized answer again.
const tooLarge = (url: string, max: number) => failure("too_large", `the answer of ${url.slice(0, EXCERPT)} is larger than ${max} bytes`, false);
// - http_error: 5xx and 429 are the peer's passing trouble or its request to come back later; any other status
//   (4xx, a redirect we do not follow) says the request itself is refused, which a retry does not change.
const httpError = (url: string, status: number, excerpt: string) =>
  failure("http_error", `${url.slice(0, EXCERPT)} answered HTTP ${status}${excerpt === "" ? "" : `: ${excerpt}`}`, status >= 500 || status === 429);
// - malformed: an answer that is not JSON or not A2A is how that peer answers; retrying reads the same.
const malformed = (what: string) => failure("malformed", what.slice(0, 1_000), false);
// - rpc_error: the peer understood and refused (task not found, not cancelable, invalid params): a decision.
const rpcError = (code: number | null, message: string) => failure("rpc_error", `the peer answered JSON-RPC error${code === null ? "" : ` ${code}`}: ${message}`.slice(0, 1_000), false);
// - no_task: the peer answered the message with a Message, not a Task: nothing to follow; a retry of the same
//   message gets the same kind of answer.
const noTask = () => failure("no_task", "the peer answered the message with a Message, not a Task: there is no remote task to follow", false);

function messageOf(e: unknown): string {
  const cause = e instanceof Error && e.cause instanceof Error ? ` (${e.cause.message})` : "";
  return (e instanceof Error ? e.message : String(e)).slice(0, EXCERPT) + cause.slice(0, EXCERPT);
}

const isLoopback = (hostname: string) => hostname === "localhost" || hostname === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);

/**
 * Whether a request to `url` is allowed: http(s) only, and its host matches an entry (`host` any port,
 * `host:port` that port, `loopback`, or `*`). Hosts compare as the URL parser normalises them (lowercase;
 * IPv4 in dotted form; IPv6 in brackets, e.g. `[::1]:8080`).
 */
export function hostAllowed(url: string, allowlist: readonly string[]): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return false;
  const hostname = parsed.hostname.toLowerCase();
  const port = parsed.port === "" ? (parsed.protocol === "https:" ? "443" : "80") : parsed.port;
  for (const raw of allowlist) {
    const entry = raw.trim().toLowerCase();
    if (entry === "") continue;
    if (entry === "*") return true;
    if (entry === "loopback") {
      if (isLoopback(hostname)) return true;
      continue;
    }
    const match = /^(\[[0-9a-f:.]+\]|[^:[\]/]+)(?::(\d{1,5}))?$/.exec(entry);
    if (match === null) continue;
    if (match[1] === hostname && (match[2] === undefined || Number(match[2]) === Number(port))) return true;
  }
  return false;
}

/** Text parts joined with newlines, cut to PEER_TEXT_LIMIT; null when there are none. */
function textOf(parts: readonly { content?: { $case: string; value: unknown } | undefined }[] | undefined): string | null {
  const texts = (parts ?? []).flatMap((p) => (p.content?.$case === "text" && typeof p.content.value === "string" ? [p.content.value] : []));
  return texts.length === 0 ? null : texts.join("\n").slice(0, PEER_TEXT_LIMIT);
}

/** The peer's Task as we record it; null when it lacks what identifies it (id and status). */
function peerTaskOf(task: Task): PeerTask | null {
  if (typeof task?.id !== "string" || task.id === "" || task.status === undefined) return null;
  const state = task.status.state;
  return {
    remote_task_id: task.id,
    remote_context_id: task.contextId === "" ? null : task.contextId,
    remote_status: TaskState[state] ?? "UNRECOGNIZED",
    status_message: textOf(task.status.message?.parts),
    artifacts: (task.artifacts ?? []).map((a) => ({ artifact_id: a.artifactId, name: a.name === "" ? null : a.name, text: textOf(a.parts) })),
  };
}

/** The URL of a fetch's first argument. */
function urlOf(input: RequestInfo | URL): string {
  return input instanceof URL ? input.href : typeof input === "string" ? input : input.url;
}

/** A cached Agent Card: the client built from it and its streaming capability, until `expires`. */
interface CardEntry {
  client: Client;
  streaming: boolean;
  expires: number;
}

/** The client of our delegated steps' peers; one per task object (its card cache lives as long as it does). */
export class PeerClient {
  private readonly cards = new Map<string, CardEntry>();
  private readonly fetchImpl: typeof fetch;
  private readonly limitedFetch: typeof fetch;

  constructor(
    private readonly limits: PeerLimits,
    fetchImpl?: typeof fetch,
    private readonly authorizationFor?: (origin: string) => Promise<string | null>,
  ) {
    // Called detached: a bound global fetch (workerd's refuses another `this`).
    this.fetchImpl = fetchImpl ?? ((input, init) => fetch(input, init));
    this.limitedFetch = (input, init) => this.fetchLimited(input, init);
  }

  /** SendMessage (returnImmediately: the peer answers with its task at once; we follow it with get). */
  async send(cardUrl: string, m: { message_id: string; text: string; context_id?: string; task_id?: string }): Promise<PeerResult> {
    return this.call(cardUrl, async (client) => {
      const message: Message = {
        // The caller derives it from its intent: a retried send carries the same id, so the peer can tell.
        messageId: m.message_id,
        contextId: m.context_id ?? "",
        taskId: m.task_id ?? "",
        role: Role.ROLE_USER,
        parts: [{ content: { $case: "text", value: m.text }, mediaType: "text/plain", filename: "", metadata: undefined }],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      };
      const answer = await client.sendMessage({
        tenant: "",
        message,
        configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
        metadata: undefined,
      });
      if (answer !== null && typeof answer === "object" && "messageId" in answer) return noTask();
      return answer;
    });
  }

  /** GetTask. */
  async get(cardUrl: string, remoteTaskId: string): Promise<PeerResult> {
    return this.call(cardUrl, (client) => client.getTask({ tenant: "", id: remoteTaskId }));
  }

  /** CancelTask. */
  async cancel(cardUrl: string, remoteTaskId: string): Promise<PeerResult> {
    return this.call(cardUrl, (client) => client.cancelTask({ tenant: "", id: remoteTaskId, metadata: undefined }));
  }

  /** Runs one call on the card's client; every outcome as a PeerResult. */
  private async call(cardUrl: string, run: (client: Client) => Promise<Task | Failure>): Promise<PeerResult> {
    try {
      const entry = await this.clientFor(cardUrl);
      if ("ok" in entry) return entry;
      const answer = await run(entry.client);
      if ("ok" in answer && answer.ok === false) return answer;
      const task = peerTaskOf(answer as Task);
      if (task === null) return malformed("the peer's answer is not an A2A Task (no id or status)");
      return { ok: true, task, streaming: entry.streaming };
    } catch (e) {
      return failureOf(e);
    }
  }

  /** The client of the card at `cardUrl`: fetched (within the limits), checked and cached for CARD_TTL_MS. */
  private async clientFor(cardUrl: string): Promise<CardEntry | Failure> {
    const now = Date.now();
    const cached = this.cards.get(cardUrl);
    if (cached !== undefined && cached.expires > now) return cached;
    this.cards.delete(cardUrl);
    if (!hostAllowed(cardUrl, this.limits.allowlist)) return notAllowed(cardUrl);
    const response = await this.limitedFetch(cardUrl, { method: "GET", headers: { "A2A-Version": "1.0", Accept: "application/json" } });
    const raw = (await response.json()) as unknown;
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return malformed(`the Agent Card at ${cardUrl.slice(0, EXCERPT)} is not a JSON object`);
    const resolver = new DefaultAgentCardResolver({ fetchImpl: this.limitedFetch });
    const card = resolver.normalizeAgentCard(raw as AgentCard);
    const rpc = jsonRpcInterfaceOf(card);
    if (rpc === null) return malformed(`the Agent Card at ${cardUrl.slice(0, EXCERPT)} has no JSONRPC interface with a URL`);
    // Checked here too (every request is checked again): a refusal before any JSON-RPC request is sent.
    if (!hostAllowed(rpc, this.limits.allowlist)) return notAllowed(rpc);
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl: this.limitedFetch })],
        cardResolver: resolver,
        preferredTransports: ["JSONRPC"],
        clientConfig: { polling: true },
      }),
    );
    let client: Client;
    try {
      client = await factory.createFromAgentCard(card);
    } catch (e) {
      return malformed(`no JSON-RPC client for the Agent Card at ${cardUrl.slice(0, EXCERPT)}: ${messageOf(e)}`);
    }
    const entry: CardEntry = { client, streaming: card.capabilities?.streaming === true, expires: now + CARD_TTL_MS };
    this.cards.set(cardUrl, entry);
    return entry;
  }

  /**
   * The fetch under the SDK: an allowed host, our Authorization (only to the origin it was stored for, any other
   * dropped), no redirects followed (one could lead off the allowlist), a timeout covering the body, and the body
   * read whole within maxResponseBytes and checked to be JSON. Failures are thrown as PeerFailure.
   */
  private async fetchLimited(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
    const url = urlOf(input);
    if (!hostAllowed(url, this.limits.allowlist)) throw new PeerFailure(notAllowed(url));
    const origin = new URL(url).origin;
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    headers.delete("authorization");
    let authorization: string | null = null;
    try {
      authorization = this.authorizationFor === undefined ? null : await this.authorizationFor(origin);
    } catch (e) {
      throw new PeerFailure(failure("unreachable", `the credential for ${origin} could not be read: ${messageOf(e)}`, true));
    }
    if (authorization !== null && authorization !== "") headers.set("authorization", authorization);
    const { timeoutMs, maxResponseBytes } = this.limits;
    const signal = AbortSignal.timeout(timeoutMs);
    let response: Response;
    try {
      response = await this.fetchImpl(url, {
        method: init?.method ?? "GET",
        headers,
        ...(init?.body == null ? {} : { body: init.body }),
        redirect: "manual",
        signal,
      });
    } catch (e) {
      throw new PeerFailure(signal.aborted ? timedOut(url, timeoutMs) : unreachable(url, e));
    }
    const declared = response.headers.get("content-length");
    if (declared !== null && /^\d+$/.test(declared.trim()) && Number(declared) > maxResponseBytes) {
      await response.body?.cancel().catch(() => undefined);
      throw new PeerFailure(tooLarge(url, maxResponseBytes));
    }
    const bytes = await readLimited(response, maxResponseBytes, signal, url, timeoutMs);
    const text = new TextDecoder().decode(bytes);
    if (response.status < 200 || response.status > 299) throw new PeerFailure(httpError(url, response.status, text.slice(0, EXCERPT)));
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new PeerFailure(malformed(`the answer of ${url.slice(0, EXCERPT)} is not JSON: ${JSON.stringify(text.slice(0, 80))}`));
    }
    // The SDK decodes a `raw` (bytes) part with the global Buffer, which workerd has only with nodejs_compat: such a
    // part would fail the whole answer. We record text parts only, so bytes parts are dropped before decoding.
    if (text.includes('"raw"')) return Response.json(withoutRawParts(parsed), { status: response.status });
    return new Response(bytes, { status: response.status, statusText: response.statusText, headers: { "content-type": response.headers.get("content-type") ?? "application/json" } });
  }
}

/** The body read through a counting reader: too_large past `max` bytes, timeout when `signal` aborts first. */
async function readLimited(response: Response, max: number, signal: AbortSignal, url: string, timeoutMs: number): Promise<Uint8Array> {
  if (response.body === null) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  // The fetch's own signal should end the body too; this makes sure a stalled read does not outlive it.
  let onAbort: () => void = () => undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new PeerFailure(timedOut(url, timeoutMs)));
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  aborted.catch(() => undefined);
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await Promise.race([reader.read(), aborted]);
      } catch (e) {
        if (e instanceof PeerFailure) throw e;
        throw new PeerFailure(signal.aborted ? timedOut(url, timeoutMs) : unreachable(url, e));
      }
      if (chunk.done) break;
      total += chunk.value.byteLength;
      if (total > max) throw new PeerFailure(tooLarge(url, max));
      chunks.push(chunk.value);
    }
  } catch (e) {
    await reader.cancel().catch(() => undefined);
    throw e;
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/** The JSON with the `raw` field of every part (an object in a `parts` array) removed. */
function withoutRawParts(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutRawParts);
  if (value === null || typeof value !== "object") return value;
  // No prototype: a "__proto__" key of the peer's JSON stays a plain key.
  const out: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const [key, v] of Object.entries(value)) {
    out[key] = key === "parts" && Array.isArray(v) ? v.map((part) => withoutRawParts(isObject(part) ? Object.fromEntries(Object.entries(part).filter(([k]) => k !== "raw")) : part)) : withoutRawParts(v);
  }
  return out;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** The URL of the card's JSON-RPC interface, chosen as the SDK's client factory chooses (a 1.0 one first). */
function jsonRpcInterfaceOf(card: AgentCard): string | null {
  let chosen: { url: string; protocolVersion: string } | undefined;
  for (const i of Array.isArray(card.supportedInterfaces) ? card.supportedInterfaces : []) {
    if (typeof i?.protocolBinding !== "string" || i.protocolBinding.toUpperCase() !== "JSONRPC") continue;
    if (chosen === undefined || i.protocolVersion === "1.0") chosen = i;
  }
  return typeof chosen?.url === "string" && chosen.url !== "" ? chosen.url : null;
}

/** What a thrown error means as a PeerResult. */
function failureOf(e: unknown): Failure {
  for (let cause: unknown = e, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    if (cause instanceof PeerFailure) return cause.failure;
  }
  if (isJsonRpcError(e)) return rpcError(e.envelopeCode, e.message);
  if (e instanceof A2AError) return rpcError(null, e.message);
  // Anything else the SDK threw is an answer it could not use: a wrong JSON-RPC version or id, no payload.
  return malformed(`the peer's answer is not a usable A2A JSON-RPC answer: ${messageOf(e)}`);
}
