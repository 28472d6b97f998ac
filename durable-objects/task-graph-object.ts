/**
 * @module TaskGraphObject: one task DAG, its WAL, leases and idempotency records. A thin shell around the
 * pure core, single writer: decide → append every event in one transaction → apply → notify, in that order.
 */
import { DurableObject } from "cloudflare:workers";
import { monotonicFactory } from "ulid";
import { mintToken } from "../src/auth/tokens.js";
import {
  type Actor,
  apply,
  type Command,
  type DagState,
  type DecisionValue,
  promptSummary,
  type PromptSummary,
  emptyState,
  nextDeadline,
  querySteps,
  replay,
  type RuntimeError,
  runtimeError,
  type StepPage,
  type StepQuery,
  systemActor,
  decide,
  taskSummary,
  type TaskSummary,
  taskView,
  type WalEvent,
} from "../src/core/index.js";
import { type Env, type RuntimeConfig, readConfig } from "../src/env.js";
import { type IndexEntry, indexEntryOf } from "./index-entry.js";
import { appendEvents, loadEvents, migrate, readWal, readWalTail } from "./wal-store.js";

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
const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** How soon a failed index push is retried (doubling up to a minute). */
const INDEX_RETRY_MS = 2_000;

const ok = <T>(value: T): RpcResult<T> => ({ ok: true, value });
const err = <T>(error: RuntimeError): RpcResult<T> => ({ ok: false, error });

/** One task DAG (named `<session_id>/<task_id>`). */
export class TaskGraphObject extends DurableObject<Env> {
  private state: DagState = emptyState();
  /** Set when the WAL could not be replayed: every call answers storage_error, never a half-built DAG. */
  private broken: RuntimeError | null = null;
  private readonly config: RuntimeConfig;
  private alarmAt: number | null = null;
  private pushedSeq = 0;
  private pushInFlight = false;
  private pushAgain = false;
  private indexRetryAt: number | null = null;
  private indexRetryDelay = INDEX_RETRY_MS;
  private writesSincePurge = 0;
  /** ULIDs that sort in creation order even within one millisecond. */
  private readonly ulid = monotonicFactory();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.config = readConfig(env);
    void ctx.blockConcurrencyWhile(async () => {
      try {
        migrate(this.sql);
        this.state = replay(loadEvents(this.sql));
        this.pushedSeq = Number(this.readMeta("index_pushed_seq") ?? "0");
        this.alarmAt = await ctx.storage.getAlarm();
      } catch (e) {
        this.state = emptyState();
        this.broken = runtimeError("storage_error", "the task's WAL could not be replayed; nothing was changed", { cause: e instanceof Error ? e.message : String(e) });
      }
    });
  }

  private get sql(): SqlStorage {
    return this.ctx.storage.sql;
  }

  private readMeta(key: string): string | undefined {
    return this.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key).toArray()[0]?.value;
  }

  private decideContext(actor: Actor, now: number) {
    return { actor, now, newId: () => this.ulid(now), limits: this.config.limits };
  }

  /**
   * The commit path. Synchronous from decide to apply, so no other call interleaves: decide against memory;
   * append all events (and the idempotency answer) in one transaction; only then apply to memory.
   */
  private commit(actor: Actor, command: Command | Record<string, unknown>, now: number): RpcResult<{ events: WalEvent[]; value: DecisionValue }> {
    const decision = decide(this.state, command, this.decideContext(actor, now));
    if (!decision.ok) return err(decision.error);
    if (decision.events.length > 0) {
      try {
        this.ctx.storage.transactionSync(() => appendEvents(this.sql, decision.events));
      } catch (e) {
        return err(runtimeError("storage_error", "the WAL append failed; nothing was changed", { cause: e instanceof Error ? e.message : String(e) }));
      }
      for (const event of decision.events) apply(this.state, event);
    }
    return ok({ events: decision.events, value: decision.value });
  }

  /** 003: expired leases are reconciled before queries, reads and claims (and by the alarm). */
  private reconcile(now: number): WalEvent[] {
    if (this.state.task === null) return [];
    const result = this.commit(systemActor(this.state.task.session_id), { type: "reconcile_leases" }, now);
    return result.ok ? result.value.events : [];
  }

  private findIdempotent(idem: Idempotency | null, now: number): RpcResult<WriteAnswer> | null {
    if (idem === null) return null;
    const row = this.sql.exec<{ body_hash: string; answer: string; created_at_ms: number }>("SELECT body_hash, answer, created_at_ms FROM idempotency WHERE key = ?", idem.key).toArray()[0];
    if (row === undefined || now - row.created_at_ms > IDEMPOTENCY_TTL_MS) return null;
    if (row.body_hash !== idem.hash) return err(runtimeError("idempotency_conflict", "this Idempotency-Key was used with a different request", { key: idem.key }));
    return ok(JSON.parse(row.answer) as WriteAnswer);
  }

  private rememberIdempotent(idem: Idempotency | null, answer: WriteAnswer, now: number): void {
    if (idem === null) return;
    this.sql.exec("INSERT OR REPLACE INTO idempotency (key, body_hash, answer, created_at_ms) VALUES (?, ?, ?, ?)", idem.key, idem.hash, JSON.stringify(answer), now);
    if (++this.writesSincePurge >= 500) {
      this.writesSincePurge = 0;
      this.sql.exec("DELETE FROM idempotency WHERE created_at_ms < ?", now - IDEMPOTENCY_TTL_MS);
    }
  }

  private answer(events: readonly WalEvent[], extra: Record<string, unknown> = {}): WriteAnswer {
    return { task: taskSummary(this.state), event_ids: events.map((e) => e.event_id), wal_seq: this.state.last_wal_seq, ...extra };
  }

  /** After a commit: the alarm tracks the earliest deadline, and the session index hears of the change. */
  private async afterCommit(): Promise<void> {
    this.pushIndex();
    await this.scheduleAlarm();
  }

  private async scheduleAlarm(): Promise<void> {
    const deadline = nextDeadline(this.state);
    const candidates = [deadline, this.indexRetryAt].filter((t): t is number => t !== null);
    const target = candidates.length === 0 ? null : Math.min(...candidates);
    if (target === this.alarmAt) return;
    this.alarmAt = target;
    if (target === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(target);
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
        this.sql.exec("INSERT OR REPLACE INTO meta (key, value) VALUES ('index_pushed_seq', ?)", String(this.pushedSeq));
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

  /** agent.task_create: reserves task_id and wal_name in the session, commits task_created, confirms. */
  async createTask(actor: Actor, body: Record<string, unknown>, idem: Idempotency | null): Promise<RpcResult<WriteAnswer>> {
    if (this.broken !== null) return err(this.broken);
    const now = Date.now();
    const replayed = this.findIdempotent(idem, now);
    if (replayed !== null) return replayed;
    const taskId = String(body.task_id);
    const walName = String(body.wal_name);
    if (this.state.task !== null) return err(runtimeError("task_id_conflict", `task ${taskId} already exists in this session`, { task_id: taskId }));
    if (actor.role !== "orchestrator") return err(runtimeError("tool_not_available", "agent.task_create is available to the orchestrator only"));
    const session = this.env.SESSIONS.get(this.env.SESSIONS.idFromName(actor.session_id));
    const reserved = (await session.reserve(taskId, walName)) as RpcResult<null>;
    if (!reserved.ok) return err(reserved.error);
    // Another create may have committed while we waited on the session.
    if (this.state.task !== null) return err(runtimeError("task_id_conflict", `task ${taskId} already exists in this session`, { task_id: taskId }));
    const result = this.commit(actor, { ...body, type: "create_task" }, Date.now());
    if (!result.ok) {
      await session.release(taskId);
      return result;
    }
    const answer = this.answer(result.value.events);
    this.rememberIdempotent(idem, answer, now);
    await this.afterCommit();
    return ok(answer);
  }

  /** Every other write: decide and commit one command (claims, step updates, task lifecycle, runs). */
  async execute(actor: Actor, command: Record<string, unknown>, idem: Idempotency | null, opts: { claimNext?: boolean } = {}): Promise<RpcResult<WriteAnswer>> {
    if (this.broken !== null) return err(this.broken);
    if (this.state.task === null) return err(runtimeError("not_found", "no such task"));
    const now = Date.now();
    const replayed = this.findIdempotent(idem, now);
    if (replayed !== null) return replayed;
    this.reconcile(now);
    const result = this.commit(actor, command, now);
    if (!result.ok) {
      await this.afterCommit();
      return result;
    }
    const events = [...result.value.events];
    const extra = await this.describeValue(result.value.value);
    if (opts.claimNext === true && command.type === "update_step" && isTerminalStatus(command.status)) {
      const next = this.commit(actor, { type: "claim_next" }, now);
      if (next.ok) {
        events.push(...next.value.events);
        extra.next = await this.describeValue(next.value.value);
      } else {
        extra.next = { error: next.error };
      }
    }
    const answer = this.answer(events, extra);
    this.rememberIdempotent(idem, answer, now);
    await this.afterCommit();
    return ok(answer);
  }

  private async describeValue(value: DecisionValue): Promise<Record<string, unknown>> {
    switch (value.kind) {
      case "claimed":
        return { step: this.state.steps.get(value.step_id), attempt_id: value.attempt_id };
      case "no_step_claimed":
        return { no_step_claimed: true, reason: value.reason };
      case "dispatched": {
        const run = this.state.runs.get(value.run_id)!;
        const task = this.state.task!;
        const ttl = value.deadline_at === null ? this.config.tokenTtlSeconds : Math.max(60, Math.ceil((Date.parse(value.deadline_at) - Date.now()) / 1000) + 60);
        const { token, expires_at } = await mintToken(
          this.env.TOKEN_SECRET,
          { role: "worker", sid: task.session_id, tid: task.task_id, sub: run.agent_id, run: run.run_id, pool: run.worker_pool_id, allowed: run.allowed_step_ids },
          Date.now(),
          ttl,
        );
        return { run_id: run.run_id, agent_id: run.agent_id, token, expires_at, run };
      }
      case "none":
        return {};
    }
  }

  /** agent.task_get: the DAG after reconciling leases. */
  async getTask(actor: Actor): Promise<RpcResult<ReturnType<typeof taskView>>> {
    const ready = this.readable(actor);
    if (ready !== null) return err(ready);
    return ok(taskView(this.state));
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
    if (reconcile && this.reconcile(Date.now()).length > 0) void this.afterCommit();
    return null;
  }

  /** The single alarm: expire due leases and run deadlines, retry a failed index push, re-arm. Idempotent. */
  override async alarm(): Promise<void> {
    this.alarmAt = null;
    if (this.broken !== null) return;
    this.reconcile(Date.now());
    if (this.indexRetryAt !== null && this.indexRetryAt <= Date.now()) this.indexRetryAt = null;
    this.pushIndex();
    await this.scheduleAlarm();
  }
}

function isTerminalStatus(status: unknown): boolean {
  return status === "completed" || status === "failed" || status === "cancelled" || status === "blocked";
}
