/**
 * Our answer to a peer's INPUT_REQUIRED (a delegated step's input action, answered here and sent to the peer as an
 * A2A message) is idempotent and exact: every try of it carries the same `messageId` (derived from the delegation
 * and the action, both WAL facts), so a peer that sees a retry after a failure can tell it is the same answer, and
 * it names the peer's question in `metadata.actionId` as the peer's status message named it. The peer is an
 * `@a2a-js/sdk` server (DefaultRequestHandler) served in-process through the real peer client.
 */
import { AgentCard, type Message, type Part, Role, TaskState } from "@a2a-js/sdk";
import { type AgentExecutor, AgentEvent, DefaultRequestHandler, type ExecutionEventBus, InMemoryTaskStore, JsonRpcTransportHandler, type RequestContext, ServerCallContext, UnauthenticatedUser } from "@a2a-js/sdk/server";
import { describe, expect, it } from "vitest";
import { PeerClient } from "../../durable-objects/peers/a2a-peer.js";
import { call, newSession } from "../support/helpers.js";
import { delegatedTask } from "../support/peer-delegation.js";
import { eventually, expectOk, walOf } from "../support/support.js";

const PEER = "http://peer.test";
const QUESTION = "Which region?";
const PEER_ACTION_ID = "peer-question-7";

const textPart = (value: string): Part => ({ content: { $case: "text", value }, mediaType: "text/plain", filename: "", metadata: undefined });
const agentMessage = (rc: RequestContext, text: string, metadata?: Record<string, unknown>): Message => ({
  messageId: crypto.randomUUID(),
  contextId: rc.contextId,
  taskId: rc.taskId,
  role: Role.ROLE_AGENT,
  parts: [textPart(text)],
  metadata,
  extensions: [],
  referenceTaskIds: [],
});

/** Asks one question (naming it in its status message's metadata.actionId), then completes with the answer. */
class AskingExecutor implements AgentExecutor {
  async execute(rc: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const status = (state: TaskState, message?: Message) => ({ state, message, timestamp: new Date().toISOString() });
    if (rc.task === undefined) {
      bus.publish(AgentEvent.task({ id: rc.taskId, contextId: rc.contextId, status: status(TaskState.TASK_STATE_INPUT_REQUIRED, agentMessage(rc, QUESTION, { actionId: PEER_ACTION_ID })), artifacts: [], history: [rc.userMessage], metadata: undefined }));
      return;
    }
    const answer = rc.userMessage.parts.flatMap((p) => (p.content?.$case === "text" ? [p.content.value] : [])).join("\n");
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId: rc.taskId,
        contextId: rc.contextId,
        artifact: { artifactId: "result", name: "result", description: "", parts: [textPart(`region: ${answer}`)], metadata: undefined, extensions: [] },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    bus.publish(AgentEvent.statusUpdate({ taskId: rc.taskId, contextId: rc.contextId, status: status(TaskState.TASK_STATE_COMPLETED), metadata: undefined }));
    bus.finished();
  }

  async cancelTask(): Promise<void> {}
}

/** The peer over an in-process fetch: every SendMessage recorded; the first `failAnswers` answers (messages to a task) get HTTP 503. */
function askingPeer(failAnswers: number) {
  const card = AgentCard.fromJSON({
    name: "asking peer",
    description: "asks one question",
    version: "1.0.0",
    supportedInterfaces: [{ url: `${PEER}/a2a`, protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
    capabilities: { streaming: false, pushNotifications: false },
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [],
  });
  const transport = new JsonRpcTransportHandler(new DefaultRequestHandler(card, new InMemoryTaskStore(), new AskingExecutor()));
  const sends: { messageId: string; taskId: string; metadata: unknown; refused: boolean }[] = [];
  let failuresLeft = failAnswers;
  const fetchImpl: typeof fetch = async (input, init) => {
    const request = new Request(input as RequestInfo, init);
    if (request.method === "GET") return Response.json(AgentCard.toJSON(card));
    const body = await request.text();
    const rpc = JSON.parse(body) as { method: string; params?: { message?: { messageId: string; taskId?: string; metadata?: unknown } } };
    if (rpc.method === "SendMessage") {
      const m = rpc.params!.message!;
      const refused = (m.taskId ?? "") !== "" && failuresLeft > 0;
      sends.push({ messageId: m.messageId, taskId: m.taskId ?? "", metadata: m.metadata ?? null, refused });
      if (refused) {
        failuresLeft -= 1;
        return new Response("busy", { status: 503 });
      }
    }
    const answer = await transport.handle(body, new ServerCallContext({ user: new UnauthenticatedUser() }));
    return Response.json(answer);
  };
  return { sends, fetchImpl };
}

describe("Our answers to a peer's question", () => {
  it("Should send the same messageId on the retry after a failed answer, naming the peer's question in metadata.actionId", async () => {
    const s = await newSession();
    const taskId = "answered";
    const peer = askingPeer(1);
    const client = new PeerClient({ allowlist: ["peer.test"], timeoutMs: 5_000, maxResponseBytes: 1_048_576 }, peer.fetchImpl);
    const path = await delegatedTask(s, taskId, client, `${PEER}/card`, "Pick a region");
    const action = await eventually(async () => {
      const open = expectOk(await call("GET", `${path}/actions?status=open`, s.orch)).actions as { action_id: string; prompt: string }[];
      expect(open).toHaveLength(1);
      return open[0]!;
    });
    expect(action.prompt).toBe(QUESTION);
    expectOk(await call("POST", `${path}/actions/${action.action_id}/respond`, s.orch, { decision: "submitted", input: "eu-west" }));
    // The first answer is refused (503), recorded as a failed try, and sent again after DELEGATE_RETRY_MS.
    const done = await eventually(async () => {
      const view = expectOk(await call("GET", path, s.orch));
      expect(view.steps.find((st: { step_id: string }) => st.step_id === "remote").status).toBe("completed");
      return view;
    }, 10_000);
    const answers = peer.sends.filter((m) => m.taskId !== "");
    expect(answers.map((m) => m.refused)).toEqual([true, false]);
    expect(answers[1]!.messageId).toBe(answers[0]!.messageId);
    expect(answers[0]!.messageId).not.toBe(peer.sends[0]!.messageId);
    expect(answers.map((m) => m.metadata)).toEqual([{ actionId: PEER_ACTION_ID }, { actionId: PEER_ACTION_ID }]);
    expect(done.steps.find((st: { step_id: string }) => st.step_id === "remote").result_summary).toContain("region: eu-west");
    const wal = await walOf(path, s.orch);
    expect(wal.filter((e) => e.event_type === "delegation_try_failed" && e.payload.intent === "a2a_answer")).toHaveLength(1);
    // The peer's id of its question is a WAL fact, recorded with the question.
    expect(wal.some((e) => e.event_type === "delegation_updated" && e.payload.remote_action_id === PEER_ACTION_ID)).toBe(true);
  });
});
