/**
 * @module The model tests' driver: one DAG, its WAL, a clock and an id counter. Every command goes through
 * `decide`, accepted events are validated, frozen and applied, and every invariant is checked after it.
 */
import { expect } from "vitest";
import {
  type Actor,
  apply,
  type CoreLimits,
  type Decision,
  DEFAULT_LIMITS,
  decide,
  emptyState,
  ERROR_CODES,
  nextDeadline,
  querySteps,
  replay,
  restoreSnapshot,
  takeSnapshot,
  type WalEvent,
  WalEventSchema,
} from "../../../src/core/index.js";
import { SESSION, T0, TASK } from "../harness.js";
import type { Concrete, Scene } from "./commands.js";
import { CompletedResults, checkState, expectSame } from "./invariants.js";
import { naiveFirstClaimable, predict, verify } from "./oracle.js";

/** Counts gathered across runs, printed at the end and used to check that the generators reach every path. */
export class Stats {
  readonly accepted = new Map<string, number>();
  readonly refused = new Map<string, number>();
  readonly events = new Map<string, number>();
  sequences = 0;
  commands = 0;

  /** Adds one to a counter. */
  static bump(map: Map<string, number>, key: string): void {
    map.set(key, (map.get(key) ?? 0) + 1);
  }

  /** A compact multi-line report. */
  report(): string {
    const fmt = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k}=${v}`).join(" ");
    return `sequences=${this.sequences} commands=${this.commands}\n accepted: ${fmt(this.accepted)}\n refused: ${fmt(this.refused)}\n events: ${fmt(this.events)}`;
  }
}

/** Throws when `condition` is false (a cheap assertion for per-command checks). */
export function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

/** Freezes an object graph, so an `apply` that writes into an event (or aliases it and writes later) throws. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** A DAG under test with its WAL. */
export class World implements Scene {
  state = emptyState();
  /** The WAL as decided (frozen). */
  readonly wal: WalEvent[] = [];
  /** The WAL as stored: a JSON round trip of each event at append time (frozen). */
  private readonly stored: WalEvent[] = [];
  now = T0;
  private ids = 0;
  private stepSeq = 0;
  readonly workers: Actor[] = [];
  readonly deleted: string[] = [];
  private readonly completed = new CompletedResults();

  constructor(
    private readonly stats: Stats,
    private readonly limits: CoreLimits = DEFAULT_LIMITS,
  ) {}

  /** A step id no step has had yet. */
  freshStepId(): string {
    return `n${++this.stepSeq}`;
  }

  /** Runs one concrete command (or tick, or query) and checks everything. */
  step(c: Concrete, label: string): void {
    if (c.kind === "tick") {
      this.now += c.advance;
      return;
    }
    if (c.kind === "query") {
      this.query(c.actor, c.pool);
      return;
    }
    this.now += c.advance;
    this.exec(c.actor, c.command, label);
  }

  /** Decides `command`; on acceptance validates, freezes, appends and applies the events; then checks every invariant. */
  exec(actor: Actor, command: unknown, label = ""): Decision {
    const before = this.wal.length;
    const prediction = predict(this.state, actor, command, this.now, this.limits);
    const type = typeof command === "object" && command !== null && typeof (command as { type?: unknown }).type === "string" ? (command as { type: string }).type : "(garbage)";
    // The task object asks reconcile_leases only once nextDeadline has come: it must decide nothing before then.
    const isReconcile = type === "reconcile_leases" && this.state.task !== null;
    const dueBefore = isReconcile ? nextDeadline(this.state) : null;
    const decision = decide(this.state, command, { actor, now: this.now, newId: () => `id${String(++this.ids).padStart(8, "0")}`, limits: this.limits });
    this.stats.commands += 1;
    const where = `${label} ${type} by ${actor.role}/${actor.agent_id}`;
    if (isReconcile && decision.ok) {
      const nothingDue = dueBefore === null || dueBefore > this.now;
      check(nothingDue === (decision.events.length === 0), `${where}: nextDeadline ${dueBefore} at now ${this.now}, yet reconcile_leases decided ${decision.events.length} event(s)`);
    }
    if (decision.ok) {
      Stats.bump(this.stats.accepted, type);
      decision.events.forEach((e, i) => {
        // Plain checks on the hot path: vitest's expect costs more than the core does on small DAGs.
        check(e.wal_seq === before + i + 1, `${where}: wal_seq ${e.wal_seq} where ${before + i + 1} was next`);
        check(e.session_id === SESSION && e.task_id === TASK, `${where}: event ${e.event_type} names ${e.session_id}/${e.task_id}`);
        const parsed = WalEventSchema.safeParse(e);
        if (!parsed.success) throw new Error(`${where}: event ${e.event_type} fails WalEventSchema: ${parsed.error.message}`);
        expectSame(parsed.data, e, `${where}: event ${e.event_type} has no field outside WalEventSchema`);
        Stats.bump(this.stats.events, e.event_type);
        // A run's cancellation times out once, while it is still waited for.
        if (e.event_type === "child_agent_cancel_timeout") check(this.state.runs.get(e.payload.run_id)?.status === "cancelling", `${where}: child_agent_cancel_timeout for a run not cancelling`);
        deepFreeze(e);
        this.wal.push(e);
        this.stored.push(deepFreeze(JSON.parse(JSON.stringify(e)) as WalEvent));
        apply(this.state, e);
        if (e.event_type === "worker_dispatched") {
          this.workers.push({ role: "worker", session_id: SESSION, task_id: TASK, agent_id: e.payload.agent_id, run_id: e.payload.run_id });
        }
        if (e.event_type === "task_updated") {
          for (const op of e.payload.ops) if (op.op === "delete_step") this.deleted.push(op.step_id);
        }
      });
    } else {
      Stats.bump(this.stats.refused, `${type}:${decision.error.code}`);
      check(ERROR_CODES.includes(decision.error.code), `${where}: error code ${decision.error.code} is outside the closed union`);
      check(this.wal.length === before, `${where}: a refused command wrote to the WAL`);
    }
    verify(prediction, decision, this.state, where);
    this.checkAll(where);
    return decision;
  }

  private checks = 0;

  /**
   * Every third check: a snapshot taken halfway through the WAL (through JSON, as storage keeps it), restored and
   * followed by the rest of the WAL, equals the live state — records, indexes, and the order of the index sets
   * decisions iterate.
   */
  private checkSnapshot(where: string): void {
    if (++this.checks % 3 !== 0 || this.stored.length < 2) return;
    // The live state itself through a snapshot: the same, set orders included.
    const now = restoreSnapshot(JSON.parse(JSON.stringify(takeSnapshot(this.state))));
    expectSame(now, this.state, `${where}: a snapshot of the live state restores it`);
    for (const name of ["held", "activeRuns", "cancellingRuns", "openActions", "retrying", "readyDelegated", "openDelegations"] as const) {
      expectSame([...now.index[name]], [...this.state.index[name]], `${where}: index.${name} in live order in a snapshot`);
    }
    const half = Math.floor(this.stored.length / 2);
    const saved = JSON.parse(JSON.stringify(takeSnapshot(replay(this.stored.slice(0, half)))));
    const restored = replay(this.stored.slice(half), restoreSnapshot(saved));
    expectSame(restored, this.state, `${where}: snapshot at ${half} + replay of the rest equals the live state`);
    for (const name of ["held", "activeRuns", "cancellingRuns", "openActions", "retrying", "readyDelegated", "openDelegations"] as const) {
      expectSame([...restored.index[name]], [...this.state.index[name]], `${where}: index.${name} in live order after a snapshot`);
    }
  }

  /** replay(WAL as stored) deep-equals the live state, then every state invariant. */
  checkAll(where: string): void {
    check(this.wal.length === this.stored.length, `${where}: WAL and stored WAL disagree`);
    this.wal.forEach((e, i) => check(e.wal_seq === i + 1, `${where}: wal_seq ${e.wal_seq} at position ${i + 1}`));
    expectSame(replay(this.stored), this.state, `${where}: replay(wal) equals the live state`);
    this.checkSnapshot(where);
    checkState(this.state);
    this.completed.check(this.state);
  }

  /** Read-only: the worker's default query and claim-next candidate match a naive scan; nothing changes. */
  private query(actor: Actor, pool: string): void {
    if (this.state.task === null) return;
    const seq = this.state.last_wal_seq;
    const run = actor.role === "worker" && actor.run_id !== null ? this.state.runs.get(actor.run_id) : undefined;
    if (run !== undefined && actor.task_id === TASK && actor.session_id === SESSION) {
      const result = querySteps(this.state, actor, {});
      expect(result.ok, "a worker's default query succeeds").toBe(true);
      if (!result.ok) return;
      const page = result.value;
      const naive = [...this.state.steps.values()]
        .sort((a, b) => a.ordinal - b.ordinal)
        // A delegated step is no worker's to claim: its default query lists what claim_next may take.
        .filter((s) => s.status === "ready" && s.delegate === null && s.worker_pool_id === run.worker_pool_id && (run.allowed_step_ids === null || run.allowed_step_ids.includes(s.step_id)));
      expect(page.steps.map((s) => s.step_id), "worker query = its ready steps in creation order").toEqual(naive.slice(0, 5).map((s) => s.step_id));
      expect(page.total).toBe(naive.length);
      expect(naiveFirstClaimable(this.state, run)?.step_id).toBe(naive[0]?.step_id);
    } else if (actor.role === "orchestrator" && actor.session_id === SESSION) {
      const result = querySteps(this.state, actor, { statuses: ["ready"], worker_pool_id: pool, limit: 1_000 });
      if (!result.ok) throw new Error(result.error.message);
      const page = result.value;
      const naive = [...this.state.steps.values()].sort((a, b) => a.ordinal - b.ordinal).filter((s) => s.status === "ready" && s.worker_pool_id === pool);
      expect(page.steps.map((s) => s.step_id), "ready query = a scan for ready steps").toEqual(naive.slice(0, 1_000).map((s) => s.step_id));
    } else {
      const result = querySteps(this.state, actor, {});
      if (actor.session_id !== SESSION) expect(result).toMatchObject({ ok: false, error: { code: "permission_denied" } });
    }
    expect(this.state.last_wal_seq, "a query writes nothing").toBe(seq);
  }
}
