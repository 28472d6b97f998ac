/**
 * @module The core without zod, for the SDK and the dashboard (in a browser too): record, command and WAL event
 * types, status lists and rules, limits, `apply`/`replay`, snapshots, the runtime-event projection, the WAL
 * export's JSON Lines with its envelope check, and the read views. It never reaches ./schemas/ (the zod schemas
 * the service validates with) nor `decide`; index.ts is this plus those, for the service.
 */
export * from "./model/errors.js";
export * from "./model/json-bounds.js";
export * from "./model/limits.js";
export * from "./model/records.js";
export * from "./model/commands.js";
export * from "./model/result.js";
export * from "./model/state.js";
export * from "./model/normalize.js";
export * from "./model/ready-queue.js";
export * from "./model/text.js";
export { backoffMs, effectivePolicy } from "./model/retry-policy.js";
export * from "./apply/apply.js";
export * from "./apply/snapshot.js";
export { RETRY_EXHAUSTED } from "./apply/apply-shared.js";
export { DELEGATE_AGENT_ID } from "./apply/apply-delegation.js";
export * from "./events/events.js";
export * from "./events/runtime-events.js";
export * from "./events/runtime-sequence.js";
export * from "./events/wal-jsonl.js";
export * from "./events/wal-envelope.js";
export * from "./views/views.js";
export * from "./views/prompt-summary.js";
export * from "./views/read-models.js";
export * from "./views/task-page.js";
export * from "./views/task-get.js";
export * from "./views/retention.js";
export { childReport, type ChildReport, type ChildTaskRequest, outboundWork, type OutboundWork } from "./views/delegation-outbox.js";
export * from "./views/webhook-outbox.js";
export * from "./schedules/schedule-events.js";
