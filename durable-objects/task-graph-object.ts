/**
 * @module TaskGraphObject: one task DAG, its WAL, leases and idempotency records. A thin shell around the
 * pure core, single writer: decide → append every event in one transaction → apply → notify, in that order.
 */
import { DurableObject } from "cloudflare:workers";
import { monotonicFactory } from "ulid";
import {
  type Actor,
  apply,
  type Command,
  type DagState,
  type DecisionValue,
  promptSummary,
  type PromptSummary,
  emptyState,
  isTerminalTask,
  nextDeadline,
  querySteps,
  replay,
  type RuntimeError,
  runtimeError,
  type StepPage,
  type StepQuery,
  stepSnapshot,
  systemActor,
  decide,
  taskSummary,
  type TaskSummary,
  taskGetAnswer,
  taskGetPage,
  type TaskGetRequest,
  LARGE_PAGE_ITEMS,
  pageItemCount,
  type WalEvent,
} from "../src/core/index.js";
import { type Env, type RuntimeConfig, readConfig } from "../src/env.js";
import { type IndexEntry, indexEntryOf } from "./index-entry.js";
import { endFrame, runtimeFrames, type TaskCursor } from "./sse-frames.js";
import { LargeReads } from "./large-reads.js";
import { SseHub, subscribersFull } from "./sse-hub.js";
import { appendEvents, execRows, loadEvents, MAX_BOUND_PARAMS, migrate, multiRowSql, placeholders, readWal, readWalTail, sqlPerCount } from "./wal-store.js";

/** An RPC answer: a value, or a domain error (never a thrown exception for expected outcomes). */
export type RpcResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: RuntimeError };

/** An Idempotency-Key and the hash of the request it came with. */
export interface Idempotency {
  readonly key: string;
  readonly hash: string;
}

/** What every write answers with (003 "Tool Return Shape"), plus what the command produced. */
export interface WriteAnswer {
  readonly task: TaskSummary;
  readonly event_ids: string[];
  readonly wal_seq: number;
  readonly [extra: string]: unknown;
}

/** How long an idempotency record is kept. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** How long count-only index changes are gathered before one push. */
const INDEX_PUSH_DEBOUNCE_MS = 200;
/** How soon a failed index push is retried (doubling up to a minute). */
const INDEX_RETRY_MS = 2_000;
/** WAL events read per page while an event stream catches up on history. */
const STREAM_PAGE = 100;

const ok = <T>(value: T): RpcResult<T> => ({ ok: true, value });
const err = <T>(error: RuntimeError): RpcResult<T> => ({ ok: false, error });

/** One task DAG (named `<session_id>/<task_id>`). */
export class TaskGraphObject extends DurableObject<Env> {
  private state: DagState = emptyState();
  /** Set when the WAL could not be replayed: every call answers storage_error, never a half-built DAG. */
  private broken: RuntimeError | null = null;
  protected readonly config: RuntimeConfig;
  private alarmAt: number | null = null;
  /** The wal_seq and task status the session index last acknowledged (unknown after a restart: push once). */
  private pushedSeq = 0;
  private pushedStatus: string | null = null;
  private pushTimer: ReturnType<typeof setTimeout> | null = null;
  private pushInFlight = false;
  private pushAgain = false;
  private indexRetryAt: number | null = null;
  private indexRetryDelay = INDEX_RETRY_MS;
  private writesSincePurge = 0;
  /** ULIDs that sort in creation order even within one millisecond. */
  private readonly ulid = monotonicFactory();
  /** Live SSE subscribers of GET .../events; fed by `transact` after each commit. */
  private readonly hub: SseHub;
  /** Large GET answers being streamed out (bounded by TASK_MAX_LARGE_READS). */
  private readonly largeReads: LargeReads;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.config = readConfig(env);
    this.hub = new SseHub(this.config.sse);
    this.largeReads = new LargeReads(this.config.maxLargeReads);
    void ctx.blockConcurrencyWhile(async () => {
      try {
        migrate(this.sql, (work) => ctx.storage.transactionSync(work));
        this.state = replay(loadEvents(this.sql));
        this.alarmAt = await ctx.storage.getAlarm();
      } catch (e) {
        this.state = emptyState();
        this.broken = runtimeError("storage_error", "the task's WAL could not be replayed; nothing was changed", { cause: e instanceof Error ? e.message : String(e) });
      }
    });
  }

  /** Which task this object holds (null before its task is created, or when its WAL is broken). */
  taskIdentity(): { sessionId: string; taskId: string } | null {
    const task = this.state.task;
    return task === null || this.broken !== null ? null : { sessionId: task.session_id, taskId: task.task_id };
  }

  private get sql(): SqlStorage {
    return this.ctx.storage.sql;
  }

  private decideContext(actor: Actor, now: number) {
    return { actor, now, newId: () => this.ulid(now), limits: this.config.limits };
  }

  /**
   * The commit path for one unit of work (a command, with the lease reconciliation before it and any
   * claim-next after it; or a whole batch). Synchronous from the first decision to the write, so no other
   * call interleaves: each decision is taken against memory and applied at once so the next one sees it;
   * then every event and idempotency answer is written in one transaction. If that write fails, memory is
   * rebuilt from the WAL, so it never holds what storage does not.
   */
  private transact<T>(work: (unit: UnitOfWork) => T): RpcResult<T> {
    const unit = new UnitOfWork();
    const value = work(unit);
    if (unit.events.length === 0 && unit.answers.length === 0) return ok(value);
    try {
      this.ctx.storage.transactionSync(() => {
        appendEvents(this.sql, unit.events);
        execRows(this.sql, unit.answers, 4, insertIdempotencySql, (row) => [row.key, row.hash, row.answer, row.at]);
      });
    } catch (e) {
      this.state = replay(loadEvents(this.sql));
      return err(runtimeError("storage_error", "the WAL append failed; nothing was changed", { cause: e instanceof Error ? e.message : String(e) }));
    }
    this.publish(unit.events);
    return ok(value);
  }

  /**
   * Step 4 of the commit path: the committed events, as SSE frames encoded once, to every live subscriber;
   * after a terminal event, the `end` frame and close. Still synchronous with the commit, so a subscriber's
   * switch from history to live (also synchronous) never falls between an append and its publication.
   */
  private publish(events: readonly WalEvent[]): void {
    if (this.hub.liveCount === 0 || events.length === 0) return;
    let frames = "";
    for (const e of events) frames += runtimeFrames(e);
    this.hub.publish(frames);
    const task = this.state.task;
    if (task !== null && isTerminalTask(task)) this.hub.endAll(endFrame(task.status, this.state.last_wal_seq));
  }

  /** Decides one command and applies its events to memory at once; the unit writes them. */
  decideAndApply(unit: UnitOfWork, actor: Actor, command: Command | Record<string, unknown>, now: number): RpcResult<{ events: WalEvent[]; value: DecisionValue }> {
    const decision = decide(this.state, command, this.decideContext(actor, now));
    if (!decision.ok) return err(decision.error);
    for (const event of decision.events) apply(this.state, event);
    unit.events.push(...decision.events);
    return ok({ events: decision.events, value: decision.value });
  }

  /** 003: expired leases are reconciled before queries, reads and claims (and by the alarm). */
  private reconcileInto(unit: UnitOfWork, now: number): void {
    if (this.state.task === null) return;
    this.decideAndApply(unit, systemActor(this.state.task.session_id), { type: "reconcile_leases" }, now);
  }

  /** Reconciles leases in a unit of its own; true when anything expired. */
  private reconcile(now: number): boolean {
    const result = this.transact((unit) => {
      this.reconcileInto(unit, now);
      return unit.events.length > 0;
    });
    return result.ok && result.value;
  }

  private findIdempotent(idem: Idempotency | null, now: number): RpcResult<WriteAnswer> | null {
    if (idem === null) return null;
    return this.replayOf(idem, this.idempotencyRows([idem.key]).get(idem.key), now);
  }

  /** The stored answers of these keys (one query per 100 keys: a batch asks once, not per command). */
  private idempotencyRows(keys: readonly string[]): Map<string, IdempotencyRow> {
    const rows = new Map<string, IdempotencyRow>();
    for (let start = 0; start < keys.length; start += MAX_BOUND_PARAMS) {
      const chunk = keys.slice(start, start + MAX_BOUND_PARAMS);
      for (const row of this.sql.exec<IdempotencyRow & { key: string }>(selectIdempotencySql(chunk.length), ...chunk)) rows.set(row.key, row);
    }
    return rows;
  }

  /** The earlier answer for a key, its conflict when the request differs, or null when it is new or expired. */
  private replayOf(idem: Idempotency, row: IdempotencyRow | undefined, now: number): RpcResult<WriteAnswer> | null {
    if (row === undefined || now - row.created_at_ms > IDEMPOTENCY_TTL_MS) return null;
    if (row.body_hash !== idem.hash) return err(runtimeError("idempotency_conflict", "this Idempotency-Key was used with a different request", { key: idem.key }));
    return ok(JSON.parse(row.answer) as WriteAnswer);
  }

  /** Drops idempotency records past their 24 hours, now and then. */
  private purgeIdempotency(now: number): void {
    if (++this.writesSincePurge < 500) return;
    this.writesSincePurge = 0;
    this.sql.exec("DELETE FROM idempotency WHERE created_at_ms < ?", now - IDEMPOTENCY_TTL_MS);
  }

  private answer(events: readonly WalEvent[], extra: Record<string, unknown> = {}): WriteAnswer {
    return { task: taskSummary(this.state), event_ids: events.map((e) => e.event_id), wal_seq: this.state.last_wal_seq, ...extra };
  }

  /** After a commit: the alarm covers the earliest deadline, and the session index hears of the change. */
  private async afterCommit(): Promise<void> {
    this.requestIndexPush();
    await this.scheduleAlarm();
  }

  /**
   * Keeps the object's one alarm at or before the earliest deadline (lease expiry, run deadline, index retry).
   * On the write path it only ever moves earlier: claims and renewals move the earliest deadline later on
   * almost every write, and an alarm that fires early expires nothing and re-arms exactly (`exact`).
   * Re-setting it on every write cost about a quarter of the steps/s under load.
   */
  private async scheduleAlarm(exact = false): Promise<void> {
    const candidates = [nextDeadline(this.state), this.indexRetryAt].filter((t): t is number => t !== null);
    const target = candidates.length === 0 ? null : Math.min(...candidates);
    if (target === this.alarmAt) return;
    if (!exact && (target === null || (this.alarmAt !== null && this.alarmAt <= target))) return;
    this.alarmAt = target;
    if (target === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(target);
  }

  /**
   * Asks for an index push. A change of task status (created, running, blocked, terminal) is pushed at once;
   * count-only changes are gathered for INDEX_PUSH_DEBOUNCE_MS so a busy task costs its session one push
   * per window, not one per step.
   */
  private requestIndexPush(): void {
    const task = this.state.task;
    if (task === null || this.state.last_wal_seq <= this.pushedSeq) return;
    if (task.status !== this.pushedStatus) {
      if (this.pushTimer !== null) clearTimeout(this.pushTimer);
      this.pushTimer = null;
      this.pushIndex();
    } else if (this.pushTimer === null) {
      this.pushTimer = setTimeout(() => {
        this.pushTimer = null;
        this.pushIndex();
      }, INDEX_PUSH_DEBOUNCE_MS);
    }
  }

  /** Pushes the index entry, one push in flight at a time; changes during a push are sent right after it. */
  private pushIndex(): void {
    const task = this.state.task;
    if (task === null || this.state.last_wal_seq <= this.pushedSeq) return;
    if (this.pushInFlight) {
      this.pushAgain = true;
      return;
    }
    this.pushInFlight = true;
    this.pushAgain = false;
    const entry = indexEntryOf(this.state);
    const session = this.env.SESSIONS.get(this.env.SESSIONS.idFromName(task.session_id));
    session
      .upsertTask(entry)
      .then(() => {
        this.pushedSeq = Math.max(this.pushedSeq, entry.wal_seq);
        this.pushedStatus = entry.native_status;
        this.indexRetryAt = null;
        this.indexRetryDelay = INDEX_RETRY_MS;
      })
      .catch(() => {
        // Retried by the alarm; until then the session shows the entry as stale once its deadline passes.
        this.indexRetryAt = Date.now() + this.indexRetryDelay;
        this.indexRetryDelay = Math.min(this.indexRetryDelay * 2, 60_000);
        return this.scheduleAlarm();
      })
      .finally(() => {
        this.pushInFlight = false;
        if (this.pushAgain) this.pushIndex();
      });
  }

  private guard(): RuntimeError | null {
    return this.broken;
  }

  // ---- RPC methods -------------------------------------------------------------------------------

  /** Creates in flight, by Idempotency-Key (a create awaits the session, so a retry can arrive meanwhile). */
  private readonly creating = new Map<string, Promise<void>>();

  /**
   * agent.task_create: reserves task_id and wal_name in the session, commits task_created, confirms. A retry
   * that arrives while the first create with its Idempotency-Key is still in flight waits for it and then
   * answers as a retry does (the first answer, or idempotency_conflict), not task_id_conflict.
   */
  async createTask(actor: Actor, body: Record<string, unknown>, idem: Idempotency | null): Promise<RpcResult<WriteAnswer>> {
    const pending = idem === null ? undefined : this.creating.get(idem.key);
    if (pending !== undefined) await pending;
    const run = this.createTaskOnce(actor, body, idem);
    if (idem !== null) {
      const settled = run.then(
        () => undefined,
        () => undefined,
      );
      this.creating.set(idem.key, settled);
      void settled.then(() => {
        if (this.creating.get(idem.key) === settled) this.creating.delete(idem.key);
      });
    }
    return run;
  }

  private async createTaskOnce(actor: Actor, body: Record<string, unknown>, idem: Idempotency | null): Promise<RpcResult<WriteAnswer>> {
    if (this.broken !== null) return err(this.broken);
    const now = Date.now();
    const replayed = this.findIdempotent(idem, now);
    if (replayed !== null) return replayed;
    const taskId = String(body.task_id);
    const walName = String(body.wal_name);
    if (this.state.task !== null) return err(runtimeError("task_id_conflict", `task ${taskId} already exists in this session`, { task_id: taskId }));
    if (actor.role !== "orchestrator") return err(runtimeError("tool_not_available", "agent.task_create is available to the orchestrator only"));
    const session = this.env.SESSIONS.get(this.env.SESSIONS.idFromName(actor.session_id));
    const reserved = (await session.reserve(taskId, walName, idem)) as RpcResult<null>;
    if (!reserved.ok) return err(reserved.error);
    // Another create may have committed while we waited on the session.
    if (this.state.task !== null) return err(runtimeError("task_id_conflict", `task ${taskId} already exists in this session`, { task_id: taskId }));
    const result = this.transact((unit) => {
      const created = this.decideAndApply(unit, actor, { ...body, type: "create_task" }, Date.now());
      if (!created.ok) return created;
      const answer = this.answer(created.value.events);
      unit.remember(idem, answer, now);
      return ok(answer);
    });
    const outcome = result.ok ? result.value : result;
    if (!outcome.ok) await session.release(taskId);
    else await this.afterCommit();
    return outcome;
  }

  /** Every other write: decide and commit one command (claims, step updates, task lifecycle, runs). */
  async execute(actor: Actor, command: Record<string, unknown>, idem: Idempotency | null, opts: { claimNext?: boolean } = {}): Promise<RpcResult<WriteAnswer>> {
    const [answer] = await this.executeBatch([{ actor, command, idem, claimNext: opts.claimNext === true }]);
    return answer!;
  }

  /**
   * Group commit: commands decided in order against the live DAG, each seeing the ones before it, all
   * written in one transaction, one answer each. A rejected command writes nothing and does not undo the
   * others.
   */
  async executeBatch(items: readonly BatchItem[]): Promise<RpcResult<WriteAnswer>[]> {
    if (this.broken !== null) return items.map(() => err(this.broken!));
    if (this.state.task === null) return items.map(() => err(runtimeError("not_found", "no such task")));
    const now = Date.now();
    const keys = items.flatMap((item) => (item.idem === null ? [] : [item.idem.key]));
    const stored = keys.length === 0 ? new Map<string, IdempotencyRow>() : this.idempotencyRows(keys);
    const result = this.transact((unit) => {
      this.reconcileInto(unit, now);
      return items.map((item) => this.executeOne(unit, item, stored, now));
    });
    this.purgeIdempotency(now);
    await this.afterCommit();
    return result.ok ? result.value : items.map(() => err(result.error));
  }

  private executeOne(unit: UnitOfWork, item: BatchItem, stored: ReadonlyMap<string, IdempotencyRow>, now: number): RpcResult<WriteAnswer> {
    const replayed = (item.idem === null ? null : this.replayOf(item.idem, stored.get(item.idem.key), now)) ?? unit.findPending(item.idem);
    if (replayed !== null) return replayed;
    const result = this.decideAndApply(unit, item.actor, item.command, now);
    if (!result.ok) return result;
    const events = [...result.value.events];
    const extra = this.describeValue(result.value.value);
    if (item.claimNext && item.command.type === "update_step" && RELEASING_STATUSES.has(String(item.command.status))) {
      const next = this.decideAndApply(unit, item.actor, { type: "claim_next" }, now);
      if (next.ok) {
        events.push(...next.value.events);
        extra.next = this.describeValue(next.value.value);
      } else {
        extra.next = { error: next.error };
      }
    }
    const answer = this.answer(events, extra);
    unit.remember(item.idem, answer, now);
    return ok(answer);
  }

  private describeValue(value: DecisionValue): Record<string, unknown> {
    switch (value.kind) {
      case "claimed":
        return { step: stepSnapshot(this.state.steps.get(value.step_id)!), attempt_id: value.attempt_id };
      case "no_step_claimed":
        return { no_step_claimed: true, reason: value.reason };
      case "dispatched":
        // The worker token is minted by the route from this run record (signing is async; the commit is not).
        return { run_id: value.run_id, agent_id: value.agent_id, run: structuredClone(this.state.runs.get(value.run_id)) };
      case "none":
        return {};
    }
  }

  /**
   * agent.task_get after reconciling leases: the DAG (or the page of it the request names) with seed 001's
   * snapshot projection, as JSON encoded once here. A page of more than LARGE_PAGE_ITEMS records is streamed
   * out as its reader takes it and counts as a large read until then; past TASK_MAX_LARGE_READS such reads at
   * once, it is refused (rate_limited) before it is built, so the answers in flight stay bounded in memory.
   */
  async getTask(actor: Actor, request: TaskGetRequest = {}): Promise<RpcResult<string | ReadableStream<Uint8Array>>> {
    const ready = this.readable(actor);
    if (ready !== null) return err(ready);
    const page = taskGetPage(this.state, request);
    if ("code" in page) return err(page);
    const large = pageItemCount(page.items) > LARGE_PAGE_ITEMS;
    const full = large ? this.largeReads.full() : null;
    if (full !== null) return err(full);
    const json = JSON.stringify(taskGetAnswer(this.state, page));
    return ok(large ? this.largeReads.stream(new TextEncoder().encode(json)) : json);
  }

  /** agent.task_query_steps after reconciling leases. */
  async querySteps(actor: Actor, query: StepQuery): Promise<RpcResult<StepPage>> {
    const ready = this.readable(actor);
    if (ready !== null) return err(ready);
    const page = querySteps(this.state, actor, query);
    return "code" in page ? err(page) : ok(page);
  }

  /** The WAL after `afterSeq`, at most `limit` events, in wal_seq order. */
  async readWal(actor: Actor, afterSeq: number, limit: number): Promise<RpcResult<{ events: WalEvent[]; last_wal_seq: number }>> {
    const ready = this.readable(actor, false);
    if (ready !== null) return err(ready);
    return ok({ events: readWal(this.sql, afterSeq, limit), last_wal_seq: this.state.last_wal_seq });
  }

  /**
   * GET .../events: a stream of SSE frames, the runtime events after `cursor` and then live ones; for a
   * terminal task, the history and the `end` frame. A cursor past the end of the WAL is a validation error.
   * A ReadableStream returned over RPC (rather than a Response from `fetch`): the route keeps HTTP (auth,
   * error envelope, headers) and the object gets a typed actor and cursor, like every other call.
   */
  async streamEvents(actor: Actor, cursor: TaskCursor): Promise<RpcResult<ReadableStream<Uint8Array>>> {
    const ready = this.readable(actor);
    if (ready !== null) return err(ready);
    if (cursor.seq > this.state.last_wal_seq) {
      return err(runtimeError("validation_error", `the resume point ${cursor.seq} is after the end of this task's WAL`, { after_seq: cursor.seq, last_wal_seq: this.state.last_wal_seq }));
    }
    const full = this.hub.full();
    if (full !== null) return err(subscribersFull(full));
    return ok(this.hub.open(this.catchUpFrom(cursor)));
  }

  /** Catch-up for one subscriber: pages of the WAL after its cursor, then live (or `end` for a terminal task). */
  private catchUpFrom(cursor: TaskCursor) {
    let seq = cursor.seq;
    let skipThrough = cursor.k ?? Number.POSITIVE_INFINITY;
    return () => {
      const partial = Number.isFinite(skipThrough);
      const events = readWal(this.sql, partial ? seq - 1 : seq, STREAM_PAGE);
      let frames = "";
      for (const e of events) frames += runtimeFrames(e, e.wal_seq === seq && partial ? skipThrough : -1);
      if (events.length > 0) {
        seq = events[events.length - 1]!.wal_seq;
        skipThrough = Number.POSITIVE_INFINITY;
      }
      if (seq < this.state.last_wal_seq) return { frames, next: "more" as const };
      const task = this.state.task;
      if (task !== null && isTerminalTask(task)) return { frames: frames + endFrame(task.status, this.state.last_wal_seq), next: "close" as const };
      return { frames, next: "live" as const };
    };
  }

  /** The compact Task DAG summary for a prompt (003 "Prompt Context"), after reconciling leases. */
  async summary(actor: Actor, tokenBudget: number): Promise<RpcResult<PromptSummary>> {
    const ready = this.readable(actor);
    if (ready !== null) return err(ready);
    return ok(promptSummary(this.state, actor, readWalTail(this.sql, 20), tokenBudget));
  }

  /** The session index entry, for the session's clean-up of reservations; null when no task was created. */
  async indexEntry(): Promise<IndexEntry | null> {
    return this.state.task === null || this.broken !== null ? null : indexEntryOf(this.state);
  }

  /** Reads need a task, a caller in scope, and (003) reconciled leases first. */
  private readable(actor: Actor, reconcile = true): RuntimeError | null {
    const guard = this.guard();
    if (guard !== null) return guard;
    const task = this.state.task;
    if (task === null) return runtimeError("not_found", "no such task");
    if (actor.session_id !== task.session_id || (actor.role === "worker" && actor.task_id !== task.task_id)) {
      return runtimeError("permission_denied", "the caller is not in this task's scope");
    }
    if (reconcile && this.reconcile(Date.now())) void this.afterCommit();
    return null;
  }

  /** The single alarm: expire due leases and run deadlines, retry a failed index push, re-arm. Idempotent. */
  override async alarm(): Promise<void> {
    this.alarmAt = null;
    if (this.broken !== null) return;
    this.reconcile(Date.now());
    if (this.indexRetryAt !== null && this.indexRetryAt <= Date.now()) this.indexRetryAt = null;
    this.pushIndex();
    await this.scheduleAlarm(true);
  }
}

/** Step statuses that release the run's claim, after which `claim_next` may claim again. */
const RELEASING_STATUSES: ReadonlySet<string> = new Set(["completed", "failed", "cancelled", "blocked"]);

/** One command of a batch (or the only one of a single write). */
export interface BatchItem {
  readonly actor: Actor;
  readonly command: Record<string, unknown>;
  readonly idem: Idempotency | null;
  readonly claimNext: boolean;
}

/** A stored idempotency record. */
type IdempotencyRow = {
  body_hash: string;
  answer: string;
  created_at_ms: number;
};

const insertIdempotencySql = multiRowSql("INSERT OR REPLACE INTO idempotency (key, body_hash, answer, created_at_ms) VALUES ", 4);
const selectIdempotencySql = sqlPerCount((keys) => `SELECT key, body_hash, answer, created_at_ms FROM idempotency WHERE key IN (${placeholders(keys)})`);

/** What one unit of work writes: its events (already applied to memory) and idempotency answers. */
class UnitOfWork {
  readonly events: WalEvent[] = [];
  readonly answers: { key: string; hash: string; answer: string; at: number }[] = [];

  /** Records the answer to return for a retry with the same key and body. */
  remember(idem: Idempotency | null, answer: WriteAnswer, now: number): void {
    if (idem !== null) this.answers.push({ key: idem.key, hash: idem.hash, answer: JSON.stringify(answer), at: now });
  }

  /** A key already answered earlier in this same unit (two commands of one batch sharing a key). */
  findPending(idem: Idempotency | null): RpcResult<WriteAnswer> | null {
    const row = idem === null ? undefined : this.answers.find((a) => a.key === idem.key);
    if (row === undefined) return null;
    if (row.hash !== idem!.hash) return err(runtimeError("idempotency_conflict", "this Idempotency-Key was used with a different request", { key: row.key }));
    return ok(JSON.parse(row.answer) as WriteAnswer);
  }
}
