/**
 * @module TaskGraphObject: one task DAG, its WAL, leases and idempotency records. A thin shell around the
 * pure core, single writer: decide → append every event in one transaction → publish, with memory never
 * holding what storage does not (see `transact`).
 */
import { DurableObject } from "cloudflare:workers";
import { monotonicFactory } from "ulid";
import {
  type Actor,
  apply,
  authorize,
  type Command,
  type DagState,
  type DecisionValue,
  promptSummary,
  type PromptSummary,
  emptyState,
  isTerminalTask,
  nextDeadline,
  querySteps,
  releasesClaim,
  replay,
  type RuntimeError,
  runtimeError,
  type StepPage,
  type StepQuery,
  stepSnapshot,
  systemActor,
  decide,
  taskSummary,
  taskGetAnswer,
  taskGetPage,
  type TaskGetRequest,
  LARGE_PAGE_ITEMS,
  pageItemCount,
  type WalEvent,
} from "../src/core/index.js";
import type { AnyWriteAnswer as WriteAnswer, IndexEntry } from "../src/contract/index.js";
import { type Env, type RuntimeConfig, readConfig } from "../src/env.js";
import { reportIncident } from "../src/incident.js";
import { type Idempotency, type IdempotencyRow, type PendingAnswer, purgeAnswers, readAnswers, replayOf, scopeIdempotency, writeAnswers } from "./idempotency-store.js";
import { indexEntryOf } from "./index-entry.js";
import { IndexOutbox } from "./index-outbox.js";
import { err, ok, type RpcResult } from "./rpc-result.js";
import { endFrame, runtimeFrames, type TaskCursor } from "./sse-frames.js";
import { LargeReads } from "./large-reads.js";
import { SseHub, subscribersFull } from "./sse-hub.js";
import { appendEvents, type CommitStorage, loadEvents, migrate, readWal, readWalTail } from "./wal-store.js";

export type { RpcResult } from "./rpc-result.js";
export { type Idempotency, IDEMPOTENCY_TTL_MS } from "./idempotency-store.js";

/** WAL events read per page while an event stream catches up on history. */
const STREAM_PAGE = 100;
/** How soon a broken object tries again to rebuild its memory from the WAL (doubling up to a minute). */
const REBUILD_RETRY_MS = 1_000;
const REBUILD_RETRY_MAX_MS = 60_000;

/** The pure functions the commit path calls; a field, so the fault-injection tests can make one throw. */
const CORE = { decide, apply } as const;

/** One task DAG (named `<session_id>/<task_id>`). */
export class TaskGraphObject extends DurableObject<Env> {
  private state: DagState = emptyState();
  /**
   * Set when memory may differ from storage (the WAL did not replay, or a failed commit could not be undone
   * by replaying it): every call answers storage_error until the WAL replays again (see `guard`).
   */
  private broken: RuntimeError | null = null;
  private rebuildRetryAt = 0;
  private rebuildRetryMs = REBUILD_RETRY_MS;
  protected readonly config: RuntimeConfig;
  /** The storage the commit path writes through (a field: the fault-injection tests replace it). */
  private storage: CommitStorage;
  private core: typeof CORE = CORE;
  private alarmAt: number | null = null;
  private readonly index: IndexOutbox;
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
    this.storage = { sql: ctx.storage.sql, transactionSync: (work) => ctx.storage.transactionSync(work) };
    this.index = new IndexOutbox(
      this.storage.sql,
      () => this.state,
      (entry) => this.env.SESSIONS.get(this.env.SESSIONS.idFromName(this.state.task!.session_id)).upsertTask(entry),
    );
    this.largeReads = new LargeReads(this.config.maxLargeReads);
    void ctx.blockConcurrencyWhile(async () => {
      try {
        this.loadFromWal();
        this.alarmAt = await ctx.storage.getAlarm();
        // A change committed before a crash and never acknowledged by the session index is pushed now.
        this.index.recover(Date.now());
        if (this.index.dueAt !== null) await this.scheduleAlarm();
      } catch (e) {
        this.markBroken(runtimeError("storage_error", "the task's WAL could not be replayed; nothing was changed", { cause: e instanceof Error ? e.message : String(e) }));
      }
    });
  }

  /** Brings the schema up to date and replays the WAL into memory; throws when storage cannot. */
  private loadFromWal(): void {
    migrate(this.sql, (work) => this.storage.transactionSync(work));
    this.state = replay(loadEvents(this.sql));
  }

  /** Memory is not to be trusted: nothing is served from it until the WAL replays again. */
  private markBroken(error: RuntimeError): RuntimeError {
    this.state = emptyState();
    this.broken = error;
    this.rebuildRetryMs = REBUILD_RETRY_MS;
    this.rebuildRetryAt = Date.now() + this.rebuildRetryMs;
    return error;
  }

  /**
   * Null when the object may serve; while it is broken, storage_error. A broken object tries again to
   * replay its WAL now and then (1 s, doubling up to a minute), so a storage fault that passed heals
   * without waiting for a restart, which a busy object (its clients retrying) might never get.
   */
  private guard(): RuntimeError | null {
    if (this.broken === null) return null;
    const now = Date.now();
    if (now < this.rebuildRetryAt) return this.broken;
    try {
      this.loadFromWal();
      this.broken = null;
      return null;
    } catch {
      this.state = emptyState();
      this.rebuildRetryMs = Math.min(this.rebuildRetryMs * 2, REBUILD_RETRY_MAX_MS);
      this.rebuildRetryAt = now + this.rebuildRetryMs;
      return this.broken;
    }
  }

  /** Which task this object holds (null before its task is created, or when its WAL is broken). */
  taskIdentity(): { sessionId: string; taskId: string } | null {
    const task = this.state.task;
    return this.guard() !== null || task === null ? null : { sessionId: task.session_id, taskId: task.task_id };
  }

  private get sql(): CommitStorage["sql"] {
    return this.storage.sql;
  }

  private decideContext(actor: Actor, now: number) {
    return { actor, now, newId: () => this.ulid(now), limits: this.config.limits };
  }

  /**
   * The commit path for one unit of work (a command, with the lease reconciliation before it and any
   * claim-next after it; or a whole batch). Decisions are applied to memory as they are taken, so each sees
   * the ones before it; that is equivalent to DESIGN.md's decide → append → apply because nothing else can
   * observe memory in between: everything from the first decision to the end of `transactionSync` is one
   * synchronous turn (no await), so no other call interleaves, and nothing is published or answered before
   * the transaction returned. If anything fails before that point — decide or apply throws (a bug), or the
   * write throws — memory is rebuilt from the WAL in the same turn; if that rebuild fails too, the object is
   * marked broken and answers storage_error until it restarts, rather than serve a memory storage lacks.
   */
  private transact<T>(work: (unit: UnitOfWork) => T): RpcResult<T> {
    const broken = this.guard();
    if (broken !== null) return err(broken);
    const unit = new UnitOfWork();
    let value: T;
    try {
      value = work(unit);
    } catch (e) {
      return err(this.restoreFromWal(reportIncident(e, "task object: decide/apply")));
    }
    if (unit.events.length === 0 && unit.answers.length === 0) return ok(value);
    try {
      this.storage.transactionSync(() => {
        appendEvents(this.sql, unit.events);
        writeAnswers(this.sql, unit.answers);
      });
    } catch (e) {
      return err(this.restoreFromWal(runtimeError("storage_error", "the WAL append failed; nothing was changed", { cause: e instanceof Error ? e.message : String(e) })));
    }
    // The durable point. Answering and publishing from here on is safe although the write may not have
    // reached Cloudflare's replicas yet: the Durable Object output gate holds every outgoing message (the
    // RPC answer, SSE frames, the index push) until the writes before it are confirmed, and if confirmation
    // fails the object is reset and nothing held is delivered. Never move a reply or a publish above
    // `transactionSync`: the gate cannot hold back what was sent before the write was made.
    this.publish(unit.events);
    return ok(value);
  }

  /**
   * After a failed unit: memory may hold events storage lacks, so it is rebuilt from the WAL. Returns the
   * error to answer: `error` when the rebuild worked, storage_error (and a broken object) when it did not.
   */
  private restoreFromWal(error: RuntimeError): RuntimeError {
    try {
      this.state = replay(loadEvents(this.sql));
      return error;
    } catch (e) {
      const cause = e instanceof Error ? e.message : String(e);
      console.error(JSON.stringify({ level: "error", where: "task object: rebuild after failed write", error: cause }));
      return this.markBroken(runtimeError("storage_error", "the task's memory could not be rebuilt from its WAL after a failed write; nothing was changed; retry", { cause }));
    }
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
    const decision = this.core.decide(this.state, command, this.decideContext(actor, now));
    if (!decision.ok) return err(decision.error);
    for (const event of decision.events) this.core.apply(this.state, event);
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

  /** Drops idempotency records past their 24 hours, now and then. */
  private purgeIdempotency(now: number): void {
    if (++this.writesSincePurge < 500) return;
    this.writesSincePurge = 0;
    try {
      purgeAnswers(this.sql, now);
    } catch {
      // Expired records only cost space; the next purge tries again.
    }
  }

  private answer(events: readonly WalEvent[], extra: Record<string, unknown> = {}): WriteAnswer {
    return { task: taskSummary(this.state), event_ids: events.map((e) => e.event_id), wal_seq: this.state.last_wal_seq, ...extra };
  }

  /** After a commit: the session index's push is due (or under way), and the alarm covers every deadline. */
  private async afterCommit(): Promise<void> {
    this.index.noteCommit(Date.now());
    await this.scheduleAlarm();
  }

  /**
   * Keeps the object's one alarm at or before the earliest deadline (lease expiry, run deadline, index push).
   * On the write path it only ever moves earlier: claims and renewals move the earliest deadline later on
   * almost every write, and an alarm that fires early expires nothing and re-arms exactly (`exact`).
   * Re-setting it on every write cost about a quarter of the steps/s under load.
   */
  private async scheduleAlarm(exact = false): Promise<void> {
    const candidates = [nextDeadline(this.state), this.index.dueAt].filter((t): t is number => t !== null);
    const target = candidates.length === 0 ? null : Math.min(...candidates);
    if (target === this.alarmAt) return;
    if (!exact && (target === null || (this.alarmAt !== null && this.alarmAt <= target))) return;
    this.alarmAt = target;
    if (target === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(target);
  }

  // ---- RPC methods -------------------------------------------------------------------------------

  /** Creates in flight, by Idempotency-Key (a create awaits the session, so a retry can arrive meanwhile). */
  private readonly creating = new Map<string, Promise<void>>();

  /**
   * agent.task_create: reserves task_id and wal_name in the session, commits task_created, confirms. A retry
   * that arrives while the first create with its Idempotency-Key is still in flight waits for it and then
   * answers as a retry does (the first answer, or idempotency_conflict), not task_id_conflict.
   */
  async createTask(actor: Actor, body: Record<string, unknown>, clientIdem: Idempotency | null): Promise<RpcResult<WriteAnswer>> {
    // Authorized before anything may be replayed; the key is the caller's own.
    const denied = authorize(null, actor, "create_task");
    if (denied !== null) return err(denied);
    const idem = scopeIdempotency(actor, clientIdem);
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
    const broken = this.guard();
    if (broken !== null) return err(broken);
    const now = Date.now();
    const replayed = idem === null ? null : replayOf<WriteAnswer>(idem, readAnswers(this.sql, [idem.key]).get(idem.key), now);
    if (replayed !== null) return replayed;
    const taskId = String(body.task_id);
    const walName = String(body.wal_name);
    if (this.state.task !== null) return err(runtimeError("task_id_conflict", `task ${taskId} already exists in this session`, { task_id: taskId }));
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
  async executeBatch(clientItems: readonly BatchItem[]): Promise<RpcResult<WriteAnswer>[]> {
    const broken = this.guard();
    if (broken !== null) return clientItems.map(() => err(broken));
    if (this.state.task === null) return clientItems.map(() => err(runtimeError("not_found", "no such task")));
    const now = Date.now();
    const items = clientItems.map((item) => ({ ...item, idem: scopeIdempotency(item.actor, item.idem) }));
    const keys = items.flatMap((item) => (item.idem === null ? [] : [item.idem.key]));
    let stored: Map<string, IdempotencyRow>;
    try {
      stored = keys.length === 0 ? new Map() : readAnswers(this.sql, keys);
    } catch (e) {
      const error = runtimeError("storage_error", "the idempotency records could not be read; nothing was changed", { cause: e instanceof Error ? e.message : String(e) });
      return items.map(() => err(error));
    }
    const result = this.transact((unit) => {
      this.reconcileInto(unit, now);
      return items.map((item) => this.executeOne(unit, item, stored, now));
    });
    this.purgeIdempotency(now);
    await this.afterCommit();
    return result.ok ? result.value : items.map(() => err(result.error));
  }

  private executeOne(unit: UnitOfWork, item: BatchItem, stored: ReadonlyMap<string, IdempotencyRow>, now: number): RpcResult<WriteAnswer> {
    // Authorized before any replay: a stored answer (a worker token, a claimed step) goes only to a caller
    // who may send this command, and only to the caller whose scoped key it is.
    const denied = authorize(this.state.task, item.actor, item.command.type);
    if (denied !== null) return err(denied);
    const replayed = (item.idem === null ? null : replayOf<WriteAnswer>(item.idem, stored.get(item.idem.key), now)) ?? unit.findPending(item.idem);
    if (replayed !== null) return replayed;
    const result = this.decideAndApply(unit, item.actor, item.command, now);
    if (!result.ok) return result;
    const events = [...result.value.events];
    const extra = this.describeValue(result.value.value);
    if (item.claimNext && item.command.type === "update_step" && releasesClaim(item.command.status)) {
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
    const paged = taskGetPage(this.state, request);
    if (!paged.ok) return paged;
    const page = paged.value;
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
    return querySteps(this.state, actor, query);
  }

  /**
   * The WAL after `afterSeq`, at most `limit` events, in wal_seq order, as JSON Lines. Encoded here rather than
   * sent as values: structured clone across the RPC gives up on deep values (about 2,500 levels) long before
   * JSON.stringify does, and a WAL written before values were bounded at the edge may hold one.
   */
  async readWal(actor: Actor, afterSeq: number, limit: number): Promise<RpcResult<{ ndjson: string; last_wal_seq: number }>> {
    const ready = this.readable(actor, false);
    if (ready !== null) return err(ready);
    let ndjson = "";
    for (const event of readWal(this.sql, afterSeq, limit)) ndjson += `${JSON.stringify(event)}\n`;
    return ok({ ndjson, last_wal_seq: this.state.last_wal_seq });
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
    return this.guard() !== null || this.state.task === null ? null : indexEntryOf(this.state);
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

  /** The single alarm: expire due leases and run deadlines, push a due index change, re-arm. Idempotent. */
  override async alarm(): Promise<void> {
    this.alarmAt = null;
    if (this.guard() !== null) return;
    if (this.reconcile(Date.now())) this.index.noteCommit(Date.now());
    await this.index.flush(Date.now());
    await this.scheduleAlarm(true);
  }
}

/** One command of a batch (or the only one of a single write). */
export interface BatchItem {
  readonly actor: Actor;
  readonly command: Record<string, unknown>;
  readonly idem: Idempotency | null;
  readonly claimNext: boolean;
}

/** What one unit of work writes: its events (already applied to memory) and idempotency answers. */
class UnitOfWork {
  readonly events: WalEvent[] = [];
  readonly answers: PendingAnswer[] = [];

  /** Records the answer to return for a retry with the same key and body. */
  remember(idem: Idempotency | null, answer: WriteAnswer, now: number): void {
    if (idem !== null) this.answers.push({ key: idem.key, hash: idem.hash, answer: JSON.stringify(answer), at: now });
  }

  /** A key already answered earlier in this same unit (two commands of one batch sharing a key). */
  findPending(idem: Idempotency | null): RpcResult<WriteAnswer> | null {
    const row = idem === null ? undefined : this.answers.find((a) => a.key === idem.key);
    if (row === undefined) return null;
    return replayOf<WriteAnswer>(idem!, { body_hash: row.hash, answer: row.answer, created_at_ms: row.at }, row.at);
  }
}
