/** @module The Worker entry: builds the HTTP app and exports the Durable Object classes. */
import "./zod-setup.js";
import { buildApp } from "../routes/app.js";

export { ScheduleObject } from "../durable-objects/schedule/schedule-object.js";
export { SessionObject } from "../durable-objects/session/session-object.js";
export { TaskGraphObject } from "../durable-objects/task/task-graph-object.js";

/** The HTTP application served by the Worker. */
export const app = buildApp();

export default app;
