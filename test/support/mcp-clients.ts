/**
 * @module MCP clients for service tests: the official clients, connected to the Worker through SELF. `modern`
 * is @modelcontextprotocol/client 2.x negotiating its revision (auto: 2026-07-28 here); `legacy` is
 * @modelcontextprotocol/sdk 1.x, as 2025-era clients speak (2025-11-25, stateless).
 */
import { SELF } from "cloudflare:test";
import { Client } from "@modelcontextprotocol/client";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { expect } from "vitest";
import { BASE } from "./support.js";

/** The MCP endpoint as the tests reach it. */
export const MCP_URL = "http://runtime.test/mcp";

/** Which official client a test drives. */
export type ClientKind = "modern" | "legacy";

/** What the tests call on either client (both SDKs' Client classes have these methods). */
export interface McpClient {
  readonly kind: ClientKind;
  listTools(): Promise<{ tools: { name: string; description?: string; inputSchema: any; annotations?: any }[] }>;
  callTool(params: { name: string; arguments?: Record<string, unknown> }): Promise<any>;
  listPrompts(): Promise<{ prompts: { name: string }[] }>;
  getPrompt(params: { name: string; arguments?: Record<string, string> }): Promise<any>;
  listResources(): Promise<{ resources: { uri: string; name: string }[] }>;
  listResourceTemplates(): Promise<{ resourceTemplates: { uriTemplate: string }[] }>;
  readResource(params: { uri: string }): Promise<any>;
  close(): Promise<void>;
}

const fetchSelf = (url: string | URL | Request, init?: RequestInit) => SELF.fetch(url instanceof Request ? url : String(url), init);

/** Connects an official client with `token` as its bearer token (and `extraHeaders` on every request, e.g. an Origin). */
export async function connectMcp(token: string, kind: ClientKind = "modern", extraHeaders: Record<string, string> = {}): Promise<McpClient> {
  const headers = { ...extraHeaders, authorization: `Bearer ${token}` };
  if (kind === "modern") {
    const client = new Client({ name: "runtime-tests", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
    await client.connect(new StreamableHTTPClientTransport(new URL(MCP_URL), { fetch: fetchSelf as never, requestInit: { headers } }));
    return Object.assign(client, { kind }) as unknown as McpClient;
  }
  const client = new LegacyClient({ name: "runtime-tests-legacy", version: "1.0.0" });
  await client.connect(new LegacyTransport(new URL(MCP_URL), { fetch: fetchSelf as never, requestInit: { headers } }));
  return Object.assign(client, { kind }) as unknown as McpClient;
}

/** The error code of an isError tool result (undefined for a success). */
export function errorCodeOf(result: any): string | undefined {
  return result.isError === true ? result.structuredContent?.error?.code : undefined;
}

/** What a raw POST to the endpoint answered: status, headers, and the JSON-RPC message (JSON or one SSE event), if any. */
export interface RawMcpAnswer {
  status: number;
  headers: Headers;
  message: any;
}

/**
 * POSTs one JSON-RPC message to the endpoint without a client, as a 2025-11-25 stateless request: for what
 * happens before MCP starts (authentication, Origin), where the clients only show that they failed.
 */
export async function postMcp(message: Record<string, unknown>, headers: Record<string, string> = {}): Promise<RawMcpAnswer> {
  const res = await SELF.fetch(MCP_URL, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25", ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", ...message }),
  });
  const text = await res.text();
  const data = (res.headers.get("content-type") ?? "").includes("text/event-stream")
    ? text
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).trim())
        .join("\n")
    : text;
  return { status: res.status, headers: res.headers, message: data === "" ? null : JSON.parse(data) };
}

/** Asserts an isError tool result with `code` and `status`: the REST error envelope as structuredContent, and a text naming the code. */
export function expectToolError(result: any, code: string, status: number): void {
  expect(result.isError, JSON.stringify(result)).toBe(true);
  expect(result.structuredContent).toEqual({ status, error: { code, message: expect.any(String), details: expect.any(Object) } });
  expect(result.content).toHaveLength(1);
  expect(result.content[0].type).toBe("text");
  expect(result.content[0].text.startsWith(`Error ${code}: `), result.content[0].text).toBe(true);
}

/** Asserts a successful tool result and returns its structuredContent. */
export function toolAnswer(result: any): any {
  expect(result.isError ?? false, JSON.stringify(result)).toBe(false);
  expect(result.structuredContent).toBeTypeOf("object");
  return result.structuredContent;
}

/** The task's whole WAL export as text (decoded by hand: workerd warns when .text() reads its x-ndjson body). */
export async function walSnapshot(taskPath: string, token: string): Promise<string> {
  const res = await SELF.fetch(`${BASE}${taskPath}/wal`, { headers: { authorization: `Bearer ${token}` } });
  const text = new TextDecoder().decode(await res.arrayBuffer());
  expect(res.status, text).toBe(200);
  return text;
}

/** Asserts that the tool call `send` is an isError result with `code`/`status` and that the task's WAL (read with `readToken`) is exactly as before. */
export async function expectToolRefusedWritingNothing(taskPath: string, readToken: string, send: () => Promise<any>, code: string, status: number): Promise<void> {
  const before = await walSnapshot(taskPath, readToken);
  expectToolError(await send(), code, status);
  expect(await walSnapshot(taskPath, readToken)).toBe(before);
}
