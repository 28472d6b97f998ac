/** @module The human actions the model tests ask and answer with: the approver, the input schemas, the inputs. */
import type { Actor } from "../../../src/core/index.js";
import { SESSION } from "../harness.js";

/** A person who answers actions in the task's session. */
export const approver: Actor = { role: "approver", session_id: SESSION, agent_id: "human", run_id: null };

/** The one input schema the model asks with: an object whose `region` is a string. */
export const INPUT_SCHEMA = { type: "object", required: ["region"], properties: { region: { type: "string" } } } as const;
/** An input schema the core must refuse: its regular expression does not compile. */
export const BAD_INPUT_SCHEMA = { type: "object", properties: { region: { type: "string", pattern: "([" } } } as const;
/** Answers to an input action: one fits INPUT_SCHEMA, the others do not. */
export const INPUTS = [{ region: "eu" }, { region: 5 }, {}] as const;
/** An action id no action has. */
export const MISSING_ACTION = "act_missing";
