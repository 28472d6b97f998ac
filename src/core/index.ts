/**
 * @module The pure task DAG core, for the service: everything browser.ts holds (types, apply/replay, events,
 * views), plus `decide` and the zod schemas that validate commands, records and stored WAL rows.
 */
export * from "./browser.js";
export * from "./decide/authorize.js";
export * from "./decide/context.js";
export * from "./decide/decide.js";
export { notCompleteableReason } from "./decide/decide-lifecycle.js";
export { nextDeadline, RETRY_POLICY } from "./decide/decide-runs.js";
export { firstClaimable } from "./decide/decide-steps.js";
export { delegateRetryDelay } from "./decide/decide-delegation.js";
export { webhookRetryDelay } from "./decide/decide-webhooks.js";
export { blockedBy, blockedRefusal } from "./decide/decide-links.js";
export { checkRunToken, checkScope } from "./decide/guards.js";
export * from "./schemas/record-basics.js";
export * from "./schemas/json-values.js";
export * from "./schemas/delegation-records.js";
export * from "./schemas/records.js";
export * from "./schemas/commands.js";
export * from "./schemas/wal-events.js";
export * from "./schemas/runtime-event.js";
export * from "./schemas/wal-jsonl.js";
export * from "./schedules/schedule-rules.js";
