/**
 * @module The `sequence` of runtime events: `wal_seq * SEQUENCE_STRIDE + k`, where k is the event's index in
 * its WAL event's projection. Strictly increasing along a projected WAL, computed from the WAL alone (replay,
 * export and every stream agree, no counter is stored), and a resume point by itself: it maps back to (wal_seq, k).
 */

/**
 * How many sequence numbers each WAL event owns. Every projection must emit fewer runtime events than this
 * (today at most 2), or two events would share a sequence. A power of ten keeps ids readable: 71 is the
 * second runtime event of WAL event 7. Changing it changes every id already handed out, so it is fixed.
 */
export const SEQUENCE_STRIDE = 10;

/** The sequence of the k-th runtime event (k from 0) of WAL event `walSeq`. */
export function runtimeSequence(walSeq: number, k: number): number {
  return walSeq * SEQUENCE_STRIDE + k;
}

/** Where a sequence sits: its WAL event and its index in that event's projection. */
export function sequencePosition(sequence: number): { readonly walSeq: number; readonly k: number } {
  return { walSeq: Math.floor(sequence / SEQUENCE_STRIDE), k: sequence % SEQUENCE_STRIDE };
}
