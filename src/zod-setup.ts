/**
 * @module zod's global settings for the service, imported first by the Worker entry so they hold before any
 * schema is built.
 *
 * zod 4.6 wraps every object, record and array schema whose shape it cannot prove acyclic (any made with
 * `.extend`, `.omit` or `.pick`) in a memoizer that tracks each parsed value in WeakMaps, so that cyclic
 * *inputs* parse. Ours come from JSON.parse and cannot be cyclic, and on the write path that bookkeeping was
 * the largest single cost of a batch (about a fifth of the task object's CPU per command); a memoizer that
 * does nothing turns it off.
 */
import { z } from "zod";

const noMemoizer = {
  attach(): void {},
  guard(): void {},
  alloc<T extends object>(_inst: unknown, _payload: unknown, empty: T): T {
    return empty;
  },
};

z.config({ memoizer: noMemoizer });
