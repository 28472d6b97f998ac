/**
 * @module A hostile upload: a chunked POST (no Content-Length) of spaces, written 64 KiB at a time as fast as the
 * socket drains, stopped as soon as the answer comes; what it reports is how much went out before the answer.
 */
import http from "node:http";
import { performance } from "node:perf_hooks";
import { round } from "./meter.js";

const CHUNK = new Uint8Array(64 * 1024).fill(0x20);

/** What one client saw: the answer's status and body (or the connection's error), how much of its upload went out before it, how long it took. */
export interface Sent { status: number | null; body: string; sentBytes: number; ms: number; error?: string }

/** POSTs `total` bytes to `url` chunked, 64 KiB a write as fast as the socket drains, stopping as soon as the answer comes. */
export function streamUpload(url: string, token: string, total: number, headers: Record<string, string>): Promise<Sent> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    let sent = 0;
    let answered = false;
    let settled = false;
    let answeredAt: number | null = null;
    const done = (result: Omit<Sent, "sentBytes" | "ms">) => {
      if (settled) return;
      settled = answered = true;
      resolve({ ...result, sentBytes: sent, ms: round((answeredAt ?? performance.now()) - t0, 1) });
    };
    const req = http.request(url, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "transfer-encoding": "chunked", ...headers } }, (res) => {
      // The answer has come: stop sending the rest, read it, then let the connection go.
      answered = true;
      answeredAt = performance.now();
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (text: string) => (body = (body + text).slice(0, 4096)));
      res.on("end", () => {
        done({ status: res.statusCode ?? null, body });
        req.destroy();
      });
      res.on("error", () => done({ status: res.statusCode ?? null, body }));
    });
    req.on("error", (e) => done({ status: null, body: "", error: e.message }));
    const pump = () => {
      while (!answered && sent < total) {
        const n = Math.min(CHUNK.byteLength, total - sent);
        sent += n;
        if (!req.write(n === CHUNK.byteLength ? CHUNK : CHUNK.subarray(0, n))) return void req.once("drain", pump);
      }
      if (!answered) req.end();
    };
    pump();
  });
}
