/** @module The delegation benchmark's own pieces: its SSE reader of a task's event stream and the delegated step it writes. */
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { delegatedStep, TaskStream } from "../../scripts/bench/scenarios/delegation.js";

const frame = (seq: number, type: string, fields: Record<string, unknown> = {}) => `id: ${seq}\nevent: ${type}\ndata: ${JSON.stringify({ type, sequence: seq, ...fields })}\n\n`;

let server: Server | undefined;
afterEach(async () => {
  const s = server;
  server = undefined;
  if (s === undefined) return;
  s.closeAllConnections();
  await new Promise((r) => s.close(r));
});

/** A local server whose /events answers with `respond`; returns its URL. */
async function serve(respond: (res: ServerResponse, auth: string | undefined) => void): Promise<string> {
  server = createServer((req, res) => respond(res, req.headers.authorization));
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`;
}

describe("TaskStream", () => {
  it("Should resolve a wait with the first matching event, whether it came before the wait or after, across split chunks and heartbeats", async () => {
    let push: (text: string) => void = () => {};
    let auth: string | undefined;
    const url = await serve((res, a) => {
      auth = a;
      res.writeHead(200, { "content-type": "text/event-stream" });
      push = (text) => res.write(text);
      res.write(frame(10, "task.created"));
    });
    const stream = new TaskStream(url, "tok");
    const created = await stream.waitFor((e) => e.type === "task.created", 2_000, "task.created");
    expect(created.type).toBe("task.created");
    expect(auth).toBe("Bearer tok");

    const later = stream.waitFor((e) => e.type === "task.attempt.completed" && e.stepId === "sub", 2_000, "settle");
    const settle = frame(30, "task.attempt.completed", { stepId: "sub" });
    push(frame(20, "task.attempt.completed", { stepId: "other" }) + ": heartbeat\n\n" + settle.slice(0, 25));
    push(settle.slice(25));
    const seen = await later;
    expect(seen).toMatchObject({ type: "task.attempt.completed", stepId: "sub" });
    expect(seen.at).toBeGreaterThanOrEqual(created.at);
    // Already seen: found at once, the same event.
    expect(await stream.waitFor((e) => e.stepId === "sub", 1, "settle again")).toBe(seen);
    expect(stream.count("task.attempt.completed")).toBe(2);
    expect(stream.count("task.attempt.completed", new Set(["sub"]))).toBe(1);
    stream.close();
    await stream.done;
  });

  it("Should keep a delegation's status and refs, and skip the end frame", async () => {
    const url = await serve((res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(frame(5, "task.delegated", { stepId: "d1", refs: { childTaskId: "d1-01abc" } }) + frame(6, "task.dependency.updated", { stepId: "d1", status: "active" }) + `event: end\ndata: {"reason":"task_terminal"}\n\n`);
    });
    const stream = new TaskStream(url, "tok");
    await stream.done;
    expect(stream.events.map(({ at: _, ...e }) => e)).toEqual([
      { type: "task.delegated", stepId: "d1", status: undefined, refs: { childTaskId: "d1-01abc" } },
      { type: "task.dependency.updated", stepId: "d1", status: "active", refs: undefined },
    ]);
  });

  it("Should fail a wait after its timeout, naming what it waited for and why the stream failed", async () => {
    const url = await serve((res) => {
      res.writeHead(404, { "content-type": "application/json" });
      res.end('{"error":{"code":"not_found"}}');
    });
    const stream = new TaskStream(url, "tok");
    await stream.done;
    await expect(stream.waitFor(() => true, 20, "child created")).rejects.toThrow(/no child created within 20 ms on the stream \(stream failed: GET events answered 404/);
  });
});

describe("delegatedStep", () => {
  it("Should write a root step delegated to a child task of independent one-line steps", () => {
    expect(delegatedStep("d007", 2)).toEqual({
      step_id: "d007",
      title: "Delegated d007",
      summary: "",
      depends_on_step_ids: [],
      delegate: {
        kind: "task",
        task: {
          title: "Child of d007",
          steps: [
            { step_id: "c0", title: "Child step 0", summary: "", depends_on_step_ids: [] },
            { step_id: "c1", title: "Child step 1", summary: "", depends_on_step_ids: [] },
          ],
        },
      },
    });
  });
});
