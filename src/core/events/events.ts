/**
 * @module The WAL event union as types, discriminated on `event_type`: each is the output of the zod schema that
 * decodes stored rows (../schemas/wal-events.ts), imported as a type only, so no zod runs here.
 */
import type { z } from "zod";
import type { RecordedStepSchema, RetryOutcomeSchema, WalEventSchema } from "../schemas/wal-events.js";

export { WAL_EVENT_TYPES } from "./event-types.js";

/** A step as the WAL records it. */
export type RecordedStep = z.infer<typeof RecordedStepSchema>;
/** What the retry policy made of an ended attempt. */
export type RetryOutcome = z.infer<typeof RetryOutcomeSchema>;

/** One WAL row: envelope fields plus a typed payload. */
export type WalEvent = z.infer<typeof WalEventSchema>;
/** Every WAL event type. */
export type WalEventType = WalEvent["event_type"];
/** The WAL event of one type. */
export type WalEventOf<T extends WalEventType> = Extract<WalEvent, { event_type: T }>;
/** An event before the shell stamps nothing: decide fills in every field, including wal_seq. */
export type WalPayloadOf<T extends WalEventType> = WalEventOf<T>["payload"];
