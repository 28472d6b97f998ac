/**
 * @module A2A protocol 1.0 over JSON-RPC (docs/protocols/a2a.md): the public Agent Card at `/.well-known/agent-card.json`
 * and `POST /a2a`, which checks the request itself (token, Content-Type, JSON, envelope, A2A-Version), then hands
 * it to the official SDK's `JsonRpcTransportHandler` around our handler; streams are answered as SSE.
 */
import { AgentCard } from "@a2a-js/sdk";
import { ContentTypeNotSupportedError, RequestMalformedError, VersionNotSupportedError } from "@a2a-js/sdk/errors";
import { type A2ARequestHandler, JsonRpcTransportHandler, ServerCallContext, type User } from "@a2a-js/sdk/server";
import type { Context } from "hono";
import { secretsEqual, TOKEN_REFUSAL_MESSAGES, type TokenRefusalReason, tokenIdentity } from "../../durable-objects/shared/tokens.js";
import { admitToken } from "../../durable-objects/shared/revocations.js";
import { watchToken } from "../http/subscriber-relay.js";
import { MAX_DOCUMENT_DEPTH, jsonTextDepth } from "../../src/core/index.js";
import { readConfig } from "../../durable-objects/shared/env.js";
import { hexOf } from "../../src/lib/hex.js";
import { reportIncident } from "../../durable-objects/shared/incident.js";
import { RuntimeA2AHandler, STREAM_GONE } from "./a2a-handler.js";
import { INPUT_MODES, prepareWireParts, unsupportedMediaType, wrongRole } from "./a2a-map.js";
import { actorOf } from "../../durable-objects/shared/tokens.js";
import type { AppEnv } from "../http/auth.js";
import { readWithin } from "../http/body.js";
import { isPlainObject } from "../../durable-objects/commands/command-json.js";

/** The protocol version this interface serves. */
export const A2A_VERSION = "1.0";
/** How long a client may keep the card before asking again (spec §8.6.1). */
const CARD_MAX_AGE_SECONDS = 300;
/** The ErrorInfo domain of errors that are ours, not A2A's (authentication, permission, request envelope). */
const OUR_DOMAIN = "agent-task-runtime";

/** The Agent Card: public, the same for every caller, its interface URL on the origin the request reached. */
export function agentCard(origin: string): AgentCard {
  return {
    name: "agent-task-runtime",
    description:
      "A hosted runtime for durable agent task DAGs. Send it a piece of work: it becomes a task of the session your token names, which the session's orchestrator plans into steps that workers run; follow it to its artifacts.",
    version: "0.1.0",
    supportedInterfaces: [{ url: `${origin}/a2a`, protocolBinding: "JSONRPC", protocolVersion: A2A_VERSION, tenant: "" }],
    provider: undefined,
    capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
    securitySchemes: { bearer: { scheme: { $case: "httpAuthSecurityScheme", value: { description: "A session token with role a2a_client", scheme: "Bearer", bearerFormat: "JWT" } } } },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: [...INPUT_MODES],
    defaultOutputModes: ["text/plain", "application/json"],
    skills: [
      {
        id: "durable-task-dag",
        name: "Durable task DAG",
        description: "Takes a request as a durable task: planned into a DAG of steps, run by workers, resumable, with human actions surfaced as input-required.",
        tags: ["tasks", "dag", "orchestration", "durable"],
        examples: ["Summarise last quarter's sales figures"],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
}

/** GET /.well-known/agent-card.json: public, cacheable, with a strong ETag of its bytes (304 when it matches). */
export async function serveAgentCard(c: Context<AppEnv>): Promise<Response> {
  const body = JSON.stringify(AgentCard.toJSON(agentCard(new URL(c.req.url).origin)));
  const etag = `"${hexOf(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(body)))).slice(0, 32)}"`;
  const headers = { etag, "cache-control": `public, max-age=${CARD_MAX_AGE_SECONDS}` };
  const ifNoneMatch = c.req.header("if-none-match");
  if (ifNoneMatch !== undefined && ifNoneMatch.split(",").some((t) => t.trim() === etag || t.trim() === "*")) return new Response(null, { status: 304, headers });
  return new Response(body, { status: 200, headers: { ...headers, "content-type": "application/json" } });
}

type RpcId = string | number | null;

/** A JSON-RPC error answer. */
function rpcError(id: RpcId, error: { code: number; message: string; data?: unknown[] }, status = 200, headers: Record<string, string> = {}): Response {
  return Response.json({ jsonrpc: "2.0", id, error }, { status, headers });
}

/** An error that is ours (not an A2A error): its ErrorInfo names our domain. */
function ourError(code: number, message: string, reason: string, metadata?: Record<string, string>): { code: number; message: string; data: unknown[] } {
  return { code, message, data: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason, domain: OUR_DOMAIN, ...(metadata === undefined ? {} : { metadata }) }] };
}

/** `1.0` and `1.0.x` are 1.0 (spec §3.6: patch numbers never count); anything else is not served. */
function normalizedVersion(raw: string): string {
  const m = /^(\d+)\.(\d+)(?:\.\d+)?$/.exec(raw.trim());
  return m === null ? raw.trim() : `${Number(m[1])}.${Number(m[2])}`;
}

class TokenUser implements User {
  constructor(private readonly agentId: string) {}
  get isAuthenticated(): boolean {
    return true;
  }
  get userName(): string {
    return this.agentId;
  }
}

/** What the SDK did with our handler in one request: whether it called it, and whether the call failed. */
interface Observed {
  readonly handler: A2ARequestHandler;
  called: boolean;
  failed: boolean;
}

/**
 * Our handler as the SDK gets it, noting calls and failures. The SDK decodes the params before it calls the
 * handler, and answers anything its decoder throws as -32603 with the JS message ("Cannot read properties of
 * null"): an error answer for a call that never happened is such a failure; one for a call that succeeded is
 * a failure to serialise our answer. Errors our handler throws are already ours (A2A errors, incident ids).
 */
function observed(handler: A2ARequestHandler): Observed {
  const seen = { called: false, failed: false };
  const proxy = new Proxy(handler, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        seen.called = true;
        const out: unknown = value.apply(target, args);
        if (out instanceof Promise) out.catch(() => (seen.failed = true));
        return out;
      };
    },
  });
  return Object.assign(seen, { handler: proxy });
}

/** -32602 (with the spec's ErrorInfo, reason INVALID_PARAMS) and a message of ours. */
function invalidParams(id: RpcId, message: string): Response {
  return rpcError(id, JsonRpcTransportHandler.mapToJSONRPCError(new RequestMalformedError(message)));
}

const encoder = new TextEncoder();
const sseFrame = (value: unknown, event?: string) => encoder.encode(`${event === undefined ? "" : `event: ${event}\n`}data: ${JSON.stringify(value)}\n\n`);

/**
 * POST /a2a. Checked in this order, each refusal answered before the next check: bearer token (401; a token of another role or the admin's: 403),
 * Content-Type (415, -32005), size (413, -32600: the body is not read past MAX_BODY_BYTES), JSON (-32700), envelope
 * and id (-32600), A2A-Version (absent: 1.0; `1.0.x`: 1.0; else -32009), a sent message's parts (-32602; raw ones
 * rewritten, see prepareWireParts); then the SDK's transport dispatches the method to our handler. Params the SDK
 * cannot decode are -32602 with a message of ours.
 */
export async function serveA2a(c: Context<AppEnv>): Promise<Response> {
  const auth = c.req.header("authorization");
  const token = auth === undefined ? undefined : /^Bearer\s+(\S+)\s*$/i.exec(auth)?.[1];
  const challenge = { "www-authenticate": 'Bearer realm="agent-task-runtime"' };
  if (token === undefined) return rpcError(null, ourError(-32000, "a bearer token (role a2a_client) is required", "UNAUTHENTICATED"), 401, challenge);
  if (typeof c.env.ADMIN_TOKEN === "string" && c.env.ADMIN_TOKEN !== "" && secretsEqual(token, c.env.ADMIN_TOKEN)) {
    return rpcError(null, ourError(-32000, "the admin token does not speak A2A: use a token with role a2a_client", "PERMISSION_DENIED"), 403);
  }
  const check = await admitToken(c.env, token);
  // Why the token is refused (invalid, expired, revoked) in the ErrorInfo's metadata, as /v1 says it in details.reason.
  if (!check.ok) return rpcError(null, ourError(-32000, TOKEN_REFUSAL_MESSAGES[check.reason], "UNAUTHENTICATED", { reason: check.reason }), 401, challenge);
  const claims = check.claims;
  if (claims.role !== "a2a_client") return rpcError(null, ourError(-32000, `a token of role ${claims.role} does not speak A2A: use a token with role a2a_client`, "PERMISSION_DENIED"), 403);

  const contentType = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (contentType !== "application/json" && contentType !== "application/a2a+json") {
    return rpcError(null, JsonRpcTransportHandler.mapToJSONRPCError(new ContentTypeNotSupportedError(`Content-Type must be application/json, not ${contentType.slice(0, 100) || "(none)"}`)), 415);
  }
  // Counted as it streams and cut past MAX_BODY_BYTES (a declared Content-Length over it: before a byte is read).
  const read = await readWithin(c.req.raw, readConfig(c.env).maxBodyBytes);
  if (!read.ok) return rpcError(null, ourError(-32600, `the body is over ${read.limit} bytes`, "PAYLOAD_TOO_LARGE"), 413);
  const { text } = read;
  let body: unknown;
  try {
    if (jsonTextDepth(text, MAX_DOCUMENT_DEPTH) > MAX_DOCUMENT_DEPTH) throw new SyntaxError("too deep");
    body = JSON.parse(text);
  } catch {
    return rpcError(null, { code: -32700, message: "Invalid JSON payload" });
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) return rpcError(null, { code: -32600, message: "Request payload validation error: a JSON-RPC request object is expected" });
  const request = body as Record<string, unknown>;
  const rawId = request.id;
  const id: RpcId = typeof rawId === "string" || (typeof rawId === "number" && Number.isInteger(rawId)) || rawId === null ? (rawId as RpcId) : null;
  if (request.jsonrpc !== "2.0" || typeof request.method !== "string" || request.method === "" || !("id" in request) || id !== rawId) {
    return rpcError(id, { code: -32600, message: "Request payload validation error: jsonrpc \"2.0\", a method and an id (string or integer) are required" });
  }
  // We declare no tenant: a tenant param is ignored (and the SDK's context refuses to be given one twice).
  const params = isPlainObject(request.params) ? request.params : undefined;
  if (params !== undefined) delete params.tenant;

  const requested = c.req.header("a2a-version") ?? c.req.query("A2A-Version");
  const version = requested === undefined || requested.trim() === "" ? A2A_VERSION : normalizedVersion(requested);
  if (version !== A2A_VERSION) {
    const error = new VersionNotSupportedError({ message: `A2A version ${requested!.slice(0, 20)} is not supported`, metadata: { requestedVersion: requested!.slice(0, 20), supportedVersions: A2A_VERSION } });
    return rpcError(id, JsonRpcTransportHandler.mapToJSONRPCError(error));
  }
  // Parts are checked here, and raw (bytes) ones rewritten, before the SDK's decoder (which needs Node's Buffer) sees them.
  if (params !== undefined && (request.method === "SendMessage" || request.method === "SendStreamingMessage")) {
    const problem = prepareWireParts(params) ?? wrongRole(params);
    if (problem !== null) return invalidParams(id, problem);
    const unsupported = unsupportedMediaType(params);
    if (unsupported !== null) {
      const message = `message.parts[${unsupported.index}] has media type ${unsupported.mediaType}; accepted: ${INPUT_MODES.join(", ")}`;
      return rpcError(id, JsonRpcTransportHandler.mapToJSONRPCError(new ContentTypeNotSupportedError({ message, metadata: { mediaType: unsupported.mediaType } })));
    }
  }

  const origin = new URL(c.req.url).origin;
  const actor = actorOf(claims);
  // Aborted when the client goes away mid-stream, so the handler stops waiting on the task's event stream.
  const gone = new AbortController();
  const ctx = new ServerCallContext({ user: new TokenUser(actor.agent_id), requestedVersion: A2A_VERSION, state: new Map<string, unknown>([["actor", actor], [STREAM_GONE, gone.signal]]) });
  const seen = observed(new RuntimeA2AHandler(c.env, agentCard(origin), actor, await tokenIdentity(token)));
  const transport = new JsonRpcTransportHandler(seen.handler);
  let out: Awaited<ReturnType<JsonRpcTransportHandler["handle"]>>;
  try {
    out = await transport.handle(request, ctx);
  } catch (e) {
    return rpcError(id, { code: -32603, message: reportIncident(e, `a2a ${request.method}`).message }, 500);
  }
  if (Symbol.asyncIterator in out) return sseResponse(out, id, gone, (done, end) => watchToken(c.env, c.executionCtx, token, claims.exp, done, end));
  const error = out.error as { code?: number; message?: unknown } | undefined;
  if (error?.code === -32603 && !seen.failed) {
    // Not our handler's error: the SDK could not decode the params (the client's fault), or could not serialise our answer (a bug).
    if (!seen.called) return invalidParams(id, `params are not a valid ${request.method.slice(0, 50)} request: a field has the wrong type`);
    return rpcError(id, { code: -32603, message: reportIncident(new Error(String(error.message)), `a2a ${request.method} answer`).message }, 500);
  }
  return Response.json(out, { status: error?.code === -32603 ? 500 : 200 });
}

/** A stream's answer: its first event awaited (an error before it is a plain JSON-RPC error), then SSE. */
async function sseResponse(stream: AsyncGenerator<unknown, void, undefined>, id: RpcId, gone: AbortController, watch: (done: () => boolean, end: (reason: TokenRefusalReason) => Promise<void>) => void): Promise<Response> {
  const it = stream[Symbol.asyncIterator]();
  let first: IteratorResult<unknown, void>;
  try {
    first = await it.next();
  } catch (e) {
    return rpcError(id, JsonRpcTransportHandler.mapToJSONRPCError(e));
  }
  let finished = first.done === true;
  // Set when the stream's token stops holding (revoked, expired): the stream's last event is that 401's error.
  let refused: TokenRefusalReason | null = null;
  const refusal = (reason: TokenRefusalReason) => sseFrame({ jsonrpc: "2.0", id, error: ourError(-32000, TOKEN_REFUSAL_MESSAGES[reason], "UNAUTHENTICATED", { reason }) }, "error");
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      if (first.done) controller.close();
      else controller.enqueue(sseFrame(first.value));
    },
    async pull(controller) {
      try {
        const next = await it.next();
        if (refused !== null) {
          controller.enqueue(refusal(refused));
          finished = true;
          controller.close();
        } else if (next.done) {
          finished = true;
          controller.close();
        } else controller.enqueue(sseFrame(next.value));
      } catch (e) {
        controller.enqueue(refused === null ? sseFrame({ jsonrpc: "2.0", id, error: JsonRpcTransportHandler.mapToJSONRPCError(e) }, "error") : refusal(refused));
        finished = true;
        controller.close();
      }
    },
    // The client went away: stop reading the task's event stream (the task itself goes on).
    async cancel() {
      finished = true;
      gone.abort();
      await it.return(undefined);
    },
  });
  watch(
    () => finished,
    async (reason) => {
      refused = reason;
      // The handler stops waiting on the task's events; the pull waiting on it then ends the stream with the refusal.
      gone.abort();
    },
  );
  return new Response(body, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
}
