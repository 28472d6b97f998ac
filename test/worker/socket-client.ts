/** @module A command socket client for the service tests: opens `GET .../socket` through SELF and reads answers in order. */
import { SELF } from "cloudflare:test";
import { expect } from "vitest";
import { BASE } from "./support.js";

/** An open command socket and its answers, in arrival order. */
export interface TestSocket {
  readonly ws: WebSocket;
  /** Sends a frame: text as it is, anything else as JSON. */
  send(frame: unknown): void;
  /** The next answer frame, parsed. */
  next(): Promise<any>;
  /** Sends a frame and waits for its answer. */
  ask(frame: unknown): Promise<any>;
}

/** Opens the command socket of a task with a bearer token. */
export async function openSocket(taskPath: string, token: string): Promise<TestSocket> {
  const res = await SELF.fetch(`${BASE}${taskPath}/socket`, { headers: { upgrade: "websocket", authorization: `Bearer ${token}` } });
  expect(res.status).toBe(101);
  const ws = res.webSocket!;
  ws.accept();
  const inbox: any[] = [];
  const waiters: ((frame: any) => void)[] = [];
  ws.addEventListener("message", (e) => {
    const frame = JSON.parse(e.data as string);
    const waiter = waiters.shift();
    if (waiter === undefined) inbox.push(frame);
    else waiter(frame);
  });
  const send = (frame: unknown) => ws.send(typeof frame === "string" ? frame : JSON.stringify(frame));
  const next = () => (inbox.length > 0 ? Promise.resolve(inbox.shift()) : new Promise<any>((resolve) => waiters.push(resolve)));
  return {
    ws,
    send,
    next,
    ask: (frame) => {
      send(frame);
      return next();
    },
  };
}
