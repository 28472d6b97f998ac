/**
 * @module Wire limits the service enforces and the SDK keeps to. Numbers only, no zod: the SDK imports this
 * file directly when it needs a limit, so its bundle does not take in the request schemas for a number.
 */

/** Most commands one batch (`POST .../batch` or one command-socket frame) may carry. */
export const MAX_BATCH_COMMANDS = 256;

/** Most tasks one page of GET /v1/sessions/{sid}/tasks lists (its `limit`). */
export const MAX_TASK_LIST_LIMIT = 500;

/** Most steps one GET .../steps answers (its `limit`). */
export const MAX_STEP_QUERY_LIMIT = 1_000;

/** Most WAL events one GET .../wal answers (its `limit`). */
export const MAX_WAL_PAGE_LIMIT = 10_000;

/** Most actions one page of GET .../tasks/{tid}/actions or GET /v1/sessions/{sid}/actions lists (its `limit`). */
export const MAX_ACTION_PAGE_LIMIT = 500;

/** Default `limit` of an action page. */
export const DEFAULT_ACTION_PAGE_LIMIT = 50;

/** Longest `wait_ms` of GET .../actions/{action_id}: how long one request may wait for the action's resolution. */
export const MAX_ACTION_WAIT_MS = 30_000;
