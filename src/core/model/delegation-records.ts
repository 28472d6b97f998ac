/**
 * @module Types of delegated steps: the delegate a step names (a child task, or an A2A peer's task), one
 * attempt's delegation with the remote task's refs, and a child task's link to its parent. Each is the output of
 * its zod schema (../schemas/delegation-records.ts), imported as a type only: no zod at run time.
 */
import type { z } from "zod";
import type { DelegatedFromSchema, DelegateSchema, DelegationOutcomeSchema, DelegationSchema, DeliveryStateSchema } from "../schemas/delegation-records.js";

export type { ChildStep, ChildTaskSpec } from "../schemas/delegation-records.js";

/** A delegated step's work: a child task in the same session, or a task of an A2A peer. */
export type Delegate = z.infer<typeof DelegateSchema>;
/** How a delegation's attempt ended. */
export type DelegationOutcome = z.infer<typeof DelegationOutcomeSchema>;
/** One attempt of a delegated step. */
export type Delegation = z.infer<typeof DelegationSchema>;
/** A child task's link back to the delegation that created it. */
export type DelegatedFrom = z.infer<typeof DelegatedFromSchema>;
/** Whether a child task's result reached its parent: pending until the parent recorded it (or is gone). */
export type DeliveryState = z.infer<typeof DeliveryStateSchema>;
