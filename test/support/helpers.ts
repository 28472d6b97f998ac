/** @module Helpers for service tests: HTTP calls through SELF with tokens, and a ready-made session. */
import { SELF } from "cloudflare:test";

/** The admin token the test configuration binds. */
export const ADMIN = "test-admin-token";
const BASE = "http://runtime.test";

/** A JSON answer: status, parsed body, headers. */
export interface JsonAnswer<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/** Calls the Worker with an optional bearer token and JSON body. */
export async function call<T = any>(method: string, path: string, token?: string, body?: unknown, headers: Record<string, string> = {}): Promise<JsonAnswer<T>> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (token !== undefined) (init.headers as Record<string, string>).authorization = `Bearer ${token}`;
  if (body !== undefined) {
    (init.headers as Record<string, string>)["content-type"] = "application/json";
    init.body = typeof body === "string" ? body : JSON.stringify(body);
  }
  const res = await SELF.fetch(`${BASE}${path}`, init);
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text === "" ? null : JSON.parse(text);
  } catch {
    // Not JSON (e.g. the WAL export): keep the text.
  }
  return { status: res.status, body: parsed as T, headers: res.headers };
}

/** A session with its orchestrator and observer tokens. */
export interface TestSession {
  sid: string;
  orch: string;
  observer: string;
}

/** Creates a session as the admin. */
export async function newSession(): Promise<TestSession> {
  const res = await call("POST", "/v1/sessions", ADMIN, {});
  if (res.status !== 201) throw new Error(`session create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { sid: res.body.session_id, orch: res.body.orchestrator.token, observer: res.body.observer.token };
}

/** A step input. */
export function step(id: string, deps: string[] = [], extra: Record<string, unknown> = {}) {
  return { step_id: id, title: `Step ${id}`, summary: `Do ${id}`, depends_on_step_ids: deps, ...extra };
}

/** Creates a task in the session and returns its path prefix. */
export async function newTask(s: TestSession, taskId: string, steps: ReturnType<typeof step>[], extra: Record<string, unknown> = {}): Promise<string> {
  const res = await call("POST", `/v1/sessions/${s.sid}/tasks`, s.orch, { task_id: taskId, wal_name: taskId, title: `Task ${taskId}`, summary: "", steps, ...extra });
  if (res.status !== 201) throw new Error(`task create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return `/v1/sessions/${s.sid}/tasks/${taskId}`;
}

/** Dispatches a worker; returns its token and run id. */
export async function dispatch(s: TestSession, taskPath: string, body: Record<string, unknown> = {}): Promise<{ token: string; run_id: string; agent_id: string }> {
  const res = await call("POST", `${taskPath}/workers`, s.orch, body);
  if (res.status !== 201) throw new Error(`dispatch failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { token: res.body.token, run_id: res.body.run_id, agent_id: res.body.agent_id };
}
