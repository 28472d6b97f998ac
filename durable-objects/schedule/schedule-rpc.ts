/**
 * @module The schedule object's RPC surface as its callers see it (the routes, the bindings in
 * durable-objects/shared/env.ts): an interface, so they type the stub without importing the object class.
 */
import type { CreateScheduleRequest, Schedule, TriggerAnswer } from "../../src/contract/index.js";
import type { Actor } from "../../src/core/index.js";
import type { RpcResult } from "../shared/rpc-result.js";
import type { SubscriberHolder } from "../shared/sse-hub.js";

/** The RPC methods of one schedule's object (named `<session_id>/<schedule_id>`). */
export interface ScheduleRpc extends Rpc.DurableObjectBranded {
  /**
   * Creates the schedule (the body validated by the route, its timing too); schedule_conflict when this id was ever
   * used in the session, limit_exceeded past MAX_SCHEDULES_PER_SESSION, not_found without the session. A retry with
   * the create's Idempotency-Key and body answers the schedule again (`created: false`).
   */
  create(actor: Actor, sessionId: string, body: CreateScheduleRequest, idem: { key: string; hash: string } | null): Promise<RpcResult<{ schedule: Schedule; created: boolean }>>;
  /** The schedule (not_found: none, or deleted). */
  get(): Promise<RpcResult<Schedule>>;
  /** No occurrence falls while paused; none is missed either (resume starts from then). */
  pause(): Promise<RpcResult<Schedule>>;
  resume(): Promise<RpcResult<Schedule>>;
  /** One occurrence now (the overlap policy applies to it as to any). */
  trigger(): Promise<RpcResult<TriggerAnswer>>;
  /** Stops and removes the schedule; tasks it started are left alone. */
  remove(): Promise<RpcResult<Schedule>>;
  /** GET .../schedules/{schedule_id}/events: the event log after `afterSeq`, then live events. */
  streamEvents(afterSeq: number, holder: SubscriberHolder): Promise<RpcResult<ReadableStream<Uint8Array>>>;
  /** The Worker serving subscriber `id` saw its client go: free its slot. */
  dropSubscriber(id: string): Promise<void>;
}
