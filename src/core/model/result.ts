/** @module The one result type of the runtime: a value, or a domain error as a value (never a thrown exception for an expected outcome). */
import type { RuntimeError } from "./errors.js";

/** A value, or a domain error. */
export type Result<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: RuntimeError };

/** A successful result. */
export const ok = <T>(value: T): Result<T> => ({ ok: true, value });

/** A failed result. */
export const err = <T = never>(error: RuntimeError): Result<T> => ({ ok: false, error });
