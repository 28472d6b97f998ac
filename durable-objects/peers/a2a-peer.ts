/**
 * @module The outbound A2A (v1.0) client of delegated steps: SendMessage, GetTask, CancelTask and SubscribeToTask on
 * a peer agent through `@a2a-js/sdk`'s JSON-RPC client, with a fetch of ours under it that enforces the host
 * allowlist (peer-targets.ts), the Agent Card's origin, a timeout and a response size limit on every request (per
 * event and per silence for a stream), and sends a stored credential only to its own origin.
 * Runs inside workerd (a task object's alarm): no Node APIs. Never throws: every failure is a PeerResult.
 */
import { type AgentCard, type Message, Role, type Task } from "@a2a-js/sdk";
import { type Client, ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { A2AError, isJsonRpcError } from "@a2a-js/sdk/errors";
import { foldStreamEvent, jsonRpcInterfaceOf, type PeerTask, peerTaskOf, readWithin, type StreamCut, sseWithinLimits, TERMINAL_STATES, withoutRawParts } from "./a2a-peer-stream.js";
import { targetRefusal } from "./peer-targets.js";

export { PEER_TEXT_LIMIT, type PeerTask } from "./a2a-peer-stream.js";
export { hostAllowed } from "./peer-targets.js";

/** Where and how the runtime may call peers (OUTBOUND_ALLOWLIST, A2A_PEER_TIMEOUT_MS, A2A_PEER_MAX_RESPONSE_BYTES). */
export interface PeerLimits {
  /**
   * `host` or `host:port` (case-insensitive), `loopback` (127.0.0.0/8, ::1, localhost) or `*` (any host but a
   * loopback, private or link-local one, which must be named: peer-targets.ts); empty: nothing.
   */
  allowlist: readonly string[];
  /** Each HTTP call (the card's or a JSON-RPC call), body included, is aborted after this long. */
  timeoutMs: number;
  /** Bytes of one response body (of one event, for a stream) past which it is abandoned. */
  maxResponseBytes: number;
  /** How long one SubscribeToTask stream is read at most (default STREAM_LIFE_MS); a stream's silence is cut after timeoutMs. */
  streamLifeMs?: number;
}

/** Why a peer call failed. */
export type PeerFailureCode = "not_allowed" | "unreachable" | "timeout" | "http_error" | "malformed" | "too_large" | "rpc_error" | "no_task" | "stream_ended";

/** Follows the peer's task by its stream (PeerClient.subscribe bound to the card and the task). */
export type PeerSubscribe = (onTask: (task: PeerTask) => Promise<void>, signal?: AbortSignal) => Promise<PeerResult>;

export type PeerResult =
  /** `subscribe` is there when the card offers streaming (`streaming` true). */
  | { ok: true; task: PeerTask; streaming: boolean; subscribe?: PeerSubscribe }
  | { ok: false; code: PeerFailureCode; message: string; retryable: boolean };

/** How long one SubscribeToTask stream is read at most, unless PeerLimits says otherwise. */
export const STREAM_LIFE_MS = 5 * 60_000;
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
// - not_allowed: our own configuration refuses the host, or the card sends us off its origin; a retry asks the same.
const notAllowed = (why: string) => failure("not_allowed", why, false);
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
// - stream_ended: a stream closed before a terminal state (by the peer, by its life's end, or by the caller); the
//   peer may stream again, or be polled.
const streamEnded = (why: string) => failure("stream_ended", why, true);
// - no_task: the peer answered the message with a Message, not a Task: nothing to follow; a retry of the same
//   message gets the same kind of answer.
const noTask = () => failure("no_task", "the peer answered the message with a Message, not a Task: there is no remote task to follow", false);

function messageOf(e: unknown): string {
  const cause = e instanceof Error && e.cause instanceof Error ? ` (${e.cause.message})` : "";
  return (e instanceof Error ? e.message : String(e)).slice(0, EXCERPT) + cause.slice(0, EXCERPT);
}

/** The origin of a URL, or null when it is not one. */
function originOf(url: string): string | null {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

/** The URL of a fetch's first argument. */
function urlOf(input: RequestInfo | URL): string {
  return input instanceof URL ? input.href : typeof input === "string" ? input : input.url;
}

/** One SubscribeToTask under way: why our reader cut it, if it did, and the abort of its request. */
interface StreamCall {
  cut: Failure | null;
  abort: AbortController;
}

/** A cached Agent Card: the client built from it and its streaming capability, until `expires`. */
interface CardEntry {
  card: AgentCard;
  /** The card's origin, the only one its client's requests may go to. */
  origin: string;
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
  async send(cardUrl: string, m: { message_id: string; text: string; context_id?: string; task_id?: string; action_id?: string }): Promise<PeerResult> {
    return this.call(cardUrl, async (client) => {
      const message: Message = {
        // The caller derives it from its intent: a retried send carries the same id, so the peer can tell.
        messageId: m.message_id,
        contextId: m.context_id ?? "",
        taskId: m.task_id ?? "",
        role: Role.ROLE_USER,
        parts: [{ content: { $case: "text", value: m.text }, mediaType: "text/plain", filename: "", metadata: undefined }],
        // An answer names the peer's question it answers, as the peer's status message named it.
        metadata: m.action_id === undefined ? undefined : { actionId: m.action_id },
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

  /**
   * SubscribeToTask: reads the peer's stream of `remoteTaskId`, folds its events into the task's view and calls
   * `onTask` after each change (awaited: the views are recorded in order). Resolves with the last view once the
   * stream ends after a terminal state; otherwise (a card without streaming, a refusal, a cut, an end before a
   * terminal state, `signal` aborted) with a failure. Each event is held to maxResponseBytes, a silence to
   * timeoutMs, the whole stream to streamLifeMs.
   */
  async subscribe(cardUrl: string, remoteTaskId: string, onTask: (task: PeerTask) => Promise<void>, signal?: AbortSignal): Promise<PeerResult> {
    const call: StreamCall = { cut: null, abort: new AbortController() };
    const stop = () => call.abort.abort();
    signal?.addEventListener("abort", stop, { once: true });
    let view: PeerTask | null = null;
    try {
      if (signal?.aborted) return streamEnded("the stream was closed before it opened");
      const entry = await this.clientFor(cardUrl);
      if ("ok" in entry) return entry;
      if (!entry.streaming) return failure("rpc_error", `the Agent Card at ${cardUrl.slice(0, EXCERPT)} does not offer streaming`, false);
      const client = await this.factory((input, init) => this.fetchStreaming(input, init, call, entry.origin)).createFromAgentCard(entry.card);
      for await (const event of client.resubscribeTask({ tenant: "", id: remoteTaskId }, { signal: call.abort.signal })) {
        const next = foldStreamEvent(view, event);
        if (next === view || next === null) continue;
        view = next;
        await onTask(view);
      }
      if (call.cut !== null) return call.cut;
      if (view !== null && TERMINAL_STATES.has(view.remote_status)) return { ok: true, task: view, streaming: true };
      return signal?.aborted ? streamEnded("the stream was closed by its reader") : streamEnded(`the stream of task ${remoteTaskId} ended before a terminal state (last: ${view?.remote_status ?? "nothing"})`);
    } catch (e) {
      if (call.cut !== null) return call.cut;
      if (signal?.aborted) return streamEnded("the stream was closed by its reader");
      return failureOf(e);
    } finally {
      signal?.removeEventListener("abort", stop);
      stop();
    }
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
      if (!entry.streaming) return { ok: true, task, streaming: false };
      const subscribe: PeerSubscribe = (onTask, signal) => this.subscribe(cardUrl, task.remote_task_id, onTask, signal);
      return { ok: true, task, streaming: true, subscribe };
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
    const refused = targetRefusal(cardUrl, this.limits.allowlist);
    if (refused !== null) return notAllowed(refused);
    const response = await this.limitedFetch(cardUrl, { method: "GET", headers: { "A2A-Version": "1.0", Accept: "application/json" } });
    const raw = (await response.json()) as unknown;
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return malformed(`the Agent Card at ${cardUrl.slice(0, EXCERPT)} is not a JSON object`);
    const resolver = new DefaultAgentCardResolver({ fetchImpl: this.limitedFetch });
    const card = resolver.normalizeAgentCard(raw as AgentCard);
    const rpc = jsonRpcInterfaceOf(card);
    if (rpc === null) return malformed(`the Agent Card at ${cardUrl.slice(0, EXCERPT)} has no JSONRPC interface with a URL`);
    // A card speaks for its own origin only: a JSON-RPC URL elsewhere would get that origin's stored credential on
    // the card's word (every request of its client is held to the card's origin again in `open`).
    const origin = new URL(cardUrl).origin;
    if (originOf(rpc) !== origin) return notAllowed(`the Agent Card at ${cardUrl.slice(0, EXCERPT)} puts its JSON-RPC interface at ${rpc.slice(0, EXCERPT)}, off the card's origin ${origin}: calls go to the card's origin only`);
    let client: Client;
    try {
      client = await this.factory((input, init) => this.fetchLimited(input, init, origin)).createFromAgentCard(card);
    } catch (e) {
      return malformed(`no JSON-RPC client for the Agent Card at ${cardUrl.slice(0, EXCERPT)}: ${messageOf(e)}`);
    }
    const entry: CardEntry = { card, origin, client, streaming: card.capabilities?.streaming === true, expires: now + CARD_TTL_MS };
    this.cards.set(cardUrl, entry);
    return entry;
  }

  /** A client factory of JSON-RPC clients over `fetchImpl`. */
  private factory(fetchImpl: typeof fetch): ClientFactory {
    return new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl })],
        cardResolver: new DefaultAgentCardResolver({ fetchImpl: this.limitedFetch }),
        preferredTransports: ["JSONRPC"],
        clientConfig: { polling: true },
      }),
    );
  }

  /**
   * The fetch under the SDK: an allowed host, our Authorization (only to the origin it was stored for, any other
   * dropped), no redirects followed (one could lead off the allowlist), a timeout covering the body, and the body
   * read whole within maxResponseBytes and checked to be JSON. Failures are thrown as PeerFailure.
   */
  private async fetchLimited(input: RequestInfo | URL, init?: RequestInit, origin?: string): Promise<Response> {
    const signal = AbortSignal.timeout(this.limits.timeoutMs);
    const { url, response } = await this.open(input, init, signal, origin);
    return this.readWhole(url, response, signal);
  }

  /**
   * The fetch under a SubscribeToTask: as fetchLimited up to the answer's headers (which must come within
   * timeoutMs); an SSE answer is then passed on event by event within the stream's limits, any other (an error, a
   * JSON-RPC refusal) read whole as fetchLimited reads it. A cut is kept in `call`, whatever the SDK makes of it.
   */
  private async fetchStreaming(input: RequestInfo | URL, init: RequestInit | undefined, call: StreamCall, origin: string): Promise<Response> {
    const { timeoutMs, maxResponseBytes } = this.limits;
    const headersDue = setTimeout(() => call.abort.abort(), timeoutMs);
    let opened: { url: string; response: Response };
    try {
      opened = await this.open(input, init, call.abort.signal, origin);
    } finally {
      clearTimeout(headersDue);
    }
    const { url, response } = opened;
    const sse = (response.headers.get("content-type") ?? "").toLowerCase().startsWith("text/event-stream");
    if (response.status !== 200 || !sse || response.body === null) return this.readWhole(url, response, AbortSignal.any([call.abort.signal, AbortSignal.timeout(timeoutMs)]));
    const life = this.limits.streamLifeMs ?? STREAM_LIFE_MS;
    const cuts: Record<StreamCut, () => Failure> = {
      idle: () => timedOut(url, timeoutMs),
      life: () => streamEnded(`the stream of ${url.slice(0, EXCERPT)} was closed after ${life} ms, its longest life`),
      too_large: () => tooLarge(url, maxResponseBytes),
    };
    const body = sseWithinLimits(response.body, {
      idleMs: timeoutMs,
      lifeMs: life,
      maxEventBytes: maxResponseBytes,
      cut: (why) => {
        call.cut ??= cuts[why]();
        return new PeerFailure(call.cut);
      },
      ended: () => call.abort.abort(),
    });
    return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
  }

  /**
   * Sends the request to an allowed host (on `cardOrigin`, for a card's client) with our Authorization for its
   * origin only, following no redirect.
   */
  private async open(input: RequestInfo | URL, init: RequestInit | undefined, signal: AbortSignal, cardOrigin?: string): Promise<{ url: string; response: Response }> {
    const url = urlOf(input);
    const refused = targetRefusal(url, this.limits.allowlist);
    if (refused !== null) throw new PeerFailure(notAllowed(refused));
    const origin = new URL(url).origin;
    if (cardOrigin !== undefined && origin !== cardOrigin) throw new PeerFailure(notAllowed(`${url.slice(0, EXCERPT)} is off the Agent Card's origin ${cardOrigin}`));
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    headers.delete("authorization");
    let authorization: string | null = null;
    try {
      authorization = this.authorizationFor === undefined ? null : await this.authorizationFor(origin);
    } catch (e) {
      throw new PeerFailure(failure("unreachable", `the credential for ${origin} could not be read: ${messageOf(e)}`, true));
    }
    if (authorization !== null && authorization !== "") headers.set("authorization", authorization);
    try {
      const response = await this.fetchImpl(url, {
        method: init?.method ?? "GET",
        headers,
        ...(init?.body == null ? {} : { body: init.body }),
        redirect: "manual",
        signal,
      });
      return { url, response };
    } catch (e) {
      throw new PeerFailure(signal.aborted ? timedOut(url, this.limits.timeoutMs) : unreachable(url, e));
    }
  }

  /** The answer read whole within maxResponseBytes before `signal` aborts, and checked to be JSON (2xx) or an http_error. */
  private async readWhole(url: string, response: Response, signal: AbortSignal): Promise<Response> {
    const { timeoutMs, maxResponseBytes } = this.limits;
    const declared = response.headers.get("content-length");
    if (declared !== null && /^\d+$/.test(declared.trim()) && Number(declared) > maxResponseBytes) {
      await response.body?.cancel().catch(() => undefined);
      throw new PeerFailure(tooLarge(url, maxResponseBytes));
    }
    const bytes = await readWithin(response, maxResponseBytes, signal, {
      timeout: () => new PeerFailure(timedOut(url, timeoutMs)),
      tooLarge: () => new PeerFailure(tooLarge(url, maxResponseBytes)),
      broken: (e) => new PeerFailure(unreachable(url, e)),
    });
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
