/**
 * @module `npm run replay -- <file.wal.jsonl>`: rebuilds a task DAG offline from an exported WAL (one event
 * per line, in wal_seq order) and prints it: the task, its steps grouped by status with their attempts, and
 * its worker runs. A line that is not a valid WAL event, or does not fit the lines before it, is reported
 * with its line number and exit code 1.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type DagState,
  diagnostics,
  orderedSteps,
  replayWalJsonl,
  STEP_STATUSES,
  type Step,
  WalJsonlError,
} from "../src/core/index.js";

/** Where the script reads and writes; tests pass their own. */
export interface ReplayIo {
  out(line: string): void;
  err(line: string): void;
  readFile(path: string): string;
}

const processIo: ReplayIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  readFile: (path) => readFileSync(path, "utf8"),
};

const USAGE = "usage: npm run replay -- <file.wal.jsonl>";

/** An ISO timestamp, shorter: "2026-01-01 00:01:03Z" (milliseconds only when not zero). */
function at(iso: string | null): string {
  if (iso === null) return "-";
  return iso.replace("T", " ").replace(/\.000Z$/, "Z");
}

function quote(text: string): string {
  return JSON.stringify(text);
}

function renderStep(state: DagState, step: Step): string[] {
  const flags = [`pool ${step.worker_pool_id}`, step.required ? "required" : "optional"];
  if (step.updated_after_dispatch) flags.push("updated after dispatch");
  const lines = [`    ${step.step_id}  ${quote(step.title)}  deps: ${step.depends_on_step_ids.join(", ") || "-"}  ${flags.join(" · ")}`];
  if (step.status_reason !== null) lines.push(`      reason: ${step.status_reason}`);
  if (step.claimed_by_run_id !== null) lines.push(`      held by ${step.claimed_by_run_id} (${step.claimed_by_agent_id}) until ${at(step.lease_expires_at)}`);
  if (step.result_summary !== null || step.artifact_ids.length > 0) {
    lines.push(`      result: ${step.result_summary === null ? "-" : quote(step.result_summary)}${step.artifact_ids.length > 0 ? ` · artifacts: ${step.artifact_ids.join(", ")}` : ""}`);
  }
  const progress = state.progress.get(step.step_id);
  if (progress !== undefined) {
    const counters = progress.counters === null ? "" : ` ${JSON.stringify(progress.counters)}`;
    lines.push(`      progress: ${progress.phase ?? "-"} · ${progress.summary ?? "-"}${counters} (${at(progress.updated_at)})`);
  }
  if (step.attempt_ids.length === 0) lines.push("      no attempts");
  for (const id of step.attempt_ids) {
    const a = state.attempts.get(id);
    if (a === undefined) continue;
    const error = a.last_error === null ? "" : `  ${a.last_error}`;
    lines.push(`      attempt ${a.ordinal}  ${a.run_id} (${a.agent_id})  ${a.status.padEnd(9)}  ${at(a.started_at)} → ${at(a.ended_at)}${error}`);
  }
  return lines;
}

/** The DAG as printable lines: task header, steps grouped by status (creation order within), runs. */
export function renderDag(state: DagState): string[] {
  const task = state.task;
  if (task === null) return ["(no task)"];
  const steps = orderedSteps(state);
  const lines: string[] = [];
  lines.push(`Task ${task.task_id} · ${quote(task.title)} · ${task.status}${task.status_reason === null ? "" : ` (${task.status_reason})`}`);
  lines.push(`  session ${task.session_id} · wal ${task.wal_name} · lease ${task.step_lease_timeout_ms} ms${task.objective === null ? "" : ` · objective: ${quote(task.objective)}`}`);
  lines.push(`  created ${at(task.created_at)} by ${task.created_by_agent_id} · updated ${at(task.updated_at)} · ended ${at(task.ended_at)}`);
  const d = diagnostics(state);
  const diag = task.status === "completed" || task.status === "failed" || task.status === "cancelled" ? "" : ` · completeable ${d.completeable} · stalled ${d.stalled}`;
  lines.push(`  ${steps.length} steps · ${state.attempts.size} attempts · ${state.runs.size} runs · ${state.last_wal_seq} events${diag}`);
  const taskProgress = state.progress.get("");
  if (taskProgress !== undefined) lines.push(`  progress: ${taskProgress.phase ?? "-"} · ${taskProgress.summary ?? "-"} (${at(taskProgress.updated_at)})`);

  lines.push("", "Steps by status");
  for (const status of STEP_STATUSES) {
    const group = steps.filter((s) => s.status === status);
    if (group.length === 0) continue;
    lines.push(`  ${status} (${group.length})`);
    for (const step of group) lines.push(...renderStep(state, step));
  }

  lines.push("", "Runs");
  if (state.runs.size === 0) lines.push("  (none)");
  for (const run of state.runs.values()) {
    const scope = run.allowed_step_ids === null ? "" : ` · allowed ${run.allowed_step_ids.join(", ")}`;
    const reason = run.status_reason === null ? "" : ` (${run.status_reason})`;
    const holding = run.current_step_id === null ? "" : ` · holds ${run.current_step_id}`;
    lines.push(`  ${run.run_id}  ${run.agent_id}  pool ${run.worker_pool_id}${scope} · ${run.status}${reason} · claims ${run.claims_used}/${run.max_steps}${holding}`);
    const deadline = run.deadline_at === null ? "" : ` · deadline ${at(run.deadline_at)}`;
    const result = run.result === null ? "" : ` · result ${JSON.stringify(run.result)}`;
    lines.push(`      dispatched ${at(run.created_at)} by ${run.dispatched_by_agent_id} · ended ${at(run.ended_at)}${deadline}${result}`);
  }
  return lines;
}

/** Reads, validates and replays one `.wal.jsonl` file and prints the DAG. Returns the exit code (0, 1 bad WAL, 2 usage). */
export function main(args: readonly string[], io: ReplayIo = processIo): number {
  if (args.length !== 1 || args[0] === "-h" || args[0] === "--help") {
    io.err(USAGE);
    return 2;
  }
  const file = args[0]!;
  let text: string;
  try {
    text = io.readFile(file);
  } catch (e) {
    io.err(`replay: cannot read ${file}: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
  let state: DagState;
  try {
    state = replayWalJsonl(text);
  } catch (e) {
    if (!(e instanceof WalJsonlError)) throw e;
    io.err(`replay: ${file}: ${e.message}`);
    return 1;
  }
  for (const line of renderDag(state)) io.out(line);
  return 0;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  process.exitCode = main(process.argv.slice(2));
}
