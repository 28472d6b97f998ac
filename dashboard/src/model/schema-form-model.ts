/**
 * @module The form of an input action, from its `input_schema` (pure): JSON Schema → fields, the form's values →
 * the input value, with the checks a person should see before sending (required, numbers, enums, lengths). The
 * server checks the input again against the whole schema; what the form cannot draw (anyOf, $ref, tuples…) is a
 * JSON text field for that part, so every schema can still be answered.
 */

/** A field's key: the JSON Pointer of its value in the input, as the server's validation issues name it (`#`, `#/a/b`). */
export type FieldKey = string;

interface FieldBase {
  readonly key: FieldKey;
  /** The property name (empty at the root). */
  readonly name: string;
  readonly label: string;
  readonly description: string | null;
  readonly required: boolean;
}

/** A text value (`type: string`); `inputType` is the HTML input type its format suggests. */
export interface StringField extends FieldBase {
  readonly kind: "string";
  readonly inputType: "text" | "email" | "url" | "date";
  readonly multiline: boolean;
  readonly minLength: number | null;
  readonly maxLength: number | null;
  readonly pattern: string | null;
}

/** A number (`type: number` or `integer`). */
export interface NumberField extends FieldBase {
  readonly kind: "number";
  readonly integer: boolean;
  readonly minimum: number | null;
  readonly maximum: number | null;
  readonly exclusiveMinimum: number | null;
  readonly exclusiveMaximum: number | null;
}

/** A yes/no value (a checkbox: it always answers true or false). */
export interface BooleanField extends FieldBase {
  readonly kind: "boolean";
}

/** One of a fixed list (`enum`, `const`): a select whose option values are the indexes of `options`. */
export interface ChoiceField extends FieldBase {
  readonly kind: "choice";
  readonly options: readonly unknown[];
}

/** A list of strings, one a line. */
export interface StringListField extends FieldBase {
  readonly kind: "string-list";
  readonly minItems: number | null;
  readonly maxItems: number | null;
}

/** An object with named properties: a nested fieldset. */
export interface ObjectField extends FieldBase {
  readonly kind: "object";
  readonly fields: readonly FormField[];
}

/** Any value the form cannot draw, written as JSON. */
export interface JsonField extends FieldBase {
  readonly kind: "json";
}

export type FormField = StringField | NumberField | BooleanField | ChoiceField | StringListField | ObjectField | JsonField;

/** What the person typed, by field key: text for every field but checkboxes. */
export type FormValues = Record<FieldKey, string | boolean>;

/** Deeper than this, a part of the schema is a JSON field (a form nested further is not readable). */
const MAX_DEPTH = 5;
/** Strings that may be longer than this are written in a text area. */
const MULTILINE_OVER = 200;

type Schema = Record<string, unknown>;

function isSchema(v: unknown): v is Schema {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function numberOr(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

/** The key of `name` under `parent` (JSON Pointer escaping). */
export function childKey(parent: FieldKey, name: string): FieldKey {
  return `${parent}/${name.replace(/~/g, "~0").replace(/\//g, "~1")}`;
}

/** The one non-null type a schema names, or null when it names none or several. */
function typeOf(schema: Schema): string | null {
  const t = schema.type;
  if (typeof t === "string") return t;
  if (Array.isArray(t)) {
    const named = t.filter((x) => x !== "null");
    return named.length === 1 && typeof named[0] === "string" ? named[0] : null;
  }
  if (isSchema(schema.properties)) return "object";
  return null;
}

/** Keywords that combine or refer to other schemas: the form does not draw them. */
const COMPOSITE = ["anyOf", "oneOf", "allOf", "not", "$ref", "$dynamicRef", "if", "patternProperties", "prefixItems", "dependentSchemas"];

function fieldOf(schema: unknown, key: FieldKey, name: string, required: boolean, depth: number): FormField {
  const s = isSchema(schema) ? schema : {};
  const base = {
    key,
    name,
    label: typeof s.title === "string" && s.title !== "" ? s.title : name === "" ? "Input" : name,
    description: typeof s.description === "string" && s.description !== "" ? s.description : null,
    required,
  };
  const json: JsonField = { ...base, kind: "json" };
  if (!isSchema(schema) || COMPOSITE.some((k) => k in s)) return json;
  if (Array.isArray(s.enum) && s.enum.length > 0) return { ...base, kind: "choice", options: s.enum };
  if ("const" in s) return { ...base, kind: "choice", options: [s.const] };
  const type = typeOf(s);
  switch (type) {
    case "string": {
      const format = s.format;
      const inputType = format === "email" ? "email" : format === "uri" ? "url" : format === "date" ? "date" : "text";
      const maxLength = numberOr(s.maxLength);
      return {
        ...base,
        kind: "string",
        inputType,
        multiline: inputType === "text" && maxLength !== null && maxLength > MULTILINE_OVER,
        minLength: numberOr(s.minLength),
        maxLength,
        pattern: typeof s.pattern === "string" ? s.pattern : null,
      };
    }
    case "number":
    case "integer":
      return {
        ...base,
        kind: "number",
        integer: type === "integer",
        minimum: numberOr(s.minimum),
        maximum: numberOr(s.maximum),
        exclusiveMinimum: numberOr(s.exclusiveMinimum),
        exclusiveMaximum: numberOr(s.exclusiveMaximum),
      };
    case "boolean":
      return { ...base, kind: "boolean" };
    case "array": {
      const items = s.items;
      if (isSchema(items) && typeOf(items) === "string" && !COMPOSITE.some((k) => k in items) && !("enum" in items) && !("const" in items)) {
        return { ...base, kind: "string-list", minItems: numberOr(s.minItems), maxItems: numberOr(s.maxItems) };
      }
      return json;
    }
    case "object": {
      if (!isSchema(s.properties) || Object.keys(s.properties).length === 0 || depth >= MAX_DEPTH) return json;
      const requiredNames = new Set(Array.isArray(s.required) ? s.required.filter((r): r is string => typeof r === "string") : []);
      const fields = Object.entries(s.properties).map(([prop, sub]) => fieldOf(sub, childKey(key, prop), prop, requiredNames.has(prop), depth + 1));
      return { ...base, kind: "object", fields };
    }
    default:
      return json;
  }
}

/** The form of an action's `input_schema`: its root field (a JSON field for a null or undrawable schema). */
export function formOf(schema: Record<string, unknown> | null): FormField {
  return fieldOf(schema ?? true, "#", "", true, 0);
}

/** Every field of the form, the root and the nested ones, depth first. */
export function allFields(root: FormField): FormField[] {
  return root.kind === "object" ? [root, ...root.fields.flatMap(allFields)] : [root];
}

/** The values a new form starts with: the schema's defaults where it has them (the caller passes the schema again). */
export function initialValues(root: FormField, schema: Record<string, unknown> | null): FormValues {
  const values: FormValues = {};
  const visit = (field: FormField, sub: unknown) => {
    const s = isSchema(sub) ? sub : {};
    const def = s.default;
    switch (field.kind) {
      case "object":
        for (const f of field.fields) visit(f, isSchema(s.properties) ? s.properties[f.name] : undefined);
        return;
      case "boolean":
        values[field.key] = def === true;
        return;
      case "choice": {
        const i = def === undefined ? -1 : field.options.findIndex((o) => JSON.stringify(o) === JSON.stringify(def));
        values[field.key] = i >= 0 ? String(i) : field.required && field.options.length === 1 ? "0" : "";
        return;
      }
      case "string-list":
        values[field.key] = Array.isArray(def) ? def.filter((x) => typeof x === "string").join("\n") : "";
        return;
      case "json":
        values[field.key] = def === undefined ? "" : JSON.stringify(def, null, 2);
        return;
      default:
        values[field.key] = typeof def === "string" || typeof def === "number" ? String(def) : "";
    }
  };
  visit(root, schema);
  return values;
}

/** The input a form's values make, or the problems of its fields (by key). */
export type FormResult = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly errors: Record<FieldKey, string> };

const ABSENT = Symbol("absent");

/** Reads the form: each field's value converted to its type, optional empty fields left out, problems by field. */
export function inputOf(root: FormField, values: FormValues): FormResult {
  const errors: Record<FieldKey, string> = {};
  const read = (field: FormField): unknown => {
    const raw = values[field.key];
    const text = typeof raw === "string" ? raw : "";
    const missing = () => {
      if (field.required) errors[field.key] = "Required.";
      return ABSENT;
    };
    switch (field.kind) {
      case "object": {
        // An optional object nobody filled in is left out (its required fields only bind once it is started).
        if (!field.required && !isFilled(field, values)) return ABSENT;
        const out: Record<string, unknown> = {};
        for (const f of field.fields) {
          const v = read(f);
          if (v !== ABSENT) out[f.name] = v;
        }
        return out;
      }
      case "boolean":
        return raw === true;
      case "choice": {
        if (text === "") return missing();
        const i = Number(text);
        if (!Number.isInteger(i) || i < 0 || i >= field.options.length) {
          errors[field.key] = "Choose one of the options.";
          return ABSENT;
        }
        return field.options[i];
      }
      case "string": {
        if (text === "") return missing();
        if (field.minLength !== null && [...text].length < field.minLength) errors[field.key] = `At least ${field.minLength} characters.`;
        else if (field.maxLength !== null && [...text].length > field.maxLength) errors[field.key] = `At most ${field.maxLength} characters.`;
        else if (field.pattern !== null && !matches(field.pattern, text)) errors[field.key] = `Must match ${field.pattern}.`;
        return text;
      }
      case "number": {
        const trimmed = text.trim();
        if (trimmed === "") return missing();
        const n = Number(trimmed);
        if (!Number.isFinite(n)) {
          errors[field.key] = "Must be a number.";
          return ABSENT;
        }
        if (field.integer && !Number.isInteger(n)) errors[field.key] = "Must be a whole number.";
        else if (field.minimum !== null && n < field.minimum) errors[field.key] = `At least ${field.minimum}.`;
        else if (field.maximum !== null && n > field.maximum) errors[field.key] = `At most ${field.maximum}.`;
        else if (field.exclusiveMinimum !== null && n <= field.exclusiveMinimum) errors[field.key] = `More than ${field.exclusiveMinimum}.`;
        else if (field.exclusiveMaximum !== null && n >= field.exclusiveMaximum) errors[field.key] = `Less than ${field.exclusiveMaximum}.`;
        return n;
      }
      case "string-list": {
        const lines = text.split("\n").map((l) => l.trim()).filter((l) => l !== "");
        if (lines.length === 0 && text.trim() === "") {
          if (field.required && field.minItems !== null && field.minItems > 0) {
            errors[field.key] = `At least ${field.minItems} line${field.minItems === 1 ? "" : "s"}.`;
            return ABSENT;
          }
          return field.required ? [] : ABSENT;
        }
        if (field.minItems !== null && lines.length < field.minItems) errors[field.key] = `At least ${field.minItems} line${field.minItems === 1 ? "" : "s"}.`;
        else if (field.maxItems !== null && lines.length > field.maxItems) errors[field.key] = `At most ${field.maxItems} lines.`;
        return lines;
      }
      case "json": {
        if (text.trim() === "") return missing();
        try {
          return JSON.parse(text) as unknown;
        } catch {
          errors[field.key] = "Must be valid JSON.";
          return ABSENT;
        }
      }
    }
  };
  const value = read(root);
  if (Object.keys(errors).length > 0) return { ok: false, errors };
  return { ok: true, value: value === ABSENT ? {} : value };
}

/** True when any field under `field` holds something typed (or a checked box). */
function isFilled(field: FormField, values: FormValues): boolean {
  return allFields(field).some((f) => (f.kind === "boolean" ? values[f.key] === true : f.kind !== "object" && typeof values[f.key] === "string" && (values[f.key] as string).trim() !== ""));
}

function matches(pattern: string, text: string): boolean {
  try {
    return new RegExp(pattern, "u").test(text);
  } catch {
    // A pattern the browser cannot compile is left to the server to judge.
    return true;
  }
}

/** One problem of a refused answer, as the server's validation_error lists them. */
export interface ValidationIssue {
  readonly path: string;
  readonly message: string;
}

/** The issues of a validation_error's details (`{issues: [{path, keyword, message}]}`), or none. */
export function issuesOf(details: unknown): ValidationIssue[] {
  const issues = isSchema(details) ? details.issues : undefined;
  if (!Array.isArray(issues)) return [];
  return issues.flatMap((i) => (isSchema(i) && typeof i.path === "string" && typeof i.message === "string" ? [{ path: i.path, message: i.message }] : []));
}

/**
 * The server's issues placed on the form: each on the field its path names, or on the nearest field above it
 * (a `required` issue names the object missing the property). Issues of the object combinators (`properties`,
 * `items`) that only repeat their leaves are dropped.
 */
export function issuesByField(root: FormField, issues: readonly ValidationIssue[]): Record<FieldKey, string[]> {
  const keys = new Set(allFields(root).map((f) => f.key));
  const out: Record<FieldKey, string[]> = {};
  for (const issue of issues) {
    let key = issue.path === "" ? "#" : issue.path;
    while (!keys.has(key) && key.includes("/")) key = key.slice(0, key.lastIndexOf("/"));
    if (!keys.has(key)) key = root.key;
    (out[key] ??= []).push(issue.message);
  }
  return out;
}
