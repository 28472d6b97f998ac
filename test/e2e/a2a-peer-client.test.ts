/**
 * The outbound A2A client of delegated steps (durable-objects/peers/a2a-peer.ts) against a scripted A2A peer over real
 * HTTP (Node's fetch): every peer outcome, and every limit (allowlist, timeout, size, credentials), as a
 * PeerResult with its code and whether it is worth retrying.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hostAllowed, type PeerLimits, type PeerResult, PeerClient, type PeerTask } from "../../durable-objects/peers/a2a-peer.js";
import { completedText, FAILURE_TEXT, INPUT_QUESTION, regionText, type ScriptedPeer, STREAM_STEPS, startScriptedPeer, streamedText } from "./support/a2a-peer-server.js";

const LIMITS: PeerLimits = { allowlist: ["loopback"], timeoutMs: 5_000, maxResponseBytes: 1_048_576 };
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
let seq = 0;
const messageId = () => `msg-${process.pid}-${++seq}`;

let peer: ScriptedPeer;

beforeAll(async () => {
  peer = await startScriptedPeer({ slowMs: 3_000 });
});

afterAll(async () => {
  await peer?.close();
});

/** The task of a successful result (fails the test otherwise, showing the failure). */
function taskOf(result: PeerResult): PeerTask {
  expect(result).toMatchObject({ ok: true });
  if (!result.ok) throw new Error(`expected a task, got ${result.code}: ${result.message}`);
  return result.task;
}

/** GetTask until the status leaves `from` (bounded by a count of reads, not a clock). */
async function pollWhile(client: PeerClient, cardUrl: string, taskId: string, from: readonly string[]): Promise<PeerTask> {
  for (let i = 0; i < 100; i++) {
    const task = taskOf(await client.get(cardUrl, taskId));
    if (!from.includes(task.remote_status)) return task;
    await sleep(50);
  }
  throw new Error(`task ${taskId} stayed in ${from.join("/")}`);
}

describe("PeerClient against a scripted A2A peer", () => {
  it("Should send a message, get the peer's working task at once, and read it completed with its artifact text", async () => {
    const client = new PeerClient(LIMITS);
    const id = messageId();
    const sent = await client.send(peer.cardUrl("complete"), { message_id: id, text: "summarise the report" });
    expect(sent).toMatchObject({ ok: true, streaming: false });
    const task = taskOf(sent);
    expect(task.remote_status).toBe("TASK_STATE_WORKING");
    expect(task.remote_context_id).toEqual(expect.any(String));
    const done = await pollWhile(client, peer.cardUrl("complete"), task.remote_task_id, ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]);
    expect(done).toMatchObject({ remote_task_id: task.remote_task_id, remote_status: "TASK_STATE_COMPLETED" });
    expect(done.artifacts).toEqual([{ artifact_id: "result", name: "result", text: completedText("summarise the report") }]);
  });

  it("Should read a failed task with the peer's status message", async () => {
    const client = new PeerClient(LIMITS);
    const sent = taskOf(await client.send(peer.cardUrl("fail"), { message_id: messageId(), text: "do the impossible" }));
    const ended = await pollWhile(client, peer.cardUrl("fail"), sent.remote_task_id, ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]);
    expect(ended).toMatchObject({ remote_status: "TASK_STATE_FAILED", status_message: FAILURE_TEXT, artifacts: [] });
  });

  it("Should see the peer's input-required question, answer it with the task id, and read the task completed", async () => {
    const client = new PeerClient(LIMITS);
    const asked = taskOf(await client.send(peer.cardUrl("input"), { message_id: messageId(), text: "deploy the service" }));
    expect(asked).toMatchObject({ remote_status: "TASK_STATE_INPUT_REQUIRED", status_message: INPUT_QUESTION });
    const answered = await client.send(peer.cardUrl("input"), {
      message_id: messageId(),
      text: "eu-west-1",
      task_id: asked.remote_task_id,
      ...(asked.remote_context_id === null ? {} : { context_id: asked.remote_context_id }),
    });
    expect(taskOf(answered).remote_task_id).toBe(asked.remote_task_id);
    const done = await pollWhile(client, peer.cardUrl("input"), asked.remote_task_id, ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_WORKING"]);
    expect(done.remote_status).toBe("TASK_STATE_COMPLETED");
    expect(done.artifacts.map((a) => a.text)).toEqual([regionText("eu-west-1")]);
    expect(peer.calls.filter((c) => c.method === "SendMessage" && c.taskId === asked.remote_task_id)).toHaveLength(1);
  });

  it("Should cancel a task that never ends: CancelTask reaches the peer and the task is canceled", async () => {
    const client = new PeerClient(LIMITS);
    const sent = taskOf(await client.send(peer.cardUrl("hang"), { message_id: messageId(), text: "wait forever" }));
    expect(sent.remote_status).toBe("TASK_STATE_WORKING");
    const cancelled = await client.cancel(peer.cardUrl("hang"), sent.remote_task_id);
    expect(taskOf(cancelled).remote_status).toBe("TASK_STATE_CANCELED");
    expect(peer.calls).toContainEqual({ method: "CancelTask", taskId: sent.remote_task_id });
    expect(taskOf(await client.get(peer.cardUrl("hang"), sent.remote_task_id)).remote_status).toBe("TASK_STATE_CANCELED");
  });

  it("Should answer a JSON-RPC error of the peer (an unknown task) as rpc_error, not retryable", async () => {
    const result = await new PeerClient(LIMITS).get(peer.cardUrl("complete"), "no-such-task");
    expect(result).toMatchObject({ ok: false, code: "rpc_error", retryable: false });
    if (!result.ok) expect(result.message).toContain("-32001");
  });

  it("Should answer HTTP 500 from the peer as a retryable http_error", async () => {
    const result = await new PeerClient(LIMITS).send(peer.cardUrl("http500"), { message_id: messageId(), text: "x" });
    expect(result).toMatchObject({ ok: false, code: "http_error", retryable: true });
    if (!result.ok) expect(result.message).toContain("HTTP 500");
  });

  it("Should not follow a redirect (it could lead off the allowlist): http_error, not retryable, and the target never called", async () => {
    const calls = peer.calls.length;
    const toTarget = () => peer.requests.filter((r) => r.path === "/complete/a2a").length;
    const targetBefore = toTarget();
    const result = await new PeerClient(LIMITS).send(peer.cardUrl("redirect"), { message_id: messageId(), text: "x" });
    expect(result).toMatchObject({ ok: false, code: "http_error", retryable: false });
    if (!result.ok) expect(result.message).toContain("HTTP 307");
    expect(peer.calls.slice(calls).map((c) => c.method)).toEqual(["SendMessage"]);
    expect(toTarget()).toBe(targetBefore);
  });

  it("Should answer a body that is not JSON as malformed, not retryable", async () => {
    const result = await new PeerClient(LIMITS).send(peer.cardUrl("garbage"), { message_id: messageId(), text: "x" });
    expect(result).toMatchObject({ ok: false, code: "malformed", retryable: false });
  });

  it("Should give up on a peer slower than timeoutMs with a retryable timeout", async () => {
    const client = new PeerClient({ ...LIMITS, timeoutMs: 300 });
    const result = await client.send(peer.cardUrl("slow"), { message_id: messageId(), text: "x" });
    expect(result).toMatchObject({ ok: false, code: "timeout", retryable: true });
  });

  it("Should refuse a host outside the allowlist without sending it any request", async () => {
    const before = peer.requests.length;
    const client = new PeerClient({ ...LIMITS, allowlist: ["agents.example.com"] });
    const sent = await client.send(peer.cardUrl("complete"), { message_id: messageId(), text: "x" });
    expect(sent).toMatchObject({ ok: false, code: "not_allowed", retryable: false });
    expect(await client.get(peer.cardUrl("complete"), "t")).toMatchObject({ ok: false, code: "not_allowed" });
    expect(peer.requests.length).toBe(before);
  });

  it("Should refuse a card whose JSON-RPC interface is on a host outside the allowlist, calling nothing there", async () => {
    const calls = peer.calls.length;
    const result = await new PeerClient(LIMITS).send(peer.cardUrl("foreign"), { message_id: messageId(), text: "x" });
    expect(result).toMatchObject({ ok: false, code: "not_allowed", retryable: false });
    if (!result.ok) expect(result.message).toContain("peer.invalid");
    expect(peer.calls.length).toBe(calls);
  });

  it("Should refuse an answer larger than maxResponseBytes as too_large (declared length)", async () => {
    const result = await new PeerClient({ ...LIMITS, maxResponseBytes: 200 }).send(peer.cardUrl("complete"), { message_id: messageId(), text: "x" });
    expect(result).toMatchObject({ ok: false, code: "too_large", retryable: false });
  });

  it("Should stop reading a chunked answer without a length once it passes maxResponseBytes (too_large)", async () => {
    const result = await new PeerClient({ ...LIMITS, maxResponseBytes: 8_192 }).send(peer.cardUrl("big"), { message_id: messageId(), text: "x" });
    expect(result).toMatchObject({ ok: false, code: "too_large", retryable: false });
  });

  it("Should answer an unreachable peer as retryable unreachable", async () => {
    // A port that was free a moment ago: nothing listens there.
    const gone = await startScriptedPeer();
    const url = gone.cardUrl("complete");
    await gone.close();
    const result = await new PeerClient(LIMITS).send(url, { message_id: messageId(), text: "x" });
    expect(result).toMatchObject({ ok: false, code: "unreachable", retryable: true });
  });

  it("Should use the Agent Card it fetched for the next calls instead of fetching it again", async () => {
    const client = new PeerClient(LIMITS);
    const cardPath = new URL(peer.cardUrl("complete")).pathname;
    const cardFetches = () => peer.requests.filter((r) => r.path === cardPath).length;
    const before = cardFetches();
    const sent = taskOf(await client.send(peer.cardUrl("complete"), { message_id: messageId(), text: "x" }));
    taskOf(await client.get(peer.cardUrl("complete"), sent.remote_task_id));
    taskOf(await client.get(peer.cardUrl("complete"), sent.remote_task_id));
    expect(cardFetches() - before).toBe(1);
  });

  it("Should send the messageId it was given, so a retried send is recognisable", async () => {
    const id = messageId();
    const client = new PeerClient(LIMITS);
    const sent = taskOf(await client.send(peer.cardUrl("complete"), { message_id: id, text: "x" }));
    const done = await pollWhile(client, peer.cardUrl("complete"), sent.remote_task_id, ["TASK_STATE_WORKING"]);
    expect(done.remote_status).toBe("TASK_STATE_COMPLETED");
    // The peer echoes nothing of the id in our record; its store keeps the message: the history shows it.
    const history = await fetch(new URL(peer.cardUrl("complete")).origin + "/complete/a2a", {
      method: "POST",
      headers: { "content-type": "application/json", "a2a-version": "1.0" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: sent.remote_task_id } }),
    }).then((r) => r.json() as Promise<{ result: { history: { messageId: string }[] } }>);
    expect(history.result.history.map((m) => m.messageId)).toContain(id);
  });
});

describe("PeerClient.subscribe against a streaming A2A peer", () => {
  /** The views a subscription reported, as (status, status message, artifact texts). */
  const shape = (t: PeerTask) => [t.remote_status, t.status_message, t.artifacts.map((a) => a.text)];
  const subscribeCalls = (taskId: string) => peer.calls.filter((c) => c.method === "SubscribeToTask" && c.taskId === taskId).length;

  it("Should offer the stream with the send's answer, report each change of the task in order, and end with the completed task and its artifact", async () => {
    const client = new PeerClient(LIMITS);
    const text = "summarise the report";
    const sent = await client.send(peer.cardUrl("stream"), { message_id: messageId(), text });
    expect(sent).toMatchObject({ ok: true, streaming: true, subscribe: expect.any(Function) });
    if (!sent.ok || sent.subscribe === undefined) throw new Error("no stream offered");
    const views: PeerTask[] = [];
    const result = await sent.subscribe(async (t) => void views.push(t));
    const done = taskOf(result);
    expect(done).toMatchObject({ remote_task_id: sent.task.remote_task_id, remote_status: "TASK_STATE_COMPLETED" });
    expect(done.artifacts).toEqual([{ artifact_id: "result", name: "result", text: streamedText(text) }]);
    const [reading, drafted, checking, appended] = STREAM_STEPS(text);
    const draft = "artifact" in drafted ? drafted.artifact : "";
    const expected = [
      ["TASK_STATE_WORKING", null, []],
      ["TASK_STATE_WORKING", "status" in reading ? reading.status : "", []],
      ["TASK_STATE_WORKING", "status" in reading ? reading.status : "", [draft]],
      ["TASK_STATE_WORKING", "status" in checking ? checking.status : "", [draft]],
      ["TASK_STATE_WORKING", "status" in checking ? checking.status : "", [`${draft}\n${"append" in appended ? appended.append : ""}`]],
      ["TASK_STATE_COMPLETED", null, [streamedText(text)]],
    ];
    // The subscription opens right after the send; the first update comes 300 ms later, so normally every view is
    // seen, but a late subscription starts from a later snapshot: the views are the tail of the expected ones.
    expect(views.length).toBeGreaterThanOrEqual(4);
    expect(views.map(shape)).toEqual(expected.slice(expected.length - views.length));
    expect(subscribeCalls(sent.task.remote_task_id)).toBe(1);
    expect(peer.calls.filter((c) => c.method === "GetTask" && c.taskId === sent.task.remote_task_id)).toEqual([]);
    // The stream ends at the terminal state; the completed task is the same when read.
    expect(taskOf(await client.get(peer.cardUrl("stream"), sent.task.remote_task_id)).artifacts).toEqual(done.artifacts);
  });

  it("Should answer a subscription to a task already completed with the peer's refusal (rpc_error), not a view", async () => {
    const client = new PeerClient(LIMITS);
    const sent = taskOf(await client.send(peer.cardUrl("stream"), { message_id: messageId(), text: "x" }));
    taskOf(await client.subscribe(peer.cardUrl("stream"), sent.remote_task_id, async () => undefined));
    const views: PeerTask[] = [];
    const again = await client.subscribe(peer.cardUrl("stream"), sent.remote_task_id, async (t) => void views.push(t));
    expect(again).toMatchObject({ ok: false, code: "rpc_error", retryable: false });
    expect(views).toEqual([]);
  });

  it("Should cut a stream that stays silent for timeoutMs (retryable timeout), after reporting what it did say", async () => {
    const client = new PeerClient({ ...LIMITS, timeoutMs: 500 });
    const sent = taskOf(await client.send(peer.cardUrl("streamhang"), { message_id: messageId(), text: "wait" }));
    const views: PeerTask[] = [];
    const result = await client.subscribe(peer.cardUrl("streamhang"), sent.remote_task_id, async (t) => void views.push(t));
    expect(result).toMatchObject({ ok: false, code: "timeout", retryable: true });
    expect(views.map((v) => v.remote_status)).toEqual(["TASK_STATE_WORKING"]);
    expect(subscribeCalls(sent.remote_task_id)).toBe(1);
    taskOf(await client.cancel(peer.cardUrl("streamhang"), sent.remote_task_id));
  });

  it("Should close a stream at the end of its longest life (streamLifeMs) as a retryable stream_ended, before its silence would be cut", async () => {
    const client = new PeerClient({ ...LIMITS, streamLifeMs: 400 });
    const sent = taskOf(await client.send(peer.cardUrl("streamhang"), { message_id: messageId(), text: "wait" }));
    const result = await client.subscribe(peer.cardUrl("streamhang"), sent.remote_task_id, async () => undefined);
    expect(result).toMatchObject({ ok: false, code: "stream_ended", retryable: true });
    if (!result.ok) expect(result.message).toContain("400 ms");
    taskOf(await client.cancel(peer.cardUrl("streamhang"), sent.remote_task_id));
  });

  it("Should end a stream its reader aborts as a retryable stream_ended, not as the peer's failure", async () => {
    const client = new PeerClient(LIMITS);
    const sent = taskOf(await client.send(peer.cardUrl("streamhang"), { message_id: messageId(), text: "wait" }));
    const reader = new AbortController();
    const result = await client.subscribe(peer.cardUrl("streamhang"), sent.remote_task_id, async () => reader.abort(), reader.signal);
    expect(result).toMatchObject({ ok: false, code: "stream_ended", retryable: true });
    taskOf(await client.cancel(peer.cardUrl("streamhang"), sent.remote_task_id));
  });

  it("Should cut a stream at an event larger than maxResponseBytes (too_large, not retryable)", async () => {
    const client = new PeerClient({ ...LIMITS, maxResponseBytes: 8_192 });
    const sent = taskOf(await client.send(peer.cardUrl("streambig"), { message_id: messageId(), text: "x" }));
    const views: PeerTask[] = [];
    const result = await client.subscribe(peer.cardUrl("streambig"), sent.remote_task_id, async (t) => void views.push(t));
    expect(result).toMatchObject({ ok: false, code: "too_large", retryable: false });
    expect(views.every((v) => v.artifacts.length === 0)).toBe(true);
  });

  it("Should hold each event, not the whole stream, to maxResponseBytes", async () => {
    const events: number[] = [];
    // Node's fetch, with every SSE event of the answer measured on the way.
    const measuring: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (!(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) return response;
      const text = await response.text();
      for (const frame of text.split("\n\n")) if (frame !== "") events.push(new TextEncoder().encode(frame).byteLength);
      return new Response(text, { status: 200, headers: { "content-type": "text/event-stream" } });
    };
    const max = 2_048;
    const client = new PeerClient({ ...LIMITS, maxResponseBytes: max }, measuring);
    const sent = taskOf(await client.send(peer.cardUrl("stream"), { message_id: messageId(), text: "x" }));
    const done = taskOf(await client.subscribe(peer.cardUrl("stream"), sent.remote_task_id, async () => undefined));
    expect(done.remote_status).toBe("TASK_STATE_COMPLETED");
    expect(events.reduce((a, b) => a + b, 0)).toBeGreaterThan(max);
    expect(Math.max(...events)).toBeLessThanOrEqual(max);
  });

  it("Should refuse to subscribe to a peer whose card does not offer streaming, without calling SubscribeToTask", async () => {
    const client = new PeerClient(LIMITS);
    const sent = await client.send(peer.cardUrl("complete"), { message_id: messageId(), text: "x" });
    expect(sent).toMatchObject({ ok: true, streaming: false });
    if (sent.ok) expect(sent.subscribe).toBeUndefined();
    const task = taskOf(sent);
    expect(await client.subscribe(peer.cardUrl("complete"), task.remote_task_id, async () => undefined)).toMatchObject({ ok: false, code: "rpc_error", retryable: false });
    expect(subscribeCalls(task.remote_task_id)).toBe(0);
  });
});

describe("PeerClient credentials", () => {
  let guarded: ScriptedPeer;
  let open: ScriptedPeer;

  beforeAll(async () => {
    guarded = await startScriptedPeer({ authorization: "Bearer peer-secret" });
    open = await startScriptedPeer();
  });

  afterAll(async () => {
    await guarded?.close();
    await open?.close();
  });

  it("Should send the stored Authorization to its own origin only, card fetch and JSON-RPC alike", async () => {
    const guardedOrigin = new URL(guarded.cardUrl("complete")).origin;
    const asked: string[] = [];
    const client = new PeerClient(LIMITS, undefined, async (origin) => {
      asked.push(origin);
      return origin === guardedOrigin ? "Bearer peer-secret" : null;
    });
    const sent = taskOf(await client.send(guarded.cardUrl("complete"), { message_id: messageId(), text: "x" }));
    taskOf(await client.get(guarded.cardUrl("complete"), sent.remote_task_id));
    taskOf(await client.send(open.cardUrl("complete"), { message_id: messageId(), text: "y" }));
    expect(guarded.requests.length).toBeGreaterThanOrEqual(3);
    expect(guarded.requests.every((r) => r.authorization === "Bearer peer-secret")).toBe(true);
    expect(open.requests.length).toBeGreaterThanOrEqual(2);
    expect(open.requests.every((r) => r.authorization === null)).toBe(true);
    expect(new Set(asked)).toEqual(new Set([guardedOrigin, new URL(open.cardUrl("complete")).origin]));
  });

  it("Should answer a peer that refuses the missing credential (401) as http_error, not retryable", async () => {
    const result = await new PeerClient(LIMITS).send(guarded.cardUrl("complete"), { message_id: messageId(), text: "x" });
    expect(result).toMatchObject({ ok: false, code: "http_error", retryable: false });
    if (!result.ok) expect(result.message).toContain("HTTP 401");
  });
});

describe("hostAllowed", () => {
  it("Should allow loopback addresses (127.0.0.0/8, ::1, localhost) for the loopback entry and nothing else", () => {
    for (const url of ["http://127.0.0.1:8787/x", "http://127.9.8.7/", "http://[::1]:9000/", "http://localhost:1/", "http://LOCALHOST/"]) {
      expect(hostAllowed(url, ["loopback"])).toBe(true);
    }
    for (const url of ["http://10.0.0.1/", "http://128.0.0.1/", "http://localhost.example.com/", "http://example.com/"]) {
      expect(hostAllowed(url, ["loopback"])).toBe(false);
    }
  });

  it("Should match a host entry on any port and a host:port entry on that port only, case-insensitively", () => {
    expect(hostAllowed("https://Agents.Example.com/card", ["agents.example.COM"])).toBe(true);
    expect(hostAllowed("https://agents.example.com:8443/card", ["agents.example.com"])).toBe(true);
    expect(hostAllowed("https://agents.example.com/card", ["agents.example.com:443"])).toBe(true);
    expect(hostAllowed("https://agents.example.com:8443/card", ["agents.example.com:443"])).toBe(false);
    expect(hostAllowed("http://evil.example.com/", ["agents.example.com"])).toBe(false);
    expect(hostAllowed("http://agents.example.com.evil.net/", ["agents.example.com"])).toBe(false);
    expect(hostAllowed("http://[::1]:8080/", ["[::1]:8080"])).toBe(true);
  });

  it("Should allow anything over http(s) for *, nothing for an empty list, and never other schemes or unparseable URLs", () => {
    expect(hostAllowed("https://anything.example/", ["*"])).toBe(true);
    expect(hostAllowed("http://127.0.0.1/", [])).toBe(false);
    expect(hostAllowed("http://127.0.0.1/", [""])).toBe(false);
    expect(hostAllowed("file:///etc/passwd", ["*"])).toBe(false);
    expect(hostAllowed("ftp://127.0.0.1/", ["loopback"])).toBe(false);
    expect(hostAllowed("not a url", ["*"])).toBe(false);
  });
});
