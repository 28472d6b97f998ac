/**
 * @module One write through any surface that reaches a task: its REST route, one command of POST .../batch, one
 * command of a socket frame, or its MCP tool; answered alike, so a test checks each surface with one expectation.
 */
import { runInDurableObject } from "cloudflare:test";
import { expect } from "vitest";
import { call } from "./helpers.js";
import { connectMcp } from "./mcp-clients.js";
import { bindings } from "./support.js";
import { socketFrame } from "./test-socket.js";

/** Every surface a task command reaches. */
export const COMMAND_SURFACES = ["rest", "batch", "socket", "mcp"] as const;
export type CommandSurface = (typeof COMMAND_SURFACES)[number];

/** A write: its REST request and the MCP tool call that stands for it. */
export interface Write {
  readonly method: string;
  readonly path: string;
  readonly body?: unknown;
  readonly tool: string;
  readonly args: Record<string, unknown>;
}

/** A write's answer on any surface: accepted, or the REST status and error envelope. */
export interface SurfaceAnswer {
  readonly ok: boolean;
  readonly status: number | null;
  readonly body: any;
}

/** Sends `write` with `token` through `surface`; `taskPath` is the task whose batch route and socket carry it. */
export async function through(surface: CommandSurface | "rest" | "mcp", taskPath: string, token: string, write: Write): Promise<SurfaceAnswer> {
  const command = { token, method: write.method, path: write.path, ...(write.body === undefined ? {} : { body: write.body }) };
  switch (surface) {
    case "rest": {
      const res = await call(write.method, write.path, token, write.body);
      return { ok: res.status < 300, status: res.status, body: res.body };
    }
    case "batch": {
      const res = await call("POST", `${taskPath}/batch`, token, { commands: [command] });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const r = res.body.results[0];
      return { ok: r.ok, status: r.status, body: r.body };
    }
    case "socket": {
      const frame = await socketFrame(taskPath, token, [command]);
      const r = frame.results[0];
      return { ok: r.ok, status: r.status, body: r.body };
    }
    case "mcp": {
      const client = await connectMcp(token, "modern");
      try {
        const result = await client.callTool({ name: write.tool, arguments: write.args });
        if (result.isError === true) return { ok: false, status: result.structuredContent.status, body: { error: result.structuredContent.error } };
        return { ok: true, status: null, body: result.structuredContent };
      } finally {
        await client.close();
      }
    }
  }
}

/** Asserts a 409 limit_exceeded with exactly these details. */
export function expectLimitExceeded(answer: SurfaceAnswer, details: Record<string, unknown>): void {
  expect(answer.ok, JSON.stringify(answer.body)).toBe(false);
  expect(answer.status).toBe(409);
  expect(answer.body.error.code).toBe("limit_exceeded");
  expect(answer.body.error.details).toEqual(details);
}

/** The session object of `sid`. */
export function sessionStub(sid: string) {
  return bindings.SESSIONS.get(bindings.SESSIONS.idFromName(sid));
}

/**
 * Puts `count` stand-in task rows into the session's index (ids `fill-1` …), as if that many tasks were created,
 * `origin` naming the A2A client that submitted them. Rows only: a cap counts rows, and creating 100,000 tasks
 * one by one would take minutes.
 */
export async function fillTaskRows(sid: string, count: number, origin: string | null = null): Promise<void> {
  await runInDurableObject(sessionStub(sid), (_instance, state) => {
    state.storage.sql.exec(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
       INSERT INTO tasks (task_id, wal_name, state, reserved_at_ms, seq, origin_client_agent_id)
       SELECT 'fill-' || i, 'fill-' || i, 'confirmed', 0, 1000000 + i, ? FROM n`,
      count,
      origin,
    );
  });
}
