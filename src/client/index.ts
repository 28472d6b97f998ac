/** @module The typed client SDK of the agent task runtime: fetch only, for Node 20, browsers and Workers. */
export { type RuntimeClientOptions } from "./runtime-calls.js";
export { RuntimeClient, type StepContext, type StepHandler, WorkerClient, type WorkerCredentials } from "./runtime-client.js";
export { type StepResult, type WorkerRunOptions, type WorkerRunReport, type WorkerStopReason } from "./run-worker.js";
export { orchestrate, reopenOnce, type OrchestrateOptions, type OrchestrateResult, type StepFailedHandler, type StepFailureAction } from "./orchestrate.js";
export { isRetryable, isRuntimeApiError, RuntimeApiError, type ClientErrorCode, type RuntimeApiErrorCode } from "./errors.js";
export { type ApiRequest, type FetchLike, newIdempotencyKey, Transport, type TransportOptions } from "./transport.js";
export { type BatchingOptions } from "./group-commit.js";
export { MAX_BATCH_COMMANDS } from "../contract/limits.js";
export { type CommandSocketOptions, type WebSocketConstructor, type WebSocketLike } from "./command-socket.js";
export { MAX_ACTION_WAIT_MS, type WaitForActionOptions } from "./action-wait.js";
export { backoffDelay, DEFAULT_RETRY, retryAfterDelay, type RetryOptions } from "./retry.js";
export { EventSubscription, isAfterId, type SubscribeOptions } from "./event-stream.js";
export { type SseFrame, SseParser } from "../lib/sse-parser.js";
export { taskPath } from "./paths.js";
export { joinTaskPages } from "./task-pages.js";
// The receiver's verifier is its own entry (agent-task-runtime/client/webhooks): its signing library stays out of
// every bundle that only calls the API (the dashboard's among them).
export type { WebhookHeaders, WebhookMessage } from "./webhook-verify.js";
export type * from "./types.js";
