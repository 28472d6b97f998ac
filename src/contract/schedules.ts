/**
 * @module Durable schedules on the wire: the body of POST /v1/sessions/{sid}/schedules (zod, for the route, the
 * catalog and the SDK's input type) and the schedule as every schedule route answers it (docs/api.md "Schedules").
 */
import { z } from "zod";
import { JsonObjectSchema, MAX_CATCHUP_WINDOW_MS, OVERLAP_POLICIES, type OverlapPolicy, SCHEDULE_ID_PATTERN } from "../core/index.js";
import { CreateTaskBody } from "./requests.js";

/**
 * The task each occurrence creates: a task create's body but its id and wal name (the occurrence's task id is both).
 * One input ref is kept for the occurrence's own `schedule_trigger`.
 */
export const ScheduleTaskTemplate = CreateTaskBody.omit({ task_id: true, wal_name: true }).extend({ input_refs: z.array(JsonObjectSchema).max(99).optional() });

/** The most days a schedule waits before archiving a finished occurrence's task (ten years). */
export const MAX_ARCHIVE_AFTER_DAYS = 3_650;

/** POST /v1/sessions/{sid}/schedules. */
export const CreateScheduleBody = z.strictObject({
  schedule_id: z.string().regex(SCHEDULE_ID_PATTERN, "must match ^[a-z0-9_-]{1,47}$"),
  /** 5 fields (minute hour day-of-month month day-of-week) or 6 (second first). */
  cron: z.string().min(1).max(256),
  /** IANA time zone the cron is read in (default UTC). */
  timezone: z.string().min(1).max(64).optional(),
  task: ScheduleTaskTemplate,
  /** What an occurrence does while the previous one's task is not terminal (default skip). */
  overlap: z.enum(OVERLAP_POLICIES).optional(),
  /** An occurrence missed while the runtime was down is still started when at most this late (default 60,000). */
  catchup_window_ms: z.number().int().min(0).max(MAX_CATCHUP_WINDOW_MS).optional(),
  start_at: z.iso.datetime({ offset: true }).optional(),
  end_at: z.iso.datetime({ offset: true }).optional(),
  /** Created paused: nothing runs until resumed. */
  paused: z.boolean().optional(),
  /** Archive each occurrence's task this many days after the schedule saw it end (absent: never). */
  archive_after_days: z.number().int().min(1).max(MAX_ARCHIVE_AFTER_DAYS).optional(),
});
export type CreateScheduleInput = z.input<typeof CreateScheduleBody>;
/** The body as the route parsed it (defaults filled in), as the schedule object takes it. */
export type CreateScheduleRequest = z.output<typeof CreateScheduleBody>;

/**
 * What became of an occurrence: `pending` (decided, its task not created yet), `running` (its task exists and is not
 * terminal), the task's end (`completed`, `failed`, `cancelled`), `skipped` (the overlap policy), `buffered`
 * (buffer_one: waits for the previous task's end), `create_failed` (the create was refused), `abandoned` (decided,
 * not created when the schedule was deleted).
 */
export type OccurrenceOutcome = "pending" | "running" | "completed" | "failed" | "cancelled" | "skipped" | "buffered" | "create_failed" | "abandoned";

/** One occurrence of a schedule. */
export interface ScheduleRun {
  readonly scheduled_at: string;
  readonly task_id: string;
  readonly outcome: OccurrenceOutcome;
  /** `cron`: its time fell; `manual`: POST .../trigger. */
  readonly trigger: "cron" | "manual";
}

/** A schedule as its routes answer it. */
export interface Schedule {
  readonly schedule_id: string;
  readonly session_id: string;
  readonly cron: string;
  readonly timezone: string;
  readonly overlap: OverlapPolicy;
  readonly catchup_window_ms: number;
  readonly start_at: string | null;
  readonly end_at: string | null;
  readonly paused: boolean;
  readonly task: Record<string, unknown>;
  /** Days after an occurrence's task ended that the schedule archives it (null: never). */
  readonly archive_after_days: number | null;
  readonly created_at: string;
  readonly created_by_agent_id: string;
  /** When the next occurrence falls (null: paused, or none left before end_at). */
  readonly next_run_at: string | null;
  /** The latest occurrences, newest first (at most 20; missed ones are counted in `missed`). */
  readonly recent_runs: ScheduleRun[];
  /** Occurrences missed while the runtime was down, later than the catch-up window (a paused schedule misses none). */
  readonly missed: number;
  /** Occurrences the overlap policy skipped. */
  readonly skipped: number;
}

/** GET /v1/sessions/{sid}/schedules. */
export interface ScheduleList {
  readonly schedules: Schedule[];
  readonly total: number;
}

/** POST .../schedules/{schedule_id}/trigger: the schedule, and the occurrence the trigger made. */
export interface TriggerAnswer {
  readonly schedule: Schedule;
  readonly run: ScheduleRun;
}
