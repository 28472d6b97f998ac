/**
 * @module An A2A client sends the runtime a piece of work and follows it live, with the official A2A SDK
 * (@a2a-js/sdk, protocol 1.0 over JSON-RPC). The task lands in a session whose orchestrator (the runtime's client
 * SDK, over REST) plans it into steps and dispatches workers; one step's worker asks for input, which the A2A
 * client sees as INPUT_REQUIRED and answers with a follow-up message (the task id, the action id its status
 * message named, and a data part); the task completes with one artifact per step and its result.
 *
 * The client follows the task two ways: SendStreamingMessage (closed at INPUT_REQUIRED, then the follow-up is
 * itself streamed to the end) and, alongside, one SubscribeToTask stream that stays open until the task ends.
 *
 *   npm run demo:a2a                                                  starts a local server, runs, stops it
 *   npm run demo:a2a -- --base http://127.0.0.1:8787 --admin-token dev-admin-token    against a running one
 */
import { pathToFileURL } from "node:url";
import { type Message, type Part, Role, type SendMessageRequest, type StreamResponse, type Task, TaskState } from "@a2a-js/sdk";
import type { Client } from "@a2a-js/sdk/client";
import { RuntimeClient, type StepHandler, taskPath } from "../src/client/index.js";
import { connectA2aClient } from "./a2a-client.js";
import { parseCli } from "./bench/harness/cli.js";
import { defaultAdminToken, withServerAt } from "./dev-server.js";

/** Where the runtime is, who creates the session, where the demo's lines go, and how long it may take. */
export interface A2aDemoOptions {
  base: string;
  adminToken: string;
  log?: (line: string) => void;
  /** Abort everything after this long (default 30 s). */
  timeoutMs?: number;
}

/** One event an A2A stream delivered, as the demo saw it. */
export interface A2aUpdate {
  /** `send`: the SendStreamingMessage that submitted the task; `answer`: the follow-up's; `subscribe`: SubscribeToTask. */
  readonly stream: "send" | "answer" | "subscribe";
  readonly kind: "task" | "statusUpdate" | "artifactUpdate" | "message";
  /** The state a task or status update carried (`TASK_STATE_…`). */
  readonly state?: string;
  readonly artifactId?: string;
  /** The text of the status message or of the artifact's first text part. */
  readonly text?: string;
}

/** How the demo ended. */
export interface A2aDemoSummary {
  readonly sessionId: string;
  readonly taskId: string;
  readonly contextId: string;
  /** The final Task's state (`TASK_STATE_COMPLETED` when all went well). */
  readonly finalState: string;
  /** The final Task, from GetTask. */
  readonly final: Task;
  /** The events of the two SendStreamingMessage streams, in order (`send`, then `answer`). */
  readonly updates: A2aUpdate[];
  /** The events of the SubscribeToTask stream opened once the task existed, in order. */
  readonly subscription: A2aUpdate[];
  /** The question the task asked (its status message at INPUT_REQUIRED) and the answer sent back. */
  readonly inputRequired: { prompt: string; actionId: string | undefined; answer: unknown } | null;
  /** The final Task's artifacts: id, name, and first text part. */
  readonly artifacts: { artifactId: string; name: string; text: string; data: unknown }[];
  /** The A2A client's agent id: the task's origin and the resolver of the action. */
  readonly clientAgentId: string;
}

/** The A2A client's agent id (its token's agent_id). */
const CLIENT_AGENT_ID = "partner-agent";

/** The work the A2A client asks for. */
const REQUEST = "Summarise Q3 sales by region\nA one-page summary for the board, from the ledger and the account managers' notes.";

/** How the orchestrator plans it: two independent collections, a choice a person makes, then the summary. */
const STEPS = [
  { step_id: "collect-figures", title: "Collect the Q3 figures", summary: "Revenue by region from the ledger", depends_on_step_ids: [] },
  { step_id: "collect-notes", title: "Collect the account notes", summary: "What the account managers wrote this quarter", depends_on_step_ids: [] },
  { step_id: "choose-focus", title: "Choose the lead region", summary: "Ask which region the summary leads with", depends_on_step_ids: ["collect-figures", "collect-notes"] },
  { step_id: "write-summary", title: "Write the summary", summary: "One page, leading with the chosen region", depends_on_step_ids: ["choose-focus"] },
];

/** The question the choose-focus worker asks, and the answer the A2A client gives. */
const QUESTION = "Which region should the summary lead with?";
const REGIONS = ["EMEA", "Americas", "APAC"];
const ANSWER = { region: "EMEA" };

/** A text part, in the SDK's in-memory shape. */
function textPart(value: string): Part {
  return { content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "text/plain" };
}

/** A data part. */
function dataPart(value: unknown): Part {
  return { content: { $case: "data", value }, metadata: undefined, filename: "", mediaType: "application/json" };
}

/**
 * A SendMessage request of a user message; `taskId` and `contextId` name the task it continues, and `actionId` the
 * open action it answers (the one its INPUT_REQUIRED status message named).
 */
function message(parts: Part[], continues: { taskId: string; contextId: string; actionId?: string } = { taskId: "", contextId: "" }): SendMessageRequest {
  const { actionId, ...ids } = continues;
  const metadata = actionId === undefined ? undefined : { actionId };
  const msg: Message = { messageId: crypto.randomUUID(), ...ids, role: Role.ROLE_USER, parts, metadata, extensions: [], referenceTaskIds: [] };
  return { tenant: "", message: msg, configuration: undefined, metadata: undefined };
}

/** First text of some parts ("" when none). */
function firstText(parts: readonly Part[] | undefined): string {
  for (const p of parts ?? []) if (p.content?.$case === "text") return p.content.value;
  return "";
}

/** First data part's value, or undefined. */
function firstData(parts: readonly Part[] | undefined): unknown {
  for (const p of parts ?? []) if (p.content?.$case === "data") return p.content.value;
  return undefined;
}

/** The state name of a TaskState (`TASK_STATE_…`). */
const stateName = (state: TaskState | undefined) => (state === undefined ? "?" : (TaskState[state] ?? String(state)));

/** One stream event as an A2aUpdate. */
function updateOf(stream: A2aUpdate["stream"], event: StreamResponse): A2aUpdate {
  const p = event.payload;
  switch (p?.$case) {
    case "task":
      return { stream, kind: "task", state: stateName(p.value.status?.state), text: firstText(p.value.status?.message?.parts) };
    case "statusUpdate":
      return { stream, kind: "statusUpdate", state: stateName(p.value.status?.state), text: firstText(p.value.status?.message?.parts) };
    case "artifactUpdate":
      return { stream, kind: "artifactUpdate", artifactId: p.value.artifact?.artifactId ?? "", text: firstText(p.value.artifact?.parts) };
    default:
      return { stream, kind: "message", text: p?.$case === "message" ? firstText(p.value.parts) : "" };
  }
}

/** An update as one log line. */
function lineOf(u: A2aUpdate): string {
  const who = `a2a ${u.stream}`.padEnd(14);
  if (u.kind === "artifactUpdate") return `  ${who} ← artifact  ${u.artifactId}: ${u.text}`;
  const text = u.text === undefined || u.text === "" ? "" : `  "${u.text}"`;
  return `  ${who} ← ${u.kind === "task" ? "Task     " : "status   "} ${u.state}${text}`;
}

/** Runs the demo against `base`; returns what the A2A client saw. */
export async function runA2aDemo({ base, adminToken, log = console.log, timeoutMs = 30_000 }: A2aDemoOptions): Promise<A2aDemoSummary> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error(`the A2A demo did not finish within ${timeoutMs} ms`)), timeoutMs);
  const signal = abort.signal;
  const admin = new RuntimeClient({ baseUrl: base, token: adminToken });
  try {
    // The operator's session; its orchestrator mints the token the A2A client speaks with.
    const session = await admin.createSession({ orchestrator_agent_id: "a2a-demo-orchestrator" }, { signal });
    const sid = session.session_id;
    const orch = admin.withToken(session.orchestrator.token);
    const minted = await orch.mintToken(sid, { role: "a2a_client", agent_id: CLIENT_AGENT_ID }, { signal });
    log(`session ${sid}; a2a_client token minted for ${CLIENT_AGENT_ID}`);

    // The orchestrator waits for submitted work on its session's event stream, then plans and runs it.
    const orchestrator = orchestrate(orch, sid, signal, log);
    orchestrator.catch(() => abort.abort(new Error("the orchestrator stopped"))); // a client stream waiting on it would wait until the timeout

    const client = await connectA2aClient(base, minted.token);
    const card = await client.getAgentCard();
    log(`agent card: ${card.name} ${card.version}, interface ${card.supportedInterfaces[0]?.protocolBinding} ${card.supportedInterfaces[0]?.url} (A2A ${card.supportedInterfaces[0]?.protocolVersion})`);

    const updates: A2aUpdate[] = [];
    let task: { id: string; contextId: string } | undefined;
    let subscription: Promise<A2aUpdate[]> | undefined;
    let question: Task["status"] | undefined;
    log(`  a2a send       → SendStreamingMessage "${REQUEST.split("\n")[0]}"`);
    for await (const event of client.sendMessageStream(message([textPart(REQUEST)]), { signal })) {
      const u = updateOf("send", event);
      updates.push(u);
      log(lineOf(u));
      if (event.payload?.$case === "task" && task === undefined) {
        task = { id: event.payload.value.id, contextId: event.payload.value.contextId };
        // Alongside: one SubscribeToTask stream, which stays open through INPUT_REQUIRED until the task ends.
        subscription = follow(client, task.id, signal, log);
        subscription.catch(() => undefined); // awaited below; an early failure is not unhandled meanwhile
      }
      if (event.payload?.$case === "statusUpdate" && event.payload.value.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) question = event.payload.value.status;
      if (event.payload?.$case === "task" && event.payload.value.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) question = event.payload.value.status;
    }
    if (task === undefined) throw new Error("SendStreamingMessage answered no Task");
    if (question === undefined) throw new Error(`SendStreamingMessage ended at ${updates.at(-1)?.state ?? "?"}, not at INPUT_REQUIRED`);

    // The question's status message carries the action it stands for (and the input's schema).
    const prompt = firstText(question.message?.parts);
    const meta = (question.message?.metadata ?? {}) as { actionId?: string; inputSchema?: unknown };
    log(`  a2a client     asked "${prompt}" (action ${meta.actionId ?? "?"}); answers ${JSON.stringify(ANSWER)}`);
    for await (const event of client.sendMessageStream(message([dataPart(ANSWER)], { taskId: task.id, contextId: task.contextId, ...(meta.actionId === undefined ? {} : { actionId: meta.actionId }) }), { signal })) {
      const u = updateOf("answer", event);
      updates.push(u);
      log(lineOf(u));
    }

    const subscribed = await subscription!;
    const final = await client.getTask({ tenant: "", id: task.id, historyLength: undefined }, { signal });
    await orchestrator;
    const artifacts = final.artifacts.map((a) => ({ artifactId: a.artifactId, name: a.name, text: firstText(a.parts), data: firstData(a.parts) }));
    log(`final Task ${final.id}: ${stateName(final.status?.state)}, ${artifacts.length} artifacts (${artifacts.map((a) => a.artifactId).join(", ")}), ${final.history.length} history messages`);
    return {
      sessionId: sid,
      taskId: task.id,
      contextId: task.contextId,
      finalState: stateName(final.status?.state),
      final,
      updates,
      subscription: subscribed,
      inputRequired: { prompt, actionId: meta.actionId, answer: ANSWER },
      artifacts,
      clientAgentId: CLIENT_AGENT_ID,
    };
  } catch (e) {
    throw signal.aborted && signal.reason instanceof Error ? new Error(`${signal.reason.message}: ${e instanceof Error ? e.message : String(e)}`, { cause: e }) : e;
  } finally {
    clearTimeout(timer);
    abort.abort(new Error("the A2A demo is over"));
    admin.close();
  }
}

/** SubscribeToTask until the task ends (the stream closes at a terminal state). */
async function follow(client: Client, taskId: string, signal: AbortSignal, log: (line: string) => void): Promise<A2aUpdate[]> {
  const out: A2aUpdate[] = [];
  for await (const event of client.resubscribeTask({ tenant: "", id: taskId }, { signal })) {
    const u = updateOf("subscribe", event);
    out.push(u);
    log(lineOf(u));
  }
  return out;
}

/**
 * The session's orchestrator: takes the first task an A2A client submits (announced on the session's stream with
 * its origin), plans its steps, dispatches one worker per ready step and completes the task with its result.
 */
async function orchestrate(orch: RuntimeClient, sid: string, signal: AbortSignal, log: (line: string) => void): Promise<void> {
  let taskId: string | undefined;
  const watching = new AbortController();
  const stopWatching = () => watching.abort();
  signal.addEventListener("abort", stopWatching, { once: true });
  try {
    for await (const event of orch.subscribeSession(sid, { afterSeq: 0, signal: watching.signal })) {
      const entry = event.payload.task;
      if (event.payload.change === "created" && entry.origin_client_agent_id != null) {
        taskId = entry.task_id;
        log(`  orchestrator   sees task ${taskId} "${entry.title}" submitted by ${entry.origin_client_agent_id} (context ${entry.thread_id})`);
        break;
      }
    }
  } finally {
    signal.removeEventListener("abort", stopWatching);
    watching.abort();
  }
  if (taskId === undefined) throw signal.aborted ? signal.reason : new Error("the session's event stream ended before a task was submitted");
  const path = taskPath({ sessionId: sid, taskId });

  const submitted = await orch.getTask(path, { signal });
  log(`  orchestrator   plans "${submitted.task.objective?.split("\n")[0]}" into ${STEPS.length} steps: ${STEPS.map((s) => s.step_id).join(", ")}`);
  await orch.updateTask(path, STEPS.map((step) => ({ op: "add_step" as const, step })), { signal });

  let region = "";
  const handler: StepHandler = async (step, ctx) => {
    switch (step.step_id) {
      case "collect-figures":
        return { result_summary: "Q3 revenue 4.2 M€: EMEA 1.9, Americas 1.5, APAC 0.8" };
      case "collect-notes":
        return { result_summary: "12 account notes: EMEA renewals up, APAC churn on two accounts" };
      case "choose-focus": {
        log(`  worker         ${step.step_id}: asks "${QUESTION}"`);
        const action = await ctx.ask({
          kind: "input",
          prompt: QUESTION,
          input_schema: { type: "object", properties: { region: { type: "string", enum: REGIONS } }, required: ["region"], additionalProperties: false },
        });
        const input = action.input as { region?: string } | null;
        if (action.decision !== "submitted" || typeof input?.region !== "string") throw new Error(`no region chosen (${action.decision})`);
        region = input.region;
        log(`  worker         ${step.step_id}: answered by ${action.resolved_by?.agent_id} (${action.resolved_by?.role}): ${JSON.stringify(action.input)}`);
        return { result_summary: `Lead with ${region}` };
      }
      case "write-summary":
        return { result_summary: `One page on Q3 sales, leading with ${region}`, artifact_ids: ["r2://reports/q3-summary.md"] };
      default:
        throw new Error(`no worker knows step ${step.step_id}`);
    }
  };

  // One worker per ready step; the task is re-read whenever one of them ends.
  const running = new Map<string, Promise<void>>();
  for (;;) {
    const view = await orch.getTask(path, { signal });
    if (view.task.status !== "running" && view.task.status !== "pending") throw new Error(`task ${taskId} is ${view.task.status}`);
    if (view.diagnostics.completeable && running.size === 0) {
      await orch.completeTask(path, { reason: `Q3 summary written, leading with ${region}` }, { signal });
      log(`  orchestrator   completes ${taskId}`);
      return;
    }
    for (const step of view.steps.filter((s) => s.status === "ready" && !running.has(s.step_id))) {
      const worker = await orch.dispatchWorker(path, { agent_id: `worker-${step.step_id}`, allowed_step_ids: [step.step_id], max_steps: 1 }, { signal });
      log(`  orchestrator   dispatches worker-${step.step_id}`);
      const done = worker.run(handler, { signal }).then((report) => {
        if (!report.completed.includes(step.step_id)) throw new Error(`worker-${step.step_id} stopped (${report.stopped}) without completing its step`);
        log(`  worker         ${step.step_id}: completed`);
      });
      running.set(
        step.step_id,
        done.finally(() => running.delete(step.step_id)),
      );
    }
    if (running.size === 0) throw new Error(`task ${taskId} has nothing ready and nothing running`);
    await Promise.race(running.values());
  }
}

async function main(): Promise<void> {
  const usage = "usage: npm run demo:a2a -- [--base http://127.0.0.1:8787 --admin-token TOKEN]";
  const opts = parseCli(usage, { base: null as string | null, adminToken: null as string | null });
  await withServerAt(opts.base, "bench/tmp/a2a-demo", async (base) => {
    const summary = await runA2aDemo({ base, adminToken: opts.adminToken ?? defaultAdminToken() });
    console.log(`\ntask ${summary.taskId}: ${summary.finalState}; ${summary.updates.length} streamed updates, ${summary.subscription.length} on SubscribeToTask`);
    for (const a of summary.artifacts) console.log(`  artifact ${a.artifactId.padEnd(16)} ${a.name.padEnd(26)} ${a.text}${a.data === undefined ? "" : ` ${JSON.stringify(a.data)}`}`);
    if (summary.finalState !== "TASK_STATE_COMPLETED") process.exitCode = 1;
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e: unknown) => {
    console.error(e instanceof Error ? (e.stack ?? e.message) : e);
    process.exit(1);
  });
}
