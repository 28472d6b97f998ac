/** @module What every view of the dashboard gets: who is looking, and the SDK's client that reads for them. */
import type { RuntimeClient } from "../../../src/client/index.js";
import type { Viewer } from "../auth.js";

/** What every view gets. */
export interface ViewProps {
  readonly viewer: Viewer;
  readonly client: RuntimeClient;
}
