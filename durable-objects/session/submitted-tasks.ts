/** @module A2A ListTasks' read of the session index: one client's submitted tasks, newest first, by keyset. */
import type { IndexEntry } from "../../src/contract/index.js";
import { runtimeError } from "../../src/core/index.js";
import { err, ok, type RpcResult } from "../shared/rpc-result.js";
import type { SubmittedTaskPage, SubmittedTaskQuery } from "./session-rpc.js";
import { decodePageToken, encodePageToken, MAX_SUBMITTED_PAGE_SIZE, type PageCursor } from "./submitted-page-token.js";

/**
 * The tasks `client_agent_id` submitted, optionally of one thread (context) and some normalized statuses, newest
 * `updated_at` first (ties: task_id descending), read by keyset from the tasks_by_origin index. The page token names
 * the last entry of its page and the client it was given to; a token that does not decode, or was given to another
 * client, is validation_error.
 */
export function submittedTaskPage(sql: SqlStorage, query: SubmittedTaskQuery): RpcResult<SubmittedTaskPage> {
    const size = query.page_size;
    if (!Number.isInteger(size) || size < 1 || size > MAX_SUBMITTED_PAGE_SIZE) {
      return err(runtimeError("validation_error", `page_size must be an integer from 1 to ${MAX_SUBMITTED_PAGE_SIZE}`, { page_size: size }));
    }
    let after: PageCursor | null = null;
    if (query.page_token !== undefined && query.page_token !== "") {
      after = decodePageToken(query.page_token);
      if (after === null || after.client !== query.client_agent_id) {
        return err(runtimeError("validation_error", "page_token is not a page token of this list: start again without one"));
      }
    }
    // `+state`: read by tasks_by_origin, never by walking every confirmed row of the session (SQLite has no statistics here).
    const where = ["origin_client_agent_id = ?", "+state = 'confirmed'"];
    const args: (string | number)[] = [query.client_agent_id];
    if (query.context_id !== undefined) {
      where.push("thread_id = ?");
      args.push(query.context_id);
    }
    if (query.statuses !== undefined) {
      if (query.statuses.length === 0) return ok({ entries: [], next_page_token: "", total_size: 0 });
      where.push(`status IN (${query.statuses.map(() => "?").join(", ")})`);
      args.push(...query.statuses);
    }
    if (query.native_statuses !== undefined) {
      if (query.native_statuses.length === 0) return ok({ entries: [], next_page_token: "", total_size: 0 });
      where.push(`native_status IN (${query.native_statuses.map(() => "?").join(", ")})`);
      args.push(...query.native_statuses);
    }
    // Entries pushed before open actions were counted have none.
    if (query.with_open_actions !== undefined) where.push(`COALESCE(json_extract(entry, '$.open_action_count'), 0) ${query.with_open_actions ? ">" : "="} 0`);
    const clause = where.join(" AND ");
    const total = sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM tasks WHERE ${clause}`, ...args).one().n;
    const keyset = after === null ? "" : " AND (updated_at, task_id) < (?, ?)";
    const keyArgs = after === null ? [] : [after.updated_at, after.task_id];
    // One row past the page tells whether another page follows.
    const rows = sql
      .exec<{ entry: string }>(`SELECT entry FROM tasks WHERE ${clause}${keyset} ORDER BY updated_at DESC, task_id DESC LIMIT ?`, ...args, ...keyArgs, size + 1)
      .toArray();
    const entries = rows.slice(0, size).map((r) => JSON.parse(r.entry) as IndexEntry);
    const last = entries[entries.length - 1];
    const next = rows.length > size && last !== undefined ? encodePageToken({ client: query.client_agent_id, updated_at: last.updated_at, task_id: last.task_id }) : "";
    return ok({ entries, next_page_token: next, total_size: total });
  }
