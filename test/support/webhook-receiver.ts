/**
 * @module A webhook receiver for tests: a Node HTTP server on 127.0.0.1 (started by the worker project's global
 * setup, webhook-receiver-setup.ts, since the Workers pool runs no server of its own) that records every request
 * under the first segment of its path, and answers by the second:
 * - `ok`: 200 `ok`;
 * - `status-<code>`: that status (e.g. `status-410`, `status-500`);
 * - `redirect`: 302 to `/<id>/ok` (recorded there if it were followed);
 * - `slow`: nothing until the client goes, or 30 s;
 * - `flaky-<n>`: 500 to the first n requests under its id, then 200;
 * - `huge`: 200, then 64 KiB chunks without a Content-Length up to HUGE_BYTES, noting whether the client left first.
 * `GET /_received/<id>` answers what `<id>` received: each request's path, headers and body, and for `huge` the
 * bytes sent and whether the client closed the stream before its end.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** What `huge` would send whole: far past any cap a test sets. */
export const HUGE_BYTES = 64 * 1_048_576;
const CHUNK = Buffer.alloc(64 * 1_024, "x");

/** One request as the receiver saw it. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** `huge` only: bytes written, and whether the client left before HUGE_BYTES (null while still sending). */
  sent?: number;
  cut?: boolean | null;
}

export interface WebhookReceiver {
  base: string;
  close(): Promise<void>;
}

/** Starts the receiver on a free port of 127.0.0.1. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received = new Map<string, ReceivedRequest[]>();
  const server = createServer((req, res) => void handle(req, res, received));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function handle(req: IncomingMessage, res: ServerResponse, received: Map<string, ReceivedRequest[]>): Promise<void> {
  const [first, second] = (req.url ?? "/").split("?")[0]!.split("/").filter((s) => s !== "");
  if (req.method === "GET" && first === "_received") {
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(received.get(second ?? "") ?? []));
    return;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers[name] = value;
  const record: ReceivedRequest = { method: req.method ?? "", path: req.url ?? "", headers, body: Buffer.concat(chunks).toString("utf8") };
  const list = received.get(first ?? "") ?? [];
  list.push(record);
  received.set(first ?? "", list);
  const behaviour = second ?? "ok";
  if (behaviour === "ok") res.writeHead(200, { "content-type": "text/plain" }).end("ok");
  else if (behaviour.startsWith("status-")) res.writeHead(Number(behaviour.slice(7)), { "content-type": "text/plain" }).end("answered");
  else if (behaviour.startsWith("flaky-")) res.writeHead(list.length <= Number(behaviour.slice(6)) ? 500 : 200, { "content-type": "text/plain" }).end("flaky");
  else if (behaviour === "redirect") res.writeHead(302, { location: `/${first}/ok` }).end();
  else if (behaviour === "slow") {
    const timer = setTimeout(() => res.writeHead(200).end("late"), 30_000);
    res.on("close", () => clearTimeout(timer));
  } else if (behaviour === "huge") await sendHuge(res, record);
  else res.writeHead(404).end();
}

/** Writes HUGE_BYTES in chunks, waiting for each to drain, and notes where the client left. */
async function sendHuge(res: ServerResponse, record: ReceivedRequest): Promise<void> {
  record.sent = 0;
  record.cut = null;
  let gone = false;
  res.on("close", () => {
    gone = true;
    if (record.cut === null) record.cut = record.sent! < HUGE_BYTES;
  });
  res.writeHead(200, { "content-type": "application/octet-stream" });
  while (!gone && record.sent! < HUGE_BYTES) {
    const drained = res.write(CHUNK);
    record.sent! += CHUNK.length;
    if (!drained) {
      await new Promise<void>((resolve) => {
        const done = () => (res.off("drain", done), res.off("close", done), resolve());
        res.on("drain", done);
        res.on("close", done);
      });
    }
  }
  if (!gone) {
    record.cut = false;
    res.end();
  }
}
