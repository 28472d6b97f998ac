/** @module The session's inbox: the open actions each task's latest index entry reports, a row each. */
import type { SessionActionPage } from "../../src/contract/index.js";
import { DEFAULT_ACTION_PAGE_LIMIT, MAX_ACTION_PAGE_LIMIT } from "../../src/contract/limits.js";
import type { Action } from "../../src/core/index.js";

/** The task's rows of the inbox become the open actions its entry reports. */
export function replaceInboxActions(sql: SqlStorage, taskId: string, open: readonly Action[]): void {
  sql.exec("DELETE FROM actions WHERE task_id = ?", taskId);
  for (const action of open) {
    sql.exec("INSERT OR REPLACE INTO actions (action_id, task_id, created_at, data) VALUES (?, ?, ?, ?)", action.action_id, taskId, action.created_at, JSON.stringify(action));
  }
}

/** GET /v1/sessions/{sid}/actions?status=open: the open actions of the session's tasks, newest first, each with its task's title. */
export function openActionPage(sql: SqlStorage, query: { limit?: number; offset?: number }): SessionActionPage {
  const limit = Math.min(Math.max(Math.trunc(query.limit ?? DEFAULT_ACTION_PAGE_LIMIT), 1), MAX_ACTION_PAGE_LIMIT);
  const offset = Math.max(Math.trunc(query.offset ?? 0), 0);
  const total = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM actions").one().n;
  // The title as the task's latest entry says it: a retitled task's open actions show the new title.
  const rows = sql
    .exec<{ data: string; task_title: string }>(
      "SELECT a.data AS data, json_extract(t.entry, '$.title') AS task_title FROM actions a JOIN tasks t ON t.task_id = a.task_id ORDER BY a.created_at DESC, a.action_id DESC LIMIT ? OFFSET ?",
      limit,
      offset,
    )
    .toArray();
  const actions = rows.map((r) => ({ ...(JSON.parse(r.data) as Action), task_title: r.task_title }));
  return { actions, total, limit, offset, next_offset: offset + actions.length < total ? offset + actions.length : null };
}
