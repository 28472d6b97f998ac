/** @module bench:ceiling's parts: the listening ports read from /proc's TCP table, and the socket's best against BullMQ's best per target. */
import { describe, expect, it } from "vitest";
import { listeningLoopback } from "../../scripts/bench/harness/inner-workerd.js";
import type { Measured } from "../../scripts/bench/scenarios/group-commit.js";
import { ceilingRatios, type Pooled } from "../../scripts/bench/scenarios/storage.js";

describe("listeningLoopback", () => {
  // /proc/net/tcp: local and remote address as hex IP:port, st 0A = LISTEN, 01 = ESTABLISHED; the inode is field 10.
  const table = [
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
    "   0: 0100007F:2277 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0000000000000000 100 0 0 10 0",
    "   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1002 1 0000000000000000 100 0 0 10 0",
    "   2: 0100007F:A1B2 0100007F:2277 01 00000000:00000000 00:00000000 00000000     0        0 1003 1 0000000000000000 20 4 30 10 -1",
    "   3: 0100007F:8235 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1004 1 0000000000000000 100 0 0 10 0",
    "",
  ].join("\n");

  it("Should keep only sockets listening on 127.0.0.1, by inode, with their ports decoded from hex", () => {
    expect([...listeningLoopback(table)]).toEqual([["1001", 0x2277], ["1004", 0x8235]]);
  });

  it("Should find nothing in a table with only its header", () => {
    expect(listeningLoopback(table.split("\n")[0]!).size).toBe(0);
  });
});

describe("ceilingRatios", () => {
  const pooled = (workers: number, series: string, per_s: number): Pooled => ({ workers, series, per_s, per_round: [per_s], server_cpu_ms_per_step: 0.1, client_cpu_ms_per_step: 0.1, problems: 0, result: {} as Measured });
  const runs = [
    pooled(32, "this f1", 6_000), pooled(32, "this f3", 7_000), pooled(32, "ceiling f1", 9_000), pooled(32, "ceiling f3", 8_000),
    pooled(32, "bullmq-everysec concurrency", 14_000), pooled(32, "bullmq-everysec workers", 10_000), pooled(32, "bullmq-always concurrency", 9_000), pooled(32, "bullmq-always workers", 12_000),
    pooled(1, "this f1", 1_000), pooled(1, "ceiling f1", 2_000), pooled(1, "bullmq-everysec concurrency", 5_000), pooled(1, "bullmq-always concurrency", 2_500),
  ];

  it("Should divide each target's better frames per tick by each BullMQ's better worker model, at 32 workers and at 1", () => {
    const ratios = ceilingRatios(runs);
    expect(ratios.map((r) => [r.workers, r.target, r.appendfsync, r.ours, r.peer, r.ratio])).toEqual([
      [32, "this", "everysec", "this f3", "bullmq-everysec concurrency", 0.5],
      [32, "this", "always", "this f3", "bullmq-always workers", 0.58],
      [32, "ceiling", "everysec", "ceiling f1", "bullmq-everysec concurrency", 0.64],
      [32, "ceiling", "always", "ceiling f1", "bullmq-always workers", 0.75],
      [1, "this", "everysec", "this f1", "bullmq-everysec concurrency", 0.2],
      [1, "this", "always", "this f1", "bullmq-always concurrency", 0.4],
      [1, "ceiling", "everysec", "ceiling f1", "bullmq-everysec concurrency", 0.4],
      [1, "ceiling", "always", "ceiling f1", "bullmq-always concurrency", 0.8],
    ]);
  });

  it("Should leave the ratio null where a side has no series (a target or a peer that failed to run)", () => {
    const ratios = ceilingRatios(runs.filter((p) => !p.series.startsWith("ceiling") && p.series !== "bullmq-always concurrency"));
    expect(ratios.find((r) => r.workers === 32 && r.target === "ceiling")).toMatchObject({ ours: null, ratio: null });
    expect(ratios.find((r) => r.workers === 1 && r.target === "this" && r.appendfsync === "always")).toMatchObject({ peer: null, ratio: null });
    expect(ratios.find((r) => r.workers === 32 && r.target === "this" && r.appendfsync === "always")).toMatchObject({ ours: "this f3", peer: "bullmq-always workers", ratio: 0.58 });
  });
});
