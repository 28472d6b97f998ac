/** @module The schemas of free-form JSON values (a run's `result`, `metadata`, …): any JSON within the bounds of model/json-bounds.ts. */
import { z } from "zod";
import { jsonBoundsProblem, MAX_JSON_BYTES, MAX_JSON_DEPTH } from "../model/json-bounds.js";

const BOUNDS_TEXT = `at most ${MAX_JSON_DEPTH} levels deep and ${MAX_JSON_BYTES} bytes of JSON`;

function withinBounds(value: unknown, ctx: z.RefinementCtx): void {
  const problem = jsonBoundsProblem(value);
  if (problem !== null) ctx.addIssue({ code: "custom", message: `${problem} (free-form values are ${BOUNDS_TEXT})`, params: { max_depth: MAX_JSON_DEPTH, max_bytes: MAX_JSON_BYTES } });
}

/** Any JSON value within the bounds (a run's `result`). */
export const JsonValueSchema = z.unknown().superRefine(withinBounds).describe(`Any JSON value, ${BOUNDS_TEXT}.`);

/** A JSON object within the bounds (task and session `metadata`). */
export const JsonObjectSchema = z.record(z.string(), z.unknown()).superRefine(withinBounds).describe(`A JSON object, ${BOUNDS_TEXT}.`);
