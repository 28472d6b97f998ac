/**
 * @module A command socket for the service tests: opens `GET .../socket` through SELF and hands out its answer
 * frames in order; the frames the object pushes unasked (`{event, …}`, e.g. action.resolved) are kept apart.
 */
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
  /** The next frame the object pushed unasked (`{event, …}`), parsed. */
  nextEvent(): Promise<any>;
  /** Sends a frame and waits for its answer. */
  ask(frame: unknown): Promise<any>;
  closed: Promise<{ code: number; reason: string }>;
}

/** Opens the task's command socket with `token` (as a header, or `?access_token=` as browsers send it). */
export async function openSocket(taskPath: string, token: string, how: "header" | "query" = "header"): Promise<TestSocket> {
  const url = how === "query" ? `${BASE}${taskPath}/socket?access_token=${encodeURIComponent(token)}` : `${BASE}${taskPath}/socket`;
  const res = await SELF.fetch(url, { headers: { upgrade: "websocket", ...(how === "header" ? { authorization: `Bearer ${token}` } : {}) } });
  expect(res.status).toBe(101);
  const ws = res.webSocket!;
  ws.accept();
  const inbox: any[] = [];
  const events: any[] = [];
  const eventWaiters: ((v: any) => void)[] = [];
  const waiters: ((v: any) => void)[] = [];
  ws.addEventListener("message", (e) => {
    const frame = JSON.parse(e.data as string);
    if (typeof frame.event === "string") {
      const w = eventWaiters.shift();
      if (w === undefined) events.push(frame);
      else w(frame);
      return;
    }
    const w = waiters.shift();
    if (w === undefined) inbox.push(frame);
    else w(frame);
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.addEventListener("close", (e) => resolve({ code: e.code, reason: e.reason })));
  const send = (frame: unknown) => ws.send(typeof frame === "string" ? frame : JSON.stringify(frame));
  const next = () => (inbox.length > 0 ? Promise.resolve(inbox.shift()) : new Promise<any>((r) => waiters.push(r)));
  return {
    ws,
    send,
    next,
    nextEvent: () => (events.length > 0 ? Promise.resolve(events.shift()) : new Promise<any>((r) => eventWaiters.push(r))),
    ask: (frame) => {
      send(frame);
      return next();
    },
    closed,
  };
}

/** Sends `commands` as one frame over a socket of its own and returns the answer frame. */
export async function socketFrame(taskPath: string, token: string, commands: unknown[]): Promise<any> {
  const socket = await openSocket(taskPath, token);
  const frame = await socket.ask({ id: 1, commands });
  socket.ws.close(1000);
  return frame;
}

