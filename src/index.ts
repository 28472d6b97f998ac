/** @module The Worker entry: builds the HTTP app and exports the Durable Object classes. */
import "./zod-setup.js";
import { buildApp } from "../routes/app.js";

export { SessionObject } from "../durable-objects/session-object.js";
// The task object as the Worker deploys it: TaskGraphObject plus the command socket's transport.
export { TaskGraphObjectWithSocket as TaskGraphObject } from "../routes/task-socket.js";

/** The HTTP application served by the Worker. */
export const app = buildApp();

export default app;
