/** @module The session view's schedules panel: who may read schedules, each one's next run, its latest runs and their outcome. */
import type { OccurrenceOutcome, Schedule, ScheduleRun } from "../../../src/client/index.js";

/** Runs shown per schedule (the API keeps the 20 latest). */
export const SHOWN_RUNS = 3;

/** Every session role reads schedules but a worker, whose token is scoped to its one task (403 on the route). */
export function canReadSchedules(role: string): boolean {
  return role !== "worker";
}

/** The latest runs, newest first, as many as the panel shows. */
export function latestRuns(schedule: Schedule, count = SHOWN_RUNS): ScheduleRun[] {
  return schedule.recent_runs.slice(0, count);
}

/** What the panel says instead of a next run time: paused, or none left (its end_at passed). Null when one is due. */
export function noNextRun(schedule: Schedule): string | null {
  if (schedule.paused) return "paused";
  return schedule.next_run_at === null ? "no run left" : null;
}

/** Outcomes whose occurrence made its task (a link to it); the others never created one, or not yet. */
const WITH_TASK: ReadonlySet<OccurrenceOutcome> = new Set(["running", "completed", "failed", "cancelled"]);

export function hasTask(run: ScheduleRun): boolean {
  return WITH_TASK.has(run.outcome);
}

/** The task status badge colour that fits an outcome (the text names the outcome itself). */
const OUTCOME_BADGE: Record<OccurrenceOutcome, string> = {
  pending: "queued",
  running: "running",
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled",
  skipped: "stale",
  buffered: "paused",
  create_failed: "failed",
  abandoned: "cancelled",
};

export function outcomeBadge(outcome: OccurrenceOutcome): string {
  return OUTCOME_BADGE[outcome];
}

/** A time as `2027-01-01 00:00 UTC` (the exact instant goes in the element's datetime and title). */
export function utcMinute(iso: string): string {
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) return iso;
  return `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/** How far ahead a time is: `in 5 min`, `in 3 h`, `in 26 d` (`now` once it has passed). */
export function until(iso: string, now: number): string {
  const ms = Date.parse(iso) - now;
  if (!Number.isFinite(ms)) return iso;
  const s = Math.round(ms / 1000);
  if (s <= 0) return "now";
  if (s < 60) return `in ${s} s`;
  const m = Math.round(s / 60);
  if (m < 60) return `in ${m} min`;
  const h = Math.round(m / 60);
  if (h < 48) return `in ${h} h`;
  return `in ${Math.round(h / 24)} d`;
}
