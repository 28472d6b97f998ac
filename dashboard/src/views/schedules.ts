/**
 * @module The session's durable schedules: per schedule its id, cron and time zone, its next run (or paused), how
 * many occurrences were missed, and its latest runs with their task and outcome. Read again on every pulse of the
 * session stream (an occurrence creates a task, which the stream reports). Hidden when the session has none, and
 * never read by a worker (its token reads nothing session-wide).
 */
import { html } from "htm/preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import type { Schedule } from "../../../src/client/index.js";
import { canReadSchedules, hasTask, latestRuns, noNextRun, outcomeBadge, until, utcMinute } from "../model/schedule-model.js";
import { Coalescer } from "../model/session-model.js";
import { taskHref } from "../route.js";
import type { ViewProps } from "./view-props.js";

export function Schedules(props: ViewProps & { pulse: number }) {
  if (!canReadSchedules(props.viewer.role)) return null;
  return html`<${ScheduleList} ...${props} />`;
}

function ScheduleList({ viewer, client, pulse }: ViewProps & { pulse: number }) {
  const [schedules, setSchedules] = useState<Schedule[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [now, setNow] = useState(() => Date.now());
  const reader = useMemo(
    () =>
      new Coalescer(async () => {
        try {
          setSchedules((await client.listSchedules(viewer.sessionId)).schedules);
          setNow(Date.now());
          setError(null);
        } catch (e) {
          setError(e instanceof Error ? e.message : String(e));
        }
      }),
    [viewer.sessionId],
  );
  useEffect(() => reader.trigger(), [reader, pulse]);
  if (error === null && (schedules === null || schedules.length === 0)) return null;
  return html`<section class="schedules" aria-label="Schedules">
    <h2>Schedules <span class="count-pill">${schedules?.length ?? "…"}</span></h2>
    ${error === null ? null : html`<p class="form-error" role="alert">Could not read the schedules: ${error}</p>`}
    ${schedules === null || schedules.length === 0
      ? null
      : html`<table class="task-table schedule-table">
          <thead><tr><th scope="col">Schedule</th><th scope="col">Next run</th><th scope="col">Missed</th><th scope="col">Latest runs</th></tr></thead>
          <tbody>${schedules.map((s) => html`<${ScheduleRow} key=${s.schedule_id} schedule=${s} now=${now} />`)}</tbody>
        </table>`}
  </section>`;
}

function ScheduleRow({ schedule, now }: { schedule: Schedule; now: number }) {
  const instead = noNextRun(schedule);
  const runs = latestRuns(schedule);
  return html`<tr data-schedule-id=${schedule.schedule_id} data-paused=${String(schedule.paused)}>
    <td data-label="Schedule"><code>${schedule.schedule_id}</code> <div class="cron"><code>${schedule.cron}</code> <span class="muted small">${schedule.timezone}</span></div></td>
    <td data-label="Next run" data-next-run>
      ${instead !== null
        ? html`<span class="muted">${instead}</span>`
        : html`<time datetime=${schedule.next_run_at} title=${schedule.next_run_at}>${utcMinute(schedule.next_run_at!)}</time> <span class="muted small">${until(schedule.next_run_at!, now)}</span>`}
    </td>
    <td data-label="Missed" data-missed=${schedule.missed}>${schedule.missed}</td>
    <td data-label="Latest runs">
      ${runs.length === 0
        ? html`<span class="muted small">none yet</span>`
        : html`<ul class="plain schedule-runs">
            ${runs.map(
              (r) => html`<li key=${r.task_id} data-run-task-id=${r.task_id} data-outcome=${r.outcome}>
                <time datetime=${r.scheduled_at} title=${r.scheduled_at}>${utcMinute(r.scheduled_at)}</time>
                ${hasTask(r) ? html`<a href=${taskHref(r.task_id)}>${r.task_id}</a>` : html`<code class="id">${r.task_id}</code>`}
                <span class="badge" data-status=${outcomeBadge(r.outcome)}>${r.outcome.replace(/_/g, " ")}</span>
                ${r.trigger === "manual" ? html`<span class="muted small">manual</span>` : null}
              </li>`,
            )}
          </ul>`}
    </td>
  </tr>`;
}
