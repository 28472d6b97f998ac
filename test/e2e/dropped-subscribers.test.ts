/**
 * Against a real `wrangler dev`: a client that drops its event stream frees its slot. 300 subscribers of one
 * task's stream (and of its session's) are opened and dropped one after another with one token, each by aborting
 * the client request; every one is served (the token's share is 16 of SSE_MAX_SUBSCRIBERS=64), and then 40 new
 * subscribers of other clients at once are served too. The object cannot see a client go by itself; the Worker
 * that relays the stream can (routes/http/subscriber-relay.ts).
 */
import { beforeAll, describe, expect, it, inject } from "vitest";
import { defaultAdminToken } from "../../scripts/dev-server.js";
import { mustAnswer } from "./support/json-call.js";

let base: string;

beforeAll(() => {
  base = inject("sharedDevServerBase");
});

/** A JSON call that must answer `status`. */
const must = (status: number, method: string, p: string, token: string, body?: unknown): Promise<any> => mustAnswer(base, status, method, p, token, body);

/** Opens an event stream (its headers: the object took the subscriber); the status, and how to drop it (abort the request). */
async function subscribe(p: string, token: string): Promise<{ status: number; body: string; drop: () => void }> {
  const abort = new AbortController();
  const res = await fetch(base + p, { headers: { authorization: `Bearer ${token}` }, signal: abort.signal });
  return { status: res.status, body: res.status === 200 ? "" : await res.text(), drop: () => abort.abort() };
}

describe("Dropped event streams under wrangler dev", () => {
  it.each(["task", "session"])("Should serve 300 %s stream subscribers opened and dropped one after another, then 40 new ones at once", async (kind) => {
    const admin = defaultAdminToken();
    const session = await must(201, "POST", "/v1/sessions", admin, {});
    const sid: string = session.session_id;
    const orch: string = session.orchestrator.token;
    await must(201, "POST", `/v1/sessions/${sid}/tasks`, orch, { task_id: "streamed", wal_name: "streamed", title: "Streamed", summary: "", steps: [{ step_id: "a", title: "A", summary: "", depends_on_step_ids: [] }] });
    const p = kind === "task" ? `/v1/sessions/${sid}/tasks/streamed/events` : `/v1/sessions/${sid}/events`;
    const observer: string = session.observer.token;

    const refused: string[] = [];
    for (let i = 0; i < 300; i++) {
      const sub = await subscribe(p, observer);
      if (sub.status !== 200) refused.push(`#${i}: ${sub.status} ${sub.body.slice(0, 200)}`);
      sub.drop();
    }
    expect(refused).toEqual([]);

    // Other clients, at once: the last few the loop dropped may not be seen gone yet (under load that can take
    // a second or more, see routes/http/subscriber-relay.ts), but they are within the loop token's share.
    const tokens: string[] = [];
    for (const agent of ["watcher-1", "watcher-2", "watcher-3"]) tokens.push((await must(201, "POST", `/v1/sessions/${sid}/tokens`, orch, { role: "observer", agent_id: agent })).token);
    const fresh = await Promise.all(Array.from({ length: 40 }, (_, i) => subscribe(p, tokens[i % 3]!)));
    try {
      expect(fresh.map((s) => `${s.status} ${s.body.slice(0, 160)}`)).toEqual(Array.from({ length: 40 }, () => "200 "));
    } finally {
      for (const s of fresh) s.drop();
    }
  });
});
