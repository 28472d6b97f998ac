/**
 * @module Types of the commands `decide` accepts, each the output of its zod schema (../schemas/commands.ts)
 * imported as a type only: no zod at run time.
 */
import type { z } from "zod";
import type { StepInputSchema } from "../schemas/delegation-records.js";
import type { CommandSchema, DelegationReportSchema, PatchOpSchema, StepQuerySchema } from "../schemas/commands.js";

/** A step as the orchestrator writes it. */
export type StepInput = z.infer<typeof StepInputSchema>;
/** One patch operation of agent.task_update. */
export type PatchOp = z.infer<typeof PatchOpSchema>;
/** What a delegate's outbound call found. */
export type DelegationReport = z.infer<typeof DelegationReportSchema>;
/** Every command `decide` accepts. */
export type Command = z.infer<typeof CommandSchema>;
/** The command of one type. */
export type CommandOf<T extends Command["type"]> = Extract<Command, { type: T }>;
/** agent.task_query_steps filters. */
export type StepQuery = z.infer<typeof StepQuerySchema>;
