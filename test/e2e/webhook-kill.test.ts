/**
 * Webhook deliveries across a real crash: `wrangler dev` killed with SIGKILL (its whole process group) during a
 * delivery's send, and right after the commit that owed it, then started again on the same storage. Nothing wakes
 * the task object but its own alarm; the delivery still arrives, signed (verified by the `standardwebhooks`
 * library) and with the same webhook-id as before the crash, and is recorded delivered.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, defaultAdminToken, killDevServer, sleep, startDevServer, stopDevServer } from "../../scripts/dev-server.js";

/** What the receiver got, and how it answers now: `hang` never answers (a send under way when the server dies). */
const received: { path: string; headers: Record<string, string>; body: string }[] = [];
let behaviour: "hang" | "ok" = "hang";
let receiver: Server;
let receiverBase: string;
let server: DevServer | null = null;
const workDir = "bench/tmp/e2e-webhook-kill";

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

beforeAll(async () => {
  receiver = createServer((req, res) => {
    void bodyOf(req).then((body) => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers[k] = v;
      received.push({ path: req.url ?? "", headers, body });
      if (behaviour === "ok") res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  receiverBase = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});

afterAll(async () => {
  if (server !== null) await stopDevServer(server);
  receiver.closeAllConnections();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

/** A WEBHOOK_TIMEOUT_MS short enough that the alarm guarding a send comes by within seconds of a restart. */
const VARS = { WEBHOOK_TIMEOUT_MS: "3000", WEBHOOK_RETRY_BASE_MS: "200" };

async function send(base: string, token: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

async function waitFor<T>(what: string, check: () => T | undefined | Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

describe("kill -9 of the server", { timeout: 240_000 }, () => {
  it("Should deliver the events of a kill -9 during a send and right after a commit once restarted, with one webhook-id each, woken by the alarm", async () => {
    server = await startDevServer({ workDir, logLevel: "warn", startupTimeoutMs: 120_000, vars: VARS });
    const persistDir = server.persistDir!;
    const session = await send(server.base, defaultAdminToken(), "POST", "/v1/sessions", {});
    const sid = session.session_id as string;
    const orch = session.orchestrator.token as string;
    const stamp = Date.now().toString(36);
    /** One webhook and one task per case; a path the receiver answers by `behaviour`, or at once. */
    const setUp = async (name: string) => {
      const path = `/${name}-${stamp}`;
      const hook = await send(server!.base, orch, "POST", `/v1/sessions/${sid}/webhooks`, { url: `${receiverBase}${path}`, events: ["task.created"] });
      const tid = `${name}-${stamp}`;
      await send(server!.base, orch, "POST", `/v1/sessions/${sid}/tasks`, { task_id: tid, wal_name: tid, title: name, summary: "", steps: [{ step_id: "a", title: "A", summary: "", depends_on_step_ids: [] }] });
      return { path, hook, tid };
    };
    behaviour = "hang";
    const midSend = await setUp("mid");
    await waitFor("the first try to reach the receiver", () => (received.some((r) => r.path === midSend.path) ? true : undefined));
    // From here the receiver answers nothing at all until the restart: the second task's deliveries hang too.
    const afterCommit = await setUp("commit");
    // The second task's create answered: its delivery was committed with it, and may or may not have left yet.
    await killDevServer(server);
    // Both subscriptions are the session's: each case counts what its own subscription got of its own task.
    const got = (c: { path: string; tid: string }) => received.filter((r) => r.path === c.path && JSON.parse(r.body).data.taskId === c.tid);
    const before = new Map([midSend, afterCommit].map((c) => [c.path, got(c).length]));
    // At least the one under way (a try that timed out before the kill was tried again, and hangs too).
    expect(before.get(midSend.path)).toBeGreaterThanOrEqual(1);
    behaviour = "ok";
    server = await startDevServer({ workDir, logLevel: "warn", startupTimeoutMs: 120_000, vars: VARS, persistDir });
    const base = server.base;
    // Nothing calls the tasks: the restarted objects are woken by the alarms they left (a send's guard, or the owed delivery's).
    for (const c of [midSend, afterCommit]) {
      await waitFor(`${c.tid} recorded delivered`, async () => {
        const view = await send(base, orch, "GET", `/v1/sessions/${sid}/tasks/${c.tid}`);
        return view.task.webhook_delivery_state[0]?.state === "delivered" ? true : undefined;
      });
      const arrived = got(c);
      expect(arrived.length).toBeGreaterThanOrEqual(1);
      expect(new Set(arrived.map((r) => r.headers["webhook-id"])).size).toBe(1);
      const wh = new Webhook(c.hook.secret);
      for (const r of arrived) expect((wh.verify(r.body, r.headers) as { type: string }).type).toBe("task.created");
    }
    // The send under way at the crash was made again after it.
    expect(got(midSend).length).toBeGreaterThan(before.get(midSend.path)!);
  });
});
