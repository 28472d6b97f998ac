/**
 * @module The wire contract of the HTTP API, shared by the service (routes/, durable-objects/) and the SDK
 * (src/client/): request schemas, answer types and limits. It imports src/core and zod only, never routes/ or
 * durable-objects/, so the SDK can import it without taking in the server. The SDK imports `limits.ts`
 * directly for values (no zod) and the rest as types.
 */
export * from "./limits.js";
export * from "./requests.js";
export type * from "./answers.js";
export * from "./schedules.js";
export * from "./webhooks.js";
