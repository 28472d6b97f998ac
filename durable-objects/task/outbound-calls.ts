/**
 * @module A task object's outbound calls for its delegated steps (an outbox: the intent is a WAL fact before the call; docs/design.md "Outboxes").
 * What is owed comes from the WAL alone (core `outboundWork`); this class performs each call — create or cancel a
 * child task, report a child's result to its parent, talk to an A2A peer — at most one at a time per delegation,
 * and commits what it found as the runtime's own command. The WAL holds every intent before its call and every
 * outcome after it, so a crash or an eviction between any two loses nothing: on start the same work is owed again,
 * and every call is idempotent at its target (a child's id is fixed by the intent; a report or a cancellation of
 * something already settled changes nothing; a peer's message id is derived from the intent).
 * A peer whose Agent Card offers streaming is followed by its SubscribeToTask stream, one per delegation, read in the
 * background; polling resumes when the stream fails or ends early, and a stream is tried again after a backoff.
 */
import { type ChildReport, type ChildTaskRequest, type DagState, type DelegationReport, type OutboundWork, outboundWork } from "../../src/core/index.js";
import { reportIncident } from "../shared/incident.js";

/** What a call to another task object may answer, when it answers at all. */
export type ChildCreateAnswer = { ok: true } | { ok: false; error: string; retryable: boolean };
/** How a child task took its parent's cancellation. */
export type ChildCancelAnswer = "cancelled" | "already_terminal" | "not_created";
/** How a parent took its child's report. */
export type DeliveryAnswer = "delivered" | "parent_missing";

/** A peer's task as the transport read it (durable-objects/peers/a2a-peer.ts). */
export interface PeerTaskSeen {
  readonly remote_task_id: string;
  readonly remote_context_id: string | null;
  readonly remote_status: string;
  readonly status_message: string | null;
  readonly artifacts: { artifact_id: string; name: string | null; text: string | null }[];
  /** The peer's id of the question it asks (its status message's `metadata.actionId`), when it gives one. */
  readonly remote_action_id?: string;
}
/** What one call to a peer gave: its task, or why not; `subscribe` (a streaming peer) follows the task by its stream. */
export type PeerAnswer =
  | { ok: true; task: PeerTaskSeen; streaming: boolean; subscribe?: PeerSubscribe }
  | { ok: false; code: string; message: string; retryable: boolean };
/** Reads the peer's stream of the task, calling `onTask` with each change; ends with the terminal task or a failure. */
export type PeerSubscribe = (onTask: (task: PeerTaskSeen) => Promise<void>, signal?: AbortSignal) => Promise<PeerAnswer>;
/** How a view of the peer's task reached us (none: an answer to a send, an answer or a cancel). */
type Mechanism = "polling" | "streaming" | undefined;

/** The calls this class makes; the task object binds them to the other objects and the network. */
export interface OutboundPorts {
  createChild(child: ChildTaskRequest, createdByAgentId: string): Promise<ChildCreateAnswer>;
  cancelChild(childTaskId: string, delegationId: string, reason: string): Promise<ChildCancelAnswer>;
  deliver(report: ChildReport): Promise<DeliveryAnswer>;
  peerSend(cardUrl: string, message: { message_id: string; text: string; task_id?: string; context_id?: string; action_id?: string }): Promise<PeerAnswer>;
  peerGet(cardUrl: string, remoteTaskId: string): Promise<PeerAnswer>;
  peerCancel(cardUrl: string, remoteTaskId: string): Promise<PeerAnswer>;
}

/** How the task object commits a report (a command of the runtime's own, through its commit path). */
export type CommitReport = (command: Record<string, unknown>) => Promise<boolean>;
/** How the task object sets its alarm at or before `dueAt` (it only ever moves it earlier). */
export type ArmAlarm = () => Promise<void>;

/** The first wait between two reads of a peer's task that did not change, doubling up to FOLLOW_MAX_MS. */
export const FOLLOW_MIN_MS = 250;
const FOLLOW_MAX_MS = 10_000;
/** A child's report to its parent is tried this often (backoff 1 s doubling up to a minute) before it is recorded failed. */
const DELIVERY_TRIES = 10;
const DELIVERY_RETRY_MS = 1_000;
const DELIVERY_RETRY_MAX_MS = 60_000;
/** After a stream failed or ended early, the next one is tried after this long, doubling up to STREAM_RETRY_MAX_MS. */
const STREAM_RETRY_MS = 1_000;
const STREAM_RETRY_MAX_MS = 5 * 60_000;
/**
 * While a stream is open, its delegation's poll is due this long after it opened: later than any stream lives (the
 * peer client cuts one at 5 minutes), so it does not poll alongside, yet an alarm stays set for the follow.
 */
const STREAM_HOLD_MS = 6 * 60_000;

/** A peer that streams, as the last answer about a delegation's task said: how to subscribe, and when next. */
interface Streamable {
  subscribe: PeerSubscribe;
  /** When a stream may be opened (after a failed one: a backoff). */
  at: number;
  /** Streams in a row that failed or ended early. */
  failures: number;
}

/** The outbound calls of one task object. */
export class OutboundCalls {
  /** Calls under way, by delegation id ("deliver" for the child's report). */
  private readonly inFlight = new Map<string, Promise<void>>();
  /** When each followed peer task is next read (memory only: after a restart it is read at once). */
  private readonly followAt = new Map<string, { at: number; wait: number; status: string | null }>();
  private delivery = { tries: 0, at: 0 };
  /** Delegations whose peer streams (memory only: after a restart the first answer says so again). */
  private readonly streamable = new Map<string, Streamable>();
  /** Streams open, by delegation id: aborted when the delegation is no longer owed a follow. */
  private readonly streams = new Map<string, { reader: AbortController; until: number }>();
  /** When the earliest call is due, for the object's alarm; null when nothing is owed. */
  dueAt: number | null = null;

  constructor(
    private readonly state: () => DagState,
    /** The calls it makes (a field: the fault tests gate them to stop the outbox between two of its steps). */
    public ports: OutboundPorts,
    private readonly commit: CommitReport,
    private readonly armAlarm: ArmAlarm,
  ) {}

  /** The calls owed now or later, with the times this object adds (peer follow pacing, report backoff). */
  private owed(): { work: OutboundWork; key: string; at: number }[] {
    return outboundWork(this.state()).map((work) => {
      if (work.intent === "deliver") return { work, key: "deliver", at: Math.max(work.due_at, this.delivery.at) };
      const key = work.delegation.delegation_id;
      if (work.intent !== "a2a_follow") return { work, key, at: work.due_at };
      // A stream follows the peer: no poll is due while it is open.
      const paced = this.streams.get(key)?.until ?? this.followAt.get(key)?.at ?? 0;
      return { work, key, at: Math.max(work.due_at, paced) };
    });
  }

  /**
   * Recomputes `dueAt` (calls under way are not due: their outcome will be committed), and closes the streams of
   * delegations no longer owed a follow (closed, cancelled, or sending a person's answer).
   */
  refresh(): void {
    const owed = this.owed();
    const following = new Set(owed.flatMap(({ work, key }) => (work.intent === "a2a_follow" ? [key] : [])));
    for (const [key, stream] of this.streams) {
      if (following.has(key)) continue;
      this.streams.delete(key);
      stream.reader.abort();
    }
    for (const key of this.streamable.keys()) if (this.state().delegations.get(key)?.status === "closed") this.streamable.delete(key);
    let next: number | null = null;
    for (const { key, at } of owed) if (!this.inFlight.has(key) && (next === null || at < next)) next = at;
    // Owed "now" (due 0) is due at the current time: an alarm time must be a real one.
    this.dueAt = next === null ? null : Math.max(next, Date.now());
  }

  /**
   * Starts every call due by `now` that is not already under way, and returns when those started now have
   * settled (the alarm awaits it; after a commit it is not awaited, so the caller's answer does not wait for a
   * peer). A call that settles sets the alarm for what its delegation owes next: the alarm may have run and been
   * re-armed while it was under way (leaving it out), and its outcome may commit nothing that would set it (a
   * peer's task read unchanged, a report that could not be delivered).
   */
  async flush(now: number): Promise<void> {
    const started: Promise<void>[] = [];
    for (const { work, key, at } of this.owed()) {
      if (at > now || this.inFlight.has(key)) continue;
      const call = this.perform(work)
        .catch((e) => {
          reportIncident(e, `task object: outbound ${work.intent}`);
        })
        .finally(async () => {
          this.inFlight.delete(key);
          this.refresh();
          try {
            await this.armAlarm();
          } catch (e) {
            reportIncident(e, "task object: setting the alarm after an outbound call");
          }
        });
      this.inFlight.set(key, call);
      started.push(call);
    }
    this.refresh();
    await Promise.all(started);
  }

  /** Performs one call and commits what it found. */
  private async perform(work: OutboundWork): Promise<void> {
    if (work.intent === "deliver") return this.deliver(work.report);
    const d = work.delegation;
    const record = (report: DelegationReport) => this.commit({ type: "record_delegation", delegation_id: d.delegation_id, report });
    const failed = (error: string, retryable: boolean) => record({ kind: "try_failed", intent: work.intent, error, retryable });
    switch (work.intent) {
      case "create_child": {
        const created = await this.guarded(() => this.ports.createChild(work.child, this.state().task!.created_by_agent_id));
        if (!created.ok) return void (await failed(created.error, created.retryable));
        return void (await record({ kind: "started", remote_task_id: work.child.task_id, remote_status: "pending", delivery_mechanism: "callback" }));
      }
      case "cancel_child": {
        const answer = await this.guarded(async () => ({ ok: true as const, value: await this.ports.cancelChild(d.child_task_id!, d.delegation_id, `parent step ${d.step_id} ended (${d.outcome ?? "cancelled"})`) }));
        if (!answer.ok) return void (await failed(answer.error, answer.retryable));
        return void (await record({ kind: "cancel_acknowledged", remote_state: answer.value }));
      }
      case "a2a_send": {
        const sent = await this.ports.peerSend(d.agent_card_ref!, { message_id: work.message_id, text: work.text });
        if (!sent.ok) return void (await failed(`${sent.code}: ${sent.message}`, sent.retryable));
        const recorded = await record({
          kind: "started",
          remote_task_id: sent.task.remote_task_id,
          remote_context_id: sent.task.remote_context_id,
          remote_status: sent.task.remote_status,
          delivery_mechanism: "polling",
        });
        this.noteStreaming(d.delegation_id, sent);
        // The answer already says where the peer's task stands: record it at once rather than after a first wait.
        if (recorded) await this.recordSeen(d.delegation_id, sent.task);
        return;
      }
      case "a2a_follow": {
        if (this.openStream(d.delegation_id)) return;
        const seen = await this.ports.peerGet(d.agent_card_ref!, d.remote_task_id!);
        if (!seen.ok) return void (await failed(`${seen.code}: ${seen.message}`, seen.retryable));
        this.noteStreaming(d.delegation_id, seen);
        await this.recordSeen(d.delegation_id, seen.task, "polling");
        return;
      }
      case "a2a_answer": {
        const sent = await this.ports.peerSend(d.agent_card_ref!, {
          message_id: work.message_id,
          text: work.text,
          task_id: d.remote_task_id!,
          ...(d.remote_context_id === null ? {} : { context_id: d.remote_context_id }),
          ...(work.remote_action_id === null ? {} : { action_id: work.remote_action_id }),
        });
        if (!sent.ok) return void (await failed(`${sent.code}: ${sent.message}`, sent.retryable));
        this.noteStreaming(d.delegation_id, sent);
        if (await record({ kind: "answered" })) await this.recordSeen(d.delegation_id, sent.task);
        return;
      }
      case "a2a_cancel": {
        if (d.remote_task_id === null) return void (await record({ kind: "cancel_acknowledged", remote_state: "not_created" }));
        const answer = await this.ports.peerCancel(d.agent_card_ref!, d.remote_task_id);
        if (!answer.ok) return void (await failed(`${answer.code}: ${answer.message}`, answer.retryable));
        if (await record({ kind: "cancel_acknowledged", remote_state: "cancelled" })) await this.recordSeen(d.delegation_id, answer.task);
        return;
      }
    }
  }

  /** Keeps what an answer says of the peer's streaming: a peer that streams is followed by its stream from now on. */
  private noteStreaming(delegationId: string, answer: PeerAnswer): void {
    if (!answer.ok) return;
    const known = this.streamable.get(delegationId);
    if (answer.streaming && answer.subscribe !== undefined) this.streamable.set(delegationId, { subscribe: answer.subscribe, at: known?.at ?? 0, failures: known?.failures ?? 0 });
    else this.streamable.delete(delegationId);
  }

  /**
   * Opens the delegation's stream when its peer streams, none is open and its backoff has passed; true when one was
   * opened (the follow's poll then waits). It is read in the background: the alarm does not wait for it.
   */
  private openStream(delegationId: string): boolean {
    const peer = this.streamable.get(delegationId);
    const now = Date.now();
    if (peer === undefined || peer.at > now || this.streams.has(delegationId)) return false;
    const stream = { reader: new AbortController(), until: now + STREAM_HOLD_MS };
    this.streams.set(delegationId, stream);
    void this.readStream(delegationId, peer, stream);
    return true;
  }

  /**
   * Reads one stream to its end, recording each view as streamed. A stream that ends with the terminal task has
   * recorded it; one that fails or ends early only brings polling back at once (its next poll records the switch)
   * and puts the next stream off: its failure is never the attempt's, and polling keeps its own try counting.
   */
  private async readStream(delegationId: string, peer: Streamable, stream: { reader: AbortController; until: number }): Promise<void> {
    let result: PeerAnswer;
    try {
      result = await peer.subscribe(async (task) => {
        try {
          await this.recordSeen(delegationId, task, "streaming");
        } catch (e) {
          reportIncident(e, "task object: recording a peer's streamed task");
        }
      }, stream.reader.signal);
    } catch (e) {
      result = { ok: false, code: "stream_ended", message: e instanceof Error ? e.message : String(e), retryable: true };
    }
    if (this.streams.get(delegationId) === stream) this.streams.delete(delegationId);
    if (stream.reader.signal.aborted) return;
    if (result.ok) {
      peer.failures = 0;
    } else {
      peer.failures += 1;
      peer.at = Date.now() + Math.min(STREAM_RETRY_MS * 2 ** (peer.failures - 1), STREAM_RETRY_MAX_MS);
      const last = this.followAt.get(delegationId);
      this.followAt.set(delegationId, { at: 0, wait: FOLLOW_MIN_MS, status: last?.status ?? null });
    }
    // Nothing else would start the poll now due (no commit, and the alarm may be minutes away): it commits, and
    // each commit sets the alarm for the next.
    this.refresh();
    await this.flush(Date.now());
  }

  /**
   * Records a peer's task as seen. A change is a fact; no change only paces the next read (doubling from
   * FOLLOW_MIN_MS up to FOLLOW_MAX_MS, so a slow peer costs few calls and a lively one is followed closely).
   * `mechanism` says how a follow read it (a stream or a poll), so a switch between them is recorded.
   */
  private async recordSeen(delegationId: string, task: PeerTaskSeen, mechanism?: Mechanism): Promise<void> {
    const previous = this.followAt.get(delegationId);
    const changed = previous === undefined || previous.status !== task.remote_status;
    const wait = changed ? FOLLOW_MIN_MS : Math.min(previous.wait * 2, FOLLOW_MAX_MS);
    this.followAt.set(delegationId, { at: Date.now() + wait, wait, status: task.remote_status });
    await this.commit({
      type: "record_delegation",
      delegation_id: delegationId,
      report: {
        kind: "remote_status",
        remote_status: task.remote_status,
        status_message: task.status_message,
        artifacts: task.artifacts,
        ...(mechanism === undefined ? {} : { delivery_mechanism: mechanism }),
        ...(task.remote_action_id === undefined ? {} : { remote_action_id: task.remote_action_id }),
      },
    });
  }

  /** A child's report to its parent: recorded delivered or parent_missing, or after DELIVERY_TRIES failed. */
  private async deliver(report: ChildReport): Promise<void> {
    const answer = await this.guarded(async () => ({ ok: true as const, value: await this.ports.deliver(report) }));
    if (answer.ok) {
      const detail = answer.value === "delivered" ? {} : { detail: `task ${report.parent_task_id} has no delegation ${report.delegation_id}` };
      await this.commit({ type: "record_delivery", delivery_state: answer.value, ...detail });
      return;
    }
    this.delivery.tries += 1;
    if (this.delivery.tries >= DELIVERY_TRIES) {
      await this.commit({ type: "record_delivery", delivery_state: "failed", detail: answer.error });
      return;
    }
    this.delivery.at = Date.now() + Math.min(DELIVERY_RETRY_MS * 2 ** (this.delivery.tries - 1), DELIVERY_RETRY_MAX_MS);
  }

  /** Runs a call to another object; a throw (the object unreachable, reset or overloaded) is a retryable failure. */
  private async guarded<T extends { ok: true }>(call: () => Promise<T | { ok: false; error: string; retryable: boolean }>): Promise<T | { ok: false; error: string; retryable: boolean }> {
    try {
      return await call();
    } catch (e) {
      return { ok: false, error: e instanceof Error ? e.message : String(e), retryable: true };
    }
  }
}
