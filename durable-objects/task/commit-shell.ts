/**
 * @module The commit path of a task object: the thin shell around the pure core. It reads (memory replayed
 * from the WAL), evaluates (`decide`, `apply`), persists (every event and idempotency answer of a unit in one
 * row of one transaction), then emits (SSE frames, the session index push, the alarm), in that order, and never lets
 * memory hold what storage does not (see `transact`). Over 400 lines: one state machine, the commit path and the one
 * alarm with every deadline it covers (leases, the index push, outbound calls, retention), which reads best whole.
 */
import { ulidFactory } from "../../src/lib/ids.js";
import {
  type Action,
  type Actor,
  apply,
  type Command,
  type CoreLimits,
  type DagState,
  type DecisionValue,
  decide,
  decideParsed,
  deliveriesOwed,
  emptyState,
  isTerminalTask,
  nextDeadline,
  type RuntimeError,
  runtimeError,
  snapshotInterval,
  systemActor,
  type WalEvent,
} from "../../src/core/index.js";
import { reportIncident } from "../shared/incident.js";
import { IdempotencyStore, type IndexPlan } from "./storage/idempotency-store.js";
import type { IndexEntry, WebhookDelivery } from "../../src/contract/index.js";
import { IndexOutbox } from "./index-outbox.js";
import { OutboundCalls, type OutboundPorts } from "./outbound-calls.js";
import type { DeliveryTargets } from "./delivery-targets.js";
import { type DeliveryPolicy, WebhookOutbox, type WebhookPorts } from "./webhook-outbox.js";
import { err, ok, type RpcResult } from "../shared/rpc-result.js";
import { endFrame, runtimeFrames } from "../shared/sse-frames.js";
import type { SseHub } from "../shared/sse-hub.js";
import { UnitOfWork } from "./unit-of-work.js";
import { fullActions } from "./action-text.js";
import { loadState, saveSnapshot } from "./storage/snapshot-store.js";
import { appendCommit, type CommitStorage, migrate, nextAnswerOnlyKey, readWal, type Sql } from "./storage/wal-store.js";
import type { ForgetAnswer } from "../session/session-rpc.js";
import { readTombstone, TaskRetention, type Tombstone, writeTombstone } from "./task-retention.js";

/** Deliveries one queue_webhook_deliveries command carries at most (its schema's cap). */
const MAX_QUEUED_PER_COMMAND = 10_000;
/** How soon a broken object tries again to rebuild its memory from the WAL (doubling up to a minute). */
const REBUILD_RETRY_MS = 1_000;
const REBUILD_RETRY_MAX_MS = 60_000;

/** The pure functions the commit path calls. */
export interface CommitCore {
  readonly decide: typeof decide;
  readonly decideParsed: typeof decideParsed;
  readonly apply: typeof apply;
}

/** What the commit shell is built from (all of it the task object's). */
export interface CommitShellParts {
  /** SQL and one synchronous transaction: the object's storage. */
  readonly storage: CommitStorage;
  /** The object's one alarm. */
  readonly alarms: Pick<DurableObjectStorage, "getAlarm" | "setAlarm" | "deleteAlarm">;
  /** Live SSE subscribers of the task's events, fed after each commit. */
  readonly hub: SseHub;
  readonly limits: CoreLimits;
  /** Sends the task's entry to its session index, with its webhook deliveries changed since (the session object's upsertTask). */
  readonly pushIndex: (entry: IndexEntry, deliveries: WebhookDelivery[]) => Promise<void>;
  /** Told after a commit that resolved actions (answered, expired or withdrawn): their records as now resolved. */
  readonly actionsResolved?: (actions: readonly Action[]) => void;
  /** Told after a commit that ended worker runs (finished, cancelled, timed out), after its frames were published: their ids. */
  readonly runsEnded?: (runIds: ReadonlySet<string>) => void;
  /** A deadline of the object's other parts the alarm must also come by (a command socket's token expiry), or null. */
  readonly otherDeadline?: () => number | null;
  /** The calls delegated steps make to other task objects and to A2A peers. */
  readonly outbound: OutboundPorts;
  /** The session's subscriptions this task's events go to (read before writes; held in memory only). */
  readonly deliveryTargets: DeliveryTargets;
  /** The sends of webhook deliveries, and the tries and backoff they are recorded under. */
  readonly webhooks: WebhookPorts;
  readonly deliveryPolicy: DeliveryPolicy;
  /** The session's forgetTask, for the retention of an archived task. */
  readonly forgetTask: (sessionId: string, taskId: string, walName: string, walSeq: number) => Promise<ForgetAnswer>;
  /** Deletes every row, table and the alarm of the object's storage (ctx.storage.deleteAll). */
  readonly deleteStorage: () => Promise<void>;
  /** A snapshot of the state is written with the commit that takes the WAL this many events past the last one. */
  readonly snapshotEveryEvents: number;
  /** Idempotency-Key fingerprints kept in memory at most (the rest in the spill table). */
  readonly idempotencyIndexKeys: number;
}

/** The commit path, memory and alarm of one task object; single writer. */
export class CommitShell {
  private current: DagState = emptyState();
  /**
   * Set when memory may differ from storage (the WAL did not replay, or a failed commit could not be undone
   * by replaying it): every call answers storage_error until the WAL replays again (see `guard`).
   */
  private broken: RuntimeError | null = null;
  private rebuildRetryAt = 0;
  private rebuildRetryMs = REBUILD_RETRY_MS;
  /** The storage the commit path writes through (a field: the fault-injection tests replace it). */
  storage: CommitStorage;
  /** The pure functions the commit path calls (a field: the fault-injection tests make one throw). */
  core: CommitCore = { decide, decideParsed, apply };
  /** The idempotency records, written with the commit that produced them. */
  readonly idempotency: IdempotencyStore;
  /** The session-index replica's pushes, due after commits and covered by the alarm. */
  private readonly index: IndexOutbox;
  /** The delegated steps' outbound calls, owed by the WAL and covered by the alarm. */
  readonly outbound: OutboundCalls;
  /** The webhook deliveries the WAL owes, covered by the alarm. */
  readonly webhooks: WebhookOutbox;
  /** The deletion of an archived task's storage once its retention deadline passed, covered by the alarm. */
  readonly retention: TaskRetention;
  private alarmAt: number | null = null;
  /**
   * While the alarm runs: the earliest time it may be set for, just after the run began. The platform takes an
   * alarm set during its run for the very time that run is for as no change, and retires it when the run ends (the
   * stored time then names a moment nothing will run, and memory, believing it pending, never arms an earlier one):
   * a run that leaves work due at once re-arms for the next millisecond instead.
   */
  private alarmFloor: number | null = null;
  /** The wal_seq of the stored snapshot (0: none). */
  private snapshotAt = 0;
  /** ULIDs that sort in creation order even within one millisecond. */
  private readonly ulid = ulidFactory();

  constructor(private readonly parts: CommitShellParts) {
    this.storage = parts.storage;
    this.idempotency = new IdempotencyStore(() => this.storage.sql, parts.idempotencyIndexKeys);
    this.index = new IndexOutbox(parts.storage.sql, () => this.current, parts.pushIndex, () => void this.scheduleAlarm());
    this.outbound = new OutboundCalls(() => this.current, parts.outbound, (command) => this.commitSystem(command), () => this.scheduleAlarm());
    this.webhooks = new WebhookOutbox(
      () => this.current,
      parts.deliveryTargets,
      (walSeq) => readWal(this.sql, walSeq - 1, 1)[0],
      parts.webhooks,
      parts.deliveryPolicy,
      (command) => this.commitSystem(command),
      () => this.scheduleAlarm(),
    );
    this.retention = new TaskRetention(() => this.current, { forget: parts.forgetTask, retire: (tombstone) => this.retire(tombstone) });
  }

  /** Retention's last step (task-retention.ts): the storage deleted, the schema and tombstone written in one transaction, no task in memory. */
  private async retire(tombstone: Tombstone): Promise<void> {
    await this.parts.deleteStorage();
    this.storage.transactionSync(() => (migrate(this.sql, (work) => work()), writeTombstone(this.sql, tombstone)));
    this.current = emptyState();
    this.snapshotAt = 0;
    this.idempotency.forget();
    this.alarmAt = null;
  }

  /** The task's memory, as the WAL replays (replaced wholesale when it is rebuilt: read it through this). */
  get state(): DagState {
    return this.current;
  }

  /** The SQL of the commit path's storage. */
  get sql(): Sql {
    return this.storage.sql;
  }

  /**
   * On start (inside blockConcurrencyWhile): brings the schema up to date, replays the WAL, and pushes a
   * change committed before a crash that the session index never acknowledged.
   */
  async start(): Promise<void> {
    try {
      this.loadFromWal();
      this.alarmAt = await this.parts.alarms.getAlarm();
      this.index.recover(Date.now());
      // Outbound calls and webhook deliveries owed before a crash are owed again: the WAL says what they are.
      this.outbound.refresh();
      this.webhooks.refresh();
      // A deletion a crash interrupted is due again: its deadline is in the WAL.
      if (this.index.dueAt !== null || this.outbound.dueAt !== null || this.webhooks.dueAt !== null || this.retention.dueAt !== null) await this.scheduleAlarm();
    } catch (e) {
      this.markBroken(runtimeError("storage_error", "the task's WAL could not be replayed; nothing was changed", { cause: e instanceof Error ? e.message : String(e) }));
    }
  }

  /** Brings the schema up to date and replays the WAL into memory; throws when storage cannot. */
  private loadFromWal(): void {
    migrate(this.sql, (work) => this.storage.transactionSync(work));
    this.loadMemory();
  }

  /** Memory (and what is derived from storage with it: the snapshot's wal_seq, the key index) from the snapshot and the WAL. */
  private loadMemory(): void {
    const loaded = loadState(this.sql);
    this.retention.tombstone = loaded.state.task === null ? readTombstone(this.sql) : null;
    this.current = loaded.state;
    this.snapshotAt = loaded.snapshotSeq;
    this.idempotency.forget();
  }

  /** Memory is not to be trusted: nothing is served from it until the WAL replays again. */
  private markBroken(error: RuntimeError): RuntimeError {
    this.current = emptyState();
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
  guard(): RuntimeError | null {
    if (this.broken === null) return null;
    const now = Date.now();
    if (now < this.rebuildRetryAt) return this.broken;
    try {
      this.loadFromWal();
      this.broken = null;
      return null;
    } catch {
      this.current = emptyState();
      this.rebuildRetryMs = Math.min(this.rebuildRetryMs * 2, REBUILD_RETRY_MAX_MS);
      this.rebuildRetryAt = now + this.rebuildRetryMs;
      return this.broken;
    }
  }

  /**
   * The commit path for one unit of work (a command, with the lease reconciliation before it and any
   * claim-next after it; or a whole batch). Decisions are applied to memory as they are taken, so each sees
   * the ones before it; that is equivalent to decide → append → apply (docs/design.md "The commit path") because nothing else can
   * observe memory in between: everything from the first decision to the end of `transactionSync` is one
   * synchronous turn (no await), so no other call interleaves, and nothing is published or answered before
   * the transaction returned. If anything fails before that point — decide or apply throws (a bug), or the
   * write throws — memory is rebuilt from the WAL in the same turn; if that rebuild fails too, the object is
   * marked broken and answers storage_error until it restarts, rather than serve a memory storage lacks.
   */
  transact<T>(work: (unit: UnitOfWork) => T): RpcResult<T> {
    const broken = this.guard();
    if (broken !== null) return err(broken);
    const unit = new UnitOfWork();
    let value: T;
    try {
      value = work(unit);
      this.queueDeliveries(unit);
    } catch (e) {
      return err(this.restoreFromWal(reportIncident(e, "task object: decide/apply")));
    }
    if (unit.events.length === 0 && unit.answers.length === 0) return ok(value);
    let snapshotTaken = 0;
    let seqKey = 0;
    let indexPlan: IndexPlan | null = null;
    try {
      this.storage.transactionSync(() => {
        seqKey = unit.events.length > 0 ? unit.events[unit.events.length - 1]!.wal_seq : nextAnswerOnlyKey(this.sql);
        indexPlan = this.idempotency.prepare(unit.answers);
        appendCommit(this.sql, { seqKey, events: unit.events, keys: unit.answers.map((a) => [a.key, a.hash] as const), answers: unit.answers.map((a) => a.answer), atMs: unit.answers[0]?.at ?? Date.now() });
        this.index.storeAcknowledged();
        // In the same transaction as the events it covers: a snapshot never runs ahead of the WAL. A snapshot that
        // cannot be written never costs the commit: the WAL alone is enough (a torn one lacks its header row and is
        // ignored), and the next is tried an interval later.
        if (this.current.last_wal_seq - this.snapshotAt >= snapshotInterval(this.current, this.parts.snapshotEveryEvents)) {
          snapshotTaken = this.current.last_wal_seq;
          try {
            saveSnapshot(this.sql, this.current);
          } catch (e) {
            reportIncident(e, "task object: writing a snapshot");
          }
        }
      });
    } catch (e) {
      return err(this.restoreFromWal(runtimeError("storage_error", "the WAL append failed; nothing was changed", { cause: e instanceof Error ? e.message : String(e) })));
    }
    if (snapshotTaken > 0) this.snapshotAt = snapshotTaken;
    this.idempotency.committed(seqKey, indexPlan);
    // The durable point. Answering and publishing from here on is safe although the write may not have
    // reached Cloudflare's replicas yet: the Durable Object output gate holds every outgoing message (the
    // RPC answer, SSE frames, the index push) until the writes before it are confirmed, and if confirmation
    // fails the object is reset and nothing held is delivered. Never move a reply or a publish above
    // `transactionSync`: the gate cannot hold back what was sent before the write was made.
    this.publish(unit.events);
    return ok(value);
  }

  /**
   * The unit's events owed to the session's subscriptions, queued in the same unit (so in the same transaction as
   * the events themselves: nothing can commit an event and lose its delivery). Runs inside `transact`'s guarded
   * turn: a throw here undoes the unit like any other.
   */
  private queueDeliveries(unit: UnitOfWork): void {
    const task = this.current.task;
    if (task === null || unit.events.length === 0) return;
    const filters = this.parts.deliveryTargets.filters();
    if (filters.length === 0) return;
    const owed = deliveriesOwed(unit.events, filters);
    for (let i = 0; i < owed.length; i += MAX_QUEUED_PER_COMMAND) {
      const queued = this.decideAndApply(unit, systemActor(task.session_id), { type: "queue_webhook_deliveries", deliveries: owed.slice(i, i + MAX_QUEUED_PER_COMMAND) }, Date.now());
      if (!queued.ok) throw new Error(`queue_webhook_deliveries refused: ${queued.error.code} ${queued.error.message}`);
    }
  }

  /**
   * After a failed unit: memory may hold events storage lacks, so it is rebuilt from the WAL. Returns the
   * error to answer: `error` when the rebuild worked, storage_error (and a broken object) when it did not.
   */
  private restoreFromWal(error: RuntimeError): RuntimeError {
    try {
      this.loadMemory();
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
   * Actions the commit resolved go to whoever waits on them (long-polls, command sockets); runs it ended, after
   * the frames, to the listener that closes their tokens' streams and sockets.
   */
  private publish(events: readonly WalEvent[]): void {
    let resolved: Action[] | null = null;
    // The runs the commit ended (a late result ends none): their tokens' streams and sockets close after the frames.
    let ended: Set<string> | null = null;
    for (const e of events) {
      if (e.event_type === "action_resolved") {
        const action = this.current.actions.get(e.payload.action_id);
        if (action !== undefined) (resolved ??= []).push(action);
      } else if (e.event_type === "worker_run_ended" && e.payload.reason !== "late_result") (ended ??= new Set()).add(e.payload.run_id);
    }
    // Whole, their text read back from the WAL.
    if (resolved !== null) this.notify(() => this.parts.actionsResolved?.(fullActions(this.sql, this.current, resolved)), "publishing resolved actions");
    const hub = this.parts.hub;
    if (hub.liveCount > 0 && events.length > 0) {
      let frames = "";
      for (const e of events) frames += runtimeFrames(e);
      hub.publish(frames);
      const task = this.current.task;
      if (task !== null && isTerminalTask(task)) hub.end(() => endFrame(task.status, this.current.last_wal_seq));
    }
    if (ended !== null) this.notify(() => this.parts.runsEnded?.(ended), "closing the streams of ended runs");
  }

  /** Calls a listener after a commit: the commit stands, so a listener's fault must not turn it into an error answer. */
  private notify(call: () => void, what: string): void {
    try {
      call();
    } catch (e) {
      reportIncident(e, `task object: ${what}`);
    }
  }

  /**
   * Decides one command and applies its events to memory at once; the unit writes them. `validated`: the command is
   * a write route's (resolveWrite checked it against the same schemas), so decide does not parse it again.
   */
  decideAndApply(unit: UnitOfWork, actor: Actor, command: Command | Record<string, unknown>, now: number, validated = false): RpcResult<{ events: WalEvent[]; value: DecisionValue }> {
    const context = { actor, now, newId: () => this.ulid(now), limits: this.parts.limits };
    const decision = validated ? this.core.decideParsed(this.current, command as Command, context) : this.core.decide(this.current, command, context);
    if (!decision.ok) return err(decision.error);
    for (const event of decision.events) this.core.apply(this.current, event);
    unit.events.push(...decision.events);
    return ok({ events: decision.events, value: decision.value });
  }

  /**
   * Expired leases are reconciled before queries, reads and claims (and by the alarm), so no read shows a lapsed claim.
   * Nothing is due before the core's nextDeadline, and reconcile_leases then decides nothing (the model tests hold
   * the two to the same deadlines), so it is not asked.
   */
  reconcileInto(unit: UnitOfWork, now: number): void {
    if (this.current.task === null) return;
    const due = this.nextDue();
    if (due === null || due > now) return;
    this.decideAndApply(unit, systemActor(this.current.task.session_id), { type: "reconcile_leases" }, now, true);
  }

  /**
   * The core's nextDeadline of the live state, worked out once per change: it reads every held step's and active
   * run's deadline, and each write asked for it twice (its reconcile and its alarm). Every change of the state is an
   * event, so its wal_seq (with the state object, replaced on a rebuild) says when to work it out again.
   */
  private nextDue(): number | null {
    const memo = this.deadlineMemo;
    if (memo.state !== this.current || memo.seq !== this.current.last_wal_seq) {
      memo.state = this.current;
      memo.seq = this.current.last_wal_seq;
      memo.at = nextDeadline(this.current);
    }
    return memo.at;
  }
  private readonly deadlineMemo: { state: DagState | null; seq: number; at: number | null } = { state: null, seq: -1, at: null };

  /** Reconciles leases in a unit of its own; true when anything expired. */
  private reconcile(now: number): boolean {
    const result = this.transact((unit) => {
      this.reconcileInto(unit, now);
      return unit.events.length > 0;
    });
    return result.ok && result.value;
  }

  /** Before a read: expired leases reconciled, and what that committed pushed and covered by the alarm. */
  reconcileBeforeRead(): void {
    if (this.reconcile(Date.now())) void this.afterCommit();
  }

  /**
   * After a commit: the session index's push is due (or under way), outbound calls now due start (their outcome is
   * committed when they answer; nobody waits for them here), and the alarm covers every deadline.
   */
  async afterCommit(): Promise<void> {
    const now = Date.now();
    this.index.noteCommit(now);
    this.outbound.refresh();
    if (this.outbound.dueAt !== null && this.outbound.dueAt <= now) void this.outbound.flush(now);
    this.webhooks.refresh();
    if (this.webhooks.dueAt !== null && this.webhooks.dueAt <= now) void this.webhooks.flush(now);
    await this.scheduleAlarm();
  }

  /**
   * Commits one of the runtime's own commands (an outbound call's outcome, a child's report), decided as the
   * system; true when it was accepted (whether or not it changed anything).
   */
  async commitSystem(command: Record<string, unknown>): Promise<boolean> {
    const task = this.current.task;
    if (task === null) return false;
    const reading = this.prepareWrite(task.session_id, task.task_id);
    if (reading !== null) await reading;
    const result = this.transact((unit) => {
      this.reconcileInto(unit, Date.now());
      return this.decideAndApply(unit, systemActor(task.session_id), command, Date.now());
    });
    await this.afterCommit();
    if (!result.ok) return false;
    if (!result.value.ok) {
      reportIncident(new Error(`${String(command.type)} refused: ${result.value.error.code} ${result.value.error.message}`), "task object: runtime command");
      return false;
    }
    return true;
  }

  /** Before a write of task `taskId`: the session's subscriptions known (the first read awaited), so its events are queued to them. */
  prepareWrite(sessionId: string, taskId: string): Promise<void> | null {
    return this.parts.deliveryTargets.ready(sessionId, taskId);
  }

  /**
   * Keeps the object's one alarm at or before the earliest deadline (lease expiry, run deadline, index push).
   * On the write path it only ever moves earlier: claims and renewals move the earliest deadline later on
   * almost every write, and an alarm that fires early expires nothing and re-arms exactly (`exact`).
   * Re-setting it on every write cost about a quarter of the steps/s under load.
   */
  private async scheduleAlarm(exact = false): Promise<void> {
    // A broken object's one deadline is its next try to replay the WAL: what it owes otherwise waits for that.
    const owed = this.broken !== null ? [this.rebuildRetryAt] : [this.nextDue(), this.index.dueAt, this.outbound.dueAt, this.webhooks.dueAt, this.retention.dueAt, this.parts.otherDeadline?.() ?? null];
    const candidates = owed.filter((t): t is number => t !== null);
    const earliest = candidates.length === 0 ? null : Math.min(...candidates);
    const target = earliest !== null && this.alarmFloor !== null ? Math.max(earliest, this.alarmFloor) : earliest;
    if (target === this.alarmAt) return;
    if (!exact && (target === null || (this.alarmAt !== null && this.alarmAt <= target))) return;
    this.alarmAt = target;
    if (target === null) await this.parts.alarms.deleteAlarm();
    else await this.parts.alarms.setAlarm(target);
  }

  /** The object's other parts added a deadline (otherDeadline): the alarm comes by it. */
  async deadlineAdded(): Promise<void> {
    await this.scheduleAlarm();
  }

  /** The single alarm: expire due leases and run deadlines, push a due index change, re-arm. Idempotent. */
  async alarm(): Promise<void> {
    this.alarmAt = null;
    this.alarmFloor = Date.now() + 1;
    try {
      // Broken, it cannot serve, but it must not sleep without an alarm (its leases, expiries, outbox and index push
      // would wait for a client): scheduleAlarm arms it for its next try to replay the WAL.
      if (this.guard() === null) {
        const task = this.current.task;
        if (task !== null) await this.prepareWrite(task.session_id, task.task_id);
        if (this.reconcile(Date.now())) this.index.noteCommit(Date.now());
        this.outbound.refresh();
        this.webhooks.refresh();
        const flushing = Promise.all([this.index.flush(Date.now()), this.outbound.flush(Date.now()), this.webhooks.flush(Date.now())]);
        // Armed while they run, not only after: a webhook send this run started may take its whole timeout, and an
        // object that dies meanwhile must still be woken (by the send's guard) to send again.
        await this.scheduleAlarm(true);
        await flushing;
        await this.retention.run(); // last: it may delete everything the steps before it read
      }
      await this.scheduleAlarm(true);
    } finally {
      this.alarmFloor = null;
    }
  }
}
