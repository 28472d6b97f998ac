/** @module The basic field schemas every record and command shares: ids, times, titles, texts, artifact refs, retry policies. */
import { z } from "zod";
import { ID_PATTERN, MAX_ARTIFACTS, MAX_TEXT, MAX_TITLE } from "../model/limits.js";

/** A safe id or wal name: `^[a-z0-9_-]{1,64}$`, so never `/`, `..`, a hidden name, empty or too long. */
export const IdSchema = z.string().regex(ID_PATTERN, "must match ^[a-z0-9_-]{1,64}$");
/** An ISO-8601 UTC timestamp, as every record and event stores time. */
export const TimestampSchema = z.string();
/** A title. */
export const TitleSchema = z.string().min(1).max(MAX_TITLE);
/** A summary, result summary or reason. */
export const TextSchema = z.string().max(MAX_TEXT);
/** Artifact references produced by a step. */
export const ArtifactIdsSchema = z.array(z.string().min(1).max(512)).max(MAX_ARTIFACTS);

/**
 * A retry policy (on a step, or the task's default): an attempt that ends failed, timed_out or lost is retried
 * after `initial_interval_ms * backoff_coefficient^(n-1)` (at most `max_interval_ms`) until `max_attempts`
 * attempts were made; a failure whose reason is in `non_retryable_reasons` is final at once.
 */
export const RetryPolicySchema = z.strictObject({
  max_attempts: z.number().int().min(1).max(100),
  initial_interval_ms: z.number().int().min(0).max(86_400_000),
  backoff_coefficient: z.number().min(1).max(100),
  max_interval_ms: z.number().int().min(0).max(7 * 86_400_000),
  non_retryable_reasons: z.array(z.string().min(1).max(200)).max(50).optional(),
});
