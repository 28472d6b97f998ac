/**
 * @module A schedule's occurrences after their decision (docs/design.md "ScheduleObject"): the outbox that creates each
 * owed task (cancelling the previous one first for cancel_previous) and records what the create found, and the reads
 * of running occurrences' tasks that learn their end; with `archive_after_days`, the archive of each ended one's task
 * that many days after its end. A create retried after a crash finds the task it made by its
 * derived id and its schedule_trigger ref: one task per occurrence.
 */
import { type Actor, holdsTrigger, occurrenceTaskBody, type ScheduleFact, scheduleTriggerRef } from "../../src/core/index.js";
import { reportIncident } from "../shared/incident.js";
import type { OccurrencePorts } from "./occurrence-ports.js";
import { itemFact, type OccurrenceRow, type ScheduleRecord, type ScheduleStore } from "./schedule-store.js";

/** A day, for archive_after_days. */
export const DAY_MS = 86_400_000;
/** Creates (and archives) one pass makes at most; the rest stay owed, and the alarm comes back for them at once. */
const MAX_CREATES_PER_PASS = 100;
/** A failed create or cancel is tried again after the poll interval, doubling up to this. */
const RETRY_MAX_MS = 60_000;
/** Answers of a cancel that a later try cannot change. */
const FINAL_CANCEL_CODES = new Set(["task_terminal", "not_found", "invalid_transition"]);
/** Answers of a create that a later try may change. */
const RETRYABLE_CODES = new Set(["storage_error", "rate_limited", "internal_error"]);

/** Writes facts with the state change `work` makes, in one transaction, and publishes their events. */
export type CommitFacts = (work: () => ScheduleFact[], record: ScheduleRecord) => void;

/** The occurrences of one schedule object, from their decision to their task's end. */
export class OccurrenceOutbox {
  constructor(
    private readonly store: ScheduleStore,
    /** The object's ports, read at each call (the fault tests replace them). */
    private readonly ports: () => OccurrencePorts,
    private readonly commit: CommitFacts,
    private readonly clock: () => number,
    private readonly pollMs: number,
  ) {}

  /** Reads the task of every running occurrence: an ended one is recorded, and a buffered occurrence may then start. */
  async observeEnds(record: ScheduleRecord): Promise<void> {
    for (const o of this.store.inState("created")) {
      let entry;
      try {
        entry = await this.ports().taskEntry(record.session_id, o.task_id);
      } catch (e) {
        reportIncident(e, "schedule object: reading an occurrence's task");
        continue;
      }
      if (!entry.ok || entry.value === null || !entry.value.terminal) continue;
      const status = entry.value.native_status;
      this.commit(() => {
        this.store.setState(o.at_ms, "ended", status, this.clock());
        return [itemFact(status === "completed" ? "job.item.completed" : "job.item.failed", o, { status })];
      }, record);
    }
    const previous = this.store.previousStarted();
    const buffered = this.store.inState("buffered")[0];
    if (buffered !== undefined && (previous === null || previous.state === "ended")) this.commit(() => (this.store.setState(buffered.at_ms, "decided"), []), record);
  }

  /**
   * With `archive_after_days`: each occurrence whose task ended that long ago has it archived (it leaves the task
   * list; with RETENTION_DAYS its storage goes later). A task already gone (not_found, its retention past) counts as
   * archived; any other refusal is left for a later alarm.
   */
  async archiveEnded(record: ScheduleRecord): Promise<void> {
    if (record.archive_after_days == null) return;
    const actor: Actor = { role: "orchestrator", session_id: record.session_id, agent_id: record.created_by_agent_id, run_id: null };
    for (const o of this.store.endedToArchive(this.clock() - record.archive_after_days * DAY_MS, MAX_CREATES_PER_PASS)) {
      try {
        const archived = await this.ports().archiveTask(actor, o.task_id);
        if (archived.ok || archived.error.code === "not_found") this.store.markArchived(o.at_ms);
      } catch (e) {
        reportIncident(e, "schedule object: archiving an occurrence's task");
      }
    }
  }

  /** The outbox: every occurrence owed a task whose retry time has come, oldest first, gets it (or why not). */
  async perform(record: ScheduleRecord): Promise<void> {
    const actor: Actor = { role: "orchestrator", session_id: record.session_id, agent_id: record.created_by_agent_id, run_id: null };
    for (const o of this.store.inState("decided").slice(0, MAX_CREATES_PER_PASS)) {
      if (o.retry_at_ms > this.clock()) continue;
      try {
        await this.createOccurrence(record, actor, o);
      } catch (e) {
        reportIncident(e, "schedule object: creating an occurrence's task");
        this.retry(o, e instanceof Error ? e.message : String(e));
      }
    }
  }

  private async createOccurrence(record: ScheduleRecord, actor: Actor, o: OccurrenceRow): Promise<void> {
    if (o.cancel_task_id !== null) {
      const cancelled = await this.ports().cancelTask(actor, o.cancel_task_id, `schedule ${record.schedule_id}: the occurrence of ${new Date(o.at_ms).toISOString()} replaces it (cancel_previous)`);
      if (!cancelled.ok && !FINAL_CANCEL_CODES.has(cancelled.error.code)) return this.retry(o, `${cancelled.error.code}: ${cancelled.error.message}`);
      this.store.cancelled(o.at_ms);
    }
    const ref = scheduleTriggerRef(record.schedule_id, o.at_ms);
    const created = await this.ports().createTask(actor, occurrenceTaskBody(record.task, record.schedule_id, o.at_ms));
    if (created.ok) return this.started(record, o);
    const { code, message } = created.error;
    if (code === "task_id_conflict") {
      // An earlier try created it (its answer lost to a crash), or another task took the id: its input refs tell.
      const refs = await this.ports().taskInputRefs(actor, o.task_id);
      if (!refs.ok) return this.retry(o, `${refs.error.code}: ${refs.error.message}`);
      if (refs.value !== null && holdsTrigger(refs.value, ref)) return this.started(record, o);
      if (refs.value === null) return this.retry(o, "the task id is reserved but no task holds it yet");
    }
    if (RETRYABLE_CODES.has(code)) return this.retry(o, `${code}: ${message}`);
    this.commit(() => {
      this.store.setState(o.at_ms, "create_failed", code);
      return [itemFact("job.item.failed", o, { status: "create_failed", payload: { error: { code, message } } })];
    }, record);
  }

  private started(record: ScheduleRecord, o: OccurrenceRow): void {
    this.commit(() => {
      this.store.markCreated(o.at_ms);
      return [itemFact("job.item.started", o, { status: "running" })];
    }, record);
  }

  private retry(o: OccurrenceRow, error: string): void {
    const wait = Math.min(this.pollMs * 2 ** o.tries, RETRY_MAX_MS);
    this.store.retryLater(o.at_ms, this.clock() + wait, error);
  }

}
