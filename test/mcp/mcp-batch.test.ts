/**
 * JSON-RPC batches on /mcp (docs/protocols/mcp.md "Batches"): the MCP revisions served have none, but a 2025-03-26
 * client may still send one, and each message may be a tool call; a batch longer than MCP_MAX_BATCH (default 16)
 * is refused whole with 409 limit_exceeded {limit, value, setting}, before any of it runs.
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { newSession, newTask, step } from "../support/helpers.js";
import { MCP_URL } from "../support/mcp-clients.js";
import { walExport } from "../support/support.js";

const MAX_BATCH = 16;

/** POSTs `messages` as one JSON-RPC batch with `token`. */
async function postBatch(token: string, messages: unknown[]): Promise<{ status: number; body: any }> {
  const res = await SELF.fetch(MCP_URL, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25" },
    body: JSON.stringify(messages),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // An event stream: kept as text.
  }
  return { status: res.status, body };
}

/** `n` tools/call messages, each appending progress to step a of the task. */
function progressCalls(taskId: string, n: number): unknown[] {
  return Array.from({ length: n }, (_, i) => ({ jsonrpc: "2.0", id: i + 1, method: "tools/call", params: { name: "agent.task_progress", arguments: { task_id: taskId, step_id: "a", phase: `p${i}` } } }));
}

describe("JSON-RPC batches on /mcp (MCP_MAX_BATCH, default 16)", () => {
  it("Should run a batch of 16 tool calls and refuse one of 17 whole with 409 limit_exceeded, running none of it", async () => {
    const s = await newSession();
    const t = await newTask(s, "batched", [step("a")]);
    const full = await postBatch(s.orch, progressCalls("batched", MAX_BATCH));
    expect(full.status, JSON.stringify(full.body).slice(0, 500)).toBe(200);
    expect(full.body).toHaveLength(MAX_BATCH);
    expect(full.body.every((answer: any) => answer.result?.isError !== true)).toBe(true);
    const before = await walExport(t, s.orch);
    const over = await postBatch(s.orch, progressCalls("batched", MAX_BATCH + 1));
    expect(over.status, JSON.stringify(over.body).slice(0, 500)).toBe(409);
    expect(over.body.error.code).toBe("limit_exceeded");
    expect(over.body.error.details).toEqual({ limit: MAX_BATCH, value: MAX_BATCH + 1, setting: "MCP_MAX_BATCH" });
    expect(await walExport(t, s.orch)).toBe(before);
  });
});
