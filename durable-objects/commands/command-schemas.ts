/**
 * @module Schemas of the write protocol both transports of a task's writes use (HTTP routes and the command
 * socket): claim bodies, batches, and the socket's command frames.
 */
import { z } from "zod";
import { MAX_BATCH_COMMANDS } from "../../src/contract/index.js";

/** POST .../steps/{step}/claim and /steps/claim-next take no fields. */
export const EmptyBody = z.strictObject({});

/** POST .../batch: commands decided in order and written in one transaction, each with its own token. */
export const BatchBody = z.strictObject({
  commands: z
    .array(
      z.strictObject({
        token: z.string().min(1),
        method: z.enum(["POST", "PATCH", "post", "patch"]),
        path: z.string().min(1).max(1_000),
        body: z.record(z.string(), z.unknown()).optional(),
        idempotency_key: z.string().min(1).max(255).optional(),
      }),
    )
    .min(1)
    .max(MAX_BATCH_COMMANDS),
});

/**
 * A command frame: a batch body and the caller's id for the answer. Its command answers leave out the task
 * summary (`task`) unless it sends `"summary": true`.
 */
export const SocketFrame = z.strictObject({ ...BatchBody.shape, id: z.union([z.string().min(1).max(128), z.number().int()]), summary: z.boolean().optional() });
