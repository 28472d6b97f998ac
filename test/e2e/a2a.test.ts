/**
 * A2A 1.0 over real HTTP against `wrangler dev`: the demo (scripts/demo-a2a.ts) has the official @a2a-js/sdk client
 * send the runtime a task, follow it on SendStreamingMessage and SubscribeToTask while the session's orchestrator
 * plans and runs it, answer its input-required question, and see it completed with its artifacts; the Agent Card
 * is cacheable; /a2a refuses a call without a valid token.
 */
import { Role, TaskState } from "@a2a-js/sdk";
import { beforeAll, describe, expect, it, inject } from "vitest";
import { defaultAdminToken } from "../../scripts/dev-server.js";
import { type A2aDemoSummary, type A2aUpdate, runA2aDemo } from "../../scripts/demo-a2a.js";

/** The e2e project's shared dev server (test/e2e/support/shared-server.ts). */
let server: { base: string };

beforeAll(async () => {
  server = { base: inject("sharedDevServerBase") };
});

/** How far along a state is: a stream may stay or move on, never go back (INPUT_REQUIRED ↔ WORKING are both "live"). */
function rankOf(state: string): number {
  switch (state) {
    case "TASK_STATE_SUBMITTED":
      return 0;
    case "TASK_STATE_WORKING":
    case "TASK_STATE_INPUT_REQUIRED":
      return 1;
    case "TASK_STATE_COMPLETED":
    case "TASK_STATE_FAILED":
    case "TASK_STATE_CANCELED":
    case "TASK_STATE_REJECTED":
      return 2;
    default:
      throw new Error(`not a state a stream should carry: ${state}`);
  }
}

/** The states a stream carried, in order (its Task and status updates). */
const statesOf = (updates: readonly A2aUpdate[]) => updates.filter((u) => u.kind === "task" || u.kind === "statusUpdate").map((u) => u.state!);

/** Asserts that the states never go back and that nothing follows a terminal state. */
function expectNoRegression(updates: readonly A2aUpdate[]): void {
  const ranks = statesOf(updates).map(rankOf);
  for (let i = 1; i < ranks.length; i++) expect(ranks[i], `state ${i} of ${statesOf(updates).join(" → ")}`).toBeGreaterThanOrEqual(ranks[i - 1]!);
  const terminal = updates.findIndex((u) => (u.kind === "task" || u.kind === "statusUpdate") && rankOf(u.state!) === 2);
  if (terminal !== -1) expect(terminal, "nothing after the terminal state").toBe(updates.length - 1);
}

/** Rejects after `ms` with `what`. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A fresh session over REST, and an a2a_client token its orchestrator mints. */
async function a2aClientToken(): Promise<string> {
  const created = await fetch(`${server.base}/v1/sessions`, {
    method: "POST",
    headers: { authorization: `Bearer ${defaultAdminToken()}`, "content-type": "application/json" },
    body: "{}",
    signal: AbortSignal.timeout(15_000),
  });
  expect(created.status).toBe(201);
  const session = (await created.json()) as { session_id: string; orchestrator: { token: string } };
  const minted = await fetch(`${server.base}/v1/sessions/${session.session_id}/tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${session.orchestrator.token}`, "content-type": "application/json" },
    body: JSON.stringify({ role: "a2a_client", agent_id: "raw-client" }),
    signal: AbortSignal.timeout(15_000),
  });
  expect(minted.status).toBe(201);
  return ((await minted.json()) as { token: string }).token;
}

/** A raw JSON-RPC POST to /a2a: status, headers and the parsed body. */
async function rawRpc(body: unknown, headers: Record<string, string>): Promise<{ status: number; headers: Headers; body: any }> {
  const res = await fetch(`${server.base}/a2a`, {
    method: "POST",
    headers: { "content-type": "application/json", "a2a-version": "1.0", ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === "" ? null : JSON.parse(text) };
}

const SEND = { jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message: { messageId: "m-1", role: "ROLE_USER", parts: [{ text: "Summarise the quarter" }] }, configuration: { returnImmediately: true } } };

describe("A2A demo against wrangler dev: an A2A client's task planned and run by the session's orchestrator", () => {
  let summary: A2aDemoSummary;
  const lines: string[] = [];

  beforeAll(async () => {
    summary = await within(runA2aDemo({ base: server.base, adminToken: defaultAdminToken(), log: (l) => lines.push(l), timeoutMs: 25_000 }), 30_000, "the A2A demo");
  });

  it("Should end with the task COMPLETED, as GetTask answers it", () => {
    expect(summary.finalState).toBe("TASK_STATE_COMPLETED");
    expect(summary.final.id).toBe(summary.taskId);
    expect(summary.final.status!.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(summary.final.contextId).toBe(summary.contextId);
    expect(summary.taskId).toMatch(/^a2a-[0-9a-z]+$/);
  });

  it("Should open SendStreamingMessage with the SUBMITTED Task and close it at INPUT_REQUIRED, then stream the follow-up to COMPLETED, never going back", () => {
    const sent = summary.updates.filter((u) => u.stream === "send");
    const answered = summary.updates.filter((u) => u.stream === "answer");
    expect(sent[0]).toMatchObject({ kind: "task", state: "TASK_STATE_SUBMITTED" });
    expect(sent.filter((u) => u.kind === "task")).toHaveLength(1);
    expect(sent.at(-1)).toMatchObject({ kind: "statusUpdate", state: "TASK_STATE_INPUT_REQUIRED" });
    expect(statesOf(sent)).toContain("TASK_STATE_WORKING");
    expect(answered[0]).toMatchObject({ kind: "task" });
    expect(answered[0]!.state).not.toBe("TASK_STATE_INPUT_REQUIRED");
    expect(answered.filter((u) => u.kind === "task")).toHaveLength(1);
    expect(answered.at(-1)).toMatchObject({ kind: "statusUpdate", state: "TASK_STATE_COMPLETED" });
    expectNoRegression(summary.updates);
  });

  it("Should keep SubscribeToTask open from its Task through INPUT_REQUIRED to COMPLETED, never going back", () => {
    const sub = summary.subscription;
    expect(sub[0]!.kind).toBe("task");
    expect(sub.filter((u) => u.kind === "task")).toHaveLength(1);
    expect(statesOf(sub)).toContain("TASK_STATE_INPUT_REQUIRED");
    expect(statesOf(sub).indexOf("TASK_STATE_INPUT_REQUIRED")).toBeLessThan(statesOf(sub).lastIndexOf("TASK_STATE_WORKING"));
    expect(sub.at(-1)).toMatchObject({ kind: "statusUpdate", state: "TASK_STATE_COMPLETED" });
    expectNoRegression(sub);
  });

  it("Should ask the worker's question as INPUT_REQUIRED, deliver the client's data part to the worker, and keep both in the history", () => {
    expect(summary.inputRequired).toMatchObject({ prompt: "Which region should the summary lead with?", answer: { region: "EMEA" } });
    expect(summary.inputRequired!.actionId).toMatch(/^act_/);
    // The worker saw the answer: its step's result names the region, and it logged who answered.
    expect(summary.artifacts.find((a) => a.artifactId === "choose-focus")!.text).toBe("Lead with EMEA");
    expect(lines.some((l) => l.includes(`answered by ${summary.clientAgentId} (a2a_client): {"region":"EMEA"}`))).toBe(true);
    const history = summary.final.history.map((m) => ({ role: m.role, content: m.parts[0]?.content }));
    expect(history).toEqual([
      { role: Role.ROLE_USER, content: { $case: "text", value: expect.stringContaining("Summarise Q3 sales by region") } },
      { role: Role.ROLE_AGENT, content: { $case: "text", value: "Which region should the summary lead with?" } },
      { role: Role.ROLE_USER, content: { $case: "data", value: { region: "EMEA" } } },
    ]);
  });

  it("Should give one artifact per completed step and the task's result, each streamed once to each stream that was open", () => {
    expect(summary.artifacts.map((a) => a.artifactId)).toEqual(["collect-figures", "collect-notes", "choose-focus", "write-summary", "result"]);
    expect(summary.artifacts.find((a) => a.artifactId === "write-summary")).toMatchObject({ name: "Write the summary", text: "One page on Q3 sales, leading with EMEA", data: { artifactIds: ["r2://reports/q3-summary.md"] } });
    expect(summary.artifacts.find((a) => a.artifactId === "result")!.text).toBe("Q3 summary written, leading with EMEA");
    const streamed = (updates: readonly A2aUpdate[]) => updates.filter((u) => u.kind === "artifactUpdate").map((u) => u.artifactId);
    // SubscribeToTask opened before any step was done: every artifact reaches it as an update.
    expect([...streamed(summary.subscription)].sort()).toEqual(summary.artifacts.map((a) => a.artifactId).sort());
    // The two SendStreamingMessage streams together: each artifact once (those done before the follow-up in its Task).
    const viaSend = streamed(summary.updates);
    expect(new Set(viaSend).size).toBe(viaSend.length);
    expect(viaSend).toEqual(expect.arrayContaining(["choose-focus", "write-summary", "result"]));
  });
});

describe("A2A over real HTTP", () => {
  it("Should serve the Agent Card naming this server's /a2a, cacheable with a strong ETag and 304 for it", async () => {
    const res = await fetch(`${server.base}/.well-known/agent-card.json`, { signal: AbortSignal.timeout(15_000) });
    expect(res.status).toBe(200);
    const card = (await res.json()) as Record<string, any>;
    expect(card.supportedInterfaces).toEqual([{ url: `${server.base}/a2a`, protocolBinding: "JSONRPC", protocolVersion: "1.0" }]);
    expect(card.capabilities).toMatchObject({ streaming: true });
    expect(res.headers.get("cache-control")).toMatch(/max-age=\d+/);
    const etag = res.headers.get("etag")!;
    expect(etag).toMatch(/^"[^"]+"$/);

    const again = await fetch(`${server.base}/.well-known/agent-card.json`, { headers: { "if-none-match": etag }, signal: AbortSignal.timeout(15_000) });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
    expect(again.headers.get("etag")).toBe(etag);
  });

  it("Should refuse a call without a token, and with a malformed one, with 401 and a Bearer challenge", async () => {
    const token = await a2aClientToken();
    const accepted = await rawRpc(SEND, { authorization: `Bearer ${token}` });
    expect(accepted.status).toBe(200);
    expect(accepted.body.result.task.status.state).toBe("TASK_STATE_SUBMITTED");

    const noToken: Record<string, string> = {};
    for (const headers of [noToken, { authorization: "Bearer not-a-token" }]) {
      const refused = await rawRpc(SEND, headers);
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toBe('Bearer realm="agent-task-runtime"');
      expect(refused.body).toMatchObject({ jsonrpc: "2.0", error: { code: -32000 } });
      expect(refused.body.result).toBeUndefined();
    }
  });

  it("Should take a raw-bytes part under real workerd, which has no Node Buffer, and give it back in the task's history", async () => {
    const token = await a2aClientToken();
    const parts = [{ text: "Summarise this file" }, { raw: "aGVsbG8=", filename: "hello.txt", mediaType: "text/plain" }];
    const sent = await rawRpc({ ...SEND, params: { ...SEND.params, message: { ...SEND.params.message, parts } } }, { authorization: `Bearer ${token}` });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const id = sent.body.result.task.id as string;
    const got = await rawRpc({ jsonrpc: "2.0", id: 2, method: "GetTask", params: { id } }, { authorization: `Bearer ${token}` });
    expect(got.status).toBe(200);
    const file = got.body.result.history[0].parts.find((p: { filename?: string }) => p.filename === "hello.txt");
    expect(file.url).toBe("data:text/plain;base64,aGVsbG8=");
  });
});
