/**
 * @module The delegation scenarios (`npm run bench:delegation`): how long a parent's delegated step takes to settle
 * once its child task is complete, against a plain step's event seen the same way, and a fan-out of many delegated
 * steps (children created, then settled). Every settle is observed on the parent's SSE event stream (its
 * `task.attempt.completed` runtime event for the step), never by polling, so no figure is bound to a poll interval.
 */
import { performance } from "node:perf_hooks";
import type { Client, Session } from "../harness/http-client.js";
import { errorCount } from "../harness/meter.js";
import { errorText } from "../harness/report.js";
import { latencyOf, type Latency } from "../harness/rounds.js";
import { deadlineAfter } from "../harness/waits.js";

/** One runtime event as a task's stream carries it, with the time this process read its frame. */
export interface SeenEvent {
  readonly type: string;
  readonly stepId?: string;
  readonly status?: string;
  readonly refs?: Record<string, unknown>;
  /** performance.now() when its frame was parsed. */
  readonly at: number;
}

/** A task's SSE event stream read with fetch; `waitFor` resolves at the first event (already seen, or to come) that matches. */
export class TaskStream {
  readonly events: SeenEvent[] = [];
  private readonly controller = new AbortController();
  private readonly waiters: { match: (e: SeenEvent) => boolean; resolve: (e: SeenEvent) => void }[] = [];
  private failure: string | null = null;
  readonly done: Promise<void>;

  constructor(url: string, token: string) {
    this.done = this.read(url, token).catch((e: unknown) => {
      if (!this.controller.signal.aborted) this.failure = errorText(e);
    });
  }

  /** The first event matching `match`, or a thrown error after `timeoutMs`. */
  async waitFor(match: (e: SeenEvent) => boolean, timeoutMs: number, what: string): Promise<SeenEvent> {
    const seen = this.events.find(match);
    if (seen !== undefined) return seen;
    const deadline = deadlineAfter(timeoutMs);
    const found = new Promise<SeenEvent>((resolve) => this.waiters.push({ match, resolve }));
    const outcome = await Promise.race([found, deadline.promise]);
    deadline.cancel();
    if (outcome === "timeout") throw new Error(`no ${what} within ${timeoutMs} ms on the stream${this.failure === null ? "" : ` (stream failed: ${this.failure})`}`);
    return outcome;
  }

  /** Events of `type` (for step `stepId` when given) seen so far. */
  count(type: string, stepIds?: ReadonlySet<string>): number {
    return this.events.filter((e) => e.type === type && (stepIds === undefined || (e.stepId !== undefined && stepIds.has(e.stepId)))).length;
  }

  close(): void {
    this.controller.abort();
  }

  private async read(url: string, token: string): Promise<void> {
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: this.controller.signal });
    if (res.status !== 200 || res.body === null) throw new Error(`GET events answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of res.body) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block.split("\n").find((l) => l.startsWith("data: "));
        if (block.startsWith(":") || data === undefined || /^event: end$/m.test(block)) continue;
        const e = JSON.parse(data.slice(6)) as { type: string; stepId?: string; status?: string; refs?: Record<string, unknown> };
        const seen: SeenEvent = { type: e.type, stepId: e.stepId, status: e.status, refs: e.refs, at: performance.now() };
        this.events.push(seen);
        for (let i = this.waiters.length - 1; i >= 0; i--) {
          const w = this.waiters[i]!;
          if (w.match(seen)) {
            this.waiters.splice(i, 1);
            w.resolve(seen);
          }
        }
      }
    }
  }
}

/** The step's runtime event that says it settled completed. */
const settled = (stepId: string) => (e: SeenEvent) => e.type === "task.attempt.completed" && e.stepId === stepId;
/** The step's delegation event that says its child task exists. */
const childActive = (stepId: string) => (e: SeenEvent) => e.type === "task.dependency.updated" && e.stepId === stepId && e.status === "active";

/** A delegated step whose child task has `childSteps` one-step-each roots. */
export function delegatedStep(stepId: string, childSteps = 1) {
  const steps = Array.from({ length: childSteps }, (_, i) => ({ step_id: `c${i}`, title: `Child step ${i}`, summary: "", depends_on_step_ids: [] as string[] }));
  return { step_id: stepId, title: `Delegated ${stepId}`, summary: "", depends_on_step_ids: [] as string[], delegate: { kind: "task" as const, task: { title: `Child of ${stepId}`, steps } } };
}

/** Runs a child task's one step with one worker, then completes the child; returns the complete call's send and answer times. */
async function completeChild(client: Client, s: Session, childPath: string): Promise<{ sent: number; answered: number }> {
  const w = (await client.must(201, "POST", `${childPath}/workers`, s.orch, { max_steps: 1 })).body;
  const claim = await client.must(200, "POST", `${childPath}/steps/claim-next`, w.token, {});
  const stepId = claim.body.step?.step_id;
  if (typeof stepId !== "string") throw new Error(`claim-next on ${childPath} took nothing: ${JSON.stringify(claim.body).slice(0, 200)}`);
  await client.must(200, "POST", `${childPath}/steps/${stepId}/status`, w.token, { status: "completed", result_summary: `did ${stepId}` });
  const sent = performance.now();
  await client.must(200, "POST", `${childPath}/complete`, s.orch, { reason: "child done" });
  return { sent, answered: performance.now() };
}

/** Settle latency: per sample, a delegated step's settle behind its child's complete, and a plain step's event behind its completing call. */
export interface SettleResult {
  samples: number;
  /** Child's complete answered → the parent's task.attempt.completed for the step read off its stream. */
  settle_after_answer_ms: Latency;
  /** The same from the complete call's send. */
  settle_after_send_ms: Latency;
  /** Plain step: the worker's completing call answered → its task.attempt.completed read off the stream. */
  plain_after_answer_ms: Latency;
  plain_after_send_ms: Latency;
  /** The causing call's own time (send → answer read): the child's complete, the plain step's status call. */
  complete_call_ms: Latency;
  plain_call_ms: Latency;
  /**
   * Settle ÷ plain from the causing call's send, percentile by percentile. From the answer, both hover around zero
   * (an event often arrives before the answer that caused it), so their quotient says nothing.
   */
  ratio: { p50: number; p95: number; p99: number };
  /** Create answered → the child exists (the delegation's `active` event on the parent's stream, opened after the create: an upper bound). */
  child_created_ms: Latency;
  errors: number;
  first_error?: string;
}

/** `samples` delegated parents and as many plain tasks, interleaved (order swapped every other pair), one at a time. */
export async function settleScenario(client: Client, s: Session, samples: number, label: string, timeoutMs: number): Promise<SettleResult> {
  const settle: number[] = [];
  const settleSend: number[] = [];
  const plain: number[] = [];
  const plainSend: number[] = [];
  const created: number[] = [];
  const completeCall: number[] = [];
  const plainCall: number[] = [];
  const errors = errorCount();
  const delegatedSample = async (i: number) => {
    const tid = `${label}-d${i}`;
    const path = `/v1/sessions/${s.sid}/tasks/${tid}`;
    await client.task(s, tid, { title: "Delegating parent", steps: [delegatedStep("sub")] });
    const createdAt = performance.now();
    // Opened once the task exists (a stream of no task is refused); it replays the task's events from its start.
    const stream = new TaskStream(`${client.base}${path}/events`, s.orch);
    try {
      const active = await stream.waitFor(childActive("sub"), timeoutMs, "child created");
      created.push(active.at - createdAt);
      const delegated = await stream.waitFor((e) => e.type === "task.delegated" && e.stepId === "sub", timeoutMs, "task.delegated");
      const childId = delegated.refs?.childTaskId;
      if (typeof childId !== "string") throw new Error("task.delegated carried no childTaskId");
      const { sent, answered } = await completeChild(client, s, `/v1/sessions/${s.sid}/tasks/${childId}`);
      const done = await stream.waitFor(settled("sub"), timeoutMs, "task.attempt.completed of the delegated step");
      settle.push(done.at - answered);
      settleSend.push(done.at - sent);
      completeCall.push(answered - sent);
    } finally {
      stream.close();
      await stream.done;
    }
  };
  const plainSample = async (i: number) => {
    const tid = `${label}-p${i}`;
    const path = `/v1/sessions/${s.sid}/tasks/${tid}`;
    await client.task(s, tid, { title: "Plain task", steps: [{ step_id: "p", title: "Plain step", summary: "", depends_on_step_ids: [] }] });
    const stream = new TaskStream(`${client.base}${path}/events`, s.orch);
    try {
      const w = (await client.must(201, "POST", `${path}/workers`, s.orch, { max_steps: 1 })).body;
      await client.must(200, "POST", `${path}/steps/claim-next`, w.token, {});
      // The stream is connected and caught up before the timed call: its claim is on it.
      await stream.waitFor((e) => e.type === "task.attempt.started" && e.stepId === "p", timeoutMs, "task.attempt.started of the plain step");
      const sent = performance.now();
      await client.must(200, "POST", `${path}/steps/p/status`, w.token, { status: "completed", result_summary: "done" });
      const answered = performance.now();
      const done = await stream.waitFor(settled("p"), timeoutMs, "task.attempt.completed of the plain step");
      plain.push(done.at - answered);
      plainSend.push(done.at - sent);
      plainCall.push(answered - sent);
    } finally {
      stream.close();
      await stream.done;
    }
  };
  for (let i = 0; i < samples; i++) {
    const pair = i % 2 === 0 ? [delegatedSample, plainSample] : [plainSample, delegatedSample];
    for (const sample of pair) {
      try {
        await sample(i);
      } catch (e) {
        errors.note(errorText(e));
      }
    }
  }
  const settleL = latencyOf(settleSend);
  const plainL = latencyOf(plainSend);
  const r = (a: number, b: number) => Math.round((a / b) * 100) / 100;
  return {
    samples,
    settle_after_answer_ms: latencyOf(settle),
    settle_after_send_ms: settleL,
    plain_after_answer_ms: latencyOf(plain),
    plain_after_send_ms: plainL,
    complete_call_ms: latencyOf(completeCall),
    plain_call_ms: latencyOf(plainCall),
    ratio: { p50: r(settleL.p50_ms, plainL.p50_ms), p95: r(settleL.p95_ms, plainL.p95_ms), p99: r(settleL.p99_ms, plainL.p99_ms) },
    child_created_ms: latencyOf(created),
    ...errors.fields(),
  };
}

/** The fan-out: one parent with `width` delegated root steps. */
export interface FanOutResult {
  width: number;
  pool: number;
  /** Create answered → the last of the children's `active` delegation events on the parent's stream. */
  all_children_created_ms: number;
  children_created_per_s: number;
  /** Each child's `active` event behind the create's answer. */
  child_created_ms: Latency;
  /** The parent's delegations read once all were seen active: how many were active. */
  delegations_active: number;
  /** The session's task list once every child was seen active: how many of the children it lists (its index may lag). */
  children_listed: number;
  /** Driver start → the last child's complete answered (the driver's own pace). */
  driver_ms: number;
  /** Driver start → the last parent step's task.attempt.completed. */
  all_settled_ms: number;
  settled_per_s: number;
  /** The last child complete answered → all parent steps settled. */
  tail_ms: number;
  /** Per child: its complete answered → its parent step's settle event. */
  settle_after_answer_ms: Latency;
  errors: number;
  first_error?: string;
}

/** One parent with `width` delegated root steps: the time until every child exists, then, with `pool` drivers completing the children, until every step settles. */
export async function fanOutScenario(client: Client, s: Session, width: number, pool: number, label: string, timeoutMs: number): Promise<FanOutResult> {
  const tid = `${label}-fan`;
  const path = `/v1/sessions/${s.sid}/tasks/${tid}`;
  const stepIds = Array.from({ length: width }, (_, i) => `d${String(i).padStart(3, "0")}`);
  const ids = new Set(stepIds);
  const errors = errorCount();
  await client.task(s, tid, { title: "Fan-out parent", steps: stepIds.map((id) => delegatedStep(id)) });
  const createdAt = performance.now();
  const stream = new TaskStream(`${client.base}${path}/events`, s.orch);
  try {
    const actives = await Promise.all(stepIds.map((id) => stream.waitFor(childActive(id), timeoutMs, `child of ${id} created`)));
    const allCreated = Math.max(...actives.map((e) => e.at)) - createdAt;
    const view = (await client.must(200, "GET", path, s.orch)).body;
    const delegationsActive = (view.delegations as { status: string }[]).filter((d) => d.status === "active").length;
    const childOf = new Map<string, string>();
    for (const id of stepIds) {
      const d = await stream.waitFor((e) => e.type === "task.delegated" && e.stepId === id, timeoutMs, `task.delegated of ${id}`);
      childOf.set(id, String(d.refs?.childTaskId));
    }
    const listed = await childrenListed(client, s, new Set(childOf.values()));

    const answeredAt = new Map<string, number>();
    const queue = [...stepIds];
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: pool }, async () => {
        for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
          try {
            answeredAt.set(id, (await completeChild(client, s, `/v1/sessions/${s.sid}/tasks/${childOf.get(id)}`)).answered);
          } catch (e) {
            errors.note(errorText(e));
          }
        }
      }),
    );
    const driverEnd = performance.now();
    const settles = await Promise.all(stepIds.map((id) => stream.waitFor(settled(id), timeoutMs, `settle of ${id}`)));
    const lastSettle = Math.max(...settles.map((e) => e.at));
    const perChild = stepIds.flatMap((id, i) => (answeredAt.has(id) ? [settles[i]!.at - answeredAt.get(id)!] : []));
    if (stream.count("task.attempt.completed", ids) !== width) errors.note(`expected ${width} settle events, saw ${stream.count("task.attempt.completed", ids)}`);
    const allSettled = lastSettle - t0;
    return {
      width,
      pool,
      all_children_created_ms: Math.round(allCreated * 10) / 10,
      children_created_per_s: Math.round((width / (allCreated / 1000)) * 10) / 10,
      child_created_ms: latencyOf(actives.map((e) => e.at - createdAt)),
      delegations_active: delegationsActive,
      children_listed: listed,
      driver_ms: Math.round((driverEnd - t0) * 10) / 10,
      all_settled_ms: Math.round(allSettled * 10) / 10,
      settled_per_s: Math.round((width / (allSettled / 1000)) * 10) / 10,
      tail_ms: Math.round((lastSettle - driverEnd) * 10) / 10,
      settle_after_answer_ms: latencyOf(perChild),
      ...errors.fields(),
    };
  } finally {
    stream.close();
    await stream.done;
  }
}

/** How many of `childIds` the session's task list shows, every page read. */
async function childrenListed(client: Client, s: Session, childIds: ReadonlySet<string>): Promise<number> {
  let n = 0;
  let offset: number | null = 0;
  while (offset !== null) {
    const page: { tasks: { task_id: string }[]; next_offset: number | null } = (await client.must(200, "GET", `/v1/sessions/${s.sid}/tasks?limit=500&offset=${offset}`, s.orch)).body;
    n += (page.tasks as { task_id: string }[]).filter((t) => childIds.has(t.task_id)).length;
    offset = page.next_offset ?? null;
  }
  return n;
}
