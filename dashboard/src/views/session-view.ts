/**
 * @module The session view: the session's counts (its snapshot's task_summary), the inbox of open actions, its
 * durable schedules, its webhooks' failed deliveries, and its tasks with filters, all live from the session's event stream: each `snapshot.updated`
 * reads them again, coalesced (one read in flight, one queued), so a burst of changes costs two reads, not one per
 * change. While
 * terminal tasks are hidden the list says how many, with a button that shows them; a session whose tasks have all
 * ended shows its most recently ended ones rather than an empty list.
 */
import { html } from "htm/preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import type { ListedTask } from "../../../src/client/index.js";
import { STEP_STATUS_MAP, type NormalizedStatus } from "../../../src/core/browser.js";
import {
  ago,
  ANY_STATUS,
  Coalescer,
  COUNT_NAMES,
  countsOfSnapshot,
  DEFAULT_FILTER,
  hiddenTerminal,
  type ListRemedy,
  listStatus,
  parentOf,
  RECENTLY_ENDED,
  recentlyEnded,
  recentlyEndedCaption,
  remedyLabel,
  type SessionCounts,
  statusCounts,
  stepSummary,
  TASK_STATUS_ORDER,
  type TaskFilter,
  type TaskSort,
  visibleTasks,
} from "../model/session-model.js";
import { taskHref } from "../route.js";
import type { ViewProps } from "./view-props.js";
import { Inbox } from "./inbox.js";
import { Schedules } from "./schedules.js";
import { FailedDeliveriesPanel } from "./deliveries.js";

/** Most tasks read per request (the API's largest page), and in all (the list says when there are more). */
const TASK_PAGE = 500;
const MAX_TASKS = 2_000;

/** A glyph per status, so no status is told by colour alone (the text names it too). */
const GLYPH: Partial<Record<NormalizedStatus, string>> = {
  queued: "○", preparing: "◔", running: "▶", waiting_input: "✎", waiting_permission: "?", blocked: "■", paused: "‖",
  retrying: "↻", cancelling: "⊘", cancelled: "⊘", completed: "✓", failed: "✕", timed_out: "⌛", lost: "!", stale: "~",
};

/** Where the session stream is. */
type Live = "connecting" | "live" | "stopped";

/** The badge of a normalized status, the native one in its title (hover) and for screen readers. */
export function StatusBadge({ status, native }: { status: string; native: string }) {
  return html`<span class="badge" data-status=${status} title=${`native status: ${native}`}>
    <span aria-hidden="true" class="glyph">${GLYPH[status as NormalizedStatus] ?? "·"}</span> ${status.replace(/_/g, " ")}<span class="sr-only"> (native: ${native})</span>
  </span>`;
}

/**
 * The tasks read with one terminal choice: the list, and the most recently ended tasks when the list is empty and
 * hides them.
 */
interface TaskRows {
  readonly includeTerminal: boolean;
  readonly tasks: ListedTask[];
  readonly total: number;
  readonly ended: ListedTask[];
}

async function readTasks(props: ViewProps, includeTerminal: boolean): Promise<{ tasks: ListedTask[]; total: number }> {
  const tasks: ListedTask[] = [];
  let total = 0;
  for (let offset: number | null = 0; offset !== null && tasks.length < MAX_TASKS; ) {
    const page = await props.client.listTasks(props.viewer.sessionId, { include_terminal: includeTerminal, limit: TASK_PAGE, offset });
    tasks.push(...page.tasks);
    total = page.total;
    offset = page.next_offset;
  }
  return { tasks, total };
}

export function SessionView(props: ViewProps) {
  const { viewer, client } = props;
  const [filter, setFilter] = useState<TaskFilter>(DEFAULT_FILTER);
  const [rows, setRows] = useState<TaskRows | null>(null);
  const [counts, setCounts] = useState<SessionCounts | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [pulse, setPulse] = useState(0);
  const [live, setLive] = useState<Live>("connecting");
  const [now, setNow] = useState(() => Date.now());

  // The reader sees the filter's current terminal choice through a ref-like holder (the coalescer outlives renders).
  const wanted = useMemo(() => ({ includeTerminal: filter.includeTerminal }), []);
  wanted.includeTerminal = filter.includeTerminal;
  const reader = useMemo(
    () =>
      new Coalescer(async () => {
        try {
          const includeTerminal = wanted.includeTerminal;
          const [snapshot, list] = await Promise.all([client.getSession(viewer.sessionId), readTasks(props, includeTerminal)]);
          // Nothing live to list but ended tasks hidden: the list with terminal tasks starts with the newest of them.
          const ended =
            !includeTerminal && list.tasks.length === 0 && snapshot.task_summary.terminal > 0
              ? recentlyEnded((await client.listTasks(viewer.sessionId, { include_terminal: true, limit: RECENTLY_ENDED })).tasks)
              : [];
          setCounts(countsOfSnapshot(snapshot));
          setRows({ includeTerminal, ...list, ended });
          setNow(Date.now());
          setError(null);
        } catch (e) {
          setError(e instanceof Error ? e.message : String(e));
        }
      }),
    [viewer.sessionId],
  );

  useEffect(() => {
    const abort = new AbortController();
    reader.trigger();
    void (async () => {
      try {
        const stream = client.subscribeSession(viewer.sessionId, { signal: abort.signal });
        setLive("live");
        for await (const _event of stream) {
          reader.trigger();
          setPulse((p) => p + 1);
        }
      } catch {
        // The stream gave up reconnecting (or the page left): the view says so.
      }
      if (!abort.signal.aborted) setLive("stopped");
    })();
    return () => abort.abort();
  }, [viewer.sessionId]);

  useEffect(() => reader.trigger(), [filter.includeTerminal]);

  const tasks = rows?.tasks ?? [];
  const byId = useMemo(() => new Map([...tasks, ...(rows?.ended ?? [])].map((t) => [t.task_id, t])), [rows]);
  const shown = useMemo(() => visibleTasks(tasks, filter), [rows, filter]);
  const perStatus = useMemo(() => statusCounts(tasks, filter.includeTerminal), [rows, filter.includeTerminal]);
  const hidden = hiddenTerminal(filter, counts);
  const remedy = (which: ListRemedy) => {
    const apply = () => setFilter(which === "show_terminal" ? { ...filter, includeTerminal: true } : { ...filter, status: ANY_STATUS });
    return html`<button type="button" class="remedy" onClick=${apply}>${remedyLabel(which, hidden)}</button>`;
  };
  // Until the rows of a new terminal choice arrive, the line says so rather than describe rows read for the other.
  const reading = rows !== null && rows.includeTerminal !== filter.includeTerminal;
  const status = listStatus(filter, { shown: shown.length, listed: tasks.length, total: rows?.total ?? 0, hidden });
  const ended = status.showsRecentlyEnded && !reading ? (rows?.ended ?? []) : [];

  return html`<div class="session-view">
    <section class="counts" aria-label="Session counts">
      <h1>Session <code>${viewer.sessionId}</code> <span class=${`live live-${live}`} role="status">${live === "live" ? "● live" : live === "connecting" ? "connecting…" : "live updates stopped: reload"}</span></h1>
      <dl class="count-list">
        ${COUNT_NAMES.map((name) => html`<div class="count"><dt>${name}</dt><dd data-count=${name}>${counts === null ? "…" : counts[name]}</dd></div>`)}
        <div class="count"><dt>open actions</dt><dd data-count="open_actions">${counts === null ? "…" : counts.open_actions}</dd></div>
      </dl>
    </section>
    <${Inbox} viewer=${viewer} client=${client} pulse=${pulse} />
    <${Schedules} viewer=${viewer} client=${client} pulse=${pulse} />
    <${FailedDeliveriesPanel} viewer=${viewer} client=${client} pulse=${pulse} />
    <section class="tasks" aria-label="Tasks">
      <h2>Tasks</h2>
      <div class="filters">
        <label>Status
          <select aria-label="Status" value=${filter.status} onChange=${(e: Event) => setFilter({ ...filter, status: (e.currentTarget as HTMLSelectElement).value as TaskFilter["status"] })}>
            <option value=${ANY_STATUS}>all statuses</option>
            ${TASK_STATUS_ORDER.map((s) => html`<option value=${s}>${s.replace(/_/g, " ")} (${perStatus.get(s) ?? 0})</option>`)}
          </select>
        </label>
        <label class="check">
          <input type="checkbox" aria-label="Include terminal tasks" checked=${filter.includeTerminal}
            onChange=${(e: Event) => setFilter({ ...filter, includeTerminal: (e.currentTarget as HTMLInputElement).checked })} />
          Include terminal tasks
        </label>
        <label>Order
          <select aria-label="Order" value=${filter.sort} onChange=${(e: Event) => setFilter({ ...filter, sort: (e.currentTarget as HTMLSelectElement).value as TaskSort })}>
            <option value="updated">recently updated first</option>
            <option value="created">creation order</option>
          </select>
        </label>
      </div>
      ${error === null ? null : html`<p class="form-error" role="alert">Could not read the session: ${error}</p>`}
      ${rows === null
        ? html`<p>Loading…</p>`
        : html`
            <p class="list-status">
              <span class=${shown.length > 0 ? "muted small" : ""} aria-live="polite" data-list-status>${reading ? "Reading the tasks…" : status.text}</span>
              ${reading ? null : status.remedies.map(remedy)}
            </p>
            ${shown.length > 0
              ? html`<${TaskTable} tasks=${shown} byId=${byId} now=${now} />`
              : ended.length === 0
                ? null
                : html`<${TaskTable} caption=${recentlyEndedCaption(ended.length, hidden)} tasks=${ended} byId=${byId} now=${now} />`}
          `}
    </section>
  </div>`;
}

/** Task rows: the filtered list, or under a caption the recently ended tasks shown in its place. */
function TaskTable({ caption, tasks, byId, now }: { caption?: string; tasks: readonly ListedTask[]; byId: ReadonlyMap<string, ListedTask>; now: number }) {
  return html`<table class="task-table">
    ${caption === undefined ? null : html`<caption>${caption}</caption>`}
    <thead><tr><th scope="col">Task</th><th scope="col">Status</th><th scope="col">Steps</th><th scope="col">Updated</th></tr></thead>
    <tbody>${tasks.map((t) => html`<${TaskRow} key=${t.task_id} task=${t} byId=${byId} now=${now} />`)}</tbody>
  </table>`;
}

function TaskRow({ task, byId, now }: { task: ListedTask; byId: ReadonlyMap<string, ListedTask>; now: number }) {
  const parent = parentOf(task, byId);
  const steps = stepSummary(task);
  return html`<tr data-task-id=${task.task_id} data-status=${task.status} data-native-status=${task.native_status}>
    <td data-label="Task">
      <a href=${taskHref(task.task_id)}>${task.title}</a> <code class="id">${task.task_id}</code>
      ${parent === null ? null : html`<div class="parent">child of <a href=${taskHref(parent.taskId)}>${parent.title ?? parent.taskId}</a></div>`}
      ${task.index_state === "stale" ? html`<div class="stale-note" title="The session's index may lag this task">may lag the task</div>` : null}
    </td>
    <td data-label="Status"><${StatusBadge} status=${task.status} native=${task.native_status} />${(task.open_action_count ?? 0) > 0 ? html` <span class="waiting-note">${task.open_action_count} open action${task.open_action_count === 1 ? "" : "s"}</span>` : null}</td>
    <td data-label="Steps">
      <span class="steps-done">${steps.completed}/${steps.total} completed</span>
      ${steps.others.length === 0 ? null : html`<span class="steps-others">${steps.others.map(([s, n]) => html` <span class="step-count" title=${`normalized: ${STEP_STATUS_MAP[s as keyof typeof STEP_STATUS_MAP] ?? s}`}>${s} ${n}</span>`)}</span>`}
      ${task.active_runs > 0 ? html` <span class="runs">${task.active_runs} run${task.active_runs === 1 ? "" : "s"}</span>` : null}
    </td>
    <td data-label="Updated"><time datetime=${task.updated_at} title=${task.updated_at}>${ago(task.updated_at, now)}</time></td>
  </tr>`;
}
