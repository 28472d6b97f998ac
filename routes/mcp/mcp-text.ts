/**
 * @module The short text an MCP tool result carries next to its structuredContent (the whole answer): what a
 * model reads first. A write says the task's DAG summary after it and the WAL event ids it wrote; a read of a
 * DAG too large for the context budget gives a summary and says how to query the rest (the whole DAG is
 * agent.task_get's structuredContent); an error names its code and what to do next. See docs/protocols/mcp.md.
 */
import { type Action, clipText, type ErrorCode, type Step, type TaskSummary } from "../../src/core/index.js";

/** Characters of one result's text: about 1,000 tokens. */
export const TEXT_BUDGET = 4_000;

/**
 * What a model can do about each error code: every code says, so a new one does not compile until it does.
 * null: the error's message is all a model needs (a conflict the arguments must fix, or a fault of ours).
 */
export const NEXT_MOVE: Readonly<Record<ErrorCode, string | null>> = {
  step_already_claimed: "Another run holds it: query ready steps again (agent.task_query_steps) and claim another, or call agent.task_claim_next.",
  step_already_claimed_by_run: "This run already holds a step: finish it (agent.task_update_step) before claiming another.",
  task_not_completeable: "Read diagnostics with agent.task_get: every required step must be completed and none held.",
  task_not_dispatchable: "The task is blocked or paused: it takes no claims or dispatches until it is reopened or resumed.",
  task_terminal: "The task has ended: nothing in it can change. Read it with agent.task_get.",
  validation_error: "Fix the arguments named in details.issues and call again.",
  tool_not_available: "Your token's role cannot use this tool: see tools/list for the ones it can.",
  permission_denied: "Your token does not reach this task or step.",
  not_found: "Check the ids: agent.task_list lists the session's tasks, agent.task_query_steps a task's steps.",
  invalid_transition: "The step's status does not allow this change: read it with agent.task_get.",
  rate_limited: "Wait a moment (details.retry_after_ms) and call again.",
  storage_error: "Nothing was changed: call again.",
  limit_exceeded: "A counted cap is reached (details.limit, details.setting): nothing was changed; end or remove something first.",
  unauthorized: null,
  path_conflict: null,
  schedule_conflict: null,
  task_id_conflict: null,
  dependency_cycle: null,
  unknown_dependency: null,
  duplicate_step: null,
  step_has_dependents: null,
  action_resolved: null,
  payload_too_large: null,
  idempotency_conflict: null,
  internal_error: null,
};

function counts(summary: TaskSummary): string {
  const parts = Object.entries(summary.step_counts)
    .filter(([, n]) => n > 0)
    .map(([status, n]) => `${n} ${status}`);
  return parts.length === 0 ? "no steps" : parts.join(", ");
}

/** One line for a task summary: status, counts and what it waits for. */
export function summaryLine(s: TaskSummary): string {
  const status = s.normalized_status === s.status ? s.status : `${s.status} (${s.normalized_status})`;
  const extras = [
    s.open_actions > 0 ? `${s.open_actions} open action(s)` : "",
    s.retrying_steps > 0 ? `${s.retrying_steps} retrying` : "",
    s.active_runs > 0 ? `${s.active_runs} active run(s)` : "",
    s.diagnostics.completeable ? "completeable" : "",
  ].filter((x) => x !== "");
  return `Task ${s.task_id} "${s.title}" is ${status}; ${s.total_steps} steps: ${counts(s)}${extras.length === 0 ? "" : `; ${extras.join(", ")}`}.`;
}

function stepLine(s: Step): string {
  const held = s.claimed_by_agent_id === null ? "" : ` held by ${s.claimed_by_agent_id}${s.lease_expires_at === null ? "" : ` until ${s.lease_expires_at}`}`;
  return `- ${s.step_id} [${s.status}${s.required ? "" : ", optional"}] ${s.title}${held}${s.depends_on_step_ids.length === 0 ? "" : ` (after ${s.depends_on_step_ids.join(", ")})`}`;
}

/** Lines up to the budget, then one that says how many were left out and how to read them. */
function within(lines: readonly string[], budget: number, more: string): string[] {
  const kept: string[] = [];
  let used = 0;
  for (const line of lines) {
    if (used + line.length + 1 > budget) {
      kept.push(`… ${lines.length - kept.length} more not shown; ${more}`);
      break;
    }
    kept.push(line);
    used += line.length + 1;
  }
  return kept;
}

type Answer = Record<string, unknown>;

function writeText(answer: Answer): string[] {
  const lines: string[] = [];
  if (answer.no_step_claimed === true) {
    lines.push(`No step claimed (${String(answer.reason)}): nothing claimable in your scope now. This is a normal result: report it and end the run, or query again later.`);
  }
  const step = answer.step as Step | undefined;
  if (step !== undefined && typeof answer.attempt_id === "string") {
    lines.push(`You hold step ${step.step_id} "${step.title}" (attempt ${answer.attempt_id}) until ${step.lease_expires_at}. Its goal: ${step.summary.slice(0, 600)}`);
    lines.push("Set it running, report progress (renews the lease), then completed or failed with agent.task_update_step.");
  }
  if (typeof answer.run_id === "string" && typeof answer.token === "string") {
    lines.push(`Worker run ${answer.run_id} started for agent ${String(answer.agent_id)}: give the worker agent this token (structuredContent.token) and the MCP URL ${String(answer.mcp_url)}.`);
  }
  if (typeof answer.action_id === "string") lines.push(`Action ${answer.action_id} is ${String(answer.status)}${answer.expires_at === undefined ? "" : ` until ${String(answer.expires_at)}`}.`);
  const next = answer.next as Answer | undefined;
  if (next !== undefined) lines.push(...writeText(next).filter((l) => !l.startsWith("Task ") && !l.startsWith("Wrote ")));
  const task = answer.task as TaskSummary | undefined;
  if (task !== undefined) lines.push(summaryLine(task));
  const ids = answer.event_ids as string[] | undefined;
  if (ids !== undefined) lines.push(ids.length === 0 ? `Wrote no WAL events (wal_seq ${String(answer.wal_seq)}).` : `Wrote ${ids.length} WAL event(s) up to wal_seq ${String(answer.wal_seq)}: ${ids.slice(0, 8).join(", ")}${ids.length > 8 ? ", …" : ""}.`);
  return lines;
}

function taskGetText(answer: Answer): string[] {
  const task = answer.task as { task_id: string; title: string; status: string; summary?: string } | undefined;
  const steps = (answer.steps as Step[] | undefined) ?? [];
  const page = answer.page as { next_cursor?: string | null } | undefined;
  const head = task === undefined ? [] : [`Task ${task.task_id} "${task.title}" is ${task.status}. ${(task.summary ?? "").slice(0, 400)}`.trim()];
  const diagnostics = answer.diagnostics === undefined ? [] : [`Diagnostics: ${JSON.stringify(answer.diagnostics).slice(0, 400)}`];
  const more = page?.next_cursor ? `read the next page with cursor ${page.next_cursor}, or filter with agent.task_query_steps.` : "filter with agent.task_query_steps; the whole DAG is in structuredContent.";
  return [...head, ...diagnostics, `Steps (${steps.length}${page?.next_cursor ? " on this page" : ""}):`, ...within(steps.map(stepLine), TEXT_BUDGET - 1_000, more)];
}

function listText(answer: Answer): string[] | null {
  if (Array.isArray(answer.steps)) {
    const steps = answer.steps as Step[];
    const next = answer.next_offset === null || answer.next_offset === undefined ? "" : ` Next page: offset ${String(answer.next_offset)}.`;
    return [`${steps.length} of ${String(answer.total)} step(s).${next}`, ...within(steps.map(stepLine), TEXT_BUDGET - 200, "page with limit and offset.")];
  }
  if (Array.isArray(answer.tasks)) {
    const tasks = answer.tasks as { task_id: string; title: string; status: string; total_steps: number; open_action_count?: number }[];
    const next = answer.next_offset === null || answer.next_offset === undefined ? "" : ` Next page: offset ${String(answer.next_offset)}.`;
    const lines = tasks.map((t) => `- ${t.task_id} [${t.status}] ${t.title} (${t.total_steps} steps${t.open_action_count ? `, ${t.open_action_count} open action(s)` : ""})`);
    return [`${tasks.length} of ${String(answer.total)} task(s).${next}`, ...within(lines, TEXT_BUDGET - 200, "page with limit and offset.")];
  }
  if (Array.isArray(answer.actions)) {
    const actions = answer.actions as { action_id: string; kind: string; status: string; prompt: string; step_id: string | null; task_id?: string }[];
    const lines = actions.map((a) => `- ${a.action_id} [${a.kind}, ${a.status}]${a.task_id === undefined ? "" : ` task ${a.task_id}`}${a.step_id === null ? "" : ` step ${a.step_id}`}: ${a.prompt.slice(0, 200)}`);
    return [`${actions.length} of ${String(answer.total)} action(s).`, ...within(lines, TEXT_BUDGET - 200, "page with limit and offset.")];
  }
  return null;
}

/** The text of a successful result of `tool`. */
export function resultText(tool: string, answer: Answer): string {
  let lines: string[];
  if (tool === "agent.task_template") lines = [String(answer.content ?? "")];
  else if (tool === "task_summary") lines = [String(answer.text ?? "")];
  else if (tool === "agent.task_get") lines = taskGetText(answer);
  else if (answer.event_ids !== undefined) lines = writeText(answer);
  else if (answer.action !== undefined) {
    const a = answer.action as Action;
    const resolution = a.decision === null ? [] : [`Decision: ${a.decision}${a.input === null ? "" : `; input ${JSON.stringify(a.input).slice(0, 800)}`}${a.comment === null ? "" : `; comment ${JSON.stringify(a.comment.slice(0, 400))}`}.`];
    lines = [`Action ${a.action_id} (${a.kind}) is ${a.status}: ${a.prompt.slice(0, 400)}`, ...resolution];
  } else lines = listText(answer) ?? [JSON.stringify(answer).slice(0, TEXT_BUDGET)];
  const text = lines.join("\n");
  return tool === "agent.task_template" ? text : clipText(text, TEXT_BUDGET);
}

/** The text of an error result: the code, the message, and what to do next. */
export function errorText(code: string, message: string): string {
  const next = Object.hasOwn(NEXT_MOVE, code) ? NEXT_MOVE[code as ErrorCode] : null;
  return `Error ${code}: ${message}${next === null ? "" : `\n${next}`}`;
}
