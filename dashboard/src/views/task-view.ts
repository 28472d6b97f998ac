/** @module The task view: the task's DAG, live from its event stream, rebuilt by the core from its WAL. */
import { html } from "htm/preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import { normalizedStepStatus } from "../../../src/core/index.js";
import { TaskModel } from "../model/task-model.js";
import type { ViewProps } from "./app.js";

export function TaskView({ viewer, client, taskId }: ViewProps & { taskId: string }) {
  const model = useMemo(() => new TaskModel(client, viewer.sessionId, taskId), [taskId]);
  const [, setVersion] = useState(0);
  useEffect(() => {
    const abort = new AbortController();
    const off = model.onChange(() => setVersion(model.version));
    void model.follow(abort.signal);
    return () => {
      off();
      abort.abort();
    };
  }, [model]);
  const state = model.state;
  if (state.task === null) return html`<p>${model.error ?? "Loading…"}</p>`;
  return html`
    <section aria-labelledby="task-title">
      <h1 id="task-title">${state.task.title}</h1>
      <p>wal_seq <span data-wal-seq>${state.last_wal_seq}</span> · ${state.task.status}</p>
      <ul class="steps">
        ${[...state.steps.values()].map((s) => html`<li data-step-id=${s.step_id} data-status=${normalizedStepStatus(state, s)}>${s.title} <span class="status">${normalizedStepStatus(state, s)}</span></li>`)}
      </ul>
    </section>
  `;
}
