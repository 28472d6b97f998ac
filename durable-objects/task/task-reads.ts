/**
 * @module A task object's reads: the DAG (whole, paged, or streamed when large), step queries, WAL pages, the
 * event stream with its catch-up, the prompt summary, the task's actions (one of them long-polled) and the
 * session index entry. Each is served from the commit shell's memory (or its WAL), after the shell's guard
 * and, for every read but the WAL export, reconciled leases (no read shows a claim whose lease has lapsed).
 */
import {
  type Action,
  type Actor,
  checkRunToken,
  checkScope,
  isTerminalTask,
  LARGE_PAGE_ITEMS,
  pageItemCount,
  promptSummary,
  type PromptSummary,
  querySteps,
  type RuntimeError,
  runtimeError,
  type StepPage,
  type StepQuery,
  taskGetAnswer,
  taskGetPage,
  type TaskGetRequest,
} from "../../src/core/index.js";
import type { ActionPage, IndexEntry } from "../../src/contract/index.js";
import { DEFAULT_ACTION_PAGE_LIMIT, MAX_ACTION_PAGE_LIMIT, MAX_ACTION_WAIT_MS } from "../../src/contract/limits.js";
import { type ActionWaiters, type PollAnswer } from "./action-waiters.js";
import type { CommitShell } from "./commit-shell.js";
import { indexEntryOf } from "./index-entry.js";
import { fullAction, fullActions } from "./action-text.js";
import type { LargeReads } from "./large-reads.js";
import { err, ok, type RpcResult } from "../shared/rpc-result.js";
import { endFrame, runEndedFrame, runtimeFrames, type TaskCursor } from "../shared/sse-frames.js";
import type { CatchUp, SseHub, SubscriberHolder } from "../shared/sse-hub.js";
import { readWal, readWalTail } from "./storage/wal-store.js";

/** WAL events read per page while an event stream catches up on history. */
const STREAM_PAGE = 100;
/** WAL events read from SQL and encoded per pull of a WAL export (a few hundred KB of JSON Lines). */
export const WAL_EXPORT_PAGE = 1_000;

/** Filters and paging of GET .../tasks/{tid}/actions. */
export interface ActionQuery {
  readonly status?: "open" | "resolved";
  readonly limit?: number;
  readonly offset?: number;
}

/** The reads of one task object. */
export class TaskReads {
  constructor(
    private readonly shell: CommitShell,
    /** Live SSE subscribers (the shell publishes to them after each commit). */
    private readonly hub: SseHub,
    /** Large GET answers being streamed out (bounded by TASK_MAX_LARGE_READS). */
    private readonly largeReads: LargeReads,
    /** Long-polls on actions (the shell's publish answers them). */
    private readonly waiters: ActionWaiters,
  ) {}

  /** WAL exports started and the pages they read from SQL, for tests and diagnostics. */
  readonly walExports = { opened: 0, pages: 0 };

  /** Which task the object holds (null before its task is created, or when its WAL is broken). */
  identity(): { sessionId: string; taskId: string } | null {
    const task = this.shell.state.task;
    return this.shell.guard() !== null || task === null ? null : { sessionId: task.session_id, taskId: task.task_id };
  }

  /**
   * agent.task_get after reconciling leases: the DAG (or the page of it the request names) with its task
   * read model (`snapshot`: normalized statuses, attempts, blockers), as JSON encoded once here. A page of more than LARGE_PAGE_ITEMS records is streamed
   * out as its reader takes it and counts as a large read until then; past TASK_MAX_LARGE_READS such reads at
   * once, it is refused (rate_limited) before it is built, so the answers in flight stay bounded in memory.
   */
  getTask(actor: Actor, request: TaskGetRequest = {}, holder?: string): RpcResult<string | ReadableStream<Uint8Array>> {
    const ready = this.readable(actor);
    if (ready !== null) return err(ready);
    const state = this.shell.state;
    const paged = taskGetPage(state, request);
    if (!paged.ok) return paged;
    const items = { ...paged.value.items, actions: fullActions(this.shell.sql, state, paged.value.items.actions) };
    const page = { ...paged.value, items };
    const large = pageItemCount(page.items) > LARGE_PAGE_ITEMS;
    const full = large ? this.largeReads.full(holder) : null;
    if (full !== null) return err(full);
    const json = JSON.stringify(taskGetAnswer(state, page));
    return ok(large ? this.largeReads.stream(new TextEncoder().encode(json), holder) : json);
  }

  /** agent.task_query_steps after reconciling leases. */
  querySteps(actor: Actor, query: StepQuery): RpcResult<StepPage> {
    const ready = this.readable(actor);
    if (ready !== null) return err(ready);
    return querySteps(this.shell.state, actor, query);
  }

  /**
   * The WAL after `afterSeq`, at most `limit` events, in wal_seq order, as a stream of JSON Lines read from SQL
   * WAL_EXPORT_PAGE events at a time as the reader pulls (nothing is read ahead), so an export of any length holds
   * one page in memory. It ends at `last_wal_seq` as of this call: events committed while it is read are left to
   * the next request, so the answer is the WAL as it was when asked, like a page built at once. Encoded here
   * rather than sent as values: structured clone across the RPC gives up on deep values (about 2,500 levels) long
   * before JSON.stringify does, and a WAL written before values were bounded at the edge may hold one.
   */
  readWal(actor: Actor, afterSeq: number, limit: number): RpcResult<{ ndjson: ReadableStream<Uint8Array>; last_wal_seq: number }> {
    const ready = this.readable(actor, false);
    if (ready !== null) return err(ready);
    const last = this.shell.state.last_wal_seq;
    const stats = this.walExports;
    const encoder = new TextEncoder();
    let after = afterSeq;
    let left = limit;
    stats.opened += 1;
    const ndjson = new ReadableStream<Uint8Array>(
      {
        pull: (controller) => {
          let lines = "";
          if (left > 0 && after < last) {
            stats.pages += 1;
            for (const event of readWal(this.shell.sql, after, Math.min(left, WAL_EXPORT_PAGE))) {
              if (event.wal_seq > last) break;
              lines += `${JSON.stringify(event)}\n`;
              after = event.wal_seq;
              left -= 1;
            }
          }
          if (lines === "") return controller.close();
          controller.enqueue(encoder.encode(lines));
        },
      },
      { highWaterMark: 0 },
    );
    return ok({ ndjson, last_wal_seq: last });
  }

  /**
   * GET .../events: a stream of SSE frames, the runtime events after `cursor` and then live ones; for a
   * terminal task, the history and the `end` frame. A cursor past the end of the WAL is a validation error.
   * A ReadableStream returned over RPC (rather than a Response from `fetch`): the route keeps HTTP (auth,
   * error envelope, headers) and the object gets a typed actor and cursor, like every other call.
   */
  async streamEvents(actor: Actor, cursor: TaskCursor, holder: SubscriberHolder): Promise<RpcResult<ReadableStream<Uint8Array>>> {
    const ready = this.readable(actor);
    if (ready !== null) return err(ready);
    const last = this.shell.state.last_wal_seq;
    if (cursor.seq > last) {
      return err(runtimeError("validation_error", `the resume point ${cursor.seq} is after the end of this task's WAL`, { after_seq: cursor.seq, last_wal_seq: last }));
    }
    // Tagged with the caller's worker run, if any: the stream ends when that run does (endRunStreams).
    return this.hub.admit(this.catchUpFrom(cursor), { ...holder, runId: actor.role === "worker" ? actor.run_id : null });
  }

  /** After a commit that ended worker runs: the event streams their tokens opened end with an `end` frame saying so. */
  endRunStreams(runIds: ReadonlySet<string>): void {
    const state = this.shell.state;
    const status = state.task?.status ?? "pending";
    this.hub.end(
      (holder) => runEndedFrame(holder.runId!, status, state.last_wal_seq),
      (holder) => typeof holder.runId === "string" && runIds.has(holder.runId),
    );
  }

  /** Catch-up for one subscriber: pages of the WAL after its cursor, then live (or `end` for a terminal task). */
  private catchUpFrom(cursor: TaskCursor): CatchUp {
    let seq = cursor.seq;
    let skipThrough = cursor.k ?? Number.POSITIVE_INFINITY;
    return () => {
      const partial = Number.isFinite(skipThrough);
      const events = readWal(this.shell.sql, partial ? seq - 1 : seq, STREAM_PAGE);
      let frames = "";
      for (const e of events) frames += runtimeFrames(e, e.wal_seq === seq && partial ? skipThrough : -1);
      if (events.length > 0) {
        seq = events[events.length - 1]!.wal_seq;
        skipThrough = Number.POSITIVE_INFINITY;
      }
      const state = this.shell.state;
      if (seq < state.last_wal_seq) return { frames, next: "more" };
      const task = state.task;
      if (task !== null && isTerminalTask(task)) return { frames: frames + endFrame(task.status, state.last_wal_seq), next: "close" };
      return { frames, next: "live" };
    };
  }

  /** The compact Task DAG summary for a prompt, within a token budget, after reconciling leases. */
  summary(actor: Actor, tokenBudget: number): RpcResult<PromptSummary> {
    const ready = this.readable(actor);
    if (ready !== null) return err(ready);
    return ok(promptSummary(this.shell.state, actor, readWalTail(this.shell.sql, 20), tokenBudget));
  }

  /** GET .../tasks/{tid}/actions after reconciling leases (and expiries): the task's actions, oldest first. */
  listActions(actor: Actor, query: ActionQuery): RpcResult<ActionPage> {
    const ready = this.readable(actor);
    if (ready !== null) return err(ready);
    const limit = Math.min(Math.max(Math.trunc(query.limit ?? DEFAULT_ACTION_PAGE_LIMIT), 1), MAX_ACTION_PAGE_LIMIT);
    const offset = Math.max(Math.trunc(query.offset ?? 0), 0);
    const matching: Action[] = [];
    for (const action of this.shell.state.actions.values()) if (query.status === undefined || action.status === query.status) matching.push(action);
    const actions = fullActions(this.shell.sql, this.shell.state, matching.slice(offset, offset + limit));
    const total = matching.length;
    return ok({ actions, total, limit, offset, next_offset: offset + actions.length < total ? offset + actions.length : null });
  }

  /**
   * GET .../tasks/{tid}/actions/{action_id}?wait_ms=: the action, at once when it is resolved or `waitMs` is 0;
   * otherwise as soon as a commit resolves it, or still open when the wait ends. Past MAX_ACTION_WAITERS waits
   * at once, or past the token's share of them (`holder`: its identity), rate_limited. A wait lives only in memory; the resolution is in the WAL, so a poll lost with an
   * evicted object is simply asked again.
   */
  async getAction(actor: Actor, actionId: string, waitMs: number, holder?: string): Promise<PollAnswer> {
    const now = this.currentAction(actor, actionId);
    if (!now.ok || now.value.action.status === "resolved" || !(waitMs > 0)) return now;
    const full = this.waiters.full(holder);
    if (full !== null) return err(full);
    return this.waiters.wait(actionId, Math.min(waitMs, MAX_ACTION_WAIT_MS), () => this.currentAction(actor, actionId), holder);
  }

  /** One action as memory holds it, after reconciling (an action past its expiry is answered expired). */
  private currentAction(actor: Actor, actionId: string): PollAnswer {
    const ready = this.readable(actor);
    if (ready !== null) return err(ready);
    const action = this.shell.state.actions.get(actionId);
    if (action === undefined) return err(runtimeError("not_found", `no action ${actionId}`, { action_id: actionId }));
    return ok({ action: fullAction(this.shell.sql, this.shell.state, action) });
  }

  /** The session index entry, for the session's clean-up of reservations; null when no task was created. */
  indexEntry(): RpcResult<IndexEntry | null> {
    // A broken object cannot say whether its task exists: storage_error, never "no task" (which frees its id).
    const broken = this.shell.guard();
    if (broken !== null) return err(broken);
    return ok(this.shell.state.task === null ? null : indexEntryOf(this.shell.state));
  }

  /**
   * Reads need a task, a caller in scope, (unless `reconcile` is false) reconciled leases first, and a token that
   * still holds: a worker whose run has ended reads nothing more (checkRunToken, after reconciling, so a run past
   * its deadline is timed out by then).
   */
  private readable(actor: Actor, reconcile = true): RuntimeError | null {
    const guard = this.shell.guard();
    if (guard !== null) return guard;
    const task = this.shell.state.task;
    if (task === null) return this.shell.retention.noTask();
    const outOfScope = checkScope(task, actor);
    if (outOfScope !== null) return outOfScope;
    if (reconcile) this.shell.reconcileBeforeRead();
    return checkRunToken(this.shell.state, actor);
  }
}
