/**
 * @module The ready queue of one worker pool: ready step ids in creation order. Steps are bucketed by
 * ordinal (BUCKET_SIZE ordinals a bucket), so an insert or a removal anywhere touches one small sorted
 * bucket, not the whole queue: a claim from the middle of 10,000 ready steps costs what it costs in 10.
 * The layout depends only on which steps are ready, so a replayed or rebuilt index equals the live one.
 */

/** Ordinals per bucket. */
const BUCKET_SIZE = 256;

/** Ready step ids of one pool, in creation (ordinal) order. */
export class ReadyQueue implements Iterable<string> {
  /** bucket number → [ordinal, id] pairs of that bucket's ready steps, sorted by ordinal. */
  private readonly buckets = new Map<number, [number, string][]>();
  /** Numbers of the non-empty buckets, ascending. */
  private readonly keys: number[] = [];
  private count = 0;

  /** How many steps are ready. */
  get size(): number {
    return this.count;
  }

  /** Adds a ready step. */
  add(stepId: string, ordinal: number): void {
    const key = Math.floor(ordinal / BUCKET_SIZE);
    let bucket = this.buckets.get(key);
    if (bucket === undefined) {
      bucket = [];
      this.buckets.set(key, bucket);
      this.keys.splice(lowerBound(this.keys, key, (k) => k), 0, key);
    }
    bucket.splice(lowerBound(bucket, ordinal, (e) => e[0]), 0, [ordinal, stepId]);
    this.count += 1;
  }

  /** Removes a step; a step that is not queued is ignored. */
  remove(stepId: string, ordinal: number): void {
    const key = Math.floor(ordinal / BUCKET_SIZE);
    const bucket = this.buckets.get(key);
    if (bucket === undefined) return;
    const at = lowerBound(bucket, ordinal, (e) => e[0]);
    if (bucket[at]?.[1] !== stepId) return;
    bucket.splice(at, 1);
    this.count -= 1;
    if (bucket.length === 0) {
      this.buckets.delete(key);
      this.keys.splice(lowerBound(this.keys, key, (k) => k), 1);
    }
  }

  /** The earliest-created ready step. */
  first(): string | undefined {
    const key = this.keys[0];
    return key === undefined ? undefined : this.buckets.get(key)![0]![1];
  }

  /** Ready step ids in creation order. */
  *[Symbol.iterator](): Iterator<string> {
    for (const key of this.keys) for (const [, id] of this.buckets.get(key)!) yield id;
  }

  /** Ready step ids in creation order, as an array. */
  ids(): string[] {
    return [...this];
  }
}

/** First index whose value is not below `target` in an array sorted by `valueOf`. */
function lowerBound<T>(list: readonly T[], target: number, valueOf: (item: T) => number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (valueOf(list[mid]!) < target) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
