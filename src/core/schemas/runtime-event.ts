/** @module The zod schema of a runtime event's envelope; the RuntimeEvent type (events/runtime-events.ts) is its output. */
import { z } from "zod";
import { RUNTIME_EVENT_TYPES } from "../events/event-types.js";

/**
 * The envelope of a runtime event (our own schema; the Agent Runtime event JSON Schema, vendored in
 * test/fixtures/agentruntime-schemas/, is the contract it must meet).
 */
export const RuntimeEventSchema = z.object({
  type: z.enum(RUNTIME_EVENT_TYPES),
  eventId: z.string().min(1),
  timestamp: z.string(),
  sequence: z.number().int().nonnegative(),
  schemaVersion: z.string(),
  sessionId: z.string().min(1),
  taskId: z.string().min(1),
  stepId: z.string().min(1).optional(),
  runId: z.string().min(1).optional(),
  attemptId: z.string().min(1).optional(),
  subagentId: z.string().min(1).optional(),
  actionId: z.string().min(1).optional(),
  nativeStatus: z.string().optional(),
  status: z.string().optional(),
  statusReason: z.string().optional(),
  phase: z.string().optional(),
  worker: z.record(z.string(), z.unknown()).optional(),
  taskProgress: z.record(z.string(), z.unknown()).optional(),
  payload: z.record(z.string(), z.unknown()),
  refs: z.record(z.string(), z.unknown()).optional(),
});
