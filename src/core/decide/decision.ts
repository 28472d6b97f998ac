/** @module Building a `Decision`: refused with exactly one error, or accepted with every event it emits. */
import type { Decision, DecisionValue, Emitter } from "./context.js";
import type { RuntimeError } from "../model/errors.js";

const NONE: DecisionValue = { kind: "none" };

/** A refused decision: one error and nothing written. */
export function refuse(error: RuntimeError): Decision {
  return { ok: false, error };
}

/** An accepted decision: the emitter's events, and what the caller learns besides them. */
export function accept(em: Emitter, value: DecisionValue = NONE): Decision {
  return { ok: true, events: em.events, value };
}

/** An accepted decision that writes nothing (nothing was due, or a normal "nothing to claim"). */
export function acceptNothing(value: DecisionValue = NONE): Decision {
  return { ok: true, events: [], value };
}
