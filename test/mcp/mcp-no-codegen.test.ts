/**
 * No schema compilation under workerd may generate code from strings: deployed workerd refuses `new Function`
 * and `eval`, so a validator that compiles to code (Ajv) fails there on first use. A spy replaces the globals
 * `Function` and `eval`, records every call and forwards it; the MCP endpoint's traffic must record none.
 *
 * Why the spy sees the server: under the Workers pool the test, the Worker that SELF.fetch reaches and the
 * Durable Objects it calls run in one isolate with one global object (the first test shows both). No server
 * path generates code on purpose (zod skips its `new Function` probe when navigator.userAgent says
 * Cloudflare; Hono, ulid, @cfworker/json-schema and the MCP server's workerd shim never do), so that test
 * shows the sharing with another global the Worker calls, JSON.parse. The pool's workerd, unlike a deployed
 * one, lets `new Function` run, so a forwarded call succeeds here and only the record tells.
 */
import { runInDurableObject, SELF } from "cloudflare:test";
import Ajv from "ajv";
import { describe, expect, it } from "vitest";
import { TaskGraphObject } from "../../src/index.js";
import { newSession, step } from "../support/helpers.js";
import { connectMcp, errorCodeOf, type McpClient } from "../support/mcp-clients.js";
import { BASE, mintRole, taskStub } from "../support/support.js";

/** Replaces `owner[key]` (a function) by a Proxy that records each call or construction, then forwards it. */
function intercept(owner: object, key: string, record: (how: "apply" | "construct", args: unknown[]) => void): () => void {
  const original = Reflect.get(owner, key) as (...args: unknown[]) => unknown;
  const spy = new Proxy(original, {
    apply(target, self, args) {
      record("apply", args);
      return Reflect.apply(target, self, args);
    },
    construct(target, args, newTarget): object {
      record("construct", args);
      return Reflect.construct(target, args, newTarget);
    },
  });
  Reflect.set(owner, key, spy);
  return () => Reflect.set(owner, key, original);
}

/** Runs `body` with `Function` and `eval` spied on; returns what tried to generate code. Restores both. */
async function recordingCodegen(body: () => Promise<void>): Promise<string[]> {
  const calls: string[] = [];
  const note = (what: string) => (how: string, args: unknown[]) => calls.push(`${how} ${what}: ${String(args.at(-1)).slice(0, 120)}`);
  const restoreFunction = intercept(globalThis, "Function", note("Function"));
  const restoreEval = intercept(globalThis, "eval", note("eval"));
  try {
    await body();
  } finally {
    restoreEval();
    restoreFunction();
  }
  return calls;
}

/** Calls a tool that must succeed; returns its structuredContent. */
async function ok(client: McpClient, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const result = await client.callTool({ name, arguments: args });
  expect(result.isError, `${name} (${client.kind}): ${JSON.stringify(result.content)}`).not.toBe(true);
  return result.structuredContent;
}

/** Calls a tool that must be refused with `code`. */
async function refused(client: McpClient, name: string, args: Record<string, unknown>, code: string): Promise<any> {
  const result = await client.callTool({ name, arguments: args });
  expect(errorCodeOf(result), `${name} (${client.kind}): ${JSON.stringify(result.structuredContent)}`).toBe(code);
  return result.structuredContent;
}

describe("no code generation under workerd", () => {
  it("Should run the Worker reached through SELF.fetch, and its Durable Objects, with this test's globals", async () => {
    const s = await newSession();
    const marker = "shared-globals-marker";
    const parsed: string[] = [];
    const restore = intercept(JSON, "parse", (_how, args) => parsed.push(String(args[0])));
    let status = 0;
    try {
      // The body is encoded before the spy sees anything: only the Worker's own JSON.parse can name the marker.
      const body = JSON.stringify({ task_id: "probe", wal_name: "probe", title: "Probe", summary: "", steps: [step(marker)] });
      const res = await SELF.fetch(`${BASE}/v1/sessions/${s.sid}/tasks`, { method: "POST", headers: { authorization: `Bearer ${s.orch}`, "content-type": "application/json" }, body });
      status = res.status;
      await res.arrayBuffer();
    } finally {
      restore();
    }
    expect(status).toBe(201);
    expect(parsed.some((text) => text.includes(marker))).toBe(true);
    // The object the binding runs is an instance of the very class this module imported: one module graph,
    // so one isolate and one global object.
    await runInDurableObject(taskStub(s.sid, "probe"), async (instance) => {
      expect(instance).toBeInstanceOf(TaskGraphObject);
    });
  });

  it("Should record Ajv compiling a schema to code (so the spy sees code generation)", async () => {
    const calls = await recordingCodegen(async () => {
      try {
        new Ajv().compile({ type: "object" });
      } catch {
        // A deployed workerd refuses the code; the pool's lets it run. Either way the attempt is recorded.
      }
      try {
        (0, globalThis.eval)("1 + 1");
      } catch {
        // As above.
      }
    });
    expect(calls.some((c) => c.startsWith("construct Function: "))).toBe(true);
    expect(calls).toContain("apply eval: 1 + 1");
  });

  it("Should serve MCP to both official clients (tools, validation, an input action checked against its schema, prompts, resources) without generating code", async () => {
    const s = await newSession();
    const approverToken = await mintRole(s, "approver");
    const calls = await recordingCodegen(async () => {
      const modern = await connectMcp(s.orch, "modern");
      const legacy = await connectMcp(s.orch, "legacy");
      const approver = await connectMcp(approverToken, "legacy");
      let worker: McpClient | undefined;
      try {
        for (const client of [modern, legacy]) {
          const tools = (await client.listTools()).tools.map((t) => t.name);
          expect(tools).toEqual(expect.arrayContaining(["agent.task_create", "agent.request_action", "agent.respond_action"]));
        }
        const created = await ok(modern, "agent.task_create", { task_id: "budget", wal_name: "budget", title: "Budget", summary: "", steps: [step("estimate")] });
        expect(created.task).toMatchObject({ task_id: "budget", total_steps: 1 });
        const invalid = await refused(legacy, "agent.task_create", { task_id: "Not An Id!", wal_name: "x", title: "Bad", summary: "", steps: [] }, "validation_error");
        expect(invalid.status).toBe(400);

        const handoff = await ok(legacy, "agent.dispatch_worker", { task_id: "budget", agent_id: "estimator" });
        worker = await connectMcp(handoff.token, "modern");
        expect((await ok(worker, "agent.task_claim_next")).step.step_id).toBe("estimate");
        const asked = await ok(worker, "agent.request_action", {
          step_id: "estimate",
          kind: "input",
          prompt: "What budget may the estimate assume?",
          input_schema: { type: "object", properties: { budget: { type: "number", minimum: 0 }, currency: { enum: ["EUR", "USD"] } }, required: ["budget", "currency"], additionalProperties: false },
        });
        const actionId = asked.action_id as string;

        // The answer is checked against the action's input_schema: a wrong one is refused, a right one resolves it.
        await refused(approver, "agent.respond_action", { task_id: "budget", action_id: actionId, decision: "submitted", input: { budget: -5, currency: "GBP" } }, "validation_error");
        await ok(approver, "agent.respond_action", { task_id: "budget", action_id: actionId, decision: "submitted", input: { budget: 1200, currency: "EUR" } });
        const seen = await ok(worker, "agent.task_action", { action_id: actionId, wait_ms: 5_000 });
        expect(seen.action).toMatchObject({ status: "resolved", decision: "submitted", input: { budget: 1200, currency: "EUR" } });

        for (const client of [modern, legacy]) {
          const guide = await client.getPrompt({ name: "agent.task_template" });
          expect(guide.messages[0].content.text).toContain("# Writing a task DAG");
          const context = await client.getPrompt({ name: "agent.task_context", arguments: { task_id: "budget", token_budget: "500" } });
          expect(context.messages[0].content.text).toContain("budget");
          const read = await client.readResource({ uri: "agent-task://tasks/budget/summary" });
          expect(read.contents[0]).toMatchObject({ uri: "agent-task://tasks/budget/summary", mimeType: "text/markdown", text: expect.any(String) });
        }
      } finally {
        await worker?.close();
        await approver.close();
        await legacy.close();
        await modern.close();
      }
    });
    expect(calls).toEqual([]);
  });
});
