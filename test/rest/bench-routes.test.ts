/**
 * The bench routes (/_bench/…, routes/rest/bench.ts): absent (404) unless the Worker's BENCH_SEED var is "1", and
 * then the admin token's alone; a seed adds index rows copied from a real task's, which the task list and the
 * snapshot count; the counters report the index pushes the session object took.
 */
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { buildApp } from "../../routes/app.js";
import { ADMIN, call, newSession, newTask, step } from "../support/helpers.js";

/** Calls the Worker's app with BENCH_SEED set, as `wrangler dev --var BENCH_SEED:1` would. */
async function withBenchVar(method: string, path: string, token: string, body?: unknown): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const ctx = createExecutionContext();
  const res = await buildApp().fetch(new Request(`https://example.com${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }), { ...env, BENCH_SEED: "1" }, ctx);
  await waitOnExecutionContext(ctx);
  return { status: res.status, body: await res.json() };
}

/** Waits until the session's index lists task `taskId` (its create's push has landed). */
async function listed(sid: string, token: string, taskId: string): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const page = await call("GET", `/v1/sessions/${sid}/tasks?limit=50`, token);
    if ((page.body.tasks as { task_id: string }[]).some((t) => t.task_id === taskId)) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`task ${taskId} never reached the index`);
}

describe("bench routes", () => {
  it("Should answer 404 to the admin token when the BENCH_SEED var is not set", async () => {
    const s = await newSession();
    await newTask(s, "template", [step("a")]);
    const seed = await call("POST", `/_bench/sessions/${s.sid}/seed`, ADMIN, { template_task_id: "template", count: 5, prefix: "seeded-" });
    expect(seed.status).toBe(404);
    expect(seed.body.error.code).toBe("not_found");
    expect((await call("GET", `/_bench/sessions/${s.sid}/counters`, ADMIN)).status).toBe(404);
    await listed(s.sid, s.orch, "template");
    expect((await call("GET", `/v1/sessions/${s.sid}/tasks?limit=50`, s.orch)).body.total).toBe(1);
  });

  it("Should refuse a session token with the var set (permission_denied) and seed nothing", async () => {
    const s = await newSession();
    await newTask(s, "template", [step("a")]);
    await listed(s.sid, s.orch, "template");
    const seed = await withBenchVar("POST", `/_bench/sessions/${s.sid}/seed`, s.orch, { template_task_id: "template", count: 5, prefix: "seeded-" });
    expect(seed.status).toBe(403);
    expect(seed.body.error.code).toBe("permission_denied");
    expect((await withBenchVar("GET", `/_bench/sessions/${s.sid}/counters`, s.orch)).status).toBe(403);
    expect((await call("GET", `/v1/sessions/${s.sid}/tasks?limit=50`, s.orch)).body.total).toBe(1);
  });

  it("Should seed index rows copied from a task for the admin with the var set, counted by the list and the snapshot", async () => {
    const s = await newSession();
    await newTask(s, "template", [step("a"), step("b")]);
    await listed(s.sid, s.orch, "template");
    const seed = await withBenchVar("POST", `/_bench/sessions/${s.sid}/seed`, ADMIN, { template_task_id: "template", count: 120, prefix: "seeded-" });
    expect(seed).toEqual({ status: 201, body: { seeded: 120, tasks: 121 } });
    const page = await call("GET", `/v1/sessions/${s.sid}/tasks?limit=50&offset=50`, s.orch);
    expect(page.body.total).toBe(121);
    const copy = (page.body.tasks as { task_id: string; wal_name: string; title: string; status: string }[])[0]!;
    expect(copy).toMatchObject({ task_id: "seeded-000049", wal_name: "seeded-000049", title: "Task template" });
    const snapshot = await call("GET", `/v1/sessions/${s.sid}`, s.orch);
    expect(snapshot.status).toBe(200);
    expect(snapshot.body.task_summary.active).toBe(121);
    const counters = await withBenchVar("GET", `/_bench/sessions/${s.sid}/counters`, ADMIN);
    expect(counters.status).toBe(200);
    expect(counters.body.counts.index_push).toBeGreaterThanOrEqual(1);
  });

  it("Should answer not_found for a template the session does not hold", async () => {
    const s = await newSession();
    const seed = await withBenchVar("POST", `/_bench/sessions/${s.sid}/seed`, ADMIN, { template_task_id: "missing", count: 1, prefix: "seeded-" });
    expect(seed.status).toBe(404);
    expect(seed.body.error).toMatchObject({ code: "not_found", details: { task_id: "missing" } });
  });

  it("Should touch a new task object for the admin with the var set (no task in it), and refuse others and bad names", async () => {
    expect((await call("POST", "/_bench/objects/floor-1/touch", ADMIN)).status).toBe(404);
    expect(await withBenchVar("POST", "/_bench/objects/floor-1/touch", ADMIN)).toEqual({ status: 200, body: { has_task: false } });
    const s = await newSession();
    const refused = await withBenchVar("POST", "/_bench/objects/floor-2/touch", s.orch);
    expect(refused.status).toBe(403);
    const bad = await withBenchVar("POST", "/_bench/objects/a.b/touch", ADMIN);
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("validation_error");
  });

  it("Should make one durable write a call at the write floor for the admin with the var set, and refuse others", async () => {
    const s = await newSession();
    const first = await withBenchVar("POST", "/_bench/floor/write", ADMIN);
    expect(first.status).toBe(200);
    const second = await withBenchVar("POST", "/_bench/floor/write", ADMIN);
    expect(second.body).toEqual({ ok: true, writes: first.body.writes + 1 });
    expect((await withBenchVar("POST", "/_bench/floor/write", s.orch)).status).toBe(403);
    expect((await call("POST", "/_bench/floor/write", ADMIN)).status).toBe(404);
  });
});
