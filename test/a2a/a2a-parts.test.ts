/**
 * @module A2A message parts (docs/protocols/a2a.md): raw (bytes) and url parts of a submitted message become the task's
 * input_refs, also when the Worker has no Node `Buffer` (production has no nodejs_compat; the test pool injects
 * it, so these tests delete it around the calls); params the SDK cannot decode are -32602 with our own message.
 */
import { SELF } from "cloudflare:test";
import { type Part, type Task, TaskState } from "@a2a-js/sdk";
import type { Client } from "@a2a-js/sdk/client";
import { beforeAll, describe, expect, it } from "vitest";
import { connectA2a, rpc, send, text } from "../support/a2a-clients.js";
import { call, newSession, step, type TestSession } from "../support/helpers.js";
import { BASE, expectOk, mintRole } from "../support/support.js";

let S: TestSession;
let clientToken: string;
let client: Client;

beforeAll(async () => {
  S = await newSession();
  clientToken = await mintRole(S, "a2a_client", "files-agent");
  client = await connectA2a(clientToken);
});

/** "%PDF-1.7\n" followed by every byte value once: the base64 covers +, / and padding. */
const BYTES = new Uint8Array([...new TextEncoder().encode("%PDF-1.7\n"), ...Array.from({ length: 256 }, (_, i) => i)]);
const BYTES_BASE64 = btoa(String.fromCharCode(...BYTES));

/** A raw (bytes) part. */
function raw(bytes: Uint8Array, filename: string, mediaType: string): Part {
  // The SDK types raw content as a Node Buffer; any Uint8Array serialises the same.
  return { content: { $case: "raw", value: bytes as Buffer }, metadata: undefined, filename, mediaType };
}

/** A url part. */
function url(value: string, filename: string, mediaType: string): Part {
  return { content: { $case: "url", value }, metadata: undefined, filename, mediaType };
}

const FILE_REF = { kind: "file", bytes_base64: BYTES_BASE64, filename: "brief.pdf", media_type: "application/pdf" };
const URL_REF = { kind: "url", url: "https://example.com/q3/ledger.csv", filename: "ledger.csv", media_type: "text/csv" };

/** The same message on the wire (ProtoJSON), for raw JSON-RPC calls. */
function wireSend(method: string, parts: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { jsonrpc: "2.0", id: 1, method, params: { message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts }, configuration: { returnImmediately: true }, ...extra } };
}
const WIRE_PARTS = [
  { text: "Review the brief against the ledger" },
  { raw: BYTES_BASE64, filename: "brief.pdf", mediaType: "application/pdf" },
  { url: "https://example.com/q3/ledger.csv", filename: "ledger.csv", mediaType: "text/csv" },
];

/** Runs `body` with `globalThis.Buffer` deleted (as under `wrangler dev` without nodejs_compat), restoring it after. */
async function withoutBuffer<T>(body: () => Promise<T>): Promise<T> {
  const g = globalThis as { Buffer?: unknown };
  const saved = g.Buffer;
  delete g.Buffer;
  try {
    return await body();
  } finally {
    g.Buffer = saved;
  }
}

/** The task as the session's orchestrator reads it over REST. */
async function runtimeTask(id: string): Promise<Record<string, any>> {
  return expectOk(await call("GET", `/v1/sessions/${S.sid}/tasks/${id}`, S.orch)).task;
}

/** The request message of a task's A2A history: the objective, then its input_refs as parts. */
function requestParts(task: Task): Part[] {
  expect(task.history.length).toBeGreaterThan(0);
  return task.history[0]!.parts;
}

/** The file part as history gives it back: a url part with the bytes as a data URL (RFC 2397). */
const FILE_AS_URL = { content: { $case: "url", value: `data:application/pdf;base64,${BYTES_BASE64}` }, filename: "brief.pdf", mediaType: "application/pdf" };

describe("raw and url parts", () => {
  it("Should store a raw part as a file input_ref and a url part as a url input_ref, sent with the official client", async () => {
    const r = await client.sendMessage(send([text("Review the brief against the ledger"), raw(BYTES, "brief.pdf", "application/pdf"), url("https://example.com/q3/ledger.csv", "ledger.csv", "text/csv")], {}, { returnImmediately: true }));
    expect("id" in r, JSON.stringify(r)).toBe(true);
    const task = r as Task;
    expect(task.status!.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    const stored = await runtimeTask(task.id);
    expect(stored.objective).toBe("Review the brief against the ledger");
    expect(stored.input_refs).toEqual([FILE_REF, URL_REF]);
    const read = await client.getTask({ tenant: "", id: task.id, historyLength: undefined });
    expect(requestParts(read)).toEqual([
      expect.objectContaining({ content: { $case: "text", value: "Review the brief against the ledger" } }),
      expect.objectContaining(FILE_AS_URL),
      expect.objectContaining({ content: { $case: "url", value: URL_REF.url }, filename: "ledger.csv", mediaType: "text/csv" }),
    ]);
  });

  it("Should store raw and url parts when the Worker has no Buffer, and answer GetTask on that task", async () => {
    const { created, read } = await withoutBuffer(async () => {
      const created = await rpc(clientToken, wireSend("SendMessage", WIRE_PARTS));
      const id = created.body?.result?.task?.id as string | undefined;
      return { created, read: id === undefined ? undefined : await client.getTask({ tenant: "", id, historyLength: undefined }) };
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.result.task.status.state).toBe("TASK_STATE_SUBMITTED");
    expect((await runtimeTask(created.body.result.task.id)).input_refs).toEqual([FILE_REF, URL_REF]);
    expect(requestParts(read!)).toEqual(expect.arrayContaining([expect.objectContaining(FILE_AS_URL)]));
  });

  it("Should open the stream of a task submitted with a raw part when the Worker has no Buffer", async () => {
    const first = await withoutBuffer(async () => {
      const res = await SELF.fetch(`${BASE}/a2a`, {
        method: "POST",
        headers: { "content-type": "application/json", "a2a-version": "1.0", accept: "text/event-stream", authorization: `Bearer ${clientToken}` },
        body: JSON.stringify(wireSend("SendStreamingMessage", WIRE_PARTS)),
      });
      const contentType = res.headers.get("content-type");
      if (!contentType?.startsWith("text/event-stream")) return { contentType, frame: await res.text() };
      // The stream lasts until the task ends: read its first frame (the Task), then hang up.
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      let frame = "";
      while (!frame.includes("\n\n")) {
        const chunk = await reader.read();
        if (chunk.done) break;
        frame += chunk.value;
      }
      await reader.cancel();
      return { contentType, frame };
    });
    expect(first.contentType, first.frame).toMatch(/^text\/event-stream/);
    const event = JSON.parse(first.frame.split("\n\n")[0]!.replace(/^data: /, ""));
    expect(event.result.task.status.state).toBe("TASK_STATE_SUBMITTED");
    expect((await runtimeTask(event.result.task.id)).input_refs).toEqual([FILE_REF, URL_REF]);
  });

  it("Should take URL-safe or unpadded base64 and store it in the standard alphabet, padded", async () => {
    // 0xfb 0xff: "+/8=" in the standard alphabet, "-_8" URL-safe without padding.
    const r = await rpc(clientToken, wireSend("SendMessage", [{ text: "Two bytes" }, { raw: "-_8", mediaType: "application/octet-stream" }]));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect((await runtimeTask(r.body.result.task.id)).input_refs).toEqual([{ kind: "file", bytes_base64: "+/8=", media_type: "application/octet-stream" }]);
  });

  it("Should take a message of a file alone, titled as an A2A request", async () => {
    const r = await rpc(clientToken, wireSend("SendMessage", [{ raw: BYTES_BASE64, filename: "brief.pdf" }]));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const stored = await runtimeTask(r.body.result.task.id);
    expect(stored.title).toBe("A2A request");
    expect(stored.input_refs).toEqual([{ kind: "file", bytes_base64: BYTES_BASE64, filename: "brief.pdf" }]);
  });

  it("Should refuse a file or url part answering an open action with -32602, leaving the action open", async () => {
    const created = await rpc(clientToken, wireSend("SendMessage", [{ text: "Plan the rollout" }]));
    const id = created.body.result.task.id as string;
    const path = `/v1/sessions/${S.sid}/tasks/${id}`;
    expectOk(await call("PATCH", path, S.orch, { ops: [{ op: "add_step", step: step("a") }] }));
    const asked = expectOk(await call("POST", `${path}/actions`, S.orch, { kind: "input", prompt: "Which regions?" }), 201);
    for (const extra of [{ raw: BYTES_BASE64, filename: "regions.pdf" }, { url: "https://example.com/regions.csv" }]) {
      const r = await withoutBuffer(() => rpc(clientToken, { jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message: { messageId: crypto.randomUUID(), taskId: id, role: "ROLE_USER", parts: [{ text: "EMEA" }, extra] } } }));
      expect(r.body.error?.code, JSON.stringify(r.body)).toBe(-32602);
      expect(r.body.error.message).toMatch(/text or a data part/);
    }
    expect(expectOk(await call("GET", `${path}/actions/${asked.action_id}`, S.orch)).action.status).toBe("open");
  });
});

/** JS internals that must never reach a client. */
const LEAKS = ["is not defined", "Cannot read properties", "undefined", "Cannot convert", "TypeError", "ReferenceError"];

/** Asserts a -32602 answer with a message of ours, and that the client has no new task. */
async function expectInvalidParams(token: string, request: unknown, mentions?: RegExp): Promise<void> {
  const r = await rpc(token, request);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.error?.code, JSON.stringify(r.body)).toBe(-32602);
  const message = r.body.error.message as string;
  for (const leak of LEAKS) expect(message, JSON.stringify(request)).not.toContain(leak);
  if (mentions !== undefined) expect(message).toMatch(mentions);
  expect(r.body.error.data).toEqual(expect.arrayContaining([expect.objectContaining({ reason: "INVALID_PARAMS" })]));
}

describe("malformed params", () => {
  it("Should answer -32602 with a message of ours for parts of no known shape, creating nothing", async () => {
    const token = await mintRole(S, "a2a_client", "malformed-agent");
    const cases: [unknown[], RegExp][] = [
      [[null], /parts\[0\] must be an object/],
      [[{ text: "ok" }, 5], /parts\[1\] must be an object/],
      [[{ text: "ok" }, ["text"]], /parts\[1\] must be an object/],
      [[{}], /exactly one of text, raw, url or data/],
      [[{ file: { bytes: "aGk=" } }], /exactly one of text, raw, url or data/],
      [[{ text: "a", raw: "aGk=" }], /exactly one of/],
      [[{ raw: "not base64!" }], /raw must be base64/],
      [[{ raw: "aGk" + "=".repeat(3) }], /raw must be base64/],
      [[{ raw: "a" }], /raw must be base64/],
      [[{ raw: 12 }], /raw must be base64/],
      [[{ raw: { bytes: "aGk=" } }], /raw must be base64/],
      [[{ url: 7 }], /url must be an absolute URL/],
      [[{ url: "not a url" }], /url must be an absolute URL/],
      [[{ text: 5 }], /text must be a string/],
      [[{ text: "ok", filename: 5 }], /filename must be a string/],
      [[{ text: "ok", mediaType: { toString: 1 } }], /mediaType must be a string/],
      [[{ text: "ok", metadata: "x" }], /metadata must be an object/],
    ];
    for (const [parts, mentions] of cases) {
      await expectInvalidParams(token, wireSend("SendMessage", parts), mentions);
      await expectInvalidParams(token, wireSend("SendStreamingMessage", parts), mentions);
    }
    await expectInvalidParams(token, { jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message: { messageId: "m", role: "ROLE_USER", parts: "text" } } }, /parts must be an array/);
    await expectInvalidParams(token, { jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message: "hello" } }, /message must be an object/);
    const listed = await rpc(token, { jsonrpc: "2.0", id: 2, method: "ListTasks", params: {} });
    expect(listed.body.result.tasks ?? []).toEqual([]);
  });

  it("Should answer -32602 with a message of ours when the SDK cannot decode the params (an object where a string goes)", async () => {
    // Such values make the SDK's decoder throw a TypeError before our handler runs.
    await expectInvalidParams(clientToken, { jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: { toString: 1 } } }, /GetTask/);
    await expectInvalidParams(clientToken, { jsonrpc: "2.0", id: 1, method: "CancelTask", params: { id: { valueOf: 1, toString: 1 } } }, /CancelTask/);
    await expectInvalidParams(clientToken, { jsonrpc: "2.0", id: 1, method: "ListTasks", params: { pageSize: { toString: 1 } } }, /ListTasks/);
    await expectInvalidParams(clientToken, { jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message: { messageId: { toString: 1 }, role: "ROLE_USER", parts: [{ text: "ok" }] } } }, /SendMessage/);
    await expectInvalidParams(clientToken, { jsonrpc: "2.0", id: 1, method: "SubscribeToTask", params: { id: { toString: 1 } } }, /SubscribeToTask/);
  });

  it("Should refuse a raw part over the bound of one input_ref with -32602, naming the bound", async () => {
    const big = btoa("x".repeat(60_000));
    const r = await rpc(clientToken, wireSend("SendMessage", [{ text: "Too big" }, { raw: big }]));
    expect(r.body.error?.code, JSON.stringify(r.body).slice(0, 500)).toBe(-32602);
    expect(r.body.error.message).toMatch(/65536/);
    for (const leak of LEAKS) expect(r.body.error.message).not.toContain(leak);
  });
});
