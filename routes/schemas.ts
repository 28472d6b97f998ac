/**
 * @module Body and query schemas only the routes use (claim bodies, task pages, event streams, batches). The
 * ones the SDK types its calls with are the contract's (src/contract/requests.ts).
 */
import { z } from "zod";
import { intParam, MAX_BATCH_COMMANDS } from "../src/contract/index.js";
import { TASK_CURSOR_PATTERN, TASK_PAGE_LIMIT } from "../src/core/index.js";

/** POST .../steps/{step}/claim and /steps/claim-next take no fields. */
export const EmptyBody = z.strictObject({});

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

/** POST .../batch: commands decided in order and written in one transaction, each with its own token. */
export const BatchBody = z.strictObject({
  commands: z
    .array(
      z.strictObject({
        token: z.string().min(1),
        method: z.enum(["POST", "PATCH", "post", "patch"]),
        path: z.string().min(1).max(1_000),
        body: z.record(z.string(), z.unknown()).optional(),
        idempotency_key: z.string().min(1).max(255).optional(),
      }),
    )
    .min(1)
    .max(MAX_BATCH_COMMANDS),
});
