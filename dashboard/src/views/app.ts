/** @module The dashboard's shell: who is looking, the route, and the view it names. */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { type Route, routeOf } from "../route.js";
import { SessionView } from "./session-view.js";
import { TaskView } from "./task-view.js";
import type { ViewProps } from "./view-props.js";

function useRoute(ownTask: string | null): Route {
  const [route, setRoute] = useState(() => routeOf(location.hash, ownTask));
  useEffect(() => {
    const onHash = () => setRoute(routeOf(location.hash, ownTask));
    addEventListener("hashchange", onHash);
    return () => removeEventListener("hashchange", onHash);
  }, []);
  return route;
}

/** The page: a header with the session and the viewer's role, then the routed view. */
export function App(props: ViewProps) {
  const route = useRoute(props.viewer.taskId);
  return html`
    <header class="top">
      <a class="brand" href="#/">Agent task runtime</a>
      <span class="who">session <code>${props.viewer.sessionId}</code> · ${props.viewer.role}</span>
      <a class="docs" href="/docs">API reference</a>
    </header>
    <main id="main">
      ${route.view === "task" ? html`<${TaskView} ...${props} taskId=${route.taskId} />` : html`<${SessionView} ...${props} />`}
    </main>
  `;
}

/** Shown when the tab has no token. */
export function NoToken() {
  return html`<main id="main" class="no-token">
    <h1>Agent task runtime</h1>
    <p>Open the dashboard with a token in the address's fragment: <code>/#token=…</code>. <code>npm start</code> prints a ready link for an observer and one for an approver.</p>
  </main>`;
}
