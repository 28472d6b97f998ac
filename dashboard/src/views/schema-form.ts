/** @module The fields of an input action's form, drawn from its schema's model (schema-form-model.ts). */
import { html } from "htm/preact";
import type { FieldKey, FormField, FormValues } from "../model/schema-form-model.js";

/** What the fields get: the form's model, its values, how to change one, and the problems by field. */
export interface SchemaFieldsProps {
  readonly root: FormField;
  readonly values: FormValues;
  readonly onChange: (key: FieldKey, value: string | boolean) => void;
  readonly errors: Readonly<Record<FieldKey, readonly string[]>>;
  /** Makes the ids of this form's elements unique on the page. */
  readonly idPrefix: string;
  readonly disabled: boolean;
}

/** An id for an element of field `key` (ids may not hold `#` or `/` usefully in selectors). */
function idOf(prefix: string, key: FieldKey, part: string): string {
  return `${prefix}-${key.replace(/[^A-Za-z0-9_-]/g, (c) => `_${c.charCodeAt(0).toString(16)}`)}-${part}`;
}

function optionLabel(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

function Field({ field, props }: { field: FormField; props: SchemaFieldsProps }) {
  const { values, onChange, errors, idPrefix, disabled } = props;
  const control = idOf(idPrefix, field.key, "input");
  const helpId = idOf(idPrefix, field.key, "help");
  const errorId = idOf(idPrefix, field.key, "error");
  const problems = errors[field.key] ?? [];
  const hint = field.kind === "string-list" ? "One item a line." : field.kind === "json" ? "Written as JSON." : null;
  const describedBy = [field.description !== null || hint !== null ? helpId : null, problems.length > 0 ? errorId : null].filter((x) => x !== null).join(" ") || undefined;
  const help = field.description !== null || hint !== null
    ? html`<p class="help" id=${helpId}>${field.description}${field.description !== null && hint !== null ? " " : ""}${hint}</p>`
    : null;
  const problemText = problems.length > 0 ? html`<p class="field-error" id=${errorId}>${problems.join(" ")}</p>` : null;
  const mark = field.required && field.kind !== "boolean" ? html`<span class="req" aria-hidden="true"> *</span>` : null;
  const text = typeof values[field.key] === "string" ? (values[field.key] as string) : "";
  const onText = (e: Event) => onChange(field.key, (e.currentTarget as HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement).value);
  const common = { id: control, "aria-describedby": describedBy, "aria-invalid": problems.length > 0 ? "true" : undefined, "aria-required": field.required ? "true" : undefined, disabled };

  switch (field.kind) {
    case "object":
      return html`<fieldset class="nested">
        <legend>${field.label}${mark}</legend>
        ${help}${problemText}
        ${field.fields.map((f) => html`<${Field} key=${f.key} field=${f} props=${props} />`)}
      </fieldset>`;
    case "boolean":
      return html`<div class="field field-boolean">
        <label for=${control}><input type="checkbox" ...${common} checked=${values[field.key] === true} onChange=${(e: Event) => onChange(field.key, (e.currentTarget as HTMLInputElement).checked)} /> ${field.label}</label>
        ${help}${problemText}
      </div>`;
    case "choice":
      return html`<div class="field">
        <label for=${control}>${field.label}${mark}</label>
        <select ...${common} value=${text} onChange=${onText}>
          <option value="">Choose…</option>
          ${field.options.map((o, i) => html`<option value=${String(i)}>${optionLabel(o)}</option>`)}
        </select>
        ${help}${problemText}
      </div>`;
    case "number":
      return html`<div class="field">
        <label for=${control}>${field.label}${mark}</label>
        <input type="text" inputmode=${field.integer ? "numeric" : "decimal"} ...${common} value=${text} onInput=${onText} />
        ${help}${problemText}
      </div>`;
    case "string":
      return html`<div class="field">
        <label for=${control}>${field.label}${mark}</label>
        ${field.multiline
          ? html`<textarea rows="4" ...${common} value=${text} onInput=${onText}></textarea>`
          : html`<input type=${field.inputType} ...${common} value=${text} onInput=${onText} />`}
        ${help}${problemText}
      </div>`;
    case "string-list":
    case "json":
      return html`<div class="field">
        <label for=${control}>${field.label}${mark}</label>
        <textarea rows=${field.kind === "json" ? 5 : 4} class=${field.kind === "json" ? "json" : ""} spellcheck=${field.kind === "json" ? "false" : undefined} ...${common} value=${text} onInput=${onText}></textarea>
        ${help}${problemText}
      </div>`;
  }
}

/** The form's fields: a root object's properties directly, any other root as its one field. */
export function SchemaFields(props: SchemaFieldsProps) {
  const { root } = props;
  if (root.kind === "object") {
    const problems = props.errors[root.key] ?? [];
    return html`<div class="schema-fields">
      ${root.description === null ? null : html`<p class="help">${root.description}</p>`}
      ${problems.length > 0 ? html`<p class="field-error">${problems.join(" ")}</p>` : null}
      ${root.fields.map((f) => html`<${Field} key=${f.key} field=${f} props=${props} />`)}
    </div>`;
  }
  return html`<div class="schema-fields"><${Field} field=${root} props=${props} /></div>`;
}
