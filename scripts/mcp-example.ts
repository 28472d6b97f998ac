/**
 * @module An orchestrator agent and its worker agents drive a task DAG through `/mcp`, each with the official
 * TypeScript MCP client (@modelcontextprotocol/client). The orchestrator creates a fan-out/fan-in DAG and
 * dispatches workers; each worker is its own MCP client, connected with the token and URL its dispatch returned.
 *
 *   npm run example:mcp                                                  starts a local server, runs, stops it
 *   npm run example:mcp -- --base http://127.0.0.1:8787 --admin-token dev-admin-token    against a running one
 */
import { pathToFileURL } from "node:url";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { parseCli } from "./bench/harness/cli.js";
import { defaultAdminToken, withServerAt } from "./dev-server.js";

/** Where the runtime is, who creates the session, and where the example's lines go. */
export interface McpExampleOptions {
  base: string;
  adminToken: string;
  log?: (line: string) => void;
}

/** How the example ended. */
export interface McpExampleSummary {
  taskId: string;
  status: string;
  steps: { step_id: string; status: string }[];
  stepsCompleted: number;
  toolCalls: number;
  /** The MCP revision the orchestrator's client and the server agreed on. */
  protocolVersion: string | undefined;
}

type Answer = Record<string, any>;

/** The DAG: two independent steps (fan-out), then one that needs both (fan-in). */
const STEPS = [
  { step_id: "collect-commits", title: "Collect commits", summary: "List the merged changes since 1.1", depends_on_step_ids: [] },
  { step_id: "collect-issues", title: "Collect issues", summary: "List the issues closed since 1.1", depends_on_step_ids: [] },
  { step_id: "write-notes", title: "Write release notes", summary: "One page from the commits and issues", depends_on_step_ids: ["collect-commits", "collect-issues"] },
];

/** An MCP client connected to `url` with `token` as its bearer token (it negotiates the newest revision both speak). */
async function connect(url: string, token: string, name: string): Promise<Client> {
  const client = new Client({ name, version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  return client;
}

/** Runs the example against `base`; returns the task's final state. */
export async function runMcpExample({ base, adminToken, log = console.log }: McpExampleOptions): Promise<McpExampleSummary> {
  let toolCalls = 0;
  /** Calls a tool; structuredContent is the REST answer. A domain error is a result with isError and its code. */
  async function call(client: Client, who: string, name: string, args: Record<string, unknown> = {}): Promise<Answer> {
    toolCalls += 1;
    const result = await client.callTool({ name, arguments: args });
    const text = (result.content as { type: string; text?: string }[])[0]?.text ?? "";
    log(`  ${who.padEnd(12)} ${name.padEnd(24)} ${text.split("\n")[0]}`);
    if (result.isError) throw new Error(`${name}: ${text}`);
    return result.structuredContent as Answer;
  }

  // The operator creates a session over REST (MCP serves session tokens, not the admin token).
  const res = await fetch(`${base}/v1/sessions`, {
    method: "POST",
    headers: { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/json" },
    body: JSON.stringify({ orchestrator_agent_id: "mcp-orchestrator" }),
  });
  if (!res.ok) throw new Error(`POST /v1/sessions answered ${res.status}: ${await res.text()}`);
  const session = (await res.json()) as { session_id: string; orchestrator: { token: string } };
  log(`session ${session.session_id}`);

  // --- The orchestrator ---
  const orch = await connect(`${base}/mcp`, session.orchestrator.token, "orchestrator");
  try {
    log(`orchestrator connected (MCP ${orch.getNegotiatedProtocolVersion()})`);
    const { tools } = await orch.listTools();
    log(`orchestrator tools (${tools.length}): ${tools.map((t) => t.name).join(", ")}`);
    const guide = await orch.getPrompt({ name: "agent.task_template" });
    const guideText = guide.messages[0]?.content.type === "text" ? guide.messages[0].content.text : "";
    log(`prompt agent.task_template: ${guideText.length} characters, starting "${guideText.split("\n")[0]}"`);

    const taskId = "release-notes";
    await call(orch, "orchestrator", "agent.task_create", { task_id: taskId, wal_name: taskId, title: "Release notes 1.2", summary: "Notes for the 1.2 release", steps: STEPS });

    // Fan-out: two workers at once, each claiming whatever is ready.
    const fanOut = await Promise.all(["worker-1", "worker-2"].map((agent_id) => call(orch, "orchestrator", "agent.dispatch_worker", { task_id: taskId, agent_id })));
    await Promise.all(fanOut.map((run, i) => runWorker(run, `worker-${i + 1}`)));
    // Fan-in: the last step is ready once both are completed.
    const last = await call(orch, "orchestrator", "agent.dispatch_worker", { task_id: taskId, agent_id: "worker-3" });
    await runWorker(last, "worker-3");

    const done = await call(orch, "orchestrator", "agent.task_complete", { task_id: taskId, reason: "notes written" });
    const dag = await call(orch, "orchestrator", "agent.task_get", { task_id: taskId });
    const steps = (dag.steps as Answer[]).map((s) => ({ step_id: s.step_id as string, status: s.status as string }));
    return {
      taskId,
      status: done.task.status,
      steps,
      stepsCompleted: steps.filter((s) => s.status === "completed").length,
      toolCalls,
      protocolVersion: orch.getNegotiatedProtocolVersion(),
    };
  } finally {
    await orch.close();
  }

  // --- A worker: its own MCP client, with the token and URL agent.dispatch_worker returned ---
  async function runWorker(run: Answer, who: string): Promise<void> {
    const worker = await connect(run.mcp_url, run.token, who);
    try {
      for (;;) {
        const claim = await call(worker, who, "agent.task_claim_next"); // the token names the task and the run
        if (claim.no_step_claimed) break; // a normal result: nothing (more) for this run
        const step_id: string = claim.step.step_id;
        await call(worker, who, "agent.task_update_step", { step_id, status: "running" });
        await call(worker, who, "agent.task_progress", { step_id, phase: "working", summary: `working on ${step_id}` }); // renews the lease
        await call(worker, who, "agent.task_update_step", { step_id, status: "completed", result_summary: `${claim.step.title}: done` });
      }
      await call(worker, who, "finish_worker_run", { outcome: "finished" });
    } finally {
      await worker.close();
    }
  }
}

async function main(): Promise<void> {
  const usage = "usage: npm run example:mcp -- [--base http://127.0.0.1:8787 --admin-token TOKEN]";
  const opts = parseCli(usage, { base: null as string | null, adminToken: null as string | null });
  await withServerAt(opts.base, "bench/tmp/mcp-example", async (base) => {
    const summary = await runMcpExample({ base, adminToken: opts.adminToken ?? defaultAdminToken() });
    console.log(`\ntask ${summary.taskId}: ${summary.status}; ${summary.stepsCompleted}/${summary.steps.length} steps completed; ${summary.toolCalls} tool calls over MCP ${summary.protocolVersion}`);
    if (summary.status !== "completed") process.exitCode = 1;
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e: unknown) => {
    console.error(e instanceof Error ? (e.stack ?? e.message) : e);
    process.exit(1);
  });
}
