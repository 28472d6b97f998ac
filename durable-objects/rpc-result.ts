/** @module The answer of every Durable Object RPC: a value, or a domain error (never a thrown exception for expected outcomes). */
import type { RuntimeError } from "../src/core/index.js";

/** An RPC answer: a value, or a domain error. */
export type RpcResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: RuntimeError };

/** A successful answer. */
export const ok = <T>(value: T): RpcResult<T> => ({ ok: true, value });

/** A failed answer. */
export const err = <T>(error: RuntimeError): RpcResult<T> => ({ ok: false, error });
