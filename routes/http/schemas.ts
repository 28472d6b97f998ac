/**
 * @module Query schemas only the routes use (task pages, event streams). The
 * ones the SDK types its calls with are the contract's (src/contract/requests.ts); the bodies of claims and
 * batches are the commands' (durable-objects/commands/command-schemas.ts).
 */
import { z } from "zod";
import { intParam } from "../../src/contract/index.js";
import { TASK_CURSOR_PATTERN, TASK_PAGE_LIMIT } from "../../src/core/index.js";

/**
 * GET .../tasks/{tid} query (agent.task_get): at most `limit` steps, runs and attempts each (default and most
 * 1,000), from `cursor` (a `page.next_cursor`). Without either, a task that fits one page is answered whole.
 */
export const TaskGetQueryParams = z.strictObject({
  limit: intParam(1, TASK_PAGE_LIMIT).optional(),
  cursor: z.string().regex(TASK_CURSOR_PATTERN, "must be a page.next_cursor this route sent").optional(),
  access_token: z.string().optional(),
});

/** GET .../events and GET /v1/sessions/{sid}/events query (a Last-Event-ID header wins over after_seq). */
export const EventsQueryParams = z.strictObject({
  after_seq: intParam(0, Number.MAX_SAFE_INTEGER).optional(),
  access_token: z.string().optional(),
});

