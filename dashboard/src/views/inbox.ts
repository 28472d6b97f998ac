/**
 * @module The session's inbox of open actions, newest first: approvals answered Approve or Reject, input actions
 * with a form drawn from their `input_schema`. Only the roles that may answer (orchestrator, approver) get the
 * controls; anyone else reads it. It is read again on every pulse of the session stream.
 */
import { html } from "htm/preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import { type InboxAction, isRuntimeApiError, type RespondActionInput } from "../../../src/client/index.js";
import { type FieldKey, type FormValues, formOf, initialValues, inputOf, issuesByField, issuesOf } from "../model/schema-form-model.js";
import { ago, canAnswer, Coalescer, inboxOrder } from "../model/session-model.js";
import { taskHref } from "../route.js";
import type { ViewProps } from "./view-props.js";
import { SchemaFields } from "./schema-form.js";

/** Most open actions read per request (the API's largest page). */
const INBOX_PAGE = 500;

/** The inbox; `pulse` changes on every event of the session stream, and each change reads it again. */
export function Inbox({ viewer, client, pulse }: ViewProps & { pulse: number }) {
  const [actions, setActions] = useState<InboxAction[] | null>(null);
  const [total, setTotal] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const reader = useMemo(
    () =>
      new Coalescer(async () => {
        try {
          const page = await client.sessionActions(viewer.sessionId, { status: "open", limit: INBOX_PAGE });
          setActions(inboxOrder(page.actions));
          setTotal(page.total);
          setError(null);
        } catch (e) {
          setError(e instanceof Error ? e.message : String(e));
        }
      }),
    [viewer.sessionId],
  );
  useEffect(() => reader.trigger(), [reader, pulse]);
  const answering = canAnswer(viewer.role);
  return html`<section class="inbox" aria-label="Open actions">
    <h2>Open actions <span class="count-pill">${actions === null ? "…" : total}</span></h2>
    ${answering ? null : html`<p class="muted">Read only: an approver or the orchestrator answers these.</p>`}
    ${error === null ? null : html`<p class="form-error" role="alert">Could not read the inbox: ${error}</p>`}
    ${actions === null
      ? html`<p>Loading…</p>`
      : actions.length === 0
        ? html`<p class="muted">Nothing waits for a person.</p>`
        : html`<ul class="inbox-list">
            ${actions.map((a) => html`<${ActionItem} key=${a.action_id} action=${a} client=${client} viewer=${viewer} answering=${answering} onAnswered=${() => reader.trigger()} />`)}
          </ul>`}
  </section>`;
}

interface ItemProps extends ViewProps {
  readonly action: InboxAction;
  readonly answering: boolean;
  readonly onAnswered: () => void;
}

function ActionItem({ action, client, viewer, answering, onAnswered }: ItemProps) {
  const kindLabel = action.kind === "approval" ? "Approval" : "Input";
  const headingId = `action-${action.action_id}-title`;
  return html`<li class="action-item" data-action-id=${action.action_id} data-kind=${action.kind} aria-labelledby=${headingId}>
    <h3 id=${headingId}><span class="kind kind-${action.kind}">${kindLabel}</span> ${action.prompt}</h3>
    <p class="meta">
      <a href=${taskHref(action.task_id)}>${action.task_title}</a>
      ${" · "}${action.step_id === null ? html`task-level` : html`step <code>${action.step_id}</code>`}
      ${" · "}asked by <code>${action.requested_by_agent_id}</code>
      ${" · "}<time datetime=${action.created_at} title=${action.created_at}>${ago(action.created_at, Date.now())}</time>
      ${" · "}expires <time datetime=${action.expires_at} title=${action.expires_at}>${new Date(action.expires_at).toLocaleString()}</time>
    </p>
    ${answering ? html`<${ActionForm} action=${action} client=${client} viewer=${viewer} onAnswered=${onAnswered} />` : null}
  </li>`;
}

function ActionForm({ action, client, viewer, onAnswered }: Omit<ItemProps, "answering">) {
  const root = useMemo(() => formOf(action.input_schema), [action.action_id]);
  const [values, setValues] = useState<FormValues>(() => initialValues(root, action.input_schema));
  const [comment, setComment] = useState("");
  const [fieldErrors, setFieldErrors] = useState<Record<FieldKey, string[]>>({});
  const [message, setMessage] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [answered, setAnswered] = useState<string | null>(null);
  const prefix = `f-${action.action_id}`;

  const send = async (decision: RespondActionInput["decision"]) => {
    let input: unknown;
    if (decision === "submitted") {
      const read = inputOf(root, values);
      if (!read.ok) {
        setFieldErrors(Object.fromEntries(Object.entries(read.errors).map(([k, v]) => [k, [v]])));
        setMessage("Some fields need attention.");
        return;
      }
      input = read.value;
    }
    setBusy(true);
    setMessage(null);
    setFieldErrors({});
    try {
      const body = { decision, ...(input === undefined ? {} : { input }), ...(comment.trim() === "" ? {} : { comment: comment.trim() }) } as RespondActionInput;
      await client.respondAction({ sessionId: viewer.sessionId, taskId: action.task_id }, action.action_id, body);
      setAnswered(decision);
      onAnswered();
    } catch (e) {
      if (isRuntimeApiError(e)) {
        setMessage(`${e.message}${e.status >= 400 && e.status < 500 ? "" : " (try again)"}`);
        setFieldErrors(issuesByField(root, issuesOf(e.details)));
        // Someone else answered it first: the inbox drops it on its next read.
        if (e.code === "action_resolved" || e.code === "not_found") onAnswered();
      } else {
        setMessage(e instanceof Error ? e.message : String(e));
      }
    } finally {
      setBusy(false);
    }
  };

  if (answered !== null) return html`<p class="answered" role="status">Answered: ${answered}.</p>`;
  const onSubmit = (e: Event) => {
    e.preventDefault();
    void send(action.kind === "approval" ? "approved" : "submitted");
  };
  const commentId = `${prefix}-comment`;
  return html`<form class="action-form" noValidate onSubmit=${onSubmit} aria-describedby=${message === null ? undefined : `${prefix}-message`}>
    ${action.kind === "input"
      ? html`<p class="muted small">Fields marked * are required.</p>
          <${SchemaFields} root=${root} values=${values} errors=${fieldErrors} idPrefix=${prefix} disabled=${busy}
            onChange=${(key: FieldKey, value: string | boolean) => setValues((v) => ({ ...v, [key]: value }))} />`
      : null}
    <div class="field">
      <label for=${commentId}>Comment (optional)</label>
      <textarea id=${commentId} rows="2" value=${comment} disabled=${busy} onInput=${(e: Event) => setComment((e.currentTarget as HTMLTextAreaElement).value)}></textarea>
    </div>
    ${message === null ? null : html`<p class="form-error" role="alert" id=${`${prefix}-message`}>${message}</p>`}
    <div class="buttons">
      <button type="submit" class="primary" disabled=${busy}>${action.kind === "approval" ? "Approve" : "Submit"}</button>
      <button type="button" class="secondary" disabled=${busy} onClick=${() => void send("rejected")}>Reject</button>
    </div>
  </form>`;
}
