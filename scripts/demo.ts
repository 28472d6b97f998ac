/**
 * @module The live demo: an orchestrator and its workers drive a realistic task DAG through the client SDK
 * while the task's event stream prints what happens. One worker run per ready step (the default way to dispatch); one
 * step's first attempt fails and its retry policy retries it; one worker dies holding its step, whose lease
 * expires and comes back; the fact-check step is delegated to a child task, which the runtime creates and holds
 * the step for while the orchestrator runs the child with the SDK's `orchestrate`, until the child's result settles
 * the step; the last step asks a person for approval, which the demo's approver gives. A webhook on this machine
 * receives the session's task.completed events, each verified with the SDK's verifyWebhook as it arrives.
 *
 *   npm run demo -- --url http://127.0.0.1:8787   against a running server (npm start runs this for you)
 *   npm run demo -- --quick                        starts its own server, runs a short demo, stops, exits 0
 */
import { isRuntimeApiError, orchestrate, type OrchestrateResult, RuntimeClient, type WorkerClient } from "../src/client/index.js";
import type { RuntimeEvent, TaskView } from "../src/client/index.js";
import { parseCli } from "./bench/harness/cli.js";
import { defaultAdminToken, type DevServer, sleep, startDevServer, stopDevServer } from "./dev-server.js";
import { startDemoWebhook } from "./demo-webhook.js";

const USAGE = "usage: npm run demo -- [--url http://127.0.0.1:8787] [--quick] [--admin-token TOKEN]";

/** The demo's options. */
type DemoOptions = { url: string | null; quick: boolean; adminToken: string | null };

const STEPS = [
  { step_id: "plan", title: "Plan the report", summary: "List the questions each section answers", depends_on_step_ids: [] },
  { step_id: "research-pricing", title: "Research pricing", summary: "Five sourced facts on pricing", depends_on_step_ids: ["plan"] },
  { step_id: "research-competitors", title: "Research competitors", summary: "Five sourced facts on competitors", depends_on_step_ids: ["plan"] },
  { step_id: "research-customers", title: "Research customers", summary: "Five sourced facts on customers", depends_on_step_ids: ["plan"] },
  { step_id: "explore-trends", title: "Look for outliers", summary: "Optional exploration", depends_on_step_ids: ["plan"], required: false },
  {
    step_id: "fact-check",
    title: "Fact-check the research",
    summary: "A child task checks the research's facts",
    depends_on_step_ids: ["research-pricing", "research-competitors", "research-customers"],
    // The runtime runs this step as a child task in the same session; the orchestrator plans and runs the child like any task.
    delegate: {
      kind: "task" as const,
      task: {
        title: "Fact-check the research",
        summary: "Check each fact against its source, then write the verdict",
        steps: [
          { step_id: "check-sources", title: "Check the sources", summary: "Every cited source exists and says what is quoted", depends_on_step_ids: [] },
          { step_id: "check-figures", title: "Cross-check the figures", summary: "Prices and shares agree across sources", depends_on_step_ids: [] },
          { step_id: "verdict", title: "Write the verdict", summary: "Which facts hold, which are dropped", depends_on_step_ids: ["check-sources", "check-figures"] },
        ],
      },
    },
  },
  { step_id: "synthesis", title: "Write the synthesis", summary: "Two pages citing the checked research", depends_on_step_ids: ["fact-check"] },
  { step_id: "publish", title: "Publish the report", summary: "Deploy it once a person approves", depends_on_step_ids: ["synthesis"] },
];
/** The step whose first attempt fails: its retry policy has the runtime retry it after 0.5 s. */
const FLAKY_STEP = "research-competitors";
/** The retry policy of FLAKY_STEP: up to 3 attempts, 0.5 s then 1 s then at most 2 s apart. */
const FLAKY_RETRY = { max_attempts: 3, initial_interval_ms: 500, backoff_coefficient: 2, max_interval_ms: 2_000 };
/** The step whose worker asks a person before it goes on. */
const APPROVAL_STEP = "publish";
/** The step the first worker claims and then dies holding. */
const DOOMED_STEP = "plan";
/** The step a child task does: the runtime holds it, no worker of the demo claims it. */
const DELEGATED_STEP = "fact-check";

const tty = process.stdout.isTTY === true;
const paint = (code: number, text: string) => (tty ? `\u001b[${code}m${text}\u001b[0m` : text);
const dim = (t: string) => paint(2, t);
const green = (t: string) => paint(32, t);
const red = (t: string) => paint(31, t);
const yellow = (t: string) => paint(33, t);
const bold = (t: string) => paint(1, t);
const cyan = (t: string) => paint(36, t);

/** Progress bars of the workers at work, redrawn under the event log on a terminal. */
class Board {
  private readonly bars = new Map<string, { step: string; percent: number; note: string }>();
  private drawn = 0;

  set(worker: string, step: string, percent: number, note = ""): void {
    this.bars.set(worker, { step, percent, note });
    this.draw();
  }

  remove(worker: string): void {
    this.bars.delete(worker);
    this.draw();
  }

  /** Prints a line above the bars. */
  log(line: string): void {
    this.clear();
    console.log(line);
    this.draw();
  }

  private clear(): void {
    if (!tty || this.drawn === 0) return;
    process.stdout.write(`\u001b[${this.drawn}A\u001b[0J`);
    this.drawn = 0;
  }

  private draw(): void {
    if (!tty) return;
    this.clear();
    for (const [worker, { step, percent, note }] of this.bars) {
      const filled = Math.round(percent / 5);
      process.stdout.write(`  ${worker.padEnd(18)} ${step.padEnd(22)} ${"█".repeat(filled)}${dim("░".repeat(20 - filled))} ${String(percent).padStart(3)}% ${dim(note)}\n`);
    }
    this.drawn = this.bars.size;
  }
}

function describe(e: RuntimeEvent): string {
  const subject = e.stepId === undefined ? "task" : e.stepId;
  const who = e.runId === undefined ? "" : dim(` run …${e.runId.slice(-6)}`);
  const reason = e.statusReason === undefined ? "" : dim(` (${e.statusReason})`);
  const color = e.type.endsWith("failed") || e.type === "task.lost" ? red : e.type.endsWith("completed") ? green : e.type === "task.retrying" || e.type.startsWith("action.") ? yellow : (t: string) => t;
  return `${dim(`#${String(e.sequence).padStart(4)}`)} ${color(e.type.padEnd(24))} ${subject}${who}${reason}`;
}

/** What a delegation event of the parent's stream says, in words: the child taken up, its progress, the step settled. */
function delegationNote(e: RuntimeEvent): string | undefined {
  const childId = e.refs?.childTaskId;
  if (e.type === "task.delegated" && e.stepId !== undefined && typeof childId === "string") {
    return cyan(`  ⇢ ${e.stepId} is delegated to child task ${childId}: the runtime holds the step while the child works`);
  }
  if (e.type !== "task.dependency.updated" || e.stepId === undefined) return undefined;
  const child = e.nativeStatus === undefined ? "" : `, child task ${e.nativeStatus}`;
  const how = e.payload.deliveryMechanism === undefined ? "" : `, the child reports by ${String(e.payload.deliveryMechanism)}`;
  const reason = e.statusReason === undefined ? "" : ` (${e.statusReason})`;
  const what = e.status === "active" ? "the child task exists" : e.status === "completed" ? "settled: the child's result completes the step" : (e.status ?? "updated");
  return cyan(`  ⇄ ${e.stepId}'s delegation: ${what}${child}${how}${reason}`);
}

async function main(): Promise<void> {
  const opts: DemoOptions = parseCli(USAGE, { url: null as string | null, quick: false, adminToken: null as string | null });
  let server: DevServer | undefined;
  let base = opts.url;
  if (base === null) {
    console.log("starting a local server (wrangler dev)…");
    server = await startDevServer({ workDir: "bench/tmp/demo" });
    base = server.base;
  }
  const stop = async () => {
    if (server !== undefined) await stopDevServer(server);
  };
  process.on("SIGINT", () => void stop().then(() => process.exit(130)));
  try {
    const status = await runDemo(base, opts);
    if (status !== "completed") process.exitCode = 1;
  } finally {
    await stop();
  }
}

/** Runs the demo against `base`; returns the task's final status. */
async function runDemo(base: string, opts: DemoOptions): Promise<string> {
  const board = new Board();
  const admin = new RuntimeClient({ baseUrl: base, token: opts.adminToken ?? defaultAdminToken() });
  const session = await admin.createSession({ orchestrator_agent_id: "demo-orchestrator" });
  const orch = admin.withToken(session.orchestrator.token);
  // The person in the loop: a token that reads the session and answers its actions, nothing else.
  const approver = admin.withToken((await orch.mintApproverToken(session.session_id, { agent_id: "demo-reviewer" })).token);
  // Links for people to the web dashboard: the token rides in the fragment, which the browser never sends.
  const taskId = `market-report-${Date.now().toString(36)}`;
  // The observer's link opens the demo's task (its live DAG); the approver's the session, with the inbox.
  const dashboard = {
    observer: dashboardLink(base, (await orch.mintToken(session.session_id, { role: "observer", agent_id: "dashboard-viewer" })).token, `/tasks/${taskId}`),
    approver: dashboardLink(base, (await orch.mintToken(session.session_id, { role: "approver", agent_id: "dashboard-reviewer" })).token),
  };
  const task = { sessionId: session.session_id, taskId };
  const leaseMs = opts.quick ? 1_500 : 4_000;
  const workMs = opts.quick ? 400 : 2_500;
  await orch.createTask(session.session_id, {
    task_id: taskId,
    wal_name: taskId,
    title: "Q3 market report",
    summary: "Fan-out research, an optional exploration, a fan-in synthesis",
    steps: STEPS.map((step) => (step.step_id === FLAKY_STEP ? { ...step, retry_policy: FLAKY_RETRY } : step)),
    step_lease_timeout_ms: leaseMs,
  });
  const taskUrl = `${base}/v1/sessions/${session.session_id}/tasks/${taskId}`;
  console.log(bold(`\nTask ${taskId}: ${STEPS.length} steps, leases of ${leaseMs / 1000} s`));
  console.log(dim(`  plan → research ×3 (+ optional explore-trends) → ${DELEGATED_STEP} (a child task) → synthesis → publish; the worker on ${DOOMED_STEP} dies;`));
  console.log(dim(`  ${FLAKY_STEP} fails once and its retry policy retries it; ${APPROVAL_STEP} waits for a person's approval`));
  console.log(`  Watch it live: ${cyan(dashboard.observer)}`);
  // A signed webhook of the session's task.completed events, received and verified on this machine.
  const webhook = await startDemoWebhook(orch, session.session_id, (line) => board.log(line));
  console.log("");

  const attemptsOf = new Map<string, number>();
  /** The child tasks the orchestrator ran, by the parent step they do. */
  const children = new Map<string, { childId: string; run: Promise<OrchestrateResult | undefined> }>();
  const reopened = new Set<string>();
  const workers: Promise<void>[] = [];
  let doomedUsed = false;

  /** The default dispatch: one worker run per ready step, scoped to it with allowed_step_ids. */
  const dispatchFor = (stepId: string) => {
    if (stepId === "explore-trends") return; // optional: left for the task's completion to cancel
    if (stepId === DELEGATED_STEP) return; // the runtime holds it for its child task
    const attempt = (attemptsOf.get(stepId) ?? 0) + 1;
    attemptsOf.set(stepId, attempt);
    workers.push(
      (async () => {
        const worker = await orch.dispatchWorker(task, { allowed_step_ids: [stepId], agent_id: `worker-${stepId.split("-").pop()}-${attempt}` });
        const name = worker.agentId ?? worker.runId;
        if (stepId === APPROVAL_STEP) return await publishAfterApproval(worker, name);
        const claim = await worker.claimStep(stepId).catch((e: unknown) => {
          if (isRuntimeApiError(e)) return undefined; // someone else took it, or the task moved on
          throw e;
        });
        if (claim === undefined) return;
        if (stepId === DOOMED_STEP && !doomedUsed) {
          doomedUsed = true;
          board.log(red(`  ✗ ${name} claimed ${stepId} and crashed: its lease runs out in ${leaseMs / 1000} s`));
          return; // never reports again: the lease expires and the step comes back
        }
        const ticks = 5;
        for (let i = 1; i <= ticks; i++) {
          await sleep(workMs / ticks);
          board.set(name, stepId, Math.round((i / ticks) * 100), i === ticks ? "writing result" : "working");
          await worker.appendProgress(stepId, { phase: "working", counters: { done: i, of: ticks } });
          if (stepId === FLAKY_STEP && attempt === 1 && i === 3) {
            board.remove(name);
            await worker.updateStep(stepId, { status: "failed", reason: "source site timed out" });
            await worker.finish({ outcome: "finished" });
            return;
          }
        }
        board.remove(name);
        await worker.updateStep(stepId, { status: "completed", result_summary: `${stepId}: done`, artifact_ids: [`${stepId}.md`] });
        await worker.finish({ outcome: "finished" });
      })(),
    );
  };

  /** The approval step's worker loop: claims the step, asks "Deploy?" with ctx.ask, publishes once a person approved. */
  const publishAfterApproval = async (worker: WorkerClient, name: string) => {
    await worker.run(async (step, ctx) => {
        const stepId = step.step_id;
        board.set(name, stepId, 10, "waiting for approval");
        const answer = await ctx.ask({ kind: "approval", prompt: "Deploy?" });
        board.log(answer.decision === "approved" ? green(`  ✓ ${name} got "${answer.decision}" (${answer.comment ?? "no comment"}): it goes on`) : red(`  ✗ ${name} got "${answer.decision}"`));
        if (answer.decision !== "approved") throw new Error(`deploy ${answer.decision}`);
        for (let percent = 40; percent <= 100; percent += 30) {
          await sleep(workMs / 3);
          board.set(name, stepId, percent, "deploying");
        }
        board.remove(name);
        return { result_summary: "report published", artifact_ids: ["report.pdf"] };
    });
  };

  /** The demo's approver: sees the question in the session's inbox, takes a visible moment, approves. */
  const approve = async (actionId: string) => {
    await sleep(opts.quick ? 500 : 2_000);
    const inbox = await approver.sessionActions(session.session_id);
    const item = inbox.actions.find((a) => a.action_id === actionId);
    board.log(yellow(`  ☐ the reviewer reads "${item?.prompt ?? "Deploy?"}" in the inbox (${inbox.total} open) and approves`));
    await approver.respondAction(task, actionId, { decision: "approved", comment: "ship it" });
  };

  /**
   * The orchestrator runs a child task like any task (the SDK's orchestrate: a worker per ready step, completion once
   * completeable); its completion reports to the parent, whose step then settles with the child's result.
   */
  const runChild = (stepId: string, childId: string) => {
    if (children.has(stepId)) return;
    const child = { sessionId: session.session_id, taskId: childId };
    const run = orchestrate(orch, child, {
      onEvent: (e) => board.log(`${dim("  child │")} ${describe(e)}`),
      pollMs: 500,
      handler: async (step, ctx) => {
        const name = ctx.worker.agentId ?? ctx.worker.runId;
        const ticks = 4;
        for (let i = 1; i <= ticks; i++) {
          await sleep(workMs / ticks);
          board.set(name, `${step.step_id} (child)`, Math.round((i / ticks) * 100), "checking");
          await ctx.progress({ phase: "checking", counters: { done: i, of: ticks } });
        }
        board.remove(name);
        return step.step_id === "verdict" ? { result_summary: "14 of 15 facts hold; 1 dropped", artifact_ids: ["fact-check.md"] } : { result_summary: `${step.step_id}: done` };
      },
    }).then(
      (result) => {
        board.log(result.status === "completed" ? green(`  ✓ child task ${childId} is completed: it reports to ${stepId}`) : red(`  ✗ child task ${childId} ended ${result.status}`));
        return result;
      },
      (e: unknown) => {
        board.log(red(`  ✗ orchestrating child task ${childId} failed: ${e instanceof Error ? e.message : String(e)}`));
        return undefined;
      },
    );
    children.set(stepId, { childId, run });
    workers.push(run.then(() => undefined));
  };

  let completing = false;
  let finalStatus = "unknown";
  for await (const event of orch.subscribe(task)) {
    board.log(describe(event));
    const note = delegationNote(event);
    if (note !== undefined) board.log(note);
    if (event.type === "task.delegated" && event.stepId !== undefined && typeof event.refs?.childTaskId === "string") runChild(event.stepId, event.refs.childTaskId);
    if (event.type === "task.queued" && event.stepId !== undefined) dispatchFor(event.stepId);
    if (event.type === "action.required" && event.actionId !== undefined) {
      board.log(yellow(`  ⏸ ${event.stepId ?? "the task"} waits for a person: "${String(event.payload.prompt ?? "")}" (its lease holds meanwhile)`));
      workers.push(approve(event.actionId));
    }
    // A step with a retry policy is retried by the runtime; the orchestrator reopens others once.
    if (event.type === "task.attempt.failed" && event.stepId !== undefined && event.stepId !== FLAKY_STEP && event.nativeStatus === "failed" && !reopened.has(event.stepId)) {
      reopened.add(event.stepId);
      board.log(yellow(`  ↻ the orchestrator reopens ${event.stepId} once`));
      void orch.updateTask(task, [{ op: "reopen_step", step_id: event.stepId, reason: "retry once" }]);
    }
    if (event.type === "task.attempt.completed" && !completing) {
      const view: TaskView = await orch.getTask(task);
      if (view.diagnostics.completeable) {
        completing = true;
        board.log(green("  ✓ every required step is completed: the orchestrator completes the task"));
        await orch.completeTask(task, { reason: "report written" });
      }
    }
    if (event.type === "task.completed" || event.type === "task.failed" || event.type === "task.cancelled") finalStatus = event.nativeStatus ?? event.type.slice(5);
  }
  await Promise.all(workers);

  const view = await orch.getTask(task);
  console.log(bold(`\nTask ${taskId} is ${view.task.status} (wal_seq ${view.wal_seq})`));
  for (const step of view.steps) {
    const attempts = step.attempt_ids.map((id) => view.attempts.find((a) => a.attempt_id === id)?.status ?? "?");
    console.log(`  ${step.step_id.padEnd(22)} ${step.status.padEnd(10)} attempts: ${attempts.join(", ") || "none"}`);
  }
  for (const d of view.delegations ?? []) {
    if (d.child_task_id === null) continue;
    const childView = await deliveredChild(orch, { sessionId: session.session_id, taskId: d.child_task_id });
    const step = view.steps.find((x) => x.step_id === d.step_id);
    const childSteps = childView.steps.filter((x) => x.status === "completed").length;
    console.log(`  ${d.step_id} was done by child task ${d.child_task_id}: ${childView.task.status}, ${childSteps}/${childView.steps.length} steps completed, its result ${childView.task.delivery_state ?? "not owed"} to the parent`);
    console.log(`    the step's result: "${(step?.result_summary ?? "").replaceAll("\n", " · ")}", artifacts: ${step?.artifact_ids.join(", ") || "none"}`);
  }
  await webhook?.show(taskId);
  await scheduleDemo(orch, session.session_id, opts.quick);
  await webhook?.close();
  console.log(`\nWhere to look (token: the orchestrator token below):`);
  console.log(`  the DAG        GET ${taskUrl}`);
  console.log(`  the WAL        GET ${taskUrl}/wal`);
  for (const { childId } of children.values()) console.log(`  child task     GET ${base}/v1/sessions/${session.session_id}/tasks/${childId}`);
  console.log(`  live events    GET ${taskUrl}/events`);
  console.log(`  API reference  ${base}/docs`);
  console.log(`  MCP clients    ${base}/mcp (header Authorization: Bearer <token>)`);
  console.log(`  A2A clients    ${base}/.well-known/agent-card.json (the card), JSON-RPC at ${base}/a2a with a token of role a2a_client,`);
  console.log(`                 minted by POST ${base}/v1/sessions/${session.session_id}/tokens {"role":"a2a_client"} (npm run demo:a2a sends one a task)`);
  console.log(dim(`  orchestrator token: ${session.orchestrator.token}`));
  if (opts.url === null) {
    // The demo's own server stops with it: its links would lead nowhere.
    console.log(dim("\nThe demo's server stops now; `npm start` keeps one serving and prints links to the dashboard."));
  } else {
    console.log(bold(`\nOpen the dashboard (the token is in the link's #fragment, kept in the tab, never sent in a request's URL):`));
    console.log(`  ${bold("observer")}  reads the session live           ${cyan(dashboard.observer)}`);
    console.log(`  ${bold("approver")}  also answers the open actions    ${cyan(dashboard.approver)}`);
  }
  return finalStatus === "unknown" ? view.task.status : finalStatus;
}

/**
 * A durable schedule: a digest every 2 seconds, overlap `skip`. Its first occurrence's task is worked slowly, so the
 * occurrences that fall meanwhile are skipped; once the schedule sees that task end, the next occurrence starts a new
 * task. Then the schedule is deleted (the running occurrence's task is left alone).
 */
async function scheduleDemo(orch: RuntimeClient, sessionId: string, quick: boolean): Promise<void> {
  const scheduleId = `digest-${Date.now().toString(36)}`;
  console.log(bold(`\nSchedule ${scheduleId}: a digest task every 2 s, overlap skip (an occurrence waits for nobody)`));
  await orch.createSchedule(sessionId, {
    schedule_id: scheduleId,
    cron: "*/2 * * * * *",
    overlap: "skip",
    task: { title: "Inbox digest", summary: "Summarise what arrived", steps: [{ step_id: "summarize", title: "Summarize", summary: "", depends_on_step_ids: [] }] },
  });
  const worked = new Set<string>();
  const working: Promise<void>[] = [];
  const until = Date.now() + (quick ? 30_000 : 45_000);
  let shown = "";
  for (;;) {
    const schedule = await orch.getSchedule(sessionId, scheduleId);
    const runs = [...schedule.recent_runs].reverse();
    const line = runs.map((r) => `${r.scheduled_at.slice(11, 19)} ${r.outcome}`).join(", ");
    if (line !== shown) {
      console.log(dim(`  runs: ${line}`));
      shown = line;
    }
    // Work each new occurrence's task: the first slowly (the occurrences meanwhile are skipped), later ones at once.
    for (const run of runs) {
      if (worked.has(run.task_id) || run.outcome !== "running") continue;
      worked.add(run.task_id);
      working.push(workDigest(orch, { sessionId, taskId: run.task_id }, worked.size === 1 ? 4_000 : 0));
    }
    const started = runs.filter((r) => r.outcome !== "skipped" && r.outcome !== "pending").length;
    const skipped = runs.filter((r) => r.outcome === "skipped").length;
    if ((started >= 2 && skipped >= 1) || Date.now() > until) {
      console.log(`  ${started} occurrences started a task, ${schedule.skipped} skipped by the overlap policy; next run ${schedule.next_run_at ?? "none"}`);
      break;
    }
    await sleep(500);
  }
  await orch.deleteSchedule(sessionId, scheduleId);
  await Promise.all(working);
  console.log(dim(`  schedule deleted (GET /v1/sessions/${sessionId}/schedules lists the session's schedules)`));
}

/** One worker run takes the digest's step, holds it `holdMs`, completes it; the orchestrator completes the task. */
async function workDigest(orch: RuntimeClient, task: { sessionId: string; taskId: string }, holdMs: number): Promise<void> {
  const worker = await orch.dispatchWorker(task, { agent_id: "digest-worker" });
  await worker.run(async () => {
    await sleep(holdMs);
    return { result_summary: "digest written" };
  });
  await orch.completeTask(task, { reason: "digest sent" });
}

/** A ready link to the dashboard for one token: `<base>/#token=<token>`, opening `route` (e.g. `/tasks/<id>`) when given. */
function dashboardLink(base: string, token: string, route?: string): string {
  return `${base.replace(/\/+$/, "")}/#token=${encodeURIComponent(token)}${route === undefined ? "" : `&to=${route}`}`;
}

/** The child task once its result reached its parent (delivery is recorded just after the parent accepts it), or as it is after 5 s. */
async function deliveredChild(client: RuntimeClient, child: { sessionId: string; taskId: string }): Promise<TaskView> {
  const until = Date.now() + 5_000;
  for (;;) {
    const view = await client.getTask(child);
    if (view.task.delivery_state !== "pending" || Date.now() > until) return view;
    await sleep(100);
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? (e.stack ?? e.message) : e);
  process.exit(1);
});
