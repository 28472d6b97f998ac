/** @module The pure task DAG core: records, commands, WAL events, decide/apply/replay, and read views. */
export * from "./apply.js";
export * from "./commands.js";
export * from "./context.js";
export * from "./decide.js";
export { notCompleteableReason } from "./decide-lifecycle.js";
export { nextDeadline } from "./decide-runs.js";
export { firstClaimable } from "./decide-steps.js";
export * from "./errors.js";
export * from "./events.js";
export * from "./limits.js";
export * from "./records.js";
export * from "./state.js";
export * from "./views.js";
export * from "./wal-jsonl.js";
export * from "./normalize.js";
export * from "./prompt-summary.js";
export * from "./runtime-events.js";
export * from "./read-models.js";
