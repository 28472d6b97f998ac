/**
 * @module A2A clients for service tests: the official @a2a-js/sdk client connected to the Worker through SELF
 * with a bearer token (card discovery included), messages in the SDK's in-memory shapes, and raw JSON-RPC calls
 * for what the client cannot send.
 */
import { SELF } from "cloudflare:test";
import { type Message, type Part, Role, type SendMessageConfiguration, type SendMessageRequest, type StreamResponse } from "@a2a-js/sdk";
import type { Client } from "@a2a-js/sdk/client";
import { connectA2aClient } from "../../scripts/a2a-client.js";
import { BASE } from "./support.js";

/** SELF.fetch must be called on SELF: the SDK calls its fetchImpl detached. */
const selfFetch: typeof fetch = (input, init) => SELF.fetch(input instanceof Request ? input : String(input), init) as unknown as Promise<Response>;

/** The official client for `token`, built from the Agent Card it discovers at BASE, its requests through SELF. */
export function connectA2a(token: string): Promise<Client> {
  return connectA2aClient(BASE, token, selfFetch);
}

/** A text part. */
export function text(value: string): Part {
  return { content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "text/plain" };
}

/** A data part. */
export function data(value: unknown): Part {
  return { content: { $case: "data", value }, metadata: undefined, filename: "", mediaType: "application/json" };
}

/** A SendMessage request: a user message of `parts` (a string is one text part). */
export function send(parts: string | Part[], extra: Partial<Message> = {}, config?: Partial<SendMessageConfiguration>): SendMessageRequest {
  return {
    tenant: "",
    message: { messageId: crypto.randomUUID(), contextId: "", taskId: "", role: Role.ROLE_USER, parts: typeof parts === "string" ? [text(parts)] : parts, metadata: undefined, extensions: [], referenceTaskIds: [], ...extra },
    configuration: config === undefined ? undefined : { acceptedOutputModes: [], taskPushNotificationConfig: undefined, historyLength: undefined, returnImmediately: false, ...config },
    metadata: undefined,
  };
}

/** Every event of a stream, in order. */
export async function collect(stream: AsyncGenerator<StreamResponse>): Promise<StreamResponse[]> {
  const out: StreamResponse[] = [];
  for await (const event of stream) out.push(event);
  return out;
}

/** A raw JSON-RPC call to /a2a: status, content type, headers and the parsed body. */
export async function rpc(token: string | undefined, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; contentType: string | null; headers: Headers; body: any }> {
  const res = await SELF.fetch(`${BASE}/a2a`, {
    method: "POST",
    headers: { "content-type": "application/json", "a2a-version": "1.0", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const raw = await res.text();
  let parsed: unknown = raw;
  try {
    parsed = JSON.parse(raw);
  } catch {
    // SSE or not JSON: the text.
  }
  return { status: res.status, contentType: res.headers.get("content-type"), headers: res.headers, body: parsed };
}

/** The error a promise fails with; fails the test when it succeeds. */
export async function failure(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("expected the call to fail");
}
