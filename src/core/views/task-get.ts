/**
 * @module agent.task_get's answer: the DAG with its snapshot read model, whole while it fits one default
 * page and no page was asked for (the answer every client has always read), else one page of it with `page`.
 */
import { runtimeError } from "../model/errors.js";
import { taskReadModel } from "./read-models.js";
import { err, ok, type Result } from "../model/result.js";
import type { DagState } from "../model/state.js";
import { decodeTaskCursor, FIRST_TASK_PAGE, pageInfo, pageItems, TASK_PAGE_LIMIT, type TaskPageInfo, type TaskPageItems } from "./task-page.js";
import { taskView } from "./views.js";

/** What GET .../tasks/{tid} asks for: a page size (default and most TASK_PAGE_LIMIT) and where to start. */
export interface TaskGetRequest {
  readonly limit?: number;
  readonly cursor?: string;
}

/** The page a request names: its records, its limit, and whether the answer describes itself as a page. */
export interface TaskGetPage {
  readonly items: TaskPageItems;
  readonly limit: number;
  readonly paged: boolean;
}

/** The answer of GET .../tasks/{tid}: the DAG (or a page of it) and its snapshot; `page` only on a paged answer. */
export type TaskGetAnswer = ReturnType<typeof taskView> & { readonly snapshot: ReturnType<typeof taskReadModel>; readonly page?: TaskPageInfo };

/** The page a request names, or validation_error for a cursor this API did not send. */
export function taskGetPage(state: DagState, request: TaskGetRequest): Result<TaskGetPage> {
  const limit = Math.max(1, Math.min(request.limit ?? TASK_PAGE_LIMIT, TASK_PAGE_LIMIT));
  const from = request.cursor === undefined ? FIRST_TASK_PAGE : decodeTaskCursor(request.cursor);
  if (from === null) return err(runtimeError("validation_error", "cursor must be a page.next_cursor this route sent", { cursor: request.cursor!.slice(0, 100) }));
  const items = pageItems(state, from, limit);
  return ok({ items, limit, paged: request.limit !== undefined || request.cursor !== undefined || items.next !== null });
}

/** The answer for one page. */
export function taskGetAnswer(state: DagState, page: TaskGetPage): TaskGetAnswer {
  const answer = { ...taskView(state, page.items), snapshot: taskReadModel(state, page.items) };
  return page.paged ? { ...answer, page: pageInfo(state, page.items, page.limit) } : answer;
}
