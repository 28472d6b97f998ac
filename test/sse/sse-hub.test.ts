/**
 * The SSE hub in the Workers runtime (its own ReadableStream implementation): catch-up paced by the reader,
 * live fan-out of one encoded chunk, coalescing for a busy reader, slow subscribers closed, lifetimes,
 * heartbeats, cancels, the end frame, the subscriber cap.
 */
import { describe, expect, it } from "vitest";
import { type CatchUp, SseHub } from "../../durable-objects/shared/sse-hub.js";
import { sleep } from "../support/support.js";

const LIMITS = { heartbeatMs: 60_000, maxStreamMs: 60_000, maxQueuedBytes: 1_024, maxSubscribers: 64, maxPerToken: 64 };
/** A subscriber of one token, with nothing to probe. */
const ONE = { token: "one" };
const live: CatchUp = () => ({ frames: "", next: "live" });
const text = (chunk: Uint8Array | undefined) => new TextDecoder().decode(chunk);

/** Lets pending stream callbacks run. */
const settle = () => sleep(5);

/** A reader that has asked for data (as the platform's pump always does). */
async function waitingReader(stream: ReadableStream<Uint8Array>) {
  const reader = stream.getReader();
  const first = reader.read();
  await settle();
  return { reader, first };
}

describe("SseHub", () => {
  it("Should read one page of history per read, skip publishes until caught up, then send live frames", async () => {
    const hub = new SseHub(LIMITS);
    let calls = 0;
    const stream = hub.open(() => {
      calls += 1;
      return calls < 3 ? { frames: `id: ${calls}\ndata: page\n\n`, next: "more" } : { frames: "id: 3\ndata: last\n\n", next: "live" };
    }, ONE);
    await settle();
    expect(calls).toBe(0); // nothing is read from storage before the reader asks
    const reader = stream.getReader();
    expect(text((await reader.read()).value)).toBe("id: 1\ndata: page\n\n");
    await settle();
    expect(calls).toBe(1); // and then one page per read

    hub.publish("id: 99\ndata: not yet\n\n"); // not live yet: it reads this from storage instead
    expect(text((await reader.read()).value)).toBe("id: 2\ndata: page\n\n");
    expect(text((await reader.read()).value)).toBe("id: 3\ndata: last\n\n");
    expect(hub.liveCount).toBe(1);
    hub.publish("id: 4\ndata: live\n\n");
    expect(text((await reader.read()).value)).toBe("id: 4\ndata: live\n\n");
    await reader.cancel();
    await settle();
    expect(hub.stats).toMatchObject({ open: 0, live: 0, closed: { cancelled: 1 } });
  });

  it("Should send every subscriber the same frames, commits published together as one chunk", async () => {
    const hub = new SseHub(LIMITS);
    const readers = await Promise.all([1, 2, 3].map(() => waitingReader(hub.open(live, ONE))));
    hub.publish("id: 1\n\n");
    hub.publish("id: 2\n\n");
    hub.publish("id: 3\n\n");
    for (const { first } of readers) expect(text((await first).value)).toBe("id: 1\n\nid: 2\n\nid: 3\n\n");
    const next = readers.map(({ reader }) => reader.read());
    await settle();
    hub.publish("id: 4\n\n");
    for (const n of next) expect(text((await n).value)).toBe("id: 4\n\n");
    // Nobody reading: the frames wait, and the next read takes all of them at once.
    hub.publish("id: 5\n\n");
    await settle();
    hub.publish("id: 6\n\n");
    for (const { reader } of readers) expect(text((await reader.read()).value)).toBe("id: 5\n\nid: 6\n\n");
    await Promise.all(readers.map(({ reader }) => reader.cancel()));
    await settle();
    expect(hub.stats.open).toBe(0);
  });

  it("Should close a subscriber with more than maxQueuedBytes waiting, dropping them, and keep the others", async () => {
    const hub = new SseHub(LIMITS);
    const slow = await waitingReader(hub.open(live, ONE));
    const fast = await waitingReader(hub.open(live, ONE));
    const frame = `data: ${"y".repeat(400)}\n\n`;
    hub.publish(frame);
    expect(text((await slow.first).value)).toBe(frame);
    expect(text((await fast.first).value)).toBe(frame);
    for (let i = 0; i < 10; i++) {
      const next = fast.reader.read();
      await settle();
      hub.publish(frame);
      expect(text((await next).value)).toBe(frame);
    }
    expect(hub.stats.closed.slow).toBe(1);
    expect(hub.liveCount).toBe(1);
    await expect(slow.reader.read()).rejects.toThrow(/too far behind/);
    await fast.reader.cancel();
  });

  it("Should give a reader with nothing pending a commit larger than maxQueuedBytes whole, and close it when more comes while that waits", async () => {
    const hub = new SseHub(LIMITS);
    const sub = await waitingReader(hub.open(live, ONE));
    const large = `data: ${"z".repeat(5 * LIMITS.maxQueuedBytes)}\n\n`;
    hub.publish(large);
    expect(text((await sub.first).value)).toBe(large);
    expect(hub.stats.closed.slow).toBe(0);
    // Not reading now: the next large commit waits for the reader, and anything more is past the bound.
    hub.publish(large);
    expect(hub.stats.closed.slow).toBe(0);
    hub.publish("data: small\n\n");
    expect(hub.stats.closed.slow).toBe(1);
    await expect(sub.reader.read()).rejects.toThrow(/too far behind/);
  });

  it("Should close every stream after maxStreamMs, so nothing outlives an undetected disconnect", async () => {
    const hub = new SseHub({ ...LIMITS, maxStreamMs: 100 });
    const { reader, first } = await waitingReader(hub.open(live, ONE));
    hub.publish("data: one\n\n");
    expect(text((await first).value)).toBe("data: one\n\n");
    const t0 = Date.now();
    expect((await reader.read()).done).toBe(true);
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(hub.stats).toMatchObject({ open: 0, live: 0, closed: { lifetime: 1 } });
  });

  it("Should not close a reader that waits for a large commit when a heartbeat comes before the commit is handed over", async () => {
    const hub = new SseHub(LIMITS);
    const { reader, first } = await waitingReader(hub.open(live, ONE));
    const large = `data: ${"x".repeat(LIMITS.maxQueuedBytes * 2)}\n\n`;
    hub.publish(large);
    // The heartbeat's timer fires before the flush's (a busy isolate): the reader is waiting, so the commit goes to it whole.
    (hub as unknown as { beat(): void }).beat();
    expect(text((await first).value)).toBe(large);
    expect(hub.stats).toMatchObject({ live: 1, closed: { slow: 0 } });
    await reader.cancel();
  });

  it("Should send heartbeats to idle streams and stop its timer when the last one goes", async () => {
    const hub = new SseHub({ ...LIMITS, heartbeatMs: 30 });
    const reader = hub.open(live, ONE).getReader();
    expect(text((await reader.read()).value)).toBe(": heartbeat\n\n");
    expect(text((await reader.read()).value)).toBe(": heartbeat\n\n");
    await reader.cancel();
    await settle();
    expect((hub as unknown as { heartbeat: unknown }).heartbeat).toBeNull();
  });

  it("Should end live subscribers with the last frame and leave those still catching up to their own history", async () => {
    const hub = new SseHub(LIMITS);
    const liveOne = await waitingReader(hub.open(live, ONE));
    let stage = 0;
    const catching = hub.open(() => (stage++ === 0 ? { frames: "data: history\n\n", next: "more" } : { frames: "event: end\ndata: {}\n\n", next: "close" }), ONE).getReader();
    expect(text((await catching.read()).value)).toBe("data: history\n\n");
    hub.publish("data: last\n\n");
    hub.end(() => "event: end\ndata: {}\n\n");
    expect(text((await liveOne.first).value)).toBe("data: last\n\nevent: end\ndata: {}\n\n");
    expect((await liveOne.reader.read()).done).toBe(true);
    expect(text((await catching.read()).value)).toBe("event: end\ndata: {}\n\n");
    expect((await catching.read()).done).toBe(true);
    expect(hub.stats).toMatchObject({ open: 0, closed: { end: 2 } });
  });

  it("Should end the subscribers of an ended run, live or still catching up, each with its own last frame, and no others", async () => {
    const hub = new SseHub(LIMITS);
    const runLive = await waitingReader(hub.open(live, { token: "w1", runId: "run_1" }));
    const other = await waitingReader(hub.open(live, { token: "w2", runId: "run_2" }));
    let stage = 0;
    const runCatching = hub.open(() => (stage++ === 0 ? { frames: "data: history\n\n", next: "more" } : { frames: "data: more history\n\n", next: "more" }), { token: "w1", runId: "run_1" }).getReader();
    expect(text((await runCatching.read()).value)).toBe("data: history\n\n");
    hub.publish("data: run ended\n\n");
    hub.end((holder) => `event: end\ndata: {"run_id":"${holder.runId}"}\n\n`, (holder) => holder.runId === "run_1");
    expect(text((await runLive.first).value)).toBe('data: run ended\n\nevent: end\ndata: {"run_id":"run_1"}\n\n');
    expect((await runLive.reader.read()).done).toBe(true);
    // Its history is not read further: the token reads nothing more.
    expect(text((await runCatching.read()).value)).toBe('event: end\ndata: {"run_id":"run_1"}\n\n');
    expect((await runCatching.read()).done).toBe(true);
    expect(text((await other.first).value)).toBe("data: run ended\n\n");
    expect(hub.stats).toMatchObject({ open: 1, closed: { end: 2 } });
  });

  it("Should refuse a subscriber past maxSubscribers, saying when to retry, and take one again once one closes", async () => {
    const hub = new SseHub({ ...LIMITS, heartbeatMs: 5_000, maxSubscribers: 2 });
    expect(hub.full("one")).toBeNull();
    const readers = [hub.open(live, ONE).getReader(), hub.open(live, ONE).getReader()];
    // The next heartbeat (5 s) finds vanished clients before the oldest stream's lifetime (60 s) ends.
    expect(hub.full("one")).toEqual({ scope: "object", open: 2, max: 2, retryAfterMs: 5_000 });
    expect(() => hub.open(live, ONE)).toThrow(RangeError);
    // Past the oldest stream's lifetime minus 2.5 s, that comes first (rounded up to whole seconds).
    expect(hub.full("one", Date.now() + 57_500)?.retryAfterMs).toBe(3_000);
    await readers[0]!.cancel();
    await settle();
    expect(hub.full("one")).toBeNull();
    const third = hub.open(live, ONE).getReader();
    expect(hub.stats).toMatchObject({ open: 2, opened: 3 });
    await Promise.all([readers[1]!.cancel(), third.cancel()]);
  });
});
