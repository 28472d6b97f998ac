/**
 * Whole task DAGs driven through /mcp by the official clients, as agents would: an orchestrator client plans a
 * fan-out/fan-in task and hands each dispatched worker its token and MCP URL; each worker is its own client
 * (modern and legacy mixed). REST is read only to check what MCP answered: the same reads, the final WAL.
 * Also the prompts and resources, and how a 1,500-step DAG reads within a tool text's budget.
 */
import { describe, expect, it } from "vitest";
import type { WalEvent } from "../../src/core/index.js";
import { call, newSession, newTask, step, type TestSession } from "../support/helpers.js";
import { connectMcp, errorCodeOf, MCP_URL, type ClientKind, type McpClient } from "../support/mcp-clients.js";
import { expectOk, mintRole, walOf } from "../support/support.js";

/** A tool text's budget (about 1,000 tokens). */
const TEXT_BUDGET = 4_000;

/** A tool result as a test reads it: its one short text and its structuredContent. */
interface ToolAnswer {
  text: string;
  body: any;
}

function textOf(result: any): string {
  expect(result.content).toEqual([{ type: "text", text: expect.any(String) }]);
  const text = result.content[0].text as string;
  expect(text.length).toBeGreaterThan(0);
  expect(text.length).toBeLessThanOrEqual(TEXT_BUDGET);
  return text;
}

/** Calls a tool that must succeed. */
async function ok(client: McpClient, name: string, args: Record<string, unknown> = {}): Promise<ToolAnswer> {
  const result = await client.callTool({ name, arguments: args });
  expect(result.isError, `${name} (${client.kind}): ${JSON.stringify(result.content)}`).not.toBe(true);
  return { text: textOf(result), body: result.structuredContent };
}

/** Calls a tool that must be refused with `code`. */
async function refused(client: McpClient, name: string, args: Record<string, unknown>, code: string): Promise<ToolAnswer> {
  const result = await client.callTool({ name, arguments: args });
  expect(errorCodeOf(result), `${name} (${client.kind}): ${JSON.stringify(result.structuredContent)}`).toBe(code);
  const text = textOf(result);
  expect(text.startsWith(`Error ${code}: `)).toBe(true);
  return { text, body: result.structuredContent };
}

/** A write's text says how many WAL events it wrote, as its structuredContent lists them. */
function expectWroteEvents(answer: ToolAnswer): void {
  const ids = answer.body.event_ids as string[];
  expect(ids.length).toBeGreaterThan(0);
  expect(answer.text).toContain(`Wrote ${ids.length} WAL event(s) up to wal_seq ${answer.body.wal_seq}`);
}

/** What the orchestrator hands a worker agent: the dispatch answer's token and MCP URL. */
interface Handoff {
  token: string;
  mcp_url: string;
  run_id: string;
  agent_id: string;
}

async function dispatchWorker(orch: McpClient, taskId: string, agentId: string, stepId: string): Promise<Handoff> {
  const answer = await ok(orch, "agent.dispatch_worker", { task_id: taskId, agent_id: agentId, allowed_step_ids: [stepId] });
  expect(answer.body).toMatchObject({ run_id: expect.any(String), token: expect.any(String), agent_id: agentId, mcp_url: MCP_URL });
  expect(answer.text).toContain(`Worker run ${answer.body.run_id} started for agent ${agentId}`);
  expect(answer.text).toContain(MCP_URL);
  expectWroteEvents(answer);
  return answer.body as Handoff;
}

/** How a worker run takes and ends its one step. */
interface WorkerPlan {
  kind: ClientKind;
  claim: "next" | "query";
  outcome: "completed" | "failed";
  /** Runs while the step is held and running, before its outcome. */
  whileHeld?: (worker: McpClient, stepId: string) => Promise<void>;
}

/**
 * A worker agent: connects with the handed-off token, claims its step, sets it running, reports progress,
 * ends it (completed with a result and an artifact, or failed with a reason) and ends its run.
 */
async function runWorker(handoff: Handoff, stepId: string, plan: WorkerPlan): Promise<void> {
  expect(handoff.mcp_url).toBe(MCP_URL);
  const worker = await connectMcp(handoff.token, plan.kind);
  try {
    let claim: ToolAnswer;
    if (plan.claim === "next") {
      claim = await ok(worker, "agent.task_claim_next");
    } else {
      const ready = await ok(worker, "agent.task_query_steps");
      expect(ready.body.steps.map((s: any) => s.step_id)).toEqual([stepId]);
      expect(ready.text).toContain(`- ${stepId} [ready]`);
      claim = await ok(worker, "agent.task_claim_step", { step_id: stepId });
    }
    expect(claim.body.step).toMatchObject({ step_id: stepId, status: "claimed", claimed_by_run_id: handoff.run_id });
    expect(claim.text).toContain(`You hold step ${stepId} "Step ${stepId}"`);
    expectWroteEvents(claim);

    const running = await ok(worker, "agent.task_update_step", { step_id: stepId, status: "running" });
    expect(running.body.task.step_counts.running).toBeGreaterThanOrEqual(1);
    expectWroteEvents(running);
    const progress = await ok(worker, "agent.task_progress", { step_id: stepId, phase: "work", summary: `working on ${stepId}`, counters: { sources: 3 } });
    expectWroteEvents(progress);
    await plan.whileHeld?.(worker, stepId);

    const end =
      plan.outcome === "completed"
        ? await ok(worker, "agent.task_update_step", { step_id: stepId, status: "completed", result_summary: `${stepId} done by ${handoff.agent_id}`, artifact_ids: [`r2://report/${stepId}.md`] })
        : await ok(worker, "agent.task_update_step", { step_id: stepId, status: "failed", reason: "source unreachable", result_summary: "no sources found" });
    expectWroteEvents(end);
    expect(end.text).toContain(`Task ${end.body.task.task_id} `);

    const finished = await ok(worker, "finish_worker_run", { outcome: "finished", result: { step_id: stepId } });
    expectWroteEvents(finished);
  } finally {
    await worker.close();
  }
}

/** The step's WAL event types, in order. */
function stepEventTypes(wal: readonly WalEvent[], stepId: string): string[] {
  return wal.filter((e) => e.step_id === stepId).map((e) => e.event_type);
}

describe("a fan-out/fan-in DAG driven only through MCP", () => {
  it("Should plan, fan out to three concurrent workers, repair a failed step, fan in and complete, with texts that say what happened and answers equal to REST's", async () => {
    const s = await newSession();
    const orch = await connectMcp(s.orch, "modern");
    const approver = await connectMcp(await mintRole(s, "approver"), "legacy");
    try {
      // The orchestrator reads the writing guide, then writes the DAG it describes.
      const guide = await ok(orch, "agent.task_template");
      expect(guide.text).toBe(guide.body.content);
      expect(guide.text).toContain("# Writing a task DAG");

      const tid = "report";
      const created = await ok(orch, "agent.task_create", {
        task_id: tid,
        wal_name: tid,
        title: "Market report",
        summary: "Plan, research three angles, write",
        steps: [step("plan"), step("research-a", ["plan"]), step("research-b", ["plan"]), step("research-c", ["plan"]), step("write", ["research-a", "research-b", "research-c"])],
      });
      expect(created.body.task).toMatchObject({ task_id: tid, total_steps: 5 });
      expect(created.text).toContain(`Task ${tid} "Market report" is running; 5 steps: 4 pending, 1 ready.`);
      expectWroteEvents(created);
      const taskPath = `/v1/sessions/${s.sid}/tasks/${tid}`;

      // plan: its worker asks a person to approve the outline before completing it.
      const planner = await dispatchWorker(orch, tid, "planner", "plan");
      await runWorker(planner, "plan", {
        kind: "modern",
        claim: "next",
        outcome: "completed",
        whileHeld: async (worker, stepId) => {
          const asked = await ok(worker, "agent.request_action", { step_id: stepId, kind: "approval", prompt: "Approve the outline?" });
          expect(asked.body).toMatchObject({ action_id: expect.any(String), status: "open", expires_at: expect.any(String) });
          const actionId = asked.body.action_id as string;
          expect(asked.text).toContain(`Action ${actionId} is open until ${asked.body.expires_at}`);
          expectWroteEvents(asked);

          const inbox = await ok(approver, "session_actions");
          expect(inbox.body.actions).toEqual([expect.objectContaining({ action_id: actionId, task_id: tid, step_id: stepId, kind: "approval", status: "open", task_title: "Market report" })]);
          expect(inbox.text).toContain(`- ${actionId} [approval, open] task ${tid} step ${stepId}: Approve the outline?`);

          // The worker waits for the answer while the approver gives it.
          const waiting = ok(worker, "agent.task_action", { action_id: actionId, wait_ms: 20_000 });
          const answered = await ok(approver, "agent.respond_action", { task_id: tid, action_id: actionId, decision: "approved", comment: "Looks right" });
          expectWroteEvents(answered);
          const seen = await waiting;
          expect(seen.body.action).toMatchObject({ action_id: actionId, status: "resolved", decision: "approved", comment: "Looks right" });
          expect(seen.text).toContain(`Action ${actionId} (approval) is resolved: Approve the outline?`);
          expect(seen.text).toContain("Decision: approved");
        },
      });

      // Three workers for the middle steps; a pause holds back their claims until resumed.
      const middle = ["research-a", "research-b", "research-c"] as const;
      const handoffs = await Promise.all(middle.map((id) => dispatchWorker(orch, tid, `researcher-${id.slice(-1)}`, id)));
      const paused = await ok(orch, "agent.task_pause", { task_id: tid, reason: "budget review" });
      expect(paused.body.task.status).toBe("paused");
      expect(paused.text).toContain(`Task ${tid} "Market report" is paused`);
      const early = await connectMcp(handoffs[0]!.token, "modern");
      try {
        const walBefore = (await ok(orch, "task_wal", { task_id: tid })).body.last_wal_seq;
        const refusal = await refused(early, "agent.task_claim_next", {}, "task_not_dispatchable");
        expect(refusal.body.status).toBe(409);
        expect(refusal.text).toContain("paused");
        expect((await ok(orch, "task_wal", { task_id: tid })).body.last_wal_seq).toBe(walBefore);
      } finally {
        await early.close();
      }
      const resumed = await ok(orch, "agent.task_resume", { task_id: tid, reason: "budget approved" });
      expect(resumed.body.task.status).toBe("running");
      expectWroteEvents(resumed);

      // The three run at once; research-b's worker fails its step.
      await Promise.all([
        runWorker(handoffs[0]!, "research-a", { kind: "modern", claim: "next", outcome: "completed" }),
        runWorker(handoffs[1]!, "research-b", { kind: "legacy", claim: "query", outcome: "failed" }),
        runWorker(handoffs[2]!, "research-c", { kind: "legacy", claim: "next", outcome: "completed" }),
      ]);
      const afterFanOut = await ok(orch, "agent.task_get", { task_id: tid });
      expect(afterFanOut.text).toContain("- research-b [failed] Step research-b");
      expect(afterFanOut.text).toContain("- write [pending] Step write (after research-a, research-b, research-c)");

      // The orchestrator reopens the failed step and a new worker completes it.
      const reopened = await ok(orch, "agent.task_update", { task_id: tid, ops: [{ op: "reopen_step", step_id: "research-b", reason: "try another source" }] });
      expectWroteEvents(reopened);
      expect(reopened.body.event_ids).toHaveLength(3); // task_updated, task_step_reopened, task_step_ready
      expect(reopened.text).toContain("1 ready");
      await runWorker(await dispatchWorker(orch, tid, "researcher-b2", "research-b"), "research-b", { kind: "modern", claim: "next", outcome: "completed" });

      // Fan in: write, then the orchestrator completes the task.
      await runWorker(await dispatchWorker(orch, tid, "writer", "write"), "write", { kind: "legacy", claim: "next", outcome: "completed" });
      const done = await ok(orch, "agent.task_complete", { task_id: tid, reason: "report written" });
      expect(done.body.task).toMatchObject({ status: "completed", active_runs: 0 });
      expect(done.text).toContain(`Task ${tid} "Market report" is completed; 5 steps: 5 completed.`);
      expectWroteEvents(done);

      // Reads through MCP answer what REST answers for the same read.
      const viaMcp = await ok(orch, "agent.task_get", { task_id: tid });
      expect(viaMcp.body).toEqual(expectOk(await call("GET", taskPath, s.orch)));
      expect(viaMcp.text).toContain(`Task ${tid} "Market report" is completed.`);
      const stepsViaMcp = await ok(orch, "agent.task_query_steps", { task_id: tid, include_terminal_steps: true, limit: 10 });
      expect(stepsViaMcp.body).toEqual(expectOk(await call("GET", `${taskPath}/steps?include_terminal_steps=true&limit=10`, s.orch)));
      const walViaMcp = await ok(orch, "task_wal", { task_id: tid });
      const wal = await walOf(taskPath, s.orch);
      expect(walViaMcp.body).toEqual({ events: JSON.parse(JSON.stringify(wal)), last_wal_seq: wal.length });
      // A tool result is held whole: the WAL comes to MCP in pages, and limit "all" is refused.
      expect((await ok(orch, "task_wal", { task_id: tid, after_seq: 2, limit: 3 })).body.events).toEqual(JSON.parse(JSON.stringify(wal.slice(2, 5))));
      expect((await refused(orch, "task_wal", { task_id: tid, limit: "all" }, "validation_error")).body.error.details.issues[0].path).toBe("limit");

      for (const id of ["plan", ...middle, "write"]) {
        expect(viaMcp.body.steps.find((x: any) => x.step_id === id)).toMatchObject({ status: "completed", artifact_ids: [`r2://report/${id}.md`], claimed_by_run_id: null });
      }
      expect(viaMcp.body.steps.find((x: any) => x.step_id === "research-b")).toMatchObject({ result_summary: "research-b done by researcher-b2", attempt_ids: [expect.any(String), expect.any(String)] });
      expect(viaMcp.body.runs).toHaveLength(6);
      for (const run of viaMcp.body.runs) expect(run.status).toBe("finished");

      // The reopened step's history, in the WAL's order: ready, a failed attempt, reopened, a completed one.
      expect(stepEventTypes(wal, "research-b")).toEqual([
        "task_step_ready",
        "task_step_claimed",
        "task_step_started",
        "task_progress",
        "task_step_failed",
        "task_step_reopened",
        "task_step_ready",
        "task_step_claimed",
        "task_step_started",
        "task_progress",
        "task_step_completed",
      ]);
      expect(stepEventTypes(wal, "plan")).toEqual([
        "task_step_ready",
        "task_step_claimed",
        "task_step_started",
        "task_progress",
        "action_requested",
        "action_resolved",
        "task_step_completed",
      ]);
      const types = wal.map((e) => e.event_type);
      expect(types.indexOf("task_paused")).toBeLessThan(types.indexOf("task_resumed"));
      expect(types.lastIndexOf("task_step_claimed")).toBeGreaterThan(types.indexOf("task_resumed"));
      expect(types.at(-1)).toBe("task_completed");
    } finally {
      await orch.close();
      await approver.close();
    }
  });
});

/** A task with enough steps that its summary runs past a small token budget. */
async function summarizedTask(s: TestSession, taskId: string): Promise<string> {
  const steps = [step("plan"), ...Array.from({ length: 30 }, (_, i) => step(`part-${i}`, ["plan"], { summary: `Research part ${i} of the market and cite five sources for it` }))];
  return newTask(s, taskId, steps);
}

describe("MCP prompts and resources", () => {
  for (const kind of ["modern", "legacy"] as const) {
    it(`Should serve the writing guide and each task's summary as prompts and resources, scoped to the caller (${kind} client)`, async () => {
      const s = await newSession();
      const mine = await summarizedTask(s, "mine");
      const other = await summarizedTask(s, "other");
      const worker = expectOk(await call("POST", `${mine}/workers`, s.orch, { agent_id: "w1" }), 201);
      const orch = await connectMcp(s.orch, kind);
      const wk = await connectMcp(worker.token, kind);
      try {
        const prompts = (await orch.listPrompts()).prompts.map((p) => p.name);
        expect(prompts).toEqual(expect.arrayContaining(["agent.task_template", "agent.task_context"]));

        const guide = await orch.getPrompt({ name: "agent.task_template" });
        const restGuide = expectOk(await call("GET", "/v1/task-template", s.orch));
        expect(guide.messages).toEqual([{ role: "user", content: { type: "text", text: restGuide.content } }]);

        const summary = expectOk(await call("GET", `${mine}/summary`, s.orch)).text as string;
        const context = await orch.getPrompt({ name: "agent.task_context", arguments: { task_id: "mine" } });
        expect(context.messages).toEqual([{ role: "user", content: { type: "text", text: summary } }]);
        const small = expectOk(await call("GET", `${mine}/summary?token_budget=100`, s.orch)).text as string;
        expect(small.length).toBeLessThan(summary.length);
        const smallContext = await orch.getPrompt({ name: "agent.task_context", arguments: { task_id: "mine", token_budget: "100" } });
        expect(smallContext.messages[0].content.text).toBe(small);

        const templates = (await orch.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
        expect(templates).toContain("agent-task://tasks/{task_id}/summary");
        const orchResources = (await orch.listResources()).resources.map((r) => r.uri).sort();
        expect(orchResources).toEqual(["agent-task://tasks/mine/summary", "agent-task://tasks/other/summary"]);
        const workerResources = (await wk.listResources()).resources.map((r) => r.uri);
        expect(workerResources).toEqual(["agent-task://tasks/mine/summary"]);

        const read = await orch.readResource({ uri: "agent-task://tasks/other/summary" });
        const otherSummary = expectOk(await call("GET", `${other}/summary`, s.orch)).text as string;
        expect(read.contents).toEqual([{ uri: "agent-task://tasks/other/summary", mimeType: "text/markdown", text: otherSummary }]);
        const own = await wk.readResource({ uri: "agent-task://tasks/mine/summary" });
        expect(own.contents[0].text).toBe(expectOk(await call("GET", `${mine}/summary`, worker.token)).text);

        // A worker's token reaches only its own task.
        await expect(wk.readResource({ uri: "agent-task://tasks/other/summary" })).rejects.toThrow(/permission_denied/);
        await expect(wk.getPrompt({ name: "agent.task_context", arguments: { task_id: "other" } })).rejects.toThrow(/permission_denied/);
      } finally {
        await orch.close();
        await wk.close();
      }
    });
  }
});

describe("a large DAG through MCP", () => {
  it("Should keep agent.task_get's text within budget for 1,500 steps and page agent.task_query_steps with limit and offset", async () => {
    const s = await newSession();
    const total = 1_500;
    const taskPath = await newTask(
      s,
      "big",
      Array.from({ length: total }, (_, i) => step(`s${String(i).padStart(4, "0")}`)),
    );
    const orch = await connectMcp(s.orch, "modern");
    try {
      const got = await ok(orch, "agent.task_get", { task_id: "big" });
      expect(got.body).toEqual(expectOk(await call("GET", taskPath, s.orch)));
      const cursor = got.body.page?.next_cursor as string;
      expect(cursor).toEqual(expect.any(String));
      expect(got.body.steps.length).toBeLessThan(total);
      expect(got.text).toMatch(/more not shown; read the next page with cursor /);
      expect(got.text).toContain(cursor);
      expect(got.text).toContain(`Steps (${got.body.steps.length} on this page):`);

      const seen: string[] = [];
      let offset: number | null = 0;
      let pages = 0;
      while (offset !== null) {
        const page: ToolAnswer = await ok(orch, "agent.task_query_steps", { task_id: "big", limit: 400, offset });
        pages += 1;
        expect(page.body.total).toBe(total);
        seen.push(...page.body.steps.map((x: any) => x.step_id));
        const next = page.body.next_offset as number | null;
        if (next === null) {
          expect(page.text).not.toContain("Next page");
        } else {
          expect(next).toBe(offset + 400);
          expect(page.text).toContain(`${page.body.steps.length} of ${total} step(s). Next page: offset ${next}.`);
          expect(page.text).toContain("more not shown; page with limit and offset.");
        }
        offset = next;
      }
      expect(pages).toBe(4);
      expect(seen).toEqual(Array.from({ length: total }, (_, i) => `s${String(i).padStart(4, "0")}`));
    } finally {
      await orch.close();
    }
  });
});
