/** @module The session view: its tasks, live from the session's event stream. */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import type { ListedTask } from "../../../src/client/index.js";
import { taskHref } from "../route.js";
import type { ViewProps } from "./app.js";

export function SessionView({ viewer, client }: ViewProps) {
  const [tasks, setTasks] = useState<ListedTask[] | null>(null);
  useEffect(() => {
    const abort = new AbortController();
    const load = () => client.listTasks(viewer.sessionId, { include_terminal: true, limit: 200 }).then((page) => setTasks(page.tasks), () => undefined);
    void load();
    void (async () => {
      try {
        for await (const _event of client.subscribeSession(viewer.sessionId, { signal: abort.signal })) void load();
      } catch {
        // The stream ends with the page.
      }
    })();
    return () => abort.abort();
  }, [viewer.sessionId]);
  return html`
    <section aria-labelledby="tasks-title">
      <h1 id="tasks-title">Tasks</h1>
      ${tasks === null
        ? html`<p>Loading…</p>`
        : html`<ul class="task-list">
            ${tasks.map((t) => html`<li data-task-id=${t.task_id} data-status=${t.status}><a href=${taskHref(t.task_id)}>${t.title}</a> <span class="status status-${t.status}">${t.status}</span></li>`)}
          </ul>`}
    </section>
  `;
}
