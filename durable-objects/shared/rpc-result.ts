/** @module The answer of every Durable Object RPC: the core's Result (a value, or a domain error), under the name the RPC signatures use. */
import type { Result } from "../../src/core/index.js";

/** An RPC answer: a value, or a domain error. */
export type RpcResult<T> = Result<T>;

export { err, ok } from "../../src/core/index.js";
