/**
 * @module A schedule's runtime events, in the Agent Runtime envelope (the `job.*` family of its event schema, vendored
 * in test/fixtures/agentruntime-schemas/): the schedule is the job (`jobId` its schedule_id), each occurrence an item
 * (`jobItemId` and `taskId` its task id). Pure: the object stamps the id, time and sequence.
 *
 * | fact                                   | runtime event                                        |
 * |----------------------------------------|------------------------------------------------------|
 * | schedule created                       | job.created (payload: the schedule)                   |
 * | occurrence's task created              | job.item.started                                     |
 * | occurrence's task completed            | job.item.completed                                   |
 * | task failed or cancelled; create refused | job.item.failed (status failed, cancelled or create_failed) |
 * | occurrence skipped, buffered; occurrences missed; paused, resumed | job.progress (phase skipped, buffered, missed, paused, resumed) |
 * | schedule deleted                       | job.cancelled                                        |
 */
import { RUNTIME_EVENT_SCHEMA_VERSION } from "../events/event-types.js";

export const SCHEDULE_EVENT_TYPES = ["job.created", "job.item.started", "job.item.completed", "job.item.failed", "job.progress", "job.cancelled"] as const;
export type ScheduleEventType = (typeof SCHEDULE_EVENT_TYPES)[number];

/** A schedule's runtime event as its stream sends it. */
export interface ScheduleEvent {
  readonly type: ScheduleEventType;
  readonly eventId: string;
  readonly timestamp: string;
  readonly sequence: number;
  readonly schemaVersion: string;
  readonly sessionId: string;
  readonly jobId: string;
  readonly jobItemId?: string;
  readonly taskId?: string;
  readonly status?: string;
  readonly phase?: string;
  readonly payload: Record<string, unknown>;
}

/** What a fact says; the object adds the stamp. */
export interface ScheduleFact {
  readonly type: ScheduleEventType;
  /** The occurrence's task, for an item event or a skipped or buffered occurrence. */
  readonly taskId?: string;
  readonly status?: string;
  readonly phase?: string;
  readonly payload: Record<string, unknown>;
}

/** The stamp of one event: its id, time and place in the schedule's stream. */
export interface EventStamp {
  readonly eventId: string;
  readonly timestamp: string;
  readonly sequence: number;
  readonly sessionId: string;
  readonly scheduleId: string;
}

/** A fact as a runtime event. */
export function scheduleEvent(fact: ScheduleFact, stamp: EventStamp): ScheduleEvent {
  return {
    type: fact.type,
    eventId: stamp.eventId,
    timestamp: stamp.timestamp,
    sequence: stamp.sequence,
    schemaVersion: RUNTIME_EVENT_SCHEMA_VERSION,
    sessionId: stamp.sessionId,
    jobId: stamp.scheduleId,
    ...(fact.taskId === undefined ? {} : { jobItemId: fact.taskId, taskId: fact.taskId }),
    ...(fact.status === undefined ? {} : { status: fact.status }),
    ...(fact.phase === undefined ? {} : { phase: fact.phase }),
    payload: fact.payload,
  };
}
