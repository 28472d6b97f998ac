/** @module A command socket for the service tests: opens `GET .../socket` through SELF and hands out its answer frames in order. */
import { SELF } from "cloudflare:test";
import { expect } from "vitest";
import { BASE } from "./support.js";

/** An open command socket and its answers, in arrival order. */
export interface TestSocket {
  readonly ws: WebSocket;
  send(frame: unknown): void;
  next(): Promise<any>;
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
  const waiters: ((v: any) => void)[] = [];
  ws.addEventListener("message", (e) => {
    const frame = JSON.parse(e.data as string);
    const w = waiters.shift();
    if (w === undefined) inbox.push(frame);
    else w(frame);
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.addEventListener("close", (e) => resolve({ code: e.code, reason: e.reason })));
  return {
    ws,
    send: (frame) => ws.send(typeof frame === "string" ? frame : JSON.stringify(frame)),
    next: () => (inbox.length > 0 ? Promise.resolve(inbox.shift()) : new Promise((r) => waiters.push(r))),
    closed,
  };
}

