/** @module What one unit of a task object's commit path writes: its events (already applied to memory) and idempotency answers. */
import type { WalEvent } from "../../src/core/index.js";
import { answerText, type Idempotency, type PendingAnswer, replayOf } from "./storage/idempotency-store.js";
import type { RpcResult } from "../shared/rpc-result.js";
import type { AnyWriteAnswer as WriteAnswer } from "../../src/contract/index.js";

/** The events and answers of one unit of work, written in one transaction by the commit shell. */
export class UnitOfWork {
  readonly events: WalEvent[] = [];
  readonly answers: PendingAnswer[] = [];

  /** Records the answer to return for a retry with the same key and body. */
  remember(idem: Idempotency | null, answer: WriteAnswer, now: number): void {
    if (idem !== null) this.answers.push({ key: idem.key, hash: idem.hash, answer: answerText(answer), at: now });
  }

  /** A key already answered earlier in this same unit (two commands of one batch sharing a key). */
  findPending(idem: Idempotency | null): RpcResult<WriteAnswer> | null {
    const row = idem === null ? undefined : this.answers.find((a) => a.key === idem.key);
    if (row === undefined) return null;
    return replayOf<WriteAnswer>(idem!, { body_hash: row.hash, answer: row.answer, created_at_ms: row.at }, row.at);
  }
}
