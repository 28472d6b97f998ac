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

/** Connects an official client with `token` as its bearer token. */
export async function connectMcp(token: string, kind: ClientKind = "modern"): Promise<McpClient> {
  const headers = { authorization: `Bearer ${token}` };
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
