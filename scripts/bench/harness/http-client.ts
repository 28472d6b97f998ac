/** @module The benchmarks' raw HTTP client of the service (Node's fetch, keep-alive), timed per call, with the set-up calls every scenario makes. */
import { performance } from "node:perf_hooks";

const REQUEST_TIMEOUT_MS = 30_000;

/** One answer: status, body (parsed JSON when it is JSON), time from sending to the whole body read. */
export interface Answer {
  status: number;
  // Answers are read loosely here, field by field: the service's own schemas are not the benchmark's concern.
  body: any;
  ms: number;
}

/** A session as the scenarios use it: its id and its orchestrator's and observer's tokens. */
export interface Session { sid: string; orch: string; observer: string }

/** `count` independent steps s00000, s00001, …; `compact` (titles S0…, no summary) keeps 10,000 steps well under the 1 MiB body limit. */
export function stepsOf(count: number, summary: string | "compact" = "Independent bench step"): { step_id: string; title: string; summary: string; depends_on_step_ids: string[] }[] {
  const compact = summary === "compact";
  return Array.from({ length: count }, (_, i) => ({ step_id: `s${String(i).padStart(5, "0")}`, title: compact ? `S${i}` : `Step ${i}`, summary: compact ? "" : summary, depends_on_step_ids: [] }));
}

/** The raw client of one server. */
export class Client {
  constructor(readonly base: string) {}

  /** One JSON call; `ms` is the time from sending to the whole body read. */
  async call(method: string, path: string, token?: string, body?: unknown, parse = true): Promise<Answer> {
    const headers: Record<string, string> = {};
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    let payload: string | undefined;
    if (body !== undefined) {
      headers["content-type"] = "application/json";
      payload = JSON.stringify(body);
    }
    const t0 = performance.now();
    const res = await fetch(this.base + path, { method, headers, body: payload, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    const text = await res.text();
    const ms = performance.now() - t0;
    let parsed: unknown = text;
    if (parse && text !== "") {
      try {
        parsed = JSON.parse(text);
      } catch {
        // keep the text
      }
    }
    return { status: res.status, body: parsed, ms };
  }

  /** A call that must answer `expected`; throws with the answer otherwise. */
  async must(expected: number, method: string, path: string, token?: string, body?: unknown): Promise<Answer> {
    const a = await this.call(method, path, token, body);
    if (a.status !== expected) throw new Error(`${method} ${path} answered ${a.status} (wanted ${expected}): ${JSON.stringify(a.body).slice(0, 400)}`);
    return a;
  }

  /** A fresh session. */
  async session(adminToken: string): Promise<Session> {
    const b = (await this.must(201, "POST", "/v1/sessions", adminToken, {})).body;
    return { sid: b.session_id, orch: b.orchestrator.token, observer: b.observer.token };
  }

  /** Creates task `tid` in the session from `fields` (title, steps, …); returns its path and the create call's answer. */
  async task(s: Session, tid: string, fields: Record<string, unknown>): Promise<{ path: string; created: Answer }> {
    const created = await this.must(201, "POST", `/v1/sessions/${s.sid}/tasks`, s.orch, { task_id: tid, wal_name: tid, summary: "", ...fields });
    return { path: `/v1/sessions/${s.sid}/tasks/${tid}`, created };
  }

  /** Completed steps of a task as the server records them, every page of GET .../tasks/{tid} read. */
  async completedOnServer(taskPath: string, token: string): Promise<number> {
    let completed = 0;
    let cursor: string | null = null;
    do {
      const page: Answer = await this.must(200, "GET", cursor === null ? taskPath : `${taskPath}?cursor=${encodeURIComponent(cursor)}`, token);
      completed += (page.body.steps as { status: string }[]).filter((s) => s.status === "completed").length;
      cursor = (page.body.page?.next_cursor as string | null | undefined) ?? null;
    } while (cursor !== null);
    return completed;
  }
}
