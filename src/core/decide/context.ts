/** @module Who acts and when: the context every decision runs in, and the events it emits. */
import type { RuntimeError } from "../model/errors.js";
import type { WalEvent, WalEventOf, WalEventType } from "../events/events.js";
import type { CoreLimits } from "../model/limits.js";
import type { DagState } from "../model/state.js";

/** The role a caller acts in; it comes from a signed token, never from a command body. */
/** `a2a_client`: an agent that hands the session work over A2A; it sees and stops only the tasks it submitted. */
export type ActorRole = "orchestrator" | "worker" | "observer" | "approver" | "a2a_client" | "system";

/** The caller of a command: its fields come from the caller's token, never from a command's body. */
export interface Actor {
  readonly role: ActorRole;
  readonly session_id: string;
  readonly agent_id: string;
  readonly run_id: string | null;
  /** A worker's task scope (its token names one task). */
  readonly task_id?: string;
}

/** Everything a decision may depend on besides the state: the actor, the time, an id source. */
export interface DecideContext {
  readonly actor: Actor;
  /** Milliseconds since the epoch; the only clock the core sees. */
  readonly now: number;
  /** Returns a fresh, unique, sortable id (a ULID in the service, a counter in tests). */
  readonly newId: () => string;
  readonly limits: CoreLimits;
}

/** What a successful decision returns besides its events. */
export type DecisionValue =
  | { readonly kind: "claimed"; readonly step_id: string; readonly attempt_id: string }
  | { readonly kind: "no_step_claimed"; readonly reason: "no_ready_step" | "run_budget_spent" }
  | { readonly kind: "dispatched"; readonly run_id: string; readonly agent_id: string; readonly deadline_at: string | null }
  | { readonly kind: "action"; readonly action_id: string }
  | { readonly kind: "none" };

/** The outcome of `decide`: every event the command causes, or one error and nothing else. */
export type Decision =
  | { readonly ok: true; readonly events: WalEvent[]; readonly value: DecisionValue }
  | { readonly ok: false; readonly error: RuntimeError };

/**
 * `ms` as an ISO-8601 timestamp (Date#toISOString's text). Formatting a Date costs about a microsecond, and one
 * decision formats its `now` and its deadlines (a lease's `now + timeout`) in turn, so each second's text up to the
 * milliseconds is kept (a few seconds' worth) and only the milliseconds are added.
 */
export function isoTimestamp(ms: number): string {
  if (!Number.isInteger(ms)) return new Date(ms).toISOString();
  const second = Math.floor(ms / 1000);
  let prefix = secondPrefixes.get(second);
  if (prefix === undefined) {
    if (secondPrefixes.size >= KEPT_SECONDS) secondPrefixes.clear();
    prefix = new Date(second * 1000).toISOString().slice(0, -4);
    secondPrefixes.set(second, prefix);
  }
  const millis = ms - second * 1000;
  return `${prefix}${millis < 10 ? "00" : millis < 100 ? "0" : ""}${millis}Z`;
}

/** The seconds whose text isoTimestamp keeps at most (then it starts again): a decision spans few. */
const KEPT_SECONDS = 64;
const secondPrefixes = new Map<number, string>();

/**
 * Date.parse of an ISO-8601 timestamp, kept for the texts seen last: the alarm's next deadline reads every held
 * step's lease and every active run's deadline after each commit, and most of those texts did not change.
 */
export function parseTimestamp(text: string): number {
  let ms = parsedTexts.get(text);
  if (ms === undefined) {
    if (parsedTexts.size >= KEPT_TEXTS) parsedTexts.clear();
    ms = Date.parse(text);
    parsedTexts.set(text, ms);
  }
  return ms;
}

/** The texts parseTimestamp keeps at most (then it starts again). */
const KEPT_TEXTS = 4096;
const parsedTexts = new Map<string, number>();

/** Builds the WAL events of one decision, numbering them after the state's last wal_seq. */
export class Emitter {
  readonly events: WalEvent[] = [];
  private seq: number;
  private readonly at: string;

  constructor(
    private readonly state: DagState,
    private readonly ctx: DecideContext,
    /** Automatic transitions (lease expiry) are recorded as the system's, whoever triggered them. */
    private readonly actor: Actor = ctx.actor,
    /** The wal_seq the first event follows: the state's last, or the last of events already decided. */
    afterSeq: number = state.last_wal_seq,
  ) {
    this.seq = afterSeq;
    this.at = isoTimestamp(ctx.now);
  }

  /** The decision's time in ms since the epoch. */
  get now(): number {
    return this.ctx.now;
  }

  /** The deployment's limits the decision checks. */
  get limits(): CoreLimits {
    return this.ctx.limits;
  }

  /** The decision's timestamp as stored in records. */
  get timestamp(): string {
    return this.at;
  }

  /** Appends one event. */
  emit<T extends WalEventType>(type: T, stepId: string | null, payload: WalEventOf<T>["payload"], taskId?: string): void {
    this.seq += 1;
    this.events.push({
      wal_seq: this.seq,
      session_id: this.state.task?.session_id ?? this.actor.session_id,
      event_id: this.ctx.newId(),
      event_type: type,
      actor_agent_id: this.actor.agent_id,
      actor_run_id: this.actor.run_id,
      task_id: taskId ?? this.state.task!.task_id,
      step_id: stepId,
      payload,
      created_at: this.at,
    } as WalEvent);
  }
}

/** The actor automatic transitions are recorded under. */
export function systemActor(sessionId: string): Actor {
  return { role: "system", session_id: sessionId, agent_id: "system", run_id: null };
}
