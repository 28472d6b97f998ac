/**
 * @module The compact Task DAG summary a prompt composer injects into a model's context, within a token
 * budget. Tokens are estimated as ceil(characters / 4), the usual rule of thumb for English and JSON text.
 */
import type { Actor } from "../decide/context.js";
import type { WalEvent } from "../events/events.js";
import { normalizedTaskStatus } from "../model/normalize.js";
import { type Action, DEFAULT_WORKER_POOL, type Step } from "../model/records.js";
import type { DagState } from "../model/state.js";
import { diagnostics } from "./views.js";

/** Estimated tokens of a text: ceil(characters / 4). */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** The summary: its text, what each section kept, and what the budget left out. */
export interface PromptSummary {
  readonly text: string;
  readonly token_estimate: number;
  readonly token_budget: number;
  readonly truncated: boolean;
  readonly omitted: Record<string, number>;
}

/** Tokens kept free for the line that says what the budget left out. */
const FOOTER_RESERVE = 40;

const stepLine = (s: Step) =>
  `- ${s.step_id} [${s.status}${s.required ? "" : ", optional"}${s.worker_pool_id === DEFAULT_WORKER_POOL ? "" : `, pool ${s.worker_pool_id}`}] ${s.title}` +
  (s.claimed_by_agent_id === null ? "" : ` (held by ${s.claimed_by_agent_id})`) +
  (s.status_reason === null ? "" : ` — ${s.status_reason}`) +
  (s.retry_at === null ? "" : ` (retry at ${s.retry_at})`);

const actionLine = (a: Action) =>
  `- ${a.action_id} [${a.kind}${a.step_id === null ? ", task" : `, step ${a.step_id}`}] ${JSON.stringify(a.prompt.slice(0, 200))} (expires ${a.expires_at})`;

/**
 * Builds the summary for `actor`. Sections are filled in priority order until the budget is spent:
 * the caller's own held steps, blocked, running/claimed, ready (the caller's pool for a worker), then
 * recent WAL changes; the header (task, status, counts, diagnostics) is always kept.
 */
export function promptSummary(state: DagState, actor: Actor, recent: readonly WalEvent[], tokenBudget: number): PromptSummary {
  const task = state.task!;
  const c = state.index.statusCounts;
  const d = diagnostics(state);
  const normalized = normalizedTaskStatus(state);
  const header = [
    `Task ${task.task_id} "${task.title}" is ${task.status}${normalized.startsWith("waiting_") ? ` (${normalized})` : ""}.`,
    `Steps: ${state.steps.size} total — ${c.ready} ready, ${c.claimed + c.running} running, ${c.blocked} blocked, ${c.pending} pending, ${c.completed} completed, ${c.failed} failed, ${c.cancelled} cancelled.`,
    `Diagnostics: completeable=${d.completeable}, stalled=${d.stalled}.`,
  ].join("\n");

  const run = actor.role === "worker" && actor.run_id !== null ? state.runs.get(actor.run_id) : undefined;
  const all = [...state.steps.values()];
  const mine = all.filter((s) => (s.status === "claimed" || s.status === "running") && s.claimed_by_agent_id === actor.agent_id);
  const mineIds = new Set(mine.map((s) => s.step_id));
  const sections: { name: string; title: string; lines: string[] }[] = [
    { name: "your_steps", title: "Your claimed/running steps:", lines: mine.map(stepLine) },
    { name: "open_actions", title: "Open actions (waiting for a person):", lines: [...state.index.openActions].map((id) => actionLine(state.actions.get(id)!)) },
    { name: "blocked", title: "Blocked steps:", lines: all.filter((s) => s.status === "blocked").map(stepLine) },
    { name: "retrying", title: "Steps waiting for a retry:", lines: all.filter((s) => s.retry_at !== null).map(stepLine) },
    { name: "running", title: "Running/claimed steps:", lines: all.filter((s) => (s.status === "claimed" || s.status === "running") && !mineIds.has(s.step_id)).map(stepLine) },
    {
      name: "ready",
      title: run === undefined ? "Ready steps:" : `Ready steps in pool ${run.worker_pool_id}:`,
      lines: all.filter((s) => s.status === "ready" && (run === undefined || (s.worker_pool_id === run.worker_pool_id && (run.allowed_step_ids === null || run.allowed_step_ids.includes(s.step_id))))).map(stepLine),
    },
    { name: "recent_changes", title: "Recent WAL changes:", lines: [...recent].reverse().map((e) => `- #${e.wal_seq} ${e.event_type}${e.step_id === null ? "" : ` ${e.step_id}`} by ${e.actor_agent_id}`) },
  ];

  // Room is kept for the closing "omitted" line so the whole text stays within the budget.
  let used = estimateTokens(header) + FOOTER_RESERVE;
  const kept = new Map<string, string[]>();
  const omitted: Record<string, number> = {};
  for (const section of sections) {
    const lines: string[] = [];
    let titled = false;
    for (const line of section.lines) {
      const cost = estimateTokens(`${titled ? "" : `${section.title}\n`}${line}\n`);
      if (used + cost > tokenBudget) break;
      used += cost;
      titled = true;
      lines.push(line);
    }
    kept.set(section.name, lines);
    if (lines.length < section.lines.length) omitted[section.name] = section.lines.length - lines.length;
  }
  const body = sections
    .filter((s) => (kept.get(s.name)?.length ?? 0) > 0)
    .map((s) => `${s.title}\n${kept.get(s.name)!.join("\n")}`);
  const more = Object.entries(omitted).map(([k, n]) => `${n} ${k.replace("_", " ")}`);
  const footer = more.length > 0 ? [`(Over budget: omitted ${more.join(", ")}; use agent.task_get or the WAL for the full DAG.)`] : [];
  const text = [header, ...body, ...footer].join("\n\n");
  return { text, token_estimate: estimateTokens(text), token_budget: tokenBudget, truncated: more.length > 0, omitted };
}
