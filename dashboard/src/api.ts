/** @module The dashboard's connection to the runtime: the SDK's client on this page's origin with the viewer's token. */
import { RuntimeClient } from "../../src/client/index.js";
import type { Viewer } from "./auth.js";

/** The client of the page's own origin (the dashboard is served by the runtime it shows). */
export function clientFor(viewer: Viewer): RuntimeClient {
  return new RuntimeClient({ baseUrl: location.origin, token: viewer.token, batching: false });
}
