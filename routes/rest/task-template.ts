/** @module agent.task_template: the guide an orchestrator model reads before writing a task DAG. */

/** The DAG writing guide, returned as a synthetic user/context block. */
export const TASK_TEMPLATE = `# Writing a task DAG

A task is one DAG of steps. You (the orchestrator) write the structure; the runtime keeps status,
readiness, claims and leases. Workers you dispatch claim ready steps and report results.

## Shape
- task_id and wal_name: lowercase a-z, 0-9, "-" and "_", at most 64 characters, unique in the session.
- Each step: step_id (same characters), title (<= 200 chars), summary (what "done" means),
  depends_on_step_ids (steps that must be completed first), required (default true),
  worker_pool_id (default "default").
- No priorities: order comes only from dependencies. Steps with no dependencies are ready at once.
- Make a step small enough for one worker run; state its acceptance in the summary.
- Optional steps (required=false) are exploration: they never block completing the task, and if still
  pending or ready when you complete it they are cancelled. A required step that depends on an optional
  one still needs it completed.

## Example
{
  "task_id": "report-q3", "wal_name": "report-q3", "title": "Q3 market report",
  "summary": "A two-page report with sources",
  "steps": [
    {"step_id": "plan", "title": "Outline the report", "summary": "Section list with questions", "depends_on_step_ids": []},
    {"step_id": "research-a", "title": "Research segment A", "summary": "5 sourced facts", "depends_on_step_ids": ["plan"]},
    {"step_id": "research-b", "title": "Research segment B", "summary": "5 sourced facts", "depends_on_step_ids": ["plan"]},
    {"step_id": "extra", "title": "Look for outliers", "summary": "Optional", "depends_on_step_ids": ["plan"], "required": false},
    {"step_id": "write", "title": "Write the report", "summary": "Two pages citing research", "depends_on_step_ids": ["research-a", "research-b"]}
  ]
}

## Running it
1. Dispatch a worker per ready step (one step per run is the default), or a few pooled runs with max_steps.
2. Workers call claim-next, work, report progress (it renews the lease), then set completed/failed/blocked.
3. A failed or blocked step needs you: reopen_step, change the DAG (task_update ops), or add a replacement.
4. When every required step is completed (diagnostics.completeable), call complete; fail or cancel stop it all.

## Flaky work, people, and nights off
- retry_policy on a step (or default_retry_policy on the task): {"max_attempts": 3, "initial_interval_ms": 1000,
  "backoff_coefficient": 2, "max_interval_ms": 30000}. A worker's failure, a timeout or a lost worker is retried
  by the runtime after the backoff; once attempts are used up the step fails with retry_exhausted. List reasons
  that retrying cannot fix in non_retryable_reasons.
- Ask a person instead of guessing: a worker opens an action on its step ({"kind": "approval", "prompt": "Deploy to
  production?"} or {"kind": "input", "prompt": ..., "input_schema": {...}}); its lease waits with it. You may open a
  task-level action, e.g. to approve the plan before dispatching. An approver or you answer it.
- pause stops dispatch and claims (work in flight goes on); resume picks up where it stopped.
- acceptance: {"criteria": "...", "required_artifacts": ["report.pdf"]}: complete is refused until a completed step
  produced every required artifact.
`;
