/**
 * @module ScheduleObject: one per durable schedule, named `<session_id>/<schedule_id>` (docs/design.md
 * "ScheduleObject"). Its alarm is the schedule's clock. Each pass (one at a time) reads the tasks of its running
 * occurrences (their end), decides the occurrences that fell (started, skipped, buffered or missed: the core's rules)
 * and writes those decisions with the cursor in one transaction, then creates the tasks owed (the outbox), and records
 * what each create found. A task's id derives from its occurrence, so a create retried after a crash finds the task
 * it made (task_id_conflict, and the task carries this occurrence's schedule_trigger ref) and makes no second one.
 */
import { DurableObject } from "cloudflare:workers";
import type { CreateScheduleRequest, Schedule, TriggerAnswer } from "../../src/contract/index.js";
import {
  type Actor,
  DEFAULT_CATCHUP_WINDOW_MS,
  nextOccurrence,
  occurrenceTaskId,
  overlapDecision,
  runtimeError,
  scanDue,
  scheduleEvent,
  type ScheduleFact,
} from "../../src/core/index.js";
import { ulidFactory } from "../../src/lib/ids.js";
import { type Env, readConfig } from "../shared/env.js";
import { err, ok, type RpcResult } from "../shared/rpc-result.js";
import { SseHub, type SubscriberHolder } from "../shared/sse-hub.js";
import { sameRequest } from "../task/storage/idempotency-store.js";
import { DAY_MS, OccurrenceOutbox } from "./occurrence-outbox.js";
import { type OccurrencePorts, taskObjectPorts } from "./occurrence-ports.js";
import type { ScheduleRpc } from "./schedule-rpc.js";
import { itemFact, runOf, type ScheduleRecord, type ScheduleRow, ScheduleStore, timingOf } from "./schedule-store.js";

/** Log rows read per page while a stream catches up. */
const STREAM_PAGE = 200;
/** Scans of due occurrences (each at most MAX_OCCURRENCES_PER_PASS of them) one alarm makes before it comes back. */
const MAX_SCANS_PER_PASS = 10;

/** One durable schedule. */
export class ScheduleObject extends DurableObject<Env> implements ScheduleRpc {
  private readonly store = new ScheduleStore(this.ctx.storage.sql);
  private readonly hub: SseHub;
  private readonly ulid = ulidFactory();
  private readonly pollMs: number;
  /** Every mutation runs after the one before has settled: a pass awaits task objects, and a trigger must not interleave. */
  private queue: Promise<unknown> = Promise.resolve();
  /** The time (a field: the tests move it to drive occurrences without waiting for them). */
  clock: () => number = () => Date.now();
  /** The task objects (a field: the fault tests fail a call once). */
  ports: OccurrencePorts;
  private readonly outbox: OccurrenceOutbox;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const config = readConfig(env);
    this.hub = new SseHub(config.sse);
    this.pollMs = config.schedulePollMs;
    this.ports = taskObjectPorts(env);
    this.outbox = new OccurrenceOutbox(this.store, () => this.ports, (work, record) => this.publish(this.write(work, record)), () => this.clock(), config.schedulePollMs);
    void ctx.blockConcurrencyWhile(async () => this.store.createTables());
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** The live schedule row, or not_found. */
  private live(): RpcResult<ScheduleRow> {
    const row = this.store.schedule();
    return row === null || row.deleted ? err(runtimeError("not_found", "no such schedule")) : ok(row);
  }

  async create(actor: Actor, sessionId: string, body: CreateScheduleRequest, idem: { key: string; hash: string } | null): Promise<RpcResult<{ schedule: Schedule; created: boolean }>> {
    return this.serial(async () => {
      const existing = this.store.schedule();
      if (existing !== null) return this.createAgain(existing, idem);
      const listed = (await this.env.SESSIONS.get(this.env.SESSIONS.idFromName(sessionId)).addSchedule(body.schedule_id)) as RpcResult<null>;
      if (!listed.ok) return listed;
      const now = this.clock();
      const record: ScheduleRecord = {
        schedule_id: body.schedule_id,
        session_id: sessionId,
        cron: body.cron.trim().split(/\s+/).join(" "),
        timezone: body.timezone ?? "UTC",
        overlap: body.overlap ?? "skip",
        catchup_window_ms: body.catchup_window_ms ?? DEFAULT_CATCHUP_WINDOW_MS,
        start_at: body.start_at === undefined ? null : new Date(body.start_at).toISOString(),
        end_at: body.end_at === undefined ? null : new Date(body.end_at).toISOString(),
        task: body.task as Record<string, unknown>,
        archive_after_days: body.archive_after_days ?? null,
        created_at: new Date(now).toISOString(),
        created_by_agent_id: actor.agent_id,
      };
      const published = this.write(() => {
        this.store.insertSchedule(record, body.paused === true, now, idem);
        return [{ type: "job.created", status: body.paused === true ? "paused" : "active", payload: { schedule: this.store.view(this.store.schedule()!) } }];
      }, record);
      this.publish(published);
      await this.arm();
      return ok({ schedule: this.store.view(this.store.schedule()!), created: true });
    });
  }

  /** A create of an id already used: the first answer again for its Idempotency-Key, else schedule_conflict. */
  private createAgain(existing: ScheduleRow, idem: { key: string; hash: string } | null): RpcResult<{ schedule: Schedule; created: boolean }> {
    if (idem !== null && existing.create_key === idem.key) {
      if (!sameRequest(existing.create_hash ?? "", idem.hash)) return err(runtimeError("idempotency_conflict", "this Idempotency-Key created a schedule with a different request", { key: idem.key }));
      if (!existing.deleted) return ok({ schedule: this.store.view(existing), created: false });
    }
    return err(runtimeError("schedule_conflict", `schedule ${existing.record.schedule_id} ${existing.deleted ? "was deleted; a schedule id is used once per session" : "already exists in this session"}`, { schedule_id: existing.record.schedule_id }));
  }

  async get(): Promise<RpcResult<Schedule>> {
    const row = this.live();
    return row.ok ? ok(this.store.view(row.value)) : row;
  }

  async pause(): Promise<RpcResult<Schedule>> {
    return this.serial(async () => {
      const row = this.live();
      if (!row.ok) return row;
      // What fell before the pause is decided first: a pause loses nothing already due.
      if (!row.value.paused) {
        await this.pass();
        this.publish(this.write(() => (this.store.setPaused(true, this.store.schedule()!.cursor_ms), [{ type: "job.progress", phase: "paused", status: "paused", payload: {} }]), row.value.record));
        await this.arm();
      }
      return ok(this.store.view(this.store.schedule()!));
    });
  }

  async resume(): Promise<RpcResult<Schedule>> {
    return this.serial(async () => {
      const row = this.live();
      if (!row.ok) return row;
      if (row.value.paused) {
        // Occurrences that fell while paused are neither started nor missed: the cursor moves to now.
        const now = this.clock();
        this.publish(this.write(() => (this.store.setPaused(false, Math.max(row.value.cursor_ms, now)), [{ type: "job.progress", phase: "resumed", status: "active", payload: {} }]), row.value.record));
        await this.arm();
      }
      return ok(this.store.view(this.store.schedule()!));
    });
  }

  async trigger(): Promise<RpcResult<TriggerAnswer>> {
    return this.serial(async () => {
      const row = this.live();
      if (!row.ok) return row;
      await this.outbox.observeEnds(row.value.record);
      // Whole seconds, as cron occurrences: a second trigger within the same second is that same occurrence.
      const at = Math.floor(this.clock() / 1000) * 1000;
      if (this.store.occurrence(at) === null) this.publish(this.write(() => this.decide(row.value.record, at, "manual"), row.value.record));
      await this.outbox.perform(row.value.record);
      await this.arm();
      return ok({ schedule: this.store.view(this.store.schedule()!), run: runOf(this.store.occurrence(at)!) });
    });
  }

  async remove(): Promise<RpcResult<Schedule>> {
    return this.serial(async () => {
      const row = this.live();
      if (!row.ok) return row;
      const record = row.value.record;
      // Tasks already owed are created first (a decided occurrence has its task); tasks that run are left alone.
      await this.outbox.perform(record);
      const running = this.store.inState("created").map((o) => o.task_id);
      this.publish(
        this.write(() => {
          for (const o of [...this.store.inState("decided"), ...this.store.inState("buffered")]) this.store.setState(o.at_ms, "abandoned");
          this.store.setDeleted();
          return [{ type: "job.cancelled", status: "cancelled", payload: { running_task_ids: running } }];
        }, record),
      );
      this.hub.end(() => deletedFrame());
      await this.ctx.storage.deleteAlarm();
      await this.env.SESSIONS.get(this.env.SESSIONS.idFromName(record.session_id)).removeSchedule(record.schedule_id);
      return ok(this.store.view(this.store.schedule()!));
    });
  }

  async streamEvents(afterSeq: number, holder: SubscriberHolder): Promise<RpcResult<ReadableStream<Uint8Array>>> {
    if (this.store.schedule() === null) return err(runtimeError("not_found", "no such schedule"));
    if (afterSeq > this.store.lastEventSeq) {
      return err(runtimeError("validation_error", `the resume point ${afterSeq} is after the end of the schedule's event log`, { after_seq: afterSeq, last_seq: this.store.lastEventSeq }));
    }
    let cursor = afterSeq;
    return this.hub.admit(() => {
      const rows = this.store.eventsAfter(cursor, STREAM_PAGE);
      let frames = "";
      for (const r of rows) frames += eventFrame(r.seq, r.data);
      if (rows.length > 0) cursor = rows[rows.length - 1]!.seq;
      if (cursor < this.store.lastEventSeq) return { frames, next: "more" };
      // A deleted schedule's stream ends after its last event (job.cancelled).
      return this.store.schedule()!.deleted ? { frames: frames + deletedFrame(), next: "close" } : { frames, next: "live" };
    }, holder);
  }

  async dropSubscriber(id: string): Promise<void> {
    this.hub.dropById(id);
  }

  override async alarm(): Promise<void> {
    await this.serial(async () => {
      try {
        await this.pass();
      } finally {
        await this.arm();
      }
    });
  }

  /** One pass: the ends of running occurrences, the occurrences due now (decided in one transaction), the tasks owed. */
  private async pass(): Promise<void> {
    let row = this.store.schedule();
    if (row === null || row.deleted) return;
    const record = row.record;
    await this.outbox.observeEnds(record);
    await this.outbox.archiveEnded(record);
    // A bounded pass: what is left (a long stop of a frequent cron) is due at once, so the alarm comes back for it.
    for (let scans = 0; scans < MAX_SCANS_PER_PASS; scans++) {
      row = this.store.schedule()!;
      if (row.paused) break;
      const now = this.clock();
      const scan = scanDue(timingOf(record), row.cursor_ms, now, record.catchup_window_ms);
      if (scan.start.length === 0 && scan.missed.count === 0 && scan.cursor === row.cursor_ms) break;
      this.publish(
        this.write(() => {
          const facts: ScheduleFact[] = [];
          for (const at of scan.start) facts.push(...this.decide(record, at, "cron"));
          // decide() counted its skips; the cursor and the misses move here, with the decisions.
          this.store.advance(scan.cursor, scan.missed.count, 0);
          this.store.prune(record.archive_after_days != null);
          if (scan.missed.count > 0) {
            facts.push({
              type: "job.progress",
              phase: "missed",
              payload: {
                missed: scan.missed.count,
                at_least: scan.missed.at_least,
                first_scheduled_at: new Date(scan.missed.first_at!).toISOString(),
                last_scheduled_at: scan.missed.last_at === null ? null : new Date(scan.missed.last_at).toISOString(),
                catchup_window_ms: record.catchup_window_ms,
              },
            });
          }
          return facts;
        }, record),
      );
      if (!scan.more) break;
    }
    await this.outbox.perform(record);
  }

  /**
   * Decides one occurrence (inside a write): its row and its facts. The overlap policy judges it against the latest
   * occurrence that started, whose task's end the pass read just before.
   */
  private decide(record: ScheduleRecord, at: number, trigger: "cron" | "manual"): ScheduleFact[] {
    const taskId = occurrenceTaskId(record.schedule_id, at);
    const previous = this.store.previousStarted();
    const previousState = previous === null ? "none" : previous.state === "ended" ? "terminal" : "active";
    const decision = overlapDecision(record.overlap, previousState, this.store.inState("buffered").length > 0);
    const row = { at_ms: at, task_id: taskId, trigger };
    const now = this.clock();
    switch (decision) {
      case "start":
        this.store.insertOccurrence({ ...row, state: "decided", cancel_task_id: null }, now);
        return [];
      case "cancel_previous":
        this.store.insertOccurrence({ ...row, state: "decided", cancel_task_id: previous!.task_id }, now);
        return [];
      case "buffer":
        this.store.insertOccurrence({ ...row, state: "buffered", cancel_task_id: null }, now);
        return [itemFact("job.progress", row, { phase: "buffered", payload: { previous_task_id: previous!.task_id } })];
      case "skip":
        this.store.insertOccurrence({ ...row, state: "skipped", cancel_task_id: null }, now);
        this.store.advance(this.store.schedule()!.cursor_ms, 0, 1);
        return [itemFact("job.progress", row, { phase: "skipped", payload: { previous_task_id: previous!.task_id, overlap: record.overlap } })];
    }
  }

  /**
   * Runs `work` and appends the facts it returns as events, in one transaction: a decision and its events are stored
   * together or not at all. Answers the frames to publish once the transaction returned.
   */
  private write(work: () => ScheduleFact[], record: ScheduleRecord): string[] {
    const { frames, last } = this.ctx.storage.transactionSync(() => {
      const facts = work();
      const out: string[] = [];
      const timestamp = new Date(this.clock()).toISOString();
      let seq = this.store.lastEventSeq;
      for (const fact of facts) {
        seq += 1;
        const data = JSON.stringify(scheduleEvent(fact, { eventId: this.ulid(), timestamp, sequence: seq, sessionId: record.session_id, scheduleId: record.schedule_id }));
        this.store.appendEvent(seq, data);
        out.push(eventFrame(seq, data));
      }
      return { frames: out, last: seq };
    });
    // Memory follows storage only once the transaction committed.
    this.store.lastEventSeq = last;
    return frames;
  }

  private publish(frames: readonly string[]): void {
    for (const frame of frames) this.hub.publish(frame);
  }

  /**
   * Sets the alarm for what comes next: the next occurrence (not while paused), the next read of a running task, the
   * next try of a create owed. Never for a time already past: at least a millisecond ahead (an alarm set during its run
   * for the time it runs at is taken as no change).
   */
  private async arm(): Promise<void> {
    const row = this.store.schedule();
    if (row === null || row.deleted) return void (await this.ctx.storage.deleteAlarm());
    const now = this.clock();
    const times: number[] = [];
    if (!row.paused) {
      const next = nextOccurrence(timingOf(row.record), row.cursor_ms);
      if (next !== null) times.push(next);
    }
    if (this.store.inState("created").length > 0) times.push(now + this.pollMs);
    for (const o of this.store.inState("decided")) times.push(o.retry_at_ms);
    // The next finished occurrence to archive; one whose archive failed is tried again a poll later, not in a loop.
    const endedAt = row.record.archive_after_days == null ? null : this.store.oldestEndedUnarchived();
    if (endedAt !== null) times.push(Math.max(endedAt + row.record.archive_after_days! * DAY_MS, now + this.pollMs));
    if (times.length === 0) return void (await this.ctx.storage.deleteAlarm());
    await this.ctx.storage.setAlarm(Math.max(Math.min(...times), now + 1));
  }
}


/** A frame of the schedule's stream: one event row, its data as stored. */
function eventFrame(seq: number, data: string): string {
  const type = (JSON.parse(data) as { type: string }).type;
  return `id: ${seq}\nevent: ${type}\ndata: ${data}\n\n`;
}

/** The last frame of a deleted schedule's stream: nothing follows. No id (it is no event). */
function deletedFrame(): string {
  return `event: end\ndata: ${JSON.stringify({ reason: "schedule_deleted" })}\n\n`;
}
